#if canImport(Glibc)
import Glibc
#endif
import OSHCore
import OSHPlatform

/// Drives the status LED from the event loop: it sets the line to `LEDPattern.level(…)` and
/// wakes only for the pattern's next edge (looked up on the 50 ms tick) or, when the level holds,
/// to ask `state` again on the loop's 250 ms grid, which the publisher's flush wakes anyway — a
/// steady LED costs no wake-ups of its own (a 50 ms ticker cost 20 a second). A pattern restarts
/// from its first "on" when the state changes. Nothing allocates per wake-up.
public final class StatusLED {
    public static let defaultTick: UInt64 = 50_000_000
    /// How often a steady LED asks `state` again (the publisher's default flush interval).
    public static let statePoll: UInt64 = 250_000_000

    private let line: GPIOLine
    private let activeLow: Bool
    private let state: () -> LEDState
    private let now: () -> UInt64
    private let tick: UInt64
    private var timer: EventLoop.Timer?
    private weak var loop: EventLoop?

    private var shown: LEDState?
    private var enteredAt: UInt64 = 0
    private var lastBlip: UInt64?
    private var identifyStart: UInt64 = 0
    private var identifyUntil: UInt64 = 0
    private var failed = false

    /// `state` is read once per tick (keep it cheap). `now` is CLOCK_MONOTONIC ns (tests pass their own).
    public init(
        line: GPIOLine, activeLow: Bool = false, tick: UInt64 = StatusLED.defaultTick,
        now: @escaping () -> UInt64 = { Clock.monotonicNanoseconds() },
        state: @escaping () -> LEDState
    ) {
        self.line = line
        self.activeLow = activeLow
        self.tick = max(tick, 1_000_000)
        self.now = now
        self.state = state
    }

    /// Opens the configured line, or nil (with the reason logged once) when there is no LED:
    /// a missing LED never stops the agent.
    public static func open(_ settings: LEDSettings, loop: EventLoop, state: @escaping () -> LEDState) -> StatusLED? {
        guard settings.enabled else { return nil }
        do {
            let line = try LibgpiodLine(chip: settings.chip, line: settings.line, initialHigh: settings.activeLow)
            let led = StatusLED(line: line, activeLow: settings.activeLow, state: state)
            try led.start(on: loop)
            Log.info(
                "status LED on \(line.chip) line \(settings.line)\(settings.activeLow ? " (active low)" : "") via libgpiod \(LibgpiodLine.libraryVersion)"
            )
            return led
        } catch {
            Log.warning("no status LED: \(error)")
            return nil
        }
    }

    /// Shows the pattern now and wakes on `loop` for its edges from then on.
    public func start(on loop: EventLoop) throws {
        stop()
        self.loop = loop
        let t0 = now()
        timer = try loop.addTimer(firstAt: t0 &+ tick) { [unowned self] _ in
            // A late wake-up is not replayed: the level is a function of the time now.
            self.update(at: self.now())
        }
        update(at: t0)
    }

    /// Stops ticking and turns the LED off (SIGTERM: a dark LED means "not running").
    public func stop() {
        if let t = timer { loop?.cancel(t) }
        timer = nil
        drive(false)
    }

    /// Rapid blinking for `seconds` over whatever the state shows (the identify command).
    public func identify(seconds: Double) {
        let t = now()
        identifyStart = t
        identifyUntil = seconds > 0 ? t + UInt64(min(seconds, 3600) * 1e9) : 0
        update(at: t)
    }

    public var isIdentifying: Bool { identifyUntil > now() }

    /// A batch was published: a short dark blip while streaming (at most one per second).
    public func activity() {
        let t = now()
        if let b = lastBlip, t &- b < LEDPattern.blipSpacingMs * 1_000_000 { return }
        lastBlip = t
        if timer != nil { update(at: t) }
    }

    /// Sets the line for time `t` and, when started on a loop, arms the next wake-up (the timer
    /// calls it; tests call it with their own times).
    public func update(at t: UInt64) {
        let s = state()
        if s != shown {
            shown = s
            enteredAt = t
        }
        let on = level(s, at: t)
        drive(on)
        guard let loop, let timer else { return }
        // The first tick whose level differs, else the next state poll on the loop's grid.
        let poll = EventLoop.nextMultiple(of: Self.statePoll, after: t)
        var next = poll
        var k: UInt64 = 1
        while t &+ k &* tick < poll {
            if level(s, at: t &+ k &* tick) != on { next = t &+ k &* tick; break }
            k += 1
        }
        do { try loop.rearm(timer, at: next) } catch {
            if !failed { failed = true; Log.warning("status LED: cannot arm its timer: \(error)") }
        }
    }

    private func level(_ s: LEDState, at t: UInt64) -> Bool {
        let identifyLeft = identifyUntil > t ? (identifyUntil - t) / 1_000_000 : 0
        return LEDPattern.level(
            state: s, elapsedMs: (t &- enteredAt) / 1_000_000,
            sinceActivityMs: lastBlip.map { (t &- $0) / 1_000_000 },
            identifyRemainingMs: identifyLeft,
            identifyElapsedMs: (t &- identifyStart) / 1_000_000)
    }

    private func drive(_ on: Bool) {
        do {
            try line.set(on != activeLow)
            if failed { failed = false; Log.notice("status LED works again") }
        } catch {
            // Logged once: a lost LED must not flood the journal every 50 ms.
            if !failed { failed = true; Log.warning("status LED: \(error)") }
        }
    }
}

extension StatusLED {
    /// `osh-edge led`: show one pattern (or identify) for `seconds` on the configured line, then
    /// turn the LED off — for checking the wiring and the chip/line before the service runs.
    /// Throws the GPIO error (chip missing, permission, busy line) as the agent would log it.
    public static func demonstrate(
        _ settings: LEDSettings, state: LEDState?, seconds: Double,
        print: (String) -> Void
    ) throws {
        let line = try LibgpiodLine(chip: settings.chip, line: settings.line, initialHigh: settings.activeLow)
        let loop = try EventLoop()
        let led = StatusLED(line: line, activeLow: settings.activeLow, state: { state ?? .off })
        try led.start(on: loop)
        if state == nil { led.identify(seconds: seconds) }
        print(
            "\(line.chip) line \(settings.line) (libgpiod \(LibgpiodLine.libraryVersion)): "
                + "\(state?.rawValue ?? "identify") for \(seconds) s")
        try loop.run(until: EventLoop.deadline(after: seconds))
        led.stop()
    }

    /// Three times the configuration-error pattern (three blinks per 3 s), then dark.
    public static let configErrorSeconds = 9.0

    /// The agent refuses its configuration: if the file's `[led]` section is sound, the LED says
    /// so before the process exits (systemd restarts it 5 s later, so the pattern comes back
    /// until the file is fixed). SIGTERM ends it early.
    public static func showConfigError(_ settings: LEDSettings?, seconds: Double = configErrorSeconds) {
        guard let settings, settings.enabled else { return }
        do {
            let line = try LibgpiodLine(chip: settings.chip, line: settings.line, initialHigh: settings.activeLow)
            try showConfigError(line: line, activeLow: settings.activeLow, loop: try EventLoop(), seconds: seconds)
        } catch {
            Log.warning("the status LED cannot show the configuration error: \(error)")
        }
    }

    static func showConfigError(line: GPIOLine, activeLow: Bool, loop: EventLoop, seconds: Double) throws {
        let led = StatusLED(line: line, activeLow: activeLow, now: { loop.now }, state: { .configError })
        try led.start(on: loop)
        let signals = try loop.onSignals([SIGTERM, SIGINT]) { _ in loop.stop() }
        try loop.run(until: loop.deadline(after: seconds))
        loop.remove(signals)
        led.stop()
    }
}
