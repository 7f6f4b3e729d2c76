import XCTest
@testable import OSHPlatform
#if canImport(Glibc)
import Glibc
import OSHSimulation
#endif

final class I2CBusTests: XCTestCase {
    func testRegisterReadsAutoIncrementAndAreTraced() throws {
        let bus = SimulatedI2CBus(number: 1)
        let chip = RegisterMapDevice(registers: [0xD0: 0x58])
        chip.load([1, 2, 3, 4, 5, 6], at: 0xF7)
        bus.attach(chip, at: 0x76)
        XCTAssertEqual(try bus.readRegister(0x76, 0xD0), 0x58)
        XCTAssertEqual(try bus.readBlock(0x76, 0xF7, count: 6), [1, 2, 3, 4, 5, 6])
        try bus.writeRegister(0x76, 0xF4, 0x27)
        XCTAssertEqual(chip.registers[0xF4], 0x27)
        XCTAssertEqual(chip.writes.map { $0.register }, [0xF4])
        XCTAssertEqual(bus.trace.count, 3)
        XCTAssertEqual(bus.trace[1].written, [0xF7])
        XCTAssertEqual(bus.trace[1].read, [1, 2, 3, 4, 5, 6])
    }

    func testAbsentChipIsANackNamingTheBusAndAddress() {
        let bus = SimulatedI2CBus(number: 1)
        XCTAssertThrowsError(try bus.readRegister(0x77, 0xD0)) { e in
            guard let e = e as? I2CError else { return XCTFail("\(e)") }
            XCTAssertTrue(e.isAbsent)
            XCTAssertEqual(e.address, 0x77)
            XCTAssertTrue(e.description.contains("/dev/i2c-1 at 0x77"), e.description)
            XCTAssertTrue(e.description.contains("reading 1 byte at register 0xD0"), e.description)
        }
    }

    func testInjectedFaultsCountDownThenClear() throws {
        let bus = SimulatedI2CBus()
        bus.attach(RegisterMapDevice(registers: [0: 7]), at: 0x68)
        bus.inject(.ioError, at: 0x68, times: 2)
        for _ in 0..<2 {
            XCTAssertThrowsError(try bus.readRegister(0x68, 0)) { e in
                XCTAssertEqual((e as? I2CError)?.kind, .busFault)
                XCTAssertEqual((e as? I2CError)?.errno, EIO)
            }
        }
        XCTAssertEqual(try bus.readRegister(0x68, 0), 7)
        bus.inject(.timeout, at: 0x68)
        XCTAssertThrowsError(try bus.readRegister(0x68, 0))
        XCTAssertThrowsError(try bus.readRegister(0x68, 0))
        bus.clearFaults(at: 0x68)
        XCTAssertEqual(try bus.readRegister(0x68, 0), 7)
    }

    func testErrnoClassification() {
        XCTAssertEqual(I2CError.kind(forErrno: ENXIO), .noAcknowledge)
        XCTAssertEqual(I2CError.kind(forErrno: EREMOTEIO), .noAcknowledge)
        XCTAssertEqual(I2CError.kind(forErrno: EIO), .busFault)
        XCTAssertEqual(I2CError.kind(forErrno: ETIMEDOUT), .busFault)
        XCTAssertEqual(I2CError.kind(forErrno: ENOENT), .adapterMissing)
        XCTAssertEqual(I2CError.kind(forErrno: EACCES), .permissionDenied)
    }

    /// The real adapter code against a path that is not there: the message says how to enable I²C.
    func testMissingAdapterSaysHowToEnableIt() {
        XCTAssertThrowsError(try LinuxI2CBus(number: 250)) { e in
            guard let e = e as? I2CError else { return XCTFail("\(e)") }
            XCTAssertEqual(e.kind, .adapterMissing)
            XCTAssertTrue(e.description.contains("dtparam=i2c_arm=on"), e.description)
        }
    }
}
