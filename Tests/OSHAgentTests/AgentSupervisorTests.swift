@testable import OSHAgent
import OSHPlatform
import XCTest

/// The daemon's reload and stop decisions, with stand-ins for the agent: what starts, what
/// stops, and that nothing runs twice or never.
final class AgentSupervisorTests: XCTestCase {
    private struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Stand-ins: configurations are names; `startFails` names those whose agent throws at
    /// start; a stop's completion waits in `pendingStops` until the test runs it (the drain).
    private final class Harness {
        var startFails: Set<String> = []
        var log: [String] = []
        var pendingStops: [() -> Void] = []
        var exitCodes: [Int32] = []
        lazy var supervisor = AgentSupervisor<String, String>(
            config: "a", running: "agent(a)", source: "test.conf",
            start: { [unowned self] c in
                if self.startFails.contains(c) { throw Failure(description: "\(c) cannot start") }
                self.log.append("start \(c)")
                return "agent(\(c))"
            },
            stop: { [unowned self] r, seconds, done in
                self.log.append("stop \(r) within \(seconds) s")
                self.pendingStops.append(done)
            },
            exit: { [unowned self] code in self.exitCodes.append(code) })

        func drain() {
            let s = pendingStops
            pendingStops.removeAll()
            for done in s { done() }
        }
    }

    override func setUp() { Log.muted = true }

    func testAFileThatCannotBeLoadedChangesNothing() {
        let h = Harness()
        h.supervisor.reload { throw Failure(description: "test.conf:3: bad") }
        XCTAssertEqual(h.log, [])
        XCTAssertEqual(h.supervisor.phase, .running)
        XCTAssertEqual(h.supervisor.running, "agent(a)")
    }

    func testAGoodReloadStopsTheOldAgentThenStartsTheNewOne() {
        let h = Harness()
        h.supervisor.reload { "b" }
        XCTAssertEqual(h.log, ["stop agent(a) within 2.0 s"], "nothing starts before the old agent has drained")
        XCTAssertEqual(h.supervisor.phase, .replacing)
        h.supervisor.reload { "c" }
        XCTAssertEqual(h.log.count, 1, "a second SIGHUP while replacing is ignored")
        h.drain()
        XCTAssertEqual(h.log.last, "start b")
        XCTAssertEqual(h.supervisor.running, "agent(b)")
        XCTAssertEqual(h.supervisor.config, "b")
        XCTAssertEqual(h.supervisor.phase, .running)
        XCTAssertEqual(h.exitCodes, [])
    }

    func testANewAgentThatFailsToStartGivesWayToThePreviousConfiguration() {
        let capture = LogCapture()
        let h = Harness()
        h.startFails = ["b"]
        h.supervisor.reload { "b" }
        h.drain()
        XCTAssertEqual(h.log, ["stop agent(a) within 2.0 s", "start a"])
        XCTAssertEqual(h.supervisor.running, "agent(a)")
        XCTAssertEqual(h.supervisor.config, "a")
        XCTAssertEqual(h.supervisor.phase, .running)
        XCTAssertEqual(h.exitCodes, [])
        XCTAssertEqual(capture.count("did not start: b cannot start; starting the previous one again"), 1, "\(capture.lines)")
        XCTAssertEqual(capture.count("running with the previous configuration"), 1, "\(capture.lines)")
    }

    func testWhenThePreviousConfigurationFailsTooItExitsNonZero() {
        let capture = LogCapture()
        let h = Harness()
        h.startFails = ["a", "b"]
        h.supervisor.reload { "b" }
        h.drain()
        XCTAssertNil(h.supervisor.running)
        XCTAssertEqual(h.exitCodes, [1], "systemd restarts the service; no watchdog fed with nothing running")
        XCTAssertEqual(h.supervisor.phase, .exited(1))
        XCTAssertEqual(capture.count("exiting so that systemd restarts osh-edge"), 1, "\(capture.lines)")
    }

    func testTerminateDrainsThenExitsZeroAlsoDuringAReload() {
        let h = Harness()
        h.supervisor.terminate()
        XCTAssertEqual(h.log, ["stop agent(a) within 5.0 s"])
        h.supervisor.terminate()
        XCTAssertEqual(h.log.count, 1, "a second SIGTERM does not stop twice")
        XCTAssertEqual(h.exitCodes, [], "not before the drain ends")
        h.drain()
        XCTAssertEqual(h.exitCodes, [0])

        let r = Harness()
        r.supervisor.reload { "b" }
        r.supervisor.terminate()
        r.drain()
        XCTAssertEqual(r.log, ["stop agent(a) within 2.0 s"], "the reload's drain ends the process; b never starts")
        XCTAssertEqual(r.exitCodes, [0])
    }
}
