// The read side of the Connected Systems API: the requests a person in the field makes
// from the board (`osh-edge systems`, `datastreams`, `schema --remote`, `observations`,
// `command`) and the tolerant readers for what the node answers. Pure: no I/O.

/// Which observations to ask for.
public enum ObservationQuery: Sendable, Equatable {
    /// The N newest, whatever their age: `order=desc&limit=N` (the node lists ascending by default,
    /// so a bare `limit` returns the oldest records of the archive).
    case newest(Int)
    /// `resultTime=latest`: the observation(s) carrying the newest result time. osh-core's H2 store
    /// implements "latest" for resultTime only (osh-core's ObsHandler), so phenomenonTime=latest is not used.
    case latestResultTime
}

extension CSRequestBuilder {
    /// `GET /datastreams/{id}/observations` per `query`, in `format` (`f=`, percent-encoded; nil = the
    /// node's default, O&M JSON).
    public func observations(datastreamID: String, query: ObservationQuery, format: String? = nil) -> CSRequest {
        var q: [(String, String)] = []
        switch query {
        case .newest(let n):
            q.append(("order", "desc"))
            q.append(("limit", String(Swift.max(1, Swift.min(n, 10_000)))))
        case .latestResultTime:
            q.append(("resultTime", "latest"))
        }
        if let f = format { q.append(("f", f)) }
        return request(.get, Self.path("datastreams", datastreamID, "observations"), query: q)
    }

    public func getControlStream(id: String) -> CSRequest { request(.get, Self.path("controlstreams", id)) }

    /// `GET /controlstreams/{id}/schema`: the parameters schema commands are checked against.
    public func controlStreamSchema(id: String) -> CSRequest { request(.get, Self.path("controlstreams", id, "schema")) }

    /// `POST /controlstreams/{id}/commands` with a CommandBody. OSH answers 200 with the first status
    /// report, or 202 after ~29.5 s when no receiver is connected (docs/OSH-NODE.md).
    public func postCommand(controlStreamID: String, body: [UInt8]) -> CSRequest {
        request(.post, Self.path("controlstreams", controlStreamID, "commands"), contentType: MediaType.json, body: body)
    }

    /// `GET /controlstreams/{cs}/commands/{cmd}/status`: the status reports the node holds for a command.
    public func commandStatusReports(controlStreamID: String, commandID: String) -> CSRequest {
        request(.get, Self.path("controlstreams", controlStreamID, "commands") + "/" + CSURL.percentEncode(commandID) + "/status")
    }
}

// MARK: - What the node answers

/// Items of a collection: `{"items":[…]}`, a GeoJSON `{"features":[…]}`, or a bare array.
public enum NodeCollection {
    public static func items(_ v: JSONValue) -> [JSONValue] {
        if let a = v["items"]?.array ?? v["features"]?.array { return a }
        return v.array ?? []
    }

    /// The `href` of the `rel: next` link, when the node says there is more.
    public static func nextLink(_ v: JSONValue) -> String? {
        for l in v["links"]?.array ?? [] where l["rel"]?.string == "next" { return l["href"]?.string }
        return nil
    }
}

/// One system as listed by `GET /systems`: a GeoJSON Feature (`properties.uid`, `properties.name`)
/// or, with `f=sml3`, SensorML (`uniqueId`, `label`). Read leniently: a missing name is empty.
public struct NodeSystem: Sendable, Equatable {
    public var id: String
    public var uid: String
    public var name: String
    public var description: String?

    public init(id: String, uid: String, name: String, description: String? = nil) {
        self.id = id
        self.uid = uid
        self.name = name
        self.description = description
    }

    /// Nil without a non-empty `id`: an empty one would address the collection itself.
    public init?(_ v: JSONValue) {
        guard let id = v["id"]?.string, !id.isEmpty else { return nil }
        let p = v["properties"] ?? v
        self.id = id
        uid = p["uid"]?.string ?? v["uniqueId"]?.string ?? ""
        name = p["name"]?.string ?? v["label"]?.string ?? ""
        description = p["description"]?.string ?? v["description"]?.string
    }
}

/// One datastream as listed by `GET /systems/{id}/datastreams` or `GET /datastreams/{id}`.
public struct NodeDatastream: Sendable, Equatable {
    public var id: String
    public var name: String
    public var outputName: String
    public var systemID: String?
    /// The formats the node serves its observations in (`formats`); empty when not reported.
    public var formats: [String]
    /// End of the reported `phenomenonTime` range (nil: nothing observed, or not reported).
    public var newestPhenomenonTime: ObservedTime?
    /// End of the reported `resultTime` range.
    public var newestResultTime: ObservedTime?

    public init(
        id: String, name: String, outputName: String, systemID: String? = nil, formats: [String] = [],
        newestPhenomenonTime: ObservedTime? = nil, newestResultTime: ObservedTime? = nil
    ) {
        self.id = id
        self.name = name
        self.outputName = outputName
        self.systemID = systemID
        self.formats = formats
        self.newestPhenomenonTime = newestPhenomenonTime
        self.newestResultTime = newestResultTime
    }

    /// Nil without a non-empty `id` (as NodeSystem).
    public init?(_ v: JSONValue) {
        guard let id = v["id"]?.string, !id.isEmpty else { return nil }
        self.id = id
        outputName = v["outputName"]?.string ?? ""
        name = v["name"]?.string ?? outputName
        systemID = v["system@id"]?.string
        formats = (v["formats"]?.array ?? []).compactMap(\.string)
        newestPhenomenonTime = Self.rangeEnd(v["phenomenonTime"])
        newestResultTime = Self.rangeEnd(v["resultTime"])
    }

    /// `[start, end]` (end may be `"now"`), or a single instant string.
    static func rangeEnd(_ v: JSONValue?) -> ObservedTime? {
        guard let v else { return nil }
        if let s = v.string { return ObservedTime.parse(s) }
        guard let a = v.array, let last = a.last?.string else { return nil }
        return ObservedTime.parse(last)
    }

    /// The newest time the node reports for this datastream (phenomenon time, else result time).
    public var newest: ObservedTime? { newestPhenomenonTime ?? newestResultTime }

    /// The format to read observations in: O&M JSON when offered (readable by people and the
    /// default), else swe+binary (video and other Block datastreams are binary only), else the first.
    public var preferredFormat: String {
        if formats.isEmpty || formats.contains(MediaType.omJSON) { return MediaType.omJSON }
        if formats.contains(MediaType.sweBinary) { return MediaType.sweBinary }
        return formats[0]
    }
}

/// A status report as the node returns it from a command POST or a status listing.
public struct CommandReport: Sendable, Equatable {
    public var commandID: String
    /// As the node wrote it (PENDING, ACCEPTED, COMPLETED, …); kept as text so an unknown code still prints.
    public var statusCode: String
    public var reportTime: Double?
    public var message: String?

    public init(commandID: String, statusCode: String, reportTime: Double? = nil, message: String? = nil) {
        self.commandID = commandID
        self.statusCode = statusCode
        self.reportTime = reportTime
        self.message = message
    }

    /// `{"command@id","statusCode","reportTime"?,"message"?}`; a bare command (`{"id", "currentStatus"?}`)
    /// is read too, so a node that answers with the command resource still yields its id.
    public init?(_ v: JSONValue) {
        // An empty id names no command (the status poll would read the whole collection).
        guard let id = v["command@id"]?.string ?? v["id"]?.string, !id.isEmpty else { return nil }
        commandID = id
        statusCode = v["statusCode"]?.string ?? v["currentStatus"]?.string ?? ""
        reportTime = v["reportTime"]?.string.flatMap(ISOTime.parse)
        message = v["message"]?.string
    }

    /// True for a code after which the node's answer will not change.
    public var isFinal: Bool { CommandStatusCode(rawValue: statusCode)?.isFinal ?? false }

    /// What a command came to: the newest final report in a status listing, else the newest. (On an
    /// OSH node a PENDING stored when its window ends may be newer than the receiver's COMPLETED.)
    public static func outcome(in listing: JSONValue) -> CommandReport? {
        let finals = NodeCollection.items(listing).filter { CommandReport($0)?.isFinal == true }
        return newest(in: finals.isEmpty ? listing : .array(finals))
    }

    /// The newest report (by reportTime, later entries winning ties) in a status listing.
    public static func newest(in listing: JSONValue) -> CommandReport? {
        var best: CommandReport?
        for item in NodeCollection.items(listing) {
            guard let r = CommandReport(item) else { continue }
            if best == nil || (r.reportTime ?? -.infinity) >= (best?.reportTime ?? -.infinity) { best = r }
        }
        return best
    }
}

public enum CommandBodyError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidJSON(String)
    case notAnObject

    public var description: String {
        switch self {
        case .invalidJSON(let m):
            return "the command is not valid JSON (\(m)): give the parameters as one object, e.g. '{\"rpan\":3.0}'"
        case .notAnObject:
            return "the command must be a JSON object: the parameters ('{\"rpan\":3.0}') or a whole body ('{\"parameters\":{…}}')"
        }
    }
}

/// The body of a command POST: `{"parameters": {…}}`, with `issueTime` first when given.
public enum CommandBody {
    /// From what a person typed: a parameters object (wrapped), or a whole body with `parameters`
    /// (sent as is). Members keep their order — the node reads them in schema order.
    public static func bytes(fromUserJSON text: String) throws(CommandBodyError) -> [UInt8] {
        let v: JSONValue
        do throws(JSONParseError) { v = try JSONValue.parse(text) } catch { throw .invalidJSON(error.description) }
        guard let members = v.object else { throw .notAnObject }
        let keys = Set(members.map(\.0))
        let isBody = keys.contains("parameters") && keys.isSubset(of: ["parameters", "issueTime"])
        let b = ByteBuffer(capacity: 256)
        var w = JSONWriter(b)
        if isBody {
            ReadSideJSON.write(v, to: &w)
        } else {
            w.beginObject()
            w.key("parameters")
            ReadSideJSON.write(v, to: &w)
            w.endObject()
        }
        return b.array
    }
}

public enum ReadSideJSON {
    /// Writes a parsed value back out: members in their order, numbers exactly as they were written.
    public static func write(_ v: JSONValue, to w: inout JSONWriter) {
        switch v {
        case .object(let members):
            w.beginObject()
            for (k, x) in members { w.key(k); write(x, to: &w) }
            w.endObject()
        case .array(let items):
            w.beginArray()
            for x in items { write(x, to: &w) }
            w.endArray()
        case .string(let s): w.string(s)
        case .number(_, let raw): Array(raw.utf8).withUnsafeBytes { w.rawValue($0) }
        case .bool(let b): w.bool(b)
        case .null: w.null()
        }
    }

    /// A value as compact JSON text.
    public static func string(_ v: JSONValue) -> String {
        let b = ByteBuffer(capacity: 256)
        var w = JSONWriter(b)
        write(v, to: &w)
        return b.string
    }
}
