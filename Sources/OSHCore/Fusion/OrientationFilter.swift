// The whole raw-sample → orientation path the agent runs per IMU sample: board axes →
// device axes, magnetometer hard/soft iron, gyro bias at rest, then Madgwick or Mahony.
// A struct of Doubles: `update` allocates nothing.
#if canImport(Glibc)
import Glibc
#endif

/// Everything configurable about the fusion.
public struct FusionSettings: Sendable, Equatable {
    public var algorithm: FusionAlgorithm = .madgwick
    /// Nominal sample rate (Hz): the step used when a sample's dt is missing or absurd.
    public var rateHz = 100.0
    /// Madgwick β (rad/s).
    public var beta = 0.1
    /// Mahony gains.
    public var kp = 2.0
    public var ki = 0.0
    /// Learn and subtract the gyro bias while the board is still.
    public var estimateGyroBias = true
    /// A bias known in advance (rad/s, device frame), e.g. from the last run; refined at rest.
    public var initialGyroBias = Vector3.zero
    public var stillness = StillnessSettings()
    /// Chip/board axes → device axes (applied to gyro, accel and the calibrated mag).
    public var mounting = AxisMapping.identity
    /// Hard/soft iron, in the magnetometer's own (board) axes, applied before `mounting`.
    public var magCalibration = MagCalibration.identity
    /// Start from the attitude the first accelerometer (+ magnetometer) sample implies
    /// instead of from identity, so the output is right from the first sample.
    public var initializeFromFirstSample = true
    public init() {}
}

public struct OrientationFilter: Sendable {
    public let settings: FusionSettings
    private var madgwick: MadgwickFilter
    private var mahony: MahonyFilter
    public private(set) var biasEstimator: GyroBiasEstimator
    private var initialized: Bool
    /// Updates so far, and whether the last one used a magnetometer sample.
    public private(set) var updates = 0
    public private(set) var lastUsedMagnetometer = false

    public init(settings: FusionSettings = FusionSettings()) {
        self.settings = settings
        madgwick = MadgwickFilter(beta: settings.beta)
        mahony = MahonyFilter(kp: settings.kp, ki: settings.ki)
        biasEstimator = GyroBiasEstimator(settings: settings.stillness)
        if settings.initialGyroBias != .zero { biasEstimator.seed(settings.initialGyroBias) }
        initialized = !settings.initializeFromFirstSample
    }

    /// Device → ENU world (magnetic north), scalar first. See `android` for the wire form.
    public var quaternion: Quaternion {
        settings.algorithm == .madgwick ? madgwick.q : mahony.q
    }

    /// The current gyro bias estimate (rad/s, device frame).
    public var gyroBias: Vector3 { biasEstimator.bias }

    /// Android's TYPE_ROTATION_VECTOR quaternion and getOrientation angles, magnetic north.
    public var android: AndroidOrientation { AndroidOrientation(quaternion) }

    /// The same referenced to true north: the world frame turned by the declination
    /// (degrees, east positive; `TrueNorth.declination`), so heading = magnetic + D.
    public func android(declinationDegrees d: Double) -> AndroidOrientation {
        AndroidOrientation(TrueNorth.rotate(quaternion, declinationDegrees: d))
    }

    /// Restarts from a known attitude (device → ENU, magnetic north); keeps the gyro bias.
    public mutating func reset(to q: Quaternion) {
        madgwick.q = q.normalized
        mahony.q = q.normalized
        mahony.resetIntegral()
        initialized = true
    }

    /// One raw sample in the chip's axes: gyro rad/s, accel m/s², mag µT (nil when the
    /// magnetometer has no new sample — the step then runs IMU-only), dt seconds since
    /// the previous sample. Non-finite inputs are ignored (the step integrates nothing).
    public mutating func update(gyro rawGyro: Vector3, accel rawAccel: Vector3, mag rawMag: Vector3?, dt rawDt: Double) {
        guard rawGyro.isFinite, rawAccel.isFinite else { return }
        let nominal = 1 / max(settings.rateHz, 1e-3)
        let dt = rawDt.isFinite && rawDt > 0 && rawDt <= max(1, 10 * nominal) ? rawDt : nominal
        var gyro = settings.mounting.apply(rawGyro)
        let accel = settings.mounting.apply(rawAccel)
        var mag: Vector3? = nil
        if let m = rawMag, m.isFinite { mag = settings.mounting.apply(settings.magCalibration.apply(m)) }
        if settings.estimateGyroBias {
            gyro = biasEstimator.update(gyro: gyro, accel: accel, dt: dt)
        } else {
            gyro = gyro - settings.initialGyroBias
        }
        if !initialized, let q = Self.attitude(accel: accel, mag: mag) {
            madgwick.q = q
            mahony.q = q
            initialized = true
        }
        switch settings.algorithm {
        case .madgwick: madgwick.update(gyro: gyro, accel: accel, mag: mag, dt: dt)
        case .mahony: mahony.update(gyro: gyro, accel: accel, mag: mag, dt: dt)
        }
        updates &+= 1
        lastUsedMagnetometer = mag != nil
    }

    /// The attitude one still sample implies (device → ENU): up from the accelerometer,
    /// east = mag × up, north = up × east (as Android's getRotationMatrix). Without a
    /// magnetometer the heading is taken as 0 (device y towards north). Nil in free fall.
    public static func attitude(accel: Vector3, mag: Vector3?) -> Quaternion? {
        guard let up = accel.normalized else { return nil }
        var east: Vector3? = nil
        if let m = mag { east = m.cross(up).normalized }
        if east == nil {
            // No usable field: project device y onto the horizontal plane as north.
            let y = Vector3(0, 1, 0)
            let horizontal = y - up * y.dot(up)
            // (device y vertical: take device x as east instead).
            east = horizontal.normalized.map { $0.cross(up) } ?? (Vector3(1, 0, 0) - up * up.x).normalized
        }
        guard let e = east?.normalized else { return nil }
        let n = up.cross(e)
        // Rows of the device → world matrix are the world axes in device coordinates.
        return Quaternion(matrix: Matrix3(e.x, e.y, e.z, n.x, n.y, n.z, up.x, up.y, up.z))
    }
}

/// Orientation as Android's rotation-vector sensor reports it: the quaternion (device →
/// ENU) with scalar last on the wire, and SensorManager.getOrientation's angles (degrees).
///
/// - heading: getOrientation's azimuth, atan2(R[1], R[4]) — the device y axis clockwise
///   from north (east = +90), in (−180, 180].
/// - pitch: asin(−R[7]) in [−90, 90]; positive when the top edge (device y) dips below
///   the horizon. Note: the schema's description says "positive when pointing up", but
///   Android's getOrientation (what the Android driver sends) is the opposite; we match
///   the values, not the prose.
/// - roll: atan2(−R[6], R[8]) in (−180, 180]; positive when the right edge (device x) dips.
public struct AndroidOrientation: Sendable, Equatable {
    /// Quaternion components in wire order (x, y, z, w); w ≥ 0 (q and −q are one rotation,
    /// Android's rotation vector has cos(θ/2) ≥ 0).
    public var x, y, z, w: Double
    public var heading, pitch, roll: Double

    public init(_ q0: Quaternion) {
        let n = q0.normalized
        let q = n.w < 0 ? Quaternion(w: -n.w, x: -n.x, y: -n.y, z: -n.z) : n
        x = q.x; y = q.y; z = q.z; w = q.w
        let r = q.matrix
        let deg = 180 / Double.pi
        heading = atan2(r.m01, r.m11) * deg
        pitch = asin(min(max(-r.m21, -1), 1)) * deg
        roll = atan2(-r.m20, r.m22) * deg
    }

    /// The quaternion back, scalar first.
    public var quaternion: Quaternion { Quaternion(w: w, x: x, y: y, z: z) }
}
