import OSHAgent
import OSHCore
import OSHPlatform
import XCTest
import OSHSimulation

/// IMUInput on a real event loop with simulated chips: samples flow at the configured rate,
/// a chip failing mid-run pauses and is reopened with backoff, and the mounting map turns
/// chip axes into device axes for every vector.
final class IMUInputTests: XCTestCase {
    private let noSleep: (Double) -> Void = { _ in }

    /// An IMU named in the configuration that does not answer at start: its outputs (the
    /// magnetometer's included, from the package) are registered, it is looked for on the
    /// backoff at each of its addresses, said once, then opened and streamed when it answers.
    func testANamedIMUThatComesLateIsFoundAndStreamed() throws {
        let loop = try EventLoop()
        let bus = SimulatedI2CBus(recordsTrace: false)
        let capture = LogCapture()
        defer { capture.stop() }
        var got: [IMUSample] = []
        got.reserveCapacity(1000)
        var settings = IMUSettings(chip: "MPU9250", pacing: .fifo, burstInterval: 0.05)
        settings.magnetometerInterval = 0.1
        let input = try IMUInput(
            loop: loop, bus: bus, settings: settings, backoff: Backoff(initial: 0.05, maximum: 0.1), sleep: noSleep
        ) { got.append($0) }
        XCTAssertNotNil(input.absentAtStart)
        XCTAssertEqual(input.chipName, "MPU9250")
        XCTAssertTrue(input.hasMagnetometer, "the AK8963 in the package: its output is registered too")
        XCTAssertEqual(input.feeds.count, OutputKind.inertial.count)
        try input.start()
        try loop.run(until: EventLoop.deadline(after: 0.3))
        XCTAssertTrue(got.isEmpty)
        guard case .retrying = input.poller.state else { return XCTFail("\(input.poller.state)") }
        // Plugged in with AD0 high: the reopen looks at every address the chip may have.
        _ = try SimulatedIMUBoard.attach(to: bus, chip: "MPU9250", address: 0x69, motion: SimulatedMotion())
        try loop.run(until: EventLoop.deadline(after: 0.5))
        XCTAssertEqual(input.state, .running)
        XCTAssertEqual(input.driver.address, 0x69)
        XCTAssertEqual(input.magnetometerName, "AK8963")
        XCTAssertGreaterThan(got.count, 10)
        XCTAssertNotNil(got.last(where: { $0.mag != nil }), "the magnetometer is read once it answers")
        XCTAssertEqual(try XCTUnwrap(got.last).accel.norm, 9.80665, accuracy: 0.01)
        XCTAssertEqual(capture.count("its outputs pause"), 1, "said once: \(capture.lines)")
        XCTAssertEqual(capture.count("back; its outputs resume"), 1, "\(capture.lines)")
        input.stop()
    }

    /// "auto" that finds nothing still throws: nothing is known to register.
    func testAutoFindingNoIMUThrowsAbsent() {
        XCTAssertThrowsError(
            try IMUInput(loop: try EventLoop(), bus: SimulatedI2CBus(recordsTrace: false), settings: IMUSettings(), sleep: noSleep) { _ in }
        ) { error in XCTAssertTrue((error as? I2CError)?.isAbsent ?? false, "\(error)") }
    }

    func testSamplesFlowThenPauseOnEIOAndResumeAfterReopen() throws {
        let loop = try EventLoop()
        let bus = SimulatedI2CBus(recordsTrace: false)
        let board = try SimulatedIMUBoard.attach(to: bus, chip: "MPU9250", motion: SimulatedMotion())
        var got: [IMUSample] = []
        got.reserveCapacity(1000)
        let input = try IMUInput(
            loop: loop, bus: bus, settings: IMUSettings(), backoff: Backoff(initial: 0.05, maximum: 0.1),
            sleep: noSleep
        ) { got.append($0) }
        XCTAssertEqual(input.chipName, "MPU9250")
        XCTAssertEqual(input.magnetometerName, "AK8963")
        var states: [SensorPoller.State] = []
        input.poller.onStateChange = { states.append($0) }
        try input.start()
        try loop.run(until: EventLoop.deadline(after: 0.15))
        XCTAssertGreaterThan(got.count, 8)
        XCTAssertNotNil(got.last?.mag)
        bus.inject(.ioError, at: 0x68)
        try loop.run(until: EventLoop.deadline(after: 0.2))
        guard case .retrying(_, _, let error)? = states.last else { return XCTFail("\(states)") }
        XCTAssertTrue(error.contains("bus error"), error)
        let during = got.count
        try loop.run(until: EventLoop.deadline(after: 0.1))
        XCTAssertEqual(got.count, during, "no samples while the chip fails")
        bus.clearFaults(at: 0x68)
        try loop.run(until: EventLoop.deadline(after: 0.3))
        XCTAssertEqual(input.state, .running)
        XCTAssertGreaterThan(got.count, during + 5)
        XCTAssertEqual(input.poller.reopens, 1)
        XCTAssertEqual((board.imu as? SimulatedMPU)?.resets, 2, "opened, then reset again on reopen")
        // Through the real driver: the demo's motion turns at −10 °/s about z.
        let last = try XCTUnwrap(got.last)
        XCTAssertEqual(last.gyro.z, -10 * .pi / 180, accuracy: 0.01)
        XCTAssertEqual(last.accel.norm, 9.80665, accuracy: 0.01)
        XCTAssertEqual(try XCTUnwrap(last.mag).norm, 48, accuracy: 0.5)
        input.stop()
    }

    func testMountingMapAppliesToEveryVector() throws {
        let mount = try AxisMap(["-y", "+x", "+z"])
        let truth = SimulatedMotion.Truth(gyro: IMUVector(0.1, 0.2, 0.3), accel: IMUVector(1, 2, 9), mag: IMUVector(10, 20, -30))
        for chip in ["MPU9250", "ICM20948", "LSM6DSOX", "ICM42688P", "MPU6050"] {
            let loop = try EventLoop()
            let bus = SimulatedI2CBus(recordsTrace: false)
            // The chip sits turned on the board; the same map in the settings undoes it.
            _ = try SimulatedIMUBoard.attach(to: bus, chip: chip, truth: { _ in truth }, mounting: mount, clock: { 0 })
            var last: IMUSample?
            let input = try IMUInput(loop: loop, bus: bus, settings: IMUSettings(mounting: mount), sleep: noSleep) { last = $0 }
            try input.start()
            try loop.run(until: EventLoop.deadline(after: 0.05))
            input.stop()
            let s = try XCTUnwrap(last, chip)
            for (a, b) in [(s.gyro, truth.gyro), (s.accel, truth.accel)] {
                XCTAssertEqual(a.x, b.x, accuracy: 0.01, chip)
                XCTAssertEqual(a.y, b.y, accuracy: 0.01, chip)
                XCTAssertEqual(a.z, b.z, accuracy: 0.01, chip)
            }
            if chip != "MPU6050" {
                let m = try XCTUnwrap(s.mag, chip)
                XCTAssertEqual(m.x, truth.mag.x, accuracy: 0.3, chip)
                XCTAssertEqual(m.y, truth.mag.y, accuracy: 0.3, chip)
                XCTAssertEqual(m.z, truth.mag.z, accuracy: 0.3, chip)
            }
        }
    }

    func testDataReadyPacingHandsOverOnlyNewSamples() throws {
        let loop = try EventLoop()
        let bus = SimulatedI2CBus(recordsTrace: false)
        _ = try SimulatedIMUBoard.attach(to: bus, chip: "LSM6DSOX", motion: SimulatedMotion())
        var count = 0
        let input = try IMUInput(loop: loop, bus: bus, settings: IMUSettings(rateHz: 50, pacing: .dataReady), sleep: noSleep) { _ in
            count += 1
        }
        try input.start()
        try loop.run(until: EventLoop.deadline(after: 0.3))
        input.stop()
        // Polled at 100 Hz, the chip converts at 52 Hz: about half the polls carry news.
        XCTAssertGreaterThan(count, 8)
        XCTAssertGreaterThan(input.notReady, 5)
        XCTAssertEqual(input.samples, count)
    }

    func testAbsentChipIsReportedAbsent() throws {
        let loop = try EventLoop()
        let bus = SimulatedI2CBus()
        XCTAssertThrowsError(try IMUInput(loop: loop, bus: bus, settings: IMUSettings(), sleep: noSleep) { _ in }) { e in
            XCTAssertTrue((e as? I2CError)?.isAbsent == true, "\(e)")
        }
        XCTAssertTrue(probeIMUs(bus: bus).isEmpty)
    }

    func testConfigHelpers() throws {
        XCTAssertEqual(IMUSettings.parseAddress("0x68"), 0x68)
        XCTAssertEqual(IMUSettings.parseAddress("40"), 40)
        XCTAssertNil(IMUSettings.parseAddress("0x80"))
        XCTAssertNil(IMUSettings.parseAddress("sixty"))
        XCTAssertEqual(AccelRange(g: 8), .g8)
        XCTAssertNil(GyroRange(dps: 300))
        XCTAssertEqual(IMUDrivers.identity(named: "mpu-9250")?.name, "MPU9250")
        XCTAssertEqual(try AxisMap(["+y", "-x", "+z"]).description, "[+y, -x, +z]")
    }

    func testSettingsFromTheConfigSection() throws {
        var c = IMUConfig()
        c.chip = "ICM20948"
        c.address = 0x68
        c.accelRange = .g16
        c.gyroRange = .dps1000
        c.mounting = try AxisMap(commaSeparated: "-y, +x, +z")
        let s = IMUSettings(config: c, bus: 3)
        XCTAssertEqual(s.bus, 3)
        XCTAssertEqual(s.chip, "ICM20948")
        XCTAssertEqual(s.accelRange, .g16)
        XCTAssertEqual(s.gyroRange, .dps1000)
        XCTAssertEqual(s.mounting, try AxisMap(["-y", "+x", "+z"]))
        // A mirrored mounting never reaches the settings: the config reader refuses it.
        XCTAssertThrowsError(try AxisMap(commaSeparated: "+x,+y,-z"))
    }
}
