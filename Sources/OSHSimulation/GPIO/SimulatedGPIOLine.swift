import OSHPlatform

/// The mocking seam: records each change of level with the time it happened.
public final class SimulatedGPIOLine: GPIOLine {
    public struct Transition: Sendable, Equatable {
        public var time: UInt64
        public var high: Bool
        public init(time: UInt64, high: Bool) { self.time = time; self.high = high }
    }

    public private(set) var transitions: [Transition] = []
    public private(set) var level: Bool
    /// Where the time of each transition comes from (the StatusLED's clock in tests).
    public var now: () -> UInt64
    /// Set to make the next `set` fail (a line that vanished).
    public var failNext: GPIOError?

    public init(initialHigh: Bool = false, now: @escaping () -> UInt64 = { Clock.monotonicNanoseconds() }) {
        level = initialHigh
        self.now = now
    }

    public func set(_ high: Bool) throws {
        if let e = failNext { failNext = nil; throw e }
        guard high != level else { return }
        level = high
        transitions.append(Transition(time: now(), high: high))
    }
}
