#if canImport(Glibc)
import Glibc
#endif

/// Small state files (the per-server id cache) written so a power cut leaves either
/// the old file or the new one, never a torn one: write a temp file beside it, fsync
/// it, rename it over the old name, fsync the directory.
public enum StateFiles {
    /// `durable: false` skips both fsyncs (a file on tmpfs, rewritten every second): still never torn.
    public static func write(_ bytes: [UInt8], to path: String, durable: Bool = true) throws {
        let dir = directory(of: path)
        let tmp = path + ".tmp"
        let fd: FileDescriptor
        if let opened = try? FileDescriptor.open(tmp, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o600) {
            fd = opened
        } else {
            // The directories only when the file cannot be made (a file rewritten every second pays no
            // mkdirs); the second attempt's error is the one reported.
            try makeDirectories(dir)
            fd = try FileDescriptor.open(tmp, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o600)
        }
        do {
            try bytes.withUnsafeBytes { try fd.writeAll($0) }
            if durable { try fd.sync() }
        } catch {
            fd.close()
            unlink(tmp)
            throw (error as? SystemError)?.on(tmp) ?? error
        }
        fd.close()
        guard rename(tmp, path) == 0 else {
            let e = SystemError.last("rename", subject: path)
            unlink(tmp)
            throw e
        }
        // The rename is durable only once the directory entry is on disk.
        if durable { FileDescriptor.syncDirectory(dir) }
    }

    /// The file's bytes, or nil if it does not exist. A file longer than `limit` is refused
    /// (`TooLarge`), never cut short: a truncated read would pass for the whole file. Other errors throw.
    public static func read(_ path: String, limit: Int = 1 << 20) throws -> [UInt8]? {
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(path, O_RDONLY)
        } catch {
            if error.code == .noSuchFile { return nil }
            throw error
        }
        defer { fd.close() }
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 1)
        defer { chunk.deallocate() }
        var out: [UInt8] = []
        while out.count < limit {
            let n: Int
            do { n = try fd.read(into: chunk) } catch { throw error.on(path) }
            if n == 0 { break }
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[0..<n]))
        }
        if out.count > limit || (out.count == limit && ((try? fd.read(into: chunk)) ?? 0) > 0) {
            var st = stat()
            let size = fstat(fd.rawValue, &st) == 0 && st.st_size > 0 ? Int(st.st_size) : nil
            throw TooLarge(path: path, size: size, limit: limit)
        }
        return out
    }

    /// A file longer than the reader takes.
    public struct TooLarge: Error, Equatable, CustomStringConvertible {
        public var path: String
        /// nil for a file whose size the kernel does not report (a pipe, /proc).
        public var size: Int?
        public var limit: Int

        public var description: String {
            "\(path): the file is " + (size.map { "\($0) bytes long" } ?? "longer than that") + "; the limit is \(limit) bytes"
        }
    }

    /// A small file's text (invalid UTF-8 replaced), read to EOF — /proc and /sys files report
    /// size 0 — or nil when it cannot be read. For kernel and system files, not state.
    public static func readText(_ path: String, limit: Int = 64 * 1024) -> String? {
        guard let bytes = (try? read(path, limit: limit)) ?? nil else { return nil }
        return String(decoding: bytes.prefix(limit), as: UTF8.self)
    }

    public static func remove(_ path: String) { unlink(path) }

    /// A directory's entries named `prefix` then a number ("video3", "media0", "i2c-1": the
    /// kernel's device nodes), ordered by the number, with their paths; none when `dir` cannot
    /// be read.
    public static func numberedEntries(_ dir: String, prefix: String) -> [(number: Int, path: String)] {
        let names = (try? entries(dir)) ?? []
        return names.compactMap { name -> (number: Int, path: String)? in
            guard name.hasPrefix(prefix), let n = Int(name.dropFirst(prefix.count)) else { return nil }
            return (n, dir + "/" + name)
        }.sorted { $0.number < $1.number }
    }

    /// A directory's entry names (without `.` and `..`), in directory order.
    public static func entries(_ dir: String) throws -> [String] {
        guard let d = opendir(dir) else { throw SystemError.last("opendir", subject: dir) }
        defer { closedir(d) }
        var out: [String] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != ".", name != ".." { out.append(name) }
        }
        return out
    }

    /// mkdir -p with mode 0700 (state may name the node and its ids).
    public static func makeDirectories(_ dir: String) throws {
        guard !dir.isEmpty else { return }
        var partial = dir.hasPrefix("/") ? "" : "."
        for comp in dir.split(separator: "/") {
            partial += "/" + comp
            if mkdir(partial, 0o700) != 0 && errno != EEXIST {
                throw SystemError.last("mkdir", subject: partial)
            }
        }
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
