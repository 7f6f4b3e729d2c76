// Connected Systems API requests as values, without I/O: method, path relative
// to the API root (query included), headers in order, body. The transport in
// OSHPlatform sends them; tests check them byte for byte. The rules, each one
// something a real OSH node does (docs/OSH-NODE.md):
// - every request carries `Accept: application/json` (an Accept without "json"
//   turns errors into HTML or a redirect to the admin console);
// - a body always comes with a bare Content-Type (the node compares the string
//   exactly, so no `; charset=…`);
// - Basic credentials go out pre-emptively whenever a username is configured and
//   never when it is empty (a node with anonymous read answers 401 to them);
//   a Bearer token is sent as is for OAuth-fronted nodes;
// - query values are percent-encoded down to RFC 3986's unreserved set: the node
//   form-decodes query strings, so a raw `+` would arrive as a space.

public enum HTTPMethod: String, Sendable, CaseIterable {
    case get = "GET", post = "POST", put = "PUT", delete = "DELETE"
}

public struct HTTPHeader: Sendable, Equatable {
    public var name: String
    public var value: String
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// How the agent authenticates to a node.
public enum CSCredentials: Sendable, Equatable {
    case none
    /// HTTP Basic, sent pre-emptively; an empty username means no header at all (even with a password).
    case basic(username: String, password: String)
    /// `Authorization: Bearer <token>`; an empty token means no header.
    case bearer(token: String)

    /// The `Authorization` value, or nil when no header must be sent.
    public var authorization: String? {
        switch self {
        case .none:
            return nil
        case .basic(let user, let password):
            guard !user.isEmpty else { return nil }
            return "Basic " + Base64.encode(Array((user + ":" + password).utf8))
        case .bearer(let token):
            let t = SystemUID.trim(token)
            return t.isEmpty ? nil : "Bearer " + t
        }
    }
}

public struct CSRequest: Sendable, Equatable, CustomStringConvertible {
    public var method: HTTPMethod
    /// Relative to the API root, starting with `/`, query included (`/systems?uid=urn%3Aosh%3A…`).
    public var path: String
    public var headers: [HTTPHeader]
    public var body: [UInt8]?

    public init(method: HTTPMethod, path: String, headers: [HTTPHeader], body: [UInt8]? = nil) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
    }

    /// The full URL for a node whose API root is `apiRoot` (e.g. `http://host:8181/sensorhub/api`).
    public func url(apiRoot: String) -> String { CSURL.join(apiRoot: apiRoot, path: path) }

    /// The first header with this name (case-insensitive), if any.
    public func header(_ name: String) -> String? {
        let n = name.lowercased()
        return headers.first { $0.name.lowercased() == n }?.value
    }

    /// The Content-Type, if the request has one.
    public var contentType: String? { header("Content-Type") }

    /// For logs: credentials are never printed.
    public var description: String {
        var s = method.rawValue + " " + path
        for h in headers {
            s += "\n" + h.name + ": " + (h.name.lowercased() == "authorization" ? redact(h.value) : h.value)
        }
        if let b = body { s += "\n(" + String(b.count) + " bytes)" }
        return s
    }

    private func redact(_ v: String) -> String {
        if let space = v.firstIndex(of: " ") { return String(v[..<space]) + " <redacted>" }
        return "<redacted>"
    }
}

/// How a system or sampling feature is looked up by UID.
public enum UIDQueryParameter: String, Sendable {
    /// `?uid=<uid>`: the feature handlers' own UID filter (osh-core AbstractFeatureHandler), present in
    /// every osh-core version read. The default.
    case uid
    /// `?id=<uid>`: what Android's ConSysApiClient sends. osh-core accepts it because its `id` filter
    /// treats a value containing `:` as a UID (BaseResourceHandler parseResourceIdsOrUids).
    case id
}

/// Builds every CS API request the agent makes. Pure; one per configured server.
public struct CSRequestBuilder: Sendable, Equatable {
    public var credentials: CSCredentials
    public var uidQuery: UIDQueryParameter

    public init(credentials: CSCredentials = .none, uidQuery: UIDQueryParameter = .uid) {
        self.credentials = credentials
        self.uidQuery = uidQuery
    }

    /// A request with the standard headers: Accept, then Content-Type (with a body or a content type),
    /// then Authorization.
    public func request(
        _ method: HTTPMethod, _ path: String, query: [(String, String)] = [],
        contentType: String? = nil, body: [UInt8]? = nil
    ) -> CSRequest {
        var headers = [HTTPHeader("Accept", MediaType.json)]
        if let ct = contentType { headers.append(HTTPHeader("Content-Type", ct)) }
        if let auth = credentials.authorization { headers.append(HTTPHeader("Authorization", auth)) }
        var p = path.hasPrefix("/") ? path : "/" + path
        if !query.isEmpty { p += "?" + CSURL.queryString(query) }
        return CSRequest(method: method, path: p, headers: headers, body: body)
    }

    /// `/<collection>/<id>[/<sub>]` with the id percent-encoded as a path segment.
    static func path(_ collection: String, _ id: String, _ sub: String? = nil) -> String {
        var p = "/" + collection + "/" + CSURL.percentEncode(id)
        if let s = sub { p += "/" + s }
        return p
    }

    // MARK: Node

    /// `GET /?f=json`: is the API root there (Android refuses to start unless it answers 200).
    /// `f=json` because without it the landing page is served with `Content-Type: auto`.
    public func landingPage() -> CSRequest { request(.get, "/", query: [("f", "json")]) }

    // MARK: Systems

    /// `GET /systems?uid=<uid>` (or `?id=` per `uidQuery`): 0 or 1 item.
    public func findSystem(uid: String) -> CSRequest {
        request(.get, "/systems", query: [(uidQuery.rawValue, uid)])
    }

    /// `GET /systems?limit=N` (top-level systems).
    public func listSystems(limit: Int = 100, offset: Int = 0) -> CSRequest {
        request(.get, "/systems", query: paging(limit, offset))
    }

    /// `GET /systems/{id}`: re-verifies a cached id (2xx reuse, 404 re-register).
    public func getSystem(id: String) -> CSRequest { request(.get, Self.path("systems", id)) }

    /// `POST /systems` with the SensorML body (SystemBody); 201 + `Location: /systems/{id}`.
    public func createSystem(body: [UInt8]) -> CSRequest {
        request(.post, "/systems", contentType: MediaType.smlJSON, body: body)
    }

    /// `PUT /systems/{id}` with the SensorML body; 204.
    public func updateSystem(id: String, body: [UInt8]) -> CSRequest {
        request(.put, Self.path("systems", id), contentType: MediaType.smlJSON, body: body)
    }

    // MARK: Datastreams

    /// `GET /systems/{id}/datastreams?limit=100&offset=0`, matched by `outputName` by the caller.
    public func listDatastreams(systemID: String, limit: Int = 100, offset: Int = 0) -> CSRequest {
        request(.get, Self.path("systems", systemID, "datastreams"), query: paging(limit, offset))
    }

    public func getDatastream(id: String) -> CSRequest { request(.get, Self.path("datastreams", id)) }

    /// `POST /systems/{id}/datastreams` with a DatastreamBody; 201 + `Location: /datastreams/{id}`.
    public func createDatastream(systemID: String, body: [UInt8]) -> CSRequest {
        request(.post, Self.path("systems", systemID, "datastreams"), contentType: MediaType.json, body: body)
    }

    /// `PUT /datastreams/{id}` with a DatastreamBody; 204.
    public func updateDatastream(id: String, body: [UInt8]) -> CSRequest {
        request(.put, Self.path("datastreams", id), contentType: MediaType.json, body: body)
    }

    /// `GET /datastreams/{id}/schema?obsFormat=application%2Fswe%2Bjson` (or another format).
    public func datastreamSchema(id: String, obsFormat: String = MediaType.sweJSON) -> CSRequest {
        request(.get, Self.path("datastreams", id, "schema"), query: [("obsFormat", obsFormat)])
    }

    // MARK: Sampling features

    /// `GET /samplingFeatures?uid=<foi uid>` (or `?id=`).
    public func findSamplingFeature(uid: String) -> CSRequest {
        request(.get, "/samplingFeatures", query: [(uidQuery.rawValue, uid)])
    }

    public func getSamplingFeature(id: String) -> CSRequest { request(.get, Self.path("samplingFeatures", id)) }

    /// `POST /systems/{id}/samplingFeatures` with the GeoJSON feature (SamplingFeature); 201 + Location.
    public func createSamplingFeature(systemID: String, body: [UInt8]) -> CSRequest {
        request(.post, Self.path("systems", systemID, "samplingFeatures"), contentType: MediaType.geoJSON, body: body)
    }

    /// `PUT /samplingFeatures/{id}` with the GeoJSON feature; 204.
    public func updateSamplingFeature(id: String, body: [UInt8]) -> CSRequest {
        request(.put, Self.path("samplingFeatures", id), contentType: MediaType.geoJSON, body: body)
    }

    // MARK: Observations

    /// `POST /datastreams/{id}/observations` with an O&M JSON array or one swe+json record. The body may be
    /// left nil and supplied at send time from the encoder's buffer (hot path: no copy).
    public func postObservations(datastreamID: String, format: ScalarFormat, body: [UInt8]? = nil) -> CSRequest {
        request(
            .post, Self.path("datastreams", datastreamID, "observations"),
            contentType: format.mediaType, body: body)
    }

    /// `POST /datastreams/{id}/observations` with one swe+binary video record (time, length, access unit).
    public func postVideo(datastreamID: String, body: [UInt8]? = nil) -> CSRequest {
        request(
            .post, Self.path("datastreams", datastreamID, "observations"),
            contentType: MediaType.sweBinary, body: body)
    }

    /// `GET /datastreams/{id}/observations?limit=N[&order=desc][&f=<format>]`. Latest first with
    /// `descending` (`phenomenonTime=latest` is not reliable on the node's H2 store).
    public func listObservations(
        datastreamID: String, limit: Int = 100, descending: Bool = false,
        format: String? = nil
    ) -> CSRequest {
        var q: [(String, String)] = [("limit", String(limit))]
        if descending { q.append(("order", "desc")) }
        if let f = format { q.append(("f", f)) }
        return request(.get, Self.path("datastreams", datastreamID, "observations"), query: q)
    }

    // MARK: Control streams and commands

    public func listControlStreams(systemID: String) -> CSRequest {
        request(.get, Self.path("systems", systemID, "controlstreams"))
    }

    /// `POST /systems/{id}/controlstreams` with a ControlStreamBody; 201 + `Location: /controlstreams/{id}`.
    public func createControlStream(systemID: String, body: [UInt8]) -> CSRequest {
        request(.post, Self.path("systems", systemID, "controlstreams"), contentType: MediaType.json, body: body)
    }

    /// `PUT /controlstreams/{id}`; 204.
    public func updateControlStream(id: String, body: [UInt8]) -> CSRequest {
        request(.put, Self.path("controlstreams", id), contentType: MediaType.json, body: body)
    }

    /// `GET /controlstreams/{id}/commands`: the WebSocket upgrade that makes the agent the stream's command
    /// receiver (the transport adds the upgrade headers; credentials ride on the upgrade too).
    public func commandChannel(controlStreamID: String) -> CSRequest {
        request(.get, Self.path("controlstreams", controlStreamID, "commands"))
    }

    /// `POST /controlstreams/{id}/status` with a CommandStatusBody (`command@id` inside).
    public func postCommandStatus(controlStreamID: String, body: [UInt8]) -> CSRequest {
        request(.post, Self.path("controlstreams", controlStreamID, "status"), contentType: MediaType.json, body: body)
    }

    private func paging(_ limit: Int, _ offset: Int) -> [(String, String)] {
        [("limit", String(limit)), ("offset", String(Swift.max(0, offset)))]
    }
}

/// URL helpers: joining an API root with a path, and RFC 3986 percent-encoding.
public enum CSURL {
    /// `http://host:8181/sensorhub/api` (trailing `/`s tolerated) + `/systems` → `http://host:8181/sensorhub/api/systems`.
    /// A path that is already an absolute http(s) URL is returned unchanged.
    public static func join(apiRoot: String, path: String) -> String {
        let p = SystemUID.trim(path)
        if p.hasPrefix("http://") || p.hasPrefix("https://") { return p }
        var root = Substring(SystemUID.trim(apiRoot))
        while root.hasSuffix("/") { root = root.dropLast() }
        if p.isEmpty { return String(root) }
        return String(root) + (p.hasPrefix("/") || p.hasPrefix("?") ? p : "/" + p)
    }

    /// `k1=v1&k2=v2` with keys and values percent-encoded.
    public static func queryString(_ items: [(String, String)]) -> String {
        var s = ""
        for (i, (k, v)) in items.enumerated() {
            if i > 0 { s += "&" }
            s += percentEncode(k) + "=" + percentEncode(v)
        }
        return s
    }

    /// Everything outside RFC 3986's unreserved set (ALPHA DIGIT `-` `.` `_` `~`) as `%XX`, uppercase hex,
    /// UTF-8. So `+` → `%2B`, `:` → `%3A`, `/` → `%2F`, space → `%20`: safe in a path segment and in a
    /// query the node form-decodes.
    public static func percentEncode(_ s: String) -> String {
        var out = [UInt8]()
        out.reserveCapacity(s.utf8.count)
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(b)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(upperHex(b >> 4))
                out.append(upperHex(b & 0xF))
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Reverses `%XX` (invalid escapes are kept as they are; `+` is left alone: paths are not form-encoded).
    public static func percentDecode(_ s: String) -> String {
        let u = Array(s.utf8)
        var out = [UInt8]()
        out.reserveCapacity(u.count)
        var i = 0
        while i < u.count {
            if u[i] == UInt8(ascii: "%"), i + 2 < u.count,
                let hi = Hex.value(u[i + 1]), let lo = Hex.value(u[i + 2])
            {
                out.append(hi << 4 | lo)
                i += 3
            } else {
                out.append(u[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    @inline(__always) static func upperHex(_ n: UInt8) -> UInt8 { n < 10 ? 48 + n : 55 + n }
}

/// RFC 4648 §4 base64 with padding (for Basic credentials).
