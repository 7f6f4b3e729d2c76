import Foundation
import OSHAgent
import OSHCore
import OSHDevNode
import XCTest

/// `osh-edge run`: the binary with a config file, against the development node.
final class DaemonTests: XCTestCase {
    private var dir = ""
    private var node: DevNode!

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "osh-run-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        node = DevNode(config: DevNodeConfig())
        _ = try node.start()
    }

    override func tearDown() {
        node.stop()
        try? FileManager.default.removeItem(atPath: dir)
    }

    private func writeConfig(_ outputs: String) throws -> String {
        let text = """
        [server.dev]
        url = "\(node.apiRoot)"

        [system]
        uid = "urn:osh:rpi:10000000d43a0001"

        [time]
        require_sync = false

        [paths]
        state_directory = "\(dir)/state"

        \(outputs)
        """
        let path = dir + "/osh-edge.conf"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private func start(_ config: String) throws -> (Process, Pipe) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("osh-edge")
        p.arguments = ["run", "--config", config, "--secrets", dir + "/no-secrets"]
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        return (p, err)
    }

    private func wait(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while !condition() { if Date() > end { return false }; usleep(50_000) }
        return true
    }

    private func count(_ output: String) -> Int { node.stats.datastream(outputName: output)?.observationCount ?? 0 }

    func testRunsReloadsOnSIGHUPAndStopsOnSIGTERM() throws {
        let config = try writeConfig("""
        [outputs.barometer]
        enabled = true
        rate = 5
        source = "simulated"
        """)
        let (p, err) = try start(config)
        XCTAssertTrue(wait(15) { self.count("barometer") >= 5 }, "barometer flows")
        XCTAssertEqual(count("gps_data"), 0)
        _ = try writeConfig("""
        [outputs.barometer]
        enabled = true
        rate = 5
        source = "simulated"

        [outputs.gps_data]
        enabled = true
        rate = 5
        source = "simulated"
        """)
        kill(p.processIdentifier, SIGHUP)
        XCTAssertTrue(wait(15) { self.count("gps_data") >= 5 }, "the reloaded config added gps_data")
        // A broken file on SIGHUP is refused; the agent keeps running with what it has.
        try "[publisher]\nformat = \"xml\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        kill(p.processIdentifier, SIGHUP)
        let before = count("barometer")
        XCTAssertTrue(wait(10) { self.count("barometer") > before + 3 }, "still streaming after a bad reload")
        p.terminate()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertTrue(log.contains("configuration reloaded"), log)
        XCTAssertTrue(log.contains("configuration not reloaded"), log)
        XCTAssertTrue(log.contains("osh-edge.conf:2:"), "the bad reload names file:line\n" + log)
    }

    func testABadConfigIsRefusedBeforeAnythingStarts() throws {
        let config = try writeConfig("""
        [outputs.barometer]
        enabled = true
        """)
        let (p, err) = try start(config)
        // A refused config exits at once; never let a test hang on an agent that started anyway.
        if !wait(10, { !p.isRunning }) { p.terminate() }
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 2)
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertTrue(log.contains("[outputs.barometer] has no hardware driver"), log)
        XCTAssertEqual(node.stats.totalRequests, 0, "nothing was sent to the node")
    }

    func testGPSConfigChoosesTheReceiver() throws {
        let serial = try writeConfig("""
        [gps]
        device = "/dev/ttyACM0"
        baud = 115200

        [outputs.gps_data]
        enabled = true
        """)
        XCTAssertEqual(try Daemon.load(configPath: serial, secretsPath: dir + "/none").config.gps, .serial(path: "/dev/ttyACM0", baud: 115200))
        let gpsd = try writeConfig("""
        [gps]
        gpsd = "127.0.0.1:2947"

        [outputs.gps_data]
        enabled = true
        """)
        XCTAssertEqual(try Daemon.load(configPath: gpsd, secretsPath: dir + "/none").config.gps, .gpsd(host: "127.0.0.1", port: 2947))
        let auto = try writeConfig("""
        [outputs.gps_data]
        enabled = true
        """)
        XCTAssertEqual(try Daemon.load(configPath: auto, secretsPath: dir + "/none").config.gps, .serial(path: "/dev/serial0", baud: nil))
        let bad = try writeConfig("""
        [gps]
        baud = 12345
        """)
        XCTAssertThrowsError(try Daemon.load(configPath: bad, secretsPath: nil)) { e in
            XCTAssertTrue("\(e)".contains("osh-edge.conf:14: baud in [gps] must be 0 (automatic) or one of"), "\(e)")
        }
    }
}
