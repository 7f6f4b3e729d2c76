// Small pieces the development node is built from: a pthread lock, the id minter,
// URL decoding as the node's servlet container does it, Gson-style JSON paths for
// error messages, and an ordered writer for parsed JSON values.
#if canImport(Glibc)
import Glibc
#endif
import OSHCore

// MARK: - Lock

/// A pthread mutex on the heap (never moved). Used instead of Synchronization.Mutex so
/// the same code compiles unchanged with Swift 6.0 and later.
final class Lock: @unchecked Sendable {
    private let m: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        m = .allocate(capacity: 1)
        m.initialize(to: pthread_mutex_t())
        pthread_mutex_init(m, nil)
    }

    deinit {
        pthread_mutex_destroy(m)
        m.deinitialize(count: 1)
        m.deallocate()
    }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(m)
        defer { pthread_mutex_unlock(m) }
        return try body()
    }
}

// MARK: - Ids

/// Mints short opaque ids like the node's (lower-case base32). Ids are a bijective 64-bit mix
/// of a per-process salt plus a counter that never goes back, so no two ids minted by one
/// process are equal — not even across `forgetEverything()`. Given the salt, the id depends only
/// on the counter: the journal restores both to mint a replayed resource's id again.
struct IDMinter {
    static let alphabet = Array("0123456789abcdefghijklmnopqrstuv".utf8)
    let salt: UInt64
    /// How many ids were minted (the next one is counter + 1).
    var counter: UInt64 = 0

    init(salt: UInt64) { self.salt = salt }

    mutating func next() -> String {
        counter &+= 1
        var z = salt &+ counter &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        var out = [UInt8](repeating: 0, count: 13)
        for i in 0..<13 {
            out[12 - i] = Self.alphabet[Int(z & 31)]
            z >>= 5
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Could this string be an id this node minted (the node's "decodable id" test)?
    static func isWellFormed(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 16 && s.utf8.allSatisfy { alphabet.contains($0) }
    }

    /// A salt from the wall clock, the monotonic clock and the process id.
    static func freshSalt() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        var mono = timespec()
        clock_gettime(CLOCK_MONOTONIC, &mono)
        return UInt64(bitPattern: Int64(ts.tv_sec)) &* 1_000_000_007
            ^ UInt64(bitPattern: Int64(ts.tv_nsec)) << 20
            ^ UInt64(bitPattern: Int64(mono.tv_nsec))
            ^ UInt64(UInt32(bitPattern: getpid())) << 40
    }
}

// MARK: - URLs

enum URLDecoding {
    /// `%XX` decoding of a path segment (`+` stays a plus: paths are not form-encoded).
    static func path(_ s: Substring) -> String { decode(s, plusIsSpace: false) }

    /// Form decoding of a query name or value, as Jetty's getParameterMap does: `+` is a space.
    static func form(_ s: Substring) -> String { decode(s, plusIsSpace: true) }

    static func decode(_ s: Substring, plusIsSpace: Bool) -> String {
        let u = Array(s.utf8)
        var out = [UInt8]()
        out.reserveCapacity(u.count)
        var i = 0
        while i < u.count {
            let c = u[i]
            if c == UInt8(ascii: "%"), i + 2 < u.count, let hi = hex(u[i + 1]), let lo = hex(u[i + 2]) {
                out.append(hi << 4 | lo)
                i += 3
            } else {
                out.append(plusIsSpace && c == UInt8(ascii: "+") ? 0x20 : c)
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - 48
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - 87
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - 55
        default: return nil
        }
    }

    /// Splits `path?query` into the path and the form-decoded query parameters, in order.
    static func split(_ uri: String) -> (path: Substring, query: [(String, String)]) {
        guard let q = uri.firstIndex(of: "?") else { return (Substring(uri), []) }
        var params: [(String, String)] = []
        for pair in uri[uri.index(after: q)...].split(separator: "&", omittingEmptySubsequences: true) {
            if let eq = pair.firstIndex(of: "=") {
                params.append((form(pair[..<eq]), form(pair[pair.index(after: eq)...])))
            } else {
                params.append((form(pair), ""))
            }
        }
        return (uri[..<q], params)
    }
}

// MARK: - Gson-style paths

/// JSON paths as Gson's JsonReader.getPath() prints them (`$.schema.resultSchema.fields[1].name`),
/// which is what OSH puts in its error messages.
struct GsonPath {
    var text: String
    static let root = GsonPath(text: "$")
    func key(_ k: String) -> GsonPath { GsonPath(text: text + "." + k) }
    func index(_ i: Int) -> GsonPath { GsonPath(text: text + "[" + String(i) + "]") }

    /// A RecordReader path (`/0/result/location`) below `base`, in Gson form.
    static func fromPointer(_ pointer: String, base: GsonPath = .root) -> GsonPath {
        var p = base
        for seg in pointer.split(separator: "/") {
            if let i = Int(seg) { p = p.index(i) } else { p = p.key(String(seg)) }
        }
        return p
    }
}

/// Gson's token name for a value (`BEGIN_ARRAY`, `STRING`, …) for "Expected X but was Y" messages.
func gsonToken(_ v: JSONValue) -> String {
    switch v {
    case .object: return "BEGIN_OBJECT"
    case .array: return "BEGIN_ARRAY"
    case .string: return "STRING"
    case .number: return "NUMBER"
    case .bool: return "BOOLEAN"
    case .null: return "NULL"
    }
}

/// Line and column (1-based, Gson counts the column after the token's first character) of the
/// first non-whitespace byte of `body`.
func firstTokenPosition(_ body: [UInt8]) -> (line: Int, column: Int) {
    var line = 1, col = 0
    for b in body {
        switch b {
        case 0x0A: line += 1; col = 0
        case 0x20, 0x09, 0x0D: col += 1
        default: return (line, col + 2)
        }
    }
    return (line, col + 1)
}

/// Line and column (1-based) of a byte offset.
func position(of offset: Int, in body: [UInt8]) -> (line: Int, column: Int) {
    var line = 1, col = 1
    for b in body.prefix(offset) {
        if b == 0x0A { line += 1; col = 1 } else { col += 1 }
    }
    return (line, col)
}

// MARK: - Writing JSON

extension JSONWriter {
    /// Writes a parsed value back out, members in their original order, numbers as written.
    mutating func value(_ v: JSONValue) {
        switch v {
        case .object(let members):
            beginObject()
            for (k, x) in members { key(k); value(x) }
            endObject()
        case .array(let items):
            beginArray()
            for x in items { value(x) }
            endArray()
        case .string(let s): string(s)
        case .number(_, let raw):
            let bytes = Array(raw.utf8)
            bytes.withUnsafeBytes { rawValue($0) }
        case .bool(let b): bool(b)
        case .null: null()
        }
    }

    /// A time as an ISO-8601 string, or null when it cannot be written.
    mutating func isoTime(_ t: Double) {
        if t.isFinite { string(ISOTime.string(epochSeconds: t)) } else { null() }
    }
}

/// Builds a JSON document into bytes.
func jsonBytes(_ build: (inout JSONWriter) -> Void) -> [UInt8] {
    let b = ByteBuffer(capacity: 512)
    var w = JSONWriter(b)
    build(&w)
    return b.array
}

/// Seconds since the Unix epoch, from CLOCK_REALTIME.
func wallClock() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func sleepSeconds(_ s: Double) {
    guard s > 0, s.isFinite else { return }
    var ts = timespec(tv_sec: Int(s), tv_nsec: Int((s - s.rounded(.down)) * 1e9))
    var rem = timespec()
    while nanosleep(&ts, &rem) != 0, errno == EINTR { ts = rem }
}
