// The recording tap: beside the live path, every output may also be kept on the card
// at its own rate — faster than it streams — for the node to pull a window of later
// (`uploadTimeRange`). Pure policy like the gate: which samples are kept, with which epoch time,
// and whether the live stream took the same one (that one is at the node already, so an upload
// leaves it out). The files are OSHPlatform's RecordingStore, behind `RecordingSink`.

/// Where recorded observations go (the RecordingStore; a recording fake in tests). `output` counts
/// the recorded outputs only (`Recorder.sinkIndex`); `live` marks an observation the live stream took too.
public protocol RecordingSink: AnyObject {
    func append(output: Int, epochTime: Double, values: UnsafeBufferPointer<Double>, live: Bool) -> Bool
    func append(output: Int, epochTime: Double, accessUnit: UnsafeRawBufferPointer, keyFrame: Bool, live: Bool) -> Bool
}

/// At most `rate` samples a second out of a faster source, by due times on a grid: a sample up to
/// `slack` of an interval early still counts (a 100 Hz source thinned to 10 Hz keeps every tenth
/// sample despite jitter); a gap restarts the grid.
public struct RateThinner: Sendable {
    private var nextDue = 0.0
    private let slack: Double
    /// The gate's 5 %; the recording takes 25 %, as it often runs at the source's own rate, where
    /// a sample's jitter is a large part of the interval.
    public init(slack: Double = 0.05) { self.slack = slack }

    public mutating func admits(_ t: Double, rate: Double) -> Bool {
        let interval = 1 / rate
        guard t >= nextDue - interval * slack else { return false }
        nextDue += interval
        if nextDue < t { nextDue = t + interval }
        return true
    }

    /// The next sample is admitted whatever its time (after a rate change).
    public mutating func reset() { nextDue = 0 }
}

/// Per recorded output: what was kept and what could not be.
public struct RecordTapCounters: Sendable, Equatable {
    public var offered = 0
    public var recorded = 0
    /// No trusted wall clock yet: nothing is recorded with a time that may be wrong.
    public var droppedNoClock = 0
    /// The store could not write it (disk full, I/O error; the store says which).
    public var droppedWriteFailed = 0
    public init() {}
}

public final class Recorder {
    /// Per output index (the runtime's datastreams, then the camera): the recording rate, 0 = not recorded.
    public let rates: [Double]
    /// The sink's index of each recorded output (the recorded ones in order), -1 for the others.
    private let sinkIndices: [Int]
    /// Epoch seconds = monotonic seconds + offset; nil while the clock is not trusted.
    public var clockOffset: Double?
    public private(set) var counters: [RecordTapCounters]
    private var thinners: [RateThinner]
    private let sink: RecordingSink

    public init(rates: [Double], sink: RecordingSink) {
        self.rates = rates
        self.sink = sink
        var k = 0
        sinkIndices = rates.map { r in
            guard r > 0 else { return -1 }
            k += 1
            return k - 1
        }
        counters = [RecordTapCounters](repeating: RecordTapCounters(), count: rates.count)
        thinners = [RateThinner](repeating: RateThinner(slack: 0.25), count: rates.count)
    }

    public func isRecording(_ i: Int) -> Bool { rates.indices.contains(i) && rates[i] > 0 }

    /// Output `i`'s index in the sink, nil when it is not recorded.
    public func sinkIndex(_ i: Int) -> Int? { isRecording(i) ? sinkIndices[i] : nil }

    /// One sample of scalar output `i`, thinned to its recording rate. `live`: the gate passed it on.
    public func offer(_ i: Int, monotonicTime t: Double, values: UnsafeBufferPointer<Double>, live: Bool) {
        guard isRecording(i), thinners[i].admits(t, rate: rates[i]) else { return }
        counters[i].offered += 1
        guard let offset = clockOffset else { counters[i].droppedNoClock += 1; return }
        if sink.append(output: sinkIndices[i], epochTime: t + offset, values: values, live: live) {
            counters[i].recorded += 1
        } else {
            counters[i].droppedWriteFailed += 1
        }
    }

    /// One encoded access unit of the camera (output `i`): every one is kept — a P-frame cannot be
    /// thinned without the frames it refers to; the camera runs at the recording's rate instead.
    public func offerVideo(_ i: Int, monotonicTime t: Double, accessUnit: UnsafeRawBufferPointer, keyFrame: Bool, live: Bool) {
        guard isRecording(i) else { return }
        counters[i].offered += 1
        guard let offset = clockOffset else { counters[i].droppedNoClock += 1; return }
        if sink.append(output: sinkIndices[i], epochTime: t + offset, accessUnit: accessUnit, keyFrame: keyFrame, live: live) {
            counters[i].recorded += 1
        } else {
            counters[i].droppedWriteFailed += 1
        }
    }
}
