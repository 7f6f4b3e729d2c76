import Foundation
import OSHCore
@testable import OSHPlatform
import XCTest
import OSHSimulation

/// The DPS310 driver over the simulated bus: identification, reset, coefficients, configuration,
/// readings, and what goes wrong.
final class DPS310DriverTests: XCTestCase {
    private let real = SimulatedDPS310.realPartCoefficients

    private func attach(
        _ bus: SimulatedI2CBus, at address: UInt8 = 0x77, fix: Bool = true, external: Bool = true,
        productID: UInt8 = 0x10, _ env: @escaping BarometerEnvironment = { (1013.25, 21.5) }
    ) throws -> SimulatedDPS310 {
        let chip = try SimulatedDPS310(coefficients: real, productID: productID, externalSensor: external, needsTemperatureFix: fix)
        chip.environment = env
        bus.attach(chip, at: address)
        return chip
    }

    private func pairs(_ chip: SimulatedDPS310) -> [[UInt8]] { chip.writes.map { [$0.register, $0.value] } }

    // MARK: The reference rows at the driver's settings

    func testReferenceRowsThroughTheDriver() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("OSHCoreTests/Fixtures/baro/dps310_vectors.csv")
        let lines = try String(contentsOf: url, encoding: .utf8).split(whereSeparator: \.isNewline).map {
            $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        }
        let header = lines[0]
        let col = { (row: [String], name: String) in row[header.firstIndex(of: name) ?? 0] }
        let modes: [String: BarometerOversampling] = ["low-power": .lowPower, "standard": .standard, "high-resolution": .highResolution]
        var checked = 0
        for row in lines.dropFirst() where row[2].hasPrefix("driver setting") {
            let mode = try XCTUnwrap(modes[String(row[2].dropFirst("driver setting ".count).prefix { $0 != ":" })], row[2])
            let bus = SimulatedI2CBus(recordsTrace: false)
            let chip = try SimulatedDPS310(coefficients: bytesFromHex(col(row, "coef_regs_0x10_0x21_hex")))
            chip.fixedRaw = (Int32(col(row, "Praw")) ?? 0, Int32(col(row, "Traw")) ?? 0)
            bus.attach(chip, at: 0x76)
            let d = try BarometerDrivers.open(
                bus: bus, chip: "DPS310", address: nil, configuration: BarometerConfiguration(oversampling: mode))
            let r = try XCTUnwrap(try d.read(), row[0])
            XCTAssertEqual(String(format: "%.10f", r.celsius), col(row, "ds_T_double_degC"), row[0])
            XCTAssertEqual(String(format: "%.10f", r.pressurePa), col(row, "ds_P_double_pa"), row[0])
            XCTAssertEqual(
                d.lastBurst.prefix(6), ArraySlice(bytesFromHex(col(row, "prs_regs_0x00_0x02_hex") + col(row, "tmp_regs_0x03_0x05_hex"))))
            checked += 1
        }
        XCTAssertEqual(checked, 27)
    }

    private func bytesFromHex(_ s: String) -> [UInt8] {
        let u = Array(s.utf8)
        return stride(from: 0, to: u.count - 1, by: 2).map { UInt8(String(decoding: u[$0..<$0 + 2], as: UTF8.self), radix: 16) ?? 0 }
    }

    // MARK: Identify, reset, coefficients, configuration

    func testOpenWritesWhatTheDatasheetAndInfineonAsk() throws {
        let bus = SimulatedI2CBus()
        let chip = try attach(bus) { (987.65, 23.4) }
        let d = try BarometerDrivers.open(bus: bus, chip: "DPS310", address: nil)
        XCTAssertEqual(d.address, 0x77)
        XCTAssertEqual(try d.identify(), 0x10)
        // Soft reset; Infineon's temperature fix-up; idle; PRS_CFG 1 Hz ×16; TMP_CFG external
        // sensor 1 Hz ×1; CFG_REG P_SHIFT; continuous pressure and temperature.
        XCTAssertEqual(
            pairs(chip),
            [
                [0x0C, 0x09], [0x0E, 0xA5], [0x0F, 0x96], [0x62, 0x02], [0x0E, 0x00], [0x0F, 0x00],
                [0x08, 0x00], [0x06, 0x04], [0x07, 0x80], [0x09, 0x04], [0x08, 0x07],
            ])
        XCTAssertEqual(chip.resets, 1)
        XCTAssertEqual(chip.temperatureFixes, 1)
        XCTAssertEqual(d.calibrationBytes, real)
        let r = try XCTUnwrap(try d.read())
        // One code is |c10| / kP = 0.22 Pa at ×16 and |c1| / kT = 0.00056 °C at ×1.
        XCTAssertEqual(r.pressurePa, 98765, accuracy: 56035 / 253952)
        XCTAssertEqual(r.celsius, 23.4, accuracy: 291 / 524288)
        // Then one 8-byte burst from 0x00 per read, which decode turns into the same numbers.
        XCTAssertEqual(bus.trace.last?.written, [0x00])
        XCTAssertEqual(bus.trace.last?.readCount, 8)
        let again = try XCTUnwrap(try d.read())
        XCTAssertEqual(bus.trace.last?.written, [0x00])
        let decoded = try DPS310Driver.chip.decode(calibration: d.calibrationBytes, burst: d.lastBurst)
        XCTAssertEqual(decoded.pressurePa, again.pressurePa)
        XCTAssertEqual(decoded.celsius, again.celsius)
    }

    func testIDsAcceptedAndRefused() throws {
        // REV_ID may differ: 0x20 is still a DPS310.
        let bus = SimulatedI2CBus()
        _ = try attach(bus, productID: 0x20)
        XCTAssertEqual(try BarometerDrivers.open(bus: bus, chip: "DPS310", address: 0x77).identity.name, "DPS310")
        for id: UInt8 in [0x11, 0x00, 0x1A] {
            let other = SimulatedI2CBus()
            let chip = try attach(other, productID: id)
            XCTAssertThrowsError(try BarometerDrivers.open(bus: other, chip: "DPS310", address: nil)) { e in
                XCTAssertEqual((e as? I2CError)?.kind, .unexpectedResponse)
                XCTAssertTrue("\(e)".contains("register 0x0D holds \(baroHex(id)), not a DPS310 (0x10/0x20"), "\(e)")
            }
            XCTAssertEqual(chip.resets, 0, "nothing written to a chip that is not a DPS310")
        }
    }

    func testAutoFindsItAtEitherAddress() throws {
        for a: UInt8 in [0x77, 0x76] {
            let bus = SimulatedI2CBus()
            _ = try attach(bus, at: a) { (1000, 20) }
            let d = try BarometerDrivers.open(bus: bus, chip: "auto", address: nil)
            XCTAssertEqual(d.identity.name, "DPS310")
            XCTAssertEqual(d.address, a)
            XCTAssertEqual(try XCTUnwrap(try d.read()).pressureHPa, 1000, accuracy: 0.01)
        }
        XCTAssertEqual(BarometerDrivers.identity(named: "dps310")?.addresses, [0x77, 0x76])
        // Through the board helper too, at the default strap.
        let bus = SimulatedI2CBus()
        try SimulatedBarometerBoard.attach(to: bus, chip: "DPS310") { (1000, 20) }
        XCTAssertNotNil(bus.device(at: 0x77) as? SimulatedDPS310)
    }

    func testTemperatureSensorFollowsCOEF_SRCE() throws {
        // Coefficients made with the internal (ASIC) sensor: TMP_EXT stays 0.
        let bus = SimulatedI2CBus()
        let chip = try attach(bus, external: false) { (1005, 30) }
        let d = try XCTUnwrap(try BarometerDrivers.open(bus: bus, chip: "DPS310", address: nil) as? DPS310Driver)
        XCTAssertFalse(d.externalTemperatureSensor)
        XCTAssertTrue(pairs(chip).contains([0x07, 0x00]))
        XCTAssertEqual(try XCTUnwrap(try d.read()).celsius, 30, accuracy: 0.001)
        // The other sensor, as issue #30 read it, gives a wrong temperature (the model's 28 °C
        // low) and through c01 a wrong pressure: why the driver follows COEF_SRCE.
        try bus.writeRegister(0x77, 0x07, 0x80)
        chip.measure(pressure: true, temperature: true)
        let wrong = try DPS310Driver.chip.decode(calibration: real, burst: try bus.readBlock(0x77, 0x00, count: 8))
        XCTAssertEqual(wrong.celsius, 2, accuracy: 0.001)
        XCTAssertGreaterThan(abs(wrong.pressureHPa - 1005), 1)
        XCTAssertNil(try d.read(), "TMP_CFG is no longer what the driver wrote")
    }

    func testTemperatureFixUpFollowsEveryReset() throws {
        let bus = SimulatedI2CBus()
        let chip = try attach(bus, fix: true) { (1013.25, 20) }
        let d = try BarometerDrivers.open(bus: bus, chip: "DPS310", address: nil)
        XCTAssertEqual(try XCTUnwrap(try d.read()).celsius, 20, accuracy: 0.001)
        chip.readsUntilReady = 0
        // A soft reset without the fix-up: the part reads high (the model's 40 °C) until the driver resets it.
        try bus.writeRegister(0x77, 0x0C, 0x09)
        try d.configure(BarometerConfiguration())
        XCTAssertEqual(try XCTUnwrap(try d.read()).celsius, 60, accuracy: 0.001)
        try d.start(BarometerConfiguration())
        XCTAssertEqual(chip.temperatureFixes, 2)
        XCTAssertEqual(try XCTUnwrap(try d.read()).celsius, 20, accuracy: 0.001)
    }

    // MARK: Rates

    func testRateCodesFitTheBusyBudget() {
        XCTAssertTrue(DPS310Driver.rateCodes(rateHz: 1, p: 4, t: 0) == (0, 0))
        XCTAssertTrue(DPS310Driver.rateCodes(rateHz: 0.2, p: 0, t: 0) == (0, 0))
        XCTAssertTrue(DPS310Driver.rateCodes(rateHz: 3, p: 4, t: 0) == (2, 2))
        // 32 Hz at ×16: 883 ms of pressure; temperature at 32 Hz would pass 990 ms, at 16 Hz it fits.
        XCTAssertTrue(DPS310Driver.rateCodes(rateHz: 32, p: 4, t: 0) == (5, 4))
        // ×64 takes 104.4 ms: 8 Hz is the most, below the 10 Hz asked.
        XCTAssertTrue(DPS310Driver.rateCodes(rateHz: 10, p: 6, t: 1) == (3, 3))
        XCTAssertTrue(DPS310Driver.rateCodes(rateHz: 500, p: 0, t: 0) == (7, 7))
        for o in BarometerOversampling.allCases {
            let s = DPS310Driver.settings(o)
            for rate in [0.5, 1, 2, 5, 10, 25, 50, 100, 128, 1000] {
                let r = DPS310Driver.rateCodes(rateHz: rate, p: s.p, t: s.t)
                let busy =
                    Double(1 << Int(r.p)) * DPS310Scale.measurementMilliseconds(s.p)
                    + Double(1 << Int(r.t)) * DPS310Scale.measurementMilliseconds(s.t)
                XCTAssertLessThan(busy, 990, "\(o) \(rate)")
                XCTAssertLessThanOrEqual(r.t, r.p)
                // At least the asked rate wherever the chip can do it at this oversampling.
                let fastest = DPS310Driver.rateCodes(rateHz: 1000, p: s.p, t: s.t).p
                XCTAssertGreaterThanOrEqual(Double(1 << Int(r.p)), min(rate, Double(1 << Int(fastest))), "\(o) \(rate)")
            }
        }
    }

    func testConfigureForARate() throws {
        let bus = SimulatedI2CBus()
        let chip = try attach(bus) { (950.5, 12.25) }
        let d = try XCTUnwrap(try BarometerDrivers.open(bus: bus, chip: "DPS310", address: nil) as? DPS310Driver)
        chip.clearWrites()
        try d.configure(BarometerConfiguration(rateHz: 10, oversampling: .highResolution))
        // PRS_CFG 8 Hz ×64, TMP_CFG external 8 Hz ×2, CFG_REG P_SHIFT only (temperature ≤ ×8).
        XCTAssertEqual(pairs(chip), [[0x08, 0x00], [0x06, 0x36], [0x07, 0xB1], [0x09, 0x04], [0x08, 0x07]])
        let r = try XCTUnwrap(try d.read())
        XCTAssertEqual(r.pressureHPa, 950.5, accuracy: 56035 / 1040384 / 100)
        XCTAssertEqual(r.celsius, 12.25, accuracy: 291 / 1572864)
        chip.clearWrites()
        try d.configure(BarometerConfiguration(rateHz: 100, oversampling: .lowPower))
        XCTAssertEqual(pairs(chip), [[0x08, 0x00], [0x06, 0x70], [0x07, 0xF0], [0x09, 0x00], [0x08, 0x07]])
        XCTAssertEqual(try XCTUnwrap(try d.read()).pressureHPa, 950.5, accuracy: 56035 / 524288 / 100)
        // Without the shift the model's ×16 result saturates: the driver's CFG_REG is what keeps it right.
        try bus.writeRegister(0x77, 0x06, 0x04)
        try bus.writeRegister(0x77, 0x09, 0x00)
        chip.measure(pressure: true, temperature: true)
        XCTAssertEqual(Array(chip.registers[0...2]), [0x80, 0x00, 0x00], "950.5 hPa is a negative Praw on this part")
    }

    // MARK: Readiness, failures

    func testNilUntilTheFirstConversion() throws {
        let bus = SimulatedI2CBus()
        let chip = try attach(bus)
        let d = DPS310Driver(bus: bus, address: 0x77)
        XCTAssertNil(try d.read(), "no coefficients yet")
        try d.identify()
        try d.reset()
        try d.readCalibration()
        XCTAssertNil(try d.read(), "not configured: idle")
        // Configure's read-back of MEAS_CFG is the first of these three.
        chip.readsBeforeFirstMeasurement = 3
        try d.configure(BarometerConfiguration())
        XCTAssertNil(try d.read())
        XCTAssertNil(try d.read())
        XCTAssertEqual(try XCTUnwrap(try d.read()).pressureHPa, 1013.25, accuracy: 0.01)
    }

    func testResetWaitsForReadyAndGivesUp() throws {
        let bus = SimulatedI2CBus()
        let chip = try attach(bus)
        chip.readsUntilReady = 3
        let d = DPS310Driver(bus: bus, address: 0x77)
        try d.reset()
        XCTAssertEqual(bus.trace.filter { $0.written == [0x08] }.count, 4, "three not ready, then ready")
        chip.readsUntilReady = 1000
        XCTAssertThrowsError(try d.reset()) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .unexpectedResponse)
            XCTAssertTrue("\(e)".contains("SENSOR_RDY and COEF_RDY not both set; power-cycle"), "\(e)")
        }
    }

    func testBusErrorsPropagateAndTheDriverReopens() throws {
        let bus = SimulatedI2CBus(recordsTrace: false)
        _ = try attach(bus) { (1000, 20) }
        let d = try BarometerDrivers.open(bus: bus, chip: "DPS310", address: 0x77)
        XCTAssertNotNil(try d.read())
        bus.inject(.ioError, at: 0x77, times: 1)
        XCTAssertThrowsError(try d.read()) { e in XCTAssertEqual((e as? I2CError)?.kind, .busFault) }
        let steps: [() throws -> Void] = [{ try d.readCalibration() }, { try d.configure(BarometerConfiguration()) }, { try d.reset() }]
        for step in steps {
            bus.inject(.timeout, at: 0x77, times: 1)
            XCTAssertThrowsError(try step()) { e in XCTAssertEqual((e as? I2CError)?.kind, .busFault) }
        }
        bus.inject(.nack, at: 0x77)
        XCTAssertThrowsError(try d.identify()) { e in XCTAssertTrue((e as? I2CError)?.isAbsent ?? false) }
        bus.clearFaults(at: 0x77)
        try d.start(BarometerConfiguration())
        XCTAssertEqual(try XCTUnwrap(try d.read()).pressureHPa, 1000, accuracy: 0.01)
    }

    /// A reset behind the driver's back (a brown-out) clears PRS_CFG / TMP_CFG: the reads give nil,
    /// so the series reports the chip failing and the poller restarts it.
    func testAChipResetBehindOurBackReadsNil() throws {
        let bus = SimulatedI2CBus(recordsTrace: false)
        _ = try attach(bus) { (1000, 20) }
        let d = try BarometerDrivers.open(bus: bus, chip: "DPS310", address: 0x77)
        XCTAssertNotNil(try d.read())
        try bus.writeRegister(0x77, 0x0C, 0x09)
        var series = BarometerSeries()
        for _ in 0...BarometerSeries.emptyReadsTolerated { XCTAssertNil(try d.read()); _ = series.take(nil) }
        XCTAssertEqual(series.take(try d.read()), .failure(emptyReads: BarometerSeries.emptyReadsTolerated + 2))
        try d.start(BarometerConfiguration())
        XCTAssertEqual(try XCTUnwrap(try d.read()).pressureHPa, 1000, accuracy: 0.01)
    }
}
