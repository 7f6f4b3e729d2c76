import Foundation
@testable import OSHAgent
import OSHCore
import OSHDevNode
import OSHDevTools
import OSHPlatform
import OSHSimulation
import XCTest

/// The composition root holds the parts and the parts do not hold it: a runtime with every kind
/// of input (chips, GPS, camera, pan-tilt unit) and the node's commands, once stopped, is freed
/// with its devices — nothing points back up the chain to keep it alive.
final class CompositionTests: XCTestCase {
    override class func setUp() {
        super.setUp()
        DemoSimulation.install()
    }

    func testAStoppedRuntimeAndItsDevicesAreFreed() throws {
        Log.muted = true
        let node = try startedNode()
        defer { node.stop() }
        let dir = scratchPath("osh-composition")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let log = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("OSHCoreTests/Fixtures/nmea/gpsd-3.22/ublox-neo-m9n-nmea.log").path
        let loop = try EventLoop()
        weak var weakAgent: AgentRuntime?
        weak var weakHardware: Hardware?
        try {
            var plan = HardwarePlan()
            plan.barometer = .simulated
            plan.imu = .simulated
            plan.ptz = .simulated
            plan.camera = .simulated
            plan.cameraFPS = 5
            plan.devices.camera.width = 160
            plan.devices.camera.height = 120
            plan.gps = .replay(logPath: log)
            let hardware = Hardware(loop: loop, plan: plan)
            hardware.open()
            XCTAssertEqual(hardware.notes, [])
            XCTAssertEqual(
                Set(hardware.feeds), Set(OutputKind.inertial + [.barometer, .temperature, .gps, .video, .ptzPosition]))
            var c = agentConfig(node, serial: "10000000cafe0029", label: "Composed Pi", stateDirectory: dir)
            c.options = hardware.options(c.options)
            c.outputs = hardware.catalogueNames(c.options)
            c.externalOutputs = Set(hardware.catalogueNames(c.options))
            c.extraSpecs = hardware.extraSpecs
            c.video = hardware.hasVideo
            c.trustHostClock = true
            c.commands = true
            let agent = try AgentRuntime(config: c, loop: loop)
            agent.extraControls = hardware.extraControls(systemLabel: c.identity.label)
            try agent.start()
            try hardware.start(feeding: agent)
            XCTAssertTrue(
                try loop.run(for: 20) {
                    agent.commandReceivers.count == 2 && agent.rows.allSatisfy { $0.counters.sent > 0 }
                        && (agent.videoPublisher?.counters.sent ?? 0) > 0
                }, "\(agent.rows.map { ($0.outputName, $0.counters.sent) })")
            hardware.stop()
            try agent.stop(flushUntil: EventLoop.deadline(after: 2))
            weakAgent = agent
            weakHardware = hardware
        }()
        // A turn of the loop lets cancelled work release what it held.
        _ = try loop.run(for: 0.2) { false }
        XCTAssertNil(weakHardware, "something still holds the devices after the stop")
        XCTAssertNil(weakAgent, "something still holds the runtime after the stop")
    }

    /// A setting is parsed once, into the type its consumer takes: `[barometer] oversampling`
    /// reaches the chip's registers as the file says (BMP280 ctrl_meas osrs_p = ×16).
    func testTheBarometersOversamplingReachesTheChip() throws {
        func ctrlMeas(_ text: String) throws -> UInt8 {
            let settings = try AgentSettings.parse(
                bytes: Array(("[server.main]\nurl = \"http://127.0.0.1:1/sensorhub/api\"\n" + text).utf8), path: "t.conf",
                chips: ChipTable.known)
            var plan = Daemon.plan(settings)
            plan.barometer = .simulated
            let loop = try EventLoop()
            let hardware = Hardware(loop: loop, plan: plan)
            hardware.open()
            defer { hardware.stop() }
            let driver = try XCTUnwrap(hardware.barometerInput?.driver as? BMx280Driver, "\(hardware.notes)")
            return driver.written.ctrlMeas
        }
        XCTAssertEqual(try ctrlMeas("[barometer]\noversampling = \"high-resolution\"\n") >> 2 & 7, 0b101, "P×16")
        XCTAssertEqual(try ctrlMeas("[barometer]\noversampling = \"low-power\"\n") >> 2 & 7, 0b001, "P×1")
        XCTAssertEqual(try ctrlMeas("") >> 2 & 7, 0b011, "P×4 by default")
    }
}
