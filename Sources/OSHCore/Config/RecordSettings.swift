/// `[record]` and `[record.NAME]`: the board's own recording, at rates independent of the live
/// ones, kept in the state directory for the node to pull with `uploadTimeRange`.
public struct RecordSettings: Sendable, Equatable {
    public var enabled = false
    /// `[record] max_mb`, 16 to 1_048_576 MiB: the oldest segment goes when it is reached.
    public var maxMegabytes = 1024
    /// `[record] max_hours`, more than 0 up to 8760: older segments go.
    public var maxHours = 24.0
    /// `[record] fsync`: what a power cut may take, as the spool's `spool_fsync`.
    public var sync = SpoolSync.second
    /// `[record] upload_share`, more than 0 up to 1: the share of the link an upload may use.
    public var uploadShare = 0.5
    /// `[record.NAME] rate` per output (config output names, as [outputs.NAME]); empty = every
    /// published output at its live rate.
    public var rates: [String: Double] = [:]

    public init() {}

    /// Allowed recording rates: the camera 1 to 25 frames per second; the raw inertial outputs up
    /// to the IMU's own rate (1000 Hz); the others as their live rate.
    static func rateRange(for output: String) -> (ClosedRange<Double>, lowerExclusive: Bool, unit: String) {
        let r = OutputDeclarations.declaration(settingsKey: output)?.recordRates ?? .upTo(100)
        return (r.range, r.lowerExclusive, r.unit)
    }
}
