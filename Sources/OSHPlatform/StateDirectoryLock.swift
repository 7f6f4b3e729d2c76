#if canImport(Glibc)
import Glibc
#endif
import OSHCore

/// One agent per state directory. Two agents on the same directory would register as the same
/// system, stream duplicates, share the spool and fight over the command channels; `flock(2)` on
/// `DIR/lock` keeps the second one out. The kernel drops the lock when the holder exits, however
/// it exits (kill -9 included), so it is never stale; the file only says who holds it.
public final class StateDirectoryLock {
    public let path: String
    private let fd: Int32

    private init(path: String, fd: Int32) {
        self.path = path
        self.fd = fd
    }

    deinit { close(fd) }

    public struct Held: Error, Equatable, CustomStringConvertible {
        public var directory: String
        /// The holder's PID, as it wrote it (nil if unreadable).
        public var pid: Int?
        /// The holder runs as the systemd service (its cgroup says osh-edge.service).
        public var isService: Bool

        public var description: String {
            let who = pid.map { "another osh-edge (PID \($0)\(isService ? ", the osh-edge service" : ""))" } ?? "another osh-edge"
            let fix =
                isService
                ? "stop the service first (sudo systemctl stop osh-edge) or give this one another [paths] state_directory"
                : "stop it first" + (pid.map { " (kill \($0))" } ?? "") + " or give this one another [paths] state_directory"
            return "\(who) is already running on the state directory \(directory): two agents there would register as "
                + "one system, send everything twice and fight over its command channels; " + fix
        }
    }

    /// Takes the lock of `directory` (made if missing), or throws `Held` naming who has it.
    public static func acquire(directory: String) throws -> StateDirectoryLock {
        try StateFiles.makeDirectories(directory)
        let path = directory + "/lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SystemError.last("open", subject: path) }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            let e = errno
            let text = StateFiles.readText(path, limit: 64) ?? ""
            close(fd)
            guard e == EWOULDBLOCK else { throw SystemError("flock", errno: e, subject: path) }
            let pid = Int(text.split(separator: "\n").first.map(String.init) ?? "")
            let cgroup = pid.flatMap { StateFiles.readText("/proc/\($0)/cgroup") } ?? ""
            throw Held(directory: directory, pid: pid, isService: cgroup.hasSubstring("osh-edge.service"))
        }
        let text = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return StateDirectoryLock(path: path, fd: fd)
    }
}
