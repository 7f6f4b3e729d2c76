@testable import OSHAgent
import OSHCore
import OSHPlatform
import XCTest
import OSHSimulation

/// An ICM-42688-P with a LIS3MDL beside it through IMUInput on a virtual-time loop, in both
/// pacings: the orientation filter, fed as the agent feeds it, gives heading, pitch and roll
/// matching the simulated motion — the heading coming from the LIS3MDL (without it the filter
/// keeps the heading it started with).
final class ICM42688FusionTests: XCTestCase {
    private let noSleep: (Double) -> Void = { _ in }

    struct Errors {
        var heading = 0.0, pitch = 0.0, roll = 0.0
        var samples = 0, magnetometerReadings = 0
    }

    private static func wrap(_ d: Double) -> Double {
        var x = d.truncatingRemainder(dividingBy: 360)
        if x > 180 { x -= 360 }
        if x <= -180 { x += 360 }
        return x
    }

    /// 20 s of a board turning at 10 °/s from 120° while it rocks in pitch and roll; the worst
    /// error of each angle over the last 10 s (after the filter converged).
    private func run(_ pacing: IMUSettings.Pacing, magnetometer: String = "auto") throws -> Errors {
        let loop = try EventLoop(time: .virtual())
        let start = loop.now
        let seconds = { (ns: UInt64) in Double(ns &- start) / 1e9 }
        let motion = SimulatedMotion(initialHeadingDeg: 120)
        let bus = SimulatedI2CBus(recordsTrace: false)
        _ = try SimulatedIMUBoard.attach(to: bus, chip: "ICM-42688-P", truth: { motion.truth(at: $0) }, clock: { seconds(loop.now) })
        var settings = IMUSettings(chip: "ICM42688P", magnetometer: magnetometer, pacing: pacing, burstInterval: 0.25)
        settings.magnetometerInterval = 0.1
        var filter = OrientationFilter(settings: FusionSettings())
        var lastT: Double?
        var e = Errors()
        let input = try IMUInput(loop: loop, bus: bus, settings: settings, sleep: noSleep) { s in
            let dt = lastT.map { s.t - $0 } ?? 0.01
            lastT = s.t
            let mag = s.magIsNew ? s.mag.map { Vector3($0.x, $0.y, $0.z) } : nil
            if mag != nil { e.magnetometerReadings += 1 }
            filter.update(gyro: Vector3(s.gyro.x, s.gyro.y, s.gyro.z), accel: Vector3(s.accel.x, s.accel.y, s.accel.z), mag: mag, dt: dt)
            e.samples += 1
            let t = s.t - Double(start) / 1e9
            guard t > 10 else { return }
            let q = motion.orientation(at: t)
            let truth = AndroidOrientation(Quaternion(w: q.w, x: q.x, y: q.y, z: q.z))
            let got = filter.android
            e.heading = max(e.heading, abs(Self.wrap(got.heading - truth.heading)))
            e.pitch = max(e.pitch, abs(got.pitch - truth.pitch))
            e.roll = max(e.roll, abs(Self.wrap(got.roll - truth.roll)))
        }
        XCTAssertEqual(input.chipName, "ICM42688P")
        XCTAssertEqual(input.magnetometerName, magnetometer == "none" ? nil : "LIS3MDL")
        XCTAssertEqual(input.fifo != nil, pacing == .fifo)
        try input.start()
        try loop.run(until: loop.deadline(after: 20))
        input.stop()
        XCTAssertEqual(input.fifoOverflows, 0)
        return e
    }

    func testHeadingPitchAndRollFollowTheTruthInBothPacings() throws {
        // The simulated truth's own Android angles are the motion's: heading 120° + 10 °/s.
        let q = SimulatedMotion(initialHeadingDeg: 120).orientation(at: 3)
        XCTAssertEqual(AndroidOrientation(Quaternion(w: q.w, x: q.x, y: q.y, z: q.z)).heading, 150, accuracy: 0.5)
        for pacing in [IMUSettings.Pacing.timer, .fifo] {
            let e = try run(pacing)
            print(
                "ICM-42688-P + LIS3MDL, \(pacing): \(e.samples) samples, \(e.magnetometerReadings) magnetometer readings; "
                    + "worst heading \(e.heading)°, pitch \(e.pitch)°, roll \(e.roll)°")
            XCTAssertEqual(Double(e.samples), 2000, accuracy: 100, "\(pacing): every 100 Hz sample reaches the filter")
            XCTAssertGreaterThan(e.magnetometerReadings, pacing == .fifo ? 150 : 1000, "\(pacing)")
            // FusionTests' tolerance for the MARG filter: 1° once converged.
            XCTAssertLessThan(e.heading, 1, "\(pacing)")
            XCTAssertLessThan(e.pitch, 1, "\(pacing)")
            XCTAssertLessThan(e.roll, 1, "\(pacing)")
        }
    }

    func testWithoutTheLIS3MDLTheHeadingIsNotFound() throws {
        let e = try run(.fifo, magnetometer: "none")
        XCTAssertEqual(e.magnetometerReadings, 0)
        XCTAssertLessThan(e.pitch, 1)
        XCTAssertLessThan(e.roll, 1)
        XCTAssertGreaterThan(e.heading, 90, "it started at 0° and integrated the gyro from there; the truth started at 120°")
    }
}
