import Foundation
import OSHCore
@testable import OSHPlatform
import XCTest
import OSHSimulation

/// The BMP581/BMP585 driver over the simulated bus (SimulatedBMP58x, the datasheet's register
/// map): identification, reset, configuration, the first conversion, values, bus errors, and the
/// driver table's `auto` and decode.
final class BMP58xDriverTests: XCTestCase {
    private func rows() throws -> [[String: String]] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("OSHCoreTests/Fixtures/baro/bmp58x_vectors.csv")
        var lines = try String(contentsOf: url, encoding: .utf8).split(whereSeparator: \.isNewline).map {
            $0.split(separator: ",").map(String.init)
        }
        let header = lines.removeFirst()
        return lines.map { Dictionary(uniqueKeysWithValues: zip(header, $0)) }
    }

    private func bytes(_ hex: String) -> [UInt8] {
        let u = Array(hex.utf8)
        return stride(from: 0, to: u.count - 1, by: 2).map { UInt8(String(decoding: u[$0..<$0 + 2], as: UTF8.self), radix: 16) ?? 0 }
    }

    /// A chip on a fresh bus; `autoConvert` off: it measures only when told.
    private func board(
        _ chip: String = "BMP581", address: UInt8? = nil, autoConvert: Bool = true,
        environment: @escaping BarometerEnvironment = { (1013.25, 21.5) }
    ) throws -> (SimulatedI2CBus, SimulatedBMP58x) {
        let bus = SimulatedI2CBus()
        let device = try SimulatedBarometerBoard.attach(to: bus, chip: chip, address: address, environment: environment)
        let sim = try XCTUnwrap(device as? SimulatedBMP58x)
        sim.autoConvert = autoConvert
        return (bus, sim)
    }

    // MARK: Every reference row, through the driver

    func testEveryRowThroughTheDriver() throws {
        let all = try rows()
        XCTAssertEqual(all.count, 64)
        for (i, r) in all.enumerated() {
            let bus = SimulatedI2CBus(recordsTrace: false)
            // Alternate the two chips (same map, different ID) and the two straps.
            let sim = SimulatedBMP58x(chipID: i % 2 == 0 ? 0x50 : 0x51)
            let burst = bytes(r["regs_0x1D_0x22_hex"] ?? "")
            sim.fixedRaw = burst.withUnsafeBytes { BMP58xRaw(burst: $0) }
            bus.attach(sim, at: i % 4 < 2 ? 0x47 : 0x46)
            let driver = try BarometerDrivers.open(bus: bus, chip: "auto", address: nil)
            XCTAssertEqual(driver.identity.name, i % 2 == 0 ? "BMP581" : "BMP585")
            let reading = try driver.read()
            XCTAssertEqual(driver.lastBurst, burst, "case \(r["case"] ?? "")")
            if r["case"] == "reset_pattern_7f7f7f" {
                XCTAssertNil(reading, "the registers' reset value is no measurement")
                continue
            }
            let v = try XCTUnwrap(reading, "case \(r["case"] ?? "")")
            XCTAssertEqual(v.celsius, Double(r["ds_T_degC"] ?? ""), "case \(r["case"] ?? "")")
            XCTAssertEqual(v.pressurePa, Double(r["ds_P_pa"] ?? ""), "case \(r["case"] ?? "")")
            XCTAssertNil(v.humidityPercent)
        }
    }

    // MARK: Identification

    func testIdentifiesBothChipsAndRefusesTheOther() throws {
        for (name, id) in [("BMP581", UInt8(0x50)), ("BMP585", 0x51)] {
            let (bus, _) = try board(name)
            let d = try XCTUnwrap(
                BarometerDrivers.driver(for: try XCTUnwrap(BarometerDrivers.identity(named: name)), bus: bus, address: 0x47))
            XCTAssertEqual(try d.identify(), id)
            XCTAssertEqual(d.calibrationBytes, [])
            XCTAssertEqual(d.label, "\(name) at 0x47 on /dev/i2c-1")
        }
        // A BMP585 configured as a BMP581: the error names the register, the value and what to set.
        let (bus, _) = try board("BMP585")
        XCTAssertThrowsError(try BarometerDrivers.open(bus: bus, chip: "BMP581", address: nil)) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .unexpectedResponse)
            let text = "\(e)"
            XCTAssertTrue(text.contains("register 0x01 holds 0x51, not a BMP581 (0x50)"), text)
            XCTAssertTrue(text.contains("that ID is a BMP585: set the chip to BMP585 or auto"), text)
        }
        // Something else at 0x47, looking for any barometer.
        let other = SimulatedI2CBus()
        other.attach(RegisterMapDevice(registers: [0x01: 0x60]), at: 0x47)
        XCTAssertThrowsError(try BarometerDrivers.open(bus: other, chip: "auto", address: nil)) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .unexpectedResponse)
            XCTAssertTrue("\(e)".contains("its ID is none of"), "\(e)")
            XCTAssertTrue("\(e)".contains("BMP581, BMP585"), "\(e)")
        }
    }

    // MARK: Reset

    func testSoftResetWaitsForPORAndChecksTheNVM() throws {
        let (bus, sim) = try board()
        let d = BMP58xDriver(bus: bus, address: 0x47)
        try d.reset()
        XCTAssertEqual(sim.resets, 1)
        XCTAssertEqual(sim.writes.map { [$0.register, $0.value] }, [[0x7E, 0xB6]])
        // After 0xB6: INT_STATUS (por, clears on read) and STATUS (nvm_rdy).
        XCTAssertEqual(bus.trace.suffix(2).map(\.written), [[0x27], [0x28]])
        XCTAssertEqual(bus.trace.suffix(2).map(\.read), [[0x10], [0x02]])

        // The datasheet says the chip may not ACK the command over I²C: the reset still counts.
        sim.nacksReset = true
        try d.reset()
        XCTAssertEqual(sim.resets, 2)
        XCTAssertEqual(bus.trace.first { $0.written == [0x7E, 0xB6] && $0.fault == .nack }?.fault, .nack)

        sim.nacksReset = false
        sim.nvmError = true
        XCTAssertThrowsError(try d.reset()) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .unexpectedResponse)
            XCTAssertTrue("\(e)".contains("STATUS = 0x04: the trimming NVM is in error; power-cycle the chip"), "\(e)")
        }
        // A chip that answers but never reports the reset done.
        let mute = SimulatedI2CBus(recordsTrace: false)
        mute.attach(RegisterMapDevice(registers: [0x01: 0x50, 0x28: 0x02]), at: 0x46)
        XCTAssertThrowsError(try BMP58xDriver(bus: mute, address: 0x46).reset()) { e in
            XCTAssertTrue("\(e)".contains("never showed the reset complete (por)"), "\(e)")
        }
    }

    // MARK: Configuration

    func testConfigurationWritesForTheDefaultRate() throws {
        let (bus, sim) = try board("BMP585", address: 0x46)
        let d = try BarometerDrivers.open(bus: bus, chip: "BMP585", address: 0x46)
        // Reset; standby with deep standby off; DSP_CONFIG (compensation on, filtered data
        // registers); IIR coefficient 3 for P and T; data-ready source; P×4 T×1 with press_en;
        // ODR 1 Hz (code 0x1C), deep standby off, normal mode.
        XCTAssertEqual(
            sim.writes.map { [$0.register, $0.value] },
            [[0x7E, 0xB6], [0x37, 0x80], [0x30, 0x2B], [0x31, 0x12], [0x15, 0x01], [0x36, 0x50], [0x37, 0xF1]])
        XCTAssertEqual(sim.registers[0x38], 0x80 | 0x10, "OSR_EFF: valid, P×4 T×1")
        XCTAssertEqual((d as? BMP58xDriver)?.written.odr, 0xF1)
        XCTAssertEqual(sim.resets, 1)
    }

    func testEveryRateAndOversamplingIsValidAndFastEnough() throws {
        let (bus, sim) = try board()
        let d = BMP58xDriver(bus: bus, address: 0x47)
        try d.reset()
        for o in BarometerOversampling.allCases {
            for rate in [0.05, 0.125, 1, 2, 5, 10, 20, 25, 50, 60, 75, 100, 200, 500] {
                try d.configure(BarometerConfiguration(rateHz: rate, oversampling: o))
                let code = Int((d.written.odr >> 2) & 0x1F)
                let s = BMP58xDriver.settings(o)
                let conversion = BMP58xDriver.conversionMicroseconds(p: s.p, t: s.t)
                XCTAssertNotEqual(sim.registers[0x38] & 0x80, 0, "\(o) \(rate) Hz: the chip's check passes")
                XCTAssertGreaterThanOrEqual(1_000_000 / BMP58xDriver.rates[code], conversion * 1.25, "\(o) \(rate) Hz")
                // At least the agent's rate, unless the oversampling cannot go that fast.
                let fastest = BMP58xDriver.rates.first { 1_000_000 / $0 >= conversion * 1.25 } ?? 0
                XCTAssertGreaterThanOrEqual(BMP58xDriver.rates[code], min(rate, fastest), "\(o) \(rate) Hz")
                // And the slowest such: one step slower would be too slow.
                if code < 31, rate <= fastest { XCTAssertLessThan(BMP58xDriver.rates[code + 1], rate, "\(o) \(rate) Hz") }
            }
        }
        // The rates the agent allows (up to 100 Hz) are met at low-power and standard oversampling;
        // high resolution (P×16, ≈ 11 ms a conversion) stops at 70 Hz.
        XCTAssertEqual(BMP58xDriver.odrCode(rateHz: 1, p: 2, t: 0), 0x1C)
        XCTAssertEqual(BMP58xDriver.odrCode(rateHz: 25, p: 2, t: 0), 0x14)
        XCTAssertEqual(BMP58xDriver.odrCode(rateHz: 100, p: 2, t: 0), 0x0A)
        XCTAssertEqual(BMP58xDriver.odrCode(rateHz: 100, p: 0, t: 0), 0x0A)
        XCTAssertEqual(BMP58xDriver.odrCode(rateHz: 100, p: 4, t: 0), 0x0D)
        XCTAssertEqual(BMP58xDriver.odrCode(rateHz: 240, p: 0, t: 0), 0x00)
        XCTAssertEqual(BMP58xDriver.odrCode(rateHz: 240, p: 2, t: 0), 0x02)
        XCTAssertEqual(BMP58xDriver.odrCode(rateHz: 0.01, p: 2, t: 0), 0x1F)
        // The fit stays within 0.5 ms of the datasheet's CONTINUOUS-mode rates (Table 9).
        for (p, t, hz) in [(0, 0, 498.0), (1, 0, 374), (2, 0, 255), (3, 0, 155), (4, 0, 87), (5, 1, 46), (6, 2, 24), (7, 3, 12)] {
            XCTAssertEqual(BMP58xDriver.conversionMicroseconds(p: UInt8(p), t: UInt8(t)), 1_000_000 / hz, accuracy: 500, "P code \(p)")
        }
    }

    func testAChipThatFlagsTheConfigurationIsAClearError() throws {
        let (bus, sim) = try board()
        sim.conversionScale = 1.5  // a part slower than typical: 70 Hz does not fit P×16 on it
        let d = try BarometerDrivers.open(bus: bus, chip: "BMP581", address: nil)
        XCTAssertThrowsError(try d.configure(BarometerConfiguration(rateHz: 100, oversampling: .highResolution))) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .unexpectedResponse)
            let text = "\(e)"
            XCTAssertTrue(text.contains("OSR_EFF = 0x09 says P×16 T×1 does not fit 70.0 Hz"), text)
            XCTAssertTrue(text.contains("(the chip measures with P×2 T×2 instead); lower the barometer rate or its oversampling"), text)
        }
        try d.configure(BarometerConfiguration(rateHz: 25, oversampling: .highResolution))
        // IIR writes outside standby are ignored by the chip: the driver goes to standby first.
        try bus.writeRegister(0x47, 0x31, 0x3F)
        XCTAssertEqual(sim.registers[0x31], 0x24, "IIR coefficient 15 for P and T, kept")
    }

    // MARK: The first conversion

    func testNoReadingUntilTheFirstConversion() throws {
        let (bus, sim) = try board(autoConvert: false) { (1000, -12.5) }
        let d = try BarometerDrivers.open(bus: bus, chip: "auto", address: nil)
        XCTAssertEqual(sim.conversions, 0)
        bus.clearTrace()
        XCTAssertNil(try d.read())
        XCTAssertNil(try d.read())
        // Until data-ready, one byte of INT_STATUS a read; no data burst.
        XCTAssertEqual(bus.trace.map(\.written), [[0x27], [0x27]])
        XCTAssertEqual(bus.trace.map(\.readCount), [1, 1])
        sim.convert()
        let r = try XCTUnwrap(try d.read())
        XCTAssertEqual(r.pressureHPa, 1000, accuracy: 1e-4)
        XCTAssertEqual(r.celsius, -12.5)
        // Then the six data registers in one burst from 0x1D, and no more INT_STATUS.
        XCTAssertEqual(bus.trace.last?.written, [0x1D])
        XCTAssertEqual(bus.trace.last?.readCount, 6)
        bus.clearTrace()
        XCTAssertNotNil(try d.read())
        XCTAssertEqual(bus.trace.map(\.written), [[0x1D]])
        // Before configuration (data registers at their reset value): no reading, no error.
        let fresh = BMP58xDriver(bus: bus, address: 0x47)
        try fresh.reset()
        XCTAssertNil(try fresh.read())
    }

    /// A reset behind the driver's back (a brown-out) gives no reading until it is started again.
    func testAResetChipGivesNoReadingUntilRestarted() throws {
        let (bus, _) = try board()
        let d = try BarometerDrivers.open(bus: bus, chip: "BMP581", address: nil)
        XCTAssertNotNil(try d.read())
        try bus.writeRegister(0x47, 0x7E, 0xB6)
        XCTAssertNil(try d.read())
        try d.start(BarometerConfiguration())
        XCTAssertEqual(try XCTUnwrap(try d.read()).pressureHPa, 1013.25, accuracy: 1e-4)
    }

    // MARK: Values

    func testValuesEqualTheEnvironmentWithinResolution() throws {
        for name in ["BMP581", "BMP585"] {
            var weather = (hPa: 1013.25, celsius: 21.5)
            let (bus, _) = try board(name) { weather }
            let d = try BarometerDrivers.open(bus: bus, chip: "auto", address: nil)
            XCTAssertEqual(d.identity.name, name)
            for w in [(1013.25, 21.5), (1012.987654, -0.000001), (850.5, -39.99), (300.0, 85.0), (1250.0, -7.123456), (400.0, 18.5)] {
                weather = w
                let r = try XCTUnwrap(try d.read(), name)
                // Half an LSB: 1/128 Pa, 1/131072 °C.
                XCTAssertEqual(r.pressurePa, w.0 * 100, accuracy: 1.0 / 128, "\(name) \(w)")
                XCTAssertEqual(r.celsius, w.1, accuracy: 1.0 / 131_072, "\(name) \(w)")
                // The table's decode gives the same numbers from the bytes the driver read.
                let decoded = try XCTUnwrap(BarometerDrivers.chip(named: name)).decode(calibration: d.calibrationBytes, burst: d.lastBurst)
                XCTAssertEqual(decoded.pressurePa, r.pressurePa)
                XCTAssertEqual(decoded.celsius, r.celsius)
            }
        }
    }

    // MARK: Bus errors

    func testBusErrorsPropagate() throws {
        let (bus, _) = try board()
        let d = try BarometerDrivers.open(bus: bus, chip: "BMP581", address: nil)
        XCTAssertNotNil(try d.read())
        bus.inject(.ioError, at: 0x47, times: 1)
        XCTAssertThrowsError(try d.read()) { e in XCTAssertEqual((e as? I2CError)?.kind, .busFault) }
        // Only a NACK of the reset command itself is forgiven; a bus fault there is not.
        bus.inject(.ioError, at: 0x47, times: 1)
        XCTAssertThrowsError(try d.reset()) { e in XCTAssertEqual((e as? I2CError)?.kind, .busFault) }
        // A chip gone from the bus: the reset's NACK is forgiven, the INT_STATUS read's is not.
        bus.inject(.nack, at: 0x47)
        XCTAssertThrowsError(try d.reset()) { e in XCTAssertTrue((e as? I2CError)?.isAbsent ?? false, "\(e)") }
        XCTAssertThrowsError(try d.configure(BarometerConfiguration())) { e in XCTAssertTrue((e as? I2CError)?.isAbsent ?? false, "\(e)") }
        XCTAssertThrowsError(try d.read()) { e in XCTAssertTrue((e as? I2CError)?.isAbsent ?? false, "\(e)") }
        bus.clearFaults(at: 0x47)
        try d.start(BarometerConfiguration())
        XCTAssertEqual(try XCTUnwrap(try d.read()).pressureHPa, 1013.25, accuracy: 1e-4)
    }

    // MARK: The driver table

    func testAutoFindsEitherChipAtEitherAddress() throws {
        for name in ["BMP581", "BMP585"] {
            for address in [UInt8(0x47), 0x46] {
                let (bus, _) = try board(name, address: address)
                let d = try BarometerDrivers.open(bus: bus, chip: "auto", address: nil)
                XCTAssertEqual(d.identity.name, name)
                XCTAssertEqual(d.address, address)
                XCTAssertNotNil(try d.read())
                let named = try BarometerDrivers.open(bus: bus, chip: name.lowercased(), address: nil)
                XCTAssertEqual(named.address, address)
            }
        }
        XCTAssertTrue(BarometerDrivers.names.contains("BMP581") && BarometerDrivers.names.contains("BMP585"), "\(BarometerDrivers.names)")
        XCTAssertEqual(BMP58xDriver.bmp581.addresses, [0x47, 0x46], "the SDO-high strap (breakout default) first")
        // Nothing there: the error names where it looked.
        XCTAssertThrowsError(try BarometerDrivers.open(bus: SimulatedI2CBus(), chip: "auto", address: nil)) { e in
            XCTAssertTrue((e as? I2CError)?.isAbsent ?? false)
            XCTAssertTrue("\(e)".contains("BMP581 at 0x47/0x46, BMP585 at 0x47/0x46"), "\(e)")
        }
    }
}
