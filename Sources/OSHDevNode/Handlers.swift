// The CS API as an OSH node serves it (osh-core sensorhub-service-consys, read for facts only):
// routing, content-type and body rules, idempotent creates, status codes and error wording.
// Everything here runs under the node's lock, on the connection's thread.
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
        let api = config.apiPath.hasSuffix("/") ? String(config.apiPath.dropLast()) : config.apiPath
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
        switch first {
        case "systems": return try systems(rest)
        case "datastreams": return try datastreams(rest)
        case "observations": return try observations(rest)
        case "samplingFeatures", "fois": return try samplingFeatures(rest, name: first)
        case "controlstreams": return try controlStreams(rest)
        case "conformance":
            guard method == "GET" else { throw NodeFailure.unsupported("Resource type is read-only") }
            return json(conformance())
        case "procedures", "properties", "deployments", "features", "collections":
            guard method == "GET" else { throw NodeFailure.unsupported("Resource type is read-only") }
            if rest.isEmpty { return json(list { _ in }) }
            throw NodeFailure.notFound(rest[0])
        default:
            throw NodeFailure.invalidName(first)
        }
    }

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

    func onItem(_ id: String, get: () throws -> HTTPResponse,
                put: () throws -> HTTPResponse = { throw NodeFailure.unsupported("Resource type is read-only") },
                delete: () throws -> HTTPResponse = { throw NodeFailure.unsupported("Resource type is read-only") })
        throws -> HTTPResponse {
        switch method {
        case "GET": return try get()
        case "POST": throw NodeFailure.unsupported("Can only POST on collections")
        case "PUT": return try put()
        case "DELETE": return try delete()
        default: throw NodeFailure.unsupported("HTTP method " + req.method + " is not supported by this URL")
        }
    }

    // MARK: - Systems

    func systems(_ rest: [String]) throws -> HTTPResponse {
        switch target(rest) {
        case .collection:
            return try onCollection(get: { try listSystems() }, post: { try createSystems() })
        case .item(let id):
            route = method + " /systems/{id}"
            return try onItem(id, get: {
                guard let i = store.systemIndex(id) else { throw NodeFailure.notFound(id) }
                return try systemResponse(store.systems[i])
            }, put: {
                guard let i = store.systemIndex(id) else { throw NodeFailure.notFound(id) }
                let inputs = try systemInputs()
                guard let input = inputs.first else { throw NodeFailure.noData }
                apply(input, to: &store.systems[i])
                return HTTPResponse(status: 204, contentType: nil)
            }, delete: {
                guard let i = store.systemIndex(id) else { throw NodeFailure.notFound(id) }
                store.systems.remove(at: i)
                store.datastreams.removeAll { $0.systemID == id }
                store.controlStreams.removeAll { $0.systemID == id }
                store.features.removeAll { $0.systemID == id }
                return HTTPResponse(status: 204, contentType: nil)
            })
        case .nested(let id, let name, let sub):
            route = method + " /systems/{id}/" + name
            let known = ["datastreams", "controlstreams", "samplingFeatures", "fois", "subsystems", "members", "history"]
            guard known.contains(name) else { throw NodeFailure.invalidName(name) }
            guard let si = store.systemIndex(id) else { throw NodeFailure.notFound(id) }
            let system = store.systems[si]
            if let child = sub.first {
                route += "/{id}"
                guard sub.count == 1, method == "GET" else { throw NodeFailure.badRequest("Invalid resource URI") }
                switch name {
                case "datastreams":
                    guard let d = store.datastreams.first(where: { $0.id == child && $0.systemID == id }) else { throw NodeFailure.notFound(child) }
                    return json(jsonBytes { writeDatastream(d, &$0) })
                case "controlstreams":
                    guard let c = store.controlStreams.first(where: { $0.id == child && $0.systemID == id }) else { throw NodeFailure.notFound(child) }
                    return json(jsonBytes { writeControlStream(c, &$0) })
                case "samplingFeatures", "fois":
                    guard let f = store.features.first(where: { $0.id == child && $0.systemID == id }) else { throw NodeFailure.notFound(child) }
                    return json(jsonBytes { writeFeature(f, &$0) })
                default:
                    throw NodeFailure.notFound(child)
                }
            }
            switch name {
            case "datastreams":
                return try onCollection(get: {
                    let items = store.datastreams.filter { $0.systemID == id }
                    return json(page(items) { d, w in writeDatastream(d, &w) })
                }, post: { try createDatastreams(systemID: id) })
            case "controlstreams":
                return try onCollection(get: {
                    let items = store.controlStreams.filter { $0.systemID == id }
                    return json(page(items) { c, w in writeControlStream(c, &w) })
                }, post: { try createControlStreams(systemID: id) })
            case "samplingFeatures", "fois":
                return try onCollection(get: {
                    let items = store.features.filter { $0.systemID == id }
                    return json(featurePage(items))
                }, post: { try createFeatures(systemID: id) })
            case "history":
                return try onCollection(get: { json(featureCollection([system]) { s, w in writeSystem(s, &w) }) },
                                        post: { throw NodeFailure.unsupported("Resource type is read-only") })
            default: // subsystems, members: the dev node has none
                return try onCollection(get: { json(list { _ in }) },
                                        post: { throw NodeFailure.unsupported("Subsystems are not supported by the development node") })
            }
        }
    }

    struct SystemInput {
        var uid: String
        var name: String
        var description: String?
        var featureType: String?
        var sml: JSONValue?
        var geometry: JSONValue?
    }

    func listSystems() throws -> HTTPResponse {
        var items = store.systems
        if let uids = param("uid") {
            let set = Set(uids.split(separator: ",").map(String.init))
            items = items.filter { set.contains($0.uid) }
        }
        if let ids = param("id") {
            // A value with ':' is a UID, else a local id (osh-core parseResourceIdsOrUids).
            let list = ids.split(separator: ",").map(String.init)
            items = items.filter { s in list.contains { $0.contains(":") ? $0 == s.uid : $0 == s.id } }
        }
        if let q = param("q")?.lowercased(), !q.isEmpty {
            items = items.filter { $0.name.lowercased().contains(q) || ($0.description ?? "").lowercased().contains(q) }
        }
        return json(featureCollection(items) { s, w in writeSystem(s, &w) })
    }

    func createSystems() throws -> HTTPResponse {
        let inputs = try systemInputs()
        var urls: [String] = []
        for input in inputs {
            if let i = store.systems.firstIndex(where: { $0.uid == input.uid }) {
                apply(input, to: &store.systems[i])
                urls.append("/systems/" + store.systems[i].id)
            } else {
                let s = SystemRecord(id: store.mint(), uid: input.uid, name: input.name, description: input.description,
                                     featureType: input.featureType, validFrom: now, sml: input.sml,
                                     geometry: input.geometry, versions: 1)
                store.systems.append(s)
                urls.append("/systems/" + s.id)
            }
        }
        return created(urls)
    }

    func apply(_ input: SystemInput, to s: inout SystemRecord) {
        s.uid = input.uid
        s.name = input.name
        s.description = input.description
        s.featureType = input.featureType
        s.sml = input.sml
        s.geometry = input.geometry
        s.versions += 1
    }

    /// Reads a POST/PUT /systems body: SensorML JSON (type first everywhere it matters) or GeoJSON.
    func systemInputs() throws -> [SystemInput] {
        let ct = try contentType(allowed: [MediaType.smlJSON, MediaType.geoJSON, MediaType.json])
        let (items, base) = try jsonItems(malformedPrefix: "Invalid JSON: ")
        var out: [SystemInput] = []
        for (i, item) in items.enumerated() {
            let p = base(i)
            if ct == MediaType.smlJSON {
                do throws(BodyError) {
                    try TypeFirst.smlProcess(item, at: p)
                } catch {
                    throw NodeFailure.badRequest("Invalid payload: Invalid JSON: " + error.message)
                }
                let input = SystemInput(uid: item["uniqueId"]?.string ?? "", name: item["label"]?.string ?? "",
                                        description: item["description"]?.string, featureType: item["definition"]?.string,
                                        sml: item, geometry: nil)
                try validateFeature(uid: input.uid, name: input.name)
                out.append(input)
            } else {
                let f = try geoJSONFeature(item, at: p)
                out.append(SystemInput(uid: f.uid, name: f.name, description: f.description, featureType: f.featureType,
                                       sml: nil, geometry: f.geometry))
            }
        }
        return out
    }

    /// AbstractFeatureHandler.validate.
    func validateFeature(uid: String, name: String) throws {
        if uid.isEmpty { throw NodeFailure.badRequest("Invalid payload: Missing feature UID") }
        if uid.count < 12 { throw NodeFailure.badRequest("Invalid payload: Feature UID should be at least 12 characters") }
        if name.isEmpty { throw NodeFailure.badRequest("Invalid payload: Missing feature name") }
    }

    struct GeoFeature {
        var uid: String
        var name: String
        var description: String?
        var featureType: String?
        var geometry: JSONValue?
    }

    /// A GeoJSON Feature; keys in any order (GeoJsonBindings buffers them).
    func geoJSONFeature(_ v: JSONValue, at p: GsonPath) throws -> GeoFeature {
        guard case .object = v else {
            throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Expected BEGIN_OBJECT but was \(gsonToken(v)) at path " + p.text)
        }
        if let t = v["type"], t.string != "Feature" {
            throw NodeFailure.badRequest("Invalid payload: Invalid JSON: The type of a GeoJSON feature must be 'Feature'")
        }
        let props = v["properties"]
        if let pr = props, pr.object == nil, !pr.isNull {
            throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Expected BEGIN_OBJECT but was \(gsonToken(pr)) at path " + p.key("properties").text)
        }
        let f = GeoFeature(uid: props?["uid"]?.string ?? "", name: props?["name"]?.string ?? "",
                           description: props?["description"]?.string, featureType: props?["featureType"]?.string,
                           geometry: v["geometry"].flatMap { $0.isNull ? nil : $0 })
        try validateFeature(uid: f.uid, name: f.name)
        return f
    }

    func systemResponse(_ s: SystemRecord) throws -> HTTPResponse {
        switch try responseFormat(default: MediaType.geoJSON) {
        case MediaType.geoJSON, MediaType.json:
            return json(jsonBytes { writeSystem(s, &$0) })
        case MediaType.smlJSON:
            var r = json(jsonBytes { writeSML(s, &$0) })
            r.contentType = MediaType.smlJSON
            return r
        case let f:
            throw NodeFailure.unsupportedFormat(f)
        }
    }

    // MARK: - Sampling features

    func samplingFeatures(_ rest: [String], name: String) throws -> HTTPResponse {
        switch target(rest) {
        case .collection:
            route = method + " /samplingFeatures"
            return try onCollection(get: {
                var items = store.features
                if let uids = param("uid") {
                    let set = Set(uids.split(separator: ",").map(String.init))
                    items = items.filter { set.contains($0.uid) }
                }
                if let ids = param("id") {
                    let list = ids.split(separator: ",").map(String.init)
                    items = items.filter { f in list.contains { $0.contains(":") ? $0 == f.uid : $0 == f.id } }
                }
                return json(featurePage(items))
            }, post: { throw NodeFailure.unsupported("Sampling features can only be created within a System resource") })
        case .item(let id):
            route = method + " /samplingFeatures/{id}"
            return try onItem(id, get: {
                guard let f = store.features.first(where: { $0.id == id }) else { throw NodeFailure.notFound(id) }
                return json(jsonBytes { writeFeature(f, &$0) })
            }, put: {
                guard let i = store.featureIndex(id) else { throw NodeFailure.notFound(id) }
                _ = try contentType(allowed: [MediaType.geoJSON, MediaType.json])
                let (items, base) = try jsonItems(malformedPrefix: "Invalid JSON: ")
                guard let item = items.first else { throw NodeFailure.noData }
                let f = try geoJSONFeature(item, at: base(0))
                store.features[i].uid = f.uid
                store.features[i].name = f.name
                store.features[i].description = f.description
                store.features[i].featureType = f.featureType
                store.features[i].geometry = f.geometry
                return HTTPResponse(status: 204, contentType: nil)
            }, delete: {
                guard let i = store.featureIndex(id) else { throw NodeFailure.notFound(id) }
                store.features.remove(at: i)
                return HTTPResponse(status: 204, contentType: nil)
            })
        case .nested(let id, let sub, _):
            route = method + " /samplingFeatures/{id}/" + sub
            throw store.featureIndex(id) == nil ? NodeFailure.notFound(id) : NodeFailure.invalidName(sub)
        }
    }

    func createFeatures(systemID: String) throws -> HTTPResponse {
        _ = try contentType(allowed: [MediaType.geoJSON, MediaType.json])
        let (items, base) = try jsonItems(malformedPrefix: "Invalid JSON: ")
        var urls: [String] = []
        for (i, item) in items.enumerated() {
            let f = try geoJSONFeature(item, at: base(i))
            if let k = store.features.firstIndex(where: { $0.uid == f.uid }) {
                store.features[k].name = f.name
                store.features[k].description = f.description
                store.features[k].featureType = f.featureType
                store.features[k].geometry = f.geometry
                urls.append("/samplingFeatures/" + store.features[k].id)
            } else {
                let r = FeatureRecord(id: store.mint(), systemID: systemID, uid: f.uid, name: f.name,
                                      description: f.description, featureType: f.featureType, geometry: f.geometry)
                store.features.append(r)
                urls.append("/samplingFeatures/" + r.id)
            }
        }
        return created(urls)
    }

    // MARK: - Datastreams

    func datastreams(_ rest: [String]) throws -> HTTPResponse {
        switch target(rest) {
        case .collection:
            return try onCollection(get: { json(page(store.datastreams) { d, w in writeDatastream(d, &w) }) },
                                    post: { throw NodeFailure.unsupported("Datastreams can only be created within a System resource") })
        case .item(let id):
            route = method + " /datastreams/{id}"
            return try onItem(id, get: {
                guard let i = store.datastreamIndex(id) else { throw NodeFailure.notFound(id) }
                return json(jsonBytes { writeDatastream(store.datastreams[i], &$0) })
            }, put: {
                guard let i = store.datastreamIndex(id) else { throw NodeFailure.notFound(id) }
                _ = try contentType(allowed: [MediaType.json])
                let (items, base) = try jsonItems(malformedPrefix: "Invalid JSON: ")
                guard let item = items.first else { throw NodeFailure.noData }
                let input = try datastreamInput(item, at: base(0))
                update(&store.datastreams[i], with: input)
                return HTTPResponse(status: 204, contentType: nil)
            }, delete: {
                guard let i = store.datastreamIndex(id) else { throw NodeFailure.notFound(id) }
                store.datastreams.remove(at: i)
                return HTTPResponse(status: 204, contentType: nil)
            })
        case .nested(let id, let name, let sub):
            route = method + " /datastreams/{id}/" + name
            guard ["observations", "schema", "stats"].contains(name) else { throw NodeFailure.invalidName(name) }
            guard let i = store.datastreamIndex(id) else { throw NodeFailure.notFound(id) }
            guard sub.isEmpty else { throw NodeFailure.badRequest("Invalid resource URI") }
            switch name {
            case "observations":
                return try onCollection(get: { try listObservations(of: [i]) }, post: { try postObservations(datastream: i) })
            case "schema":
                guard method == "GET" else { throw NodeFailure.unsupported("Resource type is read-only") }
                return try schemaResponse(store.datastreams[i])
            default:
                guard method == "GET" else { throw NodeFailure.unsupported("Resource type is read-only") }
                let d = store.datastreams[i]
                return json(jsonBytes { w in
                    w.beginObject()
                    w.key("count"); w.int(d.observationCount)
                    w.endObject()
                })
            }
        }
    }

    struct DatastreamInput {
        var name: String?
        var description: String?
        var outputName: String
        var obsFormat: String
        var record: DataComponent
        var encoding: BinaryEncoding?
        var encodingJSON: JSONValue?
        var schemaJSON: JSONValue
        var reader: RecordReader
    }

    func createDatastreams(systemID: String) throws -> HTTPResponse {
        _ = try contentType(allowed: [MediaType.json])
        let (items, base) = try jsonItems(malformedPrefix: "Invalid JSON: ")
        var urls: [String] = []
        for (i, item) in items.enumerated() {
            let input = try datastreamInput(item, at: base(i))
            // Keyed by (system, outputName): re-registering returns the same datastream.
            if let k = store.datastreams.firstIndex(where: { $0.systemID == systemID && $0.outputName == input.outputName }) {
                update(&store.datastreams[k], with: input)
                urls.append("/datastreams/" + store.datastreams[k].id)
            } else {
                let d = DatastreamRecord(id: store.mint(), systemID: systemID,
                                         name: input.name ?? input.outputName, description: input.description,
                                         outputName: input.outputName, obsFormat: input.obsFormat, record: input.record,
                                         encoding: input.encoding, encodingJSON: input.encodingJSON,
                                         schemaJSON: input.schemaJSON, reader: input.reader, validFrom: now,
                                         schemaVersions: 1)
                store.datastreams.append(d)
                urls.append("/datastreams/" + d.id)
            }
        }
        return created(urls)
    }

    func update(_ d: inout DatastreamRecord, with input: DatastreamInput) {
        if let n = input.name { d.name = n }
        d.description = input.description
        d.outputName = input.outputName
        if input.schemaJSON != d.schemaJSON {
            d.obsFormat = input.obsFormat
            d.record = input.record
            d.encoding = input.encoding
            d.encodingJSON = input.encodingJSON
            d.schemaJSON = input.schemaJSON
            d.reader = input.reader
            d.schemaVersions += 1
        }
    }

    /// DataStreamBindingJson.deserialize: keys in any order, `obsFormat` first in `schema`,
    /// om+json → `resultSchema`, swe+* → `recordSchema` + `recordEncoding`, `type` first in every
    /// SWE object, `outputName` required.
    func datastreamInput(_ v: JSONValue, at p: GsonPath) throws -> DatastreamInput {
        guard case .object(let members) = v else {
            throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Expected BEGIN_OBJECT but was \(gsonToken(v)) at path " + p.text)
        }
        var name: String?, description: String?, outputName: String?
        var schema: (format: String, record: DataComponent, encoding: BinaryEncoding?, encodingJSON: JSONValue?, json: JSONValue)?
        for (k, x) in members {
            switch k {
            case "name": name = try stringValue(x, p.key(k))
            case "description": description = try stringValue(x, p.key(k))
            case "outputName": outputName = try stringValue(x, p.key(k))
            case "schema": schema = try datastreamSchema(x, at: p.key(k))
            default: continue
            }
        }
        guard let outputName else { throw NodeFailure.badRequest("Invalid payload: Missing property: outputName") }
        guard let schema else { throw NodeFailure.badRequest("Invalid payload: Missing property: schema") }
        var record = schema.record
        record.name = outputName // the node names the record after the output
        let reader: RecordReader
        do throws(SWEDecodingError) {
            reader = try RecordReader(record: record, encoding: schema.encoding)
        } catch {
            throw NodeFailure.badRequest("Invalid JSON: " + error.description)
        }
        return DatastreamInput(name: name, description: description, outputName: outputName, obsFormat: schema.format,
                               record: record, encoding: schema.encoding, encodingJSON: schema.encodingJSON,
                               schemaJSON: schema.json, reader: reader)
    }

    func datastreamSchema(_ v: JSONValue, at p: GsonPath) throws
        -> (format: String, record: DataComponent, encoding: BinaryEncoding?, encodingJSON: JSONValue?, json: JSONValue) {
        guard case .object(let m) = v else {
            throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Expected BEGIN_OBJECT but was \(gsonToken(v)) at path " + p.text)
        }
        // "obsFormat must come first!"
        guard let first = m.first, first.0 == "obsFormat" else {
            throw NodeFailure.badRequest("Invalid payload: Missing property: schema/obsFormat")
        }
        let format = try stringValue(first.1, p.key("obsFormat"))
        let isOM = format == MediaType.omJSON
        guard isOM || format.hasPrefix("application/swe+") else { throw NodeFailure.unsupportedFormat(format) }
        var resultSchema: JSONValue?, recordSchema: JSONValue?, recordEncoding: JSONValue?
        do throws(BodyError) {
            for (k, x) in m.dropFirst() {
                switch (isOM, k) {
                case (true, "resultSchema"):
                    try TypeFirst.component(x, at: p.key(k)); resultSchema = x
                case (false, "recordSchema"):
                    try TypeFirst.component(x, at: p.key(k)); recordSchema = x
                case (false, "recordEncoding"):
                    try TypeFirst.encoding(x, at: p.key(k)); recordEncoding = x
                default:
                    continue
                }
            }
        } catch {
            throw NodeFailure.badRequest("Invalid JSON: " + error.message)
        }
        // What SchemaDecoder reads: only a BinaryEncoding matters to the decoders (others are
        // text/JSON/XML layouts the node converts); a swe+binary datastream without one falls
        // back to the node's default binary layout when observations come in.
        var decoderInput: [(String, JSONValue)]
        let binary = recordEncoding?["type"]?.string == "BinaryEncoding"
        if isOM {
            guard let rs = resultSchema else { throw NodeFailure.badRequest("Invalid payload: Missing property: schema/resultSchema") }
            decoderInput = [("obsFormat", .string(format)), ("resultSchema", rs)]
        } else {
            guard let rs = recordSchema else { throw NodeFailure.badRequest("Invalid payload: Missing property: schema/recordSchema") }
            decoderInput = [("obsFormat", .string(binary ? MediaType.sweBinary : MediaType.sweJSON)), ("recordSchema", rs)]
            if binary, let e = recordEncoding { decoderInput.append(("recordEncoding", e)) }
        }
        let decoded: DatastreamSchema
        do throws(SWEDecodingError) {
            decoded = try SchemaDecoder.datastreamSchema(.object(decoderInput), path: "")
        } catch {
            throw NodeFailure.badRequest("Invalid JSON: " + error.description)
        }
        return (format, decoded.record, decoded.encoding, recordEncoding, v)
    }

    func schemaResponse(_ d: DatastreamRecord) throws -> HTTPResponse {
        let format = try param("obsFormat") ?? responseFormat(default: MediaType.omJSON)
        let body: [UInt8]
        switch format {
        case MediaType.omJSON, MediaType.json:
            guard !d.binaryOnly else { throw NodeFailure.unsupportedFormat(format) }
            body = jsonBytes { w in
                w.beginObject()
                w.key("obsFormat"); w.string(MediaType.omJSON)
                w.key("resultSchema"); SWEJSON.write(DatastreamBody.resultSchema(d.record), to: &w)
                w.endObject()
            }
        case MediaType.sweJSON, MediaType.sweCSV, "application/swe+xml", MediaType.sweBinary:
            if format != MediaType.sweBinary && d.binaryOnly { throw NodeFailure.unsupportedFormat(format) }
            body = jsonBytes { w in
                w.beginObject()
                w.key("obsFormat"); w.string(format)
                w.key("recordSchema"); SWEJSON.write(d.record, to: &w)
                switch format {
                case MediaType.sweBinary:
                    w.key("recordEncoding")
                    if let e = d.encoding { SWEJSON.write(e, to: &w) } else { SWEJSON.write(BinaryEncoding.default(for: d.record), to: &w) }
                case MediaType.sweCSV:
                    w.key("recordEncoding"); w.beginObject()
                    w.key("type"); w.string("TextEncoding")
                    w.key("collapseWhiteSpaces"); w.bool(true)
                    w.key("decimalSeparator"); w.string(".")
                    w.key("tokenSeparator"); w.string(",")
                    w.key("blockSeparator"); w.string("\n")
                    w.endObject()
                case "application/swe+xml":
                    w.key("recordEncoding"); w.beginObject()
                    w.key("type"); w.string("XMLEncoding")
                    w.endObject()
                default:
                    break // JSON encoding: omitted, as the node does
                }
                w.endObject()
            }
        default:
            throw NodeFailure.unsupportedFormat(format)
        }
        return json(body)
    }

    // MARK: - Observations

    func observations(_ rest: [String]) throws -> HTTPResponse {
        switch target(rest) {
        case .collection:
            return try onCollection(get: { try listObservations(of: Array(store.datastreams.indices)) },
                                    post: { throw NodeFailure.unsupported("Observations can only be created within a Datastream") })
        case .item(let id):
            route = method + " /observations/{id}"
            return try onItem(id, get: {
                for d in store.datastreams {
                    if let o = d.observations.first(where: { $0.id == id }) {
                        return json(jsonBytes { writeObservation(o, d, &$0) })
                    }
                }
                throw NodeFailure.notFound(id)
            }, delete: {
                for k in store.datastreams.indices {
                    if let j = store.datastreams[k].observations.firstIndex(where: { $0.id == id }) {
                        store.datastreams[k].observations.remove(at: j)
                        return HTTPResponse(status: 204, contentType: nil)
                    }
                }
                throw NodeFailure.notFound(id)
            })
        case .nested(_, let name, _):
            route = method + " /observations/{id}/" + name
            throw NodeFailure.invalidName(name)
        }
    }

    /// Filters, order, paging and formats: ReadSideObservations.swift.
    func listObservations(of indices: [Int]) throws -> HTTPResponse { try readSideListObservations(of: indices) }

    func postObservations(datastream i: Int) throws -> HTTPResponse {
        if case .rejectObservations(let status) = store.mode {
            throw NodeFailure(status: status, message: status == 400 ? "Ingest Error: observations rejected by the development node"
                                                                     : statusMessage(status))
        }
        if case .acceptObservationsThenReject(let remaining, let status) = store.mode {
            guard remaining > 0 else { throw NodeFailure(status: status, message: statusMessage(status)) }
            store.mode = .acceptObservationsThenReject(remaining: remaining - 1, status: status)
        }
        guard let ct = req.contentType else { throw NodeFailure.badRequest("Missing content type") }
        var foiFromQuery: String?
        if let foi = param("foi") {
            guard IDMinter.isWellFormed(foi) else { throw NodeFailure.notFound(foi) }
            guard store.featureIndex(foi) != nil else { throw NodeFailure.badRequest("Invalid FOI ID") }
            foiFromQuery = foi
        }
        let d = store.datastreams[i]
        var records: [SWERecordValue]
        switch ct {
        case MediaType.omJSON, MediaType.json:
            guard !d.binaryOnly else { throw NodeFailure.unsupportedFormat(ct) }
            records = try omObservations(d)
        case MediaType.sweJSON:
            guard !d.binaryOnly else { throw NodeFailure.unsupportedFormat(ct) }
            records = [try sweJSONRecord(d)]
        case MediaType.sweBinary:
            records = try sweBinaryRecords(d)
        default:
            throw NodeFailure.unsupportedFormat(ct)
        }
        guard !records.isEmpty else { throw NodeFailure.noData }
        for r in records {
            if let foi = r.foiID, store.featureIndex(foi) == nil { throw NodeFailure.badRequest("Ingest Error: Invalid FOI ID") }
        }
        var urls: [String] = []
        let timeLeaf = Self.observationTimePath(d.record)
        let now = wallClock()
        for var r in records {
            let t: Double
            if let pt = r.phenomenonTime {
                t = pt
            } else if let path = timeLeaf, case .time(let x)? = r[path], x.isFinite {
                t = x
            } else {
                t = now // no time field: the node stamps its own clock
            }
            r.phenomenonTime = t
            if r.resultTime == nil { r.resultTime = t }
            if r.foiID == nil { r.foiID = foiFromQuery }
            let o = StoredObservation(id: store.mint(), phenomenonTime: t, resultTime: r.resultTime ?? t,
                                      foiID: r.foiID, record: r)
            store.datastreams[i].observations.append(o)
            store.datastreams[i].observationCount += 1
            store.datastreams[i].phenomenonTimes.append(t)
            urls.append("/observations/" + o.id)
        }
        let excess = store.datastreams[i].observations.count - max(config.maxStoredObservations, 1)
        if excess > 0 { store.datastreams[i].observations.removeFirst(excess) }
        return created(urls)
    }

    /// The leaf path of the record's observation time (SamplingTime / PhenomenonTime), if any.
    static func observationTimePath(_ record: DataComponent) -> String? {
        SchemaWalker.leaves(of: record).first { $0.component.isObservationTime }?.path
    }

    /// ObsBindingOmJson.deserialize: one object or an array; `phenomenonTime` with a zone offset;
    /// `foi@id` must be an id; `result` fields in schema order.
    func omObservations(_ d: DatastreamRecord) throws -> [SWERecordValue] {
        let (items, base) = try jsonItems(malformedPrefix: "Invalid payload: Invalid JSON: ")
        var out: [SWERecordValue] = []
        for (i, item) in items.enumerated() {
            let p = base(i)
            guard case .object(let m) = item else {
                throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Expected BEGIN_OBJECT but was \(gsonToken(item)) at path " + p.text)
            }
            var hasTime = false, hasResult = false
            for (k, x) in m {
                switch k {
                case "phenomenonTime", "resultTime":
                    guard case .string(let s) = x else {
                        if case .number = x {
                            throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Invalid ISO8601 date/time at " + p.key(k).text)
                        }
                        throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Expected a string but was \(gsonToken(x)) at path " + p.key(k).text)
                    }
                    guard ISOTime.parse(s) != nil else {
                        throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Invalid ISO8601 date/time at " + p.key(k).text)
                    }
                    if k == "phenomenonTime" { hasTime = true }
                case "foi@id":
                    guard let s = x.string, IDMinter.isWellFormed(s) else { throw NodeFailure.badRequest("Invalid FOI ID") }
                case "result":
                    hasResult = true
                default:
                    continue
                }
            }
            // osh-core builds the observation with null phenomenonTime/result and fails its own
            // assertion (NullPointerException), which the servlet answers as 500.
            guard hasTime, hasResult else { throw NodeFailure.internalError }
            do throws(SWEDecodingError) {
                out.append(try d.reader.decodeObservation(item, path: p.text == "$" ? "" : "/" + String(i)))
            } catch {
                throw NodeFailure.badRequest("Invalid payload: Invalid JSON: " + Self.readerMessage(error))
            }
        }
        return out
    }

    /// ObsBindingSweCommon with JsonDataParserGson: exactly one record object per request.
    func sweJSONRecord(_ d: DatastreamRecord) throws -> SWERecordValue {
        guard req.body.contains(where: { !isJSONSpace($0) }) else { throw NodeFailure.noData }
        let v: JSONValue
        do throws(JSONParseError) {
            v = try JSONValue.parse(req.body)
        } catch {
            let (l, c) = position(of: error.offset, in: req.body)
            throw NodeFailure.badRequest("Invalid payload: Malformed JSON at line \(l) column \(c) path $")
        }
        guard case .object = v else {
            let (l, c) = firstTokenPosition(req.body)
            throw NodeFailure.badRequest("Invalid payload: java.lang.IllegalStateException: Expected BEGIN_OBJECT but was \(gsonToken(v)) at line \(l) column \(c) path $")
        }
        do throws(SWEDecodingError) {
            return try d.reader.decodeRecord(v)
        } catch {
            throw NodeFailure.badRequest("Invalid payload: " + Self.readerMessage(error))
        }
    }

    /// swe+binary: records back to back until the end of the body, in the datastream's
    /// BinaryEncoding or, without one, the node's default (raw, big-endian, each scalar's type).
    func sweBinaryRecords(_ d: DatastreamRecord) throws -> [SWERecordValue] {
        guard !req.body.isEmpty else { throw NodeFailure.noData }
        let reader: RecordReader
        if d.encoding != nil {
            reader = d.reader
        } else {
            do throws(SWEDecodingError) {
                reader = try RecordReader(record: d.record, encoding: BinaryEncoding.default(for: d.record))
            } catch {
                throw NodeFailure.unsupportedFormat(MediaType.sweBinary)
            }
        }
        let decoded = reader.decodeBinary(req.body)
        if let e = decoded.error { throw NodeFailure.badRequest("Invalid payload: " + e.description) }
        return decoded.records
    }

    /// A reader error in the node's words: field-order errors exactly as JsonDataParserGson words them.
    static func readerMessage(_ e: SWEDecodingError) -> String {
        switch e {
        case .record(let path, let message):
            if message.hasPrefix("Expected field") { return message }
            return message + " at " + GsonPath.fromPointer(path).text
        default:
            return e.description
        }
    }

    // MARK: - Control streams

    func controlStreams(_ rest: [String]) throws -> HTTPResponse {
        switch target(rest) {
        case .collection:
            return try onCollection(get: { json(page(store.controlStreams) { c, w in writeControlStream(c, &w) }) },
                                    post: { throw NodeFailure.unsupported("Command streams can only be created within a System resource") })
        case .item(let id):
            route = method + " /controlstreams/{id}"
            return try onItem(id, get: {
                guard let i = store.controlStreamIndex(id) else { throw NodeFailure.notFound(id) }
                return json(jsonBytes { writeControlStream(store.controlStreams[i], &$0) })
            }, put: {
                guard let i = store.controlStreamIndex(id) else { throw NodeFailure.notFound(id) }
                _ = try contentType(allowed: [MediaType.json])
                let (items, base) = try jsonItems(malformedPrefix: "Invalid JSON: ")
                guard let item = items.first else { throw NodeFailure.noData }
                let input = try controlStreamInput(item, at: base(0))
                store.controlStreams[i].name = input.name ?? input.inputName
                store.controlStreams[i].description = input.description
                store.controlStreams[i].inputName = input.inputName
                store.controlStreams[i].schemaJSON = input.schema
                store.controlStreams[i].parameters = input.parameters
                return HTTPResponse(status: 204, contentType: nil)
            }, delete: {
                guard let i = store.controlStreamIndex(id) else { throw NodeFailure.notFound(id) }
                store.controlStreams.remove(at: i)
                return HTTPResponse(status: 204, contentType: nil)
            })
        case .nested(let id, let name, let sub):
            route = method + " /controlstreams/{id}/" + name
            guard ["commands", "status", "schema"].contains(name) else { throw NodeFailure.invalidName(name) }
            guard let i = store.controlStreamIndex(id) else { throw NodeFailure.notFound(id) }
            guard sub.isEmpty else { throw NodeFailure.badRequest("Invalid resource URI") }
            switch name {
            case "status":
                return try onCollection(get: {
                    json(page(store.controlStreams[i].statuses) { s, w in
                        w.beginObject()
                        w.key("id"); w.string(s.id)
                        if case .object(let m) = s.body { for (k, x) in m { w.key(k); w.value(x) } }
                        w.endObject()
                    })
                }, post: { try postStatus(controlStream: i) })
            case "commands":
                return try onCollection(get: { json(list { _ in }) },
                                        post: { throw NodeFailure.unsupported("Sending commands is not supported by the development node") })
            default:
                guard method == "GET" else { throw NodeFailure.unsupported("Resource type is read-only") }
                let c = store.controlStreams[i]
                return json(jsonBytes { w in
                    w.beginObject()
                    w.key("commandFormat"); w.string(MediaType.json)
                    if case .object(let m) = c.schemaJSON {
                        for (k, x) in m where k != "commandFormat" { w.key(k); w.value(x) }
                    }
                    w.endObject()
                })
            }
        }
    }

    struct ControlStreamInput {
        var name: String?
        var description: String?
        var inputName: String
        var schema: JSONValue
        var parameters: JSONValue
    }

    func createControlStreams(systemID: String) throws -> HTTPResponse {
        _ = try contentType(allowed: [MediaType.json])
        let (items, base) = try jsonItems(malformedPrefix: "Invalid JSON: ")
        var urls: [String] = []
        for (i, item) in items.enumerated() {
            let input = try controlStreamInput(item, at: base(i))
            // Keyed by (system, inputName).
            if let k = store.controlStreams.firstIndex(where: { $0.systemID == systemID && $0.inputName == input.inputName }) {
                store.controlStreams[k].name = input.name ?? input.inputName
                store.controlStreams[k].description = input.description
                store.controlStreams[k].schemaJSON = input.schema
                store.controlStreams[k].parameters = input.parameters
                urls.append("/controlstreams/" + store.controlStreams[k].id)
            } else {
                let c = ControlStreamRecord(id: store.mint(), systemID: systemID, name: input.name ?? input.inputName,
                                            description: input.description, inputName: input.inputName,
                                            schemaJSON: input.schema, parameters: input.parameters, validFrom: now)
                store.controlStreams.append(c)
                urls.append("/controlstreams/" + c.id)
            }
        }
        return created(urls)
    }

    /// CommandStreamBindingJson / CommandStreamSchemaBindingJson: `inputName` required; in `schema`,
    /// `parametersSchema` (and result/feasibility schemas, encodings) type first.
    func controlStreamInput(_ v: JSONValue, at p: GsonPath) throws -> ControlStreamInput {
        guard case .object(let members) = v else {
            throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Expected BEGIN_OBJECT but was \(gsonToken(v)) at path " + p.text)
        }
        var name: String?, description: String?, inputName: String?, schema: JSONValue?
        for (k, x) in members {
            switch k {
            case "name": name = try stringValue(x, p.key(k))
            case "description": description = try stringValue(x, p.key(k))
            case "inputName": inputName = try stringValue(x, p.key(k))
            case "schema":
                let sp = p.key(k)
                guard case .object(let sm) = x else {
                    throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Expected BEGIN_OBJECT but was \(gsonToken(x)) at path " + sp.text)
                }
                do throws(BodyError) {
                    for (sk, sx) in sm {
                        switch sk {
                        case "parametersSchema", "resultSchema", "feasibilityResultSchema":
                            try TypeFirst.component(sx, at: sp.key(sk))
                        case "paramsEncoding", "resultEncoding", "feasibilityResultEncoding":
                            try TypeFirst.encoding(sx, at: sp.key(sk))
                        default:
                            continue
                        }
                    }
                } catch {
                    throw NodeFailure.badRequest("Invalid JSON: " + error.message)
                }
                schema = x
            default:
                continue
            }
        }
        guard let inputName else { throw NodeFailure.badRequest("Invalid payload: Missing property: inputName") }
        guard let schema else { throw NodeFailure.badRequest("Invalid payload: Missing property: schema") }
        guard let parameters = schema["parametersSchema"] else {
            throw NodeFailure.badRequest("Invalid payload: Missing property: schema/parametersSchema")
        }
        do throws(SWEDecodingError) {
            _ = try SchemaDecoder.component(parameters, path: "/schema/parametersSchema")
        } catch {
            throw NodeFailure.badRequest("Invalid JSON: " + error.description)
        }
        return ControlStreamInput(name: name, description: description, inputName: inputName, schema: schema, parameters: parameters)
    }

    static let statusCodes: Set<String> = ["PENDING", "ACCEPTED", "REJECTED", "SCHEDULED", "UPDATED", "CANCELED",
                                           "EXECUTING", "FAILED", "COMPLETED"]

    /// CommandStatusBindingJson: `command@id` (an id), `statusCode` (enum), times as ISO strings,
    /// `executionTime` as a "t1/t2" string.
    func postStatus(controlStream i: Int) throws -> HTTPResponse {
        _ = try contentType(allowed: [MediaType.json])
        let (items, base) = try jsonItems(malformedPrefix: "Invalid JSON: ")
        var accepted: [(String, JSONValue)] = []
        for (n, item) in items.enumerated() {
            let p = base(n)
            guard case .object(let m) = item else {
                throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Expected BEGIN_OBJECT but was \(gsonToken(item)) at path " + p.text)
            }
            var commandID: String?, code: String?
            for (k, x) in m {
                switch k {
                case "command@id":
                    let s = try stringValue(x, p.key(k), prefix: "Invalid payload: Invalid JSON: ")
                    guard IDMinter.isWellFormed(s) else { throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Invalid resource ID: " + s) }
                    commandID = s
                case "statusCode":
                    let s = try stringValue(x, p.key(k), prefix: "Invalid payload: Invalid JSON: ")
                    guard Self.statusCodes.contains(s) else {
                        throw NodeFailure.badRequest("Invalid payload: Invalid JSON: No enum constant org.sensorhub.api.command.CommandStatusCode." + s)
                    }
                    code = s
                case "reportTime":
                    let s = try stringValue(x, p.key(k), prefix: "Invalid payload: Invalid JSON: ")
                    guard ISOTime.parse(s) != nil else {
                        throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Invalid ISO8601 date/time at " + p.key(k).text)
                    }
                case "executionTime":
                    let s = try stringValue(x, p.key(k), prefix: "Invalid payload: Invalid JSON: ")
                    let parts = s.split(separator: "/")
                    guard parts.count == 2, parts.allSatisfy({ ISOTime.parse(String($0)) != nil || $0 == "now" }) else {
                        throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Invalid ISO8601 date/time at " + p.key(k).text)
                    }
                case "percentCompletion":
                    guard x.int != nil else {
                        throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Expected an int but was \(gsonToken(x)) at path " + p.key(k).text)
                    }
                default:
                    continue
                }
            }
            guard commandID != nil else { throw NodeFailure.badRequest("Invalid payload: Missing property: command@id") }
            guard code != nil else { throw NodeFailure.internalError } // CommandStatus asserts a non-null statusCode
            accepted.append((store.mint(), item))
        }
        guard !accepted.isEmpty else { throw NodeFailure.noData }
        var urls: [String] = []
        for (id, body) in accepted {
            store.controlStreams[i].statuses.append((id, body))
            urls.append("/status/" + id)
        }
        return created(urls)
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
        guard req.body.contains(where: { !isJSONSpace($0) }) else { throw NodeFailure.noData }
        let v: JSONValue
        do throws(JSONParseError) {
            v = try JSONValue.parse(req.body)
        } catch {
            let (l, c) = position(of: error.offset, in: req.body)
            throw NodeFailure.badRequest(malformedPrefix + "Malformed JSON at line \(l) column \(c) path $ (expected \(error.expected))")
        }
        if case .array(let a) = v {
            guard !a.isEmpty else { throw NodeFailure.noData }
            return (a, { GsonPath.root.index($0) })
        }
        return ([v], { _ in GsonPath.root })
    }

    /// A string member as Gson's nextString reads it (numbers are accepted as their text).
    func stringValue(_ v: JSONValue, _ p: GsonPath, prefix: String = "Invalid payload: Invalid JSON: ") throws -> String {
        switch v {
        case .string(let s): return s
        case .number(_, let raw): return raw
        default: throw NodeFailure.badRequest(prefix + "Expected a string but was \(gsonToken(v)) at path " + p.text)
        }
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
    func created(_ urls: [String]) -> HTTPResponse {
        if urls.count == 1 { return HTTPResponse(status: 201, headers: [("Location", urls[0])]) }
        return HTTPResponse(status: 201, body: jsonBytes { w in
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

    func featurePage(_ items: [FeatureRecord]) -> [UInt8] { featureCollection(items) { f, w in writeFeature(f, &w) } }

    func writeValidTime(_ from: Double, _ w: inout JSONWriter) {
        w.key("validTime"); w.beginArray()
        w.isoTime(from)
        w.string("now")
        w.endArray()
    }

    func writeSystem(_ s: SystemRecord, _ w: inout JSONWriter) {
        w.beginObject()
        w.key("type"); w.string("Feature")
        w.key("id"); w.string(s.id)
        if let g = s.geometry { w.key("geometry"); w.value(g) }
        w.key("properties"); w.beginObject()
        w.key("uid"); w.string(s.uid)
        if let t = s.featureType { w.key("featureType"); w.string(t) }
        w.key("name"); w.string(s.name)
        if let d = s.description { w.key("description"); w.string(d) }
        writeValidTime(s.validFrom, &w)
        w.endObject()
        w.endObject()
    }

    /// The SensorML description as stored (outputs hidden, as the node does), with the node's id.
    func writeSML(_ s: SystemRecord, _ w: inout JSONWriter) {
        w.beginObject()
        if case .object(let m)? = s.sml {
            var wroteID = false
            for (k, x) in m where k != "outputs" {
                if k == "id" { w.key("id"); w.string(s.id); wroteID = true; continue }
                w.key(k); w.value(x)
                if k == "type", !m.contains(where: { $0.0 == "id" }) { w.key("id"); w.string(s.id); wroteID = true }
            }
            if !wroteID { w.key("id"); w.string(s.id) }
        } else {
            w.key("type"); w.string("PhysicalSystem")
            w.key("id"); w.string(s.id)
            if let t = s.featureType { w.key("definition"); w.string(t) }
            w.key("uniqueId"); w.string(s.uid)
            w.key("label"); w.string(s.name)
            if let d = s.description { w.key("description"); w.string(d) }
            writeValidTime(s.validFrom, &w)
        }
        w.endObject()
    }

    func writeFeature(_ f: FeatureRecord, _ w: inout JSONWriter) {
        w.beginObject()
        w.key("type"); w.string("Feature")
        w.key("id"); w.string(f.id)
        w.key("geometry")
        if let g = f.geometry { w.value(g) } else { w.null() }
        w.key("properties"); w.beginObject()
        w.key("uid"); w.string(f.uid)
        if let t = f.featureType { w.key("featureType"); w.string(t) }
        w.key("name"); w.string(f.name)
        if let d = f.description { w.key("description"); w.string(d) }
        w.endObject()
        w.endObject()
    }

    func writeDatastream(_ d: DatastreamRecord, _ w: inout JSONWriter) {
        w.beginObject()
        w.key("id"); w.string(d.id)
        w.key("name"); w.string(d.name)
        if let x = d.description { w.key("description"); w.string(x) }
        w.key("system@id"); w.string(d.systemID)
        w.key("outputName"); w.string(d.outputName)
        writeValidTime(d.validFrom, &w)
        // The ranges span what is held, whatever order it arrived in (a backlog replays old times last).
        if let p0 = d.observations.map(\.phenomenonTime).min(), let p1 = d.observations.map(\.phenomenonTime).max(),
           let r0 = d.observations.map(\.resultTime).min(), let r1 = d.observations.map(\.resultTime).max() {
            w.key("phenomenonTime"); w.beginArray(); w.isoTime(p0); w.isoTime(p1); w.endArray()
            w.key("resultTime"); w.beginArray(); w.isoTime(r0); w.isoTime(r1); w.endArray()
        }
        w.key("resultType"); w.string("record")
        w.key("live"); w.bool(false)
        w.key("formats"); w.beginArray()
        for f in d.formats { w.string(f) }
        w.endArray()
        w.endObject()
    }

    func writeControlStream(_ c: ControlStreamRecord, _ w: inout JSONWriter) {
        w.beginObject()
        w.key("id"); w.string(c.id)
        w.key("name"); w.string(c.name)
        if let x = c.description { w.key("description"); w.string(x) }
        w.key("system@id"); w.string(c.systemID)
        w.key("inputName"); w.string(c.inputName)
        writeValidTime(c.validFrom, &w)
        w.key("live"); w.bool(false)
        w.key("async"); w.bool(true)
        w.key("formats"); w.beginArray(); w.string(MediaType.json); w.string(MediaType.sweJSON); w.endArray()
        w.endObject()
    }

    /// An O&M JSON observation as the node lists it.
    func writeObservation(_ o: StoredObservation, _ d: DatastreamRecord, _ w: inout JSONWriter) {
        w.beginObject()
        w.key("id"); w.string(o.id)
        w.key("datastream@id"); w.string(d.id)
        if let f = o.foiID { w.key("foi@id"); w.string(f) }
        w.key("phenomenonTime"); w.isoTime(o.phenomenonTime)
        w.key("resultTime"); w.isoTime(o.resultTime)
        w.key("result")
        if d.binaryOnly {
            w.string("Compressed binary result not shown in JSON")
        } else {
            let values = Dictionary(o.record.fields.map { ($0.path, $0.value) }, uniquingKeysWith: { a, _ in a })
            let root = d.record
            switch root.kind {
            case .record, .vector: ResultWriter.group(root, path: "", values, omitTimes: true, &w)
            default: ResultWriter.component(root, path: "/", values, &w)
            }
        }
        w.endObject()
    }

    // MARK: - Landing page and conformance

    func landingPage() -> [UInt8] {
        jsonBytes { w in
            w.beginObject()
            w.key("title"); w.string("osh-edge development node")
            w.key("description"); w.string("In-memory OGC API - Connected Systems server that follows OpenSensorHub's rules")
            w.key("links"); w.beginArray()
            for (rel, path, title) in [("self", "/", "This document"), ("conformance", "/conformance", "Conformance"),
                                       ("systems", "/systems", "Systems"), ("datastreams", "/datastreams", "Datastreams"),
                                       ("controlstreams", "/controlstreams", "Control streams"),
                                       ("samplingFeatures", "/samplingFeatures", "Sampling features")] {
                w.beginObject()
                w.key("rel"); w.string(rel)
                w.key("title"); w.string(title)
                w.key("type"); w.string(MediaType.json)
                w.key("href"); w.string(apiRoot + path)
                w.endObject()
            }
            w.endArray()
            w.endObject()
        }
    }

    func conformance() -> [UInt8] {
        jsonBytes { w in
            w.beginObject()
            w.key("conformsTo"); w.beginArray()
            for c in ["http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/core",
                      "http://www.opengis.net/spec/ogcapi-connectedsystems-1/1.0/conf/core",
                      "http://www.opengis.net/spec/ogcapi-connectedsystems-1/1.0/conf/system-features",
                      "http://www.opengis.net/spec/ogcapi-connectedsystems-1/1.0/conf/create-replace-delete",
                      "http://www.opengis.net/spec/ogcapi-connectedsystems-2/1.0/conf/datastreams",
                      "http://www.opengis.net/spec/ogcapi-connectedsystems-2/1.0/conf/controlstreams"] {
                w.string(c)
            }
            w.endArray()
            w.endObject()
        }
    }
}

/// Writes decoded values back as an O&M `result` object, nested as the schema nests them.
enum ResultWriter {
    static func group(_ c: DataComponent, path: String, _ values: [String: SWEValue], omitTimes: Bool, _ w: inout JSONWriter) {
        w.beginObject()
        for child in c.children {
            if omitTimes && child.isObservationTime { continue }
            let name = child.name ?? ""
            w.key(name)
            component(child, path: path + "/" + name, values, &w)
        }
        w.endObject()
    }

    static func component(_ c: DataComponent, path: String, _ values: [String: SWEValue], _ w: inout JSONWriter) {
        switch c.kind {
        case .record, .vector:
            group(c, path: path, values, omitTimes: false, &w)
        default:
            value(values[path] ?? .absent, c, &w)
        }
    }

    static func value(_ v: SWEValue, _ c: DataComponent, _ w: inout JSONWriter) {
        switch v {
        case .time(let t):
            if case .time(let tc) = c.kind, tc.isISO { w.isoTime(t) } else { w.number(t) }
        case .number(let d): w.number(d)
        case .count(let n): w.int(n)
        case .bool(let b): w.bool(b)
        case .text(let s): w.string(s)
        case .block: w.string("Compressed binary result not shown in JSON")
        case .absent: w.null()
        case .array(let items):
            let element: DataComponent
            if case .array(let a) = c.kind { element = a.elementType } else { element = c }
            w.beginArray()
            for x in items { value(x, element, &w) }
            w.endArray()
        case .record(let r):
            let vs = Dictionary(r.fields.map { ($0.path, $0.value) }, uniquingKeysWith: { a, _ in a })
            component(c, path: "", vs, &w)
        case .choice(let item, let r):
            w.beginObject()
            w.key(item)
            let vs = Dictionary(r.fields.map { ($0.path, $0.value) }, uniquingKeysWith: { a, _ in a })
            if let ic = c.children.first(where: { $0.name == item }) {
                switch ic.kind {
                case .record, .vector: group(ic, path: "", vs, omitTimes: false, &w)
                default: value(vs["/"] ?? .absent, ic, &w)
                }
            } else {
                w.null()
            }
            w.endObject()
        }
    }
}
