#if canImport(Glibc)
import Glibc
#endif
import CShim

/// Small state files (the per-server id cache) written so a power cut leaves either
/// the old file or the new one, never a torn one: write a temp file beside it, fsync
/// it, rename it over the old name, fsync the directory.
public enum StateFiles {
    public static func write(_ bytes: [UInt8], to path: String) throws {
        let dir = directory(of: path)
        try makeDirectories(dir)
        let tmp = path + ".tmp"
        let fd = osh_open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw SystemError.last("open", subject: tmp) }
        var ok = true
        var err: SystemError?
        bytes.withUnsafeBytes { buf in
            var off = 0
            while off < buf.count {
                let n = Glibc.write(fd, buf.baseAddress! + off, buf.count - off)
                if n < 0 {
                    if errno == EINTR { continue }
                    err = SystemError.last("write", subject: tmp); ok = false; return
                }
                off += n
            }
        }
        if ok, fsync(fd) != 0 { err = SystemError.last("fsync", subject: tmp); ok = false }
        close(fd)
        guard ok else {
            unlink(tmp)
            throw err ?? SystemError("write", errno: EIO, subject: tmp)
        }
        guard rename(tmp, path) == 0 else {
            let e = SystemError.last("rename", subject: path)
            unlink(tmp)
            throw e
        }
        // The rename is durable only once the directory entry is on disk.
        let dfd = osh_open(dir, O_RDONLY | O_DIRECTORY, 0)
        if dfd >= 0 { fsync(dfd); close(dfd) }
    }

    /// The file's bytes, or nil if it does not exist. Other errors throw.
    public static func read(_ path: String, limit: Int = 1 << 20) throws -> [UInt8]? {
        let fd = osh_open(path, O_RDONLY, 0)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw SystemError.last("open", subject: path)
        }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while out.count < limit {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemError.last("read", subject: path)
            }
            if n == 0 { break }
            out.append(contentsOf: chunk[0..<n])
        }
        return out
    }

    /// A small file's text (invalid UTF-8 replaced), read to EOF — /proc and /sys files report
    /// size 0 — or nil when it cannot be read. For kernel and system files, not state.
    public static func readText(_ path: String, limit: Int = 64 * 1024) -> String? {
        guard let bytes = (try? read(path, limit: limit)) ?? nil else { return nil }
        return String(decoding: bytes.prefix(limit), as: UTF8.self)
    }

    public static func remove(_ path: String) { unlink(path) }

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
