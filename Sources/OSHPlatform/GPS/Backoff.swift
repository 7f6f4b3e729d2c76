/// Reconnect delays for the GPS sources: `initial`, doubling after each consecutive failure,
/// capped at `maximum` (0.5 s, 1, 2, 4, 8, 10, 10 … by default).
public struct Backoff: Sendable, Equatable {
    public var initial: Double
    public var maximum: Double

    public init(initial: Double = 0.5, maximum: Double = 10) {
        self.initial = max(0.001, initial)
        self.maximum = max(self.initial, maximum)
    }

    /// The wait before the next attempt after `failures` consecutive failures (1 = the first).
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
