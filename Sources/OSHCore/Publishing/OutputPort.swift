import OSHCore

/// Where a source hands one output's typed samples: the sample writes its values into slots
/// checked against the output's record when the port was made (`AgentRuntime.port`), then the
/// output gate passes them to the ring. One per output a source feeds; no allocation per sample.
public final class OutputPort<S: OutputSample> {
    /// The output's datastream index in the runtime.
    public let datastream: Int
    private let slots: SampleSlots<S>
    private let gate: OutputGate

    init(gate: OutputGate, datastream: Int, spec: OutputSpec) throws(OutputLayoutError) {
        self.gate = gate
        self.datastream = datastream
        slots = try SampleSlots<S>(spec: spec)
    }

    /// `send` as a device input's sink (monotonic time, sample).
    public var sink: (Double, S) -> Void { { [self] t, sample in send(sample, at: t) } }

    /// One sample taken at `monotonicTime`; `always` skips the rate thinning (not the enable switch).
    public func send(_ sample: S, at monotonicTime: Double, always: Bool = false) {
        slots.withValues(sample) { gate.record(datastream, monotonicTime: monotonicTime, values: $0, always: always) }
    }
}

/// The output gate, the stage after a source: per output, published at all, and at most how
/// often (device inputs may sample faster — the IMU runs its filter at 100 Hz — and are thinned
/// here to the output's rate); what passes goes into the publisher's ring. The node's commands
/// change it at run time.
final class OutputGate {
    private(set) var enabled: [Bool]
    private(set) var rates: [Double]
    /// The first value of each output's latest observation (the demo's table).
    private(set) var lastValues: [Double]
    private var nextDue: [Double]
    private let publisher: Publisher

    init(rates: [Double], publisher: Publisher) {
        self.rates = rates
        self.publisher = publisher
        enabled = [Bool](repeating: true, count: rates.count)
        nextDue = [Double](repeating: 0, count: rates.count)
        lastValues = [Double](repeating: .nan, count: rates.count)
    }

    /// One observation of output `i`: values in its leaf order, time excluded.
    func record(_ i: Int, monotonicTime: Double, values: UnsafeBufferPointer<Double>, always: Bool) {
        guard admits(i, at: monotonicTime, always: always) else { return }
        publisher.record(datastream: i, monotonicTime: monotonicTime, values: values)
        lastValues[i] = values.first ?? .nan
    }

    /// True when output `i` should take a sample at `t` (enabled, and due at its rate).
    /// `always` passes whatever the rate (a pan-tilt unit's final position must not be thinned away).
    private func admits(_ i: Int, at t: Double, always: Bool) -> Bool {
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
