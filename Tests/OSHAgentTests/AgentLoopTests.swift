import Foundation
import OSHAgent
import OSHCore
import OSHDevNode
import OSHPlatform
import OSHSimulation
import XCTest
import OSHDevTools

/// The whole agent against the development node over loopback.
final class AgentLoopTests: XCTestCase {
    // The simulated chips and values these agents run on come from OSHSimulation.
    override class func setUp() { super.setUp(); DemoSimulation.install() }

    private var node: DevNode!
    private var stateDir = ""
    private let identity = SystemIdentity(uid: "urn:osh:rpi:10000000feedbeef", label: "Test Pi [loop]", serial: "10000000feedbeef")

    override func setUpWithError() throws {
        Log.muted = true
        node = try startedNode()
        stateDir = scratchPath("osh-agent")
    }

    override func tearDown() {
        node?.stop()
        try? FileManager.default.removeItem(atPath: stateDir)
    }

    private func config(
        _ apiRoot: String? = nil, outputs: [String]? = ["barometer", "gps_data", "quat_orientation_data"],
        rates: [String: Double] = [:]
    ) -> AgentConfig {
        var c = AgentConfig(
            server: NodeEndpoint(apiRoot: apiRoot ?? node.apiRoot), identity: identity,
            options: OutputOptions(uid: identity.uid), stateDirectory: stateDir)
        c.outputs = outputs
        c.rates = rates
        c.trustHostClock = true
        c.publisher.backoffInitial = 0.2
        c.publisher.backoffMax = 0.4
        return c
    }

    /// Serves the loop until `condition` holds or `timeout` passes; returns whether it held.
    @discardableResult
    private func run(_ loop: EventLoop, timeout: Double, until condition: () -> Bool) throws -> Bool {
        try loop.run(for: timeout, until: condition)
    }

    private func received(_ a: AgentRuntime) -> [String: Int] { counts(node.stats) }

    private func counts(_ stats: DevNodeStats) -> [String: Int] {
        var out: [String: Int] = [:]
        for ds in stats.datastreams { out[ds.outputName, default: 0] += ds.observationCount }
        return out
    }

    private func postsTo(_ route: String) -> Int {
        node.requests.filter { $0.method == "POST" && $0.path.hasSuffix(route) }.count
    }

    func testRegistersThenRestartsWithCachedIdsCreatingNothingNew() throws {
        let loop = try EventLoop()
        let a = try AgentRuntime(config: config(), loop: loop)
        try a.start()
        XCTAssertTrue(try run(loop, timeout: 10) { a.registered && a.rows.allSatisfy { $0.counters.sent > 0 } })
        try a.stop(flushUntil: EventLoop.deadline(after: 2))
        XCTAssertEqual(postsTo("/systems"), 1)
        XCTAssertEqual(postsTo("/datastreams"), 3)
        let systemsBefore = node.stats.systemCount
        let idsBefore = a.rows.map(\.datastreamID)

        // A second agent process: ids come from the cache, are re-verified, and nothing is created.
        let loop2 = try EventLoop()
        let b = try AgentRuntime(config: config(), loop: loop2)
        try b.start()
        XCTAssertTrue(try run(loop2, timeout: 10) { b.registered })
        XCTAssertEqual(b.registrar.created, [])
        XCTAssertEqual(b.rows.map(\.datastreamID), idsBefore)
        XCTAssertEqual(postsTo("/systems"), 1)
        XCTAssertEqual(postsTo("/datastreams"), 3)
        XCTAssertEqual(node.stats.systemCount, systemsBefore)
        // The description did not change, so it is not re-sent: its validTime start stays the same
        // and the node piles up no history versions.
        XCTAssertEqual(node.requests.filter { $0.method == "PUT" }.count, 0)
        XCTAssertEqual(b.registrar.state.validFrom, a.registrar.state.validFrom)
        try b.stop(flushUntil: EventLoop.deadline(after: 2))
    }

    func testNodeForgettingEverythingReRegistersAndLosesNothing() throws {
        let loop = try EventLoop()
        let a = try AgentRuntime(config: config(outputs: ["barometer", "quat_orientation_data"]), loop: loop)
        try a.start()
        XCTAssertTrue(try run(loop, timeout: 10) { a.registered && a.rows.allSatisfy { $0.counters.sent >= 5 } })
        // Counted as the node forgets (a POST accepted between a separate count and the forgetting
        // would be in neither incarnation's count).
        let before = counts(node.forgetEverything())
        // Keep producing: the next POSTs get 404, the agent re-registers and resends what it held.
        XCTAssertTrue(try run(loop, timeout: 15) { a.registered && self.received(a).values.reduce(0, +) >= 20 })
        try a.stop(flushUntil: EventLoop.deadline(after: 3))
        let after = received(a)
        for r in a.rows {
            // Everything produced reached one incarnation of the node or the other.
            let total = (before[r.outputName] ?? 0) + (after[r.outputName] ?? 0)
            XCTAssertEqual(r.counters.produced, total + r.counters.dropped, r.outputName)
            XCTAssertEqual(r.counters.dropped, 0, r.outputName)
        }
        XCTAssertEqual(postsTo("/systems"), 2, "the system was created again on the forgetful node")
    }

    func testOutageKeepsTheBacklogAndDrainsItInOrder() throws {
        let loop = try EventLoop()
        let a = try AgentRuntime(config: config(outputs: ["quat_orientation_data", "gps_data"]), loop: loop)
        try a.start()
        XCTAssertTrue(try run(loop, timeout: 10) { a.registered && a.rows.allSatisfy { $0.counters.sent > 0 } })
        node.mode = .refuseConnections
        try run(loop, timeout: 2) { false }  // 2 s of production with the node down
        XCTAssertNotEqual(a.publisher.connectivity, .online)
        XCTAssertGreaterThan(a.publisher.ring.occupied, 10, "the backlog is kept")
        node.mode = .normal
        XCTAssertTrue(try run(loop, timeout: 10) { a.publisher.connectivity == .online && a.publisher.ring.occupied < 5 })
        try a.stop(flushUntil: EventLoop.deadline(after: 3))
        let got = received(a)
        for (i, r) in a.rows.enumerated() {
            XCTAssertEqual(r.counters.produced, (got[r.outputName] ?? 0) + r.counters.dropped, r.outputName)
            guard let id = a.publisher.datastreamID(i) else { return XCTFail("no id") }
            let times = node.observations(datastreamID: id).compactMap(\.phenomenonTime)
            XCTAssertEqual(times, times.sorted(), "\(r.outputName) arrived in order")
        }
    }

    func testRejectedPayloadsAreDroppedAndCountedWhileRetryableOnesAreKept() throws {
        let loop = try EventLoop()
        let a = try AgentRuntime(config: config(outputs: ["barometer", "quat_orientation_data"]), loop: loop)
        try a.start()
        XCTAssertTrue(try run(loop, timeout: 10) { a.registered && a.rows.allSatisfy { $0.counters.sent > 0 } })
        node.mode = .rejectObservations(status: 400)
        XCTAssertTrue(try run(loop, timeout: 5) { a.rows[1].counters.droppedRejected > 0 })
        XCTAssertEqual(a.publisher.connectivity, .online, "a rejection is not an outage")
        node.mode = .rejectObservations(status: 302)
        let rejectedBefore = a.rows[1].counters.droppedRejected
        XCTAssertTrue(try run(loop, timeout: 5) { a.rows[1].counters.droppedRejected > rejectedBefore }, "302 is a rejection")
        for status in [401, 429, 503] {
            node.mode = .rejectObservations(status: status)
            let dropped = a.rows[1].counters.droppedRejected
            XCTAssertTrue(try run(loop, timeout: 5) { a.publisher.connectivity != .online }, "\(status) backs off")
            XCTAssertEqual(a.rows[1].counters.droppedRejected, dropped, "\(status) keeps the observations")
            node.mode = .normal
            XCTAssertTrue(try run(loop, timeout: 5) { a.publisher.connectivity == .online })
        }
        try a.stop(flushUntil: EventLoop.deadline(after: 3))
        let got = received(a)
        for r in a.rows {
            XCTAssertEqual(r.counters.produced, (got[r.outputName] ?? 0) + r.counters.dropped, r.outputName)
        }
    }

    func testSwitchingServersNeverSendsIdsFromTheOtherNode() throws {
        let other = DevNode(config: DevNodeConfig())
        _ = try other.start()
        defer { other.stop() }
        for api in [node.apiRoot, other.apiRoot, node.apiRoot] {
            let loop = try EventLoop()
            let a = try AgentRuntime(config: config(api), loop: loop)
            try a.start()
            XCTAssertTrue(try run(loop, timeout: 10) { a.registered && a.rows.allSatisfy { $0.counters.sent > 0 } })
            try a.stop(flushUntil: EventLoop.deadline(after: 2))
        }
        // Each node minted its own ids and only ever saw its own: no 404s from foreign ids.
        XCTAssertEqual(node.requests.filter { $0.status == 404 }.count, 0)
        XCTAssertEqual(other.requests.filter { $0.status == 404 }.count, 0)
        XCTAssertEqual(postsTo("/systems"), 1, "the first node's cached ids were reused on return")
    }

    func testSchemaChangeUpdatesThatDatastream() throws {
        let loop = try EventLoop()
        let a = try AgentRuntime(config: config(outputs: ["barometer"]), loop: loop)
        try a.start()
        XCTAssertTrue(try run(loop, timeout: 10) { a.registered })
        try a.stop(flushUntil: EventLoop.deadline(after: 1))
        // Same board, swe+json instead of om+json: a different schema for the same outputName.
        var c = config(outputs: ["barometer"])
        c.publisher.format = .sweJSON
        let loop2 = try EventLoop()
        let b = try AgentRuntime(config: c, loop: loop2)
        try b.start()
        XCTAssertTrue(try run(loop2, timeout: 10) { b.registered && b.rows[0].counters.sent > 0 })
        try b.stop(flushUntil: EventLoop.deadline(after: 1))
        XCTAssertEqual(b.rows[0].datastreamID, a.rows[0].datastreamID, "same datastream, updated in place")
        XCTAssertEqual(node.requests.filter { $0.method == "PUT" && $0.path.contains("/datastreams/") }.count, 1)
        XCTAssertEqual(node.stats.datastreams.first?.obsFormat, MediaType.sweJSON)
    }

    func testNothingIsPublishedUntilTheClockIsTrustedThenTimesAreCorrect() throws {
        let loop = try EventLoop()
        let a = try AgentRuntime(config: config(outputs: ["barometer"], rates: ["barometer": 10]), loop: loop)
        var synced = false
        a.clockProvider = { synced ? .synchronized(source: "test") : .unsynchronized(reason: "test") }
        let startWall = Clock.realtimeSeconds()
        try a.start()
        try run(loop, timeout: 1.5) { false }
        XCTAssertTrue(a.registered)
        XCTAssertEqual(a.rows[0].counters.sent, 0, "held while the clock is untrusted")
        XCTAssertGreaterThan(a.rows[0].counters.produced, 5)
        synced = true
        a.recheckClock()
        XCTAssertTrue(try run(loop, timeout: 5) { a.rows[0].counters.sent >= 10 })
        try a.stop(flushUntil: EventLoop.deadline(after: 1))
        let times = node.observations(datastreamID: a.rows[0].datastreamID ?? "").compactMap(\.phenomenonTime)
        XCTAssertGreaterThanOrEqual(times.count, 10)
        // The held observations carry the times they were sampled at, not the time they were sent.
        XCTAssertEqual(times[0], startWall, accuracy: 0.5)
        XCTAssertEqual(times, times.sorted())
    }

    /// A board that never reached its node (down, or refusing) has no datastream ids: nothing can
    /// be sent, so a SIGTERM does not wait out the flush deadline (it took the whole 5 s).
    func testAStopBeforeAnyRegistrationDoesNotWaitForTheFlushDeadline() throws {
        var c = config("http://127.0.0.1:9/sensorhub/api", outputs: ["barometer"], rates: ["barometer": 20])
        c.spool.enabled = true
        let loop = try EventLoop()
        let a = try AgentRuntime(config: c, loop: loop)
        try a.start()
        try run(loop, timeout: 1) { false }
        XCTAssertFalse(a.registered)
        let stopStart = Clock.monotonicNanoseconds()
        try a.stop(flushUntil: EventLoop.deadline(after: 3))
        XCTAssertLessThan(Double(Clock.monotonicNanoseconds() - stopStart) / 1e9, 1)
        XCTAssertGreaterThan(a.rows[0].counters.spooled, 0, "what was produced is kept: \(a.rows[0].counters)")
        XCTAssertEqual(a.rows[0].counters.dropped, 0)
    }

    func testAStopWhileTheClockIsHeldSpoolsEverythingAndTheNextStartSendsItWithTrueTimes() throws {
        // A board that stops (a reload, a SIGTERM) before NTP ever answered: with a spool, what was
        // held is kept, and sent with the times it was sampled at once a later start trusts the clock.
        var c = config(outputs: ["barometer"], rates: ["barometer": 20])
        c.spool.enabled = true
        c.ringCapacity = 10
        let loop = try EventLoop()
        let a = try AgentRuntime(config: c, loop: loop)
        a.clockProvider = { .unsynchronized(reason: "test") }
        let startWall = Clock.realtimeSeconds()
        try a.start()
        try run(loop, timeout: 1.5) { false }
        XCTAssertTrue(a.registered)
        // Nothing can be sent while held: the stop does not wait out its flush deadline.
        let stopStart = Clock.monotonicNanoseconds()
        try a.stop(flushUntil: EventLoop.deadline(after: 3))
        XCTAssertLessThan(Double(Clock.monotonicNanoseconds() - stopStart) / 1e9, 1, "a held stop goes straight to the spool")
        let held = a.rows[0].counters
        XCTAssertEqual(held.sent, 0)
        XCTAssertGreaterThan(held.produced, 20)
        XCTAssertEqual(held.dropped, 0, "nothing dropped at the stop or when the ring was full: \(held)")
        XCTAssertEqual(held.spooled, held.produced, "everything held went to the spool")

        let loop2 = try EventLoop()
        let b = try AgentRuntime(config: c, loop: loop2)
        try b.start()
        XCTAssertTrue(try run(loop2, timeout: 10) { b.rows[0].counters.sentFromSpool >= held.spooled })
        try b.stop(flushUntil: EventLoop.deadline(after: 1))
        let times = node.observations(datastreamID: b.rows[0].datastreamID ?? "").compactMap(\.phenomenonTime)
        XCTAssertGreaterThanOrEqual(times.count, held.produced)
        XCTAssertEqual(times[0], startWall, accuracy: 0.5, "sampled while held, stamped with the time it was sampled")
        XCTAssertEqual(times, times.sorted())
    }

    /// Deletes a datastream on the node through our own HTTP client (as an operator would).
    private func deleteOnNode(_ loop: EventLoop, datastream id: String) throws {
        let http = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: node.apiRoot))
        var status = 0
        http.send(CSRequestBuilder().request(.delete, "/datastreams/" + id)) { status = $0.status }
        XCTAssertTrue(try run(loop, timeout: 5) { status != 0 })
        XCTAssertEqual(status, 204)
    }

    func testADatastreamDeletedOnTheNodeWhileRunningIsRegisteredAgain() throws {
        let loop = try EventLoop()
        let a = try AgentRuntime(config: config(outputs: ["barometer", "quat_orientation_data"]), loop: loop)
        try a.start()
        XCTAssertTrue(try run(loop, timeout: 10) { a.registered && a.rows.allSatisfy { $0.counters.sent > 0 } })
        // quat_orientation_data, 10 Hz (rows follow the catalogue's order).
        let q = try XCTUnwrap(a.rows.firstIndex { $0.outputName == "quat_orientation_data" })
        let old = try XCTUnwrap(a.rows[q].datastreamID)
        try deleteOnNode(loop, datastream: old)
        XCTAssertTrue(try run(loop, timeout: 10) { (a.rows[q].datastreamID ?? old) != old && a.rows[q].counters.sent > 30 })
        try a.stop(flushUntil: EventLoop.deadline(after: 2))
        // Nothing lost: what the deleted datastream had plus what the new one got is everything produced.
        let newID = try XCTUnwrap(a.rows[q].datastreamID)
        let onNode = node.observations(datastreamID: newID).count
        XCTAssertEqual(a.rows[q].counters.dropped, 0)
        XCTAssertGreaterThan(onNode, 0)
        XCTAssertEqual(a.rows[q].counters.sent, a.rows[q].counters.produced)
    }

    func testACachedIdDeletedBetweenRunsIsCreatedAgainAlone() throws {
        let loop = try EventLoop()
        let a = try AgentRuntime(config: config(), loop: loop)
        try a.start()
        XCTAssertTrue(try run(loop, timeout: 10) { a.registered })
        try a.stop(flushUntil: EventLoop.deadline(after: 1))
        let gone = try XCTUnwrap(a.rows[0].datastreamID)
        try deleteOnNode(loop, datastream: gone)
        let loop2 = try EventLoop()
        let b = try AgentRuntime(config: config(), loop: loop2)
        try b.start()
        XCTAssertTrue(try run(loop2, timeout: 10) { b.registered && b.rows.allSatisfy { $0.counters.sent > 0 } })
        try b.stop(flushUntil: EventLoop.deadline(after: 1))
        XCTAssertEqual(b.registrar.created, ["datastream:" + a.rows[0].outputName])
        XCTAssertNotEqual(b.rows[0].datastreamID, gone)
        XCTAssertEqual(b.rows[1].datastreamID, a.rows[1].datastreamID)
    }

    /// The journal of a node that is down and then failing while the agent registers: each
    /// failure once (the first with its retry), not at every retry, and "registered" once; the
    /// systemd status text still follows every retry.
    /// A node that answers 500 is not "unreachable": the backoff's line says what the node said,
    /// and the wait as the backoff has it (0.2 s, not "0 s").
    func testAFailingNodeIsNotCalledUnreachable() throws {
        let loop = try EventLoop()
        let a = try AgentRuntime(config: config(outputs: ["barometer"], rates: ["barometer": 10]), loop: loop)
        var statuses: [String] = []
        a.onStatus = { statuses.append($0) }
        let capture = LogCapture()
        defer { capture.stop() }
        try a.start()
        XCTAssertTrue(try run(loop, timeout: 10) { a.registered && a.rows[0].counters.sent > 0 })
        node.mode = .rejectObservations(status: 500)
        XCTAssertTrue(try run(loop, timeout: 10) { statuses.contains { $0.hasPrefix("the node answered HTTP 500") } }, "\(statuses)")
        node.mode = .normal
        XCTAssertTrue(try run(loop, timeout: 10) { a.publisher.connectivity == .online })
        try a.stop(flushUntil: EventLoop.deadline(after: 2))
        capture.stop()
        XCTAssertEqual(capture.count("node unreachable"), 0, "\(capture.lines)")
        XCTAssertTrue(capture.lines.contains("the node answered HTTP 500, retrying in 0.2 s"), "\(capture.lines)")
    }

    func testRegistrationFailuresAreLoggedOnceNotAtEveryRetry() throws {
        node.mode = .refuseConnections
        var c = config(outputs: ["barometer"])
        c.registrationBackoff = Backoff(initial: 0.05, maximum: 0.1)
        let loop = try EventLoop()
        let a = try AgentRuntime(config: c, loop: loop)
        var statuses: [String] = []
        a.onStatus = { statuses.append($0) }
        let capture = LogCapture()
        defer { capture.stop() }
        try a.start()
        XCTAssertTrue(try run(loop, timeout: 10) { statuses.count >= 4 }, "\(statuses)")
        // The node answers, but with 503 for a while (OSH starting up).
        node.mode = .status(503)
        XCTAssertTrue(try run(loop, timeout: 10) { statuses.filter { $0.hasPrefix("registration refused") }.count >= 4 }, "\(statuses)")
        node.mode = .normal
        XCTAssertTrue(try run(loop, timeout: 10) { a.registered && a.rows[0].counters.sent > 0 })
        try a.stop(flushUntil: EventLoop.deadline(after: 2))
        capture.stop()

        let failed = capture.lines.filter { $0.hasPrefix("registration failed: ") }
        XCTAssertEqual(failed.count, 2, "\(capture.lines)")
        guard failed.count == 2 else { return }
        XCTAssertTrue(failed[0].contains("the node did not answer"), failed[0])
        XCTAssertTrue(failed[0].hasSuffix("; check the URL and the network; retrying in 0.05 s"), failed[0])
        XCTAssertTrue(failed[1].contains(": HTTP 503: "), failed[1])
        XCTAssertFalse(failed[1].contains("retrying"), failed[1])
        XCTAssertEqual(capture.count("registered \(identity.uid) with "), 1, "\(capture.lines)")
        XCTAssertTrue(capture.lines.last { $0.hasPrefix("regist") }?.hasPrefix("registered ") ?? false, "\(capture.lines)")
        // The publisher's side says nothing of an outage it never saw.
        XCTAssertEqual(capture.count("node unreachable"), 0, "\(capture.lines)")
        XCTAssertEqual(capture.count("node reachable again"), 0, "\(capture.lines)")
        // The status follows every step.
        XCTAssertEqual(
            Array(statuses.prefix(3)),
            [
                "node unreachable, retrying in 0.05 s", "node unreachable, retrying in 0.1 s",
                "node unreachable, retrying in 0.1 s",
            ])
        XCTAssertTrue(statuses.contains("registration refused (HTTP 503), retrying in 0.1 s"), "\(statuses)")
    }

    /// Stopping is an asynchronous drain on the loop already turning: callable from any handler
    /// (the daemon calls it from its signal handler), never turning the loop itself.
    func testBeginStopFromAHandlerFlushesOnLaterTurnsThenCompletes() throws {
        var c = config(outputs: ["barometer"], rates: ["barometer": 50])
        // Nothing goes out on the publisher's own clock during the test: only the drain sends.
        c.publisher.flushInterval = 10
        c.publisher.batchMax = 500
        let loop = try EventLoop()
        let a = try AgentRuntime(config: c, loop: loop)
        try a.start()
        XCTAssertTrue(try run(loop, timeout: 10) { a.registered })
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
        XCTAssertTrue(try run(loop, timeout: 5) { completions == 2 }, "both completions came")
        XCTAssertFalse(completedInsideTheHandler, "the drain ends on a later turn")
        XCTAssertTrue(a.publisher.isIdle, "the ring was flushed")
        let sent = a.publisher.counters(0).sent
        XCTAssertGreaterThan(sent, 10)
        XCTAssertEqual(received(a)["barometer"], sent)
        // Stopped: the sources no longer sample, and a late beginStop completes at once.
        try loop.run(until: loop.deadline(after: 0.2))
        XCTAssertTrue(a.publisher.isIdle)
        XCTAssertEqual(a.publisher.counters(0).sent, sent)
        a.beginStop(deadline: loop.now) { completions += 1 }
        XCTAssertEqual(completions, 3)
    }
}
