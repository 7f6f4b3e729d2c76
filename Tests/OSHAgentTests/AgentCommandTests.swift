import Foundation
import OSHAgent
import OSHCore
import OSHDevNode
import OSHPlatform
import OSHSimulation
import XCTest
import OSHDevTools

/// The node drives the board end to end: the agent registers device_control, listens on the
/// node's WebSocket, and an operator's commands change what it publishes.
final class AgentCommandTests: XCTestCase {
    // The simulated chips and values these agents run on come from OSHSimulation.
    override class func setUp() { super.setUp(); DemoSimulation.install() }

    func testOperatorCommandsChangeTheAgentAndTheNodeHoldsTheOutcome() throws {
        Log.muted = true
        var nc = DevNodeConfig()
        nc.commandAckSeconds = 0.3
        nc.noReceiverWaitSeconds = 0.2
        let node = try startedNode(nc)
        defer { node.stop() }
        let dir = scratchPath("osh-cmd")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var c = agentConfig(node, serial: "10000000cafe0003", label: "Command Pi", stateDirectory: dir)
        c.outputs = ["barometer", "device_health"]
        c.rates = ["barometer": 2]
        c.trustHostClock = true
        c.commands = true
        c.commandOptions = CommandReceiver.Options(
            ackWindow: 0.3, repostMargin: 0.2,
            websocket: WebSocketClient.Options(backoff: Backoff(initial: 0.1, maximum: 0.3), pingInterval: 0))
        let loop = try EventLoop()
        let agent = try AgentRuntime(config: c, loop: loop)
        var identified: Double?
        agent.onIdentify = { s in
            identified = s; return "blinking for \(Int(s)) s"
        }
        try agent.start()
        func run(_ timeout: Double, until: () -> Bool) throws -> Bool {
            try loop.run(for: timeout, until: until)
        }
        XCTAssertTrue(try run(10) { agent.commandReceiver?.channel.state == .open }, "command channel open")
        let csID = try XCTUnwrap(agent.commandReceiver?.controlStreamID)

        let http = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: node.apiRoot))
        let builder = CSRequestBuilder(credentials: .none)
        func post(_ parameters: String) {
            http.send(
                builder.request(
                    .post, "/controlstreams/" + csID + "/commands", contentType: MediaType.json,
                    body: Array(("{\"parameters\":" + parameters + "}").utf8))
            ) { _ in }
        }
        post(#"{"setRate":{"outputName":"barometer","rate":20}}"#)
        XCTAssertTrue(
            try run(10) {
                (node.commands(controlStreamID: csID).first?.reports.count ?? 0) >= 3
                    && node.commands(controlStreamID: csID).first?.currentStatus == "COMPLETED"
            },
            "\(node.commands(controlStreamID: csID))")
        let b = try XCTUnwrap(agent.index(of: "barometer"))
        XCTAssertEqual(agent.rate(b), 20)

        // One at a time, so the node's list is in this order.
        for (k, p) in [
            #"{"setRate":{"outputName":"sonar","rate":5}}"#, #"{"identify":{"duration":7}}"#,
            #"{"enableOutput":{"outputName":"barometer","enabled":false}}"#,
            DeviceControl.parametersJSON(.uploadTimeRange(start: 1_780_000_000, stop: 1_780_000_060, outputs: [])),
        ].enumerated() {
            post(p)
            XCTAssertTrue(
                try run(10) {
                    let c = node.commands(controlStreamID: csID)
                    return c.count == k + 2 && (c.last?.currentStatus == "COMPLETED" || c.last?.currentStatus == "REJECTED")
                })
        }
        // The node marks a command PENDING when its 5 s window (0.3 s here) ends; the receiver's
        // re-post after it is what the node ends up holding.
        let expected = ["COMPLETED", "REJECTED", "COMPLETED", "COMPLETED", "REJECTED"]
        XCTAssertTrue(
            try run(5) { node.commands(controlStreamID: csID).map { $0.currentStatus ?? "" } == expected },
            "\(node.commands(controlStreamID: csID).map(\.currentStatus))")
        XCTAssertEqual(identified, 7)
        XCTAssertEqual(
            node.commands(controlStreamID: csID).last?.current?.message,
            "recording is off: set [record] enabled = true to record on the board")
        XCTAssertFalse(agent.isEnabled(b))
        try agent.stop(flushUntil: EventLoop.deadline(after: 1))
    }

    /// The virtual Pi's "node stopped for 20 s", for the command channel: the loss and the failed
    /// reconnections are logged once each under "commands: device_control:" (not again by the
    /// WebSocket client, and not at every retry), and the return once.
    func testAStoppedNodeIsLoggedOnceForTheCommandChannelNotAtEveryRetry() throws {
        Log.muted = true
        let node = try startedNode()
        defer { node.stop() }
        let dir = scratchPath("osh-cmd")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var c = agentConfig(node, serial: "10000000cafe0004", label: "Outage Pi", stateDirectory: dir)
        c.outputs = ["barometer"]
        c.rates = ["barometer": 5]
        c.trustHostClock = true
        c.commands = true
        c.publisher.backoffInitial = 0.2
        c.publisher.backoffMax = 0.4
        c.commandOptions = CommandReceiver.Options(
            ackWindow: 0.3, repostMargin: 0.2,
            websocket: WebSocketClient.Options(
                backoff: Backoff(initial: 0.1, maximum: 0.2), pingInterval: 0,
                stableAfter: 0.3))
        let loop = try EventLoop()
        let agent = try AgentRuntime(config: c, loop: loop)
        let capture = LogCapture()
        defer { capture.stop() }
        try agent.start()
        func run(_ timeout: Double, until: () -> Bool) throws -> Bool { try loop.run(for: timeout, until: until) }
        XCTAssertTrue(try run(10) { agent.commandReceiver?.channel.state == .open }, "command channel open")
        let channel = try XCTUnwrap(agent.commandReceiver?.channel)
        let csID = try XCTUnwrap(agent.commandReceiver?.controlStreamID)
        // Settled before the outage: the node holds this receiver and nothing went wrong yet.
        XCTAssertTrue(try run(5) { node.hasCommandReceiver(controlStreamID: csID) })
        _ = try run(0.3) { false }
        XCTAssertEqual(capture.count("commands: device_control: "), 0, "\(capture.lines)")
        XCTAssertEqual(channel.opens, 1)

        node.mode = .refuseConnections
        XCTAssertTrue(try run(10) { channel.failures >= 6 }, "several failed reconnections: \(channel.failures)")
        guard case .connect? = channel.lastError else { return XCTFail("\(String(describing: channel.lastError))") }
        node.mode = .normal
        // Back once the channel has stayed open (stableAfter), not at the upgrade.
        XCTAssertTrue(try run(10) { channel.state == .open && channel.opens == 2 && channel.failures == 0 })
        try agent.stop(flushUntil: EventLoop.deadline(after: 1))
        capture.stop()

        let lines = capture.lines.filter { $0.contains("command channel") || $0.contains("command receiver") }
        // Everything about the channel is said once, under its name.
        XCTAssertEqual(lines.filter { !$0.hasPrefix("commands: device_control: ") }, [], "\(lines)")
        XCTAssertEqual(Set(lines).count, lines.count, "\(lines)")
        let connect = lines.filter { $0.contains("cannot connect to the node for the command channel") }
        XCTAssertEqual(connect.count, 1, "\(lines)")
        XCTAssertEqual(lines.last, "commands: device_control: the command channel is back", "\(lines)")
        // The first line of the outage says when it reconnects; the failures after it do not repeat that.
        XCTAssertEqual(lines.filter { $0.contains("; reconnecting in ") }.count, 1, "\(lines)")
        XCTAssertTrue(lines.first?.hasSuffix("; reconnecting in 0.1 s") ?? false, "\(capture.lines)")
        XCTAssertLessThanOrEqual(lines.count, 3, "the loss, the refused reconnections, the return: \(lines)")
        // The observations' side of the same outage: one line when it starts, one when it ends.
        XCTAssertLessThanOrEqual(capture.count("node unreachable"), 1, "\(capture.lines)")
        XCTAssertLessThanOrEqual(capture.count("node reachable again"), 1, "\(capture.lines)")
    }
}
