// Fusion settings from configuration text: the keys an [orientation] (or [imu]) section
// can carry, parsed here so the config reader only forwards key/value pairs. Also the
// text `osh-edge calibrate mag` writes back, and a coverage measure to guide that routine.
#if canImport(Glibc)
import Glibc
#endif

extension FusionSettings {
    /// Keys understood by `set(key:value:)`.
    public static let configKeys = [
        "fusion", "gain", "beta", "kp", "ki", "rate", "mounting", "gyro_bias",
        "mag_offset", "mag_matrix",
    ]

    /// Applies one configuration key. Values:
    /// - `fusion = madgwick|mahony`; `gain` = β for Madgwick or Kp for Mahony; `beta`, `kp`, `ki`
    /// - `rate = 100` (Hz); `mounting = x=-y,y=x,z=z` or a name (`z90`, `x180`, …)
    /// - `gyro_bias = auto` (learn at rest, the default) `| off` (no correction) `| X,Y,Z` (rad/s, a known starting bias, refined at rest unless `off` came first)
    /// - `mag_offset = X,Y,Z` (µT); `mag_matrix = 9 numbers, row-major`
    public mutating func set(key: String, value: String) throws(FusionConfigError) {
        func number(_ s: String, _ range: ClosedRange<Double>) throws(FusionConfigError) -> Double {
            guard let v = Double(s.filter { $0 != " " }), v.isFinite, range.contains(v) else {
                throw FusionConfigError("\(key) must be a number in \(range.lowerBound)…\(range.upperBound), not '\(value)'")
            }
            return v
        }
        func numbers(_ s: String) throws(FusionConfigError) -> [Double] {
            var out: [Double] = []
            for part in s.split(whereSeparator: { $0 == "," || $0 == " " }) {
                guard let v = Double(part), v.isFinite else { throw FusionConfigError("\(key): '\(part)' is not a number") }
                out.append(v)
            }
            return out
        }
        switch key {
        case "fusion":
            guard let a = FusionAlgorithm(rawValue: value) else {
                throw FusionConfigError("fusion must be madgwick or mahony, not '\(value)'")
            }
            algorithm = a
        case "gain":
            let v = try number(value, 0...100)
            if algorithm == .madgwick { beta = v } else { kp = v }
        case "beta": beta = try number(value, 0...100)
        case "kp": kp = try number(value, 0...100)
        case "ki": ki = try number(value, 0...100)
        case "rate": rateHz = try number(value, 0.1...10_000)
        case "mounting": mounting = try AxisMapping(parsing: value)
        case "gyro_bias":
            switch value {
            case "auto": estimateGyroBias = true
            case "off": estimateGyroBias = false
            default:
                let v = try numbers(value)
                guard v.count == 3 else { throw FusionConfigError("gyro_bias must be auto, off or 3 numbers in rad/s, not '\(value)'") }
                initialGyroBias = Vector3(v[0], v[1], v[2])
            }
        case "mag_offset":
            magCalibration = try MagCalibration(offset: numbers(value), matrix: magCalibration.matrix.rowMajor)
        case "mag_matrix":
            magCalibration = try MagCalibration(
                offset: [magCalibration.offset.x, magCalibration.offset.y, magCalibration.offset.z],
                matrix: numbers(value))
        default:
            throw FusionConfigError("unknown fusion key '\(key)'; known: " + Self.configKeys.joined(separator: ", "))
        }
    }
}

extension MagCalibration {
    /// The two config lines that reproduce this calibration (what `calibrate mag` writes).
    public var configLines: [String] {
        func f(_ v: Double) -> String {
            let r = (v * 1e6).rounded() / 1e6
            return r == r.rounded() ? String(Int(r)) + ".0" : "\(r)"
        }
        return [
            "mag_offset = \(f(offset.x)), \(f(offset.y)), \(f(offset.z))",
            "mag_matrix = " + matrix.rowMajor.map(f).joined(separator: ", "),
        ]
    }
}

extension MagCalibrationSolver {
    /// How much of the sphere of directions the samples cover, 0…1, seen from `center`
    /// (the hard-iron offset, or the samples' mean before any fit): the share of 26 direction
    /// bins (cube faces, edges, corners) that hold at least one sample. A guided calibration
    /// keeps asking the user to turn the board until this passes ~0.8.
    public static func coverage(_ samples: [Vector3], center: Vector3) -> Double {
        var bins = [Bool](repeating: false, count: 27)
        for s in samples {
            guard let d = (s - center).normalized else { continue }
            // Quantise each component to −1, 0, +1 (|c| < 0.38 ≈ sin 22.5° counts as 0).
            func q(_ c: Double) -> Int { c > 0.38 ? 2 : (c < -0.38 ? 0 : 1) }
            bins[q(d.x) * 9 + q(d.y) * 3 + q(d.z)] = true
        }
        bins[13] = false  // (0,0,0) is not a direction
        return Double(bins.filter { $0 }.count) / 26
    }
}
