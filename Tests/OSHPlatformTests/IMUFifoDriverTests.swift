import OSHCore
@testable import OSHPlatform
import XCTest
import OSHSimulation

private final class FifoTime { var t = 0.0 }

/// FIFO bursts through each FIFO driver on the simulated chips: configuration, decoding
/// (byte order and scale as the register path), one magnetometer reading per burst, splitting
/// into transfers, overflow and partial frames.
final class IMUFifoDriverTests: XCTestCase {
    private let noSleep: (Double) -> Void = { _ in }
    private static let chips = ["MPU6050", "MPU6500", "MPU9250", "ICM20948", "LSM6DSOX", "ICM42688P"]

    /// gyro.z and accel.x move with time (a 5-s sawtooth, within every range), so each sample
    /// shows which instant it was made at.
    private static func ramp(_ t: Double) -> Double { t.truncatingRemainder(dividingBy: 5) }
    private func truth(_ t: Double) -> SimulatedMotion.Truth {
        SimulatedMotion.Truth(
            gyro: IMUVector(0.5, -1.2, Self.ramp(t)), accel: IMUVector(Self.ramp(t), -3.0, 9.0), mag: IMUVector(20, -5, -40))
    }

    private func open(
        _ chip: String, accel: AccelRange = .g4, gyro: GyroRange = .dps500
    )
        throws -> (SimulatedI2CBus, SimulatedIMUBoard, FifoTime, IMUDriver)
    {
        let bus = SimulatedI2CBus(number: 1)
        let time = FifoTime()
        time.t = 3.0
        let board = try SimulatedIMUBoard.attach(to: bus, chip: chip, truth: { [unowned self] in self.truth($0) }, clock: { time.t })
        let d = try IMUDrivers.open(
            bus: bus, chip: chip, settings: IMUDriverSettings(accelRange: accel, gyroRange: gyro, fifo: true),
            sleep: noSleep)
        return (bus, board, time, d)
    }

    private func scales(_ chip: String, _ a: AccelRange, _ g: GyroRange) -> (Double, Double) {
        chip == "LSM6DSOX"
            ? (IMUConvert.lsm6dsoxAccelScale(a), IMUConvert.lsm6dsoxGyroScale(g))
            : (IMUConvert.invensenseAccelScale(a), IMUConvert.invensenseGyroScale(g))
    }

    func testEachChipDecodesItsFIFOLikeItsRegisters() throws {
        for chip in Self.chips {
            for (a, g) in [(AccelRange.g4, GyroRange.dps500), (.g16, .dps2000)] {
                let (_, _, time, d) = try open(chip, accel: a, gyro: g)
                let f = try XCTUnwrap(d.fifo, chip)
                var burst: [IMUSample] = []
                time.t += 0.2
                let r = try d.readFIFO(into: &burst)
                XCTAssertEqual(r, IMUFifoRead(), chip)
                let expected = Int((0.2 * f.rateHz).rounded(.down))
                XCTAssertEqual(Double(burst.count), Double(expected), accuracy: 1, "\(chip): samples in 0.2 s at \(f.rateHz) Hz")
                let (la, lg) = scales(chip, a, g)
                // Sample k of the burst was made at the k-th sample instant after the FIFO started.
                let first = (3.0 * f.rateHz).rounded(.down) + 1
                for (k, s) in burst.enumerated() {
                    let tk = (first + Double(k)) / f.rateHz
                    XCTAssertEqual(s.gyro.z, Self.ramp(tk), accuracy: lg, "\(chip) \(g) sample \(k)")
                    XCTAssertEqual(s.accel.x, Self.ramp(tk), accuracy: la, "\(chip) \(a) sample \(k)")
                    XCTAssertEqual(s.accel.z, 9, accuracy: la)
                    XCTAssertEqual(s.gyro.y, -1.2, accuracy: lg)
                }
                // The register path reads the same scale.
                var reg = IMUSample()
                _ = try d.read(into: &reg)
                XCTAssertEqual(reg.accel.z, burst.last?.accel.z ?? 0, accuracy: la, chip)
                if d.magnetometerName != nil {
                    XCTAssertEqual(burst.last?.magIsNew, true, "\(chip): the burst's magnetometer reading goes on its last sample")
                    XCTAssertEqual(burst.first?.magIsNew, true, "\(chip): and on the first of the first burst (the filter starts there)")
                    XCTAssertEqual(burst.dropFirst().dropLast().filter(\.magIsNew).count, 0, chip)
                    XCTAssertEqual(try XCTUnwrap(burst.last?.mag, chip).x, 20, accuracy: 0.2, chip)
                    time.t += 0.1
                    _ = try d.readFIFO(into: &burst)
                    XCTAssertEqual(burst.filter(\.magIsNew).count, 1, "\(chip): later bursts, on the last sample only")
                    XCTAssertEqual(burst.last?.magIsNew, true, chip)
                }
                time.t += 0.001
                XCTAssertEqual(try d.readFIFO(into: &burst), IMUFifoRead())
                XCTAssertTrue(burst.isEmpty, "\(chip): drained")
            }
        }
    }

    func testBurstTransactionsAreCountPlusTransfersOfAtMost128Bytes() throws {
        let (bus, _, time, d) = try open("MPU9250")
        var burst: [IMUSample] = []
        bus.clearTrace()
        time.t += 0.21
        _ = try d.readFIFO(into: &burst)
        XCTAssertEqual(burst.count, 21)
        let mpu = bus.trace.filter { $0.address == 0x68 }
        XCTAssertEqual(mpu.map(\.readCount), [2, 120, 120, 12], "FIFO_COUNT, then 10 + 10 + 1 frames")
        XCTAssertEqual(mpu.dropFirst().map { $0.written }, [[0x74], [0x74], [0x74]])
        XCTAssertEqual(bus.trace.filter { $0.address == 0x0C }.count, 1, "one AK8963 read per burst")
    }

    func testConfigurationWrites() throws {
        let (_, board, _, _) = try open("MPU9250")
        let mpu = try XCTUnwrap(board.imu as? SimulatedMPU)
        let w = mpu.writes.map { [$0.register, $0.value] }
        XCTAssertTrue(w.contains([0x1A, 0x43]), "FIFO_MODE (stop when full) | DLPF: \(w)")
        XCTAssertEqual(Array(w.suffix(4)), [[0x23, 0x78], [0x6A, 0x00], [0x6A, 0x04], [0x6A, 0x40]])
        let (_, b6050, _, _) = try open("MPU6050")
        XCTAssertTrue(b6050.imu.writes.contains { $0.register == 0x1A && $0.value == 0x03 }, "no FIFO_MODE bit on the 6050")
        let (_, icmBoard, _, icmDriver) = try open("ICM20948")
        let icm = try XCTUnwrap(icmBoard.imu as? SimulatedICM20948)
        let iw = icm.bankedWrites.map { [UInt8($0.bank), $0.register, $0.value] }
        for e: [UInt8] in [[0, 0x69, 0x01], [0, 0x67, 0x1E], [0, 0x03, 0x60], [0, 0x68, 0x1F], [0, 0x68, 0x00]] {
            XCTAssertTrue(iw.contains(e), "missing \(e)")
        }
        XCTAssertEqual(icmDriver.fifo?.capacityBytes, 512)
        let (_, lsmBoard, _, lsmDriver) = try open("LSM6DSOX")
        let lw = lsmBoard.imu.writes.map { [$0.register, $0.value] }
        XCTAssertEqual(Array(lw.suffix(3)), [[0x09, 0x44], [0x0A, 0x00], [0x0A, 0x06]])
        XCTAssertEqual(lsmDriver.fifo?.rateHz, 104)
    }

    func testOverflowResetsCountsAndReadingGoesOn() throws {
        for chip in Self.chips {
            let (_, _, time, d) = try open(chip)
            let f = try XCTUnwrap(d.fifo)
            var burst: [IMUSample] = []
            time.t += 120  // far past full
            let r = try d.readFIFO(into: &burst)
            XCTAssertTrue(r.overflowed, chip)
            XCTAssertGreaterThan(r.lost, 0, chip)
            XCTAssertTrue(burst.isEmpty, chip)
            // After the reset: aligned frames from the next sample on.
            let resetAt = time.t
            time.t += 0.1
            XCTAssertEqual(try d.readFIFO(into: &burst), IMUFifoRead(), chip)
            XCTAssertEqual(Double(burst.count), (0.1 * f.rateHz).rounded(.down), accuracy: 1, chip)
            let first = (resetAt * f.rateHz).rounded(.down) + 1
            let (la, lg) = scales(chip, .g4, .dps500)
            for (k, s) in burst.enumerated() {
                XCTAssertEqual(s.gyro.z, Self.ramp((first + Double(k)) / f.rateHz), accuracy: lg, "\(chip) after overflow, sample \(k)")
                XCTAssertEqual(s.accel.z, 9, accuracy: la, chip)
            }
        }
    }

    func testOnlyWholeFramesAreRead() throws {
        // An MPU-9250 on plain memory (as i2c-stub holds one): FIFO_COUNT says 3 frames and 5 bytes.
        let bus = SimulatedI2CBus()
        let chip = RegisterMapDevice(registers: [0x75: 0x71, 0x72: 0x00, 0x73: 41])
        bus.attach(chip, at: 0x68)
        let d = try IMUDrivers.open(
            bus: bus, chip: "MPU9250", settings: IMUDriverSettings(magnetometer: "none", fifo: true), sleep: noSleep)
        var burst: [IMUSample] = []
        bus.clearTrace()
        _ = try d.readFIFO(into: &burst)
        XCTAssertEqual(burst.count, 3)
        XCTAssertEqual(bus.trace.map(\.readCount), [2, 36], "the partial frame stays for the next read")
    }

    func testBNO055HasNoFIFOAndKeepsRegisterPolling() throws {
        let (_, _, _, d) = try open("BNO055")
        XCTAssertNil(d.fifo)
        var burst: [IMUSample] = []
        XCTAssertThrowsError(try d.readFIFO(into: &burst))
        var s = IMUSample()
        _ = try d.read(into: &s)
        XCTAssertNotNil(s.quaternion)
    }
}
