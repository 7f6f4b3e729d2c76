/// What every device and connection does when it fails (a GPS port, gpsd, the command channel,
/// a camera, an audio device, an I²C chip, registration, the node link): wait `Backoff`, retry,
/// and tell the journal the story of the outage — its first failure with when it is retried,
/// each different reason once, and the recovery once — not a line per retry.
///
/// Pure state (no clock, no I/O, no logging): the caller arms its own timer with `delay` and
/// writes the line `Verdict.log` asks for (OSHPlatform's `RetryLog` does both for most callers).
/// Tested without I/O in ReconnectPolicyTests.

/// Reconnect delays: `initial`, doubling after each consecutive failure, capped at `maximum`
/// (0.5 s, 1, 2, 4, 8, 10, 10 … by default), spread by ± `jitter` of the step so that many boards
/// do not retry in step (0 = exact, what the device inputs use).
public struct Backoff: Sendable, Equatable {
    public var initial: Double
    public var maximum: Double
    /// ± fraction of each delay, drawn from the policy's seeded generator.
    public var jitter: Double

    public init(initial: Double = 0.5, maximum: Double = 10, jitter: Double = 0) {
        self.initial = max(0.001, initial)
        self.maximum = max(self.initial, maximum)
        self.jitter = min(max(0, jitter), 1)
    }

    /// The step before the next attempt after `failures` consecutive failures (1 = the first),
    /// without jitter.
    public func delay(afterFailures failures: Int) -> Double {
        var d = initial
        var n = 1
        while n < failures && d < maximum {
            d *= 2
            n += 1
        }
        return min(d, maximum)
    }
}

public struct ReconnectPolicy: Sendable {
    /// What the caller does after a failure: wait `delay` seconds (jittered), then retry; write
    /// `log` if it is not nil.
    public struct Verdict: Sendable, Equatable {
        /// The wait before the next attempt (jitter applied).
        public var delay: Double
        /// The backoff step `delay` was drawn around (what a status line shows: "retrying in 4 s").
        public var step: Double
        /// The line to write, if any: the outage's first failure, or a reason not said yet.
        public var log: LogLine?
    }

    public enum LogLine: Sendable, Equatable {
        /// The outage begins: say the reason and when it is retried.
        case firstFailure
        /// A reason not said yet in this outage.
        case newReason
    }

    public var backoff: Backoff
    /// Consecutive failures (0 = working).
    public private(set) var failures = 0
    /// In an outage: a failure was reported and no recovery yet.
    public var isDown: Bool { failures > 0 }
    /// Reason keys said during this outage; bounded (a source has a handful of distinct reasons).
    private var said: [String] = []
    /// Outside an outage: the last note, so an immediate repeat stays quiet.
    private var lastNote = ""
    private var rng: SplitMix64
    static let remembered = 16

    /// `seed`: nil draws one from the system, so boards that lost the same node do not retry in
    /// step; tests pass one so a run reproduces.
    public init(backoff: Backoff = Backoff(), seed: UInt64? = nil) {
        self.backoff = backoff
        rng = SplitMix64(seed: seed ?? UInt64.random(in: 0...UInt64.max))
    }

    /// A failure that will be retried, its reason compared by `key` (a reason carrying a changing
    /// detail, libcurl's "after 9 ms", can still count as a repeat).
    public mutating func failed(key: String) -> Verdict {
        failures += 1
        let step = backoff.delay(afterFailures: failures)
        let spread = step * backoff.jitter
        let delay = spread > 0 ? max(0, step + Double.random(in: -spread...spread, using: &rng)) : step
        let log: LogLine?
        if failures == 1 {
            said = [key]
            lastNote = ""
            log = .firstFailure
        } else {
            log = remember(key) ? .newReason : nil
        }
        return Verdict(delay: delay, step: step, log: log)
    }

    /// Any other event worth a line: during an outage each key once; otherwise unless it repeats
    /// the last one. True when the caller should write it.
    public mutating func shouldNote(key: String) -> Bool {
        if isDown { return remember(key) }
        guard key != lastNote else { return false }
        lastNote = key
        return true
    }

    /// The thing works again. True if it was down (the caller then says, once, that it is back).
    public mutating func succeeded() -> Bool {
        defer {
            failures = 0
            said = []
        }
        return failures > 0
    }

    private mutating func remember(_ key: String) -> Bool {
        guard !said.contains(key) else { return false }
        if said.count >= Self.remembered { said.removeFirst() }
        said.append(key)
        return true
    }

    /// A delay as logs and status lines say it: "1 s", "0.5 s".
    public static func seconds(_ d: Double) -> String {
        d == d.rounded() ? "\(Int(d)) s" : "\(d) s"
    }
}
