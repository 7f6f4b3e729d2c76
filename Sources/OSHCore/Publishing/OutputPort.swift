// The stage where a typed sample becomes a ring slot: the sample writes its values by leaf
// name into slots checked once against its output's record (`SampleSlots`), the port hands them
// to the gate (`OutputPort`), and the gate's policy (enabled, due at the rate) decides whether
// they go into the publisher's ring (`OutputGate`). Pure policy, no I/O, like the publisher.

/// What `OutputSample.write` writes through: while `SampleSlots` is being checked it records
/// the names; afterwards it puts the k-th value into the slot found for the k-th name.
public struct SlotWriter {
    fileprivate var names: [String] = []
    fileprivate let recording: Bool
    fileprivate let slotOfCall: UnsafeMutableBufferPointer<Int>
    fileprivate let values: UnsafeMutableBufferPointer<Double>
    fileprivate var call = 0

    public mutating func set(_ leafName: StaticString, _ value: Double) {
        if recording {
            names.append(leafName.description)
            return
        }
        values[slotOfCall[call]] = value
        call += 1
    }
}

public struct OutputLayoutError: Error, Equatable, CustomStringConvertible {
    public let description: String
}

/// A verified way from samples of type `S` into one output's values (its leaves after the time,
/// in record order): the values buffer the ring copies from.
public final class SampleSlots<S: OutputSample> {
    public let outputName: String
    public let valueCount: Int
    private let slotOfCall: UnsafeMutableBufferPointer<Int>
    private let values: UnsafeMutableBufferPointer<Double>

    /// Checks `S`'s leaf names against `spec`'s record; the error names the output, the sample
    /// type and the leaf that does not match.
    public init(spec: OutputSpec) throws(OutputLayoutError) {
        outputName = spec.outputName
        let what = "output \(spec.outputName) (\(S.self))"
        if spec.kind != .other, spec.kind != S.kind {
            throw OutputLayoutError(description: "\(what): the output is a \(spec.kind.rawValue), the sample a \(S.kind.rawValue)")
        }
        let valueLeaves = spec.leaves.filter { !$0.component.isObservationTime }
        let leafNames = valueLeaves.map { $0.names.last ?? "" }
        valueCount = leafNames.count
        var recorder = SlotWriter(
            recording: true, slotOfCall: UnsafeMutableBufferPointer(start: nil, count: 0),
            values: UnsafeMutableBufferPointer(start: nil, count: 0))
        S().write(to: &recorder)
        let written = recorder.names
        var slots: [Int] = []
        for name in written {
            guard let slot = leafNames.firstIndex(of: name) else {
                throw OutputLayoutError(
                    description: "\(what) writes '\(name)', which is not a leaf of the record "
                        + "(its leaves: \(leafNames.joined(separator: ", "))); rename the sample's field")
            }
            if slots.contains(slot) { throw OutputLayoutError(description: "\(what) writes '\(name)' twice") }
            slots.append(slot)
        }
        if let missing = leafNames.first(where: { !written.contains($0) }) {
            throw OutputLayoutError(
                description: "\(what) never writes leaf '\(missing)'; the record has "
                    + "\(leafNames.count) values, the sample \(written.count)")
        }
        slotOfCall = .allocate(capacity: max(slots.count, 1))
        for (k, s) in slots.enumerated() { slotOfCall[k] = s }
        values = .allocate(capacity: max(valueCount, 1))
        values.initialize(repeating: .nan)
    }

    deinit {
        slotOfCall.deallocate()
        values.deallocate()
    }

    /// Writes `sample` into the slots and lends them, in leaf order (no allocation).
    public func withValues<R>(_ sample: S, _ body: (UnsafeBufferPointer<Double>) throws -> R) rethrows -> R {
        var w = SlotWriter(recording: false, slotOfCall: slotOfCall, values: values)
        sample.write(to: &w)
        return try body(UnsafeBufferPointer(rebasing: values[0..<valueCount]))
    }
}

/// Where a source hands one output's typed samples: the sample writes its values into slots
/// checked against the output's record when the port was made, then the output gate passes them
/// to the ring. One per output a source feeds; no allocation per sample.
public final class OutputPort<S: OutputSample> {
    /// The output's datastream index in the runtime.
    public let datastream: Int
    private let slots: SampleSlots<S>
    private let gate: OutputGate

    public init(gate: OutputGate, datastream: Int, spec: OutputSpec) throws(OutputLayoutError) {
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
public final class OutputGate {
    public private(set) var enabled: [Bool]
    public private(set) var rates: [Double]
    /// The first value of each output's latest observation (the demo's table).
    public private(set) var lastValues: [Double]
    private var thinners: [RateThinner]
    private let publisher: Publisher
    /// The on-board recording, when `[record] enabled`.
    public var recorder: Recorder?

    public init(rates: [Double], publisher: Publisher) {
        self.rates = rates
        self.publisher = publisher
        enabled = [Bool](repeating: true, count: rates.count)
        thinners = [RateThinner](repeating: RateThinner(), count: rates.count)
        lastValues = [Double](repeating: .nan, count: rates.count)
    }

    /// One observation of output `i`: values in its leaf order, time excluded.
    public func record(_ i: Int, monotonicTime: Double, values: UnsafeBufferPointer<Double>, always: Bool) {
        let live = admits(i, at: monotonicTime, always: always)
        if live {
            publisher.record(datastream: i, monotonicTime: monotonicTime, values: values)
            lastValues[i] = values.first ?? .nan
        }
        // The recording keeps its own rate, whether the live stream took this one or not.
        recorder?.offer(i, monotonicTime: monotonicTime, values: values, live: live)
    }

    /// True when output `i` should take a sample at `t` (enabled, and due at its rate).
    /// `always` passes whatever the rate (a pan-tilt unit's final position must not be thinned away).
    private func admits(_ i: Int, at t: Double, always: Bool) -> Bool {
        guard enabled[i] else { return false }
        if always { return true }
        return thinners[i].admits(t, rate: rates[i])
    }

    public func setRate(_ i: Int, _ hz: Double) {
        rates[i] = hz
        thinners[i].reset()
    }

    public func setEnabled(_ i: Int, _ on: Bool) {
        enabled[i] = on
        thinners[i].reset()
    }
}
