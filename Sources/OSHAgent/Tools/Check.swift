import OSHCore
import OSHPlatform

/// `osh-edge check`: can this board reach its node, are the credentials accepted, is
/// its registration there — each answered in plain words.
public enum Check {
    public struct Line: Sendable, Equatable {
        public var ok: Bool
        public var text: String
    }

    /// `outputs`: the datastreams the board's configuration publishes, each checked; nil (no
    /// configuration read) lists what the node holds for the board without judging it.
    /// `mqtt`: with `transport = "mqtt"`, the broker is checked after the node: does it take this
    /// board's CONNECT (its credentials), and what does it answer to a PUBLISH with an empty
    /// payload on the first datastream's observation topic (the node's service refuses such a
    /// payload and stores nothing; a plain broker passes it to its subscribers, which refuse it).
    public static func run(
        server: NodeEndpoint, identity: SystemIdentity, outputs: [OutputSpec]?, mqtt: MQTTTransportConfig? = nil,
        timeout: Double = 20
    ) throws -> [Line] {
        let loop = try EventLoop()
        let http = try HTTPClient(loop: loop, server: server)
        let builder = CSRequestBuilder(credentials: server.credentials)
        var lines: [Line] = []
        var pending = 0
        // The first of the board's datastreams on the node: the topic the broker check publishes to.
        var firstDatastream: String?

        func exchange(_ r: CSRequest, _ k: @escaping (HTTPResult) -> Void) {
            pending += 1
            http.send(r) { res in
                pending -= 1; k(res)
            }
        }

        exchange(builder.landingPage()) { res in
            if let e = res.error {
                lines.append(Line(ok: false, text: explain(e, server: server)))
                if e.kind == .tls {
                    pending += 1
                    http.probePublicKey { r in
                        pending -= 1
                        if case .success(let key) = r {
                            // The probe gives `sha256//<base64>`: pin_sha256 and --pin-sha256 take either form.
                            let bare = key.hasPrefix("sha256//") ? String(key.dropFirst(8)) : key
                            lines.append(
                                Line(
                                    ok: false,
                                    text: "the server's public key hash is sha256//\(bare) ; if this is your node, "
                                        + "pin it (--pin-sha256 \(bare), or pin_sha256 = \"\(bare)\" in [server.NAME]) or trust its certificate"
                                ))
                        }
                    }
                }
                return
            }
            switch res.status {
            case 200..<300:
                lines.append(Line(ok: true, text: "the node answers at \(server.apiRoot)"))
            case 401:
                lines.append(
                    Line(
                        ok: false,
                        text: server.credentials == .none
                            ? "the node wants credentials (HTTP 401): set a user name and password"
                            : "the node refused the credentials (HTTP 401): check the user name and password"))
                return
            case 404:
                lines.append(
                    Line(
                        ok: false,
                        text: "nothing answers at \(server.apiRoot) (HTTP 404): the API root is usually http://HOST:8181/sensorhub/api"))
                return
            default:
                lines.append(
                    Line(ok: false, text: "the node answered HTTP \(res.status) at its API root: \(NodeError.parse(res.body).summary)"))
                return
            }
            exchange(builder.findSystem(uid: identity.uid)) { res in
                guard res.status == 200, let sys = Registrar.firstID(res.body) else {
                    lines.append(
                        Line(
                            ok: false,
                            text: res.status == 200
                                ? "this board (\(identity.uid)) is not registered there yet: osh-edge registers it when it starts"
                                : "looking up \(identity.uid) failed: HTTP \(res.status) \(NodeError.parse(res.body).summary)"))
                    return
                }
                lines.append(Line(ok: true, text: "this board is registered as system \(sys) (\(identity.uid))"))
                exchange(builder.listDatastreams(systemID: sys, limit: 1000)) { res in
                    guard res.status == 200 else {
                        lines.append(
                            Line(
                                ok: false,
                                text: "listing the datastreams of system \(sys) failed: HTTP \(res.status) "
                                    + NodeError.parse(res.body).summary))
                        return
                    }
                    let items = Registrar.items(res.body)
                    firstDatastream = items.compactMap { $0["id"]?.string }.first
                    lines.append(
                        datastreamLine(
                            onNode: items.compactMap { $0["outputName"]?.string }, configured: outputs?.map(\.outputName)))
                }
            }
        }
        let end = EventLoop.deadline(after: timeout)
        while pending > 0, Clock.monotonicNanoseconds() < end { try loop.runOnce(timeoutMs: 50) }
        if pending > 0 { lines.append(Line(ok: false, text: "no answer within \(Int(timeout)) s")) }
        if let mqtt { lines += try broker(mqtt, datastreamID: firstDatastream, loop: loop, until: end) }
        return lines
    }

    /// The broker's side: CONNECT, then one PUBLISH with an empty payload when a datastream is known.
    static func broker(_ m: MQTTTransportConfig, datastreamID: String?, loop: EventLoop, until end: UInt64) throws -> [Line] {
        var o = m.options
        o.backoff = Backoff(initial: 60, maximum: 60)  // one attempt
        let client = try MQTTClient(loop: loop, options: o)
        defer { client.stop() }
        client.start()
        let name = "the \(o.brokerName)"
        func settled() -> Bool {
            if case .waiting = client.state { return true }
            return client.state == .connected
        }
        while !settled(), Clock.monotonicNanoseconds() < end { try loop.runOnce(timeoutMs: 50) }
        switch client.state {
        case .connected: break
        case .waiting(let reason, _): return [Line(ok: false, text: "\(name): \(reason)")]
        default: return [Line(ok: false, text: "\(name): no CONNACK in time")]
        }
        var lines = [Line(ok: true, text: "\(name) takes this board's connection (client id \(o.clientID))")]
        guard let id = datastreamID else { return lines }
        let topic = m.topics.observations(datastreamID: id, mediaType: MediaType.omJSON)
        var result: MQTTPublishResult?
        client.publish(topic: topic, payload: UnsafeRawBufferPointer(start: nil, count: 0)) { result = $0 }
        while result == nil, Clock.monotonicNanoseconds() < end { try loop.runOnce(timeoutMs: 50) }
        switch result {
        case .acknowledged(let rc)? where rc < 0x80:
            lines.append(
                Line(
                    ok: true,
                    text: "\(name) takes observations on \(topic) (PUBACK \(rc); it does not read payloads: whatever stores "
                        + "them for the node must subscribe to that topic)"))
        case .acknowledged(0x99)?:
            lines.append(Line(ok: true, text: "\(name) takes the topic \(topic) and refused the empty test payload, as OSH's service does"))
        case .acknowledged(0x87)?:
            lines.append(Line(ok: false, text: "\(name) does not let this user publish on \(topic) (PUBACK 0x87): the broker's ACL"))
        case .acknowledged(0x90)?:
            lines.append(
                Line(ok: false, text: "\(name) does not know the topic \(topic) (PUBACK 0x90): check mqtt_topics and mqtt_topic_root"))
        case .acknowledged(let rc)?:
            lines.append(Line(ok: false, text: "\(name) answered PUBACK reason code \(rc) on \(topic)"))
        case .failed(let why)?:
            lines.append(Line(ok: false, text: "\(name): \(why)"))
        case nil:
            lines.append(Line(ok: false, text: "\(name): no PUBACK for \(topic) in time"))
        }
        return lines
    }

    /// The board's datastreams on the node against the configured outputs (nil: no configuration,
    /// so only what the node holds is said).
    static func datastreamLine(onNode: [String], configured: [String]?) -> Line {
        let held = Set(onNode)
        let heldText = "the node holds \(held.count) datastream\(held.count == 1 ? "" : "s") for this board"
        guard let configured else {
            return Line(ok: true, text: heldText + (held.isEmpty ? "" : ": " + onNode.joined(separator: ", ")))
        }
        let missing = configured.filter { !held.contains($0) }
        let others = onNode.filter { !configured.contains($0) }
        var text =
            missing.isEmpty
            ? "all \(configured.count) configured datastreams are there"
            : "\(configured.count - missing.count) of the \(configured.count) configured datastreams are there; missing: "
                + missing.joined(separator: ", ") + " (osh-edge creates them when it registers)"
        text += " (\(heldText)"
        text += others.isEmpty ? ")" : "; not in this configuration: \(others.joined(separator: ", ")))"
        return Line(ok: missing.isEmpty, text: text)
    }

    /// The datastreams a configuration publishes, named as `run` names them for the configured
    /// chips (a chip left on "auto" takes the demo's names; `run` may find another).
    public static func configuredOutputs(_ loaded: Daemon.Loaded) -> [OutputSpec] {
        let names = Set(loaded.config.outputs ?? [])
        return OutputCatalogue.all(loaded.config.options).filter { names.contains($0.outputName) }
    }

    /// The clock as `run` judges it. A running service's own view comes first (it may be using GPS
    /// time); otherwise the kernel's. Unsynchronised with `[time] require_sync`, nothing is sent.
    public static func clockLine(_ settings: AgentSettings, service: ServiceStatus?, now: Double) -> Line {
        let fix = ClockGate.fix
        guard settings.requireClockSync else {
            return Line(ok: true, text: "the clock is trusted as it is ([time] require_sync = false)")
        }
        if let service, service.isLive(now: now), let clock = service.header["clock"] {
            guard clock == "held" else {
                return Line(ok: true, text: "the service's clock is trusted: observations carry wall-clock times")
            }
            return Line(
                ok: false,
                text: "holding: clock not synchronised for \(service.header["held_seconds"] ?? "?") s: "
                    + "the service keeps its observations (in RAM, then the spool) and sends them once it is (\(fix))")
        }
        switch ClockSync.current(notBefore: settings.notBefore) {
        case .synchronized(let source):
            return Line(ok: true, text: "the clock is synchronised (\(source))")
        case .unsynchronized(let why):
            return Line(ok: false, text: "holding: \(why): the agent would send nothing until the clock is trusted (\(fix))")
        }
    }

    static func explain(_ e: TransportError, server: NodeEndpoint) -> String {
        switch e.kind {
        case .dns: return "the node's host name does not resolve (\(e.message)): check the URL \(server.apiRoot) and the board's DNS"
        case .connect:
            return
                "nothing accepts connections at \(server.apiRoot) (\(e.message)): is the node running, is the port right, is a firewall in the way?"
        case .timeout: return "the node did not answer in time (\(e.message)): check the network path to \(server.apiRoot)"
        case .tls: return "the TLS handshake failed: \(e)"
        default: return "the request failed: \(e)"
        }
    }
}
