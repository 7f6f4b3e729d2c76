import Foundation
@testable import OSHAgent
import OSHCore
import OSHDevNode
import OSHPlatform
import OSHSimulation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The broker faults a field link meets, each against Debian's mosquitto: a broker that stalls
/// with its socket open, a payload the broker refuses, credentials it refuses, and a broker whose
/// key is not the pinned one. Produced = delivered + counted every time.
final class MQTTFaultTests: XCTestCase {
    override class func setUp() {
        super.setUp()
        DemoSimulation.install()
    }

    private var stateDir = ""

    override func setUp() {
        Log.muted = true
        stateDir = scratchPath("osh-mqtt-fault")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: stateDir)
    }

    private func config(_ node: DevNode, broker: MosquittoBroker, serial: String, outputs: [String]) throws -> AgentConfig {
        var c = agentConfig(node, serial: serial, label: "MQTT fault Pi", stateDirectory: stateDir)
        c.outputs = outputs
        c.trustHostClock = true
        c.publisher.backoffInitial = 0.2
        c.publisher.backoffMax = 0.4
        var m = MQTTTransportConfig(
            broker: try XCTUnwrap(MQTTBroker(url: broker.url)), topics: MQTTTopics(scheme: .osh),
            clientID: c.identity.uid, credentials: .none)
        m.options.backoff = Backoff(initial: 0.2, maximum: 0.5)
        c.mqtt = m
        return c
    }

    /// A broker (with `extra` configuration lines), the development node, and its MQTT side
    /// storing what the broker receives.
    private func rig(extra: String = "") throws -> (MosquittoBroker, DevNode, DevNodeMQTTIngest) {
        let broker = try MosquittoBroker(persistence: false, extra: extra)
        let node = try startedNode()
        let ingest = DevNodeMQTTIngest(node: node, port: broker.port)
        do {
            try ingest.start()
        } catch {
            node.stop()
            throw error
        }
        return (broker, node, ingest)
    }

    private func stored(_ node: DevNode, _ name: String) -> Int {
        node.stats.datastreams.filter { $0.outputName == name }.reduce(0) { $0 + $1.observationCount }
    }

    /// The broker frozen for 4 s (SIGSTOP: TCP stays up, nothing is read or acknowledged) while
    /// the agent streams at 20 Hz: the loop keeps its timers, the outputs keep producing into the
    /// ring, and once the broker thaws every PUBLISH is acknowledged and stored — none lost, none
    /// dropped, none counted unknown (4 s is well inside the 20 s PUBACK timeout).
    func testASlowBrokerDelaysButLosesNothing() throws {
        let (broker, node, ingest) = try rig()
        defer {
            ingest.stop()
            node.stop()
        }
        var c = try config(node, broker: broker, serial: "10000000aa0000d1", outputs: ["barometer", "device_health"])
        c.rates = ["barometer": 20]
        let loop = try EventLoop()
        let agent = try AgentRuntime(config: c, loop: loop)
        try agent.start()
        XCTAssertTrue(try loop.run(for: 10) { agent.registered && agent.mqtt?.state == .connected })
        _ = try loop.run(for: 1) { false }
        let sentBefore = agent.rows.first { $0.outputName == "barometer" }?.counters.sent ?? 0
        broker.freeze(true)
        var ticks: [UInt64] = []
        let t = try loop.addTimer(firstAt: loop.deadline(after: 0.05), interval: 50_000_000) { ticks.append($0) }
        _ = try loop.run(for: 4) { false }
        loop.cancel(t)
        let frozen = try XCTUnwrap(agent.rows.first { $0.outputName == "barometer" }?.counters)
        XCTAssertGreaterThan(frozen.produced - sentBefore, 60, "the barometer kept producing")
        XCTAssertLessThanOrEqual(frozen.sent - sentBefore, 20, "little can be acknowledged by a frozen broker")
        let gaps = zip(ticks.dropFirst(), ticks).map { Double($0 &- $1) / 1e6 }
        XCTAssertLessThan(gaps.max() ?? 0, 250, "the loop stalled behind the broker: worst gap \(gaps.max() ?? 0) ms")
        broker.freeze(false)
        _ = try loop.run(for: 3) { false }
        try agent.stop(flushUntil: EventLoop.deadline(after: 5))
        let rows = agent.rows
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, rows.contains(where: { stored(node, $0.outputName) < $0.counters.sent }) { usleep(50_000) }
        for r in rows {
            let n = r.counters
            XCTAssertEqual(n.produced, n.sent, "\(r.outputName): \(n)")
            XCTAssertEqual(n.unknownOutcome, 0, "\(r.outputName): \(n)")
            XCTAssertEqual(stored(node, r.outputName), n.sent, r.outputName)
        }
    }

    /// A broker that takes at most 2000 bytes a message (`message_size_limit`) answers the
    /// camera's 3 kB frames with PUBACK 0x95 (packet too large): each is dropped and counted once
    /// as rejected, the log says what the broker answered, and the scalar outputs beside it are
    /// all delivered.
    func testAPayloadTheBrokerRefusesIsCountedOnceAndTheRestIsDelivered() throws {
        let (broker, node, ingest) = try rig(extra: "message_size_limit 2000\n")
        defer {
            ingest.stop()
            node.stop()
        }
        var c = try config(node, broker: broker, serial: "10000000aa0000d2", outputs: ["barometer", "device_health"])
        c.video = true
        let loop = try EventLoop()
        let agent = try AgentRuntime(config: c, loop: loop)
        try agent.start()
        XCTAssertTrue(try loop.run(for: 10) { agent.registered && agent.mqtt?.state == .connected })
        let frame: [UInt8] = [0, 0, 0, 1, 0x65] + Array(repeating: 0xCD, count: 3000)
        var offered = 0
        let until = EventLoop.deadline(after: 2)
        while Clock.monotonicNanoseconds() < until {
            if agent.videoPublisher?.inFlight == false {
                offered += 1
                frame.withUnsafeBytes { agent.offerVideo(monotonicTime: Double(Clock.monotonicNanoseconds()) / 1e9, accessUnit: $0) }
            }
            _ = try loop.runOnce(timeoutMs: 50)
        }
        _ = try loop.run(for: 1) { agent.videoPublisher?.inFlight == false }
        try agent.stop(flushUntil: EventLoop.deadline(after: 3))
        let v = try XCTUnwrap(agent.videoPublisher?.counters)
        XCTAssertGreaterThan(v.droppedRejected, 2, "\(v)")
        XCTAssertEqual(v.sent, 0, "\(v)")
        XCTAssertEqual(v.offered, v.droppedRejected + v.droppedBusy + v.droppedNotReady, "each frame counted once: \(v)")
        XCTAssertTrue(v.lastError?.contains("PUBACK reason code 149") == true, String(describing: v.lastError))
        XCTAssertEqual(stored(node, "camera0_H264"), 0)
        let rows = agent.rows
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, rows.contains(where: { stored(node, $0.outputName) < $0.counters.sent }) { usleep(50_000) }
        for r in rows {
            let n = r.counters
            XCTAssertGreaterThan(n.sent, 0, r.outputName)
            XCTAssertEqual(n.produced, n.sent, "\(r.outputName): \(n)")
            XCTAssertEqual(stored(node, r.outputName), n.sent, r.outputName)
        }
    }

    /// A broker with a password file refuses the board's wrong password at CONNACK: the link waits
    /// with the broker's reason and what to check, the outputs keep producing and nothing is
    /// dropped, and `osh-edge check` says the same in one FAIL line.
    func testCredentialsTheBrokerRefusesAreSaidAndNothingIsDropped() throws {
        let dir = scratchPath("osh-mqtt-passwd")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let passwd = Process()
        passwd.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_passwd")
        passwd.arguments = ["-b", "-c", dir + "/passwd", "pi", "right"]
        passwd.standardOutput = FileHandle.nullDevice
        passwd.standardError = FileHandle.nullDevice
        try passwd.run()
        passwd.waitUntilExit()
        try XCTSkipIf(passwd.terminationStatus != 0, "mosquitto_passwd failed")
        let broker = try MosquittoBroker(persistence: false, extra: "allow_anonymous false\npassword_file \(dir)/passwd\n")
        let node = try startedNode()
        defer { node.stop() }
        var c = try config(node, broker: broker, serial: "10000000aa0000d3", outputs: ["barometer", "device_health"])
        c.mqtt?.options.username = "pi"
        c.mqtt?.options.password = "wrong"
        let loop = try EventLoop()
        let agent = try AgentRuntime(config: c, loop: loop)
        try agent.start()
        XCTAssertTrue(try loop.run(for: 10) { agent.registered })
        _ = try loop.run(for: 2) { false }
        guard case .waiting(let reason, _)? = agent.mqtt?.state else {
            return XCTFail("connected with a wrong password: \(String(describing: agent.mqtt?.state))")
        }
        XCTAssertTrue(reason.contains("the broker refused the connection"), reason)
        XCTAssertTrue(reason.contains("check the user name and password"), reason)
        XCTAssertTrue(agent.stateTokens.contains("broker=unreachable"), agent.stateTokens)
        let baro = try XCTUnwrap(agent.rows.first { $0.outputName == "barometer" }?.counters)
        XCTAssertGreaterThan(baro.produced, 0)
        XCTAssertEqual(baro.sent, 0)
        XCTAssertEqual(baro.dropped, 0, "nothing dropped: \(baro)")
        agent.stopNow()
        let lines = try Check.run(server: c.server, identity: c.identity, outputs: nil, mqtt: c.mqtt)
        let fails = lines.filter { !$0.ok }.map(\.text)
        XCTAssertEqual(fails.count, 1, "\(lines)")
        XCTAssertTrue(fails.first?.contains("check the user name and password") == true, "\(fails)")
    }

    /// `tls = "pin"` for an mqtts:// broker: the broker whose key hashes to the pin streams; a
    /// broker with another key is refused inside the handshake — it never sees CONNECT, so never
    /// the credentials — and the refusal names the key it did present.
    func testAPinnedBrokerIsTrustedByItsKeyAlone() throws {
        let dir = scratchPath("osh-mqtt-pin")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let good = try selfSignedCertificate(in: dir + "/broker", subject: "/CN=osh-edge-test-broker")
        let other = try selfSignedCertificate(in: dir + "/other", subject: "/CN=osh-edge-test-broker")
        let goodPin = try spkiPin(good.certPath)
        let otherPin = try spkiPin(other.certPath)
        let broker = try MosquittoBroker(persistence: false, tls: (good.certPath, dir + "/broker/key.pem"))
        let node = try startedNode()
        defer { node.stop() }
        func run(pin: String, serial: String) throws -> (AgentRuntime, MQTTClient.State) {
            try streamOverTLS(
                node: node, brokerURL: broker.tlsURL, serial: serial, stateDirectory: dir + "/state",
                tls: .pinnedKey(sha256Base64: pin), credentials: .basic(username: "pi", password: "secret"))
        }
        let (pinned, s1) = try run(pin: goodPin, serial: "10000000aa0000e1")
        XCTAssertEqual(s1, .connected)
        XCTAssertGreaterThan(pinned.rows.first?.counters.sent ?? 0, 5, "barometer acknowledged through the pinned link")
        // Two pins, the broker's second (a key being replaced): accepted.
        let (_, s2) = try run(pin: "sha256//\(otherPin);\(goodPin)", serial: "10000000aa0000e2")
        XCTAssertEqual(s2, .connected)
        let (refused, s3) = try run(pin: otherPin, serial: "10000000aa0000e3")
        guard case .waiting(let reason, _) = s3 else { return XCTFail("connected to a broker with another key: \(s3)") }
        XCTAssertTrue(reason.contains("the broker's key sha256//\(goodPin) is not the pinned one"), reason)
        XCTAssertEqual(refused.rows.first?.counters.sent, 0)
        usleep(200_000)
        XCTAssertTrue(broker.log.contains(refused.config.identity.uid) == false, "the refused board's CONNECT reached the broker")
        XCTAssertTrue(broker.log.contains(pinned.config.identity.uid), "the broker logs the CONNECTs it gets")
    }

    private func spkiPin(_ certPath: String) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = [
            "-c",
            "openssl x509 -in '\(certPath)' -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64",
        ]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
