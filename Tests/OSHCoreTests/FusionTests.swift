import Foundation
import OSHCore
import XCTest

/// A deterministic noise source (SplitMix64 + Box–Muller), so the synthetic runs are identical everywhere.
struct SeededNoise {
    var generator: SplitMix64
    init(state: UInt64) { generator = SplitMix64(seed: state) }
    mutating func uniform() -> Double {
        (Double(generator.next() >> 11) + 0.5) / 9_007_199_254_740_992
    }
    mutating func gaussian(_ sigma: Double) -> Double {
        sigma * (-2 * log(uniform())).squareRoot() * cos(2 * .pi * uniform())
    }
    mutating func vector(_ sigma: Double) -> Vector3 { Vector3(gaussian(sigma), gaussian(sigma), gaussian(sigma)) }
}

/// One synthetic run: a known rotation sequence at 100 Hz, sensors generated from the truth.
struct SyntheticMotion {
    static let rate = 100.0
    static let gravity = 9.80665
    /// Earth field in ENU µT (north 20, down 45: mid-northern latitudes).
    static let field = Vector3(0, 20, -45)
    static let bias = Vector3(0.02, -0.015, 0.012)
    static let start =
        Quaternion(axis: Vector3(0, 0, 1), angle: -35 * .pi / 180)
        * Quaternion(axis: Vector3(1, 0.3, 0), angle: 10 * .pi / 180)

    var truth = SyntheticMotion.start
    var noise = SeededNoise(state: 20_251_129)
    var t = 0.0

    /// Still 0–3 s, rotating about all axes 3–23 s, still 23–40 s.
    static let duration = 40.0
    static func rate(at t: Double) -> Vector3 {
        guard t >= 3, t < 23 else { return .zero }
        let s = t - 3
        return Vector3(0.6 * sin(0.7 * s), 0.5 * sin(0.45 * s), 0.8 * sin(0.3 * s))
    }

    /// Advances the truth by one step and returns (gyro, accel, mag) as a chip would read them.
    mutating func step(withMag: Bool) -> (Vector3, Vector3, Vector3?) {
        let dt = 1 / Self.rate
        let w = Self.rate(at: t + dt / 2)
        if w.norm > 0 { truth = (truth * Quaternion(axis: w, angle: w.norm * dt)).normalized }
        t += dt
        let toDevice = truth.matrix.transposed
        let gyro = w + Self.bias + noise.vector(0.003)
        let accel = toDevice * Vector3(0, 0, Self.gravity) + noise.vector(0.05)
        let mag = toDevice * Self.field + noise.vector(0.3)
        return (gyro, accel, withMag ? mag : nil)
    }
}

func wrapDegrees(_ d: Double) -> Double {
    var v = d.truncatingRemainder(dividingBy: 360)
    if v > 180 { v -= 360 } else if v <= -180 { v += 360 }
    return v
}

final class FusionTests: XCTestCase {
    private func run(
        _ algorithm: FusionAlgorithm, mag: Bool, estimateBias: Bool = true,
        initialize: Bool = false, resetToTruth: Bool = false
    ) -> (OrientationFilter, SyntheticMotion, Double) {
        var s = FusionSettings()
        s.algorithm = algorithm
        s.estimateGyroBias = estimateBias
        s.initializeFromFirstSample = initialize
        var filter = OrientationFilter(settings: s)
        if resetToTruth { filter.reset(to: SyntheticMotion.start) }
        var motion = SyntheticMotion()
        var worstAfterMotion = 0.0
        while motion.t < SyntheticMotion.duration - 1e-9 {
            let (g, a, m) = motion.step(withMag: mag)
            filter.update(gyro: g, accel: a, mag: m, dt: 1 / SyntheticMotion.rate)
            if motion.t > 33 { worstAfterMotion = max(worstAfterMotion, filter.quaternion.angle(to: motion.truth) * 180 / .pi) }
        }
        return (filter, motion, worstAfterMotion)
    }

    func testMARGConvergesWithin1DegreeFromIdentity() {
        for algorithm in FusionAlgorithm.allCases {
            let (filter, motion, worst) = run(algorithm, mag: true)
            XCTAssertLessThan(worst, 1.0, "\(algorithm): worst error over the last 7 s")
            XCTAssertEqual(filter.gyroBias.x, SyntheticMotion.bias.x, accuracy: 0.001, "\(algorithm)")
            XCTAssertEqual(filter.gyroBias.y, SyntheticMotion.bias.y, accuracy: 0.001, "\(algorithm)")
            XCTAssertEqual(filter.gyroBias.z, SyntheticMotion.bias.z, accuracy: 0.001, "\(algorithm)")
            let a = filter.android, truth = AndroidOrientation(motion.truth)
            XCTAssertEqual(wrapDegrees(a.heading - truth.heading), 0, accuracy: 1, "\(algorithm)")
            XCTAssertEqual(a.pitch, truth.pitch, accuracy: 1, "\(algorithm)")
            XCTAssertEqual(wrapDegrees(a.roll - truth.roll), 0, accuracy: 1, "\(algorithm)")
            XCTAssertTrue(filter.lastUsedMagnetometer)
        }
    }

    func testMARGStartsRightWhenInitialisedFromTheFirstSample() {
        // Noise-free first sample: the attitude is exact (Android's getRotationMatrix).
        let toDevice = SyntheticMotion.start.matrix.transposed
        let exact = OrientationFilter.attitude(accel: toDevice * Vector3(0, 0, 9.8), mag: toDevice * SyntheticMotion.field)
        XCTAssertLessThan(exact.map { $0.angle(to: SyntheticMotion.start) } ?? 1, 1e-9)
        // With noise, within 1° once the first still block (1 s) has taught the gyro bias.
        for algorithm in FusionAlgorithm.allCases {
            var s = FusionSettings()
            s.algorithm = algorithm
            var filter = OrientationFilter(settings: s)
            var motion = SyntheticMotion()
            for _ in 0..<250 {
                let (g, a, m) = motion.step(withMag: true)
                filter.update(gyro: g, accel: a, mag: m, dt: 0.01)
            }
            XCTAssertLessThan(filter.quaternion.angle(to: motion.truth) * 180 / .pi, 1, "\(algorithm)")
        }
    }

    /// IMU-only: tilt converges, heading is only integrated, so it drifts by what the
    /// residual bias allows — and without bias estimation by the whole bias.
    func testIMUOnlyHeadingDriftIsBoundedByTheResidualBias() {
        for algorithm in FusionAlgorithm.allCases {
            let (filter, motion, _) = run(algorithm, mag: false, resetToTruth: true)
            let a = filter.android, truth = AndroidOrientation(motion.truth)
            XCTAssertEqual(a.pitch, truth.pitch, accuracy: 1, "\(algorithm)")
            XCTAssertEqual(wrapDegrees(a.roll - truth.roll), 0, accuracy: 1, "\(algorithm)")
            // Bias learnt in the first 3 s from 300 samples of σ = 0.003 rad/s: residual ≲ 4σ/√300
            // per axis; over 40 s that is ≲ 1.3°. Allow 1° more for tilt/heading coupling in motion.
            let residual = 4 * 0.003 / 300.0.squareRoot() * SyntheticMotion.duration * 180 / .pi
            let drift = abs(wrapDegrees(a.heading - truth.heading))
            XCTAssertLessThan(drift, residual + 1, "\(algorithm) drift \(drift)°")
            XCTAssertFalse(filter.lastUsedMagnetometer)

            let (raw, rawMotion, _) = run(algorithm, mag: false, estimateBias: false, resetToTruth: true)
            let rawDrift = abs(wrapDegrees(raw.android.heading - AndroidOrientation(rawMotion.truth).heading))
            XCTAssertGreaterThan(rawDrift, 5 * drift, "\(algorithm): bias estimation should matter (\(rawDrift)° vs \(drift)°)")
        }
    }

    /// Mahony's integral term learns the gyro bias on its own (bias estimation off, MARG).
    func testMahonyIntegralLearnsTheBias() {
        var s = FusionSettings()
        s.algorithm = .mahony
        s.ki = 0.3
        s.estimateGyroBias = false
        var filter = OrientationFilter(settings: s)
        var motion = SyntheticMotion()
        while motion.t < SyntheticMotion.duration - 1e-9 {
            let (g, a, m) = motion.step(withMag: true)
            filter.update(gyro: g, accel: a, mag: m, dt: 0.01)
        }
        XCTAssertLessThan(filter.quaternion.angle(to: motion.truth) * 180 / .pi, 1)
    }

    func testAndroidConventionHandComputedCases() {
        func check(_ q: Quaternion, heading: Double, pitch: Double, roll: Double, _ what: String) {
            let a = AndroidOrientation(q)
            XCTAssertEqual(wrapDegrees(a.heading - heading), 0, accuracy: 1e-9, what + " heading \(a.heading)")
            XCTAssertEqual(a.pitch, pitch, accuracy: 1e-9, what + " pitch")
            XCTAssertEqual(a.roll, roll, accuracy: 1e-9, what + " roll")
            XCTAssertGreaterThanOrEqual(a.w, 0)
        }
        let deg = Double.pi / 180
        let flatNorth = AndroidOrientation(.identity)
        XCTAssertEqual([flatNorth.x, flatNorth.y, flatNorth.z, flatNorth.w], [0, 0, 0, 1])
        check(.identity, heading: 0, pitch: 0, roll: 0, "flat, top towards north")
        check(Quaternion(axis: Vector3(0, 0, 1), angle: -90 * deg), heading: 90, pitch: 0, roll: 0, "flat, facing east")
        check(Quaternion(axis: Vector3(0, 0, 1), angle: 90 * deg), heading: -90, pitch: 0, roll: 0, "flat, facing west")
        check(Quaternion(axis: Vector3(0, 0, 1), angle: 180 * deg), heading: 180, pitch: 0, roll: 0, "flat, facing south")
        // Top edge raised 30° (right-hand turn about device x): Android's pitch is −30.
        check(Quaternion(axis: Vector3(1, 0, 0), angle: 30 * deg), heading: 0, pitch: -30, roll: 0, "top edge up")
        check(Quaternion(axis: Vector3(1, 0, 0), angle: -30 * deg), heading: 0, pitch: 30, roll: 0, "top edge down")
        // Right edge lowered 30° (right-hand turn about device y): roll +30.
        check(Quaternion(axis: Vector3(0, 1, 0), angle: 30 * deg), heading: 0, pitch: 0, roll: 30, "right edge down")
        // Facing east, then top raised 20°: heading still 90.
        check(
            Quaternion(axis: Vector3(0, 0, 1), angle: -90 * deg) * Quaternion(axis: Vector3(1, 0, 0), angle: 20 * deg),
            heading: 90, pitch: -20, roll: 0, "east, top up")
        // The wire quaternion for facing east: (0, 0, −sin 45°, cos 45°), scalar last and ≥ 0.
        let east = AndroidOrientation(Quaternion(w: -0.5.squareRoot(), x: 0, y: 0, z: 0.5.squareRoot()))
        XCTAssertEqual(east.z, -0.5.squareRoot(), accuracy: 1e-12)
        XCTAssertEqual(east.w, 0.5.squareRoot(), accuracy: 1e-12)
        XCTAssertEqual(east.heading, 90, accuracy: 1e-9)
    }

    /// Euler angles are Android's decomposition R = Rz(−heading)·Rx(−pitch)·Ry(roll): rebuilding
    /// the quaternion from them gives the same rotation, over many random attitudes.
    func testEulerAnglesAreConsistentWithTheQuaternion() {
        var noise = SeededNoise(state: 7)
        let deg = Double.pi / 180
        for _ in 0..<500 {
            let q = Quaternion(w: noise.gaussian(1), x: noise.gaussian(1), y: noise.gaussian(1), z: noise.gaussian(1)).normalized
            let a = AndroidOrientation(q)
            XCTAssertTrue((-180...180).contains(a.heading) && (-90...90).contains(a.pitch) && (-180...180).contains(a.roll))
            let rebuilt =
                Quaternion(axis: Vector3(0, 0, 1), angle: -a.heading * deg)
                * Quaternion(axis: Vector3(1, 0, 0), angle: -a.pitch * deg) * Quaternion(axis: Vector3(0, 1, 0), angle: a.roll * deg)
            XCTAssertLessThan(rebuilt.angle(to: q), 1e-6)
            XCTAssertLessThan(a.quaternion.angle(to: q), 1e-9)
        }
    }

    func testAttitudeFromOneSampleMatchesGetRotationMatrix() throws {
        // Flat, top towards magnetic north: accel up, field north and down.
        let q = try XCTUnwrap(OrientationFilter.attitude(accel: Vector3(0, 0, 9.8), mag: Vector3(0, 20, -45)))
        XCTAssertLessThan(q.angle(to: .identity), 1e-9)
        let east = try XCTUnwrap(OrientationFilter.attitude(accel: Vector3(0, 0, 9.8), mag: Vector3(-20, 0, -45)))
        XCTAssertEqual(AndroidOrientation(east).heading, 90, accuracy: 1e-9)
        XCTAssertNil(OrientationFilter.attitude(accel: .zero, mag: nil))
    }

    func testBadSamplesAreIgnored() {
        var filter = OrientationFilter()
        filter.update(gyro: Vector3(.nan, 0, 0), accel: Vector3(0, 0, 9.8), mag: nil, dt: 0.01)
        XCTAssertEqual(filter.updates, 0)
        filter.update(gyro: .zero, accel: .zero, mag: Vector3(.infinity, 0, 0), dt: -1)
        XCTAssertEqual(filter.updates, 1)
        XCTAssertTrue(filter.quaternion.norm.isFinite)
    }

    // MARK: magnetometer calibration

    /// A field of 48 µT seen in 300 orientations, then distorted by a known soft iron and hard iron.
    private func distortedSamples(noise sigma: Double, count: Int = 300) -> ([Vector3], [Vector3], Matrix3, Vector3) {
        let soft = Matrix3(1.2, 0.1, 0.05, 0.1, 0.9, -0.08, 0.05, -0.08, 1.05)
        let hard = Vector3(12.5, -30, 7.25)
        var noise = SeededNoise(state: 42)
        var truth: [Vector3] = [], raw: [Vector3] = []
        let golden = Double.pi * (3 - 5.0.squareRoot())
        for i in 0..<count {
            let z = 1 - 2 * (Double(i) + 0.5) / Double(count), r = (1 - z * z).squareRoot()
            let v = Vector3(r * cos(golden * Double(i)), r * sin(golden * Double(i)), z) * 48
            truth.append(v)
            raw.append(soft * v + hard + noise.vector(sigma))
        }
        return (truth, raw, soft, hard)
    }

    func testMagCalibrationRecoversHardAndSoftIron() throws {
        let (truth, raw, soft, hard) = distortedSamples(noise: 0)
        let fit = try MagCalibrationSolver.solve(raw)
        XCTAssertEqual(fit.model, .ellipsoid)
        XCTAssertEqual((fit.calibration.offset - hard).norm, 0, accuracy: 1e-6)
        // The correction undoes the (symmetric) distortion up to one overall scale.
        let product = fit.calibration.matrix * soft
        let s = fit.fieldStrength / 48
        for (got, want) in zip(product.rowMajor, Matrix3.identity.rowMajor) { XCTAssertEqual(got, want * s, accuracy: 1e-6) }
        XCTAssertLessThan(fit.relativeResidual, 1e-9)
        for (t, r) in zip(truth, raw) { XCTAssertLessThan((fit.calibration.apply(r) - t * s).norm, 1e-6) }
    }

    func testMagCalibrationWithNoiseAndSphereFallback() throws {
        let (_, raw, _, hard) = distortedSamples(noise: 0.4)
        let fit = try MagCalibrationSolver.solve(raw)
        XCTAssertLessThan((fit.calibration.offset - hard).norm, 0.3)
        XCTAssertLessThan(fit.relativeResidual, 0.02)
        // Too few for an ellipsoid: a sphere (offset only).
        let sphere = [
            Vector3(60, 0, 0), Vector3(-40, 0, 0), Vector3(10, 50, 0), Vector3(10, -50, 0), Vector3(10, 0, 50), Vector3(10, 0, -50),
        ]
        let s = try MagCalibrationSolver.solve(sphere)
        XCTAssertEqual(s.model, .sphere)
        XCTAssertEqual((s.calibration.offset - Vector3(10, 0, 0)).norm, 0, accuracy: 1e-9)
        XCTAssertEqual(s.fieldStrength, 50, accuracy: 1e-9)
        XCTAssertThrowsError(try MagCalibrationSolver.solve([Vector3(1, 2, 3)]))
        XCTAssertThrowsError(try MagCalibrationSolver.solve(Array(repeating: Vector3(1, 2, 3), count: 20)))
        XCTAssertThrowsError(try MagCalibration(offset: [1, 2], matrix: nil))
        XCTAssertThrowsError(try MagCalibration(offset: [1, 2, 3], matrix: [1, 0, 0, 0, 0, 0, 0, 0, 1]))
    }

    // MARK: axis mapping

    func testAxisMapping() throws {
        let m = try AxisMapping(parsing: "x=-y, y=x, z=z")
        XCTAssertEqual(m.apply(Vector3(1, 2, 3)), Vector3(-2, 1, 3))
        XCTAssertEqual(m, try AxisMapping(parsing: "z90"))
        XCTAssertEqual(m.text, "x=-y,y=x,z=z")
        XCTAssertEqual(try AxisMapping(parsing: "x180").apply(Vector3(1, 2, 3)), Vector3(1, -2, -3))
        XCTAssertEqual(try AxisMapping(parsing: "identity"), .identity)
        for (name, spec) in AxisMapping.named { XCTAssertEqual(try AxisMapping(parsing: name), try AxisMapping(parsing: spec)) }
        XCTAssertThrowsError(try AxisMapping(parsing: "x=y,y=x,z=z")) { XCTAssertTrue("\($0)".contains("mirror"), "\($0)") }
        XCTAssertThrowsError(try AxisMapping(parsing: "x=x,y=x,z=z")) { XCTAssertTrue("\($0)".contains("twice"), "\($0)") }
        XCTAssertThrowsError(try AxisMapping(parsing: "x=x,y=y"))
        XCTAssertThrowsError(try AxisMapping(parsing: "x=q,y=y,z=z"))
        XCTAssertThrowsError(try AxisMapping(parsing: "sideways"))
    }

    /// A board mounted turned 90° reads rotated axes; with the mapping the fusion output is the same.
    func testMountingIsUndoneBeforeFusion() throws {
        var s = FusionSettings()
        s.mounting = try AxisMapping(parsing: "z90")
        var mounted = OrientationFilter(settings: s)
        var plain = OrientationFilter()
        let boardFromDevice = s.mounting.matrix.transposed
        var motion = SyntheticMotion()
        for _ in 0..<500 {
            let (g, a, m) = motion.step(withMag: true)
            plain.update(gyro: g, accel: a, mag: m, dt: 0.01)
            mounted.update(gyro: boardFromDevice * g, accel: boardFromDevice * a, mag: m.map { boardFromDevice * $0 }, dt: 0.01)
        }
        XCTAssertLessThan(mounted.quaternion.angle(to: plain.quaternion), 1e-9)
    }

    // MARK: bias and true north

    func testGyroBiasEstimatorIgnoresMotion() {
        var b = GyroBiasEstimator()
        var noise = SeededNoise(state: 3)
        for i in 0..<300 {  // 3 s of turning at 0.3 rad/s: not still
            _ = b.update(gyro: Vector3(0.3 * sin(Double(i) * 0.05), 0, 0), accel: Vector3(0, 0, 9.8) + noise.vector(0.05), dt: 0.01)
        }
        XCTAssertEqual(b.stillBlocks, 0)
        for _ in 0..<300 {
            _ = b.update(gyro: Vector3(0.01, -0.02, 0.005) + noise.vector(0.002), accel: Vector3(0, 0, 9.8) + noise.vector(0.05), dt: 0.01)
        }
        XCTAssertEqual(b.stillBlocks, 3)
        XCTAssertLessThan((b.bias - Vector3(0.01, -0.02, 0.005)).norm, 0.001)
    }

    func testTrueNorthAddsDeclinationAndRecomputesOnlyWhenNeeded() {
        let north = TrueNorth()
        XCTAssertEqual(north.status, .noFixYet)
        XCTAssertEqual(north.apply(.identity), .identity)  // no fix ever: magnetic
        // NOAA test location 80°N 0°E, 2027.5 (≈ 2027-07-02): D = 2.59°.
        let t = 1_814_400_000.0  // 2027-06-29
        XCTAssertTrue(north.update(latitude: 80, longitude: 0, unixTime: t))
        XCTAssertEqual(north.declination, 2.59, accuracy: 0.02)
        let facingMagneticEast = Quaternion(axis: Vector3(0, 0, 1), angle: -.pi / 2)
        XCTAssertEqual(AndroidOrientation(north.apply(facingMagneticEast)).heading, 90 + north.declination, accuracy: 1e-9)
        var filter = OrientationFilter()
        filter.reset(to: facingMagneticEast)
        XCTAssertEqual(filter.android(declinationDegrees: -10).heading, 80, accuracy: 1e-9)
        XCTAssertEqual(filter.android(declinationDegrees: 100).heading, -170, accuracy: 1e-9)  // wraps into (−180, 180]
        XCTAssertFalse(north.update(latitude: 80.005, longitude: 0, unixTime: t + 60))  // ~556 m
        XCTAssertTrue(north.update(latitude: 80.01, longitude: 0, unixTime: t + 120))  // ~1.1 km
        XCTAssertFalse(north.update(latitude: 80.01, longitude: 0, unixTime: t + 86_000))
        XCTAssertTrue(north.update(latitude: 80.01, longitude: 0, unixTime: t + 86_600))  // a day later
        XCTAssertEqual(north.evaluations, 3)
        north.fixLost(unixTime: t + 90_000)
        XCTAssertEqual(north.status, .held(sinceUnixTime: t + 90_000))
        XCTAssertEqual(north.declination, 2.59, accuracy: 0.02)
        XCTAssertTrue(north.modelDateIsValid)
    }
}

/// Fusion settings from configuration text, and the calibration round trip through it.
final class FusionConfigTests: XCTestCase {
    func testKeysAndErrors() throws {
        var s = FusionSettings()
        try s.set(key: "fusion", value: "mahony")
        try s.set(key: "gain", value: "1.5")
        try s.set(key: "ki", value: "0.02")
        try s.set(key: "rate", value: "200")
        try s.set(key: "mounting", value: "z180")
        try s.set(key: "gyro_bias", value: "0.01, -0.02, 0.003")
        XCTAssertEqual(s.algorithm, .mahony)
        XCTAssertEqual(s.kp, 1.5)
        XCTAssertEqual(s.ki, 0.02)
        XCTAssertEqual(s.rateHz, 200)
        XCTAssertEqual(s.mounting.text, "x=-x,y=-y,z=z")
        XCTAssertEqual(OrientationFilter(settings: s).gyroBias, Vector3(0.01, -0.02, 0.003))
        XCTAssertThrowsError(try s.set(key: "fusion", value: "kalman")) { XCTAssertTrue("\($0)".contains("madgwick")) }
        XCTAssertThrowsError(try s.set(key: "rate", value: "fast"))
        XCTAssertThrowsError(try s.set(key: "mag_offset", value: "1, 2"))
        XCTAssertThrowsError(try s.set(key: "colour", value: "red")) { XCTAssertTrue("\($0)".contains("known")) }
    }

    func testCalibrationConfigLinesRoundTrip() throws {
        let cal = MagCalibration(offset: Vector3(12.5, -30, 7.25), matrix: Matrix3(1.1, 0.02, 0, 0.02, 0.95, -0.01, 0, -0.01, 1.0))
        var s = FusionSettings()
        for line in cal.configLines {
            let kv = line.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            try s.set(key: kv[0], value: kv[1])
        }
        XCTAssertEqual(s.magCalibration, cal)
        XCTAssertEqual(cal.configLines[0], "mag_offset = 12.5, -30.0, 7.25")
    }

    func testCoverageGrowsAsTheBoardIsTurned() {
        let flat = (0..<36).map { i in Vector3(cos(Double(i) * .pi / 18), sin(Double(i) * .pi / 18), 0) * 50 }
        let flatCoverage = MagCalibrationSolver.coverage(flat, center: .zero)
        XCTAssertEqual(flatCoverage, 8.0 / 26, accuracy: 1e-9)  // one turn on the table: the horizontal ring only
        var all: [Vector3] = []
        for i in 0..<200 {
            let z = 1 - 2 * (Double(i) + 0.5) / 200, r = (1 - z * z).squareRoot(), a = Double(i) * 2.399963
            all.append(Vector3(r * cos(a), r * sin(a), z) * 50 + Vector3(10, -5, 3))
        }
        XCTAssertEqual(MagCalibrationSolver.coverage(all, center: Vector3(10, -5, 3)), 1, accuracy: 1e-9)
    }
}
