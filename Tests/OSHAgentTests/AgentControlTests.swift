import Foundation
import OSHAgent
import OSHCore
import OSHDevNode
import OSHPlatform
import OSHSimulation
import XCTest
import OSHDevTools

/// The runtime's controls (what the node's commands call): rate, on/off, thinning of fast inputs.
final class AgentControlTests: XCTestCase {
    // The simulated chips and values these agents run on come from OSHSimulation.
    override class func setUp() { super.setUp(); DemoSimulation.install() }

    private func makeAgent(_ node: DevNode, _ loop: EventLoop, dir: String, barometerRate: Double = 10) throws -> AgentRuntime {
        var c = agentConfig(node, serial: "10000000cafe0002", label: "Control Pi", stateDirectory: dir)
        c.outputs = ["barometer", "quat_orientation_data"]
        c.rates = ["barometer": barometerRate, "quat_orientation_data": 10]
        c.externalOutputs = ["quat_orientation_data"]
        c.trustHostClock = true
        return try AgentRuntime(config: c, loop: loop)
    }

    /// A source's port is found by the output's kind and checked against its record when it is
    /// made; what it sends passes the gate and lands under the leaf names, not by position.
    func testPortsAreFoundByKindAndWriteByName() throws {
        Log.muted = true
        let node = try startedNode()
        defer { node.stop() }
        let dir = scratchPath("osh-control")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let agent = try makeAgent(node, try EventLoop(), dir: dir)
        XCTAssertNil(try agent.port(PositionSample.self), "gps_data is not published")
        let quat = try XCTUnwrap(agent.port(QuaternionSample.self))
        XCTAssertEqual(quat.datastream, agent.index(of: "quat_orientation_data"))
        for k in 0..<100 { quat.send(QuaternionSample(x: 0.5, y: 0, z: 0, w: 0.5), at: 1000 + Double(k) * 0.01) }
        XCTAssertEqual(agent.publisher.counters(quat.datastream).produced, 10, "thinned by the gate to 10 Hz")
        let row = try XCTUnwrap(agent.rows.first { $0.outputName == "quat_orientation_data" })
        XCTAssertEqual(row.lastField, "qx")
        XCTAssertEqual(row.lastValue, 0.5)
        let baro = try XCTUnwrap(agent.port(BarometerSample.self))
        baro.send(BarometerSample(pressure: 1013.25, relativeAltitude: -2), at: 1000)
        XCTAssertEqual(agent.rows.first { $0.outputName == "barometer" }?.lastValue, 1013.25)
    }

    func testRateEnableAndThinning() throws {
        Log.muted = true
        let node = try startedNode()
        defer { node.stop() }
        let dir = scratchPath("osh-control")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try EventLoop()
        let agent = try makeAgent(node, loop, dir: dir)
        try agent.start()
        let q = try XCTUnwrap(agent.index(of: "quat_orientation_data"))
        let b = try XCTUnwrap(agent.index(of: "barometer"))

        // A 100 Hz input thinned to the output's 10 Hz: every tenth sample, by sample time.
        var values: [Double] = [0, 0, 0, 1]
        for k in 0..<100 {
            values.withUnsafeBufferPointer { agent.record(q, monotonicTime: 1000 + Double(k) * 0.01, values: $0) }
        }
        XCTAssertEqual(agent.publisher.counters(q).produced, 10)

        try loop.run(until: EventLoop.deadline(after: 1))
        let before = agent.publisher.counters(b).produced
        XCTAssertTrue((8...12).contains(before), "\(before) at 10 Hz in 1 s")
        try agent.setRate("barometer", 50)
        try loop.run(until: EventLoop.deadline(after: 1))
        let after = agent.publisher.counters(b).produced - before
        XCTAssertTrue((40...55).contains(after), "\(after) at 50 Hz in 1 s")

        try agent.setEnabled("barometer", false)
        let off = agent.publisher.counters(b).produced
        try loop.run(until: EventLoop.deadline(after: 0.3))
        XCTAssertEqual(agent.publisher.counters(b).produced, off)

        XCTAssertThrowsError(try agent.setRate("barometer", 500)) { XCTAssertTrue("\($0)".contains("up to 100 Hz")) }
        XCTAssertThrowsError(try agent.setRate("sonar", 5)) { XCTAssertTrue("\($0)".contains("no output named 'sonar'")) }
        try agent.stop(flushUntil: EventLoop.deadline(after: 1))
    }

    /// An output slower than 1 Hz takes a first reading soon after it is armed; each rate command
    /// arms it again. That first-reading timer is replaced, not added to: 1,000 rate commands leave
    /// the loop one pending timer and make one first reading.
    func testRateCommandsOnASlowOutputDoNotPileUpTimers() throws {
        Log.muted = true
        let node = try startedNode()
        defer { node.stop() }
        let dir = scratchPath("osh-control")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try EventLoop()
        let agent = try makeAgent(node, loop, dir: dir, barometerRate: 0.01)
        try agent.start()
        let b = try XCTUnwrap(agent.index(of: "barometer"))
        // One more when a grid instant (every 100 s or 50 s of the monotonic clock) falls in a window.
        try loop.run(until: EventLoop.deadline(after: 0.3))
        let first = agent.publisher.counters(b).produced
        XCTAssertTrue((1...2).contains(first), "\(first): the first reading, at once")

        let sources = loop.sourceCount
        for k in 0..<1000 { try agent.setRate("barometer", k % 2 == 0 ? 0.02 : 0.01) }
        XCTAssertEqual(loop.sourceCount, sources + 1, "one pending first reading, whatever the number of commands")
        try loop.run(until: EventLoop.deadline(after: 0.3))
        let more = agent.publisher.counters(b).produced - first
        XCTAssertTrue((1...2).contains(more), "\(more): one first reading for the last command, not 1,000")
        try agent.stop(flushUntil: EventLoop.deadline(after: 1))
    }
}
