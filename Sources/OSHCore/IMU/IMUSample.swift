// What every IMU driver hands the agent: one reading of the inertial sensors in SI units,
// in the device frame once the mounting map has been applied.

/// Three axes of one quantity (rad/s, m/s² or µT — the field that holds it says which).
public struct IMUVector: Sendable, Equatable, CustomStringConvertible {
    public var x: Double
    public var y: Double
    public var z: Double

    public init(_ x: Double, _ y: Double, _ z: Double) {
        self.x = x
        self.y = y
        self.z = z
    }

    public static let zero = IMUVector(0, 0, 0)

    /// Component by index 0, 1, 2 (anything else reads z): for axis maps.
    @inlinable public subscript(axis: Int) -> Double {
        axis == 0 ? x : (axis == 1 ? y : z)
    }

    public var norm: Double { (x * x + y * y + z * z).squareRoot() }

    public var description: String { "(\(x), \(y), \(z))" }
}

/// A unit quaternion, scalar first here (w, x, y, z); the wire order is decided by the output.
public struct IMUQuaternion: Sendable, Equatable {
    public var w: Double
    public var x: Double
    public var y: Double
    public var z: Double

    public init(w: Double, x: Double, y: Double, z: Double) {
        self.w = w
        self.x = x
        self.y = y
        self.z = z
    }

    public static let identity = IMUQuaternion(w: 1, x: 0, y: 0, z: 0)

    public static func * (a: IMUQuaternion, b: IMUQuaternion) -> IMUQuaternion {
        IMUQuaternion(
            w: a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
            x: a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
            y: a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
            z: a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w)
    }

    public var conjugate: IMUQuaternion { IMUQuaternion(w: w, x: -x, y: -y, z: -z) }

    /// Rotates `v` from the body frame to the reference frame (q v q*).
    public func rotate(_ v: IMUVector) -> IMUVector {
        let p = self * IMUQuaternion(w: 0, x: v.x, y: v.y, z: v.z) * conjugate
        return IMUVector(p.x, p.y, p.z)
    }

    /// The same rotation with w ≥ 0 (q and -q are one orientation; comparisons need one sign).
    public var canonical: IMUQuaternion { w < 0 ? IMUQuaternion(w: -w, x: -x, y: -y, z: -z) : self }
}

/// One reading of an IMU. Gyro in rad/s, accel in m/s² (specific force: +g up at rest),
/// magnetometer in µT (nil when the chip has none or it had no new data yet).
public struct IMUSample: Sendable, Equatable {
    /// Monotonic seconds of the read (the poller's tick).
    public var t: Double
    public var gyro: IMUVector
    public var accel: IMUVector
    public var mag: IMUVector?
    /// True when `mag` was read from the chip in this sample; false when it repeats the last
    /// reading (the magnetometer runs at its own, often lower, rate).
    public var magIsNew: Bool
    /// On-chip fusion output (BNO055), body → reference frame, nil for raw IMUs.
    public var quaternion: IMUQuaternion?
    /// Die temperature (°C) where the chip reports it — for health, not fusion.
    public var temperature: Double?

    public init(
        t: Double = 0, gyro: IMUVector = .zero, accel: IMUVector = .zero, mag: IMUVector? = nil, magIsNew: Bool = false,
        quaternion: IMUQuaternion? = nil, temperature: Double? = nil
    ) {
        self.t = t
        self.gyro = gyro
        self.accel = accel
        self.mag = mag
        self.magIsNew = magIsNew
        self.quaternion = quaternion
        self.temperature = temperature
    }
}
