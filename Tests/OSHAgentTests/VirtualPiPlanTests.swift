import Foundation
import OSHAgent
import OSHCore
import OSHPlatform
import XCTest
import OSHSimulation

/// The virtual Pi's register plan (board/virtual-pi/i2c/registers.py plan) on memory-only chips,
/// as i2c-stub holds them, through the agent's own probe, drivers, inputs and orientation filter.
/// The virtual Pi's expected values are right only while the drivers read these registers this
/// way: when a driver changes, this test fails first, on the host.
final class VirtualPiPlanTests: XCTestCase {
    private let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    private var dir = ""

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "osh-vp-plan-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    // MARK: The plan's files

    struct PlanError: Error, CustomStringConvertible {
        var description: String
    }

    /// One line of i2c-load.txt (`ADDR REG HEXBYTES`) or i2c-steps.txt (`SECONDS ADDR REG HEXBYTES`).
    struct RegisterWrite {
        var origin: String
        var seconds: Double?
        var address: UInt8
        var register: UInt8
        var bytes: [UInt8]
    }

    /// What the agent must publish (the parts of expected.json this test checks).
    struct Expected: Decodable {
        struct Sample: Decodable {
            var fromS: Double
            var pressureHPa: Double
            var relativeAltitudeM: Double
            enum CodingKeys: String, CodingKey {
                case fromS = "from_s", pressureHPa = "pressure_hPa", relativeAltitudeM = "relativeAltitude_m"
            }
        }
        struct Barometer: Decodable { var samples: [Sample] }
        struct Euler: Decodable { var heading, pitch, roll: Double }
        struct Quat: Decodable { var qx, qy, qz, q0: Double }
        struct Orientation: Decodable {
            var euler: Euler
            var quat: Quat
            enum CodingKeys: String, CodingKey { case euler = "euler_orientation_data", quat = "quat_orientation_data" }
        }
        struct Fifo: Decodable {
            var countBytes: Int
            var framesPerBurst: Int
            var burstIntervalS: Double
            enum CodingKeys: String, CodingKey {
                case countBytes = "count_bytes", framesPerBurst = "frames_per_burst", burstIntervalS = "burst_interval_s"
            }
        }
        struct IMU: Decodable {
            var accelerometer: [Double]
            var magnetometer: [Double]
            var orientation: Orientation
            var fifo: Fifo
            enum CodingKeys: String, CodingKey {
                case accelerometer = "accelerometer_m_s2", magnetometer = "magnetometer_uT", orientation, fifo
            }
        }
        struct Hygrometer: Decodable {
            var temperatureC: Double
            var humidityPercent: Double
            enum CodingKeys: String, CodingKey { case temperatureC = "temperature_C", humidityPercent = "humidity_percent" }
        }
        var barometer: Barometer
        var imu: IMU
        var hygrometer: Hygrometer
    }

    static func byte(_ token: Substring) -> UInt8? {
        let digits = token.lowercased().hasPrefix("0x") ? token.dropFirst(2) : token
        return (1...2).contains(digits.count) ? UInt8(digits, radix: 16) : nil
    }

    static func parse(_ path: String, timed: Bool) throws -> [RegisterWrite] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var out: [RegisterWrite] = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let origin = "\(path):\(index + 1)"
            func bad(_ why: String) -> PlanError { PlanError(description: "\(origin): \(why): \(line)") }
            var fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            var seconds: Double?
            if timed {
                guard let s = fields.first.flatMap({ Double($0) }), s.isFinite, s >= 0 else { throw bad("no SECONDS") }
                seconds = s
                fields.removeFirst()
            }
            guard fields.count >= 3 else { throw bad("want ADDR REG HEXBYTES") }
            var values: [UInt8] = []
            for f in fields {
                guard let b = byte(f) else { throw bad("not a hex byte: \(f)") }
                values.append(b)
            }
            let write = RegisterWrite(
                origin: origin, seconds: seconds, address: values[0], register: values[1],
                bytes: Array(values[2...]))
            guard Int(write.register) + write.bytes.count <= 256 else { throw bad("runs past register 0xFF") }
            out.append(write)
        }
        return out
    }

    /// The plan, written by registers.py into the test's directory.
    private func plan() throws -> (load: [RegisterWrite], steps: [RegisterWrite], expected: Expected) {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        guard let python = path.map({ "\($0)/python3" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw XCTSkip("python3 is not installed")
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python)
        p.arguments = [repo + "/board/virtual-pi/i2c/registers.py", "plan", "--out", dir]
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw PlanError(description: "registers.py plan exited \(p.terminationStatus): \(String(decoding: output, as: UTF8.self))")
        }
        let json = dir + "/expected.json"
        let expected: Expected
        do { expected = try JSONDecoder().decode(Expected.self, from: Data(contentsOf: URL(fileURLWithPath: json))) } catch {
            throw PlanError(description: "\(json): \(error)")
        }
        return (try Self.parse(dir + "/i2c-load.txt", timed: false), try Self.parse(dir + "/i2c-steps.txt", timed: true), expected)
    }

    // MARK: The board

    /// i2c-stub's chips: plain memory at the four addresses the plan fills.
    private final class Board {
        let bus = SimulatedI2CBus(number: 0, recordsTrace: false)
        var chips: [UInt8: RegisterMapDevice] = [:]

        init(_ load: [RegisterWrite]) throws {
            for address: UInt8 in [0x76, 0x68, 0x0C, 0x44] {
                let chip = RegisterMapDevice()
                chips[address] = chip
                bus.attach(chip, at: address)
            }
            for w in load { try apply(w) }
        }

        func apply(_ w: RegisterWrite) throws {
            guard let chip = chips[w.address] else {
                throw PlanError(description: "\(w.origin): no chip at 0x\(String(w.address, radix: 16)) on the virtual Pi")
            }
            chip.load(w.bytes, at: w.register)
        }
    }

    private func assertEqual(
        _ got: IMUVector?, _ want: [Double], _ what: String,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let v = try XCTUnwrap(got, what, file: file, line: line)
        XCTAssertEqual(want.count, 3, "\(what): expected.json has \(want)", file: file, line: line)
        for (g, w) in zip([v.x, v.y, v.z], want) { XCTAssertEqual(g, w, accuracy: 1e-12, what, file: file, line: line) }
    }

    private func assertOrientation(
        _ o: AndroidOrientation, _ want: Expected.Orientation,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertEqual(o.heading, want.euler.heading, accuracy: 1e-6, file: file, line: line)
        XCTAssertEqual(o.pitch, want.euler.pitch, accuracy: 1e-6, file: file, line: line)
        XCTAssertEqual(o.roll, want.euler.roll, accuracy: 1e-6, file: file, line: line)
        XCTAssertEqual(o.x, want.quat.qx, accuracy: 1e-8, file: file, line: line)
        XCTAssertEqual(o.y, want.quat.qy, accuracy: 1e-8, file: file, line: line)
        XCTAssertEqual(o.z, want.quat.qz, accuracy: 1e-8, file: file, line: line)
        XCTAssertEqual(o.w, want.quat.q0, accuracy: 1e-8, file: file, line: line)
    }

    // MARK: The test

    func testAgentPublishesWhatThePlanExpects() throws {
        let (load, steps, expected) = try plan()
        let samples = expected.barometer.samples
        XCTAssertEqual(samples.count, steps.count + 1, "expected.json: a sample at the start and one per step")

        // osh-edge probe --dump
        let probe = Probe.scan(try Board(load).bus, dump: true)
        XCTAssertEqual(probe.chips.map(\.name), ["AK8963", "SHT4x", "MPU9250", "BMP280"])
        let first = try XCTUnwrap(samples.first, "expected.json: no barometer samples")
        let dump = try XCTUnwrap(probe.barometerDumps.first?.decoded, "probe: no decoded barometer dump")
        XCTAssertEqual(dump.pressureHPa, first.pressureHPa, accuracy: 1e-9)

        // The agent's barometer and IMU inputs on a fresh board, on the loop.
        let board = try Board(load)
        let loop = try EventLoop()
        var pressures: [(hPa: Double, altitude: Double)] = []
        let baro = try BarometerInput(loop: loop, bus: board.bus, settings: BarometerSettings(bus: 0, chip: "auto", rateHz: 50)) {
            _, s in pressures.append((s.pressure, s.relativeAltitude))
        }
        XCTAssertEqual(baro.driver.identity.name, "BMP280")
        // As Hardware feeds its filter (Hardware.imuSample).
        var filter = OrientationFilter(settings: FusionSettings())
        var lastT: Double?
        var last: IMUSample?
        var imuSamples = 0
        let imu = try IMUInput(loop: loop, bus: board.bus, settings: IMUSettings(bus: 0), sleep: { _ in }) { s in
            let dt = lastT.map { s.t - $0 } ?? 0.01
            lastT = s.t
            filter.update(
                gyro: Vector3(s.gyro.x, s.gyro.y, s.gyro.z), accel: Vector3(s.accel.x, s.accel.y, s.accel.z),
                mag: s.magIsNew ? s.mag.map { Vector3($0.x, $0.y, $0.z) } : nil, dt: dt)
            last = s
            imuSamples += 1
        }
        XCTAssertEqual(imu.chipName, "MPU9250")
        XCTAssertEqual(imu.magnetometerName, "AK8963")
        try baro.start()
        try imu.start()

        // i2c-steps.txt compressed in time: each step's bytes go in between loop turns, so every
        // sample taken until the next step is that step's.
        for (k, want) in samples.enumerated() {
            if k > 0, k <= steps.count {
                let step = steps[k - 1]
                XCTAssertEqual(step.address, 0x76, "\(step.origin): not a BMP280 step")
                XCTAssertEqual(step.seconds, want.fromS, "\(step.origin): not the time of expected.json's sample \(k)")
                try board.apply(step)
            }
            pressures.removeAll()
            XCTAssertTrue(try loop.run(for: 2, until: { pressures.count >= 3 }), "step \(k): \(pressures.count) samples in 2 s")
            for p in pressures {
                XCTAssertEqual(p.hPa, want.pressureHPa, accuracy: 1e-9, "step \(k)")
                XCTAssertEqual(p.altitude, want.relativeAltitudeM, accuracy: 1e-6, "step \(k)")
            }
        }
        // Past one gyro-bias block (1 s) of the filter, so its stillness path has run too.
        XCTAssertTrue(try loop.run(for: 3, until: { imuSamples >= 120 }), "\(imuSamples) IMU samples in 3 s")
        baro.stop()
        imu.stop()

        assertOrientation(filter.android, expected.imu.orientation)
        let s = try XCTUnwrap(last, "no IMU sample")
        try assertEqual(s.accel, expected.imu.accelerometer, "accelerometer (m/s²)")
        try assertEqual(s.mag, expected.imu.magnetometer, "magnetometer (µT)")
        XCTAssertTrue(s.magIsNew)
        XCTAssertEqual(baro.poller.failedPolls, 0)
        XCTAssertEqual(imu.poller.failedPolls, 0)
    }

    /// The virtual Pi's late chip: the SHT4x the board loads at 0x44 and hides (the stub NACKs it)
    /// until 20 s after the agent starts. Named in the configuration, it is looked for on the
    /// backoff, then streams the datasheet's conversion of the planned words.
    func testTheLateSHT4xOnTheStubStreamsThePlannedValues() throws {
        let (load, _, expected) = try plan()
        let board = try Board(load)
        let chip = try XCTUnwrap(board.chips[0x44])
        board.bus.detach(address: 0x44)
        let loop = try EventLoop()
        var readings: [(celsius: Double, percent: Double)] = []
        let h = try HygrometerInput(
            loop: loop, bus: board.bus, settings: HygrometerSettings(bus: 0, chip: "SHT4x", address: 0x44, rateHz: 10),
            backoff: Backoff(initial: 0.05, maximum: 0.1))
        var celsius: Double?
        h.temperatureSink = { _, s in celsius = s.celsius }
        h.humiditySink = { _, s in readings.append((celsius ?? .nan, s.percent)) }
        XCTAssertNotNil(h.absentAtStart, "the SHT4x is hidden at start")
        try h.start()
        XCTAssertFalse(try loop.run(for: 0.3, until: { !readings.isEmpty }), "nothing while it does not answer")
        board.bus.attach(chip, at: 0x44)
        XCTAssertTrue(try loop.run(for: 3, until: { readings.count >= 3 }), "\(readings.count) readings in 3 s once it answers")
        h.stop()
        for r in readings {
            XCTAssertEqual(r.celsius, expected.hygrometer.temperatureC, accuracy: 1e-9)
            XCTAssertEqual(r.percent, expected.hygrometer.humidityPercent, accuracy: 1e-9)
        }
    }

    /// The daemon's default pacing on the stub: FIFO bursts. registers.py's FIFO region decodes
    /// to the planned sample in every frame, with a count of what the chip would hold per burst,
    /// so the agent publishes the same values as with register polling, 10 ms apart.
    func testFIFOBurstsOnTheStubDecodeToThePlan() throws {
        let (load, _, expected) = try plan()
        let board = try Board(load)
        board.bus.recordsTrace = true
        let loop = try EventLoop()
        var filter = OrientationFilter(settings: FusionSettings())
        var times: [Double] = []
        var got: [IMUSample] = []
        // As the daemon sets it with the guest's config: the magnetometer output at 10 Hz.
        var settings = IMUSettings(bus: 0, pacing: .fifo, burstInterval: 0.25)
        settings.magnetometerInterval = 0.1
        let imu = try IMUInput(loop: loop, bus: board.bus, settings: settings, sleep: { _ in }) { s in
            let dt = times.last.map { s.t - $0 } ?? 0.01
            times.append(s.t)
            filter.update(
                gyro: Vector3(s.gyro.x, s.gyro.y, s.gyro.z), accel: Vector3(s.accel.x, s.accel.y, s.accel.z),
                mag: s.magIsNew ? s.mag.map { Vector3($0.x, $0.y, $0.z) } : nil, dt: dt)
            got.append(s)
        }
        let f = try XCTUnwrap(imu.fifo, "the MPU-9250 on the stub is read through its FIFO")
        XCTAssertEqual(imu.pollInterval, expected.imu.fifo.burstIntervalS, accuracy: 1e-9, "registers.py's burst interval")
        XCTAssertEqual(f.wholeFrames(count: expected.imu.fifo.countBytes), expected.imu.fifo.framesPerBurst)
        board.bus.clearTrace()
        try imu.start()
        XCTAssertTrue(try loop.run(for: 3, until: { imu.poller.polls >= 6 }), "\(imu.poller.polls) bursts in 3 s")
        imu.stop()
        XCTAssertEqual(got.count, imu.poller.polls * expected.imu.fifo.framesPerBurst)
        for (a, b) in zip(times, times.dropFirst()) { XCTAssertGreaterThan(b, a) }
        let n = expected.imu.fifo.framesPerBurst
        let burst = Array(got[n..<2 * n])
        XCTAssertEqual((burst.last?.t ?? 0) - (burst.first?.t ?? 0), Double(n - 1) / 100, accuracy: 1e-9, "\(n) samples 10 ms apart")
        XCTAssertEqual(burst.filter(\.magIsNew).count, 1, "the magnetometer, once per burst")
        XCTAssertTrue(burst.last?.magIsNew == true)
        XCTAssertTrue(got.first?.magIsNew == true, "the first sample has it too: the filter starts from it")
        for s in got { try assertEqual(s.accel, expected.imu.accelerometer, "accelerometer (m/s²)") }
        try assertEqual(got.last?.mag, expected.imu.magnetometer, "magnetometer (µT)")
        assertOrientation(filter.android, expected.imu.orientation)
        // FIFO_COUNT, 10 frames, the AK8963: three transactions per burst.
        XCTAssertEqual(board.bus.trace.count, 3 * imu.poller.polls)
        XCTAssertEqual(imu.poller.failedPolls, 0)
    }
    /// The virtual Pi restamps a tester's NMEA log to the board's time. A sentence corrupted on
    /// purpose (bad `*hh`) must stay corrupt — recomputing every checksum used to make it valid,
    /// so its position reached the node — and one without a checksum stays without one.
    func testRestampingKeepsABadChecksumBad() throws {
        let script = """
            import sys, time
            sys.path.insert(0, sys.argv[1])
            import checks
            w = time.gmtime(1767225600)
            good = "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47"
            def ok(line):
                body, star = line[1:line.rindex("*")], line.rindex("*")
                return line[star + 1:].strip() == checks.nmea_checksum(body)
            assert ok(good)
            assert ok(checks.nmea_restamp(good, w)), "a good sentence stays good"
            assert checks.nmea_restamp(good, w).startswith("$GPGGA,000000,"), "restamped"
            bad = good[:-2] + "00"
            assert not ok(checks.nmea_restamp(bad, w)), "a bad checksum stays bad"
            bare = "$GPGGA,123519,4807.038,N"
            assert checks.nmea_restamp(bare, w) == bare, "no checksum stays none"
            print("ok")
            """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", script, repo + "/board/virtual-pi/host"]
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        let out = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, out)
        XCTAssertEqual(out, "ok\n")
    }
}
