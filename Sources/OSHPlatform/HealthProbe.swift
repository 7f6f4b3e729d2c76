#if canImport(Glibc)
import Glibc
#endif

/// The board's own health for `device_health`: SoC temperature, the firmware's
/// throttling flags, load, memory and disk. Each reading is a small file read once a
/// minute; a missing file (not a Pi, a container) gives NaN or 0, never an error.
public struct HealthProbe {
    public var root: String
    public var diskPath: String

    public init(root: String = "/", diskPath: String = "/") {
        self.root = root
        self.diskPath = diskPath
    }

    public struct Reading: Sendable, Equatable {
        public var cpuTemperature = Double.nan  // °C
        public var throttleFlags = 0  // firmware get_throttled bitmask
        public var loadAverage = Double.nan
        public var memoryAvailableMB = Double.nan
        public var diskFreePercent = Double.nan
        public var uptimeSeconds = Double.nan
        public var underVoltage: Bool { throttleFlags & 0x1 != 0 }
        public var throttled: Bool { throttleFlags & 0x4 != 0 }
    }

    public func read() -> Reading {
        var r = Reading()
        if let t = number(file("sys/class/thermal/thermal_zone0/temp")) { r.cpuTemperature = t / 1000 }
        // The Pi firmware's flags, in hex ("0x50005"); absent off a Pi.
        if let s = file("sys/devices/platform/soc/soc:firmware/get_throttled") {
            let hex = s.hasPrefix("0x") ? String(s.dropFirst(2)) : s
            r.throttleFlags = Int(hex, radix: 16) ?? Int(s) ?? 0
        }
        if let l = file("proc/loadavg")?.split(separator: " ").first, let v = Double(l) { r.loadAverage = v }
        if let u = file("proc/uptime")?.split(separator: " ").first, let v = Double(u) { r.uptimeSeconds = v }
        if let m = file("proc/meminfo") {
            for line in m.split(separator: "\n") where line.hasPrefix("MemAvailable:") {
                let kb = line.split(separator: " ").dropFirst().first.flatMap { Double($0) }
                if let kb { r.memoryAvailableMB = kb / 1024 }
            }
        }
        var st = statvfs()
        if statvfs(diskPath, &st) == 0, st.f_blocks > 0 {
            r.diskFreePercent = Double(st.f_bavail) / Double(st.f_blocks) * 100
        }
        return r
    }

    private func file(_ rel: String) -> String? {
        let path = root.hasSuffix("/") ? root + rel : root + "/" + rel
        return StateFiles.readText(path)?.trimmingCharacters()
    }

    private func number(_ s: String?) -> Double? { s.flatMap { Double($0) } }
}

extension String {
    /// Leading/trailing whitespace and NULs removed (kernel files end in "\n" or "\0").
    func trimmingCharacters() -> String {
        var scalars = Substring(self)
        while let f = scalars.first, f.isWhitespace || f == "\0" { scalars.removeFirst() }
        while let l = scalars.last, l.isWhitespace || l == "\0" { scalars.removeLast() }
        return String(scalars)
    }
}
