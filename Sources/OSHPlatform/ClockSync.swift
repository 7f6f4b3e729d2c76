import CShim
#if canImport(Glibc)
import Glibc
#endif

/// Whether the wall clock can be trusted for observation times. A Pi has no
/// RTC: until NTP (or, later, GPS) sets the clock it may say 1970 or the last shutdown.
public enum ClockSync {
    public enum State: Sendable, Equatable {
        case synchronized(source: String)
        case unsynchronized(reason: String)
        public var isSynchronized: Bool { if case .synchronized = self { return true } else { return false } }
    }

    /// The kernel's view (adjtimex: STA_UNSYNC clear and no TIME_ERROR) or systemd-timesyncd's flag
    /// file; and never a time before `notBefore` (the build's date), whatever the kernel says.
    public static func current(notBefore: Double, timesyncFlag: String = "/run/systemd/timesync/synchronized") -> State {
        let now = Clock.realtimeSeconds()
        if now < notBefore {
            return .unsynchronized(reason: "the clock says \(Int(now)) s since 1970, before this build was made")
        }
        if access(timesyncFlag, F_OK) == 0 { return .synchronized(source: "systemd-timesyncd") }
        var unsync: Int32 = 1
        let rc = osh_adjtimex_state(&unsync)
        // 5 = TIME_ERROR: the kernel itself says its clock is not disciplined.
        if rc >= 0 && rc != 5 && unsync == 0 { return .synchronized(source: "kernel (NTP)") }
        return .unsynchronized(reason: "the kernel clock is not synchronised (adjtimex status \(rc)); waiting for NTP")
    }
}

/// Which boot this is: monotonic times mean something only within one. Records spooled while the
/// clock was not trusted carry it, so a later boot never gives them a made-up time.
public enum BootID {
    /// The first 16 hex digits of the kernel's boot_id; a random tag when it cannot be read (then
    /// held records do not outlive this process, which is the safe side).
    public static let tag: UInt64 =
        parse(StateFiles.readText("/proc/sys/kernel/random/boot_id") ?? "")
        ?? UInt64.random(in: 1...UInt64.max)

    /// The tag of a boot_id text (`8-4-4-4-12` hex); nil when it is not one.
    public static func parse(_ text: String) -> UInt64? {
        var v: UInt64 = 0
        var digits = 0
        for c in text.utf8 where digits < 16 {
            let d: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = c - UInt8(ascii: "A") + 10
            case UInt8(ascii: "-"), UInt8(ascii: "\n"): continue
            default: return nil
            }
            v = v << 4 | UInt64(d)
            digits += 1
        }
        return digits == 16 && v != 0 ? v : nil
    }
}
