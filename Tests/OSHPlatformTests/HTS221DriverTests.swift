import Foundation
import OSHCore
@testable import OSHPlatform
import OSHSimulation
import XCTest

/// The HTS221 driver over the simulated bus (SimulatedHTS221, the datasheet's register map with a
/// part's calibration): identification, boot, the calibration read, continuous mode at a rate,
/// the first sample, values, bus errors, and the table's `auto` finding it on a Sense HAT's bus.
final class HTS221DriverTests: XCTestCase {
    private func board(
        autoConvert: Bool = true, air: @escaping HygrometerEnvironment = { (21.5, 45) }
    )
        throws -> (SimulatedI2CBus, SimulatedHTS221)
    {
        let bus = SimulatedI2CBus()
        let sim = try XCTUnwrap(try SimulatedHygrometerBoard.attach(to: bus, chip: "HTS221", environment: air) as? SimulatedHTS221)
        sim.autoConvert = autoConvert
        return (bus, sim)
    }

    /// Half a count of the part's calibration, in °C and %RH: the resolution a value comes back with.
    private func halfCount(_ c: HTS221Calibration) -> (celsius: Double, percent: Double) {
        (
            abs(Double(c.t1DegCx8) - Double(c.t0DegCx8)) / 8 / abs(Double(c.t1Out) - Double(c.t0Out)) / 2,
            abs(Double(c.h1RHx2) - Double(c.h0RHx2)) / 2 / abs(Double(c.h1T0Out) - Double(c.h0T0Out)) / 2
        )
    }

    // MARK: Identification

    func testIdentifiesAndRefusesAnotherChip() throws {
        let (bus, _) = try board()
        let d = HTS221Driver(bus: bus, address: 0x5F)
        try d.identify()
        XCTAssertEqual(d.label, "HTS221 at 0x5F on /dev/i2c-1")
        XCTAssertTrue(HTS221Driver.hts221.note.hasPrefix("on the Raspberry Pi Sense HAT"))
        let other = SimulatedI2CBus(recordsTrace: false)
        other.attach(RegisterMapDevice(registers: [0x0F: 0xBD]), at: 0x5F)
        XCTAssertThrowsError(try HygrometerDrivers.open(bus: other, chip: "HTS221", address: nil)) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .unexpectedResponse)
            XCTAssertTrue("\(e)".contains("WHO_AM_I (0x0F) holds 0xBD, not 0xBC — another chip at this address?"), "\(e)")
        }
    }

    // MARK: Start: boot, calibration, continuous mode

    func testStartBootsReadsTheCalibrationAndRunsContinuously() throws {
        let (bus, sim) = try board()
        let d = try XCTUnwrap(try HygrometerDrivers.open(bus: bus, chip: "hts221", address: nil) as? HTS221Driver)
        XCTAssertEqual(sim.boots, 1)
        // Power down, BOOT, AV_CONF (16 T / 32 H samples), then PD | BDU | 12.5 Hz.
        XCTAssertEqual(sim.writes.map { [$0.register, $0.value] }, [[0x20, 0x00], [0x21, 0x80], [0x10, 0x1B], [0x20, 0x87]])
        // BOOT polled until clear, then the 16 calibration bytes in one read with the auto-increment bit.
        let afterBoot = try XCTUnwrap(bus.trace.firstIndex { $0.written == [0x21, 0x80] })
        XCTAssertEqual(bus.trace[(afterBoot + 1)...].prefix(3).map(\.written), [[0x21], [0x21], [0xB0]])
        XCTAssertEqual(bus.trace[afterBoot + 1].read, [0x80], "BOOT read set once")
        XCTAssertEqual(d.calibrationBytes, SimulatedHTS221.partCalibration)
        XCTAssertEqual(d.calibration, try HTS221Calibration(registers: SimulatedHTS221.partCalibration))
        XCTAssertEqual(d.ctrl1, 0x87)
        XCTAssertEqual(sim.registers[0x21], 0, "heater off, BOOT cleared")
    }

    func testTheRateChoosesTheODR() throws {
        for (rate, code) in [(0.2, 1), (1, 1), (2, 2), (7, 2), (8, 3), (10, 3), (50, 3)] as [(Double, UInt8)] {
            XCTAssertEqual(HTS221Driver.odrCode(rateHz: rate), code, "\(rate) Hz")
            let (bus, sim) = try board()
            let d = HTS221Driver(bus: bus, address: 0x5F)
            d.rateHz = rate
            try d.start()
            XCTAssertEqual(sim.registers[0x20], 0x84 | code, "\(rate) Hz")
        }
    }

    /// A driver that did not wait for BOOT would read the calibration as zeros; ours waits, and a
    /// chip that never finishes, or a region that is no calibration, is a clear error.
    func testBootThatNeverEndsAndACalibrationThatIsNone() throws {
        let stuck = SimulatedI2CBus(recordsTrace: false)
        final class NeverBoots: RegisterMapDevice {
            override func readRegister(_ register: UInt8) -> UInt8 { register == 0x21 ? 0x80 : super.readRegister(register) }
        }
        stuck.attach(NeverBoots(registers: [0x0F: 0xBC]), at: 0x5F)
        XCTAssertThrowsError(try HTS221Driver(bus: stuck, address: 0x5F).start()) { e in
            XCTAssertTrue("\(e)".contains("waiting for the calibration reload (BOOT)"), "\(e)")
            XCTAssertTrue("\(e)".contains("power-cycle the chip"), "\(e)")
        }
        let blank = SimulatedI2CBus(recordsTrace: false)
        blank.attach(SimulatedHTS221(calibration: [UInt8](repeating: 0xFF, count: 16)), at: 0x5F)
        XCTAssertThrowsError(try HygrometerDrivers.open(bus: blank, chip: "auto", address: nil)) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .unexpectedResponse)
            XCTAssertTrue("\(e)".contains("reading the calibration (0x30–0x3F): HTS221 calibration is not a part's"), "\(e)")
        }
    }

    // MARK: Reads

    func testFirstSampleThenOnlyNewSamples() throws {
        var air = (celsius: 24.0, percent: 40.0)
        let (bus, sim) = try board(autoConvert: false) { air }
        let d = try HygrometerDrivers.open(bus: bus, chip: "auto", address: nil)
        let half = halfCount(try XCTUnwrap((d as? HTS221Driver)?.calibration))
        bus.clearTrace()
        XCTAssertNil(try d.read(), "no sample yet")
        // One transaction a read: STATUS, H_OUT, T_OUT from 0x27 with the auto-increment bit.
        XCTAssertEqual(bus.trace.map(\.written), [[0xA7]])
        XCTAssertEqual(bus.trace.map(\.readCount), [5])
        sim.convert()
        let first = try XCTUnwrap(try d.read())
        XCTAssertEqual(first.celsius, 24, accuracy: half.celsius)
        XCTAssertEqual(first.humidityPercent, 40, accuracy: half.percent)
        XCTAssertNil(try d.read(), "the chip made no sample since the previous read")
        air = (18.5, 77)
        sim.convert()
        let second = try XCTUnwrap(try d.read())
        XCTAssertEqual(second.celsius, 18.5, accuracy: half.celsius)
        XCTAssertEqual(second.humidityPercent, 77, accuracy: half.percent)
        // Only one output new: still a reading (the other register holds its last sample).
        sim.registers[0x27] = 0x01
        XCTAssertNotNil(try d.read())
        // Only one output ever produced since start: not yet a reading.
        let (b2, s2) = try board(autoConvert: false)
        let d2 = try HygrometerDrivers.open(bus: b2, chip: "HTS221", address: nil)
        s2.registers[0x27] = 0x02
        XCTAssertNil(try d2.read())
        s2.registers[0x27] = 0x01
        XCTAssertNotNil(try d2.read())
    }

    func testValuesEqualTheAirWithinResolution() throws {
        var air = (celsius: 21.5, percent: 45.0)
        let (bus, _) = try board { air }
        let d = try HygrometerDrivers.open(bus: bus, chip: "auto", address: nil)
        let half = halfCount(try XCTUnwrap((d as? HTS221Driver)?.calibration))
        for a in [(21.5, 45.0), (-10, 5), (0, 0.5), (60, 95), (33.25, 72), (12.345, 55.555)] {
            air = a
            let r = try XCTUnwrap(try d.read(), "\(a)")
            XCTAssertEqual(r.celsius, a.0, accuracy: half.celsius + 1e-12, "\(a)")
            XCTAssertEqual(r.humidityPercent, a.1, accuracy: half.percent + 1e-12, "\(a)")
        }
        // Beyond the line's ends humidity is held to 0–100 %.
        air = (20, 130)
        XCTAssertEqual(try XCTUnwrap(try d.read()).humidityPercent, 100)
    }

    // MARK: Bus errors

    func testBusErrorsPropagateAndReopenWorks() throws {
        let (bus, _) = try board()
        let d = try HygrometerDrivers.open(bus: bus, chip: "HTS221", address: nil)
        XCTAssertNotNil(try d.read())
        bus.inject(.ioError, at: 0x5F, times: 1)
        XCTAssertThrowsError(try d.read()) { e in XCTAssertEqual((e as? I2CError)?.kind, .busFault) }
        bus.inject(.nack, at: 0x5F)
        XCTAssertThrowsError(try d.read()) { e in XCTAssertTrue((e as? I2CError)?.isAbsent ?? false, "\(e)") }
        XCTAssertThrowsError(try d.start()) { e in XCTAssertTrue((e as? I2CError)?.isAbsent ?? false, "\(e)") }
        // After a failed start it does not read with a stale calibration.
        bus.clearFaults(at: 0x5F)
        XCTAssertThrowsError(try d.read()) { e in XCTAssertTrue("\(e)".contains("before the chip was started"), "\(e)") }
        try d.start()
        XCTAssertEqual(try XCTUnwrap(try d.read()).celsius, 21.5, accuracy: 0.02)
        // A driver made but never started (an absent chip at agent start) says so too.
        XCTAssertThrowsError(try HTS221Driver(bus: bus, address: 0x5F).read())
    }

    // MARK: The driver table

    /// A Sense HAT's bus: the LED matrix's microcontroller at 0x46 (an SHT4x address) answers the
    /// SHT4x's serial-number command with register bytes whose CRCs fail, and `auto` goes on to
    /// the HTS221 at 0x5F.
    func testAutoFindsTheHTS221OnASenseHATsBus() throws {
        let (bus, _) = try board()
        bus.attach(RegisterMapDevice(), at: 0x46)
        try SimulatedBarometerBoard.attach(to: bus, chip: "LPS25H") { (1013.25, 30) }
        let d = try HygrometerDrivers.open(bus: bus, chip: "auto", address: nil)
        XCTAssertEqual(d.identity.name, "HTS221")
        XCTAssertEqual(d.address, 0x5F)
        XCTAssertEqual(HygrometerDrivers.names, ["SHT4x", "HTS221"])
        let baro = try BarometerDrivers.open(bus: bus, chip: "auto", address: nil)
        XCTAssertEqual(baro.identity.name, "LPS25H")
        XCTAssertEqual(baro.address, 0x5C)
        // Nothing at 0x5F: absent, naming both chips' addresses.
        XCTAssertThrowsError(try HygrometerDrivers.open(bus: SimulatedI2CBus(recordsTrace: false), chip: "auto", address: nil)) { e in
            XCTAssertTrue((e as? I2CError)?.isAbsent ?? false, "\(e)")
            XCTAssertTrue("\(e)".contains("SHT4x at 0x44/0x45/0x46, HTS221 at 0x5F"), "\(e)")
        }
    }
}
