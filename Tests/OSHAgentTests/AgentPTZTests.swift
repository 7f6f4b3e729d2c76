import Foundation
import OSHAgent
import OSHCore
import OSHDevNode
import OSHPlatform
import XCTest
import OSHSimulation
import OSHDevTools

/// A pan-tilt unit driven by the node: ptz_control registered beside device_control, an
/// operator's `rpan` moves the simulated PCA9685's channel by the calibrated pulse, and
/// ptz_position reports where it went; a move past the limits is clamped and says so.
final class AgentPTZTests: XCTestCase {
    // The simulated chips and values these agents run on come from OSHSimulation.
    override class func setUp() { super.setUp(); DemoSimulation.install() }

    func testRelativePanMovesTheServoAndIsReported() throws {
        Log.muted = true
        var nc = DevNodeConfig()
        nc.commandAckSeconds = 0.3
        let node = try startedNode(nc)
        defer { node.stop() }
        let dir = scratchPath("osh-ptz")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try EventLoop()
        var plan = HardwarePlan()
        plan.ptz = .simulated
        plan.devices.ptz.maxSpeed = 0  // one step: the test checks positions, not slewing
        let hardware = Hardware(loop: loop, plan: plan)
        hardware.open()
        XCTAssertEqual(hardware.notes, [])
        var c = agentConfig(node, serial: "10000000cafe0004", label: "PTZ Pi", stateDirectory: dir)
        c.outputs = ["device_health"]
        c.trustHostClock = true
        c.commands = true
        c.extraSpecs = hardware.extraSpecs
        c.externalOutputs = [PTZSchema.outputName]
        c.commandOptions = CommandReceiver.Options(
            ackWindow: 0.3, repostMargin: 0.2,
            websocket: WebSocketClient.Options(backoff: Backoff(initial: 0.1, maximum: 0.3), pingInterval: 0))
        let agent = try AgentRuntime(config: c, loop: loop)
        agent.extraControls = hardware.extraControls(systemLabel: c.identity.label)
        try agent.start()
        try hardware.start(feeding: agent)
        defer { hardware.stop() }
        func run(_ timeout: Double, until: () -> Bool) throws -> Bool {
            try loop.run(for: timeout, until: until)
        }
        XCTAssertTrue(try run(10) { agent.commandReceivers[PTZSchema.inputName]?.channel.state == .open })
        let csID = try XCTUnwrap(agent.commandReceivers[PTZSchema.inputName]?.controlStreamID)
        let chip = try XCTUnwrap((hardware.simulatedI2C as? SimulatedI2CBus)?.device(at: 0x40) as? SimulatedPCA9685)
        let before = try XCTUnwrap(chip.pulseMicros(channel: 0))
        let http = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: node.apiRoot))
        let builder = CSRequestBuilder(credentials: .none)
        func post(_ parameters: String) {
            http.send(
                builder.request(
                    .post, "/controlstreams/" + csID + "/commands", contentType: MediaType.json,
                    body: Array(("{\"parameters\":" + parameters + "}").utf8))
            ) { _ in }
        }
        post(#"{"rpan":3.0}"#)
        XCTAssertTrue(try run(5) { node.commands(controlStreamID: csID).first?.currentStatus == "COMPLETED" })
        XCTAssertTrue(try run(2) { hardware.ptzController?.pan == 3 })
        let after = try XCTUnwrap(chip.pulseMicros(channel: 0))
        // 2000 µs over 180°: 11.1 µs per degree; the chip resolves 4.88 µs per count.
        XCTAssertEqual(after - before, 3 * 2000 / 180, accuracy: 4.9)
        let ds = try XCTUnwrap(node.stats.datastreams.first { $0.outputName == PTZSchema.outputName })
        XCTAssertTrue(try run(3) { (node.stats.datastream(outputName: PTZSchema.outputName)?.observationCount ?? 0) >= 2 }, "\(ds)")

        post(#"{"rpan":150.0}"#)
        XCTAssertTrue(
            try run(5) { node.commands(controlStreamID: csID).count == 2 && node.commands(controlStreamID: csID)[1].currentStatus != nil })
        XCTAssertTrue(try run(2) { hardware.ptzController?.pan == 90 }, "clamped at the pan limit")
        XCTAssertTrue(agent.lastCommand?.contains("limit") == true, agent.lastCommand ?? "")
        try agent.stop(flushUntil: EventLoop.deadline(after: 1))
    }
}
