import OSHCore
@testable import OSHPlatform
import OSHSimulation
import XCTest

/// The SHT4x driver over the simulated bus: recognised by its serial number's CRC, measurements
/// pipelined (each read collects the previous one's), a corrupted word refused, the table's
/// `auto` finding it at any of its addresses.
final class HygrometerDriverTests: XCTestCase {
    func testFoundByAutoStartedAndReadPipelined() throws {
        let bus = SimulatedI2CBus(recordsTrace: true)
        var air = (celsius: 24.0, percent: 40.0)
        let sim = try XCTUnwrap(try SimulatedHygrometerBoard.attach(to: bus, chip: "SHT41", address: 0x45) { air } as? SimulatedSHT4x)
        let d = try HygrometerDrivers.open(bus: bus, chip: "auto", address: nil)
        XCTAssertEqual(d.identity.name, "SHT4x")
        XCTAssertEqual(d.address, 0x45)
        XCTAssertEqual((d as? SHT4xDriver)?.serialNumber, 0x1234_5678)
        XCTAssertEqual(sim.resets, 1)
        usleep(12_000)  // the high-precision measurement's 8.3 ms
        let first = try XCTUnwrap(try d.read())
        XCTAssertEqual(first.celsius, 24, accuracy: 0.01)
        XCTAssertEqual(first.humidityPercent, 40, accuracy: 0.01)
        air = (18.5, 77.0)
        usleep(12_000)
        let second = try XCTUnwrap(try d.read(), "the measurement the first read started")
        XCTAssertEqual(second.celsius, 24, accuracy: 0.01, "a reading is the air at the previous read")
        usleep(12_000)
        let third = try XCTUnwrap(try d.read())
        XCTAssertEqual(third.celsius, 18.5, accuracy: 0.01)
        XCTAssertEqual(third.humidityPercent, 77, accuracy: 0.01)
        XCTAssertEqual(sim.measurements, 4, "start, then one per read")
    }

    func testANamedAliasAnAbsentChipAndAnotherChipAtItsAddress() throws {
        let bus = SimulatedI2CBus(recordsTrace: false)
        XCTAssertThrowsError(try HygrometerDrivers.open(bus: bus, chip: "sht45", address: nil)) { e in
            XCTAssertTrue((e as? I2CError)?.isAbsent ?? false, "\(e)")
            XCTAssertTrue("\(e)".contains("SHT4x at 0x44/0x45/0x46"), "\(e)")
        }
        XCTAssertThrowsError(try HygrometerDrivers.open(bus: bus, chip: "HDC1080", address: nil)) { e in
            XCTAssertTrue("\(e)".contains("not a known chip; use one of SHT4x"), "\(e)")
        }
        // A register-map chip at 0x44 answers the serial-number command with register bytes: no CRC holds.
        let other = RegisterMapDevice()
        other.load([0x12, 0x34, 0x56, 0x78, 0x9A, 0xBC], at: 0x00)
        bus.attach(other, at: 0x44)
        XCTAssertThrowsError(try HygrometerDrivers.open(bus: bus, chip: "SHT40", address: 0x44)) { e in
            guard let i = e as? I2CError else { return XCTFail("\(e)") }
            XCTAssertEqual(i.kind, .unexpectedResponse, "\(e)")
            XCTAssertTrue("\(e)".contains("another chip at this address?"), "\(e)")
        }
    }

    func testACorruptedWordIsABusFaultNotAValue() throws {
        let bus = SimulatedI2CBus(recordsTrace: false)
        let sim = try XCTUnwrap(try SimulatedHygrometerBoard.attach(to: bus, chip: "SHT4x") { (20, 50) } as? SimulatedSHT4x)
        let d = try HygrometerDrivers.open(bus: bus, chip: "SHT4x", address: nil)
        usleep(12_000)
        sim.corruptNextCRC = true
        XCTAssertThrowsError(try d.read()) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .busFault, "\(e)")
            XCTAssertTrue("\(e)".contains("CRC"), "\(e)")
        }
        usleep(12_000)
        XCTAssertEqual(try XCTUnwrap(try d.read()).celsius, 20, accuracy: 0.01, "the next measurement was started")
    }

    /// Another program's read-serial-number command between the agent's measure command and its
    /// read: the chip answers whoever reads next, so the agent gets the serial number, CRCs and
    /// all. Seen on the virtual Pi (osh-edge probe beside the running agent: −34.59 °C, 10.49 %RH,
    /// which are the serial's two words). That is no reading; the next one is the air again.
    func testTheSerialNumberWhereAMeasurementWasDueIsNoReading() throws {
        let bus = SimulatedI2CBus(recordsTrace: false)
        _ = try SimulatedHygrometerBoard.attach(to: bus, chip: "SHT4x") { (21.5, 48) }
        let d = try XCTUnwrap(try HygrometerDrivers.open(bus: bus, chip: "SHT4x", address: nil) as? SHT4xDriver)
        usleep(12_000)
        XCTAssertEqual(try XCTUnwrap(try d.read()).celsius, 21.5, accuracy: 0.01)
        var command = SHT4x.readSerialNumber
        try withUnsafeBytes(of: &command) {
            try bus.transfer(address: 0x44, write: $0, read: UnsafeMutableRawBufferPointer(start: nil, count: 0))
        }
        XCTAssertNil(try d.read(), "the serial number is not the air")
        XCTAssertEqual(d.serialNumberAnswers, 1)
        usleep(12_000)
        let next = try XCTUnwrap(try d.read(), "the measure command went out again")
        XCTAssertEqual(next.celsius, 21.5, accuracy: 0.01)
        XCTAssertEqual(next.humidityPercent, 48, accuracy: 0.01)
    }
}
