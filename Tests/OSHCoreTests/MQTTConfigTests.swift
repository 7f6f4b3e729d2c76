import OSHCore
import OSHPlatform
import XCTest

/// `transport = "mqtt"`: the broker URL, the topic names of both schemes, and the configuration's
/// messages for what cannot run.
final class MQTTConfigTests: XCTestCase {
    private func parse(_ server: String) throws -> AgentSettings {
        try AgentSettings.parse(
            bytes: Array(("[server.main]\nurl = \"http://127.0.0.1:8181/sensorhub/api\"\n" + server).utf8), path: "t.conf",
            chips: ChipTable.known)
    }

    private func errors(_ server: String) -> [String] {
        do {
            _ = try parse(server)
            return []
        } catch let e as ConfigErrors {
            return e.errors.map(\.message)
        } catch {
            return ["\(error)"]
        }
    }

    func testBrokerURLs() {
        XCTAssertEqual(MQTTBroker(url: "mqtt://10.0.0.5"), MQTTBroker(host: "10.0.0.5", port: 1883, tls: false))
        XCTAssertEqual(MQTTBroker(url: "mqtts://broker.example.org"), MQTTBroker(host: "broker.example.org", port: 8883, tls: true))
        XCTAssertEqual(MQTTBroker(url: "mqtt://node:11883/"), MQTTBroker(host: "node", port: 11883, tls: false))
        XCTAssertEqual(MQTTBroker(url: "mqtt://[::1]:1884"), MQTTBroker(host: "::1", port: 1884, tls: false))
        for bad in ["http://node:1883", "mqtt://", "mqtt://node:0", "mqtt://node:70000", "mqtt://node/api", "mqtt://u@node", "node:1883"] {
            XCTAssertNil(MQTTBroker(url: bad), bad)
        }
        XCTAssertEqual(MQTTBroker(url: "mqtt://[::1]:1884")?.url, "mqtt://[::1]:1884")
    }

    /// OSH's merged service: the resource path under `/api`; the Part 3 draft: `api/…:data/FORMAT`.
    func testTopicsOfBothSchemes() {
        let osh = MQTTTopics(scheme: .osh)
        XCTAssertEqual(osh.observations(datastreamID: "038q4", mediaType: MediaType.omJSON), "/api/datastreams/038q4/observations")
        XCTAssertEqual(osh.observations(datastreamID: "038q4", mediaType: MediaType.sweBinary), "/api/datastreams/038q4/observations")
        let p3 = MQTTTopics(scheme: .part3)
        XCTAssertEqual(p3.observations(datastreamID: "a1", mediaType: MediaType.omJSON), "api/datastreams/a1/observations:data/om-json")
        XCTAssertEqual(p3.observations(datastreamID: "a1", mediaType: MediaType.sweJSON), "api/datastreams/a1/observations:data/swe-json")
        XCTAssertEqual(
            p3.observations(datastreamID: "a1", mediaType: MediaType.sweBinary), "api/datastreams/a1/observations:data/swe-binary")
        XCTAssertEqual(
            MQTTTopics(scheme: .osh, root: "/sensorhub/api/").observations(datastreamID: "x", mediaType: MediaType.omJSON),
            "/sensorhub/api/datastreams/x/observations")
    }

    func testTheServerSectionTakesAnMQTTTransport() throws {
        let s = try parse("transport = \"mqtt\"\nbroker = \"mqtt://127.0.0.1:1883\"\nmqtt_topics = \"part3\"\n").activeServer
        XCTAssertEqual(s.transport, .mqtt)
        XCTAssertEqual(s.broker, MQTTBroker(host: "127.0.0.1", port: 1883, tls: false))
        XCTAssertEqual(s.mqttTopics, MQTTTopics(scheme: .part3))
        XCTAssertEqual(try parse("").activeServer.transport, .http, "HTTP unless said")
        XCTAssertEqual(
            try parse("transport = \"mqtt\"\nbroker = \"mqtt://n\"\nmqtt_topic_root = \"/sensorhub/api\"\n").activeServer.mqttTopics.root,
            "/sensorhub/api")
    }

    func testCommandsTakeTheBrokerOnlyWithTheMQTTTransport() throws {
        XCTAssertEqual(try parse("transport = \"mqtt\"\nbroker = \"mqtt://n\"\ncommands = \"mqtt\"\n").activeServer.commands, .mqtt)
        XCTAssertEqual(try parse("").activeServer.commands, .websocket)
        XCTAssertEqual(
            errors("commands = \"mqtt\"\n"),
            ["commands = \"mqtt\" in [server.main] needs transport = \"mqtt\" and its broker; or commands = \"websocket\""])
        XCTAssertEqual(
            MQTTTopics(scheme: .osh).commands(controlStreamID: "cs1"), "/api/controlstreams/cs1/commands")
        XCTAssertEqual(MQTTTopics(scheme: .osh).status(controlStreamID: "cs1"), "/api/controlstreams/cs1/status")
        XCTAssertEqual(MQTTTopics(scheme: .part3).commands(controlStreamID: "cs1"), "api/controlstreams/cs1/commands:data")
        XCTAssertEqual(MQTTTopics(scheme: .part3).status(controlStreamID: "cs1"), "api/controlstreams/cs1/status:data")
    }

    /// tls = "pin" holds for an mqtts:// broker as for the node; a list of pins (a node and its
    /// broker with different keys, or a key being replaced) is kept as a list.
    func testAPinnedServerPinsItsBrokerToo() throws {
        let a = String(repeating: "A", count: 43) + "="
        let b = "sha256//" + String(repeating: "B", count: 43) + "="
        let s = try parse(
            "transport = \"mqtt\"\nbroker = \"mqtts://node:8883\"\ntls = \"pin\"\npin_sha256 = \"\(a) ; \(b)\"\n"
        ).activeServer
        XCTAssertEqual(s.tls, .pin(sha256Base64: a + ";" + String(b.dropFirst(8))))
        XCTAssertEqual(s.broker?.tls, true)
        XCTAssertEqual(errors("tls = \"pin\"\npin_sha256 = \"\(a);nonsense\"\n").count, 1)
    }

    func testMistakesSayWhatToWrite() {
        XCTAssertEqual(
            errors("transport = \"mqtt\"\n"),
            [
                "transport = \"mqtt\" in [server.main] needs broker = \"mqtt://HOST:1883\" (OSH's MQTT service listens on 1883 "
                    + "beside the node, or a broker of your own)"
            ])
        XCTAssertEqual(
            errors("transport = \"mqtt\"\nbroker = \"tcp://node:1883\"\n"),
            [
                "broker = \"tcp://node:1883\" in [server.main] must be \"mqtt://HOST:PORT\" or \"mqtts://HOST:PORT\" (1883 and 8883 "
                    + "when no port is given)"
            ])
        XCTAssertEqual(
            errors("broker = \"mqtt://node\"\n"),
            ["broker in [server.main] is only used with transport = \"mqtt\"; set that, or remove broker"])
        XCTAssertEqual(errors("transport = \"amqp\"\n").count, 1)
        XCTAssertTrue(errors("transport = \"amqp\"\n")[0].contains("allowed: \"http\", \"mqtt\""), errors("transport = \"amqp\"\n")[0])
        XCTAssertEqual(
            errors("transport = \"mqtt\"\nbroker = \"mqtt://n\"\nmqtt_topic_root = \"api/#\"\n"),
            ["mqtt_topic_root in [server.main] must be a topic prefix without wildcards, as \"/api\""])
    }
}
