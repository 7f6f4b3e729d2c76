import Foundation
import OSHAgent
import OSHCore
import OSHDevNode
import OSHDevTools
import OSHPlatform
import OSHSimulation
import XCTest

/// `temperature` and `humidity` at the node from a (simulated) BME280 read through its real
/// driver: the humidity the chip measures is no longer read and dropped, and a BMP280 gives
/// temperature but no humidity output.
final class ClimateOutputTests: XCTestCase {
    override class func setUp() { super.setUp(); DemoSimulation.install() }

    private func run(chip: String, outputs: [String]) throws -> (DevNode, Hardware, [String]) {
        Log.muted = true
        let node = try startedNode()
        let dir = scratchPath("osh-climate")
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try EventLoop()
        var plan = HardwarePlan()
        plan.barometer = .simulated
        plan.simulatedBarometer = chip
        plan.barometerRate = 5
        let hardware = Hardware(loop: loop, plan: plan)
        hardware.open()
        XCTAssertEqual(hardware.notes, [])
        var c = agentConfig(node, serial: "10000000c11a7e01", label: "Climate Pi", stateDirectory: dir)
        c.options = hardware.options(c.options)
        let found = Set(hardware.feeds)
        c.outputs = OutputCatalogue.all(c.options).filter { found.contains($0.kind) && outputs.contains($0.kind.settingsKey) }.map(
            \.outputName)
        for o in c.outputs ?? [] { c.rates[o] = 5 }
        // As the daemon does: outputs a device feeds are not also sampled from the simulation's values.
        c.externalOutputs = Set(hardware.catalogueNames(c.options))
        c.trustHostClock = true
        c.commands = false
        let agent = try AgentRuntime(config: c, loop: loop)
        try agent.start()
        try hardware.start(feeding: agent)
        _ = try loop.run(for: 10) {
            (c.outputs ?? []).allSatisfy { (node.stats.datastream(outputName: $0)?.observationCount ?? 0) >= 3 }
        }
        hardware.stop()
        try agent.stop(flushUntil: EventLoop.deadline(after: 1))
        return (node, hardware, c.outputs ?? [])
    }

    private func values(_ node: DevNode, _ output: String, _ field: String) throws -> [Double] {
        let ds = try XCTUnwrap(node.stats.datastream(outputName: output), "no \(output) datastream")
        return node.observations(datastreamID: ds.id).compactMap { $0["/" + field]?.double }
    }

    func testABME280GivesTemperatureAndHumidity() throws {
        let (node, hardware, published) = try run(chip: "BME280", outputs: ["barometer", "temperature", "humidity"])
        defer { node.stop() }
        XCTAssertEqual(Set(hardware.feeds), [.barometer, .temperature, .humidity])
        XCTAssertEqual(published, ["barometer", "temperature", "humidity"])
        let t = try values(node, "temperature", "temperature")
        let h = try values(node, "humidity", "relativeHumidity")
        XCTAssertGreaterThanOrEqual(t.count, 3)
        XCTAssertGreaterThanOrEqual(h.count, 3)
        // The demo's weather: 21.5 ± 0.5 °C; the simulated BME280 reports 45 %RH. Through the
        // chip's ADC codes and the datasheet compensation, so within its resolution.
        for v in t { XCTAssertEqual(v, 21.5, accuracy: 0.6) }
        for v in h { XCTAssertEqual(v, 45, accuracy: 0.5) }  // the simulated ADC code, inverted from 45 %RH
    }

    func testABMP280GivesTemperatureButNoHumidity() throws {
        let (node, hardware, published) = try run(chip: "BMP280", outputs: ["temperature", "humidity"])
        defer { node.stop() }
        XCTAssertEqual(Set(hardware.feeds), [.barometer, .temperature])
        XCTAssertEqual(published, ["temperature"], "no humidity output for a chip that does not measure it")
        XCTAssertGreaterThanOrEqual(try values(node, "temperature", "temperature").count, 3)
    }
}

/// A hygrometer beside the barometer: `temperature` and `humidity` come from it (the SHT4x's air,
/// not the barometer chip's), named after it; probe finds it and suggests its section.
final class HygrometerOutputTests: XCTestCase {
    override class func setUp() { super.setUp(); DemoSimulation.install() }

    func testASimulatedSHT4xFeedsTemperatureAndHumidity() throws {
        Log.muted = true
        let node = try startedNode()
        defer { node.stop() }
        let dir = scratchPath("osh-hygro")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try EventLoop()
        var plan = HardwarePlan()
        plan.barometer = .simulated
        plan.hygrometer = .simulated
        plan.hygrometerRate = 5
        let hardware = Hardware(loop: loop, plan: plan)
        hardware.open()
        XCTAssertEqual(hardware.notes, [])
        XCTAssertEqual(hardware.hygrometerChip, "SHT4x")
        var c = agentConfig(node, serial: "10000000c11a7e02", label: "Hygro Pi", stateDirectory: dir)
        c.options = hardware.options(c.options)
        XCTAssertEqual(c.options.climateChip, "SHT4x")
        c.outputs = ["temperature", "humidity"]
        for o in c.outputs ?? [] { c.rates[o] = 5 }
        // As the daemon does: outputs a device feeds are not also sampled from the simulation's values.
        c.externalOutputs = Set(hardware.catalogueNames(c.options))
        c.trustHostClock = true
        c.commands = false
        let agent = try AgentRuntime(config: c, loop: loop)
        try agent.start()
        try hardware.start(feeding: agent)
        _ = try loop.run(for: 10) {
            ["temperature", "humidity"].allSatisfy { (node.stats.datastream(outputName: $0)?.observationCount ?? 0) >= 3 }
        }
        hardware.stop()
        try agent.stop(flushUntil: EventLoop.deadline(after: 1))
        let h = try XCTUnwrap(node.stats.datastream(outputName: "humidity"))
        let values = node.observations(datastreamID: h.id).compactMap { $0["/relativeHumidity"]?.double }
        XCTAssertGreaterThanOrEqual(values.count, 3)
        let air = SimulatedHygrometerBoard.demoAir(Double(Clock.monotonicNanoseconds()) / 1e9)
        for v in values { XCTAssertEqual(v, air.percent, accuracy: 1, "the SHT4x's air (the demo's), through its ticks") }
        XCTAssertEqual(hardware.barometerInput?.temperatureSink == nil, true, "the barometer feeds no temperature beside a hygrometer")
    }

    func testProbeFindsItAndSuggestsItsSection() throws {
        let bus = SimulatedI2CBus(number: 1, recordsTrace: false)
        try SimulatedHygrometerBoard.attach(to: bus, chip: "SHT41") { (20, 50) }
        let r = Probe.scan(bus, dump: false)
        XCTAssertEqual(r.chips.map(\.name), ["SHT4x"])
        XCTAssertEqual(r.chips.first?.address, 0x44)
        let (config, _) = Probe.suggestConfig(buses: [r], audio: [], video: [])
        XCTAssertTrue(config.contains("[hygrometer]\nchip = \"SHT4x\"\naddress = \"0x44\""), config)
        let s = try AgentSettings.parse(
            bytes: Array(("[server.main]\nurl = \"http://127.0.0.1:8181/sensorhub/api\"\n" + config).utf8),
            path: "probe.conf", chips: ChipTable.known)
        XCTAssertEqual(s.devices.hygrometer.chip, "SHT4X")
        XCTAssertEqual(s.outputs["temperature"]?.enabled, true)
        XCTAssertEqual(s.outputs["humidity"]?.enabled, true)
    }
}
