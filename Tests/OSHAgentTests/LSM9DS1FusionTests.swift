import OSHAgent
import OSHCore
import OSHPlatform
import XCTest
import OSHSimulation

/// The LSM9DS1 in the agent: IMUInput (timer and FIFO pacing) on a virtual-time loop, the
/// simulated Sense HAT following the loop's clock, each sample fed to the orientation filter as
/// Hardware.imuSample feeds it; heading, pitch and roll against the simulated truth. Then the
/// names its outputs get and the `[imu]` lines probe suggests for a Sense HAT.
final class LSM9DS1FusionTests: XCTestCase {
    private let noSleep: (Double) -> Void = { _ in }
    override func setUp() { Log.muted = true }
    override func tearDown() { Log.muted = false }

    private func wrap(_ d: Double) -> Double {
        var x = d.truncatingRemainder(dividingBy: 360)
        if x > 180 { x -= 360 } else if x <= -180 { x += 360 }
        return x
    }

    private struct Run {
        var input: IMUInput
        var samples = 0
        /// Worst angle between the filter and the truth over the last 10 s (degrees).
        var worstDeg = 0.0
        var filter: AndroidOrientation
        var truth: AndroidOrientation
        var usedMagnetometer = false
    }

    /// `seconds` of the demo's motion (10 °/s turn, pitch and roll swinging). `mirrorMagX` flips
    /// the magnetometer's X again before the filter: what a driver that forgot the die's mirror
    /// would hand over.
    private func run(
        pacing: IMUSettings.Pacing, mounting: AxisMap = .identity, mirrorMagX: Bool = false,
        seconds: Double = 20
    ) throws -> Run {
        let loop = try EventLoop(time: .virtual())
        let motion = SimulatedMotion()
        let bus = SimulatedI2CBus(recordsTrace: false)
        _ = try SimulatedIMUBoard.attach(
            to: bus, chip: "LSM9DS1", truth: { motion.truth(at: $0) }, mounting: mounting,
            clock: { Double(loop.now) / 1e9 })
        var filter = OrientationFilter(settings: FusionSettings())
        var lastT: Double?
        var worst = 0.0
        var samples = 0
        let end = Double(loop.now) / 1e9 + seconds
        let settings = IMUSettings(chip: "LSM9DS1", mounting: mounting, pacing: pacing, burstInterval: 0.25)
        let input = try IMUInput(loop: loop, bus: bus, settings: settings, sleep: noSleep) { s in
            // As Hardware.imuSample: dt from the sample times, the field only when it is new.
            let dt = lastT.map { s.t - $0 } ?? 0.01
            lastT = s.t
            var m = s.mag
            if mirrorMagX, let v = m { m = IMUVector(-v.x, v.y, v.z) }
            filter.update(
                gyro: Vector3(s.gyro.x, s.gyro.y, s.gyro.z), accel: Vector3(s.accel.x, s.accel.y, s.accel.z),
                mag: s.magIsNew ? m.map { Vector3($0.x, $0.y, $0.z) } : nil, dt: dt)
            samples += 1
            if s.t > end - 10 {
                let q = motion.orientation(at: s.t)
                worst = max(worst, filter.quaternion.angle(to: Quaternion(w: q.w, x: q.x, y: q.y, z: q.z)) * 180 / .pi)
            }
        }
        try input.start()
        try loop.advance(by: seconds)
        input.stop()
        let q = motion.orientation(at: lastT ?? 0)
        return Run(
            input: input, samples: samples, worstDeg: worst, filter: filter.android,
            truth: AndroidOrientation(Quaternion(w: q.w, x: q.x, y: q.y, z: q.z)), usedMagnetometer: filter.lastUsedMagnetometer)
    }

    func testFusionFollowsTheTruthInBothPacings() throws {
        for pacing in [IMUSettings.Pacing.timer, .fifo] {
            let r = try run(pacing: pacing)
            print("LSM9DS1 \(pacing): \(r.samples) samples in 20 s, worst fusion error over the last 10 s \(r.worstDeg)°")
            XCTAssertEqual(r.input.chipName, "LSM9DS1")
            XCTAssertEqual(r.input.magnetometerName, "LSM9DS1")
            XCTAssertEqual(r.input.fifo != nil, pacing == .fifo)
            XCTAssertEqual(r.input.fifoOverflows, 0, "\(pacing)")
            // 100 Hz polled; 119 Hz (the chip's ODR at or above 100) out of the FIFO, less the first slot.
            XCTAssertEqual(Double(r.samples), pacing == .fifo ? 20 * 119 : 20 * 100, accuracy: 40, "\(pacing)")
            XCTAssertTrue(r.usedMagnetometer, "\(pacing)")
            XCTAssertLessThan(r.worstDeg, 1, "\(pacing): worst error over the last 10 s")
            XCTAssertEqual(wrap(r.filter.heading - r.truth.heading), 0, accuracy: 1, "\(pacing) heading")
            XCTAssertEqual(r.filter.pitch, r.truth.pitch, accuracy: 1, "\(pacing) pitch")
            XCTAssertEqual(wrap(r.filter.roll - r.truth.roll), 0, accuracy: 1, "\(pacing) roll")
        }
    }

    func testMountedTurnedOnTheBoard() throws {
        // The chip turned 90° on the board, the same map in [imu] mounting: the die's mirror is
        // the driver's, so the mounting stays a plain rotation for all three vectors.
        let r = try run(pacing: .fifo, mounting: try AxisMap(["+y", "-x", "+z"]))
        XCTAssertLessThan(r.worstDeg, 1)
        XCTAssertEqual(wrap(r.filter.heading - r.truth.heading), 0, accuracy: 1)
    }

    func testTheDiesMirrorMatters() throws {
        // Negative control: handing the filter the die's own X gives a wrong heading.
        let r = try run(pacing: .timer, mirrorMagX: true)
        print("LSM9DS1 with the die's X left mirrored: worst fusion error \(r.worstDeg)°")
        XCTAssertGreaterThan(r.worstDeg, 10)
    }

    func testOutputsAreNamedAfterTheChipsAndTheDie() throws {
        let loop = try EventLoop(time: .virtual())
        let bus = SimulatedI2CBus(recordsTrace: false)
        _ = try SimulatedIMUBoard.attach(to: bus, chip: "LSM9DS1", motion: SimulatedMotion(), clock: { Double(loop.now) / 1e9 })
        let input = try IMUInput(loop: loop, bus: bus, settings: IMUSettings(pacing: .fifo), sleep: noSleep) { _ in }
        // As Hardware.options names them once the IMU is found …
        let found = OutputOptions(
            uid: "u", imuChip: input.chipName,
            magnetometerChip: input.magnetometerName ?? ChipTable.known.builtInMagnetometer(input.chipName) ?? input.chipName)
        XCTAssertEqual(OutputCatalogue.magnetometer(found).outputName, "LSM9DS1_Magnetometer_data")
        XCTAssertEqual(OutputCatalogue.accelerometer(found).outputName, "LSM9DS1_Accelerometer_data")
        // … and as the daemon names them from the config before (chip named, magnetometer auto).
        let configured = ChipTable.known.builtInMagnetometer("lsm9ds1")
        XCTAssertEqual(configured, "LSM9DS1")
    }

    /// A Sense HAT on the bus (LSM9DS1 at 0x6A, its magnetometer die at 0x1C): probe suggests the
    /// LSM9DS1 with its own magnetometer (no `magnetometer` line: auto finds the die), the
    /// magnetometer output on, and the calibration.
    func testProbeSuggestsTheSenseHATsIMULines() throws {
        let bus = SimulatedI2CBus(number: 1)
        _ = try SimulatedIMUBoard.attach(to: bus, chip: "LSM9DS1", motion: SimulatedMotion(), clock: { 1 })
        let scan = Probe.scan(bus, dump: false)
        XCTAssertEqual(scan.chips.map { "\($0.name)@\(String($0.address, radix: 16))" }, ["LIS3MDL@1c", "LSM9DS1@6a"])
        XCTAssertTrue(scan.chips[1].note.contains("probe lists it under that name"), scan.chips[1].note)
        let (config, notes) = Probe.suggestConfig(buses: [scan], audio: [], video: [])
        XCTAssertTrue(config.contains("[imu]\nchip = \"LSM9DS1\"\naddress = \"0x6A\"\naccel_range"), config)
        XCTAssertFalse(config.contains("magnetometer ="), config)
        XCTAssertTrue(notes.contains { $0.contains("calibrate mag") }, "\(notes)")
        let text = "[server.main]\nurl = \"http://127.0.0.1:8181/sensorhub/api\"\n\n" + config
        let s = try AgentSettings.parse(bytes: Array(text.utf8), path: "probe.conf", chips: ChipTable.known)
        XCTAssertEqual(s.devices.imu.chip, "LSM9DS1")
        XCTAssertEqual(s.devices.imu.address, 0x6A)
        XCTAssertEqual(s.devices.imu.magnetometer, "auto")
        XCTAssertEqual(s.outputs["magnetometer"]?.enabled, true)
        // What those lines open: the LSM9DS1 and its die.
        let loop = try EventLoop(time: .virtual())
        let input = try IMUInput(loop: loop, bus: bus, settings: IMUSettings(config: s.devices.imu, bus: 1), sleep: noSleep) { _ in }
        XCTAssertEqual(input.chipName, "LSM9DS1")
        XCTAssertEqual(input.magnetometerName, "LSM9DS1")
    }
}
