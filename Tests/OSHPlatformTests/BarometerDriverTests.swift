import Foundation
import OSHCore
@testable import OSHPlatform
import XCTest
import OSHSimulation

/// The reference vectors (Tests/OSHCoreTests/Fixtures/baro) through the real drivers: each row's
/// register bytes are loaded into a datasheet-modelled chip on the simulated bus, the driver
/// identifies, resets, reads the calibration, configures and burst-reads it.
final class BarometerDriverTests: XCTestCase {
    private func rows(_ name: String) throws -> [[String: String]] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("OSHCoreTests/Fixtures/baro").appendingPathComponent(name)
        let text = try String(contentsOf: url, encoding: .utf8)
        var lines = text.split(whereSeparator: \.isNewline).map(String.init)
        let header = split(lines.removeFirst())
        return lines.map { Dictionary(uniqueKeysWithValues: zip(header, split($0))) }
    }

    private func split(_ line: String) -> [String] {
        var out: [String] = [], cur = "", quoted = false
        for c in line {
            if c == "\"" { quoted.toggle() } else if c == ",", !quoted { out.append(cur); cur = "" } else { cur.append(c) }
        }
        out.append(cur)
        return out
    }

    private func bytes(_ hex: String) -> [UInt8] {
        let u = Array(hex.utf8)
        return stride(from: 0, to: u.count - 1, by: 2).map { UInt8(String(decoding: u[$0..<$0 + 2], as: UTF8.self), radix: 16) ?? 0 }
    }

    private func ten(_ v: Double) -> String { String(format: "%.10f", v) }
    private func int(_ s: String?) -> Int32 { Int32(s ?? "") ?? -1 }

    // MARK: Every reference row, through the driver

    func testBMP280EveryRowThroughTheDriver() throws {
        let all = try rows("bmp280_vectors.csv")
        XCTAssertEqual(all.count, 152)
        for r in all {
            let bus = SimulatedI2CBus(recordsTrace: false)
            let chip = try SimulatedBMx280(chipID: 0x58, calibration: bytes(r["regs_0x88_0x9F_hex"] ?? ""))
            chip.fixedRaw = BMx280Raw(adcT: int(r["adc_T"]), adcP: int(r["adc_P"]))
            bus.attach(chip, at: 0x76)
            let driver = try BarometerDrivers.open(bus: bus, chip: "BMP280", address: nil)
            guard let reading = try driver.read() else { return XCTFail("no reading, case \(r["case"] ?? "")") }
            XCTAssertEqual(ten(reading.celsius), r["ds_T_double_degC"], "case \(r["case"] ?? "")")
            XCTAssertEqual(ten(reading.pressurePa), r["ds_P_double_pa"], "case \(r["case"] ?? "")")
            XCTAssertNil(reading.humidityPercent)
        }
    }

    func testBME280EveryRowThroughTheDriver() throws {
        let all = try rows("bme280_vectors.csv")
        XCTAssertEqual(all.count, 151)
        for r in all {
            let bus = SimulatedI2CBus(recordsTrace: false)
            let chip = try SimulatedBMx280(
                chipID: 0x60, calibration: bytes(r["regs_0x88_0xA1_hex"] ?? ""),
                humidity: bytes(r["regs_0xE1_0xE7_hex"] ?? ""))
            chip.fixedRaw = BMx280Raw(adcT: int(r["adc_T"]), adcP: int(r["adc_P"]), adcH: int(r["adc_H"]))
            bus.attach(chip, at: 0x77)
            let driver = try BarometerDrivers.open(bus: bus, chip: "auto", address: nil)
            XCTAssertEqual(driver.identity.name, "BME280")
            guard let reading = try driver.read() else { return XCTFail("no reading, case \(r["case"] ?? "")") }
            XCTAssertEqual(ten(reading.celsius), r["ds_T_double_degC"], "case \(r["case"] ?? "")")
            XCTAssertEqual(ten(reading.pressurePa), r["ds_P_double_pa"], "case \(r["case"] ?? "")")
            XCTAssertEqual(ten(reading.humidityPercent ?? -1), r["ds_H_double_pct"], "case \(r["case"] ?? "")")
        }
    }

    func testBMP3EveryRowThroughTheDriver() throws {
        let all = try rows("bmp3_vectors.csv")
        XCTAssertEqual(all.count, 101)
        for (i, r) in all.enumerated() {
            let bus = SimulatedI2CBus(recordsTrace: false)
            // Alternate the two chips: same map, different ID.
            let chip = try SimulatedBMP3(chipID: i % 2 == 0 ? 0x50 : 0x60, calibration: bytes(r["calib_regs_0x31_0x45_hex"] ?? ""))
            chip.fixedRaw = BMP3Raw(pressure: UInt32(int(r["uncomp_P"])), temperature: UInt32(int(r["uncomp_T"])))
            bus.attach(chip, at: 0x76)
            let driver = try BarometerDrivers.open(bus: bus, chip: "auto", address: nil)
            XCTAssertEqual(driver.identity.name, i % 2 == 0 ? "BMP388" : "BMP390")
            guard let reading = try driver.read() else { return XCTFail("no reading, case \(r["case"] ?? "")") }
            XCTAssertEqual(ten(reading.celsius), r["api_T_double_degC"], "case \(r["case"] ?? "")")
            XCTAssertEqual(ten(reading.pressurePa), r["api_P_double_pa"], "case \(r["case"] ?? "")")
        }
    }

    func testLPS22HBEveryRowThroughTheDriver() throws {
        let all = try rows("lps22hb_vectors.csv")
        XCTAssertEqual(all.count, 37)
        for r in all {
            let bus = SimulatedI2CBus(recordsTrace: false)
            let chip = SimulatedLPS22HB()
            chip.fixedRaw = LPS22HBRaw(pressure: int(r["press_raw_int24"]), temperature: Int16(int(r["temp_raw_int16"])))
            bus.attach(chip, at: 0x5C)
            let driver = try BarometerDrivers.open(bus: bus, chip: "LPS22HB", address: nil)
            guard let reading = try driver.read() else { return XCTFail("no reading, case \(r["case"] ?? "")") }
            XCTAssertEqual(reading.pressureHPa, Double(r["pressure_hPa"] ?? ""), "case \(r["case"] ?? "")")
            XCTAssertEqual(reading.celsius, Double(r["temperature_degC"] ?? ""), "case \(r["case"] ?? "")")
            // The burst the driver read is the row's register bytes.
            let regs = ["PRESS_OUT_XL_0x28", "PRESS_OUT_L_0x29", "PRESS_OUT_H_0x2A", "TEMP_OUT_L_0x2B", "TEMP_OUT_H_0x2C"]
            XCTAssertEqual(driver.lastBurst, regs.flatMap { bytes(r[$0] ?? "") })
        }
    }

    // MARK: Configuration writes, as the datasheets ask

    func testBMP280ConfigurationWritesAndDatasheetExample() throws {
        let bus = SimulatedI2CBus()
        let chip = try SimulatedBMx280(chipID: 0x58, calibration: SimulatedBarometerBoard.bmp280Calibration)
        chip.fixedRaw = BMx280Raw(adcT: 519888, adcP: 415148)
        bus.attach(chip, at: 0x76)
        let driver = try BarometerDrivers.open(bus: bus, chip: "BMP280", address: 0x76)
        // Reset, then (in sleep mode) config: t_sb 500 ms (1 Hz fits), IIR 4; ctrl_meas: T×1 P×4 normal.
        XCTAssertEqual(chip.writes.map { [$0.register, $0.value] }, [[0xE0, 0xB6], [0xF4, 0x00], [0xF5, 0x88], [0xF4, 0x2F]])
        XCTAssertEqual(chip.resets, 1)
        let r = try XCTUnwrap(try driver.read())
        XCTAssertEqual(r.celsius, 25.08, accuracy: 0.005)
        XCTAssertEqual(r.pressurePa, 100653.27, accuracy: 0.05)
        XCTAssertEqual(driver.lastBurst, [0x65, 0x5A, 0xC0, 0x7E, 0xED, 0x00])
        // The data are one 6-byte burst from 0xF7.
        XCTAssertEqual(bus.trace.last?.written, [0xF7])
        XCTAssertEqual(bus.trace.last?.readCount, 6)

        // 25 Hz, high resolution: T×2 P×16 (≈ 44 ms max) does not fit 40 ms — standby 0.5 ms, IIR 16.
        let fast = BMx280Driver(bus: bus, address: 0x76)
        try fast.start(BarometerConfiguration(rateHz: 25, oversampling: .highResolution))
        XCTAssertEqual(fast.written.ctrlMeas, 0b010_101_11)
        XCTAssertEqual(fast.written.config, 0b000_100_00)
        // 10 Hz standard: 13.3 ms + 62.5 ms fits 100 ms.
        try fast.configure(BarometerConfiguration(rateHz: 10))
        XCTAssertEqual(fast.written.config, 0b001_010_00)
    }

    func testBME280WritesCtrlHumBeforeCtrlMeas() throws {
        let bus = SimulatedI2CBus()
        try SimulatedBarometerBoard.attach(to: bus, chip: "BME280", address: 0x77) { (1000, 20) }
        let chip = try XCTUnwrap(bus.device(at: 0x77) as? SimulatedBMx280)
        chip.humidityPercent = 55
        let driver = try BarometerDrivers.open(bus: bus, chip: "BME280", address: 0x77)
        // BME280 t_sb code 6 is 10 ms (not 2000 ms): 500 ms is still the longest that fits 1 Hz.
        XCTAssertEqual(
            chip.writes.map { [$0.register, $0.value] }, [[0xE0, 0xB6], [0xF4, 0x00], [0xF2, 0x01], [0xF5, 0x88], [0xF4, 0x2F]])
        let r = try XCTUnwrap(try driver.read())
        XCTAssertEqual(r.pressureHPa, 1000, accuracy: 0.01)
        XCTAssertEqual(r.celsius, 20, accuracy: 0.01)
        XCTAssertEqual(r.humidityPercent ?? 0, 55, accuracy: 0.05)
        XCTAssertEqual(driver.calibrationBytes.count, 33)
    }

    func testBMP3ConfigurationAndConfError() throws {
        let bus = SimulatedI2CBus()
        try SimulatedBarometerBoard.attach(to: bus, chip: "BMP390", address: nil) { (950.5, 12.25) }
        let chip = try XCTUnwrap(bus.device(at: 0x77) as? SimulatedBMP3)
        let driver = try BarometerDrivers.open(bus: bus, chip: "auto", address: nil)
        XCTAssertEqual(driver.identity.name, "BMP390")
        XCTAssertEqual(driver.address, 0x77)
        // CMD soft reset; sleep; OSR T×1 P×4; ODR 200/2^7 = 1.56 Hz (≥ 1 Hz); IIR coefficient 3; normal, P+T on.
        XCTAssertEqual(
            chip.writes.map { [$0.register, $0.value] },
            [[0x7E, 0xB6], [0x1B, 0x00], [0x1C, 0x02], [0x1D, 0x07], [0x1F, 0x04], [0x1B, 0x33]])
        let r = try XCTUnwrap(try driver.read())
        XCTAssertEqual(r.pressureHPa, 950.5, accuracy: 0.001)
        XCTAssertEqual(r.celsius, 12.25, accuracy: 0.001)
        // 100 Hz at P×4: the 10.9 ms conversion does not fit 10 ms, so 50 Hz (odr_sel 2).
        XCTAssertEqual(BMP3Driver.odrCode(rateHz: 100, p: 2, t: 0), 2)
        XCTAssertEqual(BMP3Driver.odrCode(rateHz: 25, p: 2, t: 0), 3)
        // The modelled chip refuses an ODR faster than the conversion, and the driver would say so.
        try bus.writeRegister(0x77, 0x1B, 0x00)
        try bus.writeRegister(0x77, 0x1C, 0x05)  // P×32
        try bus.writeRegister(0x77, 0x1D, 0x00)  // 200 Hz
        try bus.writeRegister(0x77, 0x1B, 0x33)
        XCTAssertEqual(try bus.readRegister(0x77, 0x02) & 0x04, 0x04, "conf_err")
        XCTAssertEqual(try bus.readRegister(0x77, 0x02), 0, "ERR_REG clears on read")
    }

    func testLPS22HBResetAndConfiguration() throws {
        let bus = SimulatedI2CBus()
        try SimulatedBarometerBoard.attach(to: bus, chip: "LPS22HB", address: nil) { (1013.25, 25) }
        let chip = try XCTUnwrap(bus.device(at: 0x5D) as? SimulatedLPS22HB)
        let driver = try BarometerDrivers.open(bus: bus, chip: "auto", address: nil)
        XCTAssertEqual(driver.identity.name, "LPS22HB")
        // SWRESET, BOOT (each polled until it self-clears), RES_CONF, CTRL_REG1: 1 Hz, LPF ODR/9, BDU.
        XCTAssertEqual(chip.writes.map { [$0.register, $0.value] }, [[0x11, 0x14], [0x11, 0x90], [0x1A, 0x00], [0x10, 0x1A]])
        XCTAssertEqual(chip.resets, 1)
        XCTAssertEqual(chip.boots, 1)
        let r = try XCTUnwrap(try driver.read())
        XCTAssertEqual(r.pressureHPa, 1013.25)
        XCTAssertEqual(r.celsius, 25)
        XCTAssertEqual(LPS22HBDriver.odrCode(rateHz: 20), 3)
        XCTAssertEqual(LPS22HBDriver.odrCode(rateHz: 500), 5)
    }

    // MARK: Identification and absence

    func testWrongIDIsAClearError() throws {
        let bus = SimulatedI2CBus()
        try SimulatedBarometerBoard.attach(to: bus, chip: "BME280", address: 0x76) { (1000, 20) }
        XCTAssertThrowsError(try BarometerDrivers.open(bus: bus, chip: "BMP280", address: nil)) { e in
            let err = e as? I2CError
            XCTAssertEqual(err?.kind, .unexpectedResponse)
            XCTAssertFalse(err?.isAbsent ?? true)
            let text = "\(e)"
            XCTAssertTrue(text.contains("0xD0 holds 0x60, not a BMP280"), text)
            XCTAssertTrue(text.contains("that ID is a BME280"), text)
        }
        // An unknown chip at a barometer address, looking for any.
        let other = SimulatedI2CBus()
        other.attach(RegisterMapDevice(registers: [0xD0: 0x99, 0x00: 0x99]), at: 0x77)
        XCTAssertThrowsError(try BarometerDrivers.open(bus: other, chip: "auto", address: nil)) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .unexpectedResponse)
            XCTAssertTrue("\(e)".contains("its ID is none of BMP280, BME280"), "\(e)")
        }
        XCTAssertThrowsError(try BarometerDrivers.open(bus: other, chip: "MS5611", address: nil)) { e in
            XCTAssertTrue("\(e)".contains("not a known chip"), "\(e)")
        }
    }

    func testNothingAnsweringIsAbsentAndSaysWhatWasTried() {
        let bus = SimulatedI2CBus(number: 1)
        XCTAssertThrowsError(try BarometerDrivers.open(bus: bus, chip: "auto", address: nil)) { e in
            let err = e as? I2CError
            XCTAssertTrue(err?.isAbsent ?? false, "\(e)")
            let text = "\(e)"
            XCTAssertTrue(text.contains("BMP280 at 0x76/0x77"), text)
            XCTAssertTrue(text.contains("LPS22HB at 0x5D/0x5C"), text)
            XCTAssertTrue(text.contains("/dev/i2c-1"), text)
        }
        XCTAssertEqual(Set(bus.transactionCount.keys), [0x76, 0x77, 0x5C, 0x5D, 0x47, 0x46], "each address once per candidate ID register")
        // A chip that NACKs while present (e.g. held in reset) is absent too.
        bus.attach(RegisterMapDevice(registers: [0xD0: 0x58]), at: 0x76)
        bus.inject(.nack, at: 0x76)
        XCTAssertThrowsError(try BarometerDrivers.open(bus: bus, chip: "BMP280", address: 0x76)) { e in
            XCTAssertTrue((e as? I2CError)?.isAbsent ?? false)
            XCTAssertTrue("\(e)".contains("BMP280 at 0x76"), "\(e)")
        }
    }

    func testBusFaultMidRunIsThrownAndTheDriverReopens() throws {
        let bus = SimulatedI2CBus(recordsTrace: false)
        try SimulatedBarometerBoard.attach(to: bus, chip: "BMP280", address: 0x76) { (1000, 20) }
        let driver = try BarometerDrivers.open(bus: bus, chip: "BMP280", address: 0x76)
        XCTAssertNotNil(try driver.read())
        bus.inject(.ioError, at: 0x76, times: 1)
        XCTAssertThrowsError(try driver.read()) { e in XCTAssertEqual((e as? I2CError)?.kind, .busFault) }
        try driver.start(BarometerConfiguration())
        XCTAssertEqual(try XCTUnwrap(try driver.read()).pressureHPa, 1000, accuracy: 0.01)
    }

    /// Before the first conversion the data registers hold their reset value: no reading, no error.
    func testNoReadingBeforeTheFirstConversion() throws {
        let bus = SimulatedI2CBus(recordsTrace: false)
        try SimulatedBarometerBoard.attach(to: bus, chip: "BMP280", address: 0x76) { (1000, 20) }
        let d = BMx280Driver(bus: bus, address: 0x76)
        try d.identify()
        try d.reset()
        try d.readCalibration()
        XCTAssertNil(try d.read())
        let b3 = SimulatedI2CBus(recordsTrace: false)
        try SimulatedBarometerBoard.attach(to: b3, chip: "BMP388", address: 0x76) { (1000, 20) }
        let d3 = BMP3Driver(bus: b3, address: 0x76)
        try d3.reset()
        try d3.readCalibration()
        XCTAssertNil(try d3.read())
    }

    /// The simulated chips invert their compensation: the environment comes back through the driver.
    func testEnvironmentThroughEveryChip() throws {
        for name in BarometerDrivers.names {
            let bus = SimulatedI2CBus(recordsTrace: false)
            var hPa = 1013.25
            try SimulatedBarometerBoard.attach(to: bus, chip: name) { (hPa, 18.5) }
            let d = try BarometerDrivers.open(bus: bus, chip: "auto", address: nil)
            XCTAssertEqual(d.identity.name, name == "BMP390" ? "BMP390" : name)
            for p in [1013.25, 1012.0, 850.0, 400.0] {
                hPa = p
                let r = try XCTUnwrap(try d.read(), name)
                XCTAssertEqual(r.pressureHPa, p, accuracy: 0.01, name)
                XCTAssertEqual(r.celsius, 18.5, accuracy: 0.01, name)
            }
        }
    }
}
