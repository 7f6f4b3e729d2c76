#if canImport(Glibc)
import Glibc
#endif

/// systemd's notify protocol, by hand (a datagram to `$NOTIFY_SOCKET`; no libsystemd):
/// READY=1 once registered, STATUS= lines a person can read, WATCHDOG=1 from the event loop
/// itself (so a stuck loop is restarted), STOPPING=1 on the way out. Without
/// `$NOTIFY_SOCKET` (not under systemd) every call does nothing.
public final class SDNotify {
    private let fd: Int32
    private var address = sockaddr_un()
    private var addressLength: socklen_t = 0
    public let enabled: Bool

    /// `environment` lets tests point it at their own socket.
    public init(socketPath: String? = SDNotify.env("NOTIFY_SOCKET")) {
        guard let path = socketPath, !path.isEmpty, path.utf8.count < 107 else {
            fd = -1
            enabled = false
            return
        }
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        // "@name" is an abstract socket: a leading NUL instead of the @.
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { dst in
            for (i, b) in bytes.enumerated() { dst[i] = b }
        }
        addressLength = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        enabled = fd >= 0
    }

    deinit { if fd >= 0 { close(fd) } }

    public static func env(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }

    /// The watchdog period systemd expects pings within (WATCHDOG_USEC, for this process), or nil.
    public static func watchdogInterval() -> Double? {
        guard let usec = env("WATCHDOG_USEC").flatMap({ Double($0) }), usec > 0 else { return nil }
        if let pid = env("WATCHDOG_PID").flatMap({ Int32($0) }), pid != getpid() { return nil }
        return usec / 1e6
    }

    @discardableResult
    public func send(_ message: String) -> Bool {
        guard enabled else { return false }
        var m = message
        return m.withUTF8 { buf in
            withUnsafePointer(to: &address) { a in
                a.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    // Never wait: a notify socket whose reader is busy (its queue holds ten datagrams)
                    // would stall the loop, and with it the watchdog and the stop. A dropped
                    // STATUS is replaced by the next one.
                    sendto(fd, buf.baseAddress, buf.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT), $0, addressLength) == buf.count
                }
            }
        }
    }

    public func ready(status: String) { send("READY=1\nSTATUS=" + status) }
    public func status(_ s: String) { send("STATUS=" + s) }
    public func watchdog() { send("WATCHDOG=1") }
    public func stopping() { send("STOPPING=1\nSTATUS=stopping") }
}
