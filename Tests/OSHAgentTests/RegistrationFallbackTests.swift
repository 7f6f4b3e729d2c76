import Foundation
import OSHAgent
import OSHCore
import OSHDevNode
import OSHPlatform
import OSHSimulation
import XCTest
import OSHDevTools

/// A node that will not update a datastream in place must not stop the board's other outputs
/// (osh-core's in-memory store answers every datastream PUT with 500; with H2 a changed structure
/// is refused once observations exist), and a command channel the node closes right after the
/// upgrade must back off and be explained once.
final class RegistrationFallbackTests: XCTestCase {
    override class func setUp() { super.setUp(); DemoSimulation.install() }

    private let identity = SystemIdentity(uid: "urn:osh:rpi:10000000deadf00d", label: "Fallback Pi", serial: "10000000deadf00d")
    private var dirs: [String] = []

    override func setUp() { Log.muted = true }

    override func tearDown() {
        for d in dirs { try? FileManager.default.removeItem(atPath: d) }
    }

    private func config(_ node: DevNode, state: String, outputs: [String]) -> AgentConfig {
        var c = AgentConfig(
            server: NodeEndpoint(apiRoot: node.apiRoot), identity: identity,
            options: OutputOptions(uid: identity.uid), stateDirectory: state)
        c.outputs = outputs
        c.trustHostClock = true
        c.commands = false
        return c
    }

    private func scratch() -> String {
        let d = scratchPath("osh-fallback")
        dirs.append(d)
        return d
    }

    /// The issue's case: a re-flashed card (empty state directory) meets an osh-core node with its
    /// in-memory store that already holds the board. Every PUT gets 500; each datastream's
    /// structure is the node's, so it is kept, everything streams, and each refusal is logged once.
    func testAnOSHInMemoryNodeRefusingEveryUpdateStillGetsEveryOutput() throws {
        var nc = DevNodeConfig()
        nc.oshInMemoryStore = true
        let node = try startedNode(nc)
        defer { node.stop() }
        let outputs = ["barometer", "gps_data", "quat_orientation_data"]
        let loop = try EventLoop()
        let a = try AgentRuntime(config: config(node, state: scratch(), outputs: outputs), loop: loop)
        try a.start()
        XCTAssertTrue(try loop.run(for: 10) { a.registered && a.rows.allSatisfy { $0.counters.sent > 0 } })
        try a.stop(flushUntil: EventLoop.deadline(after: 2))
        let ids = a.rows.map(\.datastreamID)

        let capture = LogCapture()
        defer { capture.stop() }
        let loop2 = try EventLoop()
        let b = try AgentRuntime(config: config(node, state: scratch(), outputs: outputs), loop: loop2)
        try b.start()
        XCTAssertTrue(
            try loop2.run(for: 10) { b.registered && b.rows.allSatisfy { $0.counters.sent > 0 } },
            capture.lines.joined(separator: "\n"))
        try b.stop(flushUntil: EventLoop.deadline(after: 2))
        capture.stop()
        XCTAssertEqual(b.rows.map(\.datastreamID), ids, "the node's datastreams were kept")
        XCTAssertEqual(node.requests.filter { $0.method == "PUT" && $0.path.contains("/datastreams/") && $0.status == 500 }.count, 3)
        for name in outputs {
            let said = capture.lines.filter { $0.hasPrefix("the node would not update datastream \(name) ") }
            XCTAssertEqual(said.count, 1, "\(capture.lines)")
            XCTAssertTrue(
                said.first?.contains("HTTP 500: org.sensorhub.api.datastore.DataStoreException: Datastore already contains datastream")
                    ?? false,
                said.first ?? "")
            XCTAssertTrue(
                said.first?.hasSuffix("its structure is the same as ours (fields, types and order), so \(name) keeps streaming into it")
                    ?? false,
                said.first ?? "")
        }
        XCTAssertEqual(capture.count("registration failed"), 0, "\(capture.lines)")
        for r in b.rows { XCTAssertEqual(r.counters.dropped, 0, r.outputName) }
    }

    /// osh-core with its in-memory store, restarted (empty) while the board keeps its id cache: the
    /// cached system's GET answers 500 (a NullPointerException in InMemoryBaseFeatureStore), not
    /// 404. The board looks itself up by UID, registers anew and streams; before, it retried the
    /// same GET for as long as it ran and sent nothing.
    func testANodeRestartedEmptyThatAnswers500ForTheCachedSystemGetsTheBoardAgain() throws {
        var nc = DevNodeConfig()
        nc.oshInMemoryStore = true
        let first = try startedNode(nc)
        let state = scratch()
        let outputs = ["barometer", "gps_data"]
        let loop = try EventLoop()
        let a = try AgentRuntime(config: config(first, state: state, outputs: outputs), loop: loop)
        try a.start()
        XCTAssertTrue(try loop.run(for: 10) { a.registered && a.rows.allSatisfy { $0.counters.sent > 0 } })
        try a.stop(flushUntil: EventLoop.deadline(after: 2))
        first.stop()

        nc.port = UInt16(first.apiRoot.split(separator: ":").last?.split(separator: "/").first ?? "0") ?? 0
        let second = try startedNode(nc)
        defer { second.stop() }
        XCTAssertEqual(second.apiRoot, first.apiRoot)
        let capture = LogCapture()
        defer { capture.stop() }
        let loop2 = try EventLoop()
        let b = try AgentRuntime(config: config(second, state: state, outputs: outputs), loop: loop2)
        try b.start()
        XCTAssertTrue(
            try loop2.run(for: 10) { b.registered && b.rows.allSatisfy { $0.counters.sent > 0 } },
            capture.lines.joined(separator: "\n"))
        try b.stop(flushUntil: EventLoop.deadline(after: 2))
        capture.stop()
        XCTAssertEqual(
            second.requests.filter { $0.method == "GET" && $0.path.hasPrefix("/sensorhub/api/systems/") && $0.status == 500 }.count, 1)
        XCTAssertEqual(capture.count("registration failed"), 0, "\(capture.lines)")
    }

    /// The development node (like osh-core with H2) refuses a structure change once a datastream has
    /// observations: 400, and the agent creates the datastream again instead of stopping.
    func testAStructureChangeTheNodeRefusesIsCreatedAgainNotFatal() throws {
        let node = try startedNode()
        defer { node.stop() }
        let nodeState = scratch()
        let loop = try EventLoop()
        let a = try AgentRuntime(config: config(node, state: nodeState, outputs: ["barometer", "gps_data"]), loop: loop)
        try a.start()
        XCTAssertTrue(try loop.run(for: 10) { a.registered && a.rows.allSatisfy { $0.counters.sent > 0 } })
        try a.stop(flushUntil: EventLoop.deadline(after: 2))
        // Same state directory, gps_data's datastream now holds another structure on the node's
        // side: PUT the board's (changed, from the node's view) description and see it refused.
        var c = config(node, state: nodeState, outputs: ["barometer", "gps_data"])
        c.publisher.format = .sweJSON
        let loop2 = try EventLoop()
        let b = try AgentRuntime(config: c, loop: loop2)
        try b.start()
        XCTAssertTrue(try loop2.run(for: 10) { b.registered && b.rows.allSatisfy { $0.counters.sent > 0 } })
        try b.stop(flushUntil: EventLoop.deadline(after: 2))
        XCTAssertTrue(b.rows.allSatisfy { $0.datastreamID != nil })
    }

    /// osh-core with security on closes each command receiver with 1011 right after the upgrade.
    /// The agent backs off (1, 2, 4 … s, not a reconnect a second), says so once with the node's
    /// code and reason, and the data still flows.
    func testASecuredNodeClosingTheCommandChannelAtOnceIsLoggedOnceAndDataFlows() throws {
        var nc = DevNodeConfig()
        nc.refuseReceivers = DevNodeConfig.oshSecuredReceiverRefusal
        let node = try startedNode(nc)
        defer { node.stop() }
        var c = config(node, state: scratch(), outputs: ["barometer"])
        c.commands = true
        c.commandOptions = CommandReceiver.Options(
            websocket: WebSocketClient.Options(
                backoff: Backoff(initial: 0.1, maximum: 0.4),
                pingInterval: 0))
        let capture = LogCapture()
        defer { capture.stop() }
        let loop = try EventLoop()
        let a = try AgentRuntime(config: c, loop: loop)
        try a.start()
        try loop.run(for: 3) { false }
        let upgrades = node.requests.filter { $0.route.hasSuffix("(WebSocket)") }.count
        try a.stop(flushUntil: EventLoop.deadline(after: 2))
        capture.stop()
        XCTAssertGreaterThan(a.rows[0].counters.sent, 0)
        // 0.1 + 0.2 + 0.4 + 0.4 … in 3 s: about 8 attempts; a reset backoff would have made ~30.
        XCTAssertLessThanOrEqual(upgrades, 10, "\(upgrades) upgrades in 3 s")
        XCTAssertGreaterThanOrEqual(upgrades, 3)
        let said = capture.lines.filter { $0.contains("closed it at once") }
        XCTAssertEqual(said.count, 1, "\(capture.lines)")
        XCTAssertTrue(
            said.first?.contains("close code 1011: Permission denied: csapi[default]/create/status: No user specified") ?? false,
            said.first ?? "")
        XCTAssertTrue(said.first?.contains("observations still flow") ?? false, said.first ?? "")
        XCTAssertEqual(capture.count("the command channel is back"), 0, "\(capture.lines)")
    }
}

/// The way out when the node's structure differs, and when it refuses a new datastream too,
/// through a scripted node (no development node can answer with a new id for the same output).
final class RegistrarFallbackTests: XCTestCase {
    final class ScriptedNode: NodeClient {
        var answer: (CSRequest) -> TransportOutcome
        private(set) var log: [String] = []
        init(_ answer: @escaping (CSRequest) -> TransportOutcome) { self.answer = answer }
        func send(_ request: CSRequest, completion: @escaping (TransportOutcome) -> Void) {
            log.append("\(request.method.rawValue) \(request.path)")
            completion(answer(request))
        }
    }

    private let identity = SystemIdentity(uid: "urn:osh:rpi:scripted", label: "Scripted", serial: "scripted")

    private func node(postAnswer: TransportOutcome) -> ScriptedNode {
        ScriptedNode { r in
            let json = { (s: String) in TransportOutcome(status: 200, body: Array(s.utf8)) }
            switch (r.method, r.path) {
            case (.get, "/"): return json("{}")
            case (.get, let p) where p.hasPrefix("/systems?"): return json(#"{"items":[{"id":"sys1"}]}"#)
            case (.get, let p) where p.contains("samplingFeatures"): return json(#"{"items":[{"id":"foi1"}]}"#)
            case (.get, let p) where p.hasPrefix("/systems/sys1/datastreams"):
                return json(#"{"items":[{"id":"ds-baro","outputName":"barometer"},{"id":"ds-gps","outputName":"gps_data"}]}"#)
            case (.put, let p) where p.hasPrefix("/datastreams/"):
                return TransportOutcome(status: 400, body: Array(#"{"status":400,"message":"Cannot update: it has observations"}"#.utf8))
            case (.get, let p) where p.hasPrefix("/datastreams/ds-baro/schema"):
                return json(
                    #"{"obsFormat":"application/om+json","resultSchema":{"type":"Quantity","name":"pressure","definition":"http://x","uom":{"code":"hPa"}}}"#
                )
            case (.get, let p) where p.hasPrefix("/datastreams/ds-gps/schema"): return TransportOutcome(status: 404)
            case (.post, "/systems/sys1/datastreams"): return postAnswer
            default: return TransportOutcome(status: 200)
            }
        }
    }

    private func register(_ n: ScriptedNode) -> (Registrar, Result<RegistrationState, RegistrationError>?) {
        let o = OutputOptions(uid: identity.uid)
        let r = Registrar(
            client: n, builder: CSRequestBuilder(), server: "http://n/api", identity: identity,
            specs: [OutputCatalogue.barometer(o), OutputCatalogue.gps(o)], format: .omJSON, cached: nil, now: { 1.7e9 })
        var got: Result<RegistrationState, RegistrationError>?
        r.register { got = $0 }
        return (r, got)
    }

    func testADifferentStructureOnTheNodeGetsANewDatastream() throws {
        let n = node(postAnswer: TransportOutcome(status: 201, location: "/datastreams/ds-new"))
        let (r, got) = register(n)
        let state = try XCTUnwrap(got).get()
        XCTAssertEqual(state.datastreams["barometer"]?.id, "ds-new")
        XCTAssertEqual(r.created, ["datastream:barometer", "datastream:gps_data"])
        XCTAssertEqual(r.notices.count, 2)
        XCTAssertTrue(
            r.notices[0].hasPrefix(
                "the node would not update datastream barometer (ds-baro) (HTTP 400: Cannot update: it has observations)"),
            r.notices[0])
        XCTAssertTrue(
            r.notices[0].hasSuffix(
                "its structure differs from ours, so a new datastream ds-new was created (the old one keeps its observations)"),
            r.notices[0])
    }

    func testANodeRefusingANewDatastreamTooLeavesOnlyThatOutputOut() throws {
        let n = node(postAnswer: TransportOutcome(status: 400, body: Array(#"{"status":400,"message":"Invalid payload"}"#.utf8)))
        let (r, got) = register(n)
        let state = try XCTUnwrap(got).get()
        XCTAssertNil(state.datastreams["barometer"])
        XCTAssertNil(state.datastreams["gps_data"])
        XCTAssertEqual(r.notices.count, 2)
        XCTAssertTrue(r.notices[0].contains("the node refused a new one too (HTTP 400: Invalid payload)"), r.notices[0])
        XCTAssertTrue(
            r.notices[0].hasSuffix(
                "barometer is not streamed until the next registration (a restart, or the reregister command); the other outputs are"),
            r.notices[0])
    }

    func testTheNodeGoingAwayMidWayFailsTheRegistrationToBeRetried() throws {
        let n = node(postAnswer: TransportOutcome(status: 0, transportError: "Connection refused"))
        let (_, got) = register(n)
        guard case .failure(let e)? = got else { return XCTFail("\(String(describing: got))") }
        XCTAssertEqual(e.status, 0)
        XCTAssertTrue(e.retryable)
        XCTAssertEqual(
            e.description, "registering datastream barometer: the node did not answer (Connection refused); check the URL and the network")
    }
}
