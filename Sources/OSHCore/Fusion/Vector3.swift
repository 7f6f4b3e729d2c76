// Small value types for the fusion math: 3-vectors, quaternions, 3×3 matrices.
// Plain structs of Doubles so every update stays on the stack (no allocation).
#if canImport(Glibc)
import Glibc
#endif

/// A 3-vector (x, y, z).
public struct Vector3: Sendable, Equatable {
    public var x, y, z: Double
    public init(_ x: Double, _ y: Double, _ z: Double) { self.x = x; self.y = y; self.z = z }
    public static let zero = Vector3(0, 0, 0)

    public var norm: Double { (x * x + y * y + z * z).squareRoot() }
    /// The unit vector, or nil for a zero/non-finite vector (a dead sensor reads 0,0,0).
    public var normalized: Vector3? {
        let n = norm
        guard n > 1e-12, n.isFinite else { return nil }
        return Vector3(x / n, y / n, z / n)
    }
    public var isFinite: Bool { x.isFinite && y.isFinite && z.isFinite }
    public func dot(_ o: Vector3) -> Double { x * o.x + y * o.y + z * o.z }
    public func cross(_ o: Vector3) -> Vector3 { Vector3(y * o.z - z * o.y, z * o.x - x * o.z, x * o.y - y * o.x) }
    public static func + (a: Vector3, b: Vector3) -> Vector3 { Vector3(a.x + b.x, a.y + b.y, a.z + b.z) }
    public static func - (a: Vector3, b: Vector3) -> Vector3 { Vector3(a.x - b.x, a.y - b.y, a.z - b.z) }
    public static func * (a: Vector3, s: Double) -> Vector3 { Vector3(a.x * s, a.y * s, a.z * s) }
    public static func * (s: Double, a: Vector3) -> Vector3 { a * s }
}

/// A rotation quaternion, scalar first in memory (w, x, y, z). In this module it always
/// maps the device frame into the ENU world frame: v_world = q · v_device · q*.
public struct Quaternion: Sendable, Equatable {
    public var w, x, y, z: Double
    public init(w: Double, x: Double, y: Double, z: Double) { self.w = w; self.x = x; self.y = y; self.z = z }
    public static let identity = Quaternion(w: 1, x: 0, y: 0, z: 0)

    /// Rotation by `angle` radians about `axis` (any length > 0).
    public init(axis: Vector3, angle: Double) {
        let a = axis.normalized ?? Vector3(0, 0, 1)
        let s = sin(angle / 2)
        self.init(w: cos(angle / 2), x: a.x * s, y: a.y * s, z: a.z * s)
    }

    public var norm: Double { (w * w + x * x + y * y + z * z).squareRoot() }
    public var normalized: Quaternion {
        let n = norm
        guard n > 1e-12, n.isFinite else { return .identity }
        return Quaternion(w: w / n, x: x / n, y: y / n, z: z / n)
    }
    public var conjugate: Quaternion { Quaternion(w: w, x: -x, y: -y, z: -z) }

    /// Hamilton product.
    public static func * (a: Quaternion, b: Quaternion) -> Quaternion {
        Quaternion(
            w: a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
            x: a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
            y: a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
            z: a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w)
    }

    /// v rotated by this quaternion (device → world).
    public func rotate(_ v: Vector3) -> Vector3 { matrix * v }

    /// The rotation matrix (device → world), as Android's getRotationMatrixFromVector builds it.
    public var matrix: Matrix3 {
        Matrix3(
            1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
            2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y))
    }

    /// Angle in radians of the rotation taking `self` to `other` (0…π).
    public func angle(to other: Quaternion) -> Double {
        let d = abs(w * other.w + x * other.x + y * other.y + z * other.z) / max(norm * other.norm, 1e-12)
        return 2 * acos(min(d, 1))
    }

    /// A quaternion from a rotation matrix (Shepperd's method, stable for every rotation).
    public init(matrix m: Matrix3) {
        let t = m.m00 + m.m11 + m.m22
        if t > 0 {
            let s = (t + 1).squareRoot() * 2
            self.init(w: s / 4, x: (m.m21 - m.m12) / s, y: (m.m02 - m.m20) / s, z: (m.m10 - m.m01) / s)
        } else if m.m00 > m.m11, m.m00 > m.m22 {
            let s = (1 + m.m00 - m.m11 - m.m22).squareRoot() * 2
            self.init(w: (m.m21 - m.m12) / s, x: s / 4, y: (m.m01 + m.m10) / s, z: (m.m02 + m.m20) / s)
        } else if m.m11 > m.m22 {
            let s = (1 + m.m11 - m.m00 - m.m22).squareRoot() * 2
            self.init(w: (m.m02 - m.m20) / s, x: (m.m01 + m.m10) / s, y: s / 4, z: (m.m12 + m.m21) / s)
        } else {
            let s = (1 + m.m22 - m.m00 - m.m11).squareRoot() * 2
            self.init(w: (m.m10 - m.m01) / s, x: (m.m02 + m.m20) / s, y: (m.m12 + m.m21) / s, z: s / 4)
        }
        self = normalized
    }
}

/// A 3×3 matrix, row-major (m01 = row 0, column 1).
public struct Matrix3: Sendable, Equatable {
    public var m00, m01, m02, m10, m11, m12, m20, m21, m22: Double
    public init(
        _ m00: Double, _ m01: Double, _ m02: Double,
        _ m10: Double, _ m11: Double, _ m12: Double,
        _ m20: Double, _ m21: Double, _ m22: Double
    ) {
        self.m00 = m00; self.m01 = m01; self.m02 = m02
        self.m10 = m10; self.m11 = m11; self.m12 = m12
        self.m20 = m20; self.m21 = m21; self.m22 = m22
    }
    /// From 9 values, row-major; nil unless there are exactly 9 finite values.
    public init?(rowMajor v: [Double]) {
        guard v.count == 9, v.allSatisfy(\.isFinite) else { return nil }
        self.init(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8])
    }
    public static let identity = Matrix3(1, 0, 0, 0, 1, 0, 0, 0, 1)
    public var rowMajor: [Double] { [m00, m01, m02, m10, m11, m12, m20, m21, m22] }
    public var transposed: Matrix3 { Matrix3(m00, m10, m20, m01, m11, m21, m02, m12, m22) }
    public var determinant: Double {
        m00 * (m11 * m22 - m12 * m21) - m01 * (m10 * m22 - m12 * m20) + m02 * (m10 * m21 - m11 * m20)
    }
    public static func * (a: Matrix3, v: Vector3) -> Vector3 {
        Vector3(
            a.m00 * v.x + a.m01 * v.y + a.m02 * v.z,
            a.m10 * v.x + a.m11 * v.y + a.m12 * v.z,
            a.m20 * v.x + a.m21 * v.y + a.m22 * v.z)
    }
    public static func * (a: Matrix3, b: Matrix3) -> Matrix3 {
        func c(_ r: Vector3, _ col: Vector3) -> Double { r.dot(col) }
        let r0 = Vector3(a.m00, a.m01, a.m02), r1 = Vector3(a.m10, a.m11, a.m12), r2 = Vector3(a.m20, a.m21, a.m22)
        let c0 = Vector3(b.m00, b.m10, b.m20), c1 = Vector3(b.m01, b.m11, b.m21), c2 = Vector3(b.m02, b.m12, b.m22)
        return Matrix3(c(r0, c0), c(r0, c1), c(r0, c2), c(r1, c0), c(r1, c1), c(r1, c2), c(r2, c0), c(r2, c1), c(r2, c2))
    }
    public static func * (a: Matrix3, s: Double) -> Matrix3 {
        Matrix3(a.m00 * s, a.m01 * s, a.m02 * s, a.m10 * s, a.m11 * s, a.m12 * s, a.m20 * s, a.m21 * s, a.m22 * s)
    }
    /// The inverse, or nil when (nearly) singular.
    public var inverse: Matrix3? {
        let d = determinant
        guard abs(d) > 1e-300, d.isFinite else { return nil }
        let i = 1 / d
        return Matrix3(
            (m11 * m22 - m12 * m21) * i, (m02 * m21 - m01 * m22) * i, (m01 * m12 - m02 * m11) * i,
            (m12 * m20 - m10 * m22) * i, (m00 * m22 - m02 * m20) * i, (m02 * m10 - m00 * m12) * i,
            (m10 * m21 - m11 * m20) * i, (m01 * m20 - m00 * m21) * i, (m00 * m11 - m01 * m10) * i)
    }
}
