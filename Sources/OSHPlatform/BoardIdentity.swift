// Who this board is: its serial (the id in `urn:osh:rpi:<id>`), model and hostname.
// Read once at start from small kernel/system files. The root is injectable so
// tests run against a fake tree in a temp directory.
//
// Serial, first that works:
//  1. the device tree's `serial-number` (/proc/device-tree, then /sys/firmware/devicetree/base),
//     NUL-terminated on a Pi: "10000000a1b2c3d4\0";
//  2. the `Serial` line of /proc/cpuinfo (older kernels; all-zero serials skipped, as emulators report);
//  3. /etc/machine-id, hashed as systemd recommends for application-specific ids (never the raw
//     machine id, which is confidential): HMAC-SHA256 keyed by the 16-byte machine id over a fixed
//     16-byte application id; the first 8 bytes, as 16 lowercase hex characters.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import OSHCore

public struct BoardIdentity: Sendable, Equatable {
    public enum SerialSource: String, Sendable, Equatable {
        case deviceTree = "device-tree"
        case cpuinfo
        case machineID = "machine-id"
        /// Nothing found: the UID must be set in the config.
        case none
    }

    /// Lowercase, as the board reports it (leading zeros kept); empty when `serialSource == .none`.
    public var serial: String
    public var serialSource: SerialSource
    /// `/proc/device-tree/model`, e.g. "Raspberry Pi 4 Model B Rev 1.4"; nil when absent.
    public var model: String?
    public var hostname: String?

    public init(serial: String, serialSource: SerialSource, model: String?, hostname: String?) {
        self.serial = serial
        self.serialSource = serialSource
        self.model = model
        self.hostname = hostname
    }

    /// The fixed application id for the machine-id derivation (random, generated once for osh-edge;
    /// changing it changes every such board's UID).
    public static let applicationID: [UInt8] = [
        0x40, 0x6c, 0x02, 0xde, 0xba, 0xb3, 0x57, 0x43,
        0x27, 0x50, 0x55, 0x1f, 0x08, 0xbe, 0xaa, 0xe7,
    ]

    static let deviceTreeSerialPaths = [
        "proc/device-tree/serial-number",
        "sys/firmware/devicetree/base/serial-number",
    ]
    static let deviceTreeModelPaths = ["proc/device-tree/model", "sys/firmware/devicetree/base/model"]

    /// Reads everything under `root` ("/" on the board). `useUname` (default: only when root is "/")
    /// falls back to uname(2) for the hostname when /etc/hostname is missing or empty.
    public static func read(root: String = "/", useUname: Bool? = nil) -> BoardIdentity {
        let (serial, source) = readSerial(root: root)
        let model = readModel(root: root)
        var host = readText(join(root, "etc/hostname")).flatMap(firstMeaningfulLine)
        if host == nil, useUname ?? (root == "/") { host = unameNodename() }
        return BoardIdentity(serial: serial, serialSource: source, model: model, hostname: host)
    }

    /// The device tree's model string alone ("Raspberry Pi 5 Model B Rev 1.0"), nil when absent.
    public static func readModel(root: String = "/") -> String? {
        for p in deviceTreeModelPaths {
            if let m = readText(join(root, p)).map(clean), !m.isEmpty { return m }
        }
        return nil
    }

    static func readSerial(root: String) -> (String, SerialSource) {
        for p in deviceTreeSerialPaths {
            if let s = readText(join(root, p)).flatMap(usableSerial) { return (s, .deviceTree) }
        }
        if let cpuinfo = readText(join(root, "proc/cpuinfo")), let s = serial(fromCPUInfo: cpuinfo) {
            return (s, .cpuinfo)
        }
        if let mid = readText(join(root, "etc/machine-id")), let s = serial(fromMachineID: mid) {
            return (s, .machineID)
        }
        return ("", .none)
    }

    /// The value of the `Serial` line of /proc/cpuinfo, if usable.
    public static func serial(fromCPUInfo text: String) -> String? {
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let key = clean(String(line[..<colon]))
            guard key == "Serial" else { continue }
            if let s = usableSerial(String(line[line.index(after: colon)...])) { return s }
        }
        return nil
    }

    /// The app-specific id derived from a machine-id file's content (32 hex digits); nil if malformed.
    public static func serial(fromMachineID text: String) -> String? {
        let id = clean(text)
        guard id.utf8.count == 32, let key = Hex.bytes(id), key.contains(where: { $0 != 0 }) else { return nil }
        let mac = HMACSHA256.authenticationCode(key: key, message: applicationID)
        return Hex.string(mac.prefix(8))
    }

    /// Trimmed, lowercased; nil when empty, all zeros, or containing characters a serial never has.
    static func usableSerial(_ raw: String) -> String? {
        let s = clean(raw).lowercased()
        guard !s.isEmpty, s.utf8.contains(where: { $0 != UInt8(ascii: "0") }) else { return nil }
        let ok = s.utf8.allSatisfy {
            ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 122) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
        }
        return ok ? s : nil
    }

    /// Device-tree strings end in NUL; files end in a newline. Strip both, and surrounding blanks.
    static func clean(_ s: String) -> String { SystemUID.trim(s) }

    static func firstMeaningfulLine(_ text: String) -> String? {
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let l = clean(String(line))
            if !l.isEmpty, !l.hasPrefix("#") { return l }
        }
        return nil
    }

    static func join(_ root: String, _ relative: String) -> String {
        root.hasSuffix("/") ? root + relative : root + "/" + relative
    }

    /// A small file's content as UTF-8 (invalid bytes replaced); nil if it cannot be opened.
    /// /proc and /sys files report size 0, so this reads to EOF rather than trusting stat.
    static func readText(_ path: String, limit: Int = 64 * 1024) -> String? {
        StateFiles.readText(path, limit: limit)
    }

    static func unameNodename() -> String? {
        var u = utsname()
        guard uname(&u) == 0 else { return nil }
        let name = withUnsafeBytes(of: &u.nodename) { raw -> String in
            let bytes = raw.prefix(while: { $0 != 0 })
            return String(decoding: bytes, as: UTF8.self)
        }
        let n = clean(name)
        return n.isEmpty ? nil : n
    }
}
