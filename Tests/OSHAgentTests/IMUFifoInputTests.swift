#if canImport(Glibc)
import Glibc
#endif
@testable import OSHAgent
import OSHCore
import OSHPlatform
import XCTest
import OSHSimulation

/// FIFO pacing against register polling on the same simulated motion: bus transactions and
/// wakeups per second, and the orientation filter's error against the truth. The harness runs
/// in simulated time (deterministic); the last test runs IMUInput on a real loop.
final class IMUFifoInputTests: XCTestCase {
    private let noSleep: (Double) -> Void = { _ in }

    struct Run {
        var transactionsPerSecond: Double
        var wakeupsPerSecond: Double
        var samplesPerSecond: Double
        /// Worst angle between the filter and the truth over the last 10 s (degrees).
        var worstErrorDeg: Double
    }

    /// 20 s of the demo's motion (10 °/s turn, pitch and roll swinging) through `chip`'s driver,
    /// fed to the filter as Hardware.imuSample does. FIFO: a burst every `IMUFifoLayout`
    /// interval with IMUFifoTiming's times; registers: one read per 1/rate at the tick time.
    private func run(_ chip: String, fifo: Bool, seconds: Double = 20) throws -> Run {
        let motion = SimulatedMotion()
        let bus = SimulatedI2CBus(recordsTrace: false)
        var now = 0.0
        _ = try SimulatedIMUBoard.attach(to: bus, chip: chip, truth: { motion.truth(at: $0) }, clock: { now })
        let d = try IMUDrivers.open(bus: bus, chip: chip, settings: IMUDriverSettings(fifo: fifo), sleep: noSleep)
        let before = bus.transactionCount.values.reduce(0, +)
        var filter = OrientationFilter(settings: FusionSettings())
        var lastT: Double?
        var samples = 0, wakeups = 0
        var worst = 0.0
        func feed(_ s: IMUSample) {
            let dt = lastT.map { s.t - $0 } ?? 0.01
            lastT = s.t
            filter.update(
                gyro: Vector3(s.gyro.x, s.gyro.y, s.gyro.z), accel: Vector3(s.accel.x, s.accel.y, s.accel.z),
                mag: s.magIsNew ? s.mag.map { Vector3($0.x, $0.y, $0.z) } : nil, dt: dt)
            samples += 1
            if s.t > seconds - 10 {
                let q = motion.orientation(at: s.t)
                worst = max(worst, filter.quaternion.angle(to: Quaternion(w: q.w, x: q.x, y: q.y, z: q.z)) * 180 / .pi)
            }
        }
        if let f = d.fifo, fifo {
            let interval = f.burstInterval(asked: 0.25)
            var burst: [IMUSample] = []
            var last: Double?
            while now + interval <= seconds {
                now += interval
                wakeups += 1
                _ = try d.readFIFO(into: &burst)
                for (i, var s) in burst.enumerated() {
                    s.t = IMUFifoTiming.time(ofSample: i, count: burst.count, readAt: now, rateHz: f.rateHz, previous: last)
                    feed(s)
                }
                last = lastT
            }
        } else {
            var s = IMUSample()
            while now + 0.01 <= seconds + 1e-9 {
                now += 0.01
                wakeups += 1
                _ = try d.read(into: &s)
                s.t = now
                feed(s)
            }
        }
        let transactions = bus.transactionCount.values.reduce(0, +) - before
        return Run(
            transactionsPerSecond: Double(transactions) / seconds, wakeupsPerSecond: Double(wakeups) / seconds,
            samplesPerSecond: Double(samples) / seconds, worstErrorDeg: worst)
    }

    func testFIFOCutsTransactionsAndWakeupsAndFusesAsWell() throws {
        for chip in ["MPU9250", "MPU6500", "ICM20948", "LSM6DSOX", "ICM42688P"] {
            let polled = try run(chip, fifo: false)
            let burst = try run(chip, fifo: true)
            print(
                "IMU \(chip): registers \(polled.transactionsPerSecond) transactions/s, \(polled.wakeupsPerSecond) wakeups/s, "
                    + "\(polled.samplesPerSecond) samples/s, worst fusion error \(polled.worstErrorDeg)° | FIFO "
                    + "\(burst.transactionsPerSecond) transactions/s, \(burst.wakeupsPerSecond) wakeups/s, "
                    + "\(burst.samplesPerSecond) samples/s, worst fusion error \(burst.worstErrorDeg)°")
            XCTAssertGreaterThanOrEqual(polled.transactionsPerSecond / burst.transactionsPerSecond, 5, "\(chip): ≥ 5× fewer transactions")
            XCTAssertGreaterThanOrEqual(polled.wakeupsPerSecond / burst.wakeupsPerSecond, 5, chip)
            XCTAssertEqual(
                burst.samplesPerSecond, polled.samplesPerSecond, accuracy: 0.05 * polled.samplesPerSecond,
                "\(chip): every sample still reaches the filter")
            // FusionTests' tolerance for the MARG filter (1° once converged).
            XCTAssertLessThan(polled.worstErrorDeg, 1, chip)
            XCTAssertLessThan(burst.worstErrorDeg, 1, chip)
        }
    }

    func testBNO055KeepsRegisterPollingUnderFIFOPacing() throws {
        let loop = try EventLoop()
        let bus = SimulatedI2CBus(recordsTrace: false)
        _ = try SimulatedIMUBoard.attach(to: bus, chip: "BNO055", motion: SimulatedMotion())
        var got = 0
        let input = try IMUInput(
            loop: loop, bus: bus, settings: IMUSettings(chip: "BNO055", rateHz: 50, pacing: .fifo),
            sleep: noSleep
        ) { _ in got += 1 }
        XCTAssertNil(input.fifo)
        XCTAssertEqual(input.pollInterval, 0.02, accuracy: 1e-12, "one register read per sample, as timer pacing")
        try input.start()
        try loop.run(until: EventLoop.deadline(after: 0.2))
        input.stop()
        XCTAssertGreaterThan(got, 5)
    }

    func testInputOnTheLoopHandsOverEverySampleWithReconstructedTimes() throws {
        let loop = try EventLoop()
        let bus = SimulatedI2CBus(recordsTrace: false)
        _ = try SimulatedIMUBoard.attach(to: bus, chip: "MPU9250", motion: SimulatedMotion())
        var times: [Double] = []
        var newMag = 0
        let input = try IMUInput(loop: loop, bus: bus, settings: IMUSettings(pacing: .fifo, burstInterval: 0.1), sleep: noSleep) {
            times.append($0.t)
            if $0.magIsNew { newMag += 1 }
        }
        XCTAssertEqual(input.pollInterval, 0.1, accuracy: 1e-12, "the asked interval, under the 0.28 s cap")
        try input.start()
        try loop.run(until: EventLoop.deadline(after: 0.65))
        input.stop()
        XCTAssertGreaterThanOrEqual(input.poller.polls, 5)
        XCTAssertEqual(Double(times.count), 100 * Double(input.poller.polls) * 0.1, accuracy: 12, "≈ 10 samples per burst")
        for (a, b) in zip(times, times.dropFirst()) { XCTAssertGreaterThan(b, a) }
        let gaps = zip(times, times.dropFirst()).map { $1 - $0 }.sorted()
        XCTAssertEqual(gaps[gaps.count / 2], 0.01, accuracy: 1e-6, "samples 1/rate apart")
        // The first burst comes at the next 100 ms of the loop's grid: it may find no whole frame yet.
        XCTAssertTrue(
            (input.poller.polls...(input.poller.polls + 1)).contains(newMag),
            "one magnetometer reading per burst with samples (+ the first sample): \(newMag) for \(input.poller.polls)")
        XCTAssertEqual(input.fifoOverflows, 0)
    }

    func testOverflowIsCountedLoggedOnceAndReadingGoesOn() throws {
        let loop = try EventLoop()
        let bus = SimulatedI2CBus(recordsTrace: false)
        _ = try SimulatedIMUBoard.attach(to: bus, chip: "MPU6500", motion: SimulatedMotion())
        var got = 0
        let input = try IMUInput(
            loop: loop, bus: bus, settings: IMUSettings(chip: "MPU6500", pacing: .fifo, burstInterval: 0.05),
            sleep: noSleep
        ) { _ in got += 1 }
        try input.start()
        try loop.run(until: EventLoop.deadline(after: 0.2))
        // The loop stalls longer than the 512-byte FIFO lasts (42 frames, 0.42 s), twice.
        usleep(700_000)
        try loop.run(until: EventLoop.deadline(after: 0.1))
        usleep(700_000)
        let before = got
        try loop.run(until: EventLoop.deadline(after: 0.3))
        input.stop()
        XCTAssertEqual(input.fifoOverflows, 2)
        XCTAssertGreaterThanOrEqual(input.lostSamples, 2 * 65, "the 0.7 s stalls at 100 Hz, not only the 42 frames the FIFO held")
        XCTAssertGreaterThan(got, before + 15, "samples flow again after the reset")
        XCTAssertEqual(input.poller.failedPolls, 0, "an overflow is not a bus failure")
    }

    func testConfigKeyAndSettings() throws {
        var c = IMUConfig()
        XCTAssertTrue(c.fifo, "FIFO bursts by default")
        XCTAssertEqual(IMUSettings(config: c, bus: 1, flushInterval: 0.5).pacing, .fifo)
        XCTAssertEqual(IMUSettings(config: c, bus: 1, flushInterval: 0.5).burstInterval, 0.5)
        c.fifo = false
        XCTAssertEqual(IMUSettings(config: c, bus: 1).pacing, .timer)
        XCTAssertFalse(IMUSettings(config: c, bus: 1).driverSettings.fifo)
    }

    /// The magnetometer has no FIFO: it is read once per burst, so its output's rate sets the
    /// longest burst interval (10 Hz: a burst per 100 ms, not per 250 ms flush); without a
    /// magnetometer, or with its output off, the flush interval stands.
    func testTheMagnetometerOutputsRateBoundsTheBurstInterval() throws {
        func interval(chip: String, magnetometerInterval: Double?) throws -> Double {
            let loop = try EventLoop(time: .virtual())
            let bus = SimulatedI2CBus(recordsTrace: false)
            _ = try SimulatedIMUBoard.attach(to: bus, chip: chip, motion: SimulatedMotion())
            var settings = IMUSettings(chip: chip, pacing: .fifo, burstInterval: 0.25)
            settings.magnetometerInterval = magnetometerInterval
            return try IMUInput(loop: loop, bus: bus, settings: settings, sleep: noSleep) { _ in }.pollInterval
        }
        XCTAssertEqual(try interval(chip: "MPU9250", magnetometerInterval: 0.1), 0.1, accuracy: 1e-12)
        XCTAssertEqual(try interval(chip: "MPU9250", magnetometerInterval: nil), 0.25, accuracy: 1e-12)
        XCTAssertEqual(try interval(chip: "MPU9250", magnetometerInterval: 1), 0.25, accuracy: 1e-12)
        XCTAssertEqual(try interval(chip: "MPU6500", magnetometerInterval: 0.1), 0.25, accuracy: 1e-12, "no magnetometer on the chip")
        let on = try AgentSettings.parse(
            bytes: Array(
                """
                [server.main]
                url = "http://127.0.0.1:1/sensorhub/api"
                [outputs.magnetometer]
                enabled = true
                [outputs.quat_orientation_data]
                enabled = true
                """.utf8), path: "mag.conf", chips: ChipTable.known)
        XCTAssertEqual(Daemon.plan(on).magnetometerRate, 10, "the magnetometer output's default rate")
        let off = try AgentSettings.parse(
            bytes: Array(
                """
                [server.main]
                url = "http://127.0.0.1:1/sensorhub/api"
                [outputs.quat_orientation_data]
                enabled = true
                """.utf8), path: "nomag.conf", chips: ChipTable.known)
        XCTAssertEqual(Daemon.plan(off).magnetometerRate, 0)
    }
}
