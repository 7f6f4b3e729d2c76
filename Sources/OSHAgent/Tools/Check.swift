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
    public static func run(
        server: NodeEndpoint, identity: SystemIdentity, outputs: [OutputSpec]?,
        timeout: Double = 20
    ) throws -> [Line] {
        let loop = try EventLoop()
        let http = try HTTPClient(loop: loop, server: server)
        let builder = CSRequestBuilder(credentials: server.credentials)
        var lines: [Line] = []
        var pending = 0

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
                    lines.append(
                        datastreamLine(
                            onNode: Registrar.items(res.body).compactMap { $0["outputName"]?.string },
                            configured: outputs?.map(\.outputName)))
                }
            }
        }
        let end = EventLoop.deadline(after: timeout)
        while pending > 0, Clock.monotonicNanoseconds() < end { try loop.runOnce(timeoutMs: 50) }
        if pending > 0 { lines.append(Line(ok: false, text: "no answer within \(Int(timeout)) s")) }
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
