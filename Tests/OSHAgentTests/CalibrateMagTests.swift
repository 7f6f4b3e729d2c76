import Foundation
import OSHAgent
import OSHCore
import OSHPlatform
import XCTest
import OSHSimulation
import OSHDevTools

/// `osh-edge calibrate mag`: the session on readings, the driver-fed session on the simulated
/// MPU-9250 with a known hard-iron offset, the loop runner, and the binary.
final class CalibrateMagTests: XCTestCase {
    override func setUp() { Log.muted = true }
    override func tearDown() { Log.muted = false }

    static let server = "[server.main]\nurl = \"http://127.0.0.1:8181/sensorhub/api\"\n\n"

    /// The printed lines pasted into [orientation] give the same calibration back.
    private func parse(_ lines: [String]) throws -> MagCalibration {
        let text = Self.server + "[orientation]\n" + lines.joined(separator: "\n") + "\n"
        let s = try AgentSettings.parse(bytes: Array(text.utf8), path: "cal.conf", chips: ChipTable.known)
        return try MagCalibration(offset: s.devices.fusion.magOffset, matrix: s.devices.fusion.magMatrix)
    }

    func testRecoversTheSimulatedHardIronThroughTheDriver() throws {
        var t = 0.0
        let bus = try MagCalibrationRun.simulatedBus(clock: { t })
        let imu = try IMUDrivers.open(bus: bus, chip: "MPU9250", sleep: { _ in })
        let session = MagCalibrationSession()
        var sample = IMUSample()
        var steps = 0
        while !session.isCovered && steps < 12_000 {  // ≤ 120 s simulated at 100 Hz
            t += 0.01
            steps += 1
            _ = try imu.read(into: &sample)
            if sample.magIsNew, let m = sample.mag { session.add(Vector3(m.x, m.y, m.z)) }
        }
        XCTAssertTrue(session.isCovered, "coverage \(session.coverage) after \(steps) steps")
        let out = session.finish()
        XCTAssertNil(out.refusal, out.refusal ?? "")
        let fit = try XCTUnwrap(out.fit)
        let truth = MagCalibrationRun.simulatedOffset
        XCTAssertEqual(fit.calibration.offset.x, truth.x, accuracy: 1)
        XCTAssertEqual(fit.calibration.offset.y, truth.y, accuracy: 1)
        XCTAssertEqual(fit.calibration.offset.z, truth.z, accuracy: 1)
        XCTAssertEqual(fit.fieldStrength, 48, accuracy: 1.5)
        XCTAssertLessThan(fit.relativeResidual, 0.02)
        XCTAssertEqual(out.configLines.count, 2)
        XCTAssertTrue(out.configLines[0].hasPrefix("mag_offset = ["), out.configLines[0])
        let back = try parse(out.configLines)
        XCTAssertEqual(back.offset.x, fit.calibration.offset.x, accuracy: 0.001)
        XCTAssertEqual(back.offset.z, fit.calibration.offset.z, accuracy: 0.001)
        for (a, b) in zip(back.matrix.rowMajor, fit.calibration.matrix.rowMajor) { XCTAssertEqual(a, b, accuracy: 1e-6) }
        XCTAssertTrue(out.table.contains("mag_matrix = ["), out.table)
    }

    func testRefusesTooLittleCoverage() {
        // Turned about the vertical axis only: a circle, not a sphere.
        let s = MagCalibrationSession()
        for i in 0..<400 {
            let a = Double(i) * 0.05
            s.add(Vector3(10 + 24 * cos(a), -5 + 24 * sin(a), 20 - 41.6))
        }
        XCTAssertFalse(s.isCovered)
        let out = s.finish()
        XCTAssertNotNil(out.refusal)
        XCTAssertTrue(out.refusal?.contains("orientations covered") == true, out.refusal ?? "")
        XCTAssertTrue(out.configLines.isEmpty)
    }

    func testRefusesAFieldThatIsNotEarths() {
        // A full sphere, but 300 µT: a magnet next to the sensor.
        let s = MagCalibrationSession()
        for i in 0..<40 {
            for j in 0..<20 {
                let th = Double(i) * .pi / 20, ph = Double(j) * .pi / 19
                s.add(Vector3(300 * sin(ph) * cos(th), 300 * sin(ph) * sin(th), 300 * cos(ph)))
            }
        }
        XCTAssertTrue(s.isCovered)
        let out = s.finish()
        XCTAssertTrue(out.refusal?.contains("not Earth's") == true, out.refusal ?? "nil")
    }

    func testLoopRunnerStopsWhenCovered() throws {
        let loop = try EventLoop()
        let bus = try MagCalibrationRun.simulatedBus(speed: 40)
        let run = try MagCalibrationRun(loop: loop, bus: bus, settings: IMUSettings(chip: "MPU9250"), sleep: { _ in })
        var reports = 0
        let out = try run.run(seconds: 20) { _, _, _ in reports += 1 }
        XCTAssertGreaterThan(reports, 0)
        XCTAssertNil(out.refusal, out.refusal ?? "")
        XCTAssertEqual(out.fit?.calibration.offset.x ?? 0, MagCalibrationRun.simulatedOffset.x, accuracy: 1)
    }

    /// The agent waits for a named IMU that does not answer; calibrating does not: it says so now.
    func testANamedIMUThatDoesNotAnswerIsAnErrorNow() throws {
        let loop = try EventLoop()
        XCTAssertThrowsError(
            try MagCalibrationRun(
                loop: loop, bus: SimulatedI2CBus(recordsTrace: false), settings: IMUSettings(chip: "MPU9250"), sleep: { _ in })
        ) { error in
            XCTAssertTrue((error as? I2CError)?.isAbsent ?? false, "\(error)")
            XCTAssertTrue("\(error)".contains("MPU9250"), "\(error)")
        }
    }

    func testCLISimulatedPrintsLinesThatParse() throws {
        let r = try runOSHEdge(["calibrate", "mag", "--simulated", "--json", "--seconds", "30"], binary: "osh-edge-dev")
        XCTAssertEqual(r.status, 0, r.err + r.out)
        let obj = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        XCTAssertEqual(obj["ok"] as? Bool, true)
        let lines = try XCTUnwrap(obj["config"] as? [String])
        let cal = try parse(lines)
        let truth = MagCalibrationRun.simulatedOffset
        XCTAssertEqual(cal.offset.x, truth.x, accuracy: 1)
        XCTAssertEqual(cal.offset.y, truth.y, accuracy: 1)
        XCTAssertEqual(cal.offset.z, truth.z, accuracy: 1)
        let table = try runOSHEdge(["calibrate", "mag", "--simulated", "--seconds", "30"], binary: "osh-edge-dev")
        XCTAssertEqual(table.status, 0, table.err)
        XCTAssertTrue(table.out.contains("field strength") && table.out.contains("mag_offset = ["), table.out)
        let noBus = try runBinary(["calibrate", "mag", "--bus", "7", "--config", "/nonexistent"])
        XCTAssertEqual(noBus.status, 1)
    }
}
