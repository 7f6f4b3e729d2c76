import OSHCore
import OSHPlatform
import XCTest

/// What is logged while `body` runs (Log's test sink), level and text.
func capturingLog(_ body: () throws -> Void) rethrows -> [(Log.Level, String)] {
    var lines: [(Log.Level, String)] = []
    Log.sink = { lines.append(($0, $1)) }
    defer { Log.sink = nil }
    try body()
    return lines
}

final class RetryLogTests: XCTestCase {
    func testTheSinkTakesWhatPassesTheThresholdEvenWhileMuted() {
        Log.muted = true
        defer { Log.muted = false }
        let got = capturingLog {
            Log.warning("w")
            Log.debug("d")  // below the default threshold
            Log.notice("n")
        }
        XCTAssertEqual(got.map(\.1), ["w", "n"])
        XCTAssertEqual(got.map(\.0), [.warning, .notice])
    }

    /// A device's `backoff` setting is the policy's: the step a state text shows before the
    /// failure is the one the verdict schedules, and a recovery starts the steps over.
    func testTheNextStepIsTheVerdictsStepAndRecoveryStartsOver() {
        Log.muted = true
        defer { Log.muted = false }
        var log = RetryLog()
        log.backoff = Backoff(initial: 0.05, maximum: 0.2)
        var shown: [Double] = []
        var scheduled: [Double] = []
        for _ in 0..<4 {
            shown.append(log.nextStep)
            scheduled.append(log.failed(.warning, "gone").delay)
        }
        XCTAssertEqual(shown, [0.05, 0.1, 0.2, 0.2])
        XCTAssertEqual(scheduled, shown)
        XCTAssertTrue(log.recovered())
        XCTAssertEqual(log.nextStep, 0.05)
    }

    func testAnOutageIsItsFirstFailureWhatChangesAndTheRecovery() {
        var log = RetryLog()
        var backs: [Bool] = []
        let got = capturingLog {
            log.note(.notice, "opened")
            log.note(.notice, "opened")  // a repeat outside an outage: quiet
            log.failed(.warning, "gone", firstSuffix: "; retrying in 1 s")
            log.failed(.warning, "gone", firstSuffix: "; retrying in 2 s")
            log.failed(.warning, "missing", firstSuffix: "; retrying in 4 s")
            log.failed(.warning, "gone", firstSuffix: "; retrying in 8 s")  // said in this outage already
            log.failed(.warning, "missing after 3 ms", key: "missing")
            log.note(.notice, "opened")  // during the outage: once
            log.failed(.warning, "missing")
            backs.append(log.recovered())
            backs.append(log.recovered())
            log.failed(.warning, "gone", firstSuffix: "; retrying in 1 s")  // a new outage
        }
        XCTAssertEqual(got.map(\.1), ["opened", "gone; retrying in 1 s", "missing", "opened", "gone; retrying in 1 s"])
        XCTAssertEqual(backs, [true, false])
        XCTAssertTrue(log.isDown)
    }

    func testDelaysAndElapsedTimesAsTheLogsSayThem() {
        XCTAssertEqual(RetryLog.seconds(1), "1 s")
        XCTAssertEqual(RetryLog.seconds(0.5), "0.5 s")
        XCTAssertEqual(RetryLog.seconds(30), "30 s")
        XCTAssertEqual(
            RetryLog.withoutElapsedTime("Failed to connect to 127.0.0.1 port 8181 after 0 ms: Could not connect to server"),
            "Failed to connect to 127.0.0.1 port 8181: Could not connect to server")
        XCTAssertEqual(RetryLog.withoutElapsedTime("Connection timed out after 5001 milliseconds"), "Connection timed out")
        XCTAssertEqual(RetryLog.withoutElapsedTime("after 3 s, after ms"), "after 3 s, after ms")
    }
}
