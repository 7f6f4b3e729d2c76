import Foundation
import Glibc
import OSHAgent
import OSHCore
import OSHDevNode
import XCTest
import OSHDevTools
import OSHSimulation

/// `osh-edge run`: the binary with a config file, against the development node.
final class DaemonTests: XCTestCase {
    // The simulated chips and values these agents run on come from OSHSimulation.
    override class func setUp() { super.setUp(); DemoSimulation.install() }

    private var dir = ""
    private var node: DevNode!

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "osh-run-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        // An empty secrets file (a --secrets file must exist), so no test reads /etc/osh-edge/secrets.
        XCTAssertTrue(FileManager.default.createFile(atPath: dir + "/no-secrets", contents: Data(), attributes: [.posixPermissions: 0o600]))
        node = DevNode(config: DevNodeConfig())
        _ = try node.start()
    }

    override func tearDown() {
        node.stop()
        try? FileManager.default.removeItem(atPath: dir)
    }

    private func writeConfig(_ outputs: String, server: String = "") throws -> String {
        let text = """
            [server.dev]
            url = "\(node.apiRoot)"\(server.isEmpty ? "" : "\n" + server)

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

    /// `binary`: osh-edge-dev, or osh-edge-sim (what the soak runs); both link the simulation.
    private func start(
        _ config: String, binary: String = "osh-edge-dev",
        environment: [String: String] = [:]
    ) throws -> (Process, Pipe) {
        let p = Process()
        p.executableURL = builtBinary(binary)  // source = "simulated" needs the simulation linked
        p.arguments = ["run", "--config", config, "--secrets", dir + "/no-secrets"]
        if !environment.isEmpty { p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
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

    /// A few more barometer observations reach the node within 10 s.
    private func barometerKeepsFlowing() -> Bool {
        let before = count("barometer")
        return wait(10) { self.count("barometer") > before + 3 }
    }

    /// SIGTERM; the agent must exit 0. Returns what it logged.
    private func terminate(_ p: Process, _ err: Pipe) -> String {
        p.terminate()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        return String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    func testRunsReloadsOnSIGHUPAndStopsOnSIGTERM() throws {
        let config = try writeConfig(
            """
            [outputs.barometer]
            enabled = true
            rate = 5
            source = "simulated"
            """)
        let (p, err) = try start(config)
        XCTAssertTrue(wait(15) { self.count("barometer") >= 5 }, "barometer flows")
        XCTAssertEqual(count("gps_data"), 0)
        _ = try writeConfig(
            """
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
        XCTAssertTrue(barometerKeepsFlowing(), "still streaming after a bad reload")
        let log = terminate(p, err)
        XCTAssertTrue(log.contains("configuration reloaded"), log)
        // What the reload changed is said.
        XCTAssertTrue(log.contains("reloading \(config): changed gps_data enabled"), log)
        XCTAssertTrue(log.contains("configuration not reloaded"), log)
        XCTAssertTrue(log.contains("osh-edge.conf:2:"), "the bad reload names file:line\n" + log)
    }

    /// A reload whose file parses but whose agent cannot be built (here a TLS certificate file
    /// that is not there: the HTTP client refuses it) is refused before the running agent is
    /// touched: it keeps publishing. (It used to be stopped first, leaving nothing running.)
    func testAReloadThatCannotStartKeepsTheRunningAgentPublishing() throws {
        let barometer = """
            [outputs.barometer]
            enabled = true
            rate = 5
            source = "simulated"
            """
        let config = try writeConfig(barometer)
        let (p, err) = try start(config)
        XCTAssertTrue(wait(15) { self.count("barometer") >= 3 }, "barometer flows")
        _ = try writeConfig(
            barometer,
            server: """
                tls = "trust-certificate"
                certificate = "\(dir)/missing-node.pem"
                """)
        kill(p.processIdentifier, SIGHUP)
        usleep(500_000)
        XCTAssertTrue(barometerKeepsFlowing(), "still publishing after a reload that could not start")
        let log = terminate(p, err)
        XCTAssertTrue(log.contains("configuration not reloaded, keeping the running one"), log)
        XCTAssertTrue(log.contains("missing-node.pem"), "the refusal names the file\n" + log)
    }

    /// SIGTERM flushes what the ring holds before exiting, within the 5 s it is given: with a
    /// 10 s flush interval nothing has gone out when the signal comes.
    func testSIGTERMFlushesWhatTheRingHoldsWithinFiveSeconds() throws {
        let config = try writeConfig(
            """
            [publisher]
            flush_interval = 10
            batch_max = 500

            [outputs.barometer]
            enabled = true
            rate = 20
            source = "simulated"
            """)
        let (p, err) = try start(config)
        XCTAssertTrue(wait(15) { self.node.stats.datastream(outputName: "barometer") != nil }, "registered")
        usleep(1_500_000)
        let before = count("barometer")
        let t0 = Date()
        let log = terminate(p, err)
        XCTAssertLessThan(Date().timeIntervalSince(t0), 5, "stopped within the flush's 5 s")
        XCTAssertGreaterThanOrEqual(count("barometer") - before, 20, "the ring's observations were sent at SIGTERM (\(before) before)")
        XCTAssertTrue(log.contains("stopped"), log)
    }

    /// The counters file: one line per output, rewritten every second, cumulative across a
    /// SIGHUP reload (the new runtime's counters add to the finished one's), and at SIGTERM every
    /// observation produced is accounted for: sent (as the node counts it), dropped by reason or pending.
    func testTheCountersFileIsCumulativeAcrossAReloadAndBalancesAtTheEnd() throws {
        let countersPath = dir + "/run/counters"
        let config = try writeConfig(
            """
            [outputs.barometer]
            enabled = true
            rate = 10
            source = "simulated"
            """)
        // writeConfig writes its own [paths]: the key goes there.
        var text = try String(contentsOfFile: config, encoding: .utf8)
        text = text.replacingOccurrences(
            of: "state_directory = \"\(dir)/state\"",
            with: "state_directory = \"\(dir)/state\"\ncounters_file = \"\(countersPath)\"")
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        let (p, err) = try start(config)
        var before = 0
        XCTAssertTrue(
            wait(20) {
                before = self.counters(countersPath, pid: p.processIdentifier)["barometer"]?["produced"] ?? 0
                return before >= 20
            }, "the file counts barometer observations")
        XCTAssertNotNil(counters(countersPath, pid: p.processIdentifier)["device_health"], "every datastream has a line")
        try (text + "\n[outputs.gps_data]\nenabled = true\nrate = 5\nsource = \"simulated\"\n")
            .write(toFile: config, atomically: true, encoding: .utf8)
        kill(p.processIdentifier, SIGHUP)
        var afterReload: [String: [String: Int]] = [:]
        XCTAssertTrue(
            wait(15) {
                afterReload = self.counters(countersPath, pid: p.processIdentifier)
                return afterReload["gps_data"] != nil
            }, "the reloaded runtime's outputs appear")
        XCTAssertGreaterThanOrEqual(
            afterReload["barometer"]?["produced"] ?? 0, before,
            "cumulative: the finished runtime's counters were carried over the reload")
        XCTAssertTrue(barometerKeepsFlowing())
        let log = terminate(p, err)
        let final = counters(countersPath, pid: p.processIdentifier)
        for (name, c) in final {
            let produced = c["produced"] ?? -1, sent = c["sent"] ?? -1, dropped = c["dropped"] ?? -1
            XCTAssertEqual(c["pending"], 0, "\(name): nothing left in RAM after the stop\n\(log)")
            XCTAssertEqual(produced, sent + dropped, "\(name): \(c)\n\(log)")
            XCTAssertEqual(sent, count(name), "\(name): sent = what the node stored (\(c))")
        }
        XCTAssertGreaterThan(final["barometer"]?["produced"] ?? 0, afterReload["barometer"]?["produced"] ?? 0)
        // One reading at each runtime's start (a third when a whole minute of the grid falls in the test).
        XCTAssertGreaterThanOrEqual(final["device_health"]?["produced"] ?? 0, 2, "both runtimes' readings counted")
    }

    /// Unset, the counters file goes to systemd's RuntimeDirectory when the unit has one.
    func testTheCountersFileDefaultsToTheRuntimeDirectory() throws {
        let config = try writeConfig(
            """
            [outputs.barometer]
            enabled = true
            rate = 5
            source = "simulated"
            """)
        let (p, err) = try start(config, environment: ["RUNTIME_DIRECTORY": dir])
        XCTAssertTrue(wait(15) { self.counters(self.dir + "/counters", pid: p.processIdentifier)["barometer"] != nil })
        _ = terminate(p, err)
    }

    /// The counters file as a script reads it: the header names this process, then `name key=value…`
    /// lines whose values are whole numbers (last_produced: epoch seconds with 6 decimals). Empty
    /// when the file is missing or another process wrote it.
    private func counters(_ path: String, pid: Int32) -> [String: [String: Int]] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [:] }
        var lines = text.split(separator: "\n")
        guard !lines.isEmpty else { return [:] }
        let header = lines.removeFirst().split(separator: " ")
        XCTAssertEqual(header.first, "counters", text)
        guard header.contains(Substring("pid=\(pid)")) else { return [:] }
        XCTAssertTrue(header.contains { $0.hasPrefix("written=") && $0.split(separator: ".").last?.count == 6 }, text)
        XCTAssertTrue(header.contains { $0.hasPrefix("started=") && Int($0.dropFirst(8)) != nil }, text)
        var out: [String: [String: Int]] = [:]
        for line in lines {
            var fields = line.split(separator: " ")
            let name = String(fields.removeFirst())
            var row: [String: Int] = [:]
            for f in fields {
                let kv = f.split(separator: "=", maxSplits: 1)
                XCTAssertEqual(kv.count, 2, String(line))
                if kv[0] == "last_produced" {
                    XCTAssertNotNil(Double(kv[1]), String(line))
                    XCTAssertEqual(kv[1].split(separator: ".").last?.count, 6, String(line))
                } else {
                    row[String(kv[0])] = Int(kv[1])
                    XCTAssertNotNil(Int(kv[1]), String(line))
                }
            }
            XCTAssertEqual(row.count, 22, String(line))
            out[name] = row
        }
        return out
    }

    func testABadConfigIsRefusedBeforeAnythingStarts() throws {
        let config = try writeConfig(
            """
            [outputs.barometer]
            enabled = true
            [imu]
            chip = "MPU9999"
            """)
        let (p, err) = try start(config)
        // A refused config exits at once; never let a test hang on an agent that started anyway.
        if !wait(10, { !p.isRunning }) { p.terminate() }
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 2)
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertTrue(log.contains("chip = \"MPU9999\" in [imu] is not a chip osh-edge drives"), log)
        XCTAssertEqual(node.stats.totalRequests, 0, "nothing was sent to the node")
    }

    /// A refused config with a sound `[led]` tries to show the error on the LED before exiting
    /// (this machine has no GPIO chip, so it says why it cannot; on a Pi it blinks 9 s).
    func testARefusedConfigTriesTheConfigErrorLED() throws {
        let config = try writeConfig(
            """
            [publisher]
            format = "xml"
            [led]
            chip = "gpiochip9"
            line = 17
            """)
        let (p, err) = try start(config)
        if !wait(20, { !p.isRunning }) { p.terminate() }
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 2)
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertTrue(log.contains("format = \"xml\""), log)
        XCTAssertTrue(
            log.contains("the status LED cannot show the configuration error") || FileManager.default.fileExists(atPath: "/dev/gpiochip9"),
            log)
    }

    /// A board UART the config names that does not exist is refused before anything starts.
    /// A missing board UART (the default GPS device when config.txt does not enable it) used to stop
    /// the whole agent with exit 2 and systemd restarted it every 5 s: now gps_data waits for it,
    /// saying how to enable it, and every other output streams.
    func testAMissingBoardUARTLeavesOnlyGPSWaiting() throws {
        let config = try writeConfig(
            """
            [outputs.gps_data]
            enabled = true
            [gps]
            device = "/dev/ttyAMA9"
            [outputs.barometer]
            enabled = true
            rate = 5
            source = "simulated"
            """)
        let (p, err) = try start(config)
        XCTAssertTrue(wait(15) { self.count("barometer") >= 5 }, "the barometer streams")
        XCTAssertTrue(p.isRunning)
        XCTAssertEqual(count("gps_data"), 0)
        let log = terminate(p, err)
        XCTAssertTrue(log.contains("[gps] device = \"/dev/ttyAMA9\": No such file or directory; enable the UART"), log)
        XCTAssertTrue(log.contains("gps_data waits for it, the other outputs run"), log)
    }

    /// `[log] level = "debug"` used to print nothing more. It shows each request (method, path,
    /// status, sizes, latency) and the node's words when it refuses; off by default. Outside the
    /// journal each line carries its UTC time and level word instead of a `<N>` prefix.
    func testDebugLoggingShowsEachRequestAndLinesCarryTheirTime() throws {
        let outputs = """
            [outputs.barometer]
            enabled = true
            rate = 5
            source = "simulated"
            """
        let quiet = try writeConfig(outputs)
        let (p, err) = try start(quiet)
        XCTAssertTrue(wait(15) { self.count("barometer") >= 3 })
        let plain = terminate(p, err)
        XCTAssertFalse(plain.contains("HTTP POST"), plain)
        XCTAssertFalse(plain.contains("<5>"), "no syslog prefix outside the journal\n" + plain)
        let first = plain.split(separator: "\n").first.map(String.init) ?? ""
        XCTAssertTrue(
            first.range(
                of: #"^20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (notice|info|warning): "#,
                options: .regularExpression) != nil, first)

        let loud = try writeConfig(outputs + "\n[log]\nlevel = \"debug\"\n")
        let (q, qerr) = try start(loud)
        XCTAssertTrue(wait(15) { self.count("barometer") >= 6 })
        let debug = terminate(q, qerr)
        XCTAssertTrue(debug.contains(" debug: HTTP GET /systems/"), debug)  // the cached system, checked
        XCTAssertTrue(
            debug.range(
                of: #"debug: HTTP POST /datastreams/[^ ]+/observations → 201, sent \d+ B, received \d+ B in \d+ ms"#,
                options: .regularExpression) != nil, debug)
    }

    /// `osh-edge status`: what the running service is doing, from its counters file; once it is
    /// gone, that it is not running (exit 3) and what it last counted.
    func testStatusReadsTheRunningServiceAndSaysWhenItIsGone() throws {
        let counters = dir + "/counters"
        let config = try writeConfig(
            """
            [outputs.barometer]
            enabled = true
            rate = 5
            source = "simulated"
            """)
        var text = try String(contentsOfFile: config, encoding: .utf8)
        text = text.replacingOccurrences(of: "[paths]\n", with: "[paths]\ncounters_file = \"\(counters)\"\n")
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        let (p, err) = try start(config)
        XCTAssertTrue(wait(15) { self.count("barometer") >= 5 })
        usleep(1_200_000)
        let live = try runOSHEdge(["status", "--config", config])
        XCTAssertEqual(live.status, 0, live.err)
        XCTAssertTrue(live.out.hasPrefix("osh-edge PID \(p.processIdentifier), up "), live.out)
        XCTAssertTrue(live.out.contains("node: registered, node reachable"), live.out)
        XCTAssertTrue(live.out.contains("clock: synchronised"), live.out)
        XCTAssertTrue(live.out.range(of: #"barometer +\d+ +\d+ +\d+ +0 +0"#, options: .regularExpression) != nil, live.out)
        let json = try runOSHEdge(["status", "--counters", counters, "--json"])
        let doc = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
        XCTAssertEqual(doc["running"] as? Bool, true)
        XCTAssertEqual(doc["link"] as? String, "online")
        _ = terminate(p, err)
        let gone = try runOSHEdge(["status", "--counters", counters])
        XCTAssertEqual(gone.status, 3)
        XCTAssertTrue(gone.out.hasPrefix("the service is not running: \(counters) was last written "), gone.out)
        let none = try runOSHEdge(["status", "--counters", dir + "/nothing"])
        XCTAssertEqual(none.status, 3)
        XCTAssertTrue(none.err.contains("no counters file at \(dir)/nothing: the service is not running"), none.err)
    }

    /// One agent per state directory: a second `run` on the same one (`sudo osh-edge run` by hand
    /// while the service runs) is refused, naming the PID that holds it; a kill -9 leaves no stale
    /// lock behind.
    func testASecondAgentOnTheSameStateDirectoryIsRefused() throws {
        let config = try writeConfig(
            """
            [outputs.barometer]
            enabled = true
            rate = 5
            source = "simulated"
            """)
        let (first, firstErr) = try start(config)
        XCTAssertTrue(wait(15) { self.count("barometer") >= 3 })
        let (second, secondErr) = try start(config)
        second.waitUntilExit()
        XCTAssertEqual(second.terminationStatus, 1)
        let said = String(decoding: secondErr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertTrue(
            said.contains("another osh-edge (PID \(first.processIdentifier)) is already running on the state directory \(dir)/state"),
            said)
        XCTAssertTrue(said.contains("stop it first (kill \(first.processIdentifier))"), said)
        XCTAssertEqual(node.stats.systemCount, 1)
        kill(first.processIdentifier, SIGKILL)
        first.waitUntilExit()
        _ = firstErr
        let (third, thirdErr) = try start(config)
        let before = count("barometer")
        XCTAssertTrue(wait(15) { self.count("barometer") > before + 3 }, "the lock died with its holder")
        _ = terminate(third, thirdErr)
    }

    /// A configured barometer on a board without I²C (this machine): the agent runs with what it
    /// has, says how to enable the bus, and does not register the barometer.
    func testAMissingBusLeavesItsOutputsOutAndSaysWhy() throws {
        let config = try writeConfig(
            """
            [i2c]
            bus = 240
            [outputs.barometer]
            enabled = true
            [outputs.device_health]
            rate = 5
            """)
        let (p, err) = try start(config)
        XCTAssertTrue(wait(10) { self.count("device_health") > 0 }, "the rest runs")
        p.terminate()
        p.waitUntilExit()
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertTrue(log.contains("/dev/i2c-240 does not exist"), log)
        XCTAssertTrue(log.contains("dtparam=i2c_arm=on"), log)
        XCTAssertFalse(node.stats.datastreams.contains { $0.outputName == "barometer" }, "barometer not registered")
    }

    /// OSH_EDGE_SIM_FAULTS names a file the soak edits: `i2c fail` lines take the simulated
    /// barometer and IMU off the bus (the drivers see EREMOTEIO, as from an unplugged chip); the
    /// agent logs it and their outputs pause; the lines removed, the chips answer and the outputs resume.
    func testAChipFailedFromTheFaultFilePausesItsOutputsUntilTheLineGoes() throws {
        let faults = dir + "/faults"
        let config = try writeConfig(
            """
            [outputs.barometer]
            enabled = true
            rate = 5
            source = "simulated"

            [outputs.quat_orientation_data]
            enabled = true
            rate = 10
            source = "simulated"
            """)
        let (p, err) = try start(config, binary: "osh-edge-sim", environment: ["OSH_EDGE_SIM_FAULTS": faults])
        XCTAssertTrue(wait(15) { self.count("barometer") >= 3 && self.count("quat_orientation_data") >= 3 }, "both flow")
        try "# the soak\ni2c fail 0x76\ni2c fail 0x68\n".write(toFile: faults, atomically: true, encoding: .utf8)
        // Seen within a second, down after three failed polls, the last batch flushed: then the
        // counts stand still (checked over 2 s, for up to 12 s on a loaded machine).
        var paused = (count("barometer"), count("quat_orientation_data"))
        XCTAssertTrue(
            wait(12) {
                usleep(2_000_000)
                let now = (self.count("barometer"), self.count("quat_orientation_data"))
                defer { paused = now }
                return now == paused
            }, "the barometer and the IMU's outputs pause")
        try FileManager.default.removeItem(atPath: faults)
        XCTAssertTrue(
            wait(20) { self.count("barometer") > paused.0 + 3 && self.count("quat_orientation_data") > paused.1 + 3 },
            "both resume once the lines are gone")
        let log = terminate(p, err)
        XCTAssertTrue(log.contains("chips failing from \(faults): 0x68, 0x76"), log)
        for chip in ["barometer BMP280", "MPU9250 at 0x68"] {
            XCTAssertTrue(log.contains("\(chip): /dev/i2c-1 at 0x"), "\(chip)'s fault is logged\n" + log)
            XCTAssertTrue(log.contains("Remote I/O error"), log)
            XCTAssertTrue(log.contains("\(chip): back; its outputs resume"), log)
        }
    }

    /// `[audio] device = "FILE.wav"` with a simulated audio_level replays that WAV (looped, in real
    /// time, through ALSA's file plugin as the demo does); without a .wav the note says so.
    func testASimulatedMicrophoneReplaysTheWAVTheAudioDeviceNames() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let wav = root + "/Tests/OSHCoreTests/Fixtures/audio/pinknoise_vol-20dB.wav"
        let audio = """
            [outputs.audio_level]
            enabled = true
            source = "simulated"
            """
        let config = try writeConfig(audio + "\n[audio]\ndevice = \"\(wav)\"\n")
        XCTAssertEqual(
            try Daemon.load(configPath: config, secretsPath: dir + "/no-secrets", forRunning: false).plan.audioWAV, wav,
            "config check accepts it")
        let (p, err) = try start(config, binary: "osh-edge-sim")
        // 0.1 s windows: ten levels a second once the file plays.
        XCTAssertTrue(wait(15) { self.count("audio_level") >= 10 }, "audio_level flows from the WAV")
        let first = count("audio_level")
        usleep(3_000_000)
        let inThreeSeconds = count("audio_level") - first
        XCTAssertTrue((20...40).contains(inThreeSeconds), "\(inThreeSeconds) levels in 3 s: in real time, ten a second")
        let log = terminate(p, err)
        XCTAssertTrue(log.contains("audio: \(wav): S16_LE"), log)

        let none = try writeConfig(audio + "\n[outputs.device_health]\nrate = 5\n")
        XCTAssertNil(try Daemon.load(configPath: none, secretsPath: dir + "/no-secrets").plan.audioWAV)
        let health = count("device_health")
        let (q, qerr) = try start(none, binary: "osh-edge-sim")
        XCTAssertTrue(wait(10) { self.count("device_health") > health }, "the rest runs")
        XCTAssertTrue(terminate(q, qerr).contains("audio: no WAV to replay (none given); audio_level is not published"))
    }

    func testGPSConfigChoosesTheReceiver() throws {
        let serial = try writeConfig(
            """
            [gps]
            device = "/dev/ttyACM0"
            baud = 115200

            [outputs.gps_data]
            enabled = true
            """)
        XCTAssertEqual(
            try Daemon.load(configPath: serial, secretsPath: dir + "/no-secrets").plan.gps, .serial(path: "/dev/ttyACM0", baud: 115200))
        let gpsd = try writeConfig(
            """
            [gps]
            gpsd = "127.0.0.1:2947"

            [outputs.gps_data]
            enabled = true
            """)
        XCTAssertEqual(try Daemon.load(configPath: gpsd, secretsPath: dir + "/no-secrets").plan.gps, .gpsd(host: "127.0.0.1", port: 2947))
        let auto = try writeConfig(
            """
            [outputs.gps_data]
            enabled = true
            """)
        XCTAssertEqual(
            try Daemon.load(configPath: auto, secretsPath: dir + "/no-secrets").plan.gps, .serial(path: "/dev/serial0", baud: nil))
        let bad = try writeConfig(
            """
            [gps]
            baud = 12345
            """)
        XCTAssertThrowsError(try Daemon.load(configPath: bad, secretsPath: nil)) { e in
            XCTAssertTrue("\(e)".contains("osh-edge.conf:14: baud in [gps] must be 0 (automatic) or one of"), "\(e)")
        }
    }

    /// `[record]` reaches the runtime with its rates keyed by the datastreams' names (the raw IMU
    /// outputs named for the chip); no [record.NAME] records every enabled output at its live rate.
    func testRecordRatesAreKeyedByTheDatastreamName() throws {
        let outputs = """
            [outputs.accelerometer]
            enabled = true
            rate = 20

            [outputs.barometer]
            enabled = true

            [outputs.camera0_H264]
            enabled = true
            rate = 2
            """
        let some = try Daemon.load(
            configPath: try writeConfig(
                outputs + """

                    [record]
                    enabled = true
                    max_hours = 2

                    [record.accelerometer]
                    rate = 400

                    [record.camera0_H264]
                    rate = 25
                    """), secretsPath: dir + "/no-secrets", forRunning: false
        ).config
        XCTAssertEqual(some.recordRates, ["MPU9250_Accelerometer_data": 400, "camera0_H264": 25])
        XCTAssertEqual(some.record.maxHours, 2)
        XCTAssertEqual(some.record.rates, ["accelerometer": 400, "camera0_H264": 25])

        let all = try Daemon.load(
            configPath: try writeConfig(outputs + "\n[record]\nenabled = true\n"),
            secretsPath: dir + "/no-secrets", forRunning: false
        ).config
        XCTAssertEqual(all.recordRates, ["MPU9250_Accelerometer_data": 20, "barometer": 1, "camera0_H264": 2, "device_health": 1.0 / 60])

        let off = try Daemon.load(
            configPath: try writeConfig(outputs + "\n[record.barometer]\nrate = 10\n"),
            secretsPath: dir + "/no-secrets", forRunning: false
        ).config
        XCTAssertEqual(off.recordRates, [:])
        XCTAssertFalse(off.record.enabled)
    }

    /// The agent's datagrams to a real notify socket while it runs `seconds`, then stops (SIGTERM).
    private func notifyMessages(_ config: String, seconds: Double) throws -> (messages: [String], status: Int32) {
        let sockPath = dir + "/notify.sock"
        unlink(sockPath)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { dst in for (i, b) in sockPath.utf8.enumerated() { dst[i] = b } }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(bound, 0)
        var tv = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let p = Process()
        p.executableURL = builtBinary("osh-edge-dev")  // source = "simulated" needs the simulation linked
        p.arguments = ["run", "--config", config, "--secrets", dir + "/no-secrets"]
        var env = ProcessInfo.processInfo.environment
        env["NOTIFY_SOCKET"] = sockPath
        env["WATCHDOG_USEC"] = "600000"
        p.environment = env
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        var messages: [String] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        func receive(for seconds: Double) {
            let end = Date().addingTimeInterval(seconds)
            while Date() < end {
                let n = recv(fd, &buf, buf.count, 0)
                if n > 0 { messages.append(String(decoding: buf[0..<n], as: UTF8.self)) }
            }
        }
        receive(for: seconds)
        p.terminate()
        // Read while it stops, as systemd does (a stop during an outage drains for a few seconds).
        let end = Date().addingTimeInterval(20)
        repeat { receive(for: 0.3) } while p.isRunning && Date() < end
        if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        return (messages, p.terminationStatus)
    }

    /// Under systemd: READY=1 as soon as the agent runs (devices open, loop turning) with a readable
    /// STATUS, STATUS=streaming once registered, WATCHDOG=1 from the loop at half the watchdog
    /// period, STOPPING=1 on SIGTERM — over a real notify socket.
    func testSystemdNotifyReadyStatusWatchdogStopping() throws {
        let config = try writeConfig(
            """
            [outputs.barometer]
            enabled = true
            source = "simulated"
            """)
        let (messages, status) = try notifyMessages(config, seconds: 2.5)
        // READY=1 carries the state at the loop's first turn: still registering, or (on a node that
        // answers quickly) already streaming.
        let ready = messages.first { $0.hasPrefix("READY=1") }
        XCTAssertTrue(
            [
                "READY=1\nSTATUS=running: registering with \(node.apiRoot)",
                "READY=1\nSTATUS=streaming 2 outputs to 127.0.0.1:\(node.port)",
            ].contains(ready ?? ""), "\(messages)")
        XCTAssertTrue(messages.contains { $0.hasPrefix("STATUS=starting") })
        XCTAssertTrue(messages.contains("STATUS=streaming 2 outputs to 127.0.0.1:\(node.port)"), "\(messages)")
        XCTAssertGreaterThanOrEqual(messages.filter { $0 == "WATCHDOG=1" }.count, 4, "every 0.3 s from the loop")
        XCTAssertTrue(messages.contains("STOPPING=1\nSTATUS=stopping"))
        XCTAssertEqual(status, 0)
    }

    /// A board whose node is down at boot used to stay "activating" until systemd's start timeout
    /// killed it, again and again: READY=1 came only after the first registration. It is ready
    /// when it runs; the node's absence is what STATUS says.
    func testANodeThatIsDownAtStartDoesNotKeepTheServiceActivating() throws {
        let config = try writeConfig(
            """
            [outputs.barometer]
            enabled = true
            source = "simulated"
            """)
        node.stop()
        let (messages, status) = try notifyMessages(config, seconds: 3)
        XCTAssertTrue(messages.contains { $0.hasPrefix("READY=1\nSTATUS=running: registering with ") }, "\(messages)")
        XCTAssertTrue(messages.contains { $0.hasPrefix("STATUS=node unreachable, retrying in ") }, "\(messages)")
        XCTAssertEqual(status, 0)
        _ = try node.start()
    }

    func testTheUnitFileScoresWellInSystemdAnalyzeSecurity() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") else {
            throw XCTSkip("systemd-analyze is not installed")
        }
        let unit = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("deploy/osh-edge.service").path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/systemd-analyze")
        p.arguments = ["security", "--offline=true", "--no-pager", unit]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        let line = try XCTUnwrap(text.split(separator: "\n").first { $0.contains("Overall exposure level") })
        let score = try XCTUnwrap(line.split(separator: " ").compactMap { Double($0) }.first, String(line))
        XCTAssertLessThanOrEqual(score, 2.0, String(line))
    }
}

/// `run`, `config check`, `schema` and `check` read one configuration the same way.
final class ConfiguredOutputsTests: XCTestCase {
    /// After a healthy `run`, `check --config` checks what the file configures (it had no
    /// --config and checked the whole catalogue), and the magnetometer has one name in `run`,
    /// `config check` and `schema` (AK8963_…, the MPU-9250's magnetometer; `run` alone said so).
    func testCheckAfterARunReadsTheConfigAndTheMagnetometerHasOneName() throws {
        let dir = NSTemporaryDirectory() + "osh-check-config-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let node = DevNode(config: DevNodeConfig())
        _ = try node.start()
        defer { node.stop() }
        let path = dir + "/osh-edge.conf"
        try """
        [server.dev]
        url = "\(node.apiRoot)"

        [system]
        uid = "urn:osh:rpi:10000000d43a0002"

        [time]
        require_sync = false

        [paths]
        state_directory = "\(dir)/state"

        [outputs.magnetometer]
        enabled = true
        source = "simulated"

        [outputs.device_health]
        enabled = true
        rate = 5
        """.write(toFile: path, atomically: true, encoding: .utf8)
        let secrets = dir + "/no-secrets"
        FileManager.default.createFile(atPath: secrets, contents: Data(), attributes: [.posixPermissions: 0o600])

        // Simulated sources need the simulation linked: osh-edge-dev runs and validates this file.
        let configCheck = try runOSHEdge(["config", "check", path], binary: "osh-edge-dev")
        XCTAssertEqual(configCheck.status, 0, configCheck.err)
        XCTAssertTrue(configCheck.out.contains("AK8963_Magnetometer_data"), configCheck.out)
        let schema = try runOSHEdge(["schema", "--list"])
        XCTAssertTrue(schema.out.contains("AK8963_Magnetometer_data\t"), schema.out)
        XCTAssertFalse(schema.out.contains("MPU9250_Magnetometer_data"), schema.out)

        let run = Process()
        run.executableURL = builtBinary("osh-edge-dev")
        run.arguments = ["run", "--config", path, "--secrets", secrets]
        run.standardError = FileHandle.nullDevice
        run.standardOutput = FileHandle.nullDevice
        try run.run()
        let end = Date().addingTimeInterval(20)
        func registered(_ name: String) -> Bool { node.stats.datastreams.contains { $0.outputName == name } }
        while !(registered("AK8963_Magnetometer_data") && registered("device_health")), Date() < end { usleep(50_000) }
        run.terminate()
        run.waitUntilExit()
        XCTAssertTrue(registered("AK8963_Magnetometer_data"), "run registers the magnetometer under its own chip's name")

        let check = try runOSHEdge(["check", "--config", path, "--secrets", secrets])
        XCTAssertEqual(check.status, 0, check.out + check.err)
        XCTAssertTrue(
            check.out.contains("ok    all 2 configured datastreams are there (the node holds 2 datastreams for this board)"), check.out)
    }
}
