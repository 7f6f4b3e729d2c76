// What an output is, as a value: the runtime, the configuration and the device inputs
// find an output by its kind, never by matching its name (inertial names carry the chip's).

public enum OutputKind: String, Sendable, CaseIterable {
    case quatOrientation = "quat_orientation_data"
    case eulerOrientation = "euler_orientation_data"
    case accelerometer
    case gyroscope
    case magnetometer
    case barometer
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
}
