import OSHCore
@testable import OSHPlatform
import XCTest
import OSHSimulation

private final class ICMTime { var t = 0.0 }

/// The ICM-42688-P driver over the simulated bus, with a LIS3MDL beside it: identification (and
/// not mistaking an MPU for it), reset, configuration per range and rate, samples against the
/// simulated truth within one count, both pacings, FIFO overflow and recovery, bus errors.
final class ICM42688DriverTests: XCTestCase {
    private let noSleep: (Double) -> Void = { _ in }
    private static func ramp(_ t: Double) -> Double { t.truncatingRemainder(dividingBy: 5) }
    private let mag = IMUVector(20, -5, -40)

    /// gyro.z and accel.x follow a 5-s sawtooth, so each FIFO sample shows when it was made
    /// (gyro.z up to 4 rad/s = 229 °/s: within ±250 dps, which saturates at 250.1 °/s).
    private func truth(_ t: Double) -> SimulatedMotion.Truth {
        SimulatedMotion.Truth(gyro: IMUVector(0.5, -1.2, 0.8 * Self.ramp(t)), accel: IMUVector(Self.ramp(t), -3.0, 9.0), mag: mag)
    }

    private func board(
        at address: UInt8? = nil, start: Double = 3
    )
        throws -> (SimulatedI2CBus, SimulatedICM42688, SimulatedLIS3MDL, ICMTime)
    {
        let bus = SimulatedI2CBus(number: 1)
        let time = ICMTime()
        time.t = start
        let b = try SimulatedIMUBoard.attach(
            to: bus, chip: "ICM42688P", address: address,
            truth: { [unowned self] in self.truth($0) }, clock: { time.t })
        return (bus, try XCTUnwrap(b.imu as? SimulatedICM42688), try XCTUnwrap(b.magnetometer as? SimulatedLIS3MDL), time)
    }

    private func writes(_ chip: RegisterMapDevice) -> [[UInt8]] { chip.writes.map { [$0.register, $0.value] } }

    private func assertClose(
        _ a: IMUVector?, _ b: IMUVector, _ lsb: Double, _ what: String, file: StaticString = #filePath, line: UInt = #line
    ) {
        guard let a else { return XCTFail("\(what): nil", file: file, line: line) }
        XCTAssertEqual(a.x, b.x, accuracy: lsb, "\(what).x", file: file, line: line)
        XCTAssertEqual(a.y, b.y, accuracy: lsb, "\(what).y", file: file, line: line)
        XCTAssertEqual(a.z, b.z, accuracy: lsb, "\(what).z", file: file, line: line)
    }

    func testTimerModeConfiguresEachRangeAndReadsTheTruth() throws {
        let (bus, icm, lis, time) = try board()
        var sleeps: [Double] = []
        // A sleep that lets simulated time pass, so the chip can check the datasheet's waits.
        let sleep: (Double) -> Void = {
            sleeps.append($0); time.t += $0
        }
        for (a, g) in [(AccelRange.g4, GyroRange.dps500), (.g16, .dps2000), (.g2, .dps250), (.g8, .dps1000)] {
            icm.clearWrites(); lis.clearWrites(); sleeps.removeAll()
            let d = try IMUDrivers.open(
                bus: bus, chip: "ICM-42688-P", settings: IMUDriverSettings(accelRange: a, gyroRange: g), sleep: sleep)
            XCTAssertEqual(d.identity.name, "ICM42688P")
            XCTAssertEqual(d.address, 0x68)
            XCTAssertEqual(d.whoAmI, 0x47)
            XCTAssertEqual(d.magnetometerName, "LIS3MDL")
            XCTAssertNil(d.fifo)
            // Reset; INTF_CONFIG0 big-endian + SPI off; FS | ODR 100 Hz (0x08); UI filter ODR/2; sensors on.
            XCTAssertEqual(
                writes(icm),
                [
                    [0x11, 0x01], [0x4C, 0x32], [0x4F, g.icm42688Code << 5 | 0x08],
                    [0x50, a.icm42688Code << 5 | 0x08], [0x52, 0x00], [0x4E, 0x0F],
                ])
            XCTAssertEqual(writes(lis), [[0x21, 0x04], [0x20, 0x7C], [0x21, 0x00], [0x23, 0x0C], [0x24, 0x40], [0x22, 0x00]])
            XCTAssertEqual(Array(sleeps.prefix(2)), [0.001, 0.06], "1 ms after the reset; 200 µs+ and the gyro start-up after PWR_MGMT0")
            XCTAssertEqual(icm.accessesDuringReset, 0)
            XCTAssertEqual(icm.writesDuringGyroStart, 0)
            XCTAssertEqual(icm.odr, 100)
            XCTAssertEqual(icm.accelRange, a)
            XCTAssertEqual(icm.gyroRange, g)
            time.t += 0.5
            var s = IMUSample()
            XCTAssertTrue(try d.read(into: &s))
            let tr = truth(time.t)
            assertClose(s.accel, tr.accel, IMUConvert.icm42688AccelScale(a), "accel \(a)")
            assertClose(s.gyro, tr.gyro, IMUConvert.icm42688GyroScale(g), "gyro \(g)")
            assertClose(s.mag, mag, IMUConvert.lis3mdlScale(.gauss4), "mag")
            XCTAssertTrue(s.magIsNew)
            XCTAssertEqual(s.temperature ?? 0, 25, accuracy: 1 / 132.48)
        }
        XCTAssertEqual(icm.resets, 4)
    }

    func testTimerReadIsOneTwelveByteBurstWithTheTemperatureOnceASecond() throws {
        let (bus, _, _, time) = try board()
        let d = try IMUDrivers.open(bus: bus, chip: "ICM42688P", settings: IMUDriverSettings(magnetometer: "none"), sleep: noSleep)
        var s = IMUSample()
        bus.clearTrace()
        for _ in 0..<101 {
            time.t += 0.01
            XCTAssertTrue(try d.read(into: &s))
        }
        let reads = bus.trace.map { "\($0.written):\($0.readCount)" }
        XCTAssertEqual(reads.filter { $0 == "[31]:12" }.count, 101, "ACCEL_DATA_X1 … GYRO_DATA_Z0 per sample")
        XCTAssertEqual(reads.filter { $0 == "[29]:2" }.count, 2, "TEMP_DATA on the first sample and 100 samples later")
        XCTAssertEqual(reads.count, 103)
        XCTAssertNil(s.mag)
    }

    func testRateChoosesTheODRAndTheFilterFollowsTheSampling() throws {
        // (asked rate, FIFO, GYRO/ACCEL_CONFIG0 ODR code, ODR, GYRO_ACCEL_CONFIG0)
        let cases: [(Double, Bool, UInt8, Double, UInt8)] = [
            (100, false, 0x08, 100, 0x00), (100, true, 0x08, 100, 0x00),
            // 60 Hz reads of a 100 Hz ODR: 400/16 = 25 Hz (code 5) is the widest under 30 Hz; the FIFO keeps all 100.
            (60, false, 0x08, 100, 0x55), (60, true, 0x08, 100, 0x00),
            (200, true, 0x07, 200, 0x00), (400, true, 0x0F, 500, 0x00), (1000, true, 0x06, 1000, 0x00),
            (5, false, 0x0B, 12.5, 0x00), (5000, true, 0x06, 1000, 0x00),
        ]
        for (rate, fifo, code, hz, filter) in cases {
            let (bus, icm, _, _) = try board()
            let d = try IMUDrivers.open(
                bus: bus, chip: "ICM42688P",
                settings: IMUDriverSettings(rateHz: rate, magnetometer: "none", fifo: fifo), sleep: noSleep)
            let w = writes(icm)
            XCTAssertTrue(w.contains([0x4F, 0x40 | code]), "\(rate) Hz: \(w)")
            XCTAssertTrue(w.contains([0x52, filter]), "\(rate) Hz fifo \(fifo): \(w)")
            XCTAssertEqual(icm.odr, hz)
            XCTAssertEqual((d as? ICM42688Driver)?.odrHz, hz)
            if fifo { XCTAssertEqual(d.fifo?.rateHz, hz) }
        }
    }

    func testFIFOPacketsAreTheTruthInOrderWithTheMagnetometerOncePerBurst() throws {
        let (bus, icm, _, time) = try board()
        let d = try IMUDrivers.open(bus: bus, chip: "ICM42688P", settings: IMUDriverSettings(fifo: true), sleep: noSleep)
        XCTAssertEqual(d.fifo, IMUFifoLayout(capacityBytes: 2048, frameBytes: 16, rateHz: 100))
        // Packet 3 with temperature, partial reads resumable; sensors on; then stream mode and a flush.
        XCTAssertEqual(Array(writes(icm).suffix(4)), [[0x5F, 0x47], [0x4E, 0x0F], [0x16, 0x40], [0x4B, 0x02]])
        var burst: [IMUSample] = []
        bus.clearTrace()
        time.t += 0.2
        XCTAssertEqual(try d.readFIFO(into: &burst), IMUFifoRead())
        XCTAssertEqual(burst.count, 20)
        let first = (3.0 * 100).rounded(.down) + 1
        for (k, s) in burst.enumerated() {
            let tk = (first + Double(k)) / 100
            XCTAssertEqual(s.gyro.z, 0.8 * Self.ramp(tk), accuracy: IMUConvert.icm42688GyroScale(.dps500), "sample \(k)")
            XCTAssertEqual(s.accel.x, Self.ramp(tk), accuracy: IMUConvert.icm42688AccelScale(.g4), "sample \(k)")
            XCTAssertEqual(s.accel.z, 9, accuracy: IMUConvert.icm42688AccelScale(.g4))
            XCTAssertEqual(s.temperature ?? 0, 25, accuracy: 0.5 / 2.07, "8-bit FIFO temperature")
        }
        // FIFO_COUNT, then 8 + 8 + 4 packets (128-byte transfers at most), then the LIS3MDL once.
        XCTAssertEqual(bus.trace.map(\.readCount), [2, 128, 128, 64, 7])
        XCTAssertEqual(bus.trace.dropFirst().prefix(3).map(\.written), [[0x30], [0x30], [0x30]])
        XCTAssertEqual(burst.last?.magIsNew, true)
        XCTAssertEqual(burst.first?.magIsNew, true, "the first burst's first sample too: the filter starts there")
        assertClose(burst.last?.mag, mag, IMUConvert.lis3mdlScale(.gauss4), "mag")
        time.t += 0.001
        XCTAssertEqual(try d.readFIFO(into: &burst), IMUFifoRead())
        XCTAssertTrue(burst.isEmpty, "drained")
    }

    func testTheFirstCountAfterAFlushReadsZeroAndTheDriverSpendsIt() throws {
        let (bus, _, _, time) = try board()
        _ = try IMUDrivers.open(bus: bus, chip: "ICM42688P", settings: IMUDriverSettings(fifo: true), sleep: noSleep)
        time.t += 0.1
        try bus.writeRegister(0x68, 0x4B, 0x02)
        time.t += 0.1
        XCTAssertEqual(try bus.readBlock(0x68, 0x2E, count: 2), [0, 0])
        XCTAssertEqual(try bus.readBlock(0x68, 0x2E, count: 2), [0, 160], "10 packets of 16 bytes, big-endian")
    }

    func testOverflowIsCountedResetAndReadingGoesOn() throws {
        let (bus, icm, _, time) = try board()
        let d = try IMUDrivers.open(bus: bus, chip: "ICM42688P", settings: IMUDriverSettings(fifo: true), sleep: noSleep)
        var burst: [IMUSample] = []
        time.t += 60
        let r = try d.readFIFO(into: &burst)
        XCTAssertTrue(r.overflowed)
        XCTAssertEqual(r.lost, 128, "the 128 packets a full 2 KB FIFO held, dropped with the flush")
        XCTAssertTrue(burst.isEmpty)
        XCTAssertGreaterThan(icm.fifo.overflowedSamples, 5000, "stream mode dropped the oldest packets meanwhile")
        XCTAssertEqual(icm.fifo.count, 0)
        let resetAt = time.t
        time.t += 0.1
        XCTAssertEqual(try d.readFIFO(into: &burst), IMUFifoRead())
        XCTAssertEqual(burst.count, 10)
        let first = (resetAt * 100).rounded(.down) + 1
        for (k, s) in burst.enumerated() {
            XCTAssertEqual(s.gyro.z, 0.8 * Self.ramp((first + Double(k)) / 100), accuracy: IMUConvert.icm42688GyroScale(.dps500))
        }
    }

    func testPacketsOutOfStepAreAnErrorAndTheFIFOIsFlushed() throws {
        let (bus, icm, _, time) = try board()
        let d = try IMUDrivers.open(bus: bus, chip: "ICM42688P", settings: IMUDriverSettings(fifo: true), sleep: noSleep)
        var burst: [IMUSample] = []
        time.t += 0.1
        _ = try bus.readBlock(0x68, 0x30, count: 1)  // someone else took a byte: headers are now data bytes
        XCTAssertThrowsError(try d.readFIFO(into: &burst)) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .unexpectedResponse)
            XCTAssertTrue("\(e)".contains("not a 16-bit accel+gyro packet"), "\(e)")
        }
        XCTAssertEqual(icm.fifo.count, 0, "flushed")
        time.t += 0.1
        XCTAssertEqual(try d.readFIFO(into: &burst), IMUFifoRead())
        XCTAssertEqual(burst.count, 10)
    }

    func testStartupSamplesAreInvalidAndSkipped() throws {
        // The chip gives -32768 for 25 ms after power-on. The driver's wait covers it when time passes…
        let (bus, icm, _, time) = try board()
        icm.startupSeconds = 0.025
        let d = try IMUDrivers.open(
            bus: bus, chip: "ICM42688P", settings: IMUDriverSettings(magnetometer: "none", fifo: true),
            sleep: { time.t += $0 })
        var burst: [IMUSample] = []
        time.t += 0.2
        _ = try d.readFIFO(into: &burst)
        XCTAssertEqual(burst.count, 20)
        XCTAssertEqual((d as? ICM42688Driver)?.invalidPackets, 0)
        // …and when it does not (a no-op sleep), those packets are skipped, not decoded as −16 g.
        let (bus2, icm2, _, time2) = try board()
        icm2.startupSeconds = 0.025
        let d2 = try IMUDrivers.open(bus: bus2, chip: "ICM42688P", settings: IMUDriverSettings(fifo: true), sleep: noSleep)
        time2.t += 0.2
        _ = try d2.readFIFO(into: &burst)
        XCTAssertEqual(burst.count, 18, "the packets made 10 and 20 ms after power-on are skipped")
        XCTAssertEqual((d2 as? ICM42688Driver)?.invalidPackets, 2)
        XCTAssertTrue(burst.allSatisfy { $0.accel.z > 8 })
        // The register path says "not ready" until the first sample.
        let (bus3, icm3, _, time3) = try board()
        icm3.startupSeconds = 0.025
        let d3 = try IMUDrivers.open(bus: bus3, chip: "ICM42688P", settings: IMUDriverSettings(magnetometer: "none"), sleep: noSleep)
        var s = IMUSample(accel: IMUVector(1, 2, 3))
        XCTAssertFalse(try d3.read(into: &s))
        XCTAssertEqual(s.accel, IMUVector(1, 2, 3), "kept, not overwritten with -32768")
        time3.t += 0.05
        XCTAssertTrue(try d3.read(into: &s))
    }

    func testAutoFindsItAtEitherAddressAndInAnotherBank() throws {
        for a: UInt8 in [0x68, 0x69] {
            let (bus, icm, _, _) = try board(at: a)
            if a == 0x69 { icm.selectBank(2) }  // left in bank 2 by another program
            let d = try IMUDrivers.open(bus: bus, chip: "auto", sleep: noSleep)
            XCTAssertEqual(d.identity.name, "ICM42688P")
            XCTAssertEqual(d.address, a)
            XCTAssertEqual(icm.bank, 0)
            XCTAssertEqual(IMUDrivers.probe(bus: bus).map { "\($0.identity.name)@\($0.address)" }, ["ICM42688P@\(a)", "LIS3MDL@28"])
        }
    }

    func testAnMPU6500IsNotTakenForIt() throws {
        let bus = SimulatedI2CBus()
        let time = ICMTime()
        let b = try SimulatedIMUBoard.attach(to: bus, chip: "MPU6500", truth: { [unowned self] in self.truth($0) }, clock: { time.t })
        let mpu = try XCTUnwrap(b.imu as? SimulatedMPU)
        XCTAssertEqual(try IMUDrivers.open(bus: bus, chip: "auto", sleep: noSleep).identity.name, "MPU6500")
        // Named, it is refused with what the chip is; the bank check's write to 0x76 is put back.
        mpu.registers[0x76] = 0x02
        mpu.clearWrites()
        XCTAssertThrowsError(try IMUDrivers.open(bus: bus, chip: "ICM42688P", sleep: noSleep)) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .unexpectedResponse)
            XCTAssertTrue("\(e)".contains("reads 0x70, expected 0x47 — that is an MPU6500"), "\(e)")
        }
        XCTAssertEqual(writes(mpu), [[0x76, 0x00], [0x76, 0x02]], "bank 0 tried, then put back")
        XCTAssertEqual(mpu.registers[0x76], 0x02)
    }

    func testAResetThatDoesNotCompleteIsAnError() {
        // Plain memory answering WHO_AM_I 0x47 (as i2c-stub would): no RESET_DONE after the reset.
        let bus = SimulatedI2CBus()
        bus.attach(RegisterMapDevice(registers: [0x75: 0x47]), at: 0x68)
        XCTAssertThrowsError(try IMUDrivers.open(bus: bus, chip: "ICM42688P", sleep: noSleep)) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .unexpectedResponse)
            XCTAssertTrue("\(e)".contains("soft reset did not complete"), "\(e)")
        }
    }

    func testBusErrorsAndAbsence() throws {
        let (bus, _, _, time) = try board()
        bus.inject(.nack, at: 0x68)
        XCTAssertThrowsError(try IMUDrivers.open(bus: bus, chip: "ICM42688P", sleep: noSleep)) { e in
            XCTAssertTrue((e as? I2CError)?.isAbsent == true, "\(e)")
        }
        bus.clearFaults(at: 0x68)
        let d = try IMUDrivers.open(bus: bus, chip: "ICM42688P", settings: IMUDriverSettings(fifo: true), sleep: noSleep)
        var s = IMUSample()
        var burst: [IMUSample] = []
        bus.inject(.ioError, at: 0x68, times: 1)
        XCTAssertThrowsError(try d.read(into: &s)) { XCTAssertEqual(($0 as? I2CError)?.kind, .busFault, "\($0)") }
        bus.inject(.ioError, at: 0x68, times: 1)
        XCTAssertThrowsError(try d.readFIFO(into: &burst)) { XCTAssertEqual(($0 as? I2CError)?.kind, .busFault, "\($0)") }
        time.t += 0.1
        XCTAssertEqual(try d.readFIFO(into: &burst), IMUFifoRead())
        XCTAssertEqual(burst.count, 10, "the failed read took nothing from the FIFO")
        // The poller's reopen resets and configures again.
        try d.reopen()
        time.t += 0.05
        XCTAssertTrue(try d.read(into: &s))
    }

    func testMagnetometerAutoNamedAndNone() throws {
        let (bus, _, lis, time) = try board()
        bus.detach(address: 0x1C)
        let d = try IMUDrivers.open(bus: bus, chip: "ICM42688P", sleep: noSleep)
        XCTAssertNil(d.magnetometerName, "auto runs without one")
        XCTAssertThrowsError(
            try IMUDrivers.open(
                bus: bus, chip: "ICM42688P", settings: IMUDriverSettings(magnetometer: "LIS3MDL"),
                sleep: noSleep)
        ) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .unexpectedResponse)
            XCTAssertTrue("\(e)".contains("LIS3MDL magnetometer not found"), "\(e)")
        }
        // At its other address, named by address.
        bus.attach(lis, at: 0x1E)
        let d2 = try IMUDrivers.open(
            bus: bus, chip: "ICM42688P",
            settings: IMUDriverSettings(magnetometer: "LIS3MDL", magnetometerAddress: 0x1E), sleep: noSleep)
        XCTAssertEqual((d2 as? ICM42688Driver)?.magnetometerAddress, 0x1E)
        bus.clearTrace()
        let d3 = try IMUDrivers.open(bus: bus, chip: "ICM42688P", settings: IMUDriverSettings(magnetometer: "none"), sleep: noSleep)
        XCTAssertNil(d3.magnetometerName)
        XCTAssertFalse(bus.trace.contains { $0.address == 0x1E || $0.address == 0x1C }, "none: not looked for")
        time.t += 1
        var s = IMUSample()
        _ = try d3.read(into: &s)
        XCTAssertNil(s.mag)
    }
}
