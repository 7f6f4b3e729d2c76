#if canImport(Glibc)
import Glibc  // libm only
#elseif canImport(Musl)
import Musl
#endif
import OSHCore

// A deterministic motion for the demo and the IMU tests: a board turning steadily about its
// vertical axis while it rocks a little in pitch and roll, at rest otherwise (no linear
// acceleration), in a 48 µT field inclined 60° below the horizon (mid-latitude north).
// It gives what ideal sensors on the board would read — the truth the simulated chips turn
// into register counts — and the orientation a fusion filter should recover.
//
// Frames: world ENU (x east, y north, z up); body as Android's device frame (x right, y
// forward, z up). The orientation q maps body vectors to world vectors (v_w = q v_b q*),
// q = qz(yaw) · qx(pitch) · qy(roll); yaw is counter-clockwise about up, so the compass
// heading (clockwise from north, of the body's y axis) is −yaw.

public struct SimulatedMotion: Sendable {
    /// Heading rate, °/s clockwise seen from above (the compass turning right).
    public var headingRateDegPerSec: Double
    public var pitchAmplitudeDeg: Double
    public var rollAmplitudeDeg: Double
    /// Total field (µT) and inclination (degrees below the horizon).
    public var fieldMicrotesla: Double
    public var inclinationDeg: Double
    /// Heading at t = 0 (degrees clockwise from magnetic north).
    public var initialHeadingDeg: Double
    /// Added to the true rate, as a real gyro's zero-rate offset (rad/s).
    public var gyroBias: IMUVector

    public init(
        headingRateDegPerSec: Double = 10, pitchAmplitudeDeg: Double = 5, rollAmplitudeDeg: Double = 3,
        fieldMicrotesla: Double = 48, inclinationDeg: Double = 60, initialHeadingDeg: Double = 0,
        gyroBias: IMUVector = .zero
    ) {
        self.headingRateDegPerSec = headingRateDegPerSec
        self.pitchAmplitudeDeg = pitchAmplitudeDeg
        self.rollAmplitudeDeg = rollAmplitudeDeg
        self.fieldMicrotesla = fieldMicrotesla
        self.inclinationDeg = inclinationDeg
        self.initialHeadingDeg = initialHeadingDeg
        self.gyroBias = gyroBias
    }

    /// What ideal sensors read at one instant, in the body frame, and the orientation.
    public struct Truth: Sendable, Equatable {
        public var gyro: IMUVector  // rad/s
        public var accel: IMUVector  // m/s², +g up at rest
        public var mag: IMUVector  // µT
        public var orientation: IMUQuaternion
        public var headingDeg: Double  // compass heading of the body y axis, [0, 360)
        public var pitchDeg: Double
        public var rollDeg: Double

        public init(
            gyro: IMUVector, accel: IMUVector, mag: IMUVector, orientation: IMUQuaternion = .identity,
            headingDeg: Double = 0, pitchDeg: Double = 0, rollDeg: Double = 0
        ) {
            self.gyro = gyro
            self.accel = accel
            self.mag = mag
            self.orientation = orientation
            self.headingDeg = headingDeg
            self.pitchDeg = pitchDeg
            self.rollDeg = rollDeg
        }
    }

    /// Heading, pitch, roll (degrees) at `t`.
    public func angles(at t: Double) -> (heading: Double, pitch: Double, roll: Double) {
        (
            initialHeadingDeg + headingRateDegPerSec * t,
            pitchAmplitudeDeg * sin(0.5 * t),
            rollAmplitudeDeg * sin(0.3 * t + 1)
        )
    }

    /// Body → world orientation at `t`.
    public func orientation(at t: Double) -> IMUQuaternion {
        let a = angles(at: t)
        let d = IMUConvert.radiansPerDegree / 2
        let (yaw, p, r) = (-a.heading * d, a.pitch * d, a.roll * d)
        let qz = IMUQuaternion(w: cos(yaw), x: 0, y: 0, z: sin(yaw))
        let qx = IMUQuaternion(w: cos(p), x: sin(p), y: 0, z: 0)
        let qy = IMUQuaternion(w: cos(r), x: 0, y: sin(r), z: 0)
        return qz * qx * qy
    }

    /// The field in ENU (µT): north and down components from the inclination.
    public var fieldWorld: IMUVector {
        let i = inclinationDeg * IMUConvert.radiansPerDegree
        return IMUVector(0, fieldMicrotesla * cos(i), -fieldMicrotesla * sin(i))
    }

    public func truth(at t: Double) -> Truth {
        let q = orientation(at: t)
        let qc = q.conjugate
        // Body rate from the quaternion's derivative: ω_b = 2 · (q* ⊗ dq/dt), by a central
        // difference (the motion is smooth; the error is ~1e-10 rad/s).
        let h = 1e-4
        let q1 = orientation(at: t + h), q0 = orientation(at: t - h)
        let dq = IMUQuaternion(
            w: (q1.w - q0.w) / (2 * h), x: (q1.x - q0.x) / (2 * h),
            y: (q1.y - q0.y) / (2 * h), z: (q1.z - q0.z) / (2 * h))
        let w = qc * dq
        let gyro = IMUVector(2 * w.x + gyroBias.x, 2 * w.y + gyroBias.y, 2 * w.z + gyroBias.z)
        let accel = qc.rotate(IMUVector(0, 0, IMUConvert.standardGravity))
        let mag = qc.rotate(fieldWorld)
        let a = angles(at: t)
        var heading = a.heading.truncatingRemainder(dividingBy: 360)
        if heading < 0 { heading += 360 }
        return Truth(gyro: gyro, accel: accel, mag: mag, orientation: q, headingDeg: heading, pitchDeg: a.pitch, rollDeg: a.roll)
    }
}
