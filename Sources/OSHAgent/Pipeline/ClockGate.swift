import OSHCore
import OSHPlatform

/// The clock gate: observations are sampled on CLOCK_MONOTONIC and held until a wall clock
/// can be trusted (the system's, synchronised, or a GPS receiver's time standing in for it);
/// `check` gives the offset that turns monotonic times into wall-clock ones, nil to hold.
public final class ClockGate {
    /// How to get past a held clock: the log's words and `check`'s.
    public static let fix =
        "timedatectl shows whether NTP reaches a server; a GPS fix also sets the time; "
        + "a board whose clock is right without NTP can set [time] require_sync = false"
    public private(set) var state: ClockSync.State = .unsynchronized(reason: "not checked yet")
    /// Replaces the system check (tests simulate an unsynchronised board with it).
    public var provider: (() -> ClockSync.State)?
    private let trustHostClock: Bool
    private let notBefore: Double
    /// Wall-clock offset learnt from GPS time (used while the system clock is not synchronised).
    private var gpsOffset: Double?
    /// CLOCK_MONOTONIC seconds when the gate began holding (nil while it lets observations through).
    public private(set) var holdingSince: Double?

    /// Whole seconds the gate has held observations so far (nil when it is not holding).
    public var heldSeconds: Int? {
        holdingSince.map { Int(Double(Clock.monotonicNanoseconds()) / 1e9 - $0) }
    }

    init(trustHostClock: Bool, notBefore: Double) {
        self.trustHostClock = trustHostClock
        self.notBefore = notBefore
    }

    /// Re-evaluates the clock (once a second, and after a GPS time); returns the offset to stamp with.
    func check() -> Double? {
        var s: ClockSync.State
        if let p = provider {
            s = p()
        } else if trustHostClock {
            s =
                Clock.realtimeSeconds() >= notBefore
                ? .synchronized(source: "host clock (trusted by configuration)")
                : ClockSync.current(notBefore: notBefore)
        } else {
            s = ClockSync.current(notBefore: notBefore)
        }
        if !s.isSynchronized, gpsOffset != nil { s = .synchronized(source: "GPS") }
        if s != state {
            if case .unsynchronized(let why) = s {
                Log.warning(
                    "holding observations: \(why); they are sent, with correct times, once the clock is synchronised "
                        + "(\(Self.fix))")
            } else if case .synchronized(let src) = s {
                let held = heldSeconds.map { " after \($0) s" } ?? ""
                Log.info("clock trusted (\(src))\(held); observations get wall-clock times")
            }
            state = s
        }
        if s.isSynchronized { holdingSince = nil } else if holdingSince == nil { holdingSince = Double(Clock.monotonicNanoseconds()) / 1e9 }
        // Re-read every second: the offset follows NTP's corrections, and held observations get
        // correct times when they finally go out.
        if case .synchronized("GPS") = s, let g = gpsOffset { return g }
        return s.isSynchronized ? Clock.realtimeSeconds() - Double(Clock.monotonicNanoseconds()) / 1e9 : nil
    }

    /// A receiver's UTC time at `monotonic`: it stands in while the system clock is not synchronised.
    /// True when the gate should be checked again (the offset changed).
    func gpsTime(_ epoch: Double, monotonic: Double) -> Bool {
        guard epoch >= notBefore else { return false }
        if case .synchronized(let source) = state, source != "GPS" { return false }
        if gpsOffset == nil { Log.info("clock: using GPS time until the system clock is synchronised") }
        gpsOffset = epoch - monotonic
        return true
    }
}
