// The two classic attitude filters, written in the ENU world frame (x east, y north,
// z up) so their quaternion is directly Android's rotation vector. Both fuse the gyro
// (integrated) with the gravity direction from the accelerometer and, when a
// magnetometer sample is present, the horizontal magnetic field (MARG); without one
// they run IMU-only (tilt corrected, heading integrated from the gyro alone).
//
// Madgwick, "An efficient orientation filter for inertial and inertial/magnetic sensor
// arrays" (2010): gradient-descent step of size β towards the attitude that best
// explains the measured reference directions.
// Mahony, Hamel, Pflimlin, "Nonlinear complementary filters on the special orthogonal
// group" (2008): the cross product of measured and predicted directions feeds back
// into the rate (proportional Kp, integral Ki which also learns gyro bias).
#if canImport(Glibc)
import Glibc
#endif

/// Which filter runs.
public enum FusionAlgorithm: String, Sendable, CaseIterable {
    case madgwick, mahony
}

/// The Earth's field direction expressed with no east component: the filter only trusts
/// the magnetometer for heading, never for tilt.
@inline(__always) func magneticReference(_ q: Quaternion, _ m: Vector3) -> Vector3 {
    let h = q.rotate(m)
    return Vector3(0, (h.x * h.x + h.y * h.y).squareRoot(), h.z)
}

@inline(__always) func integrate(_ q: Quaternion, rate w: Vector3, correction: Quaternion, dt: Double) -> Quaternion {
    let half = 0.5 * dt
    let dq = q * Quaternion(w: 0, x: w.x, y: w.y, z: w.z)
    return Quaternion(
        w: q.w + (dq.w * half - correction.w * dt), x: q.x + (dq.x * half - correction.x * dt),
        y: q.y + (dq.y * half - correction.y * dt), z: q.z + (dq.z * half - correction.z * dt)
    ).normalized
}

public struct MadgwickFilter: Sendable {
    public var q = Quaternion.identity
    /// Gradient step gain (rad/s). Larger follows the accelerometer/magnetometer faster
    /// (and their noise and linear accelerations); smaller trusts the gyro longer.
    public var beta: Double
    public init(beta: Double = 0.1) { self.beta = beta }

    /// One step: gyro (rad/s, bias-corrected), accel and mag in the device frame (any scale).
    public mutating func update(gyro: Vector3, accel: Vector3, mag: Vector3?, dt: Double) {
        var step = Quaternion(w: 0, x: 0, y: 0, z: 0)
        if let a = accel.normalized {
            step = Self.gradient(q, reference: Vector3(0, 0, 1), measured: a)
            if let m = mag?.normalized {
                let g = Self.gradient(q, reference: magneticReference(q, m), measured: m)
                step = Quaternion(w: step.w + g.w, x: step.x + g.x, y: step.y + g.y, z: step.z + g.z)
            }
            let n = step.norm
            step =
                n > 1e-12
                ? Quaternion(w: step.w * beta / n, x: step.x * beta / n, y: step.y * beta / n, z: step.z * beta / n)
                : Quaternion(w: 0, x: 0, y: 0, z: 0)
        }
        q = integrate(q, rate: gyro, correction: step, dt: dt)
    }

    /// Jᵀf for f(q) = Rᵀ(q)·d − s: the gradient of ½|f|² with respect to (w, x, y, z),
    /// R being the device→world matrix. ∂R/∂qₖ are linear in q (written out below).
    static func gradient(_ q: Quaternion, reference d: Vector3, measured s: Vector3) -> Quaternion {
        let r = q.matrix
        let f = r.transposed * d - s
        let w = q.w, x = q.x, y = q.y, z = q.z
        let dw = Matrix3(0, -2 * z, 2 * y, 2 * z, 0, -2 * x, -2 * y, 2 * x, 0)
        let dx = Matrix3(0, 2 * y, 2 * z, 2 * y, -4 * x, -2 * w, 2 * z, 2 * w, -4 * x)
        let dy = Matrix3(-4 * y, 2 * x, 2 * w, 2 * x, 0, 2 * z, -2 * w, 2 * z, -4 * y)
        let dz = Matrix3(-4 * z, -2 * w, 2 * x, 2 * w, -4 * z, 2 * y, 2 * x, 2 * y, 0)
        return Quaternion(
            w: f.dot(dw.transposed * d), x: f.dot(dx.transposed * d),
            y: f.dot(dy.transposed * d), z: f.dot(dz.transposed * d))
    }
}

public struct MahonyFilter: Sendable {
    public var q = Quaternion.identity
    /// Proportional gain (1/s): how fast direction errors are corrected.
    public var kp: Double
    /// Integral gain (1/s²): > 0 also learns a residual gyro bias (0 = off).
    public var ki: Double
    /// The integral term (rad/s), i.e. the bias Mahony has learned.
    public private(set) var integral = Vector3.zero

    public init(kp: Double = 2.0, ki: Double = 0.0) {
        self.kp = kp
        self.ki = ki
    }

    public mutating func update(gyro: Vector3, accel: Vector3, mag: Vector3?, dt: Double) {
        var rate = gyro
        if let a = accel.normalized {
            let rt = q.matrix.transposed
            let up = Vector3(rt.m02, rt.m12, rt.m22)  // predicted up in the device frame
            var e = a.cross(up)
            if let m = mag?.normalized {
                // The magnetometer corrects heading only: keep the part of its error about
                // the vertical, and divide by (H/F)² so heading converges as fast as tilt at
                // any latitude (the raw cross product shrinks with the horizontal field).
                let b = magneticReference(q, m)
                let em = m.cross(rt * b)
                e = e + up * (em.dot(up) / max(b.y * b.y, 0.05))
            }
            if ki > 0 { integral = integral + e * (ki * dt) }
            rate = rate + e * kp + integral
        }
        q = integrate(q, rate: rate, correction: Quaternion(w: 0, x: 0, y: 0, z: 0), dt: dt)
    }

    public mutating func resetIntegral() { integral = .zero }
}
