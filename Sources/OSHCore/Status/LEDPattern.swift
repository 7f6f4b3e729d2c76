// The status LED's language (board/README.md "Status LED"): what the agent is doing,
// told by one LED to someone standing next to a headless board. Pure: a state and the
// time since it was entered give on or off, so every pattern is testable without a GPIO.
// All edges fall on multiples of 50 ms, the StatusLED's tick.

/// What the LED shows, chosen by `LEDState.derive` (most urgent wins).
public enum LEDState: String, Sendable, Equatable, CaseIterable {
    /// Starting, or registering with the node: slow blink (0.5 s on, 0.5 s off).
    case starting
    /// Registered and sending: on, with a 100 ms dark blip when a batch goes out (at most one a second).
    case streaming
    /// The node cannot be reached or refuses us; retrying: fast blink (0.1 s on, 0.1 s off).
    case nodeUnreachable
    /// The clock is not synchronised, so observations are held: a 100 ms flash every 2 s.
    case clockHeld
    /// A sensor fails (others may still stream): double blink every 2 s.
    case sensorFault
    /// The configuration was refused; nothing runs: triple blink, then dark, every 3 s.
    case configError
    /// Stopped (or no LED wanted).
    case off
}

/// One repeating pattern: a period and the intervals within it when the LED is on.
public struct LEDPattern: Sendable, Equatable {
    public let periodMs: UInt64
    /// Half-open [start, end) intervals in ms, sorted, within the period.
    public let onMs: [Range<UInt64>]

    public init(periodMs: UInt64, onMs: [Range<UInt64>]) {
        self.periodMs = max(periodMs, 1)
        self.onMs = onMs
    }

    /// On or off `elapsedMs` after the pattern started (it starts with its first interval).
    public func isOn(elapsedMs: UInt64) -> Bool {
        let t = elapsedMs % periodMs
        for r in onMs where r.contains(t) { return true }
        return false
    }

    public static let slowBlink = LEDPattern(periodMs: 1000, onMs: [0..<500])
    public static let fastBlink = LEDPattern(periodMs: 200, onMs: [0..<100])
    public static let shortFlash = LEDPattern(periodMs: 2000, onMs: [0..<100])
    public static let doubleBlink = LEDPattern(periodMs: 2000, onMs: [0..<150, 300..<450])
    public static let tripleBlink = LEDPattern(periodMs: 3000, onMs: [0..<150, 300..<450, 600..<750])
    /// Identify: rapid, hard to miss among other boards.
    public static let identify = LEDPattern(periodMs: 100, onMs: [0..<50])
    public static let solid = LEDPattern(periodMs: 1000, onMs: [0..<1000])
    public static let dark = LEDPattern(periodMs: 1000, onMs: [])

    /// How long the streaming blip keeps the LED dark, and the least time between blips
    /// (batches go out every 250 ms; a blip for each would look like a flicker).
    public static let blipMs: UInt64 = 100
    public static let blipSpacingMs: UInt64 = 1000

    public static func pattern(for state: LEDState) -> LEDPattern {
        switch state {
        case .starting: return slowBlink
        case .streaming: return solid
        case .nodeUnreachable: return fastBlink
        case .clockHeld: return shortFlash
        case .sensorFault: return doubleBlink
        case .configError: return tripleBlink
        case .off: return dark
        }
    }

    /// The LED level: `state` entered `elapsedMs` ago; the last published batch was `sinceActivityMs`
    /// ago (nil = none yet); identify has `identifyRemainingMs` left (0 = not identifying) and started
    /// `identifyElapsedMs` ago. Identify overrides every state.
    public static func level(
        state: LEDState, elapsedMs: UInt64, sinceActivityMs: UInt64? = nil,
        identifyRemainingMs: UInt64 = 0, identifyElapsedMs: UInt64 = 0
    ) -> Bool {
        if identifyRemainingMs > 0 { return identify.isOn(elapsedMs: identifyElapsedMs) }
        if state == .streaming, let a = sinceActivityMs, a < blipMs { return false }
        return pattern(for: state).isOn(elapsedMs: elapsedMs)
    }
}

extension LEDState {
    /// The one state to show, most urgent first: a refused configuration, then the node
    /// unreachable (while registering or streaming), the clock held, a failing sensor,
    /// still registering, and streaming.
    public static func derive(
        configError: Bool = false, registered: Bool, nodeReachable: Bool,
        clockSynchronized: Bool, sensorFault: Bool = false
    ) -> LEDState {
        if configError { return .configError }
        if !nodeReachable { return .nodeUnreachable }
        if !clockSynchronized { return .clockHeld }
        if sensorFault { return .sensorFault }
        if !registered { return .starting }
        return .streaming
    }
}
