import CShim
#if canImport(Glibc)
import Glibc
#endif

/// The two clocks the agent uses: CLOCK_MONOTONIC for scheduling and measuring,
/// CLOCK_REALTIME (UTC wall clock) only for observation timestamps.
public enum Clock {
    @inline(__always) public static func monotonicNanoseconds() -> UInt64 { osh_monotonic_ns() }

    /// Unix epoch seconds from the wall clock.
    @inline(__always) public static func realtimeSeconds() -> Double { Double(osh_realtime_ns()) / 1e9 }
}

/// Process resource figures for benchmarks and device_health.
public enum ProcessStats {
    /// Peak resident set size in KiB (getrusage ru_maxrss).
    public static func maxRSSKiB() -> Int {
        var usage = rusage()
        guard getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage) == 0 else { return -1 }
        return Int(usage.ru_maxrss)
    }
}
