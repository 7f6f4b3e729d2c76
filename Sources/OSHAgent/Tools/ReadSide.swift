import OSHCore
import OSHPlatform
#if canImport(Glibc)
import Glibc
#endif

/// Why a read-side command has no answer to show, in plain words.
public enum ReadSideError: Error, CustomStringConvertible, Equatable {
    case transport(what: String, TransportError)
    case noAnswer(what: String, seconds: Int)
    case http(what: String, status: Int, node: NodeError)
    case notFound(what: String)
    case badAnswer(what: String, detail: String)
    case config(String)

    public var description: String {
        switch self {
        case .transport(let what, let e): return "\(what): \(e)"
        case .noAnswer(let what, let s): return "\(what): no answer within \(s) s"
        case .http(let what, let status, let node):
            switch status {
            case 401: return "\(what): the node wants (other) credentials (HTTP 401): check --user and OSH_EDGE_PASSWORD"
            case 403: return "\(what): this user may not read that on the node (HTTP 403)"
            default: return "\(what): the node answered HTTP \(status): \(node.summary)"
            }
        case .notFound(let what): return "\(what): not on the node (HTTP 404); list what is there with osh-edge systems / datastreams"
        case .badAnswer(let what, let detail): return "\(what): unexpected answer from the node: \(detail)"
        case .config(let m): return m
        }
    }
}

/// One synchronous conversation with a node for the CLI: each call sends one request and runs
/// a private event loop until the answer (the read side has nothing else to do meanwhile).
public final class NodeReader {
    public let server: NodeEndpoint
    public let builder: CSRequestBuilder
    let loop: EventLoop
    let http: HTTPClient

    /// The request timeout is raised to 40 s: a command POST to a stream with no receiver is held
    /// ~29.5 s by OSH before its 202.
    public init(server: NodeEndpoint) throws {
        var s = server
        if s.requestTimeout > 0, s.requestTimeout < 40 { s.requestTimeout = 40 }
        // OSH holds a command POST silent for up to 29.5 s when no receiver answers: not a stall.
        s.lowSpeed = nil
        self.server = s
        builder = CSRequestBuilder(credentials: s.credentials)
        loop = try EventLoop()
        http = try HTTPClient(loop: loop, server: s, maxResponseBody: 64 << 20, maxHostConnections: 4)
    }

    /// The answer, whatever its status; transport failures and timeouts throw.
    public func exchange(_ r: CSRequest, what: String) throws -> HTTPResult {
        var result: HTTPResult?
        http.send(r) { result = $0 }
        let seconds = server.requestTimeout > 0 ? server.requestTimeout + 5 : 3600
        let end = EventLoop.deadline(after: seconds)
        while result == nil, Clock.monotonicNanoseconds() < end { try loop.runOnce(timeoutMs: 100) }
        guard let res = result else { throw ReadSideError.noAnswer(what: what, seconds: Int(seconds)) }
        if let e = res.error { throw ReadSideError.transport(what: what, e) }
        return res
    }

    /// Several requests in flight at once (answers in request order): a node far away answers
    /// a list of systems' datastreams in a few round trips instead of one per system.
    public func exchangeAll(_ rs: [CSRequest], what: (Int) -> String) throws -> [HTTPResult] {
        var results = [HTTPResult?](repeating: nil, count: rs.count)
        var pending = rs.count
        for (i, r) in rs.enumerated() {
            http.send(r) {
                results[i] = $0; pending -= 1
            }
        }
        let seconds = server.requestTimeout > 0 ? server.requestTimeout + 5 : 3600
        let end = EventLoop.deadline(after: seconds)
        while pending > 0, Clock.monotonicNanoseconds() < end { try loop.runOnce(timeoutMs: 100) }
        return try results.enumerated().map { i, res in
            guard let res else { throw ReadSideError.noAnswer(what: what(i), seconds: Int(seconds)) }
            if let e = res.error { throw ReadSideError.transport(what: what(i), e) }
            return res
        }
    }

    /// A 2xx answer's body; 404 and other statuses throw with the node's message.
    public func body(_ r: CSRequest, what: String) throws -> HTTPResult {
        try checked(try exchange(r, what: what), what: what)
    }

    func checked(_ res: HTTPResult, what: String) throws -> HTTPResult {
        if res.status == 404 { throw ReadSideError.notFound(what: what) }
        guard (200..<300).contains(res.status) else {
            throw ReadSideError.http(what: what, status: res.status, node: NodeError.parse(res.body))
        }
        if res.bodyTruncated {
            throw ReadSideError.badAnswer(what: what, detail: "the answer is larger than 64 MiB; ask for fewer records")
        }
        return res
    }

    /// A 2xx JSON answer, parsed.
    public func json(_ r: CSRequest, what: String) throws -> JSONValue {
        let res = try body(r, what: what)
        do { return try JSONValue.parse(res.body) } catch {
            throw ReadSideError.badAnswer(what: what, detail: "\(error)")
        }
    }
}

/// `osh-edge systems | datastreams | schema --remote | observations | command`: what the node holds,
/// read from the board. Each function returns values; ReadSideRender turns them into tables or JSON.
public enum ReadSide {
    // MARK: Which node

    /// The node of the agent's configuration (`[server]` + secrets), for commands given no `--node`.
    public static func configuredServer(configPath: String, secretsPath: String?) throws -> NodeEndpoint {
        guard let bytes = try StateFiles.read(configPath) else {
            throw ReadSideError.config(
                "no --node given and no configuration at \(configPath): "
                    + "pass --node URL (the API root, e.g. http://host:8181/sensorhub/api) or --config FILE")
        }
        return try Daemon.configuredServer(AgentSettings.parseFile(bytes: bytes, path: configPath), secretsPath: secretsPath)
    }

    // MARK: Systems

    public struct SystemRow: Sendable, Equatable {
        public var system: NodeSystem
        public var datastreamCount: Int
        public var newest: ObservedTime?
        public var activity: SystemActivity
    }

    /// Top-level systems (at most `limit`), each with its datastream count and activity from the
    /// newest phenomenon time its datastreams report; live first, the node's order otherwise.
    public static func systems(
        _ r: NodeReader, limit: Int = 100, now: Double,
        thresholds: ActivityThresholds = .standard
    ) throws -> [SystemRow] {
        let list = try r.json(r.builder.listSystems(limit: Swift.max(1, Swift.min(limit, 10_000))), what: "listing systems")
        let systems = NodeCollection.items(list).compactMap(NodeSystem.init)
        let answers = try r.exchangeAll(
            systems.map { r.builder.listDatastreams(systemID: $0.id, limit: 10_000) },
            what: { "datastreams of system \(systems[$0].id)" })
        var rows: [SystemRow] = []
        for (s, res) in zip(systems, answers) {
            let what = "datastreams of system \(s.id)"
            let v: JSONValue
            do { v = try JSONValue.parse(try r.checked(res, what: what).body) } catch let e as ReadSideError { throw e } catch {
                throw ReadSideError.badAnswer(what: what, detail: "\(error)")
            }
            let ds = NodeCollection.items(v).compactMap(NodeDatastream.init)
            let newest = Activity.newest(ds.map(\.newest))
            rows.append(
                SystemRow(
                    system: s, datastreamCount: ds.count, newest: newest,
                    activity: Activity.classify(newest: newest, now: now, thresholds: thresholds)))
        }
        return stableSorted(rows) { $0.activity < $1.activity }
    }

    /// A system by local id, or by UID (anything with a `:`, e.g. `urn:osh:rpi:…`).
    public static func resolveSystem(_ r: NodeReader, _ ref: String) throws -> NodeSystem {
        if ref.contains(":") {
            let list = try r.json(r.builder.findSystem(uid: ref), what: "looking up system \(ref)")
            guard let s = NodeCollection.items(list).compactMap(NodeSystem.init).first(where: { $0.uid == ref }) else {
                throw ReadSideError.notFound(what: "system \(ref)")
            }
            return s
        }
        let v = try r.json(r.builder.getSystem(id: ref), what: "system \(ref)")
        guard let s = NodeSystem(v) else { throw ReadSideError.badAnswer(what: "system \(ref)", detail: "no id in the answer") }
        return s
    }

    // MARK: Datastreams

    public struct DatastreamRow: Sendable, Equatable {
        public var datastream: NodeDatastream
        public var activity: SystemActivity
    }

    public static func datastreams(
        _ r: NodeReader, system ref: String, now: Double,
        thresholds: ActivityThresholds = .standard
    ) throws -> (system: NodeSystem, rows: [DatastreamRow]) {
        let s = try resolveSystem(r, ref)
        let rows = try datastreamList(r, systemID: s.id).map {
            DatastreamRow(datastream: $0, activity: Activity.classify(newest: $0.newest, now: now, thresholds: thresholds))
        }
        return (s, rows)
    }

    static func datastreamList(_ r: NodeReader, systemID: String) throws -> [NodeDatastream] {
        let v = try r.json(r.builder.listDatastreams(systemID: systemID, limit: 10_000), what: "datastreams of system \(systemID)")
        return NodeCollection.items(v).compactMap(NodeDatastream.init)
    }

    /// A datastream by the node's id, or by its output name within `system` (the board's UID or
    /// id: `observations barometer --config FILE`).
    public static func resolveDatastream(_ r: NodeReader, _ ref: String, system: String?) throws -> String {
        do {
            _ = try datastream(r, id: ref)
            return ref
        } catch ReadSideError.notFound {
            guard let system else {
                throw ReadSideError.notFound(what: "datastream \(ref) (to name one by its output, give --system SYSTEM or --config FILE)")
            }
            let s = try resolveSystem(r, system)
            if let d = try datastreamList(r, systemID: s.id).first(where: { $0.outputName == ref }) { return d.id }
            throw ReadSideError.notFound(what: "datastream \(ref) (neither a datastream id nor an output of system \(s.uid))")
        }
    }

    public static func datastream(_ r: NodeReader, id: String) throws -> NodeDatastream {
        let v = try r.json(r.builder.getDatastream(id: id), what: "datastream \(id)")
        guard let d = NodeDatastream(v) else { throw ReadSideError.badAnswer(what: "datastream \(id)", detail: "no id in the answer") }
        return d
    }

    // MARK: Control streams

    /// A control stream as the node lists it, with the commands its parameter schema offers (the
    /// items of a DataChoice, or the record's name).
    public struct ControlStreamRow: Sendable, Equatable {
        public var id: String
        public var inputName: String
        public var name: String
        public var commands: [String]
    }

    /// `GET /systems/{id}/controlstreams`, then each one's schema (the commands to send).
    public static func controlStreams(_ r: NodeReader, system ref: String) throws -> (system: NodeSystem, rows: [ControlStreamRow]) {
        let s = try resolveSystem(r, ref)
        let v = try r.json(r.builder.listControlStreams(systemID: s.id), what: "control streams of system \(s.id)")
        var rows: [ControlStreamRow] = []
        for item in NodeCollection.items(v) {
            guard let id = item["id"]?.string else { continue }
            var row = ControlStreamRow(
                id: id, inputName: item["inputName"]?.string ?? item["controlInput"]?.string ?? "",
                name: item["name"]?.string ?? "", commands: [])
            if let schema = try? r.json(r.builder.controlStreamSchema(id: id), what: "schema of control stream \(id)"),
                let params = schema["parametersSchema"], let c = try? SchemaDecoder.component(params)
            {
                if case .choice(let choice) = c.kind {
                    row.commands = choice.items.compactMap(\.name)
                } else if let n = c.name {
                    row.commands = [n]
                }
            }
            rows.append(row)
        }
        return (s, rows)
    }

    // MARK: Schema

    public struct RemoteSchema: Sendable {
        public var datastream: NodeDatastream
        public var obsFormat: String
        /// The node's answer as it came (members in its order).
        public var body: JSONValue
        public var schema: DatastreamSchema
        public var leaves: [SchemaLeaf]
    }

    /// `GET /datastreams/{id}/schema?obsFormat=…` (default: O&M JSON when served, else swe+binary),
    /// decoded with the same SchemaDecoder the observations are read with.
    public static func schema(_ r: NodeReader, datastream id: String, format: String? = nil) throws -> RemoteSchema {
        let d = try datastream(r, id: id)
        let f = format ?? d.preferredFormat
        let what = "schema of datastream \(id) (\(f))"
        let v = try r.json(r.builder.datastreamSchema(id: id, obsFormat: f), what: what)
        let s: DatastreamSchema
        do { s = try SchemaDecoder.datastreamSchema(v) } catch {
            throw ReadSideError.badAnswer(what: what, detail: "\(error)")
        }
        return RemoteSchema(datastream: d, obsFormat: f, body: v, schema: s, leaves: SchemaWalker.leaves(of: s.record))
    }

    // MARK: Observations

    public struct ObservationPage: Sendable {
        public var datastream: NodeDatastream
        public var format: String
        public var leaves: [SchemaLeaf]
        /// Oldest first.
        public var records: [SWERecordValue]
        /// Set when decoding stopped early; the records before it are kept.
        public var decodeError: SWEDecodingError?
        /// The path of the observation-time leaf, when the record has one.
        public var timePath: String?
        /// How many newest records were asked for (nil: `resultTime=latest`).
        public var asked: Int?
        /// The node's answer had a `next` link (it pages).
        public var nodePages = false

        /// A record's time: O&M phenomenonTime, else its observation-time leaf.
        public func time(of rec: SWERecordValue) -> Double? {
            if let t = rec.phenomenonTime { return t }
            if let p = timePath, case .time(let t)? = rec[p] { return t }
            return nil
        }
    }

    /// The newest records (`.newest(N)`, whatever their age) or those at the latest result time,
    /// fetched in `format` (default: O&M JSON when served, else swe+binary) and decoded with one
    /// reader tree built from the datastream's schema in that same format.
    public static func observations(
        _ r: NodeReader, datastream id: String, query: ObservationQuery = .newest(10),
        format: String? = nil
    ) throws -> ObservationPage {
        let schema = try schema(r, datastream: id, format: format)
        let f = schema.obsFormat
        let what = "observations of datastream \(id) (\(f))"
        let reader: RecordReader
        do { reader = try schema.schema.reader() } catch {
            throw ReadSideError.badAnswer(what: what, detail: "its schema cannot be decoded: \(error)")
        }
        let res = try r.body(r.builder.observations(datastreamID: id, query: query, format: f), what: what)
        let decoded: DecodedRecords
        switch f {
        case MediaType.sweBinary: decoded = reader.decodeBinary(res.body)
        case MediaType.sweJSON: decoded = reader.decodeJSON(res.body, form: .record)
        case MediaType.omJSON, MediaType.json: decoded = reader.decodeJSON(res.body, form: .observation)
        default: throw ReadSideError.config("cannot decode \(f): use om+json, swe+json or swe+binary")
        }
        if let e = decoded.error, decoded.records.isEmpty, !res.body.isEmpty {
            throw ReadSideError.badAnswer(what: what, detail: "\(e)")
        }
        var records = decoded.records
        if case .newest = query { records.reverse() }  // asked newest first; shown oldest → newest, like tail
        let timePath = schema.leaves.first { $0.component.isObservationTime }?.path
        var page = ObservationPage(
            datastream: schema.datastream, format: f, leaves: schema.leaves, records: records,
            decodeError: decoded.error, timePath: timePath)
        if case .newest(let n) = query { page.asked = n }
        if f == MediaType.omJSON || f == MediaType.json, let v = try? JSONValue.parse(res.body) {
            page.nodePages = NodeCollection.nextLink(v) != nil
        }
        return page
    }

    /// `om+json`, `swe+json`, `swe+binary` (or a full media type) → the media type.
    public static func mediaType(_ short: String) -> String? {
        switch short {
        case "om+json", MediaType.omJSON: return MediaType.omJSON
        case "swe+json", MediaType.sweJSON: return MediaType.sweJSON
        case "swe+binary", MediaType.sweBinary: return MediaType.sweBinary
        default: return nil
        }
    }

    // MARK: Commands

    public struct CommandOutcome: Sendable, Equatable {
        public var controlStream: String
        /// The POST's HTTP status (200: status report; 202: nobody answered in the node's window).
        public var httpStatus: Int
        public var commandID: String?
        /// The report the POST returned.
        public var firstReport: CommandReport?
        /// The newest report the node holds afterwards (nil when it lists none or cannot list them):
        /// a final one (COMPLETED, FAILED, REJECTED, CANCELED) once the receiver posted it.
        public var latestReport: CommandReport?
        /// The text of a body that was not a status report (osh-core's 202 is an HTML error page).
        public var nodeMessage: String?
        /// Seconds from the POST to the last answer read.
        public var seconds: Double = 0
        /// Why the status reports could not be read, if they could not.
        public var listingError: String?

        /// What the node says now: the newest report, else the first.
        public var status: String? { (latestReport ?? firstReport).map(\.statusCode) }
    }

    /// POSTs a command (`parameters` JSON as typed, or a whole body) and reads back its status.
    ///
    /// An OSH node answers the POST with the first status correlated with the command, which for a
    /// receiver that reports over HTTP is always the PENDING it stores when its 5 s window ends:
    /// osh-core matches reports to the waiting POST by correlation id only (CommandStreamTransactionHandler
    /// .connectStatusReceiver), and a status POSTed over HTTP carries none (CommandStatusHandler.addEntry
    /// passes RequestContext.getCorrelationID(), which nothing sets outside MQTT). So the outcome is
    /// read back from `…/commands/{id}/status` for up to `wait` seconds, until a final report is there.
    public static func command(
        _ r: NodeReader, controlStream cs: String, json text: String,
        wait: Double = 12
    ) throws -> CommandOutcome {
        let body: [UInt8]
        do { body = try CommandBody.bytes(fromUserJSON: text) } catch { throw ReadSideError.config("\(error)") }
        let what = "command to control stream \(cs)"
        let started = Clock.monotonicNanoseconds()
        let elapsed = { Double(Clock.monotonicNanoseconds() &- started) / 1e9 }
        let res = try r.exchange(r.builder.postCommand(controlStreamID: cs, body: body), what: what)
        if res.status == 404 { throw ReadSideError.notFound(what: "control stream \(cs)") }
        guard (200..<300).contains(res.status) else {
            throw ReadSideError.http(what: what, status: res.status, node: NodeError.parse(res.body))
        }
        var out = CommandOutcome(controlStream: cs, httpStatus: res.status)
        if let v = try? JSONValue.parse(res.body) {
            // One report, or an array of them (a JSON array of commands was posted).
            out.firstReport = CommandReport(v) ?? v.array?.compactMap(CommandReport.init).first
        }
        if out.firstReport == nil, !res.body.isEmpty { out.nodeMessage = NodeError.parse(res.body).summary }
        out.commandID = out.firstReport?.commandID ?? CSResponse.resourceID(fromLocation: res.location)
        out.seconds = elapsed()
        guard let id = out.commandID, !(out.firstReport?.isFinal ?? false) else { return out }
        let statusWhat = "the status reports of command \(id)"
        while true {
            do {
                let listing = try r.json(r.builder.commandStatusReports(controlStreamID: cs, commandID: id), what: statusWhat)
                out.latestReport = CommandReport.outcome(in: listing)
                out.listingError = nil
            } catch {
                out.listingError = "\(error)"
            }
            out.seconds = elapsed()
            if out.latestReport?.isFinal == true || out.seconds >= wait { return out }
            let next = elapsed() + 0.5
            while elapsed() < next { try r.loop.runOnce(timeoutMs: 100) }
        }
    }

    /// Sort that keeps equal elements in their order.
    static func stableSorted<T>(_ a: [T], by less: (T, T) -> Bool) -> [T] {
        a.enumerated().sorted { less($0.element, $1.element) || (!less($1.element, $0.element) && $0.offset < $1.offset) }.map(\.element)
    }
}
