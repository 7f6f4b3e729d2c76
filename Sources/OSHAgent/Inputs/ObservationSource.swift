import OSHCore
import OSHPlatform

/// What every device input is to the agent: something started and stopped with the runtime,
/// feeding some outputs through their ports, and either working or failing (the LED's double
/// blink). `Hardware` holds a table of them. Each input says in its own file what it feeds and
/// connects its own outputs: a new output of a device is its declaration and that device's file.
public protocol ObservationSource: AnyObject {
    /// The outputs it feeds.
    var feeds: [OutputKind] { get }
    /// Found at start, and failing now (its outputs pause while it reopens).
    var isFaulted: Bool { get }
    /// Takes the ports (or paths) of the outputs it feeds, before `start`.
    func connect(_ outputs: OutputConnections) throws
    func start() throws
    func stop()
}

/// What the inputs connect to when the runtime starts: the runtime's port for each sample type,
/// each handed out once — the first input to ask feeds that output (`Hardware` opens a
/// hygrometer before the barometer, so temperature and humidity come from it when it answered)
/// — and the camera's and the GPS's paths. Nil: the runtime does not publish that output.
public final class OutputConnections {
    private let agent: AgentRuntime
    private var taken = Set<OutputKind>()

    init(_ agent: AgentRuntime) { self.agent = agent }

    /// The port for `S`'s output, checked against its record; nil when it is not published or
    /// another input already feeds it.
    public func port<S: OutputSample>(_ type: S.Type) throws(OutputLayoutError) -> OutputPort<S>? {
        guard !taken.contains(S.kind), let p = try agent.port(type) else { return nil }
        taken.insert(S.kind)
        return p
    }

    /// The camera's path to the node, when it is published.
    var video: VideoPath? { agent.video }
    /// Where GPS fixes go, when gps_data is published.
    var position: ((GPSPosition) -> Void)? { taken.contains(.gps) ? nil : take(.gps, agent.positionSink) }
    /// The declination at the GPS fix, for the orientation.
    var trueNorth: TrueNorth { agent.trueNorth }

    private func take<T>(_ kind: OutputKind, _ value: T?) -> T? {
        if value != nil { taken.insert(kind) }
        return value
    }
}

extension SensorPoller.State {
    var isRetrying: Bool {
        if case .retrying = self { return true }
        return false
    }
}
