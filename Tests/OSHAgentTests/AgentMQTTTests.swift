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

/// `transport = "mqtt"` end to end with real parts: the agent registers over HTTP with the
/// development node, publishes its observations to Debian's mosquitto at QoS 1, and the node's MQTT
/// side stores them from the broker as it stores POSTs.
final class AgentMQTTTests: XCTestCase {
    override class func setUp() {
        super.setUp()
        DemoSimulation.install()
    }

    private var node: DevNode!
    private var broker: MosquittoBroker!
    private var ingest: DevNodeMQTTIngest!
    private var stateDir = ""

    override func setUpWithError() throws {
        Log.muted = true
        broker = try MosquittoBroker()
        node = try startedNode()
        ingest = DevNodeMQTTIngest(node: node, port: broker.port)
        try ingest.start()
        stateDir = scratchPath("osh-mqtt")
    }

    override func tearDown() {
        ingest?.stop()
        node?.stop()
        broker = nil
        try? FileManager.default.removeItem(atPath: stateDir)
    }

    private func config(
        serial: String, outputs: [String]?, scheme: MQTTTopicScheme = .osh, format: ScalarFormat = .omJSON
    ) throws -> AgentConfig {
        var c = agentConfig(node, serial: serial, label: "MQTT Pi", stateDirectory: stateDir)
        c.outputs = outputs
        c.trustHostClock = true
        c.publisher.format = format
        c.publisher.backoffInitial = 0.2
        c.publisher.backoffMax = 0.4
        var m = MQTTTransportConfig(
            broker: try XCTUnwrap(MQTTBroker(url: broker.url)), topics: MQTTTopics(scheme: scheme),
            clientID: c.identity.uid, credentials: .none)
        m.options.backoff = Backoff(initial: 0.2, maximum: 0.5)
        c.mqtt = m
        return c
    }

    private func stored(_ name: String) -> Int {
        node.stats.datastreams.filter { $0.outputName == name }.reduce(0) { $0 + $1.observationCount }
    }

    /// Every scalar output and the camera through mosquitto, on OSH's topics (O&M JSON) …
    func testEveryOutputReachesTheNodeThroughTheBrokerOnOSHTopics() throws {
        try streamEverything(scheme: .osh, format: .omJSON, serial: "10000000aa000001")
    }

    /// … and on the Part 3 draft's (`:data/swe-json`); nothing over HTTP but registration.
    func testEveryOutputReachesTheNodeThroughTheBrokerOnPart3Topics() throws {
        try streamEverything(scheme: .part3, format: .sweJSON, serial: "10000000aa000002")
    }

    private func streamEverything(scheme: MQTTTopicScheme, format: ScalarFormat, serial: String) throws {
        var c = try config(serial: serial, outputs: nil, scheme: scheme, format: format)
        c.video = true
        let loop = try EventLoop()
        let agent = try AgentRuntime(config: c, loop: loop)
        try agent.start()
        XCTAssertTrue(try loop.run(for: 10) { agent.registered && agent.mqtt?.state == .connected })
        let frame: [UInt8] = [0, 0, 0, 1, 0x67, 1, 2, 3, 0, 0, 0, 1, 0x68, 4, 0, 0, 0, 1, 0x65] + Array(repeating: 0xCD, count: 3000)
        let until = EventLoop.deadline(after: 3)
        var nextFrame: UInt64 = 0
        while Clock.monotonicNanoseconds() < until {
            // 10 frames a second, as a camera would send them live.
            if agent.videoPublisher?.inFlight == false, Clock.monotonicNanoseconds() >= nextFrame {
                nextFrame = Clock.monotonicNanoseconds() + 100_000_000
                frame.withUnsafeBytes { agent.offerVideo(monotonicTime: Double(Clock.monotonicNanoseconds()) / 1e9, accessUnit: $0) }
            }
            _ = try loop.runOnce(timeoutMs: 20)
        }
        try agent.stop(flushUntil: EventLoop.deadline(after: 3))
        // The node's side stores on the broker client's thread: let it catch up.
        let rows = agent.rows
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, rows.contains(where: { stored($0.outputName) < $0.counters.sent }) { usleep(50_000) }
        for r in rows {
            XCTAssertGreaterThan(r.counters.sent, 0, r.outputName)
            XCTAssertEqual(stored(r.outputName), r.counters.sent, "\(r.outputName): stored = sent")
            XCTAssertEqual(r.counters.produced, r.counters.sent + r.counters.dropped, r.outputName)
        }
        let v = try XCTUnwrap(agent.videoPublisher?.counters)
        XCTAssertGreaterThan(v.sent, 2, "camera")
        // A frame whose acknowledgement the stop did not wait for may be stored all the same
        // (QoS 1 is at least once): the publisher counts it as of unknown outcome, or in flight.
        let mayHave = v.failedUnknown + (agent.videoPublisher?.inFlight == true ? 1 : 0)
        XCTAssertTrue(
            (v.sent...(v.sent + mayHave)).contains(stored("camera0_H264")),
            "camera: stored \(stored("camera0_H264")), sent \(v.sent), of unknown outcome or in flight \(mayHave)")
        XCTAssertEqual(ingest.counters.refused, 0, "\(String(describing: ingest.counters.lastRefusal))")
        let posts = node.requests.filter { $0.method == "POST" && $0.path.hasSuffix("/observations") }
        XCTAssertEqual(posts.count, 0, "observations went over HTTP")
        let publishes = node.requests.filter { $0.method == "PUBLISH" }
        XCTAssertGreaterThan(publishes.count, 0)
        let prefix = scheme == .osh ? "/api/datastreams/" : "api/datastreams/"
        XCTAssertTrue(publishes.allSatisfy { $0.path.hasPrefix(prefix) }, "\(publishes.prefix(3).map(\.path))")
        if scheme == .part3 {
            XCTAssertTrue(publishes.contains { $0.path.hasSuffix("/observations:data/swe-json") })
            XCTAssertTrue(publishes.contains { $0.path.hasSuffix("/observations:data/swe-binary") })
        }
    }

    /// The broker goes away for 3 s and comes back (its persistence keeps the session): what was
    /// produced meanwhile waits in the ring and arrives; nothing is lost, and a duplicate only
    /// where the broker may have taken a PUBLISH whose PUBACK was lost (counted as unknown).
    func testABrokerOutageLosesNothing() throws {
        let c = try config(serial: "10000000aa0000aa", outputs: ["barometer", "quat_orientation_data", "device_health"])
        let loop = try EventLoop()
        let agent = try AgentRuntime(config: c, loop: loop)
        try agent.start()
        XCTAssertTrue(try loop.run(for: 10) { agent.registered && agent.mqtt?.state == .connected })
        _ = try loop.run(for: 1.5) { false }
        broker.stop()
        _ = try loop.run(for: 3) { false }
        if case .waiting = agent.mqtt?.state {
        } else {
            XCTFail("the client did not notice the outage: \(String(describing: agent.mqtt?.state))")
        }
        XCTAssertNotEqual(agent.publisher.connectivity, .online)
        XCTAssertTrue(agent.stateTokens.contains("broker=unreachable"), agent.stateTokens)
        try broker.start()
        XCTAssertTrue(try loop.run(for: 10) { agent.mqtt?.state == .connected && agent.publisher.connectivity == .online })
        XCTAssertTrue(agent.stateTokens.contains("broker=connected"), agent.stateTokens)
        _ = try loop.run(for: 1.5) { false }
        try agent.stop(flushUntil: EventLoop.deadline(after: 3))
        let rows = agent.rows
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, rows.contains(where: { stored($0.outputName) < $0.counters.sent }) { usleep(50_000) }
        for r in rows {
            let n = r.counters
            XCTAssertEqual(n.dropped, 0, "\(r.outputName): \(n)")
            XCTAssertEqual(n.produced, n.sent, "\(r.outputName): \(n)")
            XCTAssertGreaterThanOrEqual(stored(r.outputName), n.sent, r.outputName)
            XCTAssertLessThanOrEqual(stored(r.outputName), n.sent + n.unknownOutcome * c.publisher.batchMax, r.outputName)
        }
    }

    /// `osh-edge check` with transport = "mqtt": the broker takes the board's CONNECT and a PUBLISH
    /// on its first datastream's topic (the node's side refuses the empty payload and stores
    /// nothing); a stopped broker is one FAIL line with the reason.
    func testCheckCoversTheBroker() throws {
        let c = try config(serial: "10000000aa0000ac", outputs: ["barometer"])
        let loop = try EventLoop()
        let agent = try AgentRuntime(config: c, loop: loop)
        try agent.start()
        XCTAssertTrue(try loop.run(for: 10) { agent.registered })
        agent.stopNow()
        let storedBefore = stored("barometer")
        let lines = try Check.run(server: c.server, identity: c.identity, outputs: nil, mqtt: c.mqtt)
        XCTAssertTrue(lines.allSatisfy(\.ok), "\(lines)")
        XCTAssertTrue(lines.contains { $0.text.contains("takes this board's connection (client id \(c.identity.uid))") }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.text.contains("takes observations on /api/datastreams/") }, "\(lines)")
        usleep(300_000)
        XCTAssertEqual(stored("barometer"), storedBefore, "the empty test payload stored nothing")
        broker.stop()
        let down = try Check.run(server: c.server, identity: c.identity, outputs: nil, mqtt: c.mqtt)
        XCTAssertEqual(down.filter { !$0.ok }.map(\.text), ["the MQTT broker 127.0.0.1:\(broker.port): cannot connect: connection refused"])
    }

    /// A broker address that accepts TCP and never answers CONNECT: the loop keeps turning (its
    /// timers stay on time) and the outputs keep being produced into the ring.
    func testABrokerThatNeverAnswersStallsNothing() throws {
        // A listening socket nobody accepts from: the kernel completes the handshake, no CONNACK comes.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        XCTAssertTrue(
            withUnsafeMutablePointer(to: &addr) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
            })
        XCTAssertEqual(listen(fd, 4), 0)
        var c = try config(serial: "10000000aa0000ab", outputs: ["barometer", "device_health"])
        c.rates = ["barometer": 20]
        c.mqtt?.options.port = Int(UInt16(bigEndian: addr.sin_port))
        let loop = try EventLoop()
        let agent = try AgentRuntime(config: c, loop: loop)
        try agent.start()
        var ticks: [UInt64] = []
        let t = try loop.addTimer(firstAt: loop.deadline(after: 0.05), interval: 50_000_000) { ticks.append($0) }
        _ = try loop.run(for: 3) { false }
        loop.cancel(t)
        XCTAssertTrue(agent.registered, "registration (HTTP) does not wait on the broker")
        XCTAssertNotEqual(agent.mqtt?.state, .connected)
        // 20 Hz for 3 s: ~60 ticks; the worst gap stays well under the connect's hold.
        XCTAssertGreaterThan(ticks.count, 50)
        let gaps = zip(ticks.dropFirst(), ticks).map { Double($0 &- $1) / 1e6 }
        XCTAssertLessThan(gaps.max() ?? 0, 250, "the loop stalled: worst gap \(gaps.max() ?? 0) ms")
        let baro = try XCTUnwrap(agent.rows.first { $0.outputName == "barometer" })
        XCTAssertGreaterThan(baro.counters.produced, 40)
        XCTAssertEqual(baro.counters.sent, 0)
        agent.stopNow()
    }
}

/// mqtts:// with the HTTP side's TLS policy: the broker's self-signed certificate trusted by file
/// (`tls = "trust-certificate"`) streams; another certificate is refused, with OpenSSL's reason.
final class MQTTTLSTests: XCTestCase {
    override class func setUp() {
        super.setUp()
        DemoSimulation.install()
    }

    func testABrokerBehindTLSIsTrustedByItsCertificateFileOnly() throws {
        Log.muted = true
        let dir = scratchPath("osh-mqtt-tls")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let good = try selfSignedCertificate(in: dir + "/broker", subject: "/CN=127.0.0.1")
        let other = try selfSignedCertificate(in: dir + "/other", subject: "/CN=127.0.0.1")
        let broker = try MosquittoBroker(persistence: false, tls: (good.certPath, dir + "/broker/key.pem"))
        let node = try startedNode()
        defer { node.stop() }
        func run(trusting pem: String) throws -> (AgentRuntime, MQTTClient.State) {
            try streamOverTLS(
                node: node, brokerURL: broker.tlsURL, serial: "10000000aa0000c\(pem == good.certPath ? 1 : 2)",
                stateDirectory: dir + "/state", tls: .trustCertificate(pemPath: pem))
        }
        let (trusted, s1) = try run(trusting: good.certPath)
        XCTAssertEqual(s1, .connected)
        XCTAssertGreaterThan(trusted.rows.first?.counters.sent ?? 0, 5, "barometer acknowledged over TLS")
        let (refused, s2) = try run(trusting: other.certPath)
        guard case .waiting(let reason, _) = s2 else { return XCTFail("connected with an untrusted certificate: \(s2)") }
        XCTAssertTrue(reason.contains("certificate verify failed"), reason)
        XCTAssertEqual(refused.rows.first?.counters.sent, 0)
    }
}

/// An agent streaming its barometer (10 Hz) to a TLS broker for up to 4 s (until 5 are
/// acknowledged): the runtime, stopped, and the link's state at the end.
func streamOverTLS(
    node: DevNode, brokerURL: String, serial: String, stateDirectory: String, tls: TLSPolicy, credentials: CSCredentials = .none
) throws -> (AgentRuntime, MQTTClient.State) {
    var c = agentConfig(node, serial: serial, label: "TLS Pi", stateDirectory: stateDirectory)
    c.outputs = ["barometer", "device_health"]
    c.rates = ["barometer": 10]
    c.trustHostClock = true
    var m = MQTTTransportConfig(
        broker: try XCTUnwrap(MQTTBroker(url: brokerURL)), topics: MQTTTopics(scheme: .osh), clientID: c.identity.uid,
        credentials: credentials, tls: tls)
    m.options.backoff = Backoff(initial: 0.2, maximum: 0.5)
    c.mqtt = m
    let loop = try EventLoop()
    let agent = try AgentRuntime(config: c, loop: loop)
    try agent.start()
    _ = try loop.run(for: 4) { agent.rows.first?.counters.sent ?? 0 > 5 }
    let state = agent.mqtt?.state ?? .idle
    agent.stopNow()
    return (agent, state)
}

/// The PUBACK reason codes as the publisher's verdicts read them.
final class MQTTOutcomeTests: XCTestCase {
    func testReasonCodesMapToTheHTTPVerdicts() {
        func verdict(_ r: MQTTPublishResult) -> DeliveryVerdict { DeliveryVerdict.classify(MQTTNodeClient.outcome(r, topic: "t")) }
        XCTAssertEqual(verdict(.acknowledged(reasonCode: 0)), .delivered)
        XCTAssertEqual(verdict(.acknowledged(reasonCode: 16)), .delivered, "no matching subscribers: the broker took it")
        XCTAssertEqual(verdict(.acknowledged(reasonCode: 0x99)), .rejected, "payload format invalid")
        XCTAssertEqual(verdict(.acknowledged(reasonCode: 0x87)), .rejected, "not authorised for this topic")
        XCTAssertEqual(verdict(.acknowledged(reasonCode: 0x90)), .datastreamLost, "topic name invalid: the datastream is gone")
        XCTAssertEqual(verdict(.acknowledged(reasonCode: 0x97)), .keep, "quota exceeded")
        XCTAssertEqual(verdict(.acknowledged(reasonCode: 0x83)), .keep, "implementation specific error")
        XCTAssertEqual(verdict(.failed("no PUBACK")), .keep)
        XCTAssertTrue(DeliveryVerdict.outcomeUnknown(MQTTNodeClient.outcome(.failed("no PUBACK"), topic: "t")))
        XCTAssertEqual(
            String(decoding: MQTTNodeClient.outcome(.acknowledged(reasonCode: 153), topic: "/api/x").body, as: UTF8.self),
            "the MQTT broker answered PUBACK reason code 153 for /api/x")
    }
}

/// `commands = "mqtt"`: the node's commands come as PUBLISHes on the control stream's commands
/// topic (the development node's MQTT side sends them through mosquitto with 8 bytes of
/// correlation data), run through the same handlers as over the WebSocket, and the status goes
/// back on the status topic with the correlation echoed, so the command's POST gets it at once.
final class MQTTCommandTests: XCTestCase {
    override class func setUp() {
        super.setUp()
        DemoSimulation.install()
    }

    func testCommandsComeThroughTheBrokerAndTheirStatusGoesBack() throws {
        Log.muted = true
        let broker = try MosquittoBroker(persistence: false)
        var nc = DevNodeConfig()
        nc.commandAckSeconds = 3
        nc.noReceiverWaitSeconds = 0.5
        let node = try startedNode(nc)
        defer { node.stop() }
        let ingest = DevNodeMQTTIngest(node: node, port: broker.port)
        try ingest.start()
        defer { ingest.stop() }
        let dir = scratchPath("osh-mqtt-commands")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var c = agentConfig(node, serial: "10000000aa0000cc", label: "MQTT command Pi", stateDirectory: dir)
        c.outputs = ["barometer", "device_health"]
        c.trustHostClock = true
        c.commands = true
        var m = MQTTTransportConfig(
            broker: try XCTUnwrap(MQTTBroker(url: broker.url)), topics: MQTTTopics(scheme: .osh), clientID: c.identity.uid,
            credentials: .none)
        m.commands = true
        c.mqtt = m
        let loop = try EventLoop()
        let agent = try AgentRuntime(config: c, loop: loop)
        try agent.start()
        XCTAssertTrue(try loop.run(for: 10) { agent.registered && agent.mqtt?.state == .connected })
        XCTAssertTrue(try loop.run(for: 5) { agent.mqtt?.subscriptions.count == 1 }, "subscribed to device_control's commands")
        XCTAssertNil(agent.commandReceiver, "no WebSocket receiver")
        let topic = try XCTUnwrap(agent.mqtt?.subscriptions.first)
        XCTAssertTrue(topic.hasPrefix("/api/controlstreams/") && topic.hasSuffix("/commands"), topic)
        let csID = String(topic.dropFirst("/api/controlstreams/".count).dropLast("/commands".count))
        _ = try loop.run(for: 0.5) { false }  // the SUBACK

        let http = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: node.apiRoot))
        let builder = CSRequestBuilder(credentials: .none)
        func post(_ parameters: String) throws -> (HTTPResult, Double) {
            var result: HTTPResult?
            let t0 = Clock.monotonicNanoseconds()
            http.send(
                builder.request(
                    .post, "/controlstreams/" + csID + "/commands", contentType: MediaType.json,
                    body: Array(("{\"parameters\":" + parameters + "}").utf8))
            ) { result = $0 }
            XCTAssertTrue(try loop.run(for: 10) { result != nil })
            return (try XCTUnwrap(result), Double(Clock.monotonicNanoseconds() - t0) / 1e9)
        }
        let (done, took) = try post(#"{"setRate":{"outputName":"barometer","rate":20}}"#)
        XCTAssertEqual(done.status, 200)
        let body = try JSONValue.parse(done.body)
        XCTAssertEqual(body["statusCode"]?.string, "COMPLETED", String(decoding: done.body, as: UTF8.self))
        XCTAssertLessThan(took, 2.5, "answered by the correlated status, not the node's window")
        XCTAssertEqual(agent.rate(try XCTUnwrap(agent.index(of: "barometer"))), 20)
        let (refused, _) = try post(#"{"setRate":{"outputName":"sonar","rate":5}}"#)
        XCTAssertEqual(try JSONValue.parse(refused.body)["statusCode"]?.string, "REJECTED")
        XCTAssertEqual(node.commands(controlStreamID: csID).count, 2)
        XCTAssertTrue(node.requests.contains { $0.method == "PUBLISH" && $0.path.hasSuffix("/status") })
        agent.stopNow()
    }
}
