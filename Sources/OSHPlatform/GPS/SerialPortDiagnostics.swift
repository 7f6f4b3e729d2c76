#if canImport(Glibc)
import Glibc
#endif

/// Why a serial port cannot be used, in words a Pi user can act on: which process holds it
/// (gpsd, a login getty, Bluetooth's hciattach), whether the kernel console is on it, and
/// whether it is the Pi's Bluetooth UART. Everything here reads /proc and /dev only when a
/// port is opened or refused, never per byte.
public enum SerialPortDiagnostics {
    /// A process that has the device open (or, when its fds cannot be read, a likely one).
    public struct Holder: Sendable, Equatable, CustomStringConvertible {
        public var pid: Int32
        /// /proc/PID/comm, e.g. "gpsd", "agetty".
        public var name: String
        /// false when the process's fds could not be read and it is only a likely holder
        /// (gpsd running; a getty whose arguments name the tty).
        public var confirmed: Bool

        public init(pid: Int32, name: String, confirmed: Bool = true) {
            self.pid = pid
            self.name = name
            self.confirmed = confirmed
        }

        public var description: String { "\(name) (pid \(pid))" }
        public var isGetty: Bool { name.hasSuffix("getty") }
        public var isGPSD: Bool { name == "gpsd" }
        public var isBluetooth: Bool { name.hasPrefix("hciattach") || name.hasPrefix("bluetooth") || name == "btuart" }
    }

    /// The path behind every symlink (`/dev/serial0` → `/dev/ttyS0`), or nil if it does not resolve.
    public static func resolve(_ path: String) -> String? {
        guard let p = realpath(path, nil) else { return nil }
        defer { free(p) }
        return String(cString: p)
    }

    /// "/dev/serial0 (→ /dev/ttyS0)", or the path alone when it is not a link.
    public static func display(path: String, device: String?) -> String {
        guard let d = device, d != path else { return path }
        return "\(path) (→ \(d))"
    }

    /// Processes that have `device` (a resolved path) open, by scanning `procRoot`/PID/fd.
    /// Processes whose fds are unreadable (another user, without root) are checked by name:
    /// gpsd, and gettys whose arguments name the tty, are returned as unconfirmed suspects.
    public static func holders(of device: String, procRoot: String = "/proc") -> [Holder] {
        var found: [Holder] = []
        var suspects: [Holder] = []
        let ttyName = baseName(device)
        var link = [CChar](repeating: 0, count: 4096)
        forEachEntry(procRoot) { entry in
            guard let pid = Int32(entry) else { return }
            let base = procRoot + "/" + entry
            var holds = false
            var readable = false
            forEachEntry(base + "/fd") { fdName in
                readable = true
                if holds { return }
                let n = link.withUnsafeMutableBufferPointer { readlink(base + "/fd/" + fdName, $0.baseAddress!, $0.count - 1) }
                guard n > 0 else { return }
                let target = link.withUnsafeBufferPointer {
                    String(decoding: UnsafeRawBufferPointer(start: $0.baseAddress, count: n), as: UTF8.self)
                }
                if target == device { holds = true }
            }
            let name = readSmallFile(base + "/comm").map(trimmed) ?? "pid \(pid)"
            if holds {
                found.append(Holder(pid: pid, name: name))
            } else if !readable {
                if name == "gpsd" {
                    suspects.append(Holder(pid: pid, name: name, confirmed: false))
                } else if name.hasSuffix("getty"), let args = readSmallFile(base + "/cmdline"),
                    args.split(separator: "\0").contains(where: { baseName(String($0)) == ttyName })
                {
                    suspects.append(Holder(pid: pid, name: name, confirmed: false))
                }
            }
        }
        return found.isEmpty ? suspects : found
    }

    /// The `console=` entry of a kernel command line that puts a console on `device`
    /// (`console=serial0,115200` when serial0 resolves to it, or `console=ttyS0,115200`), or nil.
    /// `configuredPath` is the path the user gave, matched literally too (`/dev/serial0`).
    public static func kernelConsole(
        on device: String, configuredPath: String, cmdline: String,
        resolve: (String) -> String? = SerialPortDiagnostics.resolve
    ) -> String? {
        for token in cmdline.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" }) {
            guard token.hasPrefix("console=") else { continue }
            let value = token.dropFirst("console=".count)
            let name = String(value.split(separator: ",", maxSplits: 1).first ?? "")
            guard !name.isEmpty else { continue }
            let devPath = "/dev/" + name
            if devPath == configuredPath || devPath == device || resolve(devPath) == device {
                return String(token)
            }
        }
        return nil
    }

    /// The fix for a login console on the port, naming the tty's getty unit.
    public static func consoleFix(device: String, consoleEntry: String?) -> String {
        let entry = consoleEntry ?? "console=serial0,115200"
        return "remove \(entry) from /boot/firmware/cmdline.txt (or raspi-config → Interface Options → Serial Port: "
            + "login shell No, hardware Yes), run `sudo systemctl disable --now serial-getty@\(baseName(device)).service`, and reboot"
    }

    /// A warning when `device` is the Pi's Bluetooth UART (what /dev/serial1 points to while
    /// /dev/serial0 points elsewhere), or nil.
    public static func bluetoothUARTWarning(device: String, resolve: (String) -> String? = SerialPortDiagnostics.resolve) -> String? {
        guard let s1 = resolve("/dev/serial1"), s1 == device,
            let s0 = resolve("/dev/serial0"), s0 != device
        else { return nil }
        return "\(device) is the Bluetooth UART on this Pi; a GPS on the header pins is on /dev/serial0 (→ \(s0)), "
            + "unless Bluetooth is moved off it (dtoverlay=disable-bt or miniuart-bt in /boot/firmware/config.txt)"
    }

    /// The sentence for a port another process holds.
    public static func busyMessage(display: String, device: String, holders: [Holder]) -> String {
        guard !holders.isEmpty else {
            return "\(display) is in use by another process (run `sudo fuser -v \(device)` to see which); "
                + "if it is gpsd, use the gpsd source instead"
        }
        let names = holders.map(\.description).joined(separator: ", ")
        let who = holders.allSatisfy(\.confirmed) ? "is in use by \(names)" : "is busy, probably held by \(names)"
        if holders.contains(where: \.isGPSD) {
            return "\(display) \(who): gpsd owns the receiver, so use the gpsd source instead "
                + "(or stop gpsd: `sudo systemctl disable --now gpsd.socket gpsd.service`)"
        }
        if holders.contains(where: \.isGetty) {
            return "\(display) \(who), a login console: " + consoleFix(device: device, consoleEntry: nil)
        }
        if holders.contains(where: \.isBluetooth) {
            return "\(display) \(who): it is the Bluetooth UART; use /dev/serial0, or add dtoverlay=disable-bt to /boot/firmware/config.txt"
        }
        return "\(display) \(who): stop that process, or read the receiver through gpsd with the gpsd source"
    }

    // MARK: - Small file helpers (no Foundation)

    static func baseName(_ path: String) -> String {
        guard let i = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: i)...])
    }

    static func trimmed(_ s: String) -> String {
        var t = Substring(s)
        while let c = t.last, c == "\n" || c == " " || c == "\0" { t = t.dropLast() }
        return String(t)
    }

    /// A small file's content (/proc files report size 0, so this reads to EOF); nil if unreadable.
    static func readSmallFile(_ path: String, limit: Int = 64 * 1024) -> String? {
        StateFiles.readText(path, limit: limit)
    }

    /// Calls `body` with each entry name of a directory (not "." or ".."); nothing if it cannot be opened.
    static func forEachEntry(_ dirPath: String, _ body: (String) -> Void) {
        guard let dir = opendir(dirPath) else { return }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: entry.pointee.d_name)) {
                    String(cString: $0)
                }
            }
            if name == "." || name == ".." { continue }
            body(name)
        }
    }
}
