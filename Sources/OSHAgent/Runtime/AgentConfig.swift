import OSHCore
import OSHPlatform

/// Everything `osh-edge run` and `osh-edge-dev demo` need to know.
public struct AgentConfig: Sendable {
    public var server: NodeEndpoint
    /// Observations over MQTT instead of HTTP POSTs (registration stays on `server`).
    public var mqtt: MQTTTransportConfig?
    public var identity: SystemIdentity
    public var options: OutputOptions
    /// Output names to publish (scalar outputs; video comes with the camera issue). Nil = all scalar outputs.
    public var outputs: [String]?
    /// Rate overrides per output name (Hz).
    public var rates: [String: Double] = [:]
    public var publisher = PublisherSettings()
    public var ringCapacity = 1000
    /// Store-and-forward in `stateDirectory/spool` (off unless enabled).
    public var spool = SpoolSettings()
    /// Directory for the per-server id cache.
    public var stateDirectory: String
    /// Trust the host clock even if the kernel says it is unsynchronised (the demo's default).
    public var trustHostClock = false
    /// Never stamp a time before this (epoch seconds): the build's date.
    public var notBefore: Double = 1_767_225_600  // 2026-01-01
    /// Publish the camera datastream (swe+binary, through the video path: one frame in flight).
    public var video = false
    /// Register the `device_control` control stream and take the node's commands over its WebSocket.
    public var commands = false
    /// Outputs beyond the catalogue's (a pan-tilt unit's `ptz_position`).
    public var extraSpecs: [OutputSpec] = []
    /// The node's command timing as the receiver assumes it (OSH: 5 s); tests shorten it.
    public var commandOptions = CommandReceiver.Options()
    /// Waits between failed registrations (1, 2, 4 … 30 s); tests shorten it.
    public var registrationBackoff = Backoff(initial: 1, maximum: 30)
    /// Outputs whose values arrive through `record(_:monotonicTime:values:)` from a device input
    /// (barometer, IMU, audio…); the others are sampled on a timer (simulated values, health).
    public var externalOutputs: Set<String> = []
    /// `[record]`: the board's own recording (off unless enabled).
    public var record = RecordSettings()
    /// Recording rates (Hz) by the datastream's output name (`MPU9250_Accelerometer_data`, not
    /// `accelerometer`); filled from `record` for the outputs published, empty when it is off.
    public var recordRates: [String: Double] = [:]

    public init(server: NodeEndpoint, identity: SystemIdentity, options: OutputOptions, stateDirectory: String) {
        self.server = server
        self.identity = identity
        self.options = options
        self.stateDirectory = stateDirectory
    }
}

/// `transport = "mqtt"`: the broker, the session and the topic names.
public struct MQTTTransportConfig: Sendable, Equatable {
    public var options: MQTTOptions
    public var topics: MQTTTopics
    /// `commands = "mqtt"`: the node's commands come by subscription, not over the WebSocket.
    public var commands = false

    public init(options: MQTTOptions, topics: MQTTTopics) {
        self.options = options
        self.topics = topics
    }

    /// The broker as the configuration names it, its session keyed by the board's UID, with the
    /// node's user and password (OSH's MQTT service checks them against its users).
    public init(broker: MQTTBroker, topics: MQTTTopics, clientID: String, credentials: CSCredentials, tls: TLSPolicy = .verify) {
        var o = MQTTOptions(host: broker.host, port: broker.port, clientID: clientID)
        if broker.tls {
            switch tls {
            case .verify: o.tls = .systemCAs
            case .trustCertificate(let pem): o.tls = .caFile(pem)
            case .pinnedKey(let pin): o.tls = .pinnedKey(pin)
            }
        }
        if case .basic(let user, let password) = credentials, !user.isEmpty {
            o.username = user
            o.password = password
        }
        self.init(options: o, topics: topics)
    }
}
