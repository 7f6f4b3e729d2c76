import OSHCore
import OSHPlatform

/// What every device input is to the agent: something started and stopped with the runtime,
/// feeding some outputs through their ports, and either working or failing (the LED's double
/// blink). `Hardware` holds a table of them.
public protocol ObservationSource: AnyObject {
    /// The outputs it feeds.
    var feeds: [OutputKind] { get }
    /// Found at start, and failing now (its outputs pause while it reopens).
    var isFaulted: Bool { get }
    func start() throws
    func stop()
}

extension SensorPoller.State {
    var isRetrying: Bool {
        if case .retrying = self { return true }
        return false
    }
}

extension BarometerInput: ObservationSource {
    /// The pressure, and the air's temperature (and humidity, if the chip measures it).
    public var feeds: [OutputKind] {
        [.barometer, .temperature] + (driver.identity.measures.contains(.humidity) ? [.humidity] : [])
    }
    public var isFaulted: Bool { poller.state.isRetrying }
}

extension IMUInput: ObservationSource {
    public var feeds: [OutputKind] { hasMagnetometer ? OutputKind.inertial : OutputKind.inertial.filter { $0 != .magnetometer } }
    public var isFaulted: Bool { poller.state.isRetrying }
}

extension AudioInput: ObservationSource {
    public var feeds: [OutputKind] { [.audioLevel] }
    /// A lost microphone retries on its own and says so in `stateText`; it is not a bus sensor fault.
    public var isFaulted: Bool { false }
}

extension VideoInput: ObservationSource {
    public var feeds: [OutputKind] { [.video] }
    public var isFaulted: Bool { false }
}

extension GPSInput: ObservationSource {
    public var feeds: [OutputKind] { [.gps] }
    /// A receiver that goes quiet retries on its own and says so in `stateText`.
    public var isFaulted: Bool { false }
}
