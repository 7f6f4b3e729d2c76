// The CS API as an OSH node serves it (osh-core sensorhub-service-consys, read for facts only):
// routing, content-type and body rules, idempotent creates, status codes and error wording.
// Everything here runs under the node's lock, on the connection's thread. This file routes and
// holds the pieces every resource shares; each resource family has its own file (*Handler.swift).
import OSHCore

struct HTTPRequest: Sendable {
    var method: String
    /// Path and query exactly as sent.
    var uri: String
    var contentType: String?
    var accept: String?
    var authorization: String?
    var body: [UInt8]

    var path: Substring { URLDecoding.split(uri).path }
}

struct HTTPResponse: Sendable {
    var status: Int
    var headers: [(String, String)] = []
    var body: [UInt8] = []
    /// The Content-Type; every body the node writes is JSON unless said otherwise.
    var contentType: String? = MediaType.json
}

/// A refusal in the node's words: status code and `message`.
struct NodeFailure: Error {
    var status: Int
    var message: String
    var headers: [(String, String)] = []

    static func badRequest(_ m: String) -> NodeFailure { NodeFailure(status: 400, message: m) }
    static func notFound(_ id: String) -> NodeFailure { NodeFailure(status: 404, message: "Resource not found: " + id) }
    static func unsupported(_ m: String) -> NodeFailure { NodeFailure(status: 405, message: m) }
    static func invalidName(_ n: String) -> NodeFailure { badRequest("Invalid resource name: '" + n + "'") }
    static func unsupportedFormat(_ f: String) -> NodeFailure { badRequest("Unsupported format: " + f) }
    static let internalError = NodeFailure(status: 500, message: "Internal server error")
    static let noData = NodeFailure.badRequest("No data provided")
}

func isJSONSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }

/// The node's error body, formatted as osh-core's RestApiServlet.sendError writes it.
func errorBody(status: Int, message: String) -> [UInt8] {
    let b = ByteBuffer(capacity: 128)
    b.appendUTF8("{\n  \"status\": " + String(status) + ",\n  \"message\": ")
    JSONWriter.writeEscaped(message, to: b)
    b.appendUTF8("\n}")
    return b.array
}

/// A generic message for a status the node is told to answer with.
func statusMessage(_ s: Int) -> String {
    switch s {
    case 302: return "Found"
    case 400: return "Invalid request"
    case 401: return "Unauthorized"
    case 403: return "Permission denied"
    case 404: return "Resource not found"
    case 405: return "Unsupported operation"
    case 408: return "Request timeout"
    case 413: return "Request entity too large"
    case 429: return "Too many requests"
    case 500: return "Internal server error"
    case 502: return "Bad gateway"
    case 503: return "Service unavailable"
    case 504: return "Gateway timeout"
    default: return "HTTP " + String(s)
    }
}

final class RequestHandler {
    let req: HTTPRequest
    let store: NodeStore
    let config: DevNodeConfig
    let apiRoot: String
    let query: [(String, String)]
    /// Route template for statistics, filled in while dispatching.
    var route: String
    /// The request's time, given to the resources it creates (`validFrom`): the journal's replay
    /// passes the recorded one.
    let now: Double

    init(req: HTTPRequest, store: NodeStore, config: DevNodeConfig, apiRoot: String, now: Double = wallClock()) {
        self.req = req
        self.store = store
        self.config = config
        self.apiRoot = apiRoot
        self.now = now
        self.query = URLDecoding.split(req.uri).query
        self.route = req.method + " ?"
    }

    func run() -> HTTPResponse {
        do {
            return try dispatch()
        } catch let f as NodeFailure {
            var r = HTTPResponse(status: f.status, headers: f.headers, body: errorBody(status: f.status, message: f.message))
            if f.status == 401 { r.headers.append(("WWW-Authenticate", "Basic realm=\"OSH\"")) }
            return r
        } catch {
            return HTTPResponse(status: 500, body: errorBody(status: 500, message: "Internal server error"))
        }
    }

    // MARK: - Dispatch

    var method: String { req.method == "HEAD" ? "GET" : req.method }

    func param(_ name: String) -> String? { query.first { $0.0 == name }?.1 }

    func dispatch() throws -> HTTPResponse {
        let api = config.apiPrefix
        let path = req.path
        guard path.hasPrefix(api), path.count == api.count || path.dropFirst(api.count).first == "/" else {
            route = method + " (outside the API)"
            throw NodeFailure(status: 404, message: "Not found")
        }
        let segs = path.dropFirst(api.count).split(separator: "/").map(URLDecoding.path)
        guard let first = segs.first else {
            route = method + " /"
            guard method == "GET" else { throw NodeFailure.unsupported("Can only POST on collections") }
            return json(landingPage())
        }
        let rest = Array(segs.dropFirst())
        route = method + " /" + first
        guard let handle = Self.routes[first] else { throw NodeFailure.invalidName(first) }
        return try handle(self, rest)
    }

    /// The collections below the API root, each to its family's handler (a file each).
    static let routes: [String: @Sendable (RequestHandler, [String]) throws -> HTTPResponse] = [
        "systems": { try $0.systems($1) },
        "datastreams": { try $0.datastreams($1) },
        "observations": { try $0.observations($1) },
        "samplingFeatures": { try $0.samplingFeatures($1, name: "samplingFeatures") },
        "fois": { try $0.samplingFeatures($1, name: "fois") },
        "controlstreams": { try $0.controlStreams($1) },
        "conformance": { h, _ in try h.conformanceResource() },
        "procedures": { try $0.emptyCollection($1) },
        "properties": { try $0.emptyCollection($1) },
        "deployments": { try $0.emptyCollection($1) },
        "features": { try $0.emptyCollection($1) },
        "collections": { try $0.emptyCollection($1) },
    ]

    /// The shape of a path below a collection.
    enum Target {
        case collection
        case item(String)
        case nested(id: String, name: String, rest: [String])
    }

    func target(_ rest: [String]) -> Target {
        switch rest.count {
        case 0: return .collection
        case 1: return .item(rest[0])
        default: return .nested(id: rest[0], name: rest[1], rest: Array(rest.dropFirst(2)))
        }
    }

    /// Collection-level methods as BaseResourceHandler answers them.
    func onCollection(get: () throws -> HTTPResponse, post: () throws -> HTTPResponse) throws -> HTTPResponse {
        switch method {
        case "GET": return try get()
        case "POST": return try post()
        case "PUT": throw NodeFailure.unsupported("Can only PUT on specific resource")
        case "DELETE": throw NodeFailure.unsupported("Can only DELETE a specific resource")
        default: throw NodeFailure.unsupported("HTTP method " + req.method + " is not supported by this URL")
        }
    }

    func onItem(
        _ id: String, get: () throws -> HTTPResponse,
        put: () throws -> HTTPResponse = { throw NodeFailure.unsupported("Resource type is read-only") },
        delete: () throws -> HTTPResponse = { throw NodeFailure.unsupported("Resource type is read-only") }
    )
        throws -> HTTPResponse
    {
        switch method {
        case "GET": return try get()
        case "POST": throw NodeFailure.unsupported("Can only POST on collections")
        case "PUT": return try put()
        case "DELETE": return try delete()
        default: throw NodeFailure.unsupported("HTTP method " + req.method + " is not supported by this URL")
        }
    }

    // MARK: - Shared request pieces

    /// The Content-Type must be one of `allowed`, compared as an exact string (osh-core ResourceFormat).
    func contentType(allowed: [String]) throws -> String {
        guard let ct = req.contentType else { throw NodeFailure.badRequest("Missing content type") }
        guard allowed.contains(ct) else { throw NodeFailure.unsupportedFormat(ct) }
        return ct
    }

    /// The body as one JSON object or an array of them (every create binding accepts both).
    /// Returns the items and their Gson paths.
    func jsonItems(malformedPrefix: String) throws -> ([JSONValue], (Int) -> GsonPath) {
        let v = try jsonBody { l, c, e in malformedPrefix + "Malformed JSON at line \(l) column \(c) path $ (expected \(e.expected))" }
        if case .array(let a) = v {
            guard !a.isEmpty else { throw NodeFailure.noData }
            return (a, { GsonPath.root.index($0) })
        }
        return ([v], { _ in GsonPath.root })
    }

    /// The body parsed as JSON: no data when it is blank, else a 400 worded by `malformed` from
    /// the error's line and column (the bindings word it differently).
    func jsonBody(malformed: (Int, Int, JSONParseError) -> String) throws -> JSONValue {
        guard req.body.contains(where: { !isJSONSpace($0) }) else { throw NodeFailure.noData }
        do throws(JSONParseError) {
            return try JSONValue.parse(req.body)
        } catch {
            let (l, c) = position(of: error.offset, in: req.body)
            throw NodeFailure.badRequest(malformed(l, c, error))
        }
    }

    /// A PUT body: the Content-Type checked, then the one resource (the first, when an array came).
    func replacementItem(allowed: [String]) throws -> (JSONValue, GsonPath) {
        _ = try contentType(allowed: allowed)
        let (items, base) = try jsonItems(malformedPrefix: "Invalid JSON: ")
        guard let item = items.first else { throw NodeFailure.noData }
        return (item, base(0))
    }

    /// A string member as Gson's nextString reads it (numbers are accepted as their text).
    func stringValue(_ v: JSONValue, _ p: GsonPath, prefix: String = "Invalid payload: Invalid JSON: ") throws -> String {
        switch v {
        case .string(let s): return s
        case .number(_, let raw): return raw
        default: throw NodeFailure.badRequest(prefix + "Expected a string but was \(gsonToken(v)) at path " + p.text)
        }
    }

    /// A feature collection's `uid` and `id` filters; an `id` value with ':' is a UID, else a local
    /// id (osh-core parseResourceIdsOrUids).
    func filteredByUIDOrID<T>(_ all: [T], uid: (T) -> String, id: (T) -> String) -> [T] {
        var items = all
        if let uids = param("uid") {
            let set = Set(uids.split(separator: ",").map(String.init))
            items = items.filter { set.contains(uid($0)) }
        }
        if let ids = param("id") {
            let list = ids.split(separator: ",").map(String.init)
            items = items.filter { x in list.contains { $0.contains(":") ? $0 == uid(x) : $0 == id(x) } }
        }
        return items
    }

    func intParam(_ name: String) throws -> Int? {
        guard let s = param(name) else { return nil }
        guard let n = Int(s) else { throw NodeFailure.badRequest("Invalid " + name + " parameter: " + s) }
        return n
    }

    /// The `f` / `format` query parameter (short names as osh-core maps them), else `default`.
    func responseFormat(default d: String) throws -> String {
        guard let f = param("f") ?? param("format") else { return d }
        switch f {
        case "json": return MediaType.json
        case "geojson": return MediaType.geoJSON
        case "sml3": return MediaType.smlJSON
        case "sml2": return "application/sml+xml"
        case "html": return "text/html"
        default: return f
        }
    }

    /// 201: `Location` for one resource, a JSON array of paths for several.
    /// A create binding's upsert, item by item in order: the input `read` returns replaces what the
    /// matching resource holds (`update`), or `make` adds a new one; an item that fails to read
    /// ends the request with the earlier ones kept. Answers 201 with the resources' URLs.
    func upsert<Input, Record>(
        _ count: Int, read: (Int) throws -> Input,
        into list: ReferenceWritableKeyPath<NodeStore, [Record]>, urlPrefix: String,
        id: KeyPath<Record, String>, matches: (Record, Input) -> Bool,
        update: (inout Record, Input) -> Void, make: (Input) -> Record
    ) throws -> HTTPResponse {
        var urls: [String] = []
        for i in 0..<count {
            let input = try read(i)
            if let k = store[keyPath: list].firstIndex(where: { matches($0, input) }) {
                update(&store[keyPath: list][k], input)
                urls.append(urlPrefix + store[keyPath: list][k][keyPath: id])
            } else {
                let r = make(input)
                store[keyPath: list].append(r)
                urls.append(urlPrefix + r[keyPath: id])
            }
        }
        return created(urls)
    }

    func created(_ urls: [String]) -> HTTPResponse {
        if urls.count == 1 { return HTTPResponse(status: 201, headers: [("Location", urls[0])]) }
        return HTTPResponse(
            status: 201,
            body: jsonBytes { w in
                w.beginArray()
                for u in urls { w.string(u) }
                w.endArray()
            })
    }

    func json(_ body: [UInt8]) -> HTTPResponse { HTTPResponse(status: 200, body: body) }

    // MARK: - Writing resources

    func list(_ items: (inout JSONWriter) -> Void) -> [UInt8] {
        jsonBytes { w in
            w.beginObject()
            w.key("items"); w.beginArray()
            items(&w)
            w.endArray()
            w.endObject()
        }
    }

    /// `{"items": […]}` with `offset`/`limit` paging (limit 100 by default, at most 10000).
    func page<T>(_ all: [T], _ write: (T, inout JSONWriter) -> Void) -> [UInt8] {
        let limit = min(Int(param("limit") ?? "") ?? 100, 10_000)
        let offset = max(Int(param("offset") ?? "") ?? 0, 0)
        return list { w in for x in all.dropFirst(offset).prefix(max(limit, 0)) { write(x, &w) } }
    }

    /// Features: `{"items": […]}` by default, a GeoJSON FeatureCollection with `f=geojson`.
    func featureCollection<T>(_ all: [T], _ write: (T, inout JSONWriter) -> Void) -> [UInt8] {
        let limit = min(Int(param("limit") ?? "") ?? 100, 10_000)
        let offset = max(Int(param("offset") ?? "") ?? 0, 0)
        let window = all.dropFirst(offset).prefix(max(limit, 0))
        let geo = (try? responseFormat(default: MediaType.json)) == MediaType.geoJSON
        return jsonBytes { w in
            w.beginObject()
            if geo { w.key("type"); w.string("FeatureCollection"); w.key("features") } else { w.key("items") }
            w.beginArray()
            for x in window { write(x, &w) }
            w.endArray()
            w.endObject()
        }
    }

    /// The members a datastream and a control stream open with, in the node's order; `port` is
    /// the output or input the stream is keyed by.
    func writeStreamHead(
        id: String, name: String, description: String?, systemID: String,
        port: (key: String, name: String), validFrom: Double, _ w: inout JSONWriter
    ) {
        w.key("id"); w.string(id)
        w.key("name"); w.string(name)
        if let x = description { w.key("description"); w.string(x) }
        w.key("system@id"); w.string(systemID)
        w.key(port.key); w.string(port.name)
        writeValidTime(validFrom, &w)
    }

    func writeValidTime(_ from: Double, _ w: inout JSONWriter) {
        w.key("validTime"); w.beginArray()
        w.isoTime(from)
        w.string("now")
        w.endArray()
    }
}
