import OSHCore
@testable import OSHPlatform
import XCTest
import OSHSimulation

private final class SimClock { var t = 0.0 }

/// The LSM9DS1 driver over the simulated bus (SimulatedLSM9DS1 at 0x6A, its magnetometer die at
/// 0x1C, as on the Sense HAT): identification, reset, configuration per range and rate, samples
/// against the simulated truth within one count, both pacings, FIFO overrun, bus errors and the
/// magnetometer found, absent or refused as `[imu] magnetometer` says.
final class LSM9DS1DriverTests: XCTestCase {
    private let noSleep: (Double) -> Void = { _ in }
    private let gyro = IMUVector(0.5, -1.2, 2.0)  // rad/s
    private let accel = IMUVector(1.5, -3.0, 9.0)  // m/s²
    private let mag = IMUVector(20, -5, -40)  // µT

    /// gyro.z and accel.x follow a 5-s sawtooth in FIFO tests, so each sample shows its instant.
    private static func ramp(_ t: Double) -> Double { t.truncatingRemainder(dividingBy: 5) }

    private func setUp(
        address: UInt8? = nil, ramp: Bool = false
    ) throws -> (SimulatedI2CBus, SimulatedLSM9DS1, SimulatedLIS3MDL, SimClock) {
        let bus = SimulatedI2CBus(number: 1)
        let clock = SimClock()
        let (g, a, m) = (gyro, accel, mag)
        let truth: IMUTruthSource =
            ramp
            ? { t in SimulatedMotion.Truth(gyro: IMUVector(g.x, g.y, Self.ramp(t)), accel: IMUVector(Self.ramp(t), a.y, a.z), mag: m) }
            : { _ in SimulatedMotion.Truth(gyro: g, accel: a, mag: m) }
        let board = try SimulatedIMUBoard.attach(to: bus, chip: "LSM9DS1", address: address, truth: truth, clock: { clock.t })
        let ag = try XCTUnwrap(board.imu as? SimulatedLSM9DS1)
        let die = try XCTUnwrap(board.magnetometer as? SimulatedLIS3MDL)
        return (bus, ag, die, clock)
    }

    private func assertClose(
        _ a: IMUVector?, _ b: IMUVector, _ lsb: Double, _ what: String, file: StaticString = #filePath, line: UInt = #line
    ) {
        guard let a else { return XCTFail("\(what): nil", file: file, line: line) }
        XCTAssertEqual(a.x, b.x, accuracy: lsb, "\(what).x", file: file, line: line)
        XCTAssertEqual(a.y, b.y, accuracy: lsb, "\(what).y", file: file, line: line)
        XCTAssertEqual(a.z, b.z, accuracy: lsb, "\(what).z", file: file, line: line)
    }

    private func writes(_ chip: RegisterMapDevice) -> [[UInt8]] { chip.writes.map { [$0.register, $0.value] } }

    // MARK: identify, reset, configure, read

    func testConfiguresEachRangeAndRateAndReadsTheTruth() throws {
        let (bus, ag, die, clock) = try setUp()
        // (accel, gyro, magnetometer, asked rate, ODR_G code, rate, accel anti-aliasing BW_XL code, its Hz)
        let cases: [(AccelRange, GyroRange, LIS3MDLRange, Double, UInt8, Double, UInt8, Double)] = [
            (.g4, .dps500, .gauss4, 100, 3, 119, 3, 50),
            (.g16, .dps2000, .gauss12, 50, 2, 59.5, 3, 50),
            (.g2, .dps250, .gauss16, 200, 4, 238, 2, 105),
            (.g8, .dps1000, .gauss8, 952, 6, 952, 0, 408),
        ]
        for (i, (a, g, m, asked, code, rate, bw, bwHz)) in cases.enumerated() {
            ag.clearWrites(); die.clearWrites()
            let d = try IMUDrivers.open(
                bus: bus, chip: "lsm-9ds1",
                settings: IMUDriverSettings(accelRange: a, gyroRange: g, rateHz: asked, magnetometerRange: m),
                sleep: noSleep)
            let lsm = try XCTUnwrap(d as? LSM9DS1Driver)
            XCTAssertEqual(d.identity.name, "LSM9DS1")
            XCTAssertEqual(d.address, 0x6A)
            XCTAssertEqual(d.whoAmI, 0x68)
            XCTAssertEqual(d.magnetometerName, "LSM9DS1", "the die's own name: LSM9DS1_Magnetometer_data")
            XCTAssertEqual(lsm.magnetometerAddress, 0x1C)
            XCTAssertEqual(lsm.rateHz, rate)
            XCTAssertNil(d.fifo)
            XCTAssertEqual(ag.resets, i + 1, "SW_RESET on every open")
            XCTAssertEqual(die.resets, i + 1)
            XCTAssertEqual(
                writes(ag),
                [
                    [0x22, 0x05], [0x22, 0x44], [0x10, code << 5 | g.lsm9ds1Code << 3],
                    [0x20, code << 5 | a.lsm9ds1Code << 3 | 0x04 | bw],
                ], "\(a) \(g) \(asked) Hz")
            XCTAssertEqual(writes(die), [[0x21, 0x04], [0x20, 0x7C], [0x21, m.code << 5], [0x23, 0x0C], [0x24, 0x40], [0x22, 0x00]])
            XCTAssertEqual(ag.rate, rate)
            XCTAssertEqual(ag.accelRange, a)
            XCTAssertEqual(ag.accelBandwidth, bwHz)
            XCTAssertEqual(die.rate, 80)
            XCTAssertEqual(die.range, m)

            clock.t += 0.5
            var s = IMUSample()
            XCTAssertTrue(try d.read(into: &s))
            assertClose(s.accel, accel, IMUConvert.lsm9ds1AccelScale(a), "accel \(a)")
            assertClose(s.gyro, gyro, IMUConvert.lsm9ds1GyroScale(g), "gyro \(g)")
            XCTAssertTrue(s.magIsNew)
            assertClose(s.mag, mag, IMUConvert.lsm9ds1MagScale(m), "mag \(m)")
            XCTAssertEqual(s.temperature ?? 0, 25, accuracy: 1.0 / 16)
        }
    }

    func testRegisterPathTransactionsAndDataReady() throws {
        let (bus, _, _, clock) = try setUp()
        let d = try IMUDrivers.open(bus: bus, chip: "LSM9DS1", sleep: noSleep)
        var s = IMUSample()
        clock.t = 1
        bus.clearTrace()
        XCTAssertTrue(try d.read(into: &s))
        // OUT_TEMP…OUT_Z_H_G (9 bytes), OUT_X_L_XL…OUT_Z_H_XL (6), the die's STATUS_REG_M…OUT_Z_H_M with SUB(7).
        XCTAssertEqual(bus.trace.map { "\($0.address):\($0.written):\($0.readCount)" }, ["106:[21]:9", "106:[40]:6", "28:[167]:7"])
        XCTAssertFalse(try d.read(into: &s), "same instant: STATUS_REG says nothing new")
        XCTAssertFalse(s.magIsNew)
        XCTAssertNotNil(s.mag, "the last field is kept")
        clock.t += 0.01  // more than 1/119 s
        XCTAssertTrue(try d.read(into: &s))
    }

    func testTheDieReportsXMirroredAndTheDriverPutsItBack() throws {
        let (bus, _, _, clock) = try setUp()
        let d = try IMUDrivers.open(bus: bus, chip: "LSM9DS1", sleep: noSleep)
        clock.t = 2
        var s = IMUSample()
        _ = try d.read(into: &s)
        assertClose(s.mag, mag, 0.014, "mag in the accel/gyro frame")
        clock.t = 3
        let raw = try bus.readBlock(0x1C, 0xA8, count: 6)
        let x = Int16(bitPattern: UInt16(raw[1]) << 8 | UInt16(raw[0])), y = Int16(bitPattern: UInt16(raw[3]) << 8 | UInt16(raw[2]))
        XCTAssertEqual(Double(x) * 0.014, -mag.x, accuracy: 0.014, "the die's X points the other way")
        XCTAssertEqual(Double(y) * 0.014, mag.y, accuracy: 0.014)
        // Without SUB(7) the die does not auto-increment: the same register comes back.
        let block = try bus.readBlock(0x1C, 0x28, count: 4)
        XCTAssertEqual(block[0], block[2])
        XCTAssertEqual(block[1], block[3])
    }

    func testRollsOverFromTheGyroToTheAccelerometerAndBack() throws {
        let (bus, _, _, clock) = try setUp()
        _ = try IMUDrivers.open(bus: bus, chip: "LSM9DS1", sleep: noSleep)
        clock.t = 1
        // 24 bytes from OUT_X_L_G: gyro, accel, gyro, accel (the model's burst rollover).
        let b = try bus.readBlock(0x6A, 0x18, count: 24)
        XCTAssertEqual(Array(b[0..<12]), Array(b[12..<24]))
        let ax = Int16(bitPattern: UInt16(b[7]) << 8 | UInt16(b[6]))
        XCTAssertEqual(Double(ax) * IMUConvert.lsm9ds1AccelScale(.g4), accel.x, accuracy: IMUConvert.lsm9ds1AccelScale(.g4))
    }

    // MARK: identification and failures

    func testWrongIDAndTheChipsThatShareItsAddresses() throws {
        let bus = SimulatedI2CBus()
        let clock = SimClock()
        _ = try SimulatedIMUBoard.attach(
            to: bus, chip: "LSM6DSOX", truth: { _ in SimulatedMotion.Truth(gyro: .zero, accel: .zero, mag: .zero) },
            clock: { clock.t })
        XCTAssertThrowsError(try IMUDrivers.open(bus: bus, chip: "LSM9DS1", sleep: noSleep)) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .unexpectedResponse)
            XCTAssertTrue("\(e)".contains("register 0x0F reads 0x6C, expected 0x68 — that is an LSM6DSOX"), "\(e)")
        }
        let (other, _, _, _) = try setUp()
        XCTAssertThrowsError(try IMUDrivers.open(bus: other, chip: "LSM6DSOX", sleep: noSleep)) { e in
            XCTAssertTrue("\(e)".contains("reads 0x68, expected 0x6C — that is an LSM9DS1"), "\(e)")
        }
        // An MPU-6050's 0x68 lives at register 0x75: a chip at 0x6A answering 0x68 there is no LSM9DS1.
        let mpuLike = SimulatedI2CBus()
        mpuLike.attach(RegisterMapDevice(registers: [0x75: 0x68]), at: 0x6A)
        XCTAssertThrowsError(try IMUDrivers.open(bus: mpuLike, chip: "LSM9DS1", sleep: noSleep)) { e in
            XCTAssertTrue("\(e)".contains("register 0x0F reads 0x00, expected 0x68"), "\(e)")
        }
        // Another chip taking the address after open: reopen says what it read.
        let (b2, _, _, _) = try setUp()
        let d = try IMUDrivers.open(bus: b2, chip: "LSM9DS1", sleep: noSleep)
        b2.attach(RegisterMapDevice(registers: [0x0F: 0x6C]), at: 0x6A)
        XCTAssertThrowsError(try d.reopen()) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .unexpectedResponse)
            XCTAssertTrue("\(e)".contains("WHO_AM_I (0x0F) reads 0x6C, expected 0x68"), "\(e)")
        }
    }

    func testAResetThatNeverCompletesIsAnError() throws {
        let bus = SimulatedI2CBus()
        bus.attach(RegisterMapDevice(registers: [0x0F: 0x68]), at: 0x6A)  // SW_RESET stays set in plain memory
        XCTAssertThrowsError(try IMUDrivers.open(bus: bus, chip: "LSM9DS1", sleep: noSleep)) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .unexpectedResponse)
            XCTAssertTrue("\(e)".contains("software reset did not complete"), "\(e)")
            XCTAssertTrue("\(e)".contains("power-cycle"), "\(e)")
        }
    }

    func testAutoFindsItNotAnLSM6DSOXAndTheOtherStrap() throws {
        let (bus, _, _, _) = try setUp()
        XCTAssertEqual(try IMUDrivers.open(bus: bus, chip: "auto", sleep: noSleep).identity.name, "LSM9DS1")
        XCTAssertEqual(
            IMUDrivers.probe(bus: bus).map { "\($0.identity.name)@\(String($0.address, radix: 16)):\(String($0.whoAmI, radix: 16))" },
            ["LSM9DS1@6a:68", "LIS3MDL@1c:3d"], "the die answers as a LIS3MDL")
        let (b6b, _, _, _) = try setUp(address: 0x6B)
        let d = try XCTUnwrap(try IMUDrivers.open(bus: b6b, sleep: noSleep) as? LSM9DS1Driver)
        XCTAssertEqual(d.address, 0x6B)
        XCTAssertEqual(d.magnetometerAddress, 0x1E)
        // An LSM6DSOX alone is still an LSM6DSOX.
        let dsox = SimulatedI2CBus()
        _ = try SimulatedIMUBoard.attach(
            to: dsox, chip: "LSM6DSOX", truth: { _ in SimulatedMotion.Truth(gyro: .zero, accel: .zero, mag: .zero) },
            clock: { 0 })
        XCTAssertEqual(try IMUDrivers.open(bus: dsox, sleep: noSleep).identity.name, "LSM6DSOX")
    }

    func testMagnetometerAbsentAsTheConfigSays() throws {
        let (bus, _, _, clock) = try setUp()
        bus.detach(address: 0x1C)
        // auto: the IMU runs without one.
        let d = try IMUDrivers.open(bus: bus, chip: "LSM9DS1", sleep: noSleep)
        XCTAssertNil(d.magnetometerName)
        clock.t = 1
        var s = IMUSample()
        XCTAssertTrue(try d.read(into: &s))
        XCTAssertNil(s.mag)
        assertClose(s.accel, accel, IMUConvert.lsm9ds1AccelScale(.g4), "accel")
        // Named: the IMU is there, so not "absent", but an error naming what is missing and what to do.
        XCTAssertThrowsError(
            try IMUDrivers.open(
                bus: bus, chip: "LSM9DS1", settings: IMUDriverSettings(magnetometer: "LIS3MDL"),
                sleep: noSleep)
        ) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .unexpectedResponse)
            XCTAssertFalse((e as? I2CError)?.isAbsent ?? true)
            XCTAssertTrue("\(e)".contains("LSM9DS1 magnetometer not found"), "\(e)")
            XCTAssertTrue("\(e)".contains("0x1C/0x1E"), "\(e)")
            XCTAssertTrue("\(e)".contains("set the magnetometer to auto or none"), "\(e)")
        }
        // none: not looked for at all.
        let (b2, _, _, _) = try setUp()
        b2.clearTrace()
        let n = try IMUDrivers.open(bus: b2, chip: "LSM9DS1", settings: IMUDriverSettings(magnetometer: "none"), sleep: noSleep)
        XCTAssertNil(n.magnetometerName)
        XCTAssertFalse(b2.trace.contains { $0.address == 0x1C || $0.address == 0x1E })
        // An address given: only that one is tried.
        let (b3, _, _, _) = try setUp()
        let w = try IMUDrivers.open(bus: b3, chip: "LSM9DS1", settings: IMUDriverSettings(magnetometerAddress: 0x1E), sleep: noSleep)
        XCTAssertNil(w.magnetometerName, "nothing at 0x1E")
    }

    func testBusErrorsAreReportedAndReopenRecovers() throws {
        let (bus, ag, _, clock) = try setUp()
        bus.inject(.nack, at: 0x6A)
        XCTAssertThrowsError(try IMUDrivers.open(bus: bus, chip: "LSM9DS1", sleep: noSleep)) { e in
            XCTAssertTrue((e as? I2CError)?.isAbsent == true, "\(e)")
        }
        bus.clearFaults(at: 0x6A)
        let d = try IMUDrivers.open(bus: bus, chip: "LSM9DS1", sleep: noSleep)
        var s = IMUSample()
        bus.inject(.ioError, at: 0x6A, times: 1)
        XCTAssertThrowsError(try d.read(into: &s)) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .busFault, "\(e)")
            XCTAssertEqual((e as? I2CError)?.address, 0x6A)
        }
        bus.inject(.ioError, at: 0x1C, times: 1)
        XCTAssertThrowsError(try d.read(into: &s)) { e in
            XCTAssertEqual((e as? I2CError)?.address, 0x1C, "the die's failure names its own address: \(e)")
        }
        let before = ag.resets
        try d.reopen()
        XCTAssertEqual(ag.resets, before + 1)
        clock.t = 4
        XCTAssertTrue(try d.read(into: &s))
        assertClose(s.gyro, gyro, IMUConvert.lsm9ds1GyroScale(.dps500), "gyro after reopen")
    }

    // MARK: FIFO

    private func openFIFO(
        _ a: AccelRange = .g4, _ g: GyroRange = .dps500
    ) throws -> (SimulatedI2CBus, SimulatedLSM9DS1, SimClock, IMUDriver) {
        let (bus, ag, _, clock) = try setUp(ramp: true)
        clock.t = 3
        let d = try IMUDrivers.open(
            bus: bus, chip: "LSM9DS1", settings: IMUDriverSettings(accelRange: a, gyroRange: g, fifo: true), sleep: noSleep)
        return (bus, ag, clock, d)
    }

    func testFIFOConfigurationDecodingAndTransfers() throws {
        for (a, g) in [(AccelRange.g4, GyroRange.dps500), (.g16, .dps2000)] {
            let (bus, ag, clock, d) = try openFIFO(a, g)
            XCTAssertEqual(
                Array(writes(ag).suffix(3)), [[0x23, 0x02], [0x2E, 0x00], [0x2E, 0xC0]], "FIFO_EN, bypass (empties), continuous")
            XCTAssertEqual(d.fifo, IMUFifoLayout(capacityBytes: 384, frameBytes: 12, rateHz: 119))
            XCTAssertEqual(ag.fifoMode, 0x06)
            let start = (3 * 119.0).rounded(.down)
            clock.t = 3.2
            var burst: [IMUSample] = []
            bus.clearTrace()
            XCTAssertEqual(try d.readFIFO(into: &burst), IMUFifoRead())
            let slots = Int((3.2 * 119).rounded(.down) - start)
            XCTAssertEqual(burst.count, slots - 1, "the first slot after the FIFO starts is discarded")
            // FIFO_SRC, then whole slots from OUT_X_L_G, at most 10 (120 bytes) a transfer, then the die once.
            XCTAssertEqual(
                bus.trace.map { "\($0.address):\($0.written):\($0.readCount)" },
                ["106:[47]:1", "106:[24]:120", "106:[24]:120", "106:[24]:\((slots - 20) * 12)", "28:[167]:7"])
            XCTAssertEqual(ag.slotsRead, slots)
            let (la, lg) = (IMUConvert.lsm9ds1AccelScale(a), IMUConvert.lsm9ds1GyroScale(g))
            for (k, s) in burst.enumerated() {
                let t = (start + 2 + Double(k)) / 119
                XCTAssertEqual(s.gyro.z, Self.ramp(t), accuracy: lg, "\(g) sample \(k)")
                XCTAssertEqual(s.accel.x, Self.ramp(t), accuracy: la, "\(a) sample \(k)")
                XCTAssertEqual(s.gyro.y, gyro.y, accuracy: lg)
                XCTAssertEqual(s.accel.z, accel.z, accuracy: la)
            }
            XCTAssertEqual(burst.first?.magIsNew, true, "the first burst's first sample carries the field (the filter starts there)")
            XCTAssertEqual(burst.last?.magIsNew, true)
            assertClose(burst.last?.mag, mag, IMUConvert.lsm9ds1MagScale(.gauss4), "mag")
            // The next burst: nothing discarded, the samples follow on.
            clock.t = 3.3
            XCTAssertEqual(try d.readFIFO(into: &burst), IMUFifoRead())
            XCTAssertEqual(burst.count, Int((3.3 * 119).rounded(.down) - (3.2 * 119).rounded(.down)))
            XCTAssertEqual(burst.first?.gyro.z ?? 0, Self.ramp(((3.2 * 119).rounded(.down) + 1) / 119), accuracy: lg)
            XCTAssertEqual(burst.filter(\.magIsNew).count, 1)
            clock.t += 0.001
            XCTAssertEqual(try d.readFIFO(into: &burst), IMUFifoRead())
            XCTAssertTrue(burst.isEmpty, "drained")
        }
    }

    func testFIFOOverrunIsCountedAndReadingGoesOn() throws {
        let (_, ag, clock, d) = try openFIFO()
        var burst: [IMUSample] = []
        clock.t += 120  // far past 32 slots
        let r = try d.readFIFO(into: &burst)
        XCTAssertTrue(r.overflowed)
        XCTAssertEqual(r.lost, 33, "the 32 dropped with the reset and at least the one overwritten")
        XCTAssertTrue(burst.isEmpty)
        XCTAssertEqual(Array(writes(ag).suffix(2)), [[0x2E, 0x00], [0x2E, 0xC0]], "bypass empties it, continuous starts it again")
        let resetAt = (clock.t * 119).rounded(.down)
        clock.t += 0.1
        XCTAssertEqual(try d.readFIFO(into: &burst), IMUFifoRead())
        XCTAssertEqual(burst.count, Int((clock.t * 119).rounded(.down) - resetAt) - 1)
        for (k, s) in burst.enumerated() {
            XCTAssertEqual(
                s.gyro.z, Self.ramp((resetAt + 2 + Double(k)) / 119), accuracy: IMUConvert.lsm9ds1GyroScale(.dps500), "sample \(k)")
            XCTAssertEqual(s.accel.z, accel.z, accuracy: IMUConvert.lsm9ds1AccelScale(.g4))
        }
    }

    func testFIFOBusErrorThenReopen() throws {
        let (bus, _, clock, d) = try openFIFO()
        var burst: [IMUSample] = []
        clock.t += 0.1
        bus.inject(.ioError, at: 0x6A, times: 1)
        XCTAssertThrowsError(try d.readFIFO(into: &burst)) { e in XCTAssertEqual((e as? I2CError)?.kind, .busFault, "\(e)") }
        try d.reopen()
        clock.t += 0.1
        XCTAssertEqual(try d.readFIFO(into: &burst), IMUFifoRead())
        XCTAssertEqual(Double(burst.count), 0.1 * 119 - 1, accuracy: 1.01)
        XCTAssertEqual(burst.last?.accel.z ?? 0, accel.z, accuracy: IMUConvert.lsm9ds1AccelScale(.g4))
    }

    func testNoFIFOUnlessConfigured() throws {
        let (bus, _, _, _) = try setUp()
        let d = try IMUDrivers.open(bus: bus, chip: "LSM9DS1", sleep: noSleep)
        var burst: [IMUSample] = []
        XCTAssertThrowsError(try d.readFIFO(into: &burst)) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .unsupported)
            XCTAssertTrue((e as? I2CError)?.operation.contains("LSM9DS1: reading the FIFO, which was not configured") == true, "\(e)")
        }
    }

    func testMagnetometerModels() {
        XCTAssertEqual(SeparateMagnetometer.Model.lsm9ds1.name, "LSM9DS1")
        XCTAssertEqual(SeparateMagnetometer.Model.lis3mdl.name, "LIS3MDL")
        XCTAssertEqual(SeparateMagnetometer.Model.lsm9ds1.scale(.gauss8), 0.029, accuracy: 1e-15)
        XCTAssertEqual(SeparateMagnetometer.Model.lis3mdl.scale(.gauss8), IMUConvert.lis3mdlScale(.gauss8))
        XCTAssertEqual(SeparateMagnetometer.Model.lsm9ds1.toHost(IMUVector(1, 2, 3)), IMUVector(-1, 2, 3))
        XCTAssertEqual(SeparateMagnetometer.Model.lis3mdl.toHost(IMUVector(1, 2, 3)), IMUVector(1, 2, 3))
        XCTAssertEqual(ChipTable.known.builtInMagnetometer("lsm9ds1"), "LSM9DS1")
        XCTAssertEqual(
            IMUDrivers.identities.map(\.name).firstIndex(of: "LSM9DS1"),
            IMUDrivers.identities.map(\.name).firstIndex(of: "LSM6DSOX").map { $0 + 1 }, "probe order: after the LSM6DSOX")
    }
}
