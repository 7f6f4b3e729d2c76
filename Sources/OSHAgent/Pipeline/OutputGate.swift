import OSHCore

/// The output gate, the stage after a source: per output, published at all, and at most how
/// often (device inputs may sample faster — the IMU runs its filter at 100 Hz — and are thinned
/// here to the output's rate). The node's commands change it at run time.
final class OutputGate {
    private(set) var enabled: [Bool]
    private(set) var rates: [Double]
    private var nextDue: [Double]

    init(rates: [Double]) {
        self.rates = rates
        enabled = [Bool](repeating: true, count: rates.count)
        nextDue = [Double](repeating: 0, count: rates.count)
    }

    /// True when output `i` should take a sample at `t` (enabled, and due at its rate).
    /// `always` passes whatever the rate (a pan-tilt unit's final position must not be thinned away).
    func admits(_ i: Int, at t: Double, always: Bool = false) -> Bool {
        guard enabled[i] else { return false }
        if always { return true }
        let interval = 1 / rates[i]
        // 5 % slack so a 100 Hz source thinned to 10 Hz keeps every tenth sample despite jitter.
        guard t >= nextDue[i] - interval * 0.05 else { return false }
        nextDue[i] += interval
        if nextDue[i] < t { nextDue[i] = t + interval }
        return true
    }

    func setRate(_ i: Int, _ hz: Double) {
        rates[i] = hz
        nextDue[i] = 0
    }

    func setEnabled(_ i: Int, _ on: Bool) {
        enabled[i] = on
        nextDue[i] = 0
    }
}
