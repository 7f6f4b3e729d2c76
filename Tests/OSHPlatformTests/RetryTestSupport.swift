import CShim
import OSHPlatform
import XCTest

// Shared by the GPS source tests (serial and gpsd), which time the same reconnection backoff.
extension XCTestCase {
    /// A retry gap: never early, and late only by scheduling slack (loaded CI machines).
    func assertGap(_ gap: Double, _ expected: Double, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertGreaterThanOrEqual(gap, expected - 0.005, file: file, line: line)
        XCTAssertLessThanOrEqual(gap, expected + 0.08, file: file, line: line)
    }

    func run(_ loop: EventLoop, seconds: Double, until done: () -> Bool) throws {
        let deadline = EventLoop.deadline(after: seconds)
        while !done() && osh_monotonic_ns() < deadline { try loop.runOnce(timeoutMs: 10) }
    }
}
