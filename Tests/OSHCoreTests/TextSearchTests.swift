import XCTest
import OSHCore

final class TextSearchTests: XCTestCase {
    func testFindsNeedleAnywhereAndNotAcrossTheEnd() {
        XCTAssertTrue("/dev/serial0".hasSubstring("/serial0"))
        XCTAssertTrue("ttyUSB0".hasSubstring("ttyUSB"))
        XCTAssertTrue("/dev/../etc".hasSubstring(".."))
        XCTAssertTrue("abc".hasSubstring("abc"))
        XCTAssertTrue("abc".hasSubstring(""))
        XCTAssertTrue("".hasSubstring(""))
        XCTAssertFalse("".hasSubstring("a"))
        XCTAssertFalse("/dev/serial".hasSubstring("/serial0"))
        XCTAssertFalse("aab".hasSubstring("abb"))
        XCTAssertTrue("client already connected".dropFirst(7).hasSubstring("already connected"))
    }
}
