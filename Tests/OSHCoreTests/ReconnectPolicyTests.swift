import XCTest
import OSHCore

/// The one supervisor for things that fail, without I/O: backoff steps, jitter bounds, which
/// failures get a line, recovery once.
final class ReconnectPolicyTests: XCTestCase {
    func testStepsDoubleToTheCapWithoutJitter() {
        var p = ReconnectPolicy(backoff: Backoff(initial: 0.5, maximum: 10))
        let delays = (0..<7).map { _ in p.failed(key: "x").delay }
        XCTAssertEqual(delays, [0.5, 1, 2, 4, 8, 10, 10])
        XCTAssertEqual(p.failures, 7)
    }

    func testJitterStaysWithinTheSpreadAndIsSeeded() {
        var a = ReconnectPolicy(backoff: Backoff(initial: 1, maximum: 30, jitter: 0.2), seed: 7)
        var b = ReconnectPolicy(backoff: Backoff(initial: 1, maximum: 30, jitter: 0.2), seed: 7)
        for _ in 0..<12 {
            let va = a.failed(key: "down"), vb = b.failed(key: "down")
            XCTAssertEqual(va, vb, "same seed, same delays: a failure reproduces")
            XCTAssertGreaterThanOrEqual(va.delay, va.step * 0.8)
            XCTAssertLessThanOrEqual(va.delay, va.step * 1.2)
        }
        XCTAssertEqual(a.failed(key: "down").step, 30)
    }

    func testAnOutageIsToldOnceEachReasonOnceAndTheRecoveryOnce() {
        var p = ReconnectPolicy()
        XCTAssertFalse(p.succeeded(), "nothing to recover from")
        XCTAssertEqual(p.failed(key: "refused").log, .firstFailure)
        XCTAssertNil(p.failed(key: "refused").log)
        XCTAssertEqual(p.failed(key: "timeout").log, .newReason)
        XCTAssertNil(p.failed(key: "refused").log)
        XCTAssertTrue(p.isDown)
        XCTAssertTrue(p.succeeded())
        XCTAssertFalse(p.isDown)
        XCTAssertEqual(p.failed(key: "refused").log, .firstFailure, "a new outage starts its story again")
        XCTAssertEqual(p.failed(key: "refused").delay, Backoff().delay(afterFailures: 2), "the steps restart too")
    }

    func testNotesOutsideAnOutageSkipOnlyAnImmediateRepeat() {
        var p = ReconnectPolicy()
        XCTAssertTrue(p.shouldNote(key: "a"))
        XCTAssertFalse(p.shouldNote(key: "a"))
        XCTAssertTrue(p.shouldNote(key: "b"))
        XCTAssertTrue(p.shouldNote(key: "a"))
        _ = p.failed(key: "down")
        XCTAssertTrue(p.shouldNote(key: "c"))
        XCTAssertFalse(p.shouldNote(key: "c"), "during an outage each key once")
    }

    func testRememberedReasonsAreBounded() {
        var p = ReconnectPolicy()
        for i in 0..<40 { _ = p.failed(key: "r\(i)") }
        XCTAssertEqual(p.failed(key: "r39").log, nil)
        XCTAssertEqual(p.failed(key: "r0").log, .newReason, "the oldest reasons are forgotten, not kept forever")
    }
}
