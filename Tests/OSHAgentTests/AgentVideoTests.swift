import Foundation
import OSHAgent
import OSHCore
import OSHDevNode
import OSHPlatform
import OSHSimulation
import XCTest
import OSHDevTools

/// The camera datastream through the agent: registered as swe+binary beside the scalar outputs,
/// frames sent one at a time, frames offered while one is in flight dropped and counted.
final class AgentVideoTests: XCTestCase {
    // The simulated chips and values these agents run on come from OSHSimulation.
    override class func setUp() { super.setUp(); DemoSimulation.install() }

    func testVideoRegistersAndSendsFramesBesideScalars() throws {
        Log.muted = true
        let node = try startedNode()
        defer { node.stop() }
        let dir = scratchPath("osh-video")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var c = agentConfig(node, serial: "10000000cafe0001", label: "Video Pi", stateDirectory: dir)
        c.outputs = ["barometer"]
        c.rates = ["barometer": 20]
        c.video = true
        c.trustHostClock = true
        let loop = try EventLoop()
        let agent = try AgentRuntime(config: c, loop: loop)
        try agent.start()
        let end = EventLoop.deadline(after: 5)
        while !agent.registered, Clock.monotonicNanoseconds() < end { _ = try loop.runOnce(timeoutMs: 20) }
        XCTAssertTrue(agent.registered)
        XCTAssertNotNil(agent.videoPublisher?.datastreamID)
        // A fake access unit: the node checks the record layout, not the H.264 inside.
        let frame: [UInt8] = [0, 0, 0, 1, 0x67, 1, 2, 3, 0, 0, 0, 1, 0x68, 4, 0, 0, 0, 1, 0x65] + Array(repeating: 0xAB, count: 5000)
        var offered = 0
        let stop = EventLoop.deadline(after: 1.5)
        while Clock.monotonicNanoseconds() < stop {
            // Offer faster than a round trip: some must be dropped as busy, none queued.
            frame.withUnsafeBytes { agent.offerVideo(monotonicTime: Double(Clock.monotonicNanoseconds()) / 1e9, accessUnit: $0) }
            offered += 1
            _ = try loop.runOnce(timeoutMs: 1)
        }
        let end2 = EventLoop.deadline(after: 2)
        while agent.videoPublisher?.inFlight == true, Clock.monotonicNanoseconds() < end2 { _ = try loop.runOnce(timeoutMs: 10) }
        let v = try XCTUnwrap(agent.videoPublisher?.counters)
        XCTAssertEqual(v.offered, offered)
        XCTAssertGreaterThan(v.sent, 3)
        XCTAssertGreaterThan(v.droppedBusy, 0)
        XCTAssertEqual(v.sent + v.droppedBusy + v.droppedNotReady + v.failed + v.droppedRejected, offered)
        let camera = node.stats.datastreams.first { $0.outputName == "camera0_H264" }
        XCTAssertEqual(camera?.observationCount, v.sent)
        // The scalar output kept flowing while frames were in flight.
        let baro = node.stats.datastreams.first { $0.outputName == "barometer" }
        XCTAssertGreaterThan(baro?.observationCount ?? 0, 10)
        try agent.stop(flushUntil: EventLoop.deadline(after: 1))
    }
}
