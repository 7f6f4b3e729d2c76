#if canImport(Glibc)
import Glibc
#endif
import OSHCore
import OSHPlatform

// `osh-edge calibrate mag`: the user turns the board through every orientation while the
// magnetometer is read; when the readings cover enough of the sphere of directions, the
// hard/soft-iron correction is fitted and printed as the two [orientation] lines the agent reads.
// `MagCalibrationSession` is fed samples (testable without a loop); `MagCalibrationRun` drives
// it from an IMU on the event loop.

/// What a calibration ended with: the fit and its lines, or why it is refused.
public struct MagCalibrationOutcome: Sendable {
    public var fit: MagCalibrationFit?
    public var coverage: Double
    public var samples: Int
    /// Set when the result must not be used (too little coverage, a bad fit, not Earth's field).
    public var refusal: String?
    /// `mag_offset = [x, y, z]` and `mag_matrix = [9 numbers]`, as [orientation] takes them
    /// (empty when refused).
    public var configLines: [String]

    public var table: String {
        var out = [
            "samples         \(samples)",
            "coverage        \(Int((coverage * 100).rounded())) % of orientations",
        ]
        if let f = fit {
            out += [
                "model           \(f.model.rawValue)",
                "field strength  \(fixed(f.fieldStrength, 2)) µT",
                "residual        \(fixed(f.relativeResidual * 100, 2)) % (rms of |corrected| − field)",
                "offset          \(fixed(f.calibration.offset.x, 2)), \(fixed(f.calibration.offset.y, 2)), "
                    + "\(fixed(f.calibration.offset.z, 2)) µT",
            ]
        }
        if let r = refusal {
            out.append("")
            out.append("not calibrated: \(r)")
        } else {
            out += ["", "# put these two lines in [orientation] of /etc/osh-edge/osh-edge.conf, then restart osh-edge:"]
            out += configLines
        }
        return out.joined(separator: "\n")
    }

    public var json: String {
        let buf = ByteBuffer(capacity: 1024)
        var w = JSONWriter(buf)
        w.beginObject()
        w.key("ok"); w.bool(refusal == nil)
        w.key("samples"); w.int(samples)
        w.key("coverage"); w.number(coverage)
        if let f = fit {
            w.key("model"); w.string(f.model.rawValue)
            w.key("fieldStrengthMicrotesla"); w.number(f.fieldStrength)
            w.key("relativeResidual"); w.number(f.relativeResidual)
            w.key("offset"); w.beginArray()
            for v in [f.calibration.offset.x, f.calibration.offset.y, f.calibration.offset.z] { w.number(v) }
            w.endArray()
            w.key("matrix"); w.beginArray(); for v in f.calibration.matrix.rowMajor { w.number(v) }; w.endArray()
        }
        if let r = refusal { w.key("refusal"); w.string(r) }
        w.key("config"); w.beginArray(); for l in configLines { w.string(l) }; w.endArray()
        w.endObject()
        return buf.string
    }
}

/// Collects magnetometer readings (µT, device frame) and decides when there are enough.
public final class MagCalibrationSession {
    public let targetCoverage: Double
    /// Fits worse than this (relative RMS of the corrected magnitude) are refused.
    public let maxResidual: Double
    /// Earth's field is 22–67 µT anywhere; outside this the readings are not of it.
    public let fieldRange: ClosedRange<Double>
    public private(set) var samples: [Vector3] = []
    public private(set) var coverage = 0.0
    private let maxSamples: Int
    private var low = Vector3(.infinity, .infinity, .infinity)
    private var high = Vector3(-.infinity, -.infinity, -.infinity)
    private var sinceCoverage = 0

    public init(
        targetCoverage: Double = 0.8, maxResidual: Double = 0.05, fieldRange: ClosedRange<Double> = 15...100,
        maxSamples: Int = 20_000
    ) {
        self.targetCoverage = targetCoverage
        self.maxResidual = maxResidual
        self.fieldRange = fieldRange
        self.maxSamples = maxSamples
        samples.reserveCapacity(min(maxSamples, 4096))
    }

    public var isCovered: Bool { coverage >= targetCoverage }

    /// Adds one reading. A board held still repeats itself: readings within 1 µT of the last kept
    /// one add nothing, so the fit is not dominated by where the user paused.
    public func add(_ m: Vector3) {
        guard m.isFinite, samples.count < maxSamples else { return }
        if let last = samples.last, (m - last).norm < 1 { return }
        samples.append(m)
        low = Vector3(min(low.x, m.x), min(low.y, m.y), min(low.z, m.z))
        high = Vector3(max(high.x, m.x), max(high.y, m.y), max(high.z, m.z))
        sinceCoverage += 1
        if sinceCoverage >= 10 || samples.count < 10 { updateCoverage() }
    }

    /// Coverage seen from the middle of the readings' box: the offset estimate before any fit
    /// (the mean would lean toward wherever the user lingered).
    private func updateCoverage() {
        sinceCoverage = 0
        coverage = MagCalibrationSolver.coverage(samples, center: (low + high) * 0.5)
    }

    /// Fits and judges the result.
    public func finish() -> MagCalibrationOutcome {
        updateCoverage()
        var out = MagCalibrationOutcome(fit: nil, coverage: coverage, samples: samples.count, refusal: nil, configLines: [])
        let pct = Int((coverage * 100).rounded()), need = Int((targetCoverage * 100).rounded())
        guard coverage >= targetCoverage else {
            out.refusal =
                "only \(pct) % of orientations covered (\(need) % needed, \(samples.count) distinct readings); "
                + "turn the board slowly through every orientation — each face up and down, and around — and run it again"
            if samples.count >= 4 { out.fit = try? MagCalibrationSolver.solve(samples) }
            return out
        }
        let fit: MagCalibrationFit
        do { fit = try MagCalibrationSolver.solve(samples) } catch {
            out.refusal = "\(error)"
            return out
        }
        out.fit = fit
        // Coverage again from the fitted centre: the box middle can mislead with a strong soft iron.
        out.coverage = MagCalibrationSolver.coverage(samples, center: fit.calibration.offset)
        if !fit.relativeResidual.isFinite || fit.relativeResidual > maxResidual {
            out.refusal =
                "the fit is poor (residual \(fixed(fit.relativeResidual * 100, 1)) %, at most "
                + "\(fixed(maxResidual * 100, 1)) % is usable): move away from steel, magnets and cables "
                + "carrying current, turn the board slowly, and run it again"
        } else if !fieldRange.contains(fit.fieldStrength) {
            out.refusal =
                "the fitted field is \(fixed(fit.fieldStrength, 1)) µT, not Earth's (22–67 µT): "
                + "a magnet or steel is close to the sensor, or the magnetometer is misconfigured"
        } else {
            out.configLines = Self.configLines(fit.calibration)
        }
        return out
    }

    /// The [orientation] lines, as lists the config parser reads (`mag_offset = [x, y, z]`).
    public static func configLines(_ c: MagCalibration) -> [String] {
        func f(_ v: Double, _ d: Int) -> String { fixed(v, d) }
        return [
            "mag_offset = [\(f(c.offset.x, 3)), \(f(c.offset.y, 3)), \(f(c.offset.z, 3))]",
            "mag_matrix = [" + c.matrix.rowMajor.map { f($0, 6) }.joined(separator: ", ") + "]",
        ]
    }
}

/// Reads the IMU on the loop into a session until it is covered or time is up.
public final class MagCalibrationRun {
    public let session: MagCalibrationSession
    public let input: IMUInput
    private let loop: EventLoop

    /// Opens the IMU (throws its `I2CError`). A chip without a magnetometer is refused here.
    public init(
        loop: EventLoop, bus: I2CBus, settings: IMUSettings, session: MagCalibrationSession = MagCalibrationSession(),
        sleep: @escaping (Double) -> Void = IMUDrivers.systemSleep
    ) throws {
        self.loop = loop
        self.session = session
        let s = session
        input = try IMUInput(loop: loop, bus: bus, settings: settings, sleep: sleep) { sample in
            if sample.magIsNew, let m = sample.mag { s.add(Vector3(m.x, m.y, m.z)) }
        }
        // Calibrating is done with the board in hand: a chip that does not answer is an error now.
        if let e = input.absentAtStart { throw e }
        guard input.hasMagnetometer else {
            throw I2CError(
                .unexpectedResponse, bus: bus.number, address: input.driver.address,
                operation: "calibrating: the \(input.chipName) has no magnetometer in use (set [imu] magnetometer, "
                    + "or use an IMU with one)")
        }
    }

    /// Runs for at most `seconds`, calling `progress(coverage, samples, elapsed)` about 5 times
    /// a second; stops early when covered or when SIGINT/SIGTERM arrives.
    public func run(seconds: Double, progress: (Double, Int, Double) -> Void) throws -> MagCalibrationOutcome {
        let start = Clock.monotonicNanoseconds()
        let end = start &+ UInt64(max(0, seconds) * 1e9)
        var interrupted = false
        let signals = try? loop.onSignals([SIGINT, SIGTERM]) { _ in interrupted = true }
        defer { if let r = signals { loop.remove(r) } }
        try input.start()
        defer { input.stop() }
        var lastReport: UInt64 = 0
        while !interrupted && !session.isCovered {
            let now = Clock.monotonicNanoseconds()
            if now >= end { break }
            try loop.runOnce(timeoutMs: 50)
            if now &- lastReport >= 200_000_000 {
                lastReport = now
                progress(session.coverage, session.samples.count, Double(now &- start) / 1e9)
            }
        }
        progress(session.coverage, session.samples.count, Double(Clock.monotonicNanoseconds() &- start) / 1e9)
        return session.finish()
    }
}
