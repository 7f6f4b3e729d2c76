import OSHCore
import OSHPlatform

/// Paces one bus device: `poll` at `rate` on the loop's timer; when polls keep failing, stops,
/// and calls `reopen` (identify + configure again) with backoff until it succeeds. While a
/// device is down its outputs send nothing; every other source keeps flowing (they have their
/// own timers), and the node sees a gap rather than invented values.
public final class SensorPoller {
    public enum State: Equatable, Sendable {
        case stopped
        case running
        /// Waiting to reopen after `failures` consecutive failures; `error` is the last one.
        case retrying(failures: Int, delay: Double, error: String)
    }

    public let name: String
    public private(set) var state: State = .stopped
    public private(set) var polls = 0
    public private(set) var failedPolls = 0
    public private(set) var reopens = 0
    /// Called on every state change (logs, device_health, the status table).
    public var onStateChange: ((State) -> Void)?

    private let loop: EventLoop
    private let period: UInt64
    /// Waits between reopen attempts, and which failures are logged (the first, then new reasons).
    private var policy: ReconnectPolicy
    /// A single bad transfer is noise on a long wire; this many in a row mean the chip is gone.
    private let failuresBeforeReopen: Int
    private let reopen: () throws -> Void
    private let poll: (Double) throws -> Void
    private var timer: EventLoop.Timer?
    private var consecutiveFailures = 0
    private lazy var retry = LoopDeadline(loop: loop) { [unowned self] in self.attemptReopen() }

    /// `poll` gets the monotonic time (s) of the tick; it throws on a bus error.
    public init(
        loop: EventLoop, name: String, rate: Double, backoff: Backoff = Backoff(initial: 1, maximum: 30),
        failuresBeforeReopen: Int = 3, reopen: @escaping () throws -> Void, poll: @escaping (Double) throws -> Void
    ) {
        self.loop = loop
        self.name = name
        self.period = UInt64(1e9 / max(rate, 0.001))
        policy = ReconnectPolicy(backoff: backoff)
        self.failuresBeforeReopen = max(1, failuresBeforeReopen)
        self.reopen = reopen
        self.poll = poll
    }

    /// Starts polling (the device was opened by whoever created the poller).
    public func start() throws {
        try startTimer()
        setState(.running)
    }

    public func stop() {
        if let t = timer { loop.cancel(t) }
        timer = nil
        retry.cancel()
        setState(.stopped)
    }

    /// Starts with the device not there yet: looks for it (`reopen`) on the backoff, saying so once.
    public func startRetrying(_ error: String) {
        goDown(error)
    }

    private func startTimer() throws {
        if let t = timer { loop.cancel(t) }
        timer = try loop.addAlignedTimer(every: period) { [unowned self] _ in
            self.tick()
        }
    }

    private func tick() {
        polls += 1
        do {
            // Missed ticks are not back-filled: a reading is taken now, once.
            try poll(Double(loop.now) / 1e9)
            consecutiveFailures = 0
        } catch {
            failedPolls += 1
            consecutiveFailures += 1
            if consecutiveFailures >= failuresBeforeReopen { goDown("\(error)") }
        }
    }

    private func goDown(_ error: String) {
        if let t = timer { loop.cancel(t) }
        timer = nil
        let v = policy.failed(key: error)
        switch v.log {
        case .firstFailure: Log.warning("\(name): \(error); its outputs pause, retrying in \(formatSeconds(v.delay))")
        case .newReason: Log.warning("\(name): \(error)")
        case nil: break
        }
        setState(.retrying(failures: policy.failures, delay: v.delay, error: error))
        do { try retry.arm(after: v.delay) } catch { Log.error("\(name): cannot arm the retry timer: \(error); restart osh-edge") }
    }

    private func attemptReopen() {
        do {
            try reopen()
            try startTimer()
            reopens += 1
            consecutiveFailures = 0
            _ = policy.succeeded()
            Log.notice("\(name): back; its outputs resume")
            setState(.running)
        } catch {
            goDown("\(error)")
        }
    }

    private func setState(_ s: State) {
        guard s != state else { return }
        state = s
        onStateChange?(s)
    }

    private func formatSeconds(_ d: Double) -> String { d < 1 ? "\(Int(d * 1000)) ms" : "\(Int(d)) s" }
}
