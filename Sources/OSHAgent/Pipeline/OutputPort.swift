import OSHCore

/// Where a source hands one output's typed samples: the sample writes its values into slots
/// checked against the output's record when the port was made (`AgentRuntime.port`), then the
/// output gate and the ring take them. One per output a source feeds; no allocation per sample.
public final class OutputPort<S: OutputSample> {
    /// The output's datastream index in the runtime.
    public let datastream: Int
    private let slots: SampleSlots<S>
    private unowned let runtime: AgentRuntime

    init(runtime: AgentRuntime, datastream: Int, spec: OutputSpec) throws(OutputLayoutError) {
        self.runtime = runtime
        self.datastream = datastream
        slots = try SampleSlots<S>(spec: spec)
    }

    /// One sample taken at `monotonicTime`; `always` skips the rate thinning (not the enable switch).
    public func send(_ sample: S, at monotonicTime: Double, always: Bool = false) {
        slots.withValues(sample) { runtime.record(datastream, monotonicTime: monotonicTime, values: $0, always: always) }
    }
}
