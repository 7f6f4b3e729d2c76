import OSHCore
@testable import OSHPlatform
import XCTest
import OSHSimulation

/// Simulated time the chips see; tests move it by hand.
private final class SimTime { var t = 0.0 }

/// Each supported chip through the simulated bus with its real register layout: identify,
/// configure (the register writes), read a known physical truth back within 1 LSB at two
/// ranges, the magnetometer path, data-ready, and the failure modes.
final class IMUDriverTests: XCTestCase {
    private let noSleep: (Double) -> Void = { _ in }
    private let gyro = IMUVector(0.5, -1.2, 2.0)  // rad/s
    private let accel = IMUVector(1.5, -3.0, 9.0)  // m/s²
    private let mag = IMUVector(20, -5, -40)  // µT

    private func truth(_ t: Double) -> SimulatedMotion.Truth {
        SimulatedMotion.Truth(gyro: gyro, accel: accel, mag: mag)
    }

    private func setUp(
        _ chip: String, address: UInt8? = nil, mounting: AxisMap = .identity
    )
        throws -> (SimulatedI2CBus, SimulatedIMUBoard, SimTime)
    {
        let bus = SimulatedI2CBus(number: 1)
        let time = SimTime()
        let board = try SimulatedIMUBoard.attach(
            to: bus, chip: chip, address: address, truth: { [unowned self] in self.truth($0) },
            mounting: mounting, clock: { time.t })
        return (bus, board, time)
    }

    private func assertClose(
        _ a: IMUVector?, _ b: IMUVector, _ lsb: Double, _ what: String,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        guard let a = a else { return XCTFail("\(what): nil", file: file, line: line) }
        XCTAssertEqual(a.x, b.x, accuracy: lsb, "\(what).x", file: file, line: line)
        XCTAssertEqual(a.y, b.y, accuracy: lsb, "\(what).y", file: file, line: line)
        XCTAssertEqual(a.z, b.z, accuracy: lsb, "\(what).z", file: file, line: line)
    }

    private func writes(_ chip: RegisterMapDevice) -> [[UInt8]] { chip.writes.map { [$0.register, $0.value] } }

    // MARK: MPU-9250 + AK8963

    func testMPU9250WithAK8963InBypass() throws {
        let (bus, board, time) = try setUp("MPU9250")
        let mpu = try XCTUnwrap(board.imu as? SimulatedMPU)
        let ak = try XCTUnwrap(mpu.ak8963)
        // Hidden until the driver turns bypass on.
        XCTAssertThrowsError(try bus.readRegister(0x0C, 0)) { XCTAssertTrue(($0 as? I2CError)?.isAbsent == true) }

        for (a, g) in [(AccelRange.g4, GyroRange.dps500), (.g16, .dps2000)] {
            mpu.clearWrites(); ak.clearWrites()
            let d = try IMUDrivers.open(bus: bus, chip: "MPU9250", settings: IMUDriverSettings(accelRange: a, gyroRange: g), sleep: noSleep)
            XCTAssertEqual(d.identity.name, "MPU9250")
            XCTAssertEqual(d.address, 0x68)
            XCTAssertEqual(d.whoAmI, 0x71)
            XCTAssertEqual(d.magnetometerName, "AK8963")
            XCTAssertEqual(
                writes(mpu),
                [
                    [0x6B, 0x80], [0x6B, 0x01], [0x6C, 0x00], [0x19, 9], [0x1A, 3],
                    [0x1B, g.code << 3], [0x1C, a.invensenseCode << 3], [0x1D, 3],
                    [0x6A, 0x00], [0x37, 0x02], [0x38, 0x01],
                ])
            XCTAssertEqual(mpu.sampleRate, 100)
            XCTAssertEqual(writes(ak), [[0x0B, 0x01], [0x0A, 0x00], [0x0A, 0x0F], [0x0A, 0x00], [0x0A, 0x16]])

            time.t += 0.5
            var s = IMUSample()
            XCTAssertTrue(try d.read(into: &s))
            assertClose(s.accel, accel, IMUConvert.invensenseAccelScale(a), "accel \(a)")
            assertClose(s.gyro, gyro, IMUConvert.invensenseGyroScale(g), "gyro \(g)")
            // AK8963: die axes swapped back, sensitivity adjustment from the fuse ROM applied.
            XCTAssertTrue(s.magIsNew)
            assertClose(s.mag, mag, 0.15 * 1.5, "mag")
            XCTAssertEqual(s.temperature ?? 0, 25, accuracy: 0.01)
        }
    }

    func testMPUDataReadyAndMagnetometerRelease() throws {
        let (bus, _, time) = try setUp("MPU9250")
        let d = try IMUDrivers.open(bus: bus, chip: "auto", sleep: noSleep)
        var s = IMUSample()
        XCTAssertTrue(try d.read(into: &s))
        XCTAssertTrue(s.magIsNew)
        // Same instant: INT_STATUS was cleared by the last read and the AK8963 was released by ST2.
        XCTAssertFalse(try d.read(into: &s))
        XCTAssertFalse(s.magIsNew)
        XCTAssertNotNil(s.mag, "the last magnetometer reading is kept")
        time.t += 0.004
        XCTAssertFalse(try d.read(into: &s), "not yet a 100 Hz period")
        time.t += 0.007
        XCTAssertTrue(try d.read(into: &s))
        XCTAssertTrue(s.magIsNew)
        // One 15-byte burst from INT_STATUS per sample, one 8-byte ST1…ST2 burst for the AK8963.
        bus.clearTrace()
        time.t += 0.01
        _ = try d.read(into: &s)
        XCTAssertEqual(bus.trace.map { "\($0.address):\($0.written):\($0.readCount)" }, ["104:[58]:15", "12:[2]:8"])
    }

    func testMPU6050AndMPU6500() throws {
        for (chip, id) in [("MPU6050", UInt8(0x68)), ("MPU6500", UInt8(0x70))] {
            let (bus, board, time) = try setUp(chip, address: 0x69)
            let mpu = try XCTUnwrap(board.imu as? SimulatedMPU)
            for (a, g) in [(AccelRange.g2, GyroRange.dps250), (.g8, .dps1000)] {
                mpu.clearWrites()
                let d = try IMUDrivers.open(
                    bus: bus, chip: chip, settings: IMUDriverSettings(accelRange: a, gyroRange: g, rateHz: 50), sleep: noSleep)
                XCTAssertEqual(d.address, 0x69)
                XCTAssertEqual(d.whoAmI, id)
                XCTAssertNil(d.magnetometerName)
                let w = writes(mpu)
                XCTAssertTrue(w.contains([0x19, 19]), "\(w)")  // 1000 / (1 + 19) = 50 Hz
                XCTAssertTrue(w.contains([0x1A, chip == "MPU6050" ? 4 : 4]), "\(w)")  // 20 Hz ≤ 25 Hz
                XCTAssertEqual(w.contains { $0[0] == 0x1D }, chip == "MPU6500", "ACCEL_CONFIG2 only exists on the 6500/9250")
                XCTAssertEqual(mpu.sampleRate, 50)
                time.t += 1
                var s = IMUSample()
                XCTAssertTrue(try d.read(into: &s))
                assertClose(s.accel, accel, IMUConvert.invensenseAccelScale(a), "\(chip) accel")
                assertClose(s.gyro, gyro, IMUConvert.invensenseGyroScale(g), "\(chip) gyro")
                XCTAssertNil(s.mag)
                XCTAssertEqual(s.temperature ?? 0, 25, accuracy: 0.01)
            }
        }
    }

    // MARK: ICM-20948 + AK09916

    func testICM20948BanksAndAK09916ThroughTheI2CMaster() throws {
        let (bus, board, time) = try setUp("ICM20948")
        let icm = try XCTUnwrap(board.imu as? SimulatedICM20948)
        // A previous run left bank 2 selected: identification still works.
        try bus.writeRegister(0x69, 0x7F, 0x20)
        for (a, g) in [(AccelRange.g2, GyroRange.dps250), (.g16, .dps2000)] {
            let d = try IMUDrivers.open(bus: bus, settings: IMUDriverSettings(accelRange: a, gyroRange: g), sleep: noSleep)
            XCTAssertEqual(d.identity.name, "ICM20948")
            XCTAssertEqual(d.address, 0x69)
            XCTAssertEqual(d.magnetometerName, "AK09916")
            let w = icm.bankedWrites.suffix(40).map { [UInt8($0.bank), $0.register, $0.value] }
            for expected: [UInt8] in [
                [0, 0x06, 0x80], [0, 0x06, 0x01], [2, 0x00, 10], [2, 0x01, 4 << 3 | g.code << 1 | 1],
                [2, 0x11, 10], [2, 0x14, 4 << 3 | a.invensenseCode << 1 | 1],
                [0, 0x03, 0x20], [3, 0x03, 0x8C], [3, 0x04, 0x10], [3, 0x05, 0x89], [0, 0x11, 0x01],
            ] {
                XCTAssertTrue(w.contains(expected), "missing \(expected) in \(w)")
            }
            XCTAssertEqual(icm.ak09916.registers[0x31], 0x08, "AK09916 in 100 Hz continuous mode")
            XCTAssertEqual(icm.bank, 0, "the driver leaves bank 0 selected for its reads")
            XCTAssertEqual(icm.sampleRate, 100)
            time.t += 0.5
            var s = IMUSample()
            XCTAssertTrue(try d.read(into: &s))
            assertClose(s.accel, accel, IMUConvert.invensenseAccelScale(a), "accel \(a)")
            assertClose(s.gyro, gyro, IMUConvert.invensenseGyroScale(g), "gyro \(g)")
            XCTAssertTrue(s.magIsNew)
            assertClose(s.mag, mag, 0.15, "mag via EXT_SLV_SENS_DATA")
            XCTAssertEqual(s.temperature ?? 0, 25, accuracy: 0.01)
            XCTAssertFalse(try d.read(into: &s))
            XCTAssertFalse(s.magIsNew, "ST2 was read by the master: no new magnetometer data yet")
        }
        // The AK09916 is not on the host bus while the master owns it.
        XCTAssertThrowsError(try bus.readRegister(0x0C, 0x01))
    }

    // MARK: LSM6DSOX + LIS3MDL

    func testLSM6DSOXWithLIS3MDL() throws {
        let (bus, board, time) = try setUp("LSM6DSOX")
        let lsm = try XCTUnwrap(board.imu as? SimulatedLSM6DSOX)
        let lis = try XCTUnwrap(board.magnetometer as? SimulatedLIS3MDL)
        for (a, g, m) in [(AccelRange.g4, GyroRange.dps500, LIS3MDLRange.gauss4), (.g16, .dps2000, .gauss12)] {
            lsm.clearWrites(); lis.clearWrites()
            let d = try IMUDrivers.open(
                bus: bus, chip: "lsm6dsox",
                settings: IMUDriverSettings(accelRange: a, gyroRange: g, magnetometerRange: m), sleep: noSleep)
            XCTAssertEqual(d.address, 0x6A)
            XCTAssertEqual(d.magnetometerName, "LIS3MDL")
            XCTAssertEqual(writes(lsm), [[0x12, 0x01], [0x12, 0x44], [0x10, 0x40 | a.lsm6dsoxCode << 2], [0x11, 0x40 | g.code << 2]])
            XCTAssertEqual(writes(lis), [[0x21, 0x04], [0x20, 0x7C], [0x21, m.code << 5], [0x23, 0x0C], [0x24, 0x40], [0x22, 0x00]])
            XCTAssertEqual(lsm.accelODR, 104)
            XCTAssertEqual(lis.rate, 80)
            time.t += 0.5
            var s = IMUSample()
            XCTAssertTrue(try d.read(into: &s))
            assertClose(s.accel, accel, IMUConvert.lsm6dsoxAccelScale(a), "accel \(a)")
            assertClose(s.gyro, gyro, IMUConvert.lsm6dsoxGyroScale(g), "gyro \(g)")
            assertClose(s.mag, mag, IMUConvert.lis3mdlScale(m), "mag \(m)")
            XCTAssertEqual(s.temperature ?? 0, 25, accuracy: 0.01)
        }
        // Without SUB(7) the LIS3MDL does not auto-increment: the same register comes back.
        let block = try bus.readBlock(0x1C, 0x28, count: 4)
        XCTAssertEqual(block[0], block[2])
        XCTAssertEqual(block[1], block[3])
    }

    func testNamedMagnetometerMissingIsAbsent() throws {
        let bus = SimulatedI2CBus()
        let time = SimTime()
        bus.attach(SimulatedLSM6DSOX(truth: { [unowned self] in self.truth($0) }, clock: { time.t }), at: 0x6A)
        XCTAssertThrowsError(
            try IMUDrivers.open(bus: bus, chip: "LSM6DSOX", settings: IMUDriverSettings(magnetometer: "LIS3MDL"), sleep: noSleep)
        ) { e in
            // The IMU is there: not "absent" (its outputs must not silently vanish), but an error naming the magnetometer.
            XCTAssertEqual((e as? I2CError)?.kind, .unexpectedResponse)
            XCTAssertTrue("\(e)".contains("LIS3MDL magnetometer not found"), "\(e)")
        }
        // "auto" runs without one.
        let d = try IMUDrivers.open(bus: bus, chip: "LSM6DSOX", sleep: noSleep)
        XCTAssertNil(d.magnetometerName)
    }

    // MARK: BNO055

    func testBNO055NDOFWithMountingOnChip() throws {
        let motion = SimulatedMotion()
        let mount = try AxisMap(["+y", "-x", "+z"])
        let bus = SimulatedI2CBus()
        let time = SimTime()
        let board = try SimulatedIMUBoard.attach(
            to: bus, chip: "BNO055", truth: { motion.truth(at: $0) }, mounting: mount, clock: { time.t })
        let bno = try XCTUnwrap(board.imu as? SimulatedBNO055)
        let d = try IMUDrivers.open(bus: bus, settings: IMUDriverSettings(mounting: mount), sleep: noSleep)
        XCTAssertEqual(d.identity.name, "BNO055")
        XCTAssertEqual(d.address, 0x28)
        XCTAssertTrue(d.appliesMountingOnChip)
        XCTAssertTrue(d.identity.note.contains("dtparam=i2c_arm_baudrate=10000"))
        let regs = BNO055Driver.axisRegisters(mount)
        XCTAssertEqual(
            writes(bno), [[0x07, 0], [0x3D, 0x00], [0x3E, 0x00], [0x3B, 0x82], [0x41, regs.config], [0x42, regs.sign], [0x3D, 0x0C]])
        XCTAssertEqual(bno.unitsWritesIgnored, 0)
        XCTAssertEqual(bno.axisMap, mount)
        XCTAssertEqual(BNO055Driver.axisRegisters(.identity).config, 0x24, "the datasheet default P1 map")
        for t in [1.0, 7.3] {
            time.t = t
            var s = IMUSample()
            _ = try d.read(into: &s)
            let truth = motion.truth(at: t)
            // In the device frame although the chip is turned 90° on the board.
            assertClose(s.accel, truth.accel, 0.01, "accel")
            assertClose(s.gyro, truth.gyro, 1.0 / 900, "gyro")
            assertClose(s.mag, truth.mag, 1.0 / 16, "mag")
            let q = try XCTUnwrap(s.quaternion), e = truth.orientation.canonical
            for (x, y) in [(q.w, e.w), (q.x, e.x), (q.y, e.y), (q.z, e.z)] { XCTAssertEqual(x, y, accuracy: 1.0 / 16384) }
        }
    }

    func testBNO055ConfigRegistersNeedConfigMode() throws {
        let (bus, board, _) = try setUp("BNO055")
        let bno = try XCTUnwrap(board.imu as? SimulatedBNO055)
        try bus.writeRegister(0x28, 0x3D, 0x0C)
        try bus.writeRegister(0x28, 0x3B, 0x00)
        XCTAssertEqual(bno.unitsWritesIgnored, 1)
        XCTAssertEqual(bno.registers[0x3B], 0x80)
        // The driver switches to CONFIG first, so its writes stick even from NDOF.
        _ = try IMUDrivers.open(bus: bus, chip: "BNO055", sleep: noSleep)
        XCTAssertEqual(bno.registers[0x3B], 0x82)
        XCTAssertEqual(bno.mode, 0x0C)
    }

    // MARK: identification and failures

    func testAutoFindsEveryChip() throws {
        for chip in IMUDrivers.identities.map(\.name) {
            let (bus, _, _) = try setUp(chip)
            let d = try IMUDrivers.open(bus: bus, sleep: noSleep)
            XCTAssertEqual(d.identity.name, chip)
        }
    }

    func testWrongWhoAmIIsAClearError() throws {
        let (bus, _, _) = try setUp("MPU6500")
        XCTAssertThrowsError(try IMUDrivers.open(bus: bus, chip: "MPU9250", sleep: noSleep)) { e in
            guard let e = e as? I2CError else { return XCTFail("\(e)") }
            XCTAssertEqual(e.kind, .unexpectedResponse)
            XCTAssertFalse(e.isAbsent)
            XCTAssertTrue(e.description.contains("reads 0x70, expected 0x71 or 0x73"), e.description)
            XCTAssertTrue(e.description.contains("that is an MPU6500"), e.description)
        }
        XCTAssertThrowsError(try IMUDrivers.open(bus: bus, chip: "HMC5883", sleep: noSleep)) { e in
            XCTAssertTrue("\(e)".contains("not a supported IMU"), "\(e)")
        }
    }

    func testNothingAnsweringIsAbsentAndSaysWhatWasTried() {
        let bus = SimulatedI2CBus(number: 3)
        XCTAssertThrowsError(try IMUDrivers.open(bus: bus, sleep: noSleep)) { e in
            guard let e = e as? I2CError else { return XCTFail("\(e)") }
            XCTAssertTrue(e.isAbsent)
            XCTAssertTrue(e.description.contains("/dev/i2c-3"), e.description)
            XCTAssertTrue(e.description.contains("MPU9250 at 0x68/0x69"), e.description)
            XCTAssertTrue(e.description.contains("BNO055 at 0x28/0x29"), e.description)
        }
    }

    func testNackAtStartIsAbsent() throws {
        let (bus, _, _) = try setUp("MPU9250")
        bus.inject(.nack, at: 0x68)
        XCTAssertThrowsError(try IMUDrivers.open(bus: bus, chip: "MPU9250", sleep: noSleep)) { e in
            XCTAssertTrue((e as? I2CError)?.isAbsent == true, "\(e)")
        }
        // A bus error at start is not "absent": it is retried.
        bus.inject(.ioError, at: 0x68)
        XCTAssertThrowsError(try IMUDrivers.open(bus: bus, chip: "MPU9250", sleep: noSleep)) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .busFault, "\(e)")
        }
    }

    func testProbeListsChipsAndMagnetometers() throws {
        let bus = SimulatedI2CBus()
        let time = SimTime()
        _ = try SimulatedIMUBoard.attach(to: bus, chip: "MPU9250", truth: { [unowned self] in self.truth($0) }, clock: { time.t })
        _ = try SimulatedIMUBoard.attach(to: bus, chip: "LSM6DSOX", truth: { [unowned self] in self.truth($0) }, clock: { time.t })
        _ = try SimulatedIMUBoard.attach(
            to: bus, chip: "BNO055", address: 0x29, truth: { [unowned self] in self.truth($0) }, clock: { time.t })
        let hits = IMUDrivers.probe(bus: bus).map { "\($0.identity.name)@\(String($0.address, radix: 16)):\(String($0.whoAmI, radix: 16))" }
        XCTAssertEqual(hits, ["MPU9250@68:71", "LSM6DSOX@6a:6c", "BNO055@29:a0", "LIS3MDL@1c:3d"], "the AK8963 hides until bypass")
    }

    func testMissingAK8963FallsBackWithAutoAndFailsWhenNamed() throws {
        let (bus, _, _) = try setUp("MPU9250")
        bus.detach(address: 0x0C)  // an "MPU-9250" whose magnetometer is dead
        let d = try IMUDrivers.open(bus: bus, chip: "MPU9250", sleep: noSleep)
        XCTAssertNil(d.magnetometerName)
        var s = IMUSample()
        _ = try d.read(into: &s)
        XCTAssertNil(s.mag)
        XCTAssertThrowsError(
            try IMUDrivers.open(bus: bus, chip: "MPU9250", settings: IMUDriverSettings(magnetometer: "AK8963"), sleep: noSleep)
        ) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .unexpectedResponse, "\(e)")
            XCTAssertTrue("\(e)".contains("AK8963"), "\(e)")
        }
    }

    func testMissingAK09916FallsBackWithAuto() throws {
        let (bus, board, time) = try setUp("ICM20948")
        let icm = try XCTUnwrap(board.imu as? SimulatedICM20948)
        icm.auxiliaryBusAnswers = false
        let d = try IMUDrivers.open(bus: bus, sleep: noSleep)
        XCTAssertNil(d.magnetometerName)
        time.t = 1
        var s = IMUSample()
        XCTAssertTrue(try d.read(into: &s))
        assertClose(s.accel, accel, IMUConvert.invensenseAccelScale(.g4), "accel")
        XCTAssertNil(s.mag)
    }

    /// The demo's motion through each 9-axis driver: a tilt-compensated compass heading from
    /// the driver's accel and magnetometer follows the true heading as the board turns — the
    /// whole chain, including each magnetometer die's axis alignment, is right.
    func testCompassHeadingFromEachNineAxisDriverFollowsTheMotion() throws {
        let motion = SimulatedMotion()
        for chip in ["MPU9250", "ICM20948", "LSM6DSOX", "ICM42688P", "BNO055"] {
            let bus = SimulatedI2CBus(recordsTrace: false)
            let time = SimTime()
            _ = try SimulatedIMUBoard.attach(to: bus, chip: chip, truth: { motion.truth(at: $0) }, clock: { time.t })
            let d = try IMUDrivers.open(bus: bus, chip: chip, sleep: noSleep)
            var s = IMUSample()
            for step in 1...36 {
                time.t = Double(step) * 1.013
                _ = try d.read(into: &s)
                XCTAssertTrue(s.magIsNew, "\(chip) at t=\(time.t)")
                let m = try XCTUnwrap(s.mag, chip), a = s.accel
                // Android's getRotationMatrix: east = m × a, north = a × east; heading of +y.
                let e = IMUVector(m.y * a.z - m.z * a.y, m.z * a.x - m.x * a.z, m.x * a.y - m.y * a.x)
                let n = IMUVector(a.y * e.z - a.z * e.y, a.z * e.x - a.x * e.z, a.x * e.y - a.y * e.x)
                var heading = atan2(e.y / e.norm, n.y / n.norm) * 180 / .pi
                if heading < 0 { heading += 360 }
                var diff = abs(heading - motion.truth(at: time.t).headingDeg)
                diff = min(diff, 360 - diff)
                XCTAssertLessThan(diff, 1, "\(chip) at t=\(time.t): \(heading)")
            }
        }
    }
}
