import XCTest
@testable import OSHPlatform
#if canImport(Glibc)
import Glibc
@testable import OSHSimulation
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

    /// The fault file another process edits (OSH_EDGE_SIM_FAULTS): `i2c fail ADDR` NACKs every
    /// transaction to ADDR with EREMOTEIO, as bcm2835 reports a chip that is gone; its line
    /// removed, or the file gone, the chip answers again. Other chips and other lines are left alone.
    func testFaultFileFailsAChipUntilItsLineGoes() throws {
        Log.muted = true
        let (dir, path) = try faultFilePath()
        defer { unlink(path); rmdir(dir) }
        let bus = SimulatedI2CBus(number: 1, faultFile: path)
        bus.attach(RegisterMapDevice(registers: [0xD0: 0x58]), at: 0x76)
        bus.attach(RegisterMapDevice(registers: [0x75: 0x71]), at: 0x68)
        XCTAssertEqual(try bus.readRegister(0x76, 0xD0), 0x58, "no file: no faults")

        try StateFiles.write(Array("# soak\ni2c fail 0x76\nserial unplug\n".utf8), to: path)
        usleep(1_050_000)  // the file is looked at once a second at most
        XCTAssertThrowsError(try bus.readRegister(0x76, 0xD0)) { e in
            XCTAssertEqual((e as? I2CError)?.errno, EREMOTEIO)
            XCTAssertEqual((e as? I2CError)?.isAbsent, true)
        }
        XCTAssertEqual(try bus.readRegister(0x68, 0x75), 0x71, "other chips answer")
        XCTAssertEqual(bus.fileFailedAddresses, [0x76])

        try StateFiles.write(Array("i2c fail 104\n".utf8), to: path)
        usleep(1_050_000)
        XCTAssertEqual(try bus.readRegister(0x76, 0xD0), 0x58, "its line removed: it answers again")
        XCTAssertThrowsError(try bus.readRegister(0x68, 0x75), "decimal 104 = 0x68")

        unlink(path)
        usleep(1_050_000)
        XCTAssertEqual(try bus.readRegister(0x68, 0x75), 0x71, "the file gone: no faults")
        XCTAssertTrue(bus.fileFailedAddresses.isEmpty)
    }

    /// Looked at no more than once per interval (on the transaction path, so a bus nobody uses
    /// never looks), and re-read only when its mtime, size or inode changed.
    func testFaultFileIsLookedAtOncePerIntervalAndReadOnChange() throws {
        Log.muted = true
        let (dir, path) = try faultFilePath()
        defer { unlink(path); rmdir(dir) }
        let watch = FaultFileWatch(path: path, bus: 1)
        watch.refresh(now: 10_000_000_000)
        XCTAssertEqual(watch.failing, [])
        try StateFiles.write(Array("i2c fail 0x68\n".utf8), to: path)
        watch.refresh(now: 10_900_000_000)
        XCTAssertEqual(watch.failing, [], "0.9 s after the last look: not looked at")
        watch.refresh(now: 11_000_000_000)
        XCTAssertEqual(watch.failing, [0x68])
        try StateFiles.write(Array("i2c fail 0x77\n".utf8), to: path)
        watch.refresh(now: 11_500_000_000)
        XCTAssertEqual(watch.failing, [0x68])
        watch.refresh(now: 12_000_000_000)
        XCTAssertEqual(watch.failing, [0x77])
    }

    /// A scratch directory and the fault file's path in it (not created).
    private func faultFilePath() throws -> (dir: String, path: String) {
        var template = Array("/tmp/osh-i2c-faults-XXXXXX".utf8CString)
        guard let d = mkdtemp(&template) else { throw SystemError.last("mkdtemp") }
        let dir = String(cString: d)
        return (dir, dir + "/faults")
    }

    func testFaultFileLines() {
        let p = FaultFileWatch.parse(
            "i2c fail 0x68\n  i2c\tfail 0X0c  # the magnetometer\n#i2c fail 0x76\n"
                + "gps unplug\ni2c fail 0x80\ni2c fail\ni2c drop 0x68\n\n")
        XCTAssertEqual(p.failing, [0x68, 0x0C])
        XCTAssertEqual(p.problems.map { $0.prefix(2) }, ["5:", "6:", "7:"], "\(p.problems)")
        XCTAssertTrue(p.problems[0].contains("i2c fail 0x68"), p.problems[0])
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
