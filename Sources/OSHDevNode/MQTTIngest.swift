// The development node's MQTT side, through a broker: it subscribes to the observation topics
// OSH's MQTT service answers (`/api/datastreams/+/observations`, and the Part 3 draft's
// `api/datastreams/+/observations:data/+`) and stores each PUBLISH's payload as the POST of the
// same body would be stored — same parser, same refusals, same store and ledger. OSH embeds its
// broker and answers a bad payload with a PUBACK reason code; through a broker such as mosquitto
// the publisher's PUBACK comes from the broker, so refusals here are counted and logged, not
// returned to the board (the agent's mapping of reason codes is tested on its own).
import CMosquitto
import OSHCore

#if canImport(Glibc)
import Glibc
#endif

public final class DevNodeMQTTIngest: @unchecked Sendable {
    public struct Counters: Sendable, Equatable {
        /// PUBLISHes received on an observation topic.
        public var messages = 0
        /// Observations stored from them.
        public var stored = 0
        /// PUBLISHes the node refused (bad payload, unknown datastream), with the last reason.
        public var refused = 0
        public var lastRefusal: String?
    }

    private let node: DevNode
    private let host: String
    private let port: Int
    private let topics: [MQTTTopics]
    /// One session per node process and port: a restarted broker (with persistence) still has it.
    private let clientID: String
    private var mosq: OpaquePointer?
    private let lock = Lock()
    private var counts = Counters()

    public var counters: Counters { lock.withLock { counts } }

    /// `topics`: the schemes to listen for (both by default).
    public init(
        node: DevNode, host: String = "127.0.0.1", port: Int,
        topics: [MQTTTopics] = [MQTTTopics(scheme: .osh), MQTTTopics(scheme: .part3)]
    ) {
        self.node = node
        self.host = host
        self.port = port
        self.topics = topics
        clientID = "osh-edge-dev-node-\(getpid())-\(port)"
    }

    deinit { stop() }

    /// Connects (blocking: a test harness on loopback), subscribes at QoS 1 and runs libmosquitto's
    /// own network thread.
    public func start() throws {
        guard mosquitto_lib_init() == MOSQ_ERR_SUCCESS.rawValue,
            let m = mosquitto_new(clientID, false, nil)
        else { throw DevNodeError.mqtt("cannot make an MQTT client") }
        mosq = m
        mosquitto_int_option(m, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5)
        mosquitto_user_data_set(m, Unmanaged.passUnretained(self).toOpaque())
        mosquitto_message_v5_callback_set(m) { _, obj, msg, _ in
            guard let obj, let msg else { return }
            let me = Unmanaged<DevNodeMQTTIngest>.fromOpaque(obj).takeUnretainedValue()
            let topic = String(cString: msg.pointee.topic)
            let payload =
                msg.pointee.payloadlen > 0 && msg.pointee.payload != nil
                ? Array(UnsafeRawBufferPointer(start: msg.pointee.payload, count: Int(msg.pointee.payloadlen))) : []
            me.received(topic: topic, payload: payload)
        }
        mosquitto_connect_v5_callback_set(m) { mosq, obj, rc, _, _ in
            guard rc == 0, let obj, let mosq else { return }
            // Subscribed at every (re)connect; the session is kept besides (clean start off, an
            // expiry), so the broker queues what arrives while this side reconnects.
            let me = Unmanaged<DevNodeMQTTIngest>.fromOpaque(obj).takeUnretainedValue()
            for f in me.filters { mosquitto_subscribe_v5(mosq, nil, f, 1, 0, nil) }
        }
        var props: OpaquePointer? = nil
        mosquitto_property_add_int32(&props, Int32(MQTT_PROP_SESSION_EXPIRY_INTERVAL.rawValue), 3600)
        let rc = mosquitto_connect_bind_v5(m, host, Int32(port), 30, nil, props)
        mosquitto_property_free_all(&props)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else {
            throw DevNodeError.mqtt("MQTT broker \(host):\(port): \(String(cString: mosquitto_strerror(rc)))")
        }
        mosquitto_reconnect_delay_set(m, 1, 2, false)
        guard mosquitto_loop_start(m) == MOSQ_ERR_SUCCESS.rawValue else {
            throw DevNodeError.mqtt("cannot start the MQTT network thread")
        }
    }

    public func stop() {
        guard let m = mosq else { return }
        mosq = nil
        mosquitto_disconnect(m)
        mosquitto_loop_stop(m, true)
        mosquitto_destroy(m)
    }

    /// The subscriptions: one per scheme.
    var filters: [String] {
        topics.map { t in
            t.scheme == .osh ? "\(t.root)/datastreams/+/observations" : "\(t.root)/datastreams/+/observations:data/+"
        }
    }

    /// The datastream id and the payload's media type (nil: by the datastream's encoding, as
    /// OSH's AUTO) of an observation topic; nil when the topic is not one.
    func parse(_ topic: String) -> (id: String, mediaType: String?)? {
        for t in topics {
            let prefix = t.root + "/datastreams/"
            guard topic.hasPrefix(prefix) else { continue }
            let rest = topic.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false)
            switch t.scheme {
            case .osh:
                if rest.count == 2, rest[1] == "observations", !rest[0].isEmpty { return (String(rest[0]), nil) }
            case .part3:
                guard rest.count == 3, rest[1] == "observations:data", !rest[0].isEmpty else { continue }
                switch rest[2] {
                case "om-json", "json": return (String(rest[0]), MediaType.omJSON)
                case "swe-json": return (String(rest[0]), MediaType.sweJSON)
                case "swe-binary": return (String(rest[0]), MediaType.sweBinary)
                default: continue
                }
            }
        }
        return nil
    }

    private func received(topic: String, payload: [UInt8]) {
        guard let (id, mediaType) = parse(topic) else { return }
        let (status, stored, message) = node.ingest(datastreamID: id, mediaType: mediaType, body: payload, via: topic)
        lock.withLock {
            counts.messages += 1
            counts.stored += stored
            if !(200..<300).contains(status) {
                counts.refused += 1
                counts.lastRefusal = "\(topic): \(status) \(message)"
            }
        }
    }
}

extension DevNode {
    /// One MQTT PUBLISH on an observation topic, stored as the POST of its payload would be (the
    /// broker authenticated the publisher). Returns the status the POST would have had, how many
    /// observations were stored and the node's message.
    func ingest(datastreamID: String, mediaType: String?, body: [UInt8], via topic: String) -> (Int, Int, String) {
        lock.withLock {
            let ct =
                mediaType
                ?? (store.datastreamIndex(datastreamID).map { store.datastreams[$0].binaryOnly } == true
                    ? MediaType.sweBinary : MediaType.omJSON)
            let api = config.apiPath.hasSuffix("/") ? String(config.apiPath.dropLast()) : config.apiPath
            let req = HTTPRequest(
                method: "POST", uri: api + "/datastreams/" + datastreamID + "/observations", contentType: ct,
                accept: MediaType.json, authorization: nil, body: body)
            let index = store.datastreamIndex(datastreamID)
            let before = index.map { store.datastreams[$0].observationCount } ?? 0
            let (response, _) = handleLocked(req, root: Self.apiRoot(config: config, port: store.port))
            let after = index.map { store.datastreams[$0].observationCount } ?? 0
            store.logRequest(
                DevNodeRequestRecord(
                    method: "PUBLISH", path: topic, route: "MQTT PUBLISH …/observations", contentType: ct,
                    status: response.status, time: wallClock()),
                cap: config.maxLoggedRequests)
            return (response.status, after - before, NodeError.parse(response.body).message ?? "")
        }
    }
}
