import Foundation
import OSHAgent
import OSHCore
import OSHDevNode
import OSHPlatform
import XCTest

/// The binary the .deb ships (osh-edge) links no development code; the development commands
/// and `source = "simulated"` are osh-edge-dev's, and osh-edge says so. osh-edge-sim, the
/// benchmarks' agent, is osh-edge plus the simulation, without the development node.
final class TargetHygieneTests: XCTestCase {
    func testTheServiceBinaryLinksNoSimulatorAndNoLibmicrohttpd() throws {
        let exe = builtBinary("osh-edge").path
        let bytes = try XCTUnwrap(FileManager.default.contents(atPath: exe), "\(exe) was not built")
        // Type and symbol names survive in Swift's metadata even in a stripped binary.
        XCTAssertNil(bytes.range(of: Data("Simulated".utf8)), "osh-edge contains a Simulated* type: a simulator is linked")
        // What toolchain/check-hygiene.sh checks of the cross build, here on the host build so a
        // String.contains(String) (the Regex runtime, ≈1 MB) is caught before the cross build.
        XCTAssertNil(
            bytes.range(of: Data("17_StringProcessing".utf8)),
            "osh-edge links the Regex runtime: use OSHCore's hasSubstring instead of String.contains(String)")
        try assertNoDevelopmentNodeLibraries("osh-edge")
    }

    /// osh-edge-sim (the benchmarks' agent) has the simulation but not the node's libmicrohttpd and
    /// GnuTLS, which would count in its RSS.
    func testTheBenchmarkBinaryLinksTheSimulationButNoLibmicrohttpd() throws {
        try assertNoDevelopmentNodeLibraries("osh-edge-sim")
        let r = try runOSHEdge(["version"], binary: "osh-edge-sim")
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertTrue(r.out.hasPrefix("osh-edge-sim \(Agent.version)\n"), r.out)
        XCTAssertFalse(r.out.contains("libmicrohttpd"), r.out)
        let help = try runOSHEdge(["help"], binary: "osh-edge-sim")
        XCTAssertTrue(help.out.hasPrefix("usage: osh-edge-sim <command>"), help.out)
        XCTAssertTrue(help.out.contains("config check [FILE]"), "osh-edge-sim runs osh-edge's commands:\n\(help.out)")
    }

    private func assertNoDevelopmentNodeLibraries(_ binary: String) throws {
        let exe = builtBinary(binary).path
        guard let readelf = ["/usr/bin/readelf", "/bin/readelf"].first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw XCTSkip("no readelf (binutils) to read \(binary)'s NEEDED libraries")
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: readelf)
        p.arguments = ["-d", exe]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        let needed = text.split(separator: "\n").filter { $0.contains("(NEEDED)") }
        XCTAssertTrue(needed.contains { $0.contains("libcurl") }, "readelf -d \(exe) shows no NEEDED lines:\n\(text)")
        for lib in ["libmicrohttpd", "libgnutls", "libnettle", "libp11-kit"] {
            XCTAssertFalse(needed.contains { $0.contains(lib) }, "\(binary) links \(lib):\n\(needed.joined(separator: "\n"))")
        }
    }

    func testTheDevelopmentCommandsPointToOSHEdgeDev() throws {
        let help = try runOSHEdge(["--help"])
        XCTAssertTrue(help.out.contains("demo, node, bench and calibrate mag --simulated: in osh-edge-dev"), help.out)
        for command in ["demo", "node", "bench"] {
            let r = try runOSHEdge([command])
            XCTAssertEqual(r.status, 2)
            XCTAssertEqual(
                r.err,
                "osh-edge: \(command) is in the development executable: osh-edge-dev \(command) "
                    + "(swift run osh-edge-dev \(command))\n")
        }
        let calibrate = try runOSHEdge(["calibrate", "mag", "--simulated"])
        XCTAssertEqual(calibrate.status, 2)
        XCTAssertTrue(calibrate.err.contains("use osh-edge-dev calibrate mag --simulated"), calibrate.err)
        let dev = try runOSHEdge(["version"], binary: "osh-edge-dev")
        XCTAssertEqual(dev.status, 0)
        XCTAssertTrue(dev.out.hasPrefix("osh-edge-dev \(Agent.version)\n"), dev.out)
        XCTAssertTrue(dev.out.contains("  libmicrohttpd "), dev.out)
        XCTAssertFalse(try runOSHEdge(["version"]).out.contains("libmicrohttpd"))
    }

    func testSimulatedSourcesNeedTheSimulationLinked() throws {
        let dir = scratchPath("osh-hygiene")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/osh-edge.conf"
        try """
        [server.dev]
        url = "http://127.0.0.1:9/sensorhub/api"

        [paths]
        state_directory = "\(dir)/state"

        [outputs.barometer]
        enabled = true
        source = "simulated"

        [outputs.gps_data]
        enabled = true
        source = "simulated"
        """.write(toFile: path, atomically: true, encoding: .utf8)
        let refused = try runOSHEdge(["config", "check", path])
        XCTAssertEqual(refused.status, 1)
        // Each with its line, as every other configuration error.
        XCTAssertEqual(
            refused.err,
            "osh-edge: \(path):9: source = \"simulated\" for barometer: " + SimulationHooks.unavailable
                + "\n\(path):13: source = \"simulated\" for gps_data: " + SimulationHooks.unavailable + "\n")
        for binary in ["osh-edge-dev", "osh-edge-sim"] {
            let accepted = try runOSHEdge(["config", "check", path], binary: binary)
            XCTAssertEqual(accepted.status, 0, "\(binary): \(accepted.err)")
            XCTAssertTrue(accepted.out.hasPrefix("\(path): OK"), "\(binary): \(accepted.out)")
        }
    }

    func testDefaultRatesComeFromTheOutputSpecs() {
        let specs = OutputCatalogue.all(OutputOptions(uid: "urn:osh:rpi:test"))
        var rates: [String: Double] = [:]
        for s in specs { rates[s.outputName] = s.defaultRate }
        XCTAssertEqual(rates["gps_data"], 1)
        XCTAssertEqual(rates["barometer"], 1)
        XCTAssertEqual(rates["device_health"], 1.0 / 60)
        XCTAssertEqual(rates["audio_level"], 10)
        XCTAssertEqual(rates["quat_orientation_data"], 10)
    }

    /// Without a simulation an output no device feeds is registered but nothing is invented for
    /// it (the old silent fallback): said once in the log; device_health still flows.
    func testAnOutputWithoutADeviceIsNotPublishedWithoutASimulation() throws {
        let saved = SimulationHooks.provider
        SimulationHooks.provider = nil
        defer { SimulationHooks.provider = saved }
        let node = try startedNode()
        defer { node.stop() }
        let state = scratchPath("osh-nosim")
        defer { try? FileManager.default.removeItem(atPath: state) }
        var c = agentConfig(node, serial: "10000000feed0015", label: "Test Pi [no sim]", stateDirectory: state)
        c.outputs = ["gps_data", "device_health"]
        c.rates = ["gps_data": 20, "device_health": 20]
        c.trustHostClock = true
        let log = LogCapture()
        defer { log.stop() }
        let loop = try EventLoop()
        let a = try AgentRuntime(config: c, loop: loop)
        try a.start()
        func count(_ name: String) -> Int { node.stats.datastream(outputName: name)?.observationCount ?? 0 }
        _ = try loop.run(for: 10) { count("device_health") >= 3 }
        _ = try loop.run(for: 0.3) { false }
        try a.stop(flushUntil: EventLoop.deadline(after: 1))
        XCTAssertGreaterThanOrEqual(count("device_health"), 3)
        XCTAssertEqual(count("gps_data"), 0)
        XCTAssertEqual(log.count("gps_data: no device feeds it and no simulation is linked; it is not published"), 1)
    }
}
