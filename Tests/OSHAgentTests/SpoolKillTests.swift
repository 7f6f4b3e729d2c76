import Foundation
import Glibc
import OSHCore
import OSHDevNode
import OSHPlatform
import XCTest

/// Store-and-forward through the real binary (`osh-edge run`) against the development node:
/// the node goes away, the agent is killed with SIGKILL at random points while it spools,
/// then the node comes back. What the node ends up holding must be every spooled record once,
/// in spool order, and nothing it had acknowledged again.
final class SpoolKillTests: XCTestCase {
    private var dir = ""
    private var node: DevNode!
    private var agent: Process?
    private var logs: [String] = []

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "osh-spool-kill-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        node = DevNode(config: DevNodeConfig(maxStoredObservations: 100_000, maxLoggedRequests: 100_000))
        _ = try node.start()
    }

    override func tearDown() {
        if let a = agent, a.isRunning { kill(a.processIdentifier, SIGKILL); a.waitUntilExit() }
        node.stop()
        try? FileManager.default.removeItem(atPath: dir)
    }

    private var spoolDir: String { dir + "/state/spool" }

    /// `server`: more keys for [server.dev] (the MQTT transport).
    private func writeConfig(server: String = "") throws -> String {
        let text = """
            [server.dev]
            url = "\(node.apiRoot)"
            \(server)

            [system]
            uid = "urn:osh:rpi:10000000d43a5001"

            [time]
            require_sync = false

            [paths]
            state_directory = "\(dir)/state"

            [publisher]
            ring_capacity = 100
            flush_interval = 0.1
            batch_max = 20
            spool = true
            spool_fsync = "never"

            [outputs.barometer]
            enabled = true
            rate = 50
            source = "simulated"

            [outputs.gps_data]
            enabled = true
            rate = 40
            source = "simulated"
            """
        let path = dir + "/osh-edge.conf"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private func startAgent(_ config: String) throws {
        if !FileManager.default.fileExists(atPath: dir + "/no-secrets") {
            FileManager.default.createFile(atPath: dir + "/no-secrets", contents: Data(), attributes: [.posixPermissions: 0o600])
        }
        let p = Process()
        p.executableURL = builtBinary("osh-edge-dev")  // source = "simulated" needs the simulation linked
        p.arguments = ["run", "--config", config, "--secrets", dir + "/no-secrets"]
        let log = dir + "/agent-\(logs.count).log"
        FileManager.default.createFile(atPath: log, contents: nil)
        logs.append(log)
        p.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        agent = p
    }

    private func stopAgent(_ signal: Int32) {
        guard let a = agent else { return }
        kill(a.processIdentifier, signal)
        a.waitUntilExit()
        agent = nil
    }

    private func wait(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while !condition() { if Date() > end { return false }; usleep(50_000) }
        return true
    }

    private func times(_ output: String) -> [Int64] {
        (node.stats.datastream(outputName: output)?.phenomenonTimes ?? []).map { Int64(($0 * 1000).rounded()) }
    }

    private func spooled() throws -> FileSpool.Inspection { try FileSpool.inspect(directory: spoolDir) }

    func testKilledWhileSpoolingNothingCorruptNothingTwiceOrderKept() throws {
        let config = try writeConfig()
        var rng = SplitMix64(seed: 0x05E_D6E)  // the kill points: random, but the same on every run
        try startAgent(config)
        XCTAssertTrue(wait(20) { self.times("barometer").count >= 20 && self.times("gps_data").count >= 20 }, "streaming")
        XCTAssertEqual(try spooled().segments.count, 0, "nothing on disk while the node answers")

        // The node goes away. The ring (100) fills in about a second, then the overflow is spooled.
        node.mode = .refuseConnections
        var kills = 0
        for round in 0..<4 {
            let before = try spooled().entries.count
            XCTAssertTrue(wait(15) { ((try? self.spooled().entries.count) ?? 0) > before }, "round \(round): spooling")
            usleep(UInt32(Double.random(in: 0.05...1.2, using: &rng) * 1e6))
            stopAgent(SIGKILL)
            kills += 1
            let after = try spooled()
            XCTAssertTrue(after.damage.isEmpty, "a killed writer never leaves half a record: \(after.damage)")
            try startAgent(config)
        }
        // A clean stop during the outage hands the ring to the spool too.
        XCTAssertTrue(wait(10) { ((try? self.spooled().entries.count) ?? 0) > 0 })
        usleep(1_500_000)
        stopAgent(SIGTERM)
        let lastLog = try String(contentsOfFile: logs[logs.count - 1], encoding: .utf8)
        XCTAssertTrue(lastLog.contains("spool: kept the ring's"), lastLog)

        let expected = try spooled()
        XCTAssertTrue(expected.damage.isEmpty)
        XCTAssertGreaterThan(expected.entries.count, 300, "several seconds of two outputs were spooled")
        let baroKey = SpoolRecord.key(outputName: "barometer"), gpsKey = SpoolRecord.key(outputName: "gps_data")
        func spooledTimes(_ entries: [FileSpool.Entry], _ key: UInt32) -> [Int64] {
            entries.filter { $0.key == key }.map { Int64(($0.time * 1000).rounded()) }
        }
        let nodeBefore = (baro: Set(times("barometer")), gps: Set(times("gps_data")))
        XCTAssertTrue(nodeBefore.baro.isDisjoint(with: spooledTimes(expected.entries, baroKey)), "nothing the node holds was spooled")
        XCTAssertTrue(nodeBefore.gps.isDisjoint(with: spooledTimes(expected.entries, gpsKey)))

        // The node takes 40 observation requests (the ring's backlog and part of the spool), then
        // refuses the rest with 503 (nothing stored); the agent is killed once it is backing off,
        // so nothing the node acknowledged is still in flight.
        node.mode = .acceptObservationsThenReject(remaining: 40, status: 503)
        try startAgent(config)
        XCTAssertTrue(
            wait(30) {
                self.node.requests.contains { $0.route.contains("observations") && $0.status == 503 }
            }, "the node stopped taking observations")
        usleep(500_000)  // the 503 reaches the agent, which backs off
        stopAgent(SIGKILL)
        kills += 1
        let midway = try spooled()
        // What is left of the earlier outage is exactly the tail of what was spooled (nothing skipped,
        // order kept); anything after it was spooled by this run (registering, then the 503s).
        let expectedKeys = Set(expected.entries.map { "\($0.key)/\($0.time)" })
        let left = midway.entries.prefix { expectedKeys.contains("\($0.key)/\($0.time)") }
        XCTAssertGreaterThan(left.count, 0, "killed halfway through the drain")
        XCTAssertLessThan(left.count, expected.entries.count)
        XCTAssertEqual(
            left.map(\.time), Array(expected.entries.map(\.time).suffix(left.count)),
            "the cursor stands exactly after what the node acknowledged")
        XCTAssertFalse(midway.entries.dropFirst(left.count).contains { expectedKeys.contains("\($0.key)/\($0.time)") })
        let allSpooled = expected.entries + midway.entries.dropFirst(left.count)

        // The node is back: the rest drains.
        node.mode = .normal
        try startAgent(config)
        XCTAssertTrue(wait(40) { ((try? self.spooled().pendingBytes) ?? 1) == 0 }, "the spool drains")
        usleep(500_000)
        stopAgent(SIGTERM)

        for (output, key) in [("barometer", baroKey), ("gps_data", gpsKey)] {
            let got = times(output)
            XCTAssertEqual(got.count, Set(got).count, "\(output): an observation reached the node twice")
            let want = spooledTimes(allSpooled, key)
            let wantSet = Set(want)
            XCTAssertEqual(
                got.filter { wantSet.contains($0) }, want,
                "\(output): every spooled observation arrived once, in spool order")
        }
        let refused = node.requests.filter { $0.route.contains("observations") && $0.status >= 400 && $0.status < 500 }
        XCTAssertEqual(refused.count, 0, "no corrupt record was sent: \(refused.prefix(3))")
        XCTAssertEqual(try spooled().segments.count, 0, "a drained spool leaves nothing on the card")
        print(
            "spool kill test: \(kills) SIGKILLs, \(expected.entries.count) spooled observations, "
                + "\(expected.entries.count - left.count) sent before the mid-drain kill, \(allSpooled.count - expected.entries.count) spooled by that run"
        )
    }

    /// The same over MQTT: the broker goes away, the agent spools and is killed with SIGKILL at
    /// random points, then the broker comes back and the spool drains through it. Every spooled
    /// observation reaches the node once, in spool order, and nothing is left on the card.
    func testKilledWhileSpoolingOverMQTTEverySpooledObservationArrivesOnce() throws {
        let broker = try MosquittoBroker()
        let ingest = DevNodeMQTTIngest(node: node, port: broker.port)
        try ingest.start()
        defer { ingest.stop() }
        let config = try writeConfig(server: "transport = \"mqtt\"\nbroker = \"\(broker.url)\"")
        var rng = SplitMix64(seed: 0x3A_77)
        try startAgent(config)
        XCTAssertTrue(wait(20) { self.times("barometer").count >= 20 && self.times("gps_data").count >= 20 }, "streaming")
        broker.stop()
        for round in 0..<3 {
            let before = try spooled().entries.count
            XCTAssertTrue(wait(15) { ((try? self.spooled().entries.count) ?? 0) > before }, "round \(round): spooling")
            usleep(UInt32(Double.random(in: 0.05...1.2, using: &rng) * 1e6))
            stopAgent(SIGKILL)
            XCTAssertTrue(try spooled().damage.isEmpty, "a killed writer never leaves half a record")
            try startAgent(config)
        }
        XCTAssertTrue(wait(10) { ((try? self.spooled().entries.count) ?? 0) > 0 })
        stopAgent(SIGTERM)
        let expected = try spooled()
        XCTAssertGreaterThan(expected.entries.count, 100, "seconds of two outputs were spooled")
        try broker.start()
        try startAgent(config)
        XCTAssertTrue(wait(40) { ((try? self.spooled().pendingBytes) ?? 1) == 0 }, "the spool drains through the broker")
        // The broker queued it for the node's side (a persistent session), which reconnects on
        // its own backoff and stores on its client's thread.
        let wantedBaro = Set(
            expected.entries.filter { $0.key == SpoolRecord.key(outputName: "barometer") }.map { Int64(($0.time * 1000).rounded()) })
        XCTAssertTrue(wait(20) { wantedBaro.isSubset(of: Set(self.times("barometer"))) }, "the node's side got the drained spool")
        stopAgent(SIGTERM)
        for (output, key) in [
            ("barometer", SpoolRecord.key(outputName: "barometer")), ("gps_data", SpoolRecord.key(outputName: "gps_data")),
        ] {
            let got = times(output)
            let want = expected.entries.filter { $0.key == key }.map { Int64(($0.time * 1000).rounded()) }
            let wantSet = Set(want)
            XCTAssertEqual(got.filter { wantSet.contains($0) }, want, "\(output): every spooled observation arrived once, in order")
            // QoS 1 between the broker and the node's side is at least once: what the broker had
            // sent it unacknowledged when it stopped comes again after its restart. Only those
            // (from before the outage, at most a flush's batch per datastream) may be twice.
            var seen = Set<Int64>(), twice: [Int64] = []
            for t in got where !seen.insert(t).inserted { twice.append(t) }
            XCTAssertTrue(twice.allSatisfy { !wantSet.contains($0) && $0 < (want.first ?? .max) }, "\(output): \(twice)")
            XCTAssertLessThanOrEqual(twice.count, 20, "\(output): \(twice.count) delivered twice by the broker")
        }
        XCTAssertEqual(ingest.counters.refused, 0, "\(String(describing: ingest.counters.lastRefusal))")
        XCTAssertEqual(try spooled().segments.count, 0)
    }

    /// `osh-edge spool status|dump` reads a spool without changing it.
    func testTheSpoolCommandShowsWhatWaits() throws {
        do {
            let spool = try FileSpool(options: FileSpoolOptions(directory: spoolDir), outputNames: ["barometer", "gps_data"], maxValues: 4)
            for (ds, t, v) in [
                (0, 1_773_853_000.0, [1013.25, 0.5]), (1, 1_773_853_000.5, [48.1, 11.2, 520]), (0, 1_773_853_001.0, [1013.5, 0.25]),
            ] {
                _ = v.withUnsafeBufferPointer { spool.append(datastream: ds, epochTime: t, values: $0) }
            }
        }
        let before = try spooled()
        let status = try runOSHEdge(["spool", "status", "--dir", spoolDir])
        XCTAssertEqual(status.status, 0, status.err)
        XCTAssertTrue(status.out.contains("3 observations waiting"), status.out)
        XCTAssertTrue(status.out.contains("barometer: 2"), status.out)
        XCTAssertTrue(status.out.contains("gps_data: 1"), status.out)
        let dump = try runOSHEdge(["spool", "dump", "--dir", spoolDir, "--json"])
        XCTAssertEqual(dump.status, 0, dump.err)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(dump.out.utf8)) as? [String: Any])
        let entries = try XCTUnwrap(json["entries"] as? [[String: Any]])
        XCTAssertEqual(entries.compactMap { $0["output"] as? String }, ["barometer", "gps_data", "barometer"])
        XCTAssertEqual(entries.first?["time"] as? String, "2026-03-18T16:56:40.000Z")
        XCTAssertEqual(entries.first?["values"] as? [Double], [1013.25, 0.5])
        XCTAssertEqual(try spooled().entries, before.entries, "looking changed nothing")
        let missing = try runOSHEdge(["spool", "status", "--config", dir + "/none.conf"])
        XCTAssertEqual(missing.status, 2)
        XCTAssertTrue(missing.err.contains("none.conf does not exist"), missing.err)
    }
}
