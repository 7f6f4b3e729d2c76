import Foundation
import OSHAgent
import OSHCore
import OSHDevNode
import OSHPlatform
import XCTest

/// Stopping is an asynchronous drain on the loop that is already turning: callable from any
/// handler (the daemon calls it from its signal handler), never turning the loop itself.
final class AgentStopTests: XCTestCase {
    private var node: DevNode!
    private var stateDir = ""

    override func setUpWithError() throws {
        Log.muted = true
        node = DevNode(config: DevNodeConfig())
        _ = try node.start()
        stateDir = NSTemporaryDirectory() + "osh-stop-\(UUID().uuidString)"
    }

    override func tearDown() {
        node?.stop()
        try? FileManager.default.removeItem(atPath: stateDir)
    }

    func testBeginStopFromAHandlerFlushesOnLaterTurnsThenCompletes() throws {
        let identity = SystemIdentity(uid: "urn:osh:rpi:10000000feedb0b0", label: "Test Pi [stop]", serial: "10000000feedb0b0")
        var c = AgentConfig(server: HTTPServer(apiRoot: node.apiRoot), identity: identity,
                            options: OutputOptions(uid: identity.uid), stateDirectory: stateDir)
        c.outputs = ["barometer"]
        c.rates = ["barometer": 50]
        c.trustHostClock = true
        // Nothing goes out on the publisher's own clock during the test: only the drain sends.
        c.publisher.flushInterval = 10
        c.publisher.batchMax = 500
        let loop = try EventLoop()
        let a = try AgentRuntime(config: c, loop: loop)
        try a.start()
        XCTAssertTrue(try loop.run(for: 10) { a.registered })
        try loop.run(until: loop.deadline(after: 0.5))
        XCTAssertFalse(a.publisher.isIdle, "samples wait in the ring")
        var completions = 0
        var completedInsideTheHandler = false
        try loop.addTimer(firstAt: loop.now) { _ in
            XCTAssertTrue(loop.isRunning)
            a.beginStop(deadline: loop.deadline(after: 2)) { completions += 1 }
            a.beginStop(deadline: loop.deadline(after: 2)) { completions += 1 }
            completedInsideTheHandler = completions > 0
        }
        XCTAssertTrue(try loop.run(for: 5) { completions == 2 }, "both completions came")
        XCTAssertFalse(completedInsideTheHandler, "the drain ends on a later turn")
        XCTAssertTrue(a.publisher.isIdle, "the ring was flushed")
        let sent = a.publisher.counters(0).sent
        XCTAssertGreaterThan(sent, 10)
        XCTAssertEqual(node.stats.datastream(outputName: "barometer")?.observationCount, sent)
        // Stopped: the sources no longer sample, and a late beginStop completes at once.
        try loop.run(until: loop.deadline(after: 0.2))
        XCTAssertTrue(a.publisher.isIdle)
        XCTAssertEqual(a.publisher.counters(0).sent, sent)
        a.beginStop(deadline: loop.now) { completions += 1 }
        XCTAssertEqual(completions, 3)
    }
}
