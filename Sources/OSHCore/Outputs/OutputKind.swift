// Every output osh-edge can publish, declared once: its kind, the device behind it, its default
// rate and whether it is on by default, the rates it may run at live and recorded, and its
// schema. The configuration's output names and defaults, the agent's plan of devices, the
// catalogue and `schema --list` read this table; nothing finds an output by matching its name
// (the inertial outputs' names carry their chip's). A new output: a case, one line in
// `OutputDeclarations.all`, its schema builder and its sample type in files of their own.

public enum OutputKind: String, Sendable, CaseIterable {
    case quatOrientation = "quat_orientation_data"
    case eulerOrientation = "euler_orientation_data"
    case accelerometer
    case gyroscope
    case magnetometer
    case barometer
    case temperature
    case humidity
    case gps = "gps_data"
    case video = "camera0_H264"
    case audioLevel = "audio_level"
    case deviceHealth = "device_health"
    case ptzPosition = "ptz_position"
    /// An output built outside the catalogue (tests, experiments).
    case other

    /// The key of the output's `[outputs.<key>]` section in osh-edge.conf.
    public var settingsKey: String { rawValue }

    /// The outputs one IMU feeds (its filter's two, and the three raw vectors).
    public static let inertial: [OutputKind] = [.quatOrientation, .eulerOrientation, .accelerometer, .gyroscope, .magnetometer]

    /// This output's declaration; nil for those outside the table (`ptz_position`, `other`).
    public var declaration: OutputDeclaration? { OutputDeclarations.byKind[self] }
}

/// The device that stands behind an output: the agent opens it when one of its outputs is on.
public enum OutputDevice: String, Sendable, Equatable {
    case imu, barometer, gps, audio, camera, board
    /// A chip that measures the air: a hygrometer when one is configured, else the barometer.
    case climate
}

/// The rates an output may take (`rate` in `[outputs.NAME]` and `[record.NAME]`).
public struct RateRange: Sendable, Equatable {
    public var range: ClosedRange<Double>
    /// The lower bound itself is refused ("more than 0").
    public var lowerExclusive: Bool
    public var unit: String

    public init(_ range: ClosedRange<Double>, lowerExclusive: Bool = false, unit: String) {
        self.range = range
        self.lowerExclusive = lowerExclusive
        self.unit = unit
    }

    /// More than 0, up to `hz` Hz.
    public static func upTo(_ hz: Double) -> RateRange { RateRange(0...hz, lowerExclusive: true, unit: "Hz") }
}

/// One output, as the table declares it.
public struct OutputDeclaration: Sendable {
    public let kind: OutputKind
    public let device: OutputDevice
    /// Hz (frames per second for the camera) until the config or a `setRate` says otherwise.
    public let defaultRate: Double
    public let enabledByDefault: Bool
    public let liveRates: RateRange
    public let recordRates: RateRange
    /// Its record, named and framed for this board.
    public let spec: @Sendable (OutputOptions) -> OutputSpec

    public init(
        _ kind: OutputKind, device: OutputDevice, defaultRate: Double, enabledByDefault: Bool = false,
        liveRates: RateRange = .upTo(100), recordRates: RateRange? = nil, spec: @escaping @Sendable (OutputOptions) -> OutputSpec
    ) {
        self.kind = kind
        self.device = device
        self.defaultRate = defaultRate
        self.enabledByDefault = enabledByDefault
        self.liveRates = liveRates
        self.recordRates = recordRates ?? liveRates
        self.spec = spec
    }

    public var settingsKey: String { kind.settingsKey }
}

public enum OutputDeclarations {
    /// Every output in the order the system's components list their sources (sensors, then
    /// location, camera, audio — as Android orders them — then health). Only `device_health` is
    /// on by default; the outputs Android has no counterpart for stay off until configured.
    public static let all: [OutputDeclaration] = [
        OutputDeclaration(.quatOrientation, device: .imu, defaultRate: 10, spec: OutputCatalogue.quatOrientation),
        OutputDeclaration(.eulerOrientation, device: .imu, defaultRate: 10, spec: OutputCatalogue.eulerOrientation),
        // The raw vectors may be recorded at the IMU's own rate.
        OutputDeclaration(.accelerometer, device: .imu, defaultRate: 10, recordRates: .upTo(1000), spec: OutputCatalogue.accelerometer),
        OutputDeclaration(.gyroscope, device: .imu, defaultRate: 10, recordRates: .upTo(1000), spec: OutputCatalogue.gyroscope),
        OutputDeclaration(.magnetometer, device: .imu, defaultRate: 10, recordRates: .upTo(1000), spec: OutputCatalogue.magnetometer),
        OutputDeclaration(.barometer, device: .barometer, defaultRate: 1, spec: OutputCatalogue.barometer),
        OutputDeclaration(.temperature, device: .climate, defaultRate: 1, spec: OutputCatalogue.temperature),
        OutputDeclaration(.humidity, device: .climate, defaultRate: 1, spec: OutputCatalogue.humidity),
        OutputDeclaration(.gps, device: .gps, defaultRate: 1, spec: OutputCatalogue.gps),
        OutputDeclaration(
            .video, device: .camera, defaultRate: 10, liveRates: RateRange(1...25, unit: "frames per second"),
            spec: { OutputCatalogue.video($0) }),
        OutputDeclaration(.audioLevel, device: .audio, defaultRate: 10, spec: OutputCatalogue.audioLevel),
        OutputDeclaration(.deviceHealth, device: .board, defaultRate: 1.0 / 60, enabledByDefault: true, spec: OutputCatalogue.deviceHealth),
    ]

    static let byKind = Dictionary(uniqueKeysWithValues: all.map { ($0.kind, $0) })

    /// The declaration whose `[outputs.KEY]` is `key`.
    public static func declaration(settingsKey key: String) -> OutputDeclaration? { OutputKind(rawValue: key)?.declaration }

    /// The kinds behind `device`.
    public static func kinds(of device: OutputDevice) -> [OutputKind] { all.filter { $0.device == device }.map(\.kind) }
}
