import Foundation
import OSHCore
@testable import OSHPlatform
import XCTest
import OSHSimulation

/// The LPS25H driver over the simulated bus (SimulatedLPS25H, the datasheet's register map):
/// identification, reset and boot, configuration for a rate, the first sample, values, bus
/// errors, and the driver table's `auto` beside the LPS22HB (same addresses, same ID register).
final class LPS25HDriverTests: XCTestCase {
    private func rows() throws -> [[String: String]] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("OSHCoreTests/Fixtures/baro/lps25h_vectors.csv")
        var lines = try String(contentsOf: url, encoding: .utf8).split(whereSeparator: \.isNewline).map(String.init)
        let header = lines.removeFirst().split(separator: ",").map(String.init)
        // The `kind` column may be quoted with commas inside: the columns after it are plain.
        return lines.map { l in
            let f = l.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            return Dictionary(uniqueKeysWithValues: zip(header, [f[0], ""] + f.suffix(header.count - 2)))
        }
    }

    private func board(
        address: UInt8? = nil, autoConvert: Bool = true,
        environment: @escaping BarometerEnvironment = { (1013.25, 21.5) }
    ) throws -> (SimulatedI2CBus, SimulatedLPS25H) {
        let bus = SimulatedI2CBus()
        let device = try SimulatedBarometerBoard.attach(to: bus, chip: "LPS25H", address: address, environment: environment)
        let sim = try XCTUnwrap(device as? SimulatedLPS25H)
        sim.autoConvert = autoConvert
        return (bus, sim)
    }

    // MARK: Every reference row, through the driver

    func testEveryRowThroughTheDriver() throws {
        let all = try rows()
        XCTAssertEqual(all.count, 40)
        for (i, r) in all.enumerated() {
            let bus = SimulatedI2CBus(recordsTrace: false)
            let sim = SimulatedLPS25H()
            let burst = ["PRESS_OUT_XL_0x28", "PRESS_OUT_L_0x29", "PRESS_OUT_H_0x2A", "TEMP_OUT_L_0x2B", "TEMP_OUT_H_0x2C"]
                .map { UInt8(r[$0] ?? "", radix: 16) ?? 0 }
            sim.fixedRaw = burst.withUnsafeBytes { LPS25HRaw(burst: $0) }
            bus.attach(sim, at: i % 2 == 0 ? 0x5C : 0x5D)
            // The three oversampling settings: bypass and both FIFO mean modes read the same bytes.
            let o = BarometerOversampling.allCases[i % 3]
            let driver = try BarometerDrivers.open(
                bus: bus, chip: "auto", address: nil, configuration: BarometerConfiguration(oversampling: o))
            XCTAssertEqual(driver.identity.name, "LPS25H")
            let v = try XCTUnwrap(try driver.read(), "case \(r["case"] ?? "")")
            XCTAssertEqual(driver.lastBurst, burst, "case \(r["case"] ?? "")")
            XCTAssertEqual(v.pressureHPa, Double(r["pressure_hPa"] ?? ""), "case \(r["case"] ?? "")")
            XCTAssertEqual(v.celsius, Double(r["temperature_degC"] ?? ""), "case \(r["case"] ?? "")")
        }
    }

    // MARK: Identification

    func testIdentifiesAndRefusesAnLPS22HB() throws {
        let (bus, _) = try board()
        let d = LPS25HDriver(bus: bus, address: 0x5C)
        XCTAssertEqual(try d.identify(), 0xBD)
        XCTAssertEqual(d.label, "LPS25H at 0x5C on /dev/i2c-1")
        XCTAssertEqual(d.calibrationBytes, [])
        XCTAssertTrue(LPS25HDriver.lps25h.note.hasPrefix("on the Raspberry Pi Sense HAT at 0x5C"))
        // An LPS22HB where an LPS25H was configured: the error names the value and what to set.
        let other = SimulatedI2CBus()
        try SimulatedBarometerBoard.attach(to: other, chip: "LPS22HB", address: 0x5C) { (1000, 20) }
        XCTAssertThrowsError(try BarometerDrivers.open(bus: other, chip: "LPS25H", address: nil)) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .unexpectedResponse)
            let text = "\(e)"
            XCTAssertTrue(text.contains("register 0x0F holds 0xB1, not a LPS25H (0xBD)"), text)
            XCTAssertTrue(text.contains("that ID is a LPS22HB: set the chip to LPS22HB or auto"), text)
        }
        // And the other way round.
        let (mine, _) = try board(address: 0x5D)
        XCTAssertThrowsError(try BarometerDrivers.open(bus: mine, chip: "LPS22HB", address: nil)) { e in
            XCTAssertTrue("\(e)".contains("that ID is a LPS25H: set the chip to LPS25H or auto"), "\(e)")
        }
    }

    // MARK: Reset and boot

    func testResetIsSoftwareResetThenBoot() throws {
        let (bus, sim) = try board()
        let d = LPS25HDriver(bus: bus, address: 0x5C)
        try bus.writeRegister(0x5C, 0x10, 0x0F)  // something other than the reset value
        sim.clearWrites()
        try d.reset()
        XCTAssertEqual(sim.resets, 1)
        XCTAssertEqual(sim.boots, 1)
        XCTAssertEqual(sim.writes.map { [$0.register, $0.value] }, [[0x21, 0x04], [0x21, 0x80]])
        XCTAssertEqual(sim.registers[0x10], 0x05, "RES_CONF back to its reset value")
        // Each bit was polled until clear (the model shows it set once).
        XCTAssertEqual(bus.trace.filter { $0.written == [0x21] }.map(\.read), [[0x04], [0x00], [0x80], [0x00]])
        // A chip that never clears SWRESET: a bounded wait and a clear error.
        let stuck = SimulatedI2CBus(recordsTrace: false)
        stuck.attach(RegisterMapDevice(registers: [0x0F: 0xBD, 0x21: 0x04]), at: 0x5C)
        XCTAssertThrowsError(try LPS25HDriver(bus: stuck, address: 0x5C).reset()) { e in
            XCTAssertTrue("\(e)".contains("waiting for the software reset"), "\(e)")
            XCTAssertTrue("\(e)".contains("power-cycle the chip"), "\(e)")
        }
    }

    // MARK: Configuration

    func testConfigurationForEachOversamplingAndRate() throws {
        let (bus, sim) = try board()
        let d = try XCTUnwrap(try BarometerDrivers.open(bus: bus, chip: "LPS25H", address: nil) as? LPS25HDriver)
        // The default (standard): power down; RES_CONF 0x05; FIFO to bypass, FIFO_EN, mean of 8;
        // then PD | ODR 25 Hz | BDU.
        XCTAssertEqual(
            sim.writes.map { [$0.register, $0.value] },
            [[0x21, 0x04], [0x21, 0x80], [0x20, 0x00], [0x10, 0x05], [0x2E, 0x00], [0x21, 0x40], [0x2E, 0xC7], [0x20, 0xC4]])
        XCTAssertEqual(d.written.ctrl1, 0xC4)
        sim.clearWrites()
        try d.configure(BarometerConfiguration(rateHz: 5, oversampling: .highResolution))
        XCTAssertEqual(
            sim.writes.map { [$0.register, $0.value] },
            [[0x20, 0x00], [0x10, 0x05], [0x2E, 0x00], [0x21, 0x40], [0x2E, 0xDF], [0x20, 0xC4]])
        sim.clearWrites()
        // Low power: no FIFO, averaging 8/8, the lowest ODR at or above the agent's rate.
        try d.configure(BarometerConfiguration(rateHz: 5, oversampling: .lowPower))
        XCTAssertEqual(
            sim.writes.map { [$0.register, $0.value] }, [[0x20, 0x00], [0x10, 0x00], [0x2E, 0x00], [0x21, 0x00], [0x20, 0xA4]])
        XCTAssertEqual(sim.registers[0x21] & 0x0A, 0, "AUTO_ZERO and I2C_DIS never set")
        for (rate, code) in [(0.5, 1), (1, 1), (1.5, 2), (7, 2), (10, 3), (12.5, 3), (20, 4), (25, 4), (100, 4)] as [(Double, UInt8)] {
            XCTAssertEqual(LPS25HDriver.odrCode(rateHz: rate), code, "\(rate) Hz")
            XCTAssertEqual(LPS25HDriver.settings(BarometerConfiguration(rateHz: rate, oversampling: .lowPower)).ctrl1, 0x84 | code << 4)
        }
    }

    /// Another program changing the chip under us is caught by the read-back.
    func testAConfigurationThatDoesNotStickIsAClearError() throws {
        let bus = SimulatedI2CBus(recordsTrace: false)
        // A register file that ignores writes to FIFO_CTRL.
        final class Stubborn: RegisterMapDevice {
            override func writeRegister(_ register: UInt8, _ value: UInt8) { if register != 0x2E { super.writeRegister(register, value) } }
        }
        bus.attach(Stubborn(registers: [0x0F: 0xBD]), at: 0x5C)
        let d = LPS25HDriver(bus: bus, address: 0x5C)
        XCTAssertThrowsError(try d.configure(BarometerConfiguration())) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .unexpectedResponse)
            XCTAssertTrue("\(e)".contains("FIFO_CTRL reads back 0x00 after writing 0xC7"), "\(e)")
        }
    }

    // MARK: The first sample and how a read is made

    func testNoReadingUntilTheFirstSampleThenTwoTransactions() throws {
        let (bus, sim) = try board(autoConvert: false) { (1000, -12.5) }
        let d = try BarometerDrivers.open(bus: bus, chip: "auto", address: nil)
        XCTAssertEqual(sim.conversions, 0)
        bus.clearTrace()
        XCTAssertNil(try d.read())
        XCTAssertNil(try d.read())
        // Until P_DA: STATUS and PRESS_OUT, one transaction, auto-increment bit set.
        XCTAssertEqual(bus.trace.map(\.written), [[0xA7], [0xA7]])
        XCTAssertEqual(bus.trace.map(\.readCount), [4, 4])
        sim.convert()
        bus.clearTrace()
        let r = try XCTUnwrap(try d.read())
        XCTAssertEqual(r.pressureHPa, 1000, accuracy: 0.5 / 4096)
        XCTAssertEqual(r.celsius, -12.5, accuracy: 0.5 / 480)
        // Then TEMP_OUT apart (the FIFO is on in the standard setting).
        XCTAssertEqual(bus.trace.map(\.written), [[0xA7], [0xAB]])
        XCTAssertEqual(bus.trace.map(\.readCount), [4, 2])
        // Later reads give the registers' newest values whether or not P_DA is set again.
        XCTAssertNotNil(try d.read())
        // Reconfiguring waits for a new first sample.
        try d.configure(BarometerConfiguration())
        XCTAssertNil(try d.read())
    }

    /// A driver that read five bytes from 0x28 with the FIFO on would get pressure twice: the model
    /// wraps, and the bytes show it.
    func testTheFIFOWrapsAnAdvancingReadWithinThePressureRegisters() throws {
        let (bus, sim) = try board()
        _ = try BarometerDrivers.open(bus: bus, chip: "LPS25H", address: nil)
        sim.fixedRaw = LPS25HRaw(pressure: 0x3FF58D, temperature: -8068)
        sim.convert()
        let five = try bus.readBlock(0x5C, 0xA8, count: 5)
        XCTAssertEqual(five, [0x8D, 0xF5, 0x3F, 0x8D, 0xF5])
        // Without the auto-increment bit the chip repeats one register.
        XCTAssertEqual(try bus.readBlock(0x5C, 0x28, count: 3), [0x8D, 0x8D, 0x8D])
    }

    // MARK: Values

    func testValuesEqualTheEnvironmentWithinResolution() throws {
        var weather = (hPa: 1013.25, celsius: 21.5)
        let (bus, _) = try board { weather }
        for o in BarometerOversampling.allCases {
            let d = try BarometerDrivers.open(bus: bus, chip: "auto", address: nil, configuration: BarometerConfiguration(oversampling: o))
            XCTAssertEqual(d.identity.name, "LPS25H")
            for w in [(1013.25, 21.5), (1012.987654, -0.000001), (850.5, -25.5), (300.0, 85.0), (1250.0, 105.0), (400.0, 18.5)] {
                weather = w
                let r = try XCTUnwrap(try d.read(), "\(o) \(w)")
                // Half an LSB: 1/8192 hPa, 1/960 °C.
                XCTAssertEqual(r.pressureHPa, w.0, accuracy: 0.5 / 4096, "\(o) \(w)")
                XCTAssertEqual(r.celsius, w.1, accuracy: 0.5 / 480, "\(o) \(w)")
                let decoded = try XCTUnwrap(BarometerDrivers.chip(named: "lps25h")).decode(
                    calibration: d.calibrationBytes, burst: d.lastBurst)
                XCTAssertEqual(decoded.pressureHPa, r.pressureHPa)
                XCTAssertEqual(decoded.celsius, r.celsius)
            }
        }
    }

    // MARK: Bus errors

    func testBusErrorsPropagate() throws {
        let (bus, _) = try board()
        let d = try BarometerDrivers.open(bus: bus, chip: "LPS25H", address: nil)
        XCTAssertNotNil(try d.read())
        bus.inject(.ioError, at: 0x5C, times: 1)
        XCTAssertThrowsError(try d.read()) { e in XCTAssertEqual((e as? I2CError)?.kind, .busFault) }
        // The second transaction of a read (TEMP_OUT) failing is an error too, not half a value.
        final class FailTemperature: SimulatedI2CDevice {
            let chip: SimulatedLPS25H
            var fail = false
            init(_ chip: SimulatedLPS25H) { self.chip = chip }
            func transfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws {
                if fail, write.first == 0xAB { throw SimulatedI2CFault.timeout }
                try chip.transfer(write: write, read: read)
            }
        }
        let wrapped = FailTemperature(try XCTUnwrap(bus.device(at: 0x5C) as? SimulatedLPS25H))
        bus.attach(wrapped, at: 0x5C)
        wrapped.fail = true
        XCTAssertThrowsError(try d.read()) { e in
            XCTAssertEqual((e as? I2CError)?.isAbsent, false, "\(e)")
            XCTAssertEqual((e as? I2CError)?.errno, ETIMEDOUT, "\(e)")
        }
        wrapped.fail = false
        XCTAssertNotNil(try d.read())
        bus.inject(.nack, at: 0x5C)
        XCTAssertThrowsError(try d.reset()) { e in XCTAssertTrue((e as? I2CError)?.isAbsent ?? false, "\(e)") }
        XCTAssertThrowsError(try d.configure(BarometerConfiguration())) { e in XCTAssertTrue((e as? I2CError)?.isAbsent ?? false, "\(e)") }
        XCTAssertThrowsError(try d.read()) { e in XCTAssertTrue((e as? I2CError)?.isAbsent ?? false, "\(e)") }
        bus.clearFaults(at: 0x5C)
        try d.start(BarometerConfiguration())
        XCTAssertEqual(try XCTUnwrap(try d.read()).pressureHPa, 1013.25, accuracy: 0.5 / 4096)
    }

    // MARK: The driver table

    func testAutoTellsTheLPS25HFromAnLPS22HBAtTheSameAddress() throws {
        for address in [UInt8(0x5C), 0x5D] {
            let (bus, _) = try board(address: address)
            let d = try BarometerDrivers.open(bus: bus, chip: "auto", address: nil)
            XCTAssertEqual(d.identity.name, "LPS25H")
            XCTAssertEqual(d.address, address)
            XCTAssertNotNil(try d.read())
            // The LPS22HB was asked first at both addresses (it comes first in the table) and refused.
            XCTAssertEqual(try BarometerDrivers.open(bus: bus, chip: "lps25h", address: nil).address, address)
        }
        // An LPS22HB at 0x5C is an LPS22HB, not an LPS25H.
        let other = SimulatedI2CBus()
        try SimulatedBarometerBoard.attach(to: other, chip: "LPS22HB", address: 0x5C) { (1000, 20) }
        XCTAssertEqual(try BarometerDrivers.open(bus: other, chip: "auto", address: nil).identity.name, "LPS22HB")
        XCTAssertEqual(LPS25HDriver.lps25h.addresses, [0x5C, 0x5D], "the Sense HAT's strap first")
        XCTAssertTrue(BarometerDrivers.names.contains("LPS25H"))
        // Nothing there: the error names where it looked.
        XCTAssertThrowsError(try BarometerDrivers.open(bus: SimulatedI2CBus(), chip: "LPS25H", address: nil)) { e in
            XCTAssertTrue((e as? I2CError)?.isAbsent ?? false)
            XCTAssertTrue("\(e)".contains("LPS25H at 0x5C/0x5D"), "\(e)")
        }
    }
}
