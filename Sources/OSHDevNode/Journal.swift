// `osh-edge node --journal FILE`: the development node keeps its resources across restarts, as
// an OSH node keeps its database. Every request that created, replaced or deleted a system,
// datastream, control stream or sampling feature is appended to FILE as one JSON line — one
// write(2) and an fsync each (they are rare) — and a new node replays the file through the same
// handlers with the same minter salt, counter and clock, so every resource comes back under its
// id. Observations, commands and command statuses are not kept: a restarted node has none.
//
// The file, one JSON object per line:
//   {"type":"header","journal":"osh-edge development node","version":1,"salt":"<16 hex digits>"}
//   {"type":"start","counter":N}     a node started here, minting from counter N
//   {"type":"request","counter":N,"time":T,"method":…,"uri":…,"contentType":…,"body":…,
//    "status":201,"answer":"/systems/…"}   the minter's counter before it, and what it answered
//   {"type":"forget","counter":N}    forgetEverything()
// A last line without its newline is a write a power cut interrupted: ignored and cut off.
// Anything else that does not read back refuses the start (the file and line, and the fix).
#if canImport(Glibc)
import Glibc
#endif
import OSHCore

/// One journal line after the header.
enum JournalEntry: Equatable {
    case start(counter: UInt64)
    case request(JournalRequest)
    case forget(counter: UInt64)
}

struct JournalRequest: Equatable {
    /// The minter's counter before the request: the ids it mints follow from it.
    var counter: UInt64
    var time: Double
    var method: String
    var uri: String
    var contentType: String?
    var body: [UInt8]
    var status: Int
    /// `Location` (or the list of created resources) — what the replay must answer again.
    var answer: String
}

/// The file's text as records (pure: tests feed it bytes).
struct JournalText {
    static let kind = "osh-edge development node"
    /// Bumped when a record's meaning changes; a node refuses a journal of another version.
    static let version = 1

    var salt: UInt64
    /// Entries with their 1-based line numbers.
    var entries: [(line: Int, entry: JournalEntry)]
    /// Bytes up to the end of the last complete line (a torn tail is cut off there).
    var completeLength: Int
    /// The line number of a torn last line, if any.
    var tornLine: Int?

    /// nil for a file with no complete line (new, or only a torn header): start it afresh.
    static func parse(_ bytes: [UInt8], path: String) throws -> JournalText? {
        var lines: [ArraySlice<UInt8>] = []
        var start = 0
        for (i, b) in bytes.enumerated() where b == UInt8(ascii: "\n") {
            lines.append(bytes[start..<i])
            start = i + 1
        }
        let torn = start < bytes.count ? lines.count + 1 : nil
        guard let header = lines.first else { return nil }
        let salt = try parseHeader(Array(header), path: path)
        var entries: [(Int, JournalEntry)] = []
        for (i, line) in lines.enumerated().dropFirst() {
            entries.append((i + 1, try parseEntry(Array(line), at: "\(path):\(i + 1)")))
        }
        return JournalText(salt: salt, entries: entries, completeLength: start, tornLine: torn)
    }

    static func parseHeader(_ line: [UInt8], path: String) throws -> UInt64 {
        let at = "\(path):1"
        guard let v = try? JSONValue.parse(line), v["type"]?.string == "header", v["journal"]?.string == kind else {
            throw DevNodeError.journal("\(at): not a development node journal; name another file, or delete this one to start empty")
        }
        guard let version = v["version"]?.int, version == Self.version else {
            let found = v["version"]?.int.map(String.init) ?? "unknown"
            throw DevNodeError.journal(
                "\(at): written by a different development node (journal version \(found), this node reads "
                    + "version \(Self.version)); delete the file to start empty")
        }
        guard let hex = v["salt"]?.string, let salt = UInt64(hex, radix: 16) else {
            throw corrupt(at, "the header has no valid salt")
        }
        return salt
    }

    static func parseEntry(_ line: [UInt8], at: String) throws -> JournalEntry {
        let v: JSONValue
        do { v = try JSONValue.parse(line) } catch { throw corrupt(at, "\(error)") }
        func counter() throws -> UInt64 {
            guard let c = v["counter"]?.int, c >= 0 else { throw corrupt(at, "no valid counter") }
            return UInt64(c)
        }
        switch v["type"]?.string {
        case "start": return .start(counter: try counter())
        case "forget": return .forget(counter: try counter())
        case "request":
            guard let time = v["time"]?.double, let method = v["method"]?.string, let uri = v["uri"]?.string,
                let status = v["status"]?.int, let answer = v["answer"]?.string
            else {
                throw corrupt(at, "a request record lacks time, method, uri, status or answer")
            }
            let body: [UInt8]
            if let text = v["body"]?.string {
                body = Array(text.utf8)
            } else if let b64 = v["body64"]?.string, let bytes = Base64.decode(Array(b64.utf8)) {
                body = bytes
            } else {
                throw corrupt(at, "a request record without its body")
            }
            return .request(
                JournalRequest(
                    counter: try counter(), time: time, method: method, uri: uri,
                    contentType: v["contentType"]?.string, body: body, status: status, answer: answer))
        default:
            throw corrupt(at, "unknown record type")
        }
    }

    static func corrupt(_ at: String, _ why: String) -> DevNodeError {
        .journal("\(at): damaged journal record (\(why)); delete the file to start empty")
    }

    // MARK: Writing

    static func headerLine(salt: UInt64) -> [UInt8] {
        let hex = String(salt, radix: 16)
        return line { w in
            w.key("type"); w.string("header")
            w.key("journal"); w.string(kind)
            w.key("version"); w.int(version)
            w.key("salt"); w.string(String(repeating: "0", count: 16 - hex.count) + hex)
        }
    }

    static func line(_ entry: JournalEntry) -> [UInt8] {
        line { w in
            switch entry {
            case .start(let c):
                w.key("type"); w.string("start")
                w.key("counter"); w.int(Int(clamping: c))
            case .forget(let c):
                w.key("type"); w.string("forget")
                w.key("counter"); w.int(Int(clamping: c))
            case .request(let r):
                w.key("type"); w.string("request")
                w.key("counter"); w.int(Int(clamping: r.counter))
                w.key("time"); w.number(r.time)
                w.key("method"); w.string(r.method)
                w.key("uri"); w.string(r.uri)
                if let ct = r.contentType { w.key("contentType"); w.string(ct) }
                // Readable when the body is UTF-8 (every JSON body); base64 otherwise, to replay it byte for byte.
                let text = String(decoding: r.body, as: UTF8.self)
                if Array(text.utf8) == r.body { w.key("body"); w.string(text) } else { w.key("body64"); w.string(Base64.encode(r.body)) }
                w.key("status"); w.int(r.status)
                w.key("answer"); w.string(r.answer)
            }
        }
    }

    private static func line(_ members: (inout JSONWriter) -> Void) -> [UInt8] {
        jsonBytes { w in
            w.beginObject()
            members(&w)
            w.endObject()
        } + [UInt8(ascii: "\n")]
    }
}

/// The open journal file. Used under the node's lock only.
final class DevNodeJournal {
    /// Each run of the node mints from its own block of counters, so no id minted after a restart
    /// equals one minted before it (observation and command ids, which are not journaled, included).
    static let block: UInt64 = 1 << 32

    let path: String
    private let fd: Int32
    /// The file's length: a failed append is cut back to it, so no half record stays in the middle.
    private var length: Int

    private init(path: String, fd: Int32, length: Int) {
        self.path = path
        self.fd = fd
        self.length = length
    }

    deinit { close(fd) }

    /// Whether a successful answer to this request changed a resource (what is journaled):
    /// POST /systems, POST /systems/{id}/datastreams|controlstreams|samplingFeatures|fois, and PUT
    /// or DELETE on a system, datastream, control stream or sampling feature.
    static func changesResources(method: String, path: Substring, apiPath: String) -> Bool {
        let api = apiPath.hasSuffix("/") ? String(apiPath.dropLast()) : apiPath
        guard ["POST", "PUT", "DELETE"].contains(method), path.hasPrefix(api) else { return false }
        let segs = path.dropFirst(api.count).split(separator: "/").map(URLDecoding.path)
        switch (method, segs.count) {
        case ("POST", 1): return segs[0] == "systems"
        case ("POST", 3): return segs[0] == "systems" && ["datastreams", "controlstreams", "samplingFeatures", "fois"].contains(segs[2])
        case ("PUT", 2), ("DELETE", 2): return ["systems", "datastreams", "controlstreams", "samplingFeatures", "fois"].contains(segs[0])
        default: return false
        }
    }

    /// What a replayed request must answer again: the created resources (none for 204).
    static func answer(_ r: HTTPResponse) -> String {
        if let l = r.headers.first(where: { $0.0 == "Location" })?.1 { return l }
        return String(decoding: r.body, as: UTF8.self)
    }

    /// Opens FILE (creating it), replays it into `store` and leaves it open for appending; on
    /// success `store.journal` is set. Returns what to tell the operator. On failure the store
    /// is as before.
    static func open(path: String, store: NodeStore, config: DevNodeConfig) throws -> [String] {
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            let e = errno
            switch e {
            case EISDIR:
                throw DevNodeError.journal("cannot open the journal \(path): it is a directory; name a file (it is created if missing)")
            case EACCES, EROFS, EPERM:
                throw DevNodeError.journal("cannot open the journal \(path): \(errnoText(e)) — name a file this user may write")
            default:
                throw DevNodeError.journal(
                    "cannot open the journal \(path): \(errnoText(e)) — check that its directory exists "
                        + "and this user may write there")
            }
        }
        let bytes: [UInt8]
        do {
            // A device or FIFO would read forever or not keep anything.
            var st = stat()
            guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
                throw DevNodeError.journal("the journal \(path) is not a regular file; name a file (it is created if missing)")
            }
            bytes = try readAll(fd, path: path)
        } catch {
            close(fd)
            throw error
        }
        let journal = DevNodeJournal(path: path, fd: fd, length: bytes.count)
        let before = store.snapshot()
        var notes: [String] = []
        do {
            if let text = try JournalText.parse(bytes, path: path) {
                store.minter = IDMinter(salt: text.salt)
                let highest = try replay(text, into: store, config: config, path: path)
                if let torn = text.tornLine {
                    notes.append("journal \(path):\(torn): the last record was cut short (a power cut while writing?); ignored")
                    try journal.cut(to: text.completeLength)
                }
                store.minter.counter = (highest / block + 1) * block
                let changes = text.entries.filter { if case .start = $0.entry { return false } else { return true } }.count
                notes.append(
                    "journal \(path): \(changes) changes replayed — systems: \(store.systems.count), "
                        + "datastreams: \(store.datastreams.count), control streams: \(store.controlStreams.count), "
                        + "sampling features: \(store.features.count)")
            } else {
                if !bytes.isEmpty {
                    notes.append("journal \(path):1: the header was cut short (a power cut while writing?); starting empty")
                    try journal.cut(to: 0)
                }
                try journal.append(JournalText.headerLine(salt: store.minter.salt))
                syncDirectory(of: path)
                notes.append("journal \(path): new; resources created from now on are kept across restarts")
            }
            try journal.append(JournalText.line(.start(counter: store.minter.counter)))
        } catch {
            store.restore(before)
            throw error
        }
        store.journal = journal
        return notes
    }

    /// Runs every record through the handlers; returns the highest counter seen.
    private static func replay(_ text: JournalText, into store: NodeStore, config: DevNodeConfig, path: String) throws -> UInt64 {
        var highest: UInt64 = 0
        for (line, entry) in text.entries {
            switch entry {
            case .start(let c):
                highest = max(highest, c)
            case .forget(let c):
                store.forget()
                highest = max(highest, c)
            case .request(let r):
                store.minter.counter = r.counter
                let req = HTTPRequest(
                    method: r.method, uri: r.uri, contentType: r.contentType, accept: nil, authorization: nil, body: r.body)
                let h = RequestHandler(
                    req: req, store: store, config: config, apiRoot: DevNode.apiRoot(config: config, port: store.port),
                    now: r.time)
                let response = h.run()
                let answer = answer(response)
                guard response.status == r.status, answer == r.answer else {
                    let said = NodeError.parse(response.body).message.map { " (\($0))" } ?? (answer.isEmpty ? "" : " " + answer)
                    throw DevNodeError.journal(
                        "\(path):\(line): replaying \(r.method) \(r.uri) answered \(response.status)\(said) where the "
                            + "journal says \(r.status) \(r.answer) — written by a different development node? "
                            + "delete the file to start empty")
                }
                highest = max(highest, store.minter.counter)
            }
        }
        return highest
    }

    /// Appends one record: one write(2), then fsync. On failure the file is cut back to its
    /// previous length and the error names the file.
    func append(_ line: [UInt8]) throws {
        let n = line.withUnsafeBytes { b -> Int in
            while true {
                let n = write(fd, b.baseAddress, b.count)
                if n < 0 && errno == EINTR { continue }
                return n
            }
        }
        var e = errno
        if n == line.count {
            if fsync(fd) == 0 {
                length += n
                return
            }
            e = errno
        }
        if n >= 0 && n < line.count { e = ENOSPC }  // a short write: the disk is full
        _ = ftruncate(fd, off_t(length))
        throw DevNodeError.journal(
            "cannot append to the journal \(path): \(Self.errnoText(e)) — free space on its file system "
                + "or check the disk; the change was not made")
    }

    /// Records a request that changed resources (`counter`: the minter's before it).
    func record(_ req: HTTPRequest, counter: UInt64, time: Double, response: HTTPResponse) throws {
        try append(
            JournalText.line(
                .request(
                    JournalRequest(
                        counter: counter, time: time, method: req.method, uri: req.uri,
                        contentType: req.contentType, body: req.body,
                        status: response.status, answer: Self.answer(response)))))
    }

    private func cut(to n: Int) throws {
        guard ftruncate(fd, off_t(n)) == 0 else {
            throw DevNodeError.journal("cannot cut the torn record off the journal \(path): \(Self.errnoText(errno))")
        }
        length = n
    }

    private static func readAll(_ fd: Int32, path: String) throws -> [UInt8] {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var offset = 0
        while true {
            let n = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(offset)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw DevNodeError.journal("cannot read the journal \(path): \(errnoText(errno))")
            }
            if n == 0 { return out }
            out.append(contentsOf: chunk[0..<n])
            offset += n
        }
    }

    /// A new file's directory entry is durable only once the directory is synced.
    private static func syncDirectory(of path: String) {
        let dir = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let dfd = Glibc.open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            _ = fsync(dfd)
            close(dfd)
        }
    }

    static func errnoText(_ e: Int32) -> String { strerror(e).map { String(cString: $0) } ?? "errno \(e)" }
}
