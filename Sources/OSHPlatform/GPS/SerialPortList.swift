#if canImport(Glibc)
import Glibc
#endif
import OSHCore

/// What `osh-edge probe` says of the GPS side: the serial ports a receiver may be on, and a gpsd.
public struct SerialPortInfo: Sendable, Equatable {
    /// As a configuration names it (`/dev/serial0`, `/dev/ttyACM0`, `/dev/serial/by-id/…`).
    public var path: String
    /// The tty behind the links (nil: the link points nowhere).
    public var device: String?
    /// Who has it open (a getty or the Bluetooth stack means the GPS cannot have it).
    public var holders: [SerialPortDiagnostics.Holder]
}

public enum SerialPortList {
    /// The Pi's UART aliases, USB CDC-ACM and USB-serial adapters, and the by-id links of USB
    /// receivers; a bare ttyS* only when an alias points at it (every PC has four that lead nowhere).
    public static func ports(dev: String = "/dev") -> [SerialPortInfo] {
        var paths: [String] = []
        for alias in ["serial0", "serial1"] where access(dev + "/" + alias, F_OK) == 0 || isLink(dev + "/" + alias) {
            paths.append(dev + "/" + alias)
        }
        let entries = ((try? StateFiles.entries(dev)) ?? []).sorted()
        for e in entries where e.hasPrefix("ttyAMA") || e.hasPrefix("ttyACM") || e.hasPrefix("ttyUSB") { paths.append(dev + "/" + e) }
        for e in ((try? StateFiles.entries(dev + "/serial/by-id")) ?? []).sorted() { paths.append(dev + "/serial/by-id/" + e) }
        var out: [SerialPortInfo] = []
        for p in paths {
            let d = SerialPortDiagnostics.resolve(p)
            out.append(SerialPortInfo(path: p, device: d, holders: d.map { SerialPortDiagnostics.holders(of: $0) } ?? []))
        }
        // The mini UART (ttyS0 on a Pi 3/4) is listed through serial0/serial1 only.
        let aliased = Set(out.compactMap(\.device))
        for e in entries where e.hasPrefix("ttyS") && aliased.contains(dev + "/" + e) && !paths.contains(dev + "/" + e) {
            out.append(
                SerialPortInfo(path: dev + "/" + e, device: dev + "/" + e, holders: SerialPortDiagnostics.holders(of: dev + "/" + e)))
        }
        return out
    }

    private static func isLink(_ p: String) -> Bool {
        var st = stat()
        return lstat(p, &st) == 0 && (st.st_mode & S_IFMT) == S_IFLNK
    }

    /// Whether something accepts TCP connections at 127.0.0.1:`port` within `timeoutMs` (gpsd's
    /// port by default). A non-blocking connect: probe never hangs on it.
    public static func gpsdAnswers(port: UInt16 = GPSDSource.defaultPort, timeoutMs: Int32 = 300) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if rc == 0 { return true }
        guard errno == EINPROGRESS else { return false }
        var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        guard poll(&p, 1, timeoutMs) == 1 else { return false }
        var err: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0
    }
}
