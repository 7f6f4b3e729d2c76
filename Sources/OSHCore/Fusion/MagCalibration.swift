// Magnetometer hard/soft-iron correction and the solver that finds it from raw samples
// taken while the board is turned through many orientations (`osh-edge calibrate mag`).
//
// Raw readings of a constant field, seen in every orientation, lie on an ellipsoid:
// hard iron (magnetised parts on the board) shifts its centre, soft iron (nearby
// ferrous metal) and unequal axis gains stretch and tilt it. The correction is
//     corrected = matrix · (raw − offset)
// which maps that ellipsoid back onto a sphere.
#if canImport(Glibc)
import Glibc
#endif

/// Hard-iron offset (same unit as the readings, µT here) and soft-iron 3×3 matrix.
public struct MagCalibration: Sendable, Equatable {
    public var offset: Vector3
    public var matrix: Matrix3
    public init(offset: Vector3 = .zero, matrix: Matrix3 = .identity) {
        self.offset = offset
        self.matrix = matrix
    }
    public static let identity = MagCalibration()

    @inline(__always) public func apply(_ raw: Vector3) -> Vector3 { matrix * (raw - offset) }

    /// From config values: 3 offset numbers and 9 matrix numbers (row-major), e.g. the
    /// `mag_offset` / `mag_matrix` keys `osh-edge calibrate mag` writes.
    public init(offset: [Double], matrix: [Double]?) throws(FusionConfigError) {
        guard offset.count == 3, offset.allSatisfy(\.isFinite) else {
            throw FusionConfigError("magnetometer offset needs 3 numbers (x, y, z in µT), got \(offset.count)")
        }
        var m = Matrix3.identity
        if let matrix {
            guard let parsed = Matrix3(rowMajor: matrix) else {
                throw FusionConfigError("magnetometer matrix needs 9 numbers (row-major), got \(matrix.count)")
            }
            guard abs(parsed.determinant) > 1e-6 else {
                throw FusionConfigError("magnetometer matrix is singular; rerun osh-edge calibrate mag")
            }
            m = parsed
        }
        self.init(offset: Vector3(offset[0], offset[1], offset[2]), matrix: m)
    }
}

/// The result of a calibration fit.
public struct MagCalibrationFit: Sendable, Equatable {
    public enum Model: String, Sendable { case ellipsoid, sphere }
    public var calibration: MagCalibration
    public var model: Model
    /// Radius of the corrected sphere: the local field strength in the readings' unit.
    public var fieldStrength: Double
    /// RMS of (|corrected| − fieldStrength) / fieldStrength over the samples: ~0.01 is good.
    public var relativeResidual: Double
}

public enum MagCalibrationSolver {
    /// Fits the correction to raw samples. Tries a full ellipsoid (offset + symmetric soft
    /// iron, ≥ 9 samples) and falls back to a sphere (offset only, ≥ 4 samples) when the
    /// samples do not pin down an ellipsoid (too few, or all turned about one axis).
    public static func solve(_ samples: [Vector3]) throws(FusionConfigError) -> MagCalibrationFit {
        let good = samples.filter(\.isFinite)
        guard good.count >= 4 else {
            throw FusionConfigError(
                "magnetometer calibration needs at least 4 samples (got \(good.count)); turn the board through every orientation")
        }
        // Normalise for conditioning: u = (x − mean) / scale.
        var mean = Vector3.zero
        for s in good { mean = mean + s }
        mean = mean * (1 / Double(good.count))
        var scale = 0.0
        for s in good { scale += (s - mean).dot(s - mean) }
        scale = (scale / Double(good.count)).squareRoot()
        guard scale > 1e-9 else {
            throw FusionConfigError("magnetometer calibration: all samples are equal; is the sensor reading anything?")
        }
        let u = good.map { ($0 - mean) * (1 / scale) }

        if u.count >= 9, let fit = ellipsoid(u) {
            return finish(fit.center, fit.w, mean: mean, scale: scale, model: .ellipsoid, samples: good)
        }
        guard let c = sphereCenter(u) else {
            throw FusionConfigError(
                "magnetometer calibration: samples are degenerate (all in one plane?); turn the board through every orientation")
        }
        return finish(c, .identity, mean: mean, scale: scale, model: .sphere, samples: good)
    }

    /// Maps the unit-space fit back to readings and scales the matrix so the corrected
    /// magnitude equals the ellipsoid's geometric-mean radius (keeps µT meaningful).
    static func finish(
        _ centerU: Vector3, _ wU: Matrix3, mean: Vector3, scale: Double, model: MagCalibrationFit.Model,
        samples: [Vector3]
    ) -> MagCalibrationFit {
        let offset = mean + centerU * scale
        var w = wU * (1 / scale)
        let det = w.determinant
        let radius = det > 0 ? pow(det, -1.0 / 3.0) : 1
        if model == .sphere {
            var r = 0.0
            for s in samples { r += (s - offset).norm }
            w = .identity
            return residual(MagCalibration(offset: offset, matrix: w), radius: r / Double(samples.count), model: model, samples: samples)
        }
        return residual(MagCalibration(offset: offset, matrix: w * radius), radius: radius, model: model, samples: samples)
    }

    static func residual(_ cal: MagCalibration, radius: Double, model: MagCalibrationFit.Model, samples: [Vector3]) -> MagCalibrationFit {
        var sum = 0.0
        for s in samples {
            let e = (cal.apply(s).norm - radius) / radius
            sum += e * e
        }
        return MagCalibrationFit(
            calibration: cal, model: model, fieldStrength: radius,
            relativeResidual: (sum / Double(samples.count)).squareRoot())
    }

    /// Least squares on a x² + b y² + c z² + 2d xy + 2e xz + 2f yz + 2g x + 2h y + 2i z = 1;
    /// returns the centre and W = sqrt(A/k) (maps the ellipsoid to the unit sphere), or nil
    /// when the quadric is not an ellipsoid.
    static func ellipsoid(_ u: [Vector3]) -> (center: Vector3, w: Matrix3)? {
        var ata = [Double](repeating: 0, count: 81), atb = [Double](repeating: 0, count: 9)
        for p in u {
            let row = [p.x * p.x, p.y * p.y, p.z * p.z, 2 * p.x * p.y, 2 * p.x * p.z, 2 * p.y * p.z, 2 * p.x, 2 * p.y, 2 * p.z]
            for i in 0..<9 {
                atb[i] += row[i]
                for j in 0..<9 { ata[i * 9 + j] += row[i] * row[j] }
            }
        }
        guard let v = solveLinear(ata, atb, n: 9) else { return nil }
        let a = Matrix3(v[0], v[3], v[4], v[3], v[1], v[5], v[4], v[5], v[2])
        guard let ai = a.inverse else { return nil }
        let center = (ai * Vector3(v[6], v[7], v[8])) * -1
        let k = 1 + center.dot(a * center)
        guard k > 0 else { return nil }
        let (values, vectors) = symmetricEigen(a * (1 / k))
        guard values.x > 0, values.y > 0, values.z > 0 else { return nil }
        // W = V · diag(√λ) · Vᵀ
        let d = Matrix3(values.x.squareRoot(), 0, 0, 0, values.y.squareRoot(), 0, 0, 0, values.z.squareRoot())
        return (center, vectors * d * vectors.transposed)
    }

    /// Least squares on |p|² = 2 c·p + k.
    static func sphereCenter(_ u: [Vector3]) -> Vector3? {
        var ata = [Double](repeating: 0, count: 16), atb = [Double](repeating: 0, count: 4)
        for p in u {
            let row = [2 * p.x, 2 * p.y, 2 * p.z, 1]
            let rhs = p.dot(p)
            for i in 0..<4 {
                atb[i] += row[i] * rhs
                for j in 0..<4 { ata[i * 4 + j] += row[i] * row[j] }
            }
        }
        guard let v = solveLinear(ata, atb, n: 4) else { return nil }
        return Vector3(v[0], v[1], v[2])
    }

    /// Gaussian elimination with partial pivoting; nil when singular.
    static func solveLinear(_ a0: [Double], _ b0: [Double], n: Int) -> [Double]? {
        var a = a0, b = b0
        var largest = 0.0
        for v in a { largest = max(largest, abs(v)) }
        for col in 0..<n {
            var pivot = col
            for r in col..<n where abs(a[r * n + col]) > abs(a[pivot * n + col]) { pivot = r }
            guard abs(a[pivot * n + col]) > largest * 1e-13 else { return nil }
            if pivot != col {
                for c in 0..<n { a.swapAt(col * n + c, pivot * n + c) }
                b.swapAt(col, pivot)
            }
            for r in (col + 1)..<n {
                let f = a[r * n + col] / a[col * n + col]
                if f == 0 { continue }
                for c in col..<n { a[r * n + c] -= f * a[col * n + c] }
                b[r] -= f * b[col]
            }
        }
        var x = [Double](repeating: 0, count: n)
        for r in stride(from: n - 1, through: 0, by: -1) {
            var s = b[r]
            for c in (r + 1)..<n { s -= a[r * n + c] * x[c] }
            x[r] = s / a[r * n + r]
        }
        return x.allSatisfy(\.isFinite) ? x : nil
    }

    /// Eigenvalues and eigenvectors (columns) of a symmetric 3×3 matrix, cyclic Jacobi.
    static func symmetricEigen(_ s: Matrix3) -> (Vector3, Matrix3) {
        var a = [[s.m00, s.m01, s.m02], [s.m10, s.m11, s.m12], [s.m20, s.m21, s.m22]]
        var v = [[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]]
        for _ in 0..<50 {
            let off = a[0][1] * a[0][1] + a[0][2] * a[0][2] + a[1][2] * a[1][2]
            if off < 1e-30 { break }
            for (p, q) in [(0, 1), (0, 2), (1, 2)] where abs(a[p][q]) > 1e-300 {
                let theta = (a[q][q] - a[p][p]) / (2 * a[p][q])
                let t = (theta >= 0 ? 1.0 : -1.0) / (abs(theta) + (theta * theta + 1).squareRoot())
                let c = 1 / (t * t + 1).squareRoot(), sn = t * c
                for k in 0..<3 {  // A ← A·J
                    let akp = a[k][p], akq = a[k][q]
                    a[k][p] = c * akp - sn * akq
                    a[k][q] = sn * akp + c * akq
                }
                for k in 0..<3 {  // A ← Jᵀ·A
                    let apk = a[p][k], aqk = a[q][k]
                    a[p][k] = c * apk - sn * aqk
                    a[q][k] = sn * apk + c * aqk
                }
                for k in 0..<3 {
                    let vkp = v[k][p], vkq = v[k][q]
                    v[k][p] = c * vkp - sn * vkq
                    v[k][q] = sn * vkp + c * vkq
                }
            }
        }
        return (
            Vector3(a[0][0], a[1][1], a[2][2]),
            Matrix3(v[0][0], v[0][1], v[0][2], v[1][0], v[1][1], v[1][2], v[2][0], v[2][1], v[2][2])
        )
    }
}
