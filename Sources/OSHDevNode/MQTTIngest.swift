// The development node's MQTT side, through a broker: it subscribes to the observation topics
// OSH's MQTT service answers (`/api/datastreams/+/observations`, and the Part 3 draft's
// `api/datastreams/+/observations:data/+`) and stores each PUBLISH's payload as the POST of the
// same body would be stored — same parser, same refusals, same store and ledger. OSH embeds its
// broker and answers a bad payload with a PUBACK reason code; through a broker such as mosquitto
// the publisher's PUBACK comes from the broker, so refusals here are counted and logged, not
// returned to the board (the agent's mapping of reason codes is tested on its own).
// Commands: a command POSTed for a control stream with no WebSocket receiver is published on its
// commands topic (both schemes) with 8 bytes of correlation data, and a status published on the
// stream's status topic is stored as a status POST is; one that echoes the correlation answers
// the command's POST, as OSH's service does for an MQTT 5 receiver. Through a broker the node
// cannot see who subscribed: a command nobody answers within the window gets 202.
import CMQTTShim
import CMosquitto
import OSHCore
import OSHPlatform

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
    private var nextCorrelation: UInt64 = 1
    /// Correlated statuses waited for by command POSTs: correlation → the status body, once here.
    private var awaited: [UInt64: [UInt8]?] = [:]

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
        mosquitto_connect_v5_callback_set(m) { mosq, obj, rc, _, _ in
            guard rc == 0, let obj, let mosq else { return }
            // Subscribed at every (re)connect; the session is kept besides (clean start off, an
            // expiry), so the broker queues what arrives while this side reconnects.
            let me = Unmanaged<DevNodeMQTTIngest>.fromOpaque(obj).takeUnretainedValue()
            for f in me.filters { mosquitto_subscribe_v5(mosq, nil, f, 1, 0, nil) }
        }
        var props: OpaquePointer? = nil
        mosquitto_property_add_int32(&props, Int32(MQTT_PROP_SESSION_EXPIRY_INTERVAL.rawValue), 3600)
        mosquitto_message_v5_callback_set(m) { _, obj, msg, props in
            guard let obj, let msg else { return }
            let me = Unmanaged<DevNodeMQTTIngest>.fromOpaque(obj).takeUnretainedValue()
            let topic = String(cString: msg.pointee.topic)
            let payload =
                msg.pointee.payloadlen > 0 && msg.pointee.payload != nil
                ? Array(UnsafeRawBufferPointer(start: msg.pointee.payload, count: Int(msg.pointee.payloadlen))) : []
            var c = [UInt8](repeating: 0, count: 16)
            let n = osh_mqtt_correlation(props, &c, c.count)
            me.received(topic: topic, payload: payload, correlation: Array(c.prefix(n)))
        }
        let rc = mosquitto_connect_bind_v5(m, host, Int32(port), 30, nil, props)
        mosquitto_property_free_all(&props)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else {
            throw DevNodeError.mqtt("MQTT broker \(host):\(port): \(String(cString: mosquitto_strerror(rc)))")
        }
        mosquitto_reconnect_delay_set(m, 1, 2, false)
        guard mosquitto_loop_start(m) == MOSQ_ERR_SUCCESS.rawValue else {
            throw DevNodeError.mqtt("cannot start the MQTT network thread")
        }
        node.mqttSide = self
    }

    public func stop() {
        guard let m = mosq else { return }
        if node.mqttSide === self { node.mqttSide = nil }
        mosq = nil
        mosquitto_disconnect(m)
        mosquitto_loop_stop(m, true)
        mosquitto_destroy(m)
    }

    /// The subscriptions: observations and command statuses, per scheme.
    var filters: [String] {
        topics.flatMap { t in
            t.scheme == .osh
                ? ["\(t.root)/datastreams/+/observations", t.status(controlStreamID: "+")]
                : ["\(t.root)/datastreams/+/observations:data/+", t.status(controlStreamID: "+")]
        }
    }

    /// Publishes a command on its control stream's commands topic (every scheme) with fresh
    /// correlation data, then waits up to `seconds` for the status that echoes it.
    func deliver(command: [UInt8], controlStreamID: String, waiting seconds: Double) -> [UInt8]? {
        guard let m = mosq else { return nil }
        let id: UInt64 = lock.withLock {
            defer { nextCorrelation += 1 }
            awaited[nextCorrelation] = .some(nil)
            return nextCorrelation
        }
        var correlation = [UInt8](repeating: 0, count: 8)
        for k in 0..<8 { correlation[k] = UInt8(truncatingIfNeeded: id >> (56 - 8 * UInt64(k))) }
        for t in topics {
            command.withUnsafeBytes { b in
                correlation.withUnsafeBytes { c in
                    _ = osh_mqtt_publish(
                        m, nil, t.commands(controlStreamID: controlStreamID), b.baseAddress, Int32(b.count), 1,
                        MediaType.json, c.baseAddress, UInt16(c.count))
                }
            }
        }
        let end = Double(Clock.monotonicNanoseconds()) / 1e9 + seconds
        while Double(Clock.monotonicNanoseconds()) / 1e9 < end {
            if let body = lock.withLock({ awaited[id] ?? nil }) {
                lock.withLock { awaited[id] = nil }
                return body
            }
            usleep(10_000)
        }
        lock.withLock { awaited[id] = nil }
        return nil
    }

    /// The control stream of a status topic, nil when the topic is not one.
    func statusStream(_ topic: String) -> String? {
        for t in topics {
            // What stands either side of the stream id, as MQTTTopics builds the topic.
            let parts = t.status(controlStreamID: "\u{0}").split(separator: "\u{0}", omittingEmptySubsequences: false)
            guard parts.count == 2 else { continue }
            let (prefix, suffix) = (parts[0], parts[1])
            guard topic.hasPrefix(prefix), topic.hasSuffix(suffix) else { continue }
            let cs = topic.dropFirst(prefix.count).dropLast(suffix.count)
            if !cs.isEmpty, !cs.contains("/") { return String(cs) }
        }
        return nil
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

    private func received(topic: String, payload: [UInt8], correlation: [UInt8]) {
        if let cs = statusStream(topic) {
            let status = node.ingestStatus(controlStreamID: cs, body: payload, via: topic)
            guard correlation.count == 8 || correlation.count == 4 else { return }
            let id = correlation.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            lock.withLock { if awaited[id] != nil, (200..<300).contains(status) { awaited[id] = .some(payload) } }
            return
        }
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
    /// A status PUBLISHed on a control stream's status topic, stored as its POST would be; the status.
    func ingestStatus(controlStreamID: String, body: [UInt8], via topic: String) -> Int {
        lock.withLock {
            postPublished(
                "/controlstreams/" + controlStreamID + "/status", contentType: MediaType.json, body: body, topic: topic,
                route: "MQTT PUBLISH …/status"
            ).status
        }
    }

    /// One MQTT PUBLISH on an observation topic, stored as the POST of its payload would be (the
    /// broker authenticated the publisher). Returns the status the POST would have had, how many
    /// observations were stored and the node's message.
    func ingest(datastreamID: String, mediaType: String?, body: [UInt8], via topic: String) -> (Int, Int, String) {
        lock.withLock {
            let index = store.datastreamIndex(datastreamID)
            let ct = mediaType ?? (index.map { store.datastreams[$0].binaryOnly } == true ? MediaType.sweBinary : MediaType.omJSON)
            let before = index.map { store.datastreams[$0].observationCount } ?? 0
            let response = postPublished(
                "/datastreams/" + datastreamID + "/observations", contentType: ct, body: body, topic: topic,
                route: "MQTT PUBLISH …/observations")
            let after = index.map { store.datastreams[$0].observationCount } ?? 0
            return (response.status, after - before, NodeError.parse(response.body).message ?? "")
        }
    }

    /// A PUBLISH's payload as the POST of it to `path` (under the API root), logged as the PUBLISH
    /// it was. The node's lock must be held.
    private func postPublished(_ path: String, contentType: String, body: [UInt8], topic: String, route: String) -> HTTPResponse {
        let req = HTTPRequest(
            method: "POST", uri: config.apiPrefix + path, contentType: contentType, accept: MediaType.json, authorization: nil,
            body: body)
        let (response, _) = handleLocked(req, root: Self.apiRoot(config: config, port: store.port))
        store.logRequest(
            DevNodeRequestRecord(
                method: "PUBLISH", path: topic, route: route, contentType: contentType, status: response.status, time: wallClock()),
            cap: config.maxLoggedRequests)
        return response
    }
}
