import XCTest
@testable import OSHPlatform
#if canImport(Glibc)
import Glibc
import OSHSimulation
#endif

final class LEDGPIOTests: XCTestCase {
    /// This machine (and CI) has no GPIO chip: requesting a line must fail with a message that
    /// names the chip and line and says what to do — never crash.
    func testMissingChipIsAClearError() throws {
        guard GPIOChips.present().isEmpty else { throw XCTSkip("this machine has GPIO chips: \(GPIOChips.present())") }
        for chip in ["gpiochip0", "/dev/gpiochip4", "pinctrl-rp1", "7"] {
            XCTAssertThrowsError(try LibgpiodLine(chip: chip, line: 17)) { e in
                guard let e = e as? GPIOError else { return XCTFail("\(e)") }
                XCTAssertEqual(e.kind, .chipMissing, "\(chip): \(e)")
                XCTAssertTrue(e.description.contains("GPIO line 17 of \(chip)"), e.description)
                XCTAssertTrue(e.description.contains("no /dev/gpiochip* at all"), e.description)
                XCTAssertTrue(e.description.contains("[led] chip"), e.description)
            }
        }
    }

    func testMessagesSayWhatToDo() {
        let denied = GPIOError(.permissionDenied, chip: "gpiochip0", line: 17, errno: EACCES)
        XCTAssertTrue(denied.description.contains("group gpio"), denied.description)
        XCTAssertTrue(denied.description.contains("Permission denied"), denied.description)
        let busy = GPIOError(GPIOError.kind(forErrno: EBUSY, busyBy: "led0"), chip: "gpiochip0", line: 42, errno: EBUSY)
        XCTAssertEqual(busy.kind, .busy(consumer: "led0"))
        XCTAssertTrue(busy.description.contains("already used by \"led0\""), busy.description)
        let range = GPIOError(GPIOError.kind(forErrno: ERANGE, busyBy: ""), chip: "gpiochip0", line: 99)
        XCTAssertTrue(range.description.contains("has no line 99"), range.description)
        XCTAssertEqual(GPIOError.kind(forErrno: ENOENT, busyBy: ""), .chipMissing)
        XCTAssertEqual(GPIOError.kind(forErrno: EPERM, busyBy: ""), .permissionDenied)
        XCTAssertEqual(GPIOError.kind(forErrno: EIO, busyBy: ""), .other)
    }

    func testNegativeLineRefusedBeforeTheLibrary() {
        XCTAssertThrowsError(try LibgpiodLine(chip: "gpiochip0", line: -1)) { e in
            XCTAssertEqual((e as? GPIOError)?.kind, .noSuchLine)
        }
    }

    func testChipListingReadsADirectory() throws {
        let dir = "/tmp/osh-gpio-\(getpid())"
        mkdir(dir, 0o755)
        defer { for n in ["gpiochip10", "gpiochip2", "ttyS0"] { unlink("\(dir)/\(n)") }; rmdir(dir) }
        for n in ["gpiochip10", "gpiochip2", "ttyS0"] { close(open("\(dir)/\(n)", O_CREAT | O_WRONLY, 0o644)) }
        XCTAssertEqual(GPIOChips.present(devDirectory: dir), ["gpiochip2", "gpiochip10"])
    }

    func testSimulatedLineRecordsEdgesOnly() throws {
        var t: UInt64 = 0
        let line = SimulatedGPIOLine(now: { t })
        try line.set(false)
        t = 5; try line.set(true)
        t = 6; try line.set(true)
        t = 9; try line.set(false)
        XCTAssertEqual(line.transitions, [.init(time: 5, high: true), .init(time: 9, high: false)])
        line.failNext = GPIOError(.other, chip: "sim", line: 0, errno: EIO, operation: "setting")
        XCTAssertThrowsError(try line.set(true))
        XCTAssertFalse(line.level)
    }

    func testLibraryVersionNamesTheAPI() {
        XCTAssertTrue(LibgpiodLine.libraryVersion.contains("(API v"), LibgpiodLine.libraryVersion)
    }
}
