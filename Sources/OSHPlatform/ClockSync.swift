import CShim
#if canImport(Glibc)
import Glibc
#endif

/// Whether the wall clock can be trusted for observation times (SPEC §6). A Pi has no
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
