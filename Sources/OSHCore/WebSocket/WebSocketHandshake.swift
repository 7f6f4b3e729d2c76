// RFC 6455 §4 opening handshake, both ends: the client's GET with Upgrade headers and the check
// of the server's 101; the server's check of the request and its 101 answer. Pure: bytes in, bytes out.

public enum WebSocketHandshakeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The head never ended within the size limit, or is not HTTP.
    case malformedResponse(String)
    /// A status other than 101; `body` is what came with it (the node's JSON error, when there is one).
    case status(code: Int, reason: String, body: String)
    case missingUpgradeHeader
    case missingConnectionHeader
    case acceptMismatch(expected: String, got: String?)
    /// Server side: the request is not a valid upgrade.
    case badRequest(String)

    public var description: String {
        switch self {
        case .malformedResponse(let why): return "the WebSocket upgrade answer is not HTTP: " + why
        case .status(let c, let r, let b):
            return "the node answered the WebSocket upgrade with \(c) \(r)" + (b.isEmpty ? "" : ": " + b)
        case .missingUpgradeHeader: return "the node's 101 answer lacks `Upgrade: websocket`"
        case .missingConnectionHeader: return "the node's 101 answer lacks `Connection: Upgrade`"
        case .acceptMismatch(let e, let g):
            return "the node's Sec-WebSocket-Accept is \(g ?? "missing"), expected \(e) (a proxy in between?)"
        case .badRequest(let why): return "not a WebSocket upgrade: " + why
        }
    }
}

/// A parsed HTTP response or request head.
public struct HTTPHead: Sendable, Equatable {
    /// Response: "HTTP/1.1 101 Switching Protocols" → status 101, reason "Switching Protocols".
    /// Request: status 0, `method` and `target` set.
    public var status: Int
    public var reason: String
    public var method: String
    public var target: String
    public var headers: [HTTPHeader]

    public func header(_ name: String) -> String? {
        let n = name.lowercased()
        return headers.first { $0.name.lowercased() == n }?.value
    }

    /// True when a comma-separated header contains `token` (case-insensitive), e.g. Connection: keep-alive, Upgrade.
    public func headerHasToken(_ name: String, _ token: String) -> Bool {
        let n = name.lowercased(), t = token.lowercased()
        for h in headers where h.name.lowercased() == n {
            for part in h.value.split(separator: ",") where headerTrim(part).lowercased() == t { return true }
        }
        return false
    }
}

@inline(__always) private func headerTrim(_ s: Substring) -> String {
    var u = s.utf8[...]
    while let f = u.first, f == 0x20 || f == 0x09 { u = u.dropFirst() }
    while let l = u.last, l == 0x20 || l == 0x09 { u = u.dropLast() }
    return String(decoding: u, as: UTF8.self)
}

public enum WebSocketHandshake {
    public static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
    /// Heads larger than this are refused (a node's 101 is a few hundred bytes).
    public static let maxHeadBytes = 16 * 1024

    /// Sec-WebSocket-Key: base64 of 16 random bytes (RFC 6455 §4.1); the caller supplies them.
    public static func key(randomBytes: [UInt8]) -> String {
        var b = Array(randomBytes.prefix(16))
        while b.count < 16 { b.append(0) }
        return Base64.encode(b)
    }

    /// Sec-WebSocket-Accept for a key: base64(SHA-1(key + GUID)).
    public static func accept(key: String) -> String {
        Base64.encode(SHA1.hash(key + guid))
    }

    /// The client's upgrade request. `path` is the request target (path and query); `extraHeaders`
    /// carry Accept and Authorization (Basic credentials ride on the upgrade, as osh-core checks them).
    public static func request(path: String, host: String, key: String, extraHeaders: [HTTPHeader] = []) -> [UInt8] {
        var s = "GET " + path + " HTTP/1.1\r\n"
        s += "Host: " + host + "\r\n"
        s += "Upgrade: websocket\r\nConnection: Upgrade\r\n"
        s += "Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n"
        for h in extraHeaders { s += h.name + ": " + h.value + "\r\n" }
        s += "\r\n"
        return Array(s.utf8)
    }

    /// Offset just past the blank line ending the head, if the head is complete.
    public static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        var i = 3
        while i < bytes.count {
            if bytes[i] == 0x0A, bytes[i - 1] == 0x0D, bytes[i - 2] == 0x0A, bytes[i - 3] == 0x0D { return i + 1 }
            i += 1
        }
        return nil
    }

    /// Parses a head (status or request line plus headers; the blank line may be included).
    public static func parseHead(_ bytes: ArraySlice<UInt8>) throws(WebSocketHandshakeError) -> HTTPHead {
        let text = String(decoding: bytes, as: UTF8.self)
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: true).makeIterator()
        guard let first = lines.next() else { throw .malformedResponse("empty head") }
        var head = HTTPHead(status: 0, reason: "", method: "", target: "", headers: [])
        let parts = first.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        if first.hasPrefix("HTTP/") {
            guard parts.count >= 2, let code = Int(parts[1]) else { throw .malformedResponse("status line " + String(first)) }
            head.status = code
            head.reason = parts.count > 2 ? String(parts[2]) : ""
        } else {
            guard parts.count == 3, parts[2].hasPrefix("HTTP/") else { throw .malformedResponse("request line " + String(first)) }
            head.method = String(parts[0])
            head.target = String(parts[1])
        }
        while let line = lines.next() {
            guard let colon = line.firstIndex(of: ":") else { throw .malformedResponse("header line " + String(line)) }
            head.headers.append(HTTPHeader(headerTrim(line[..<colon]), headerTrim(line[line.index(after: colon)...])))
        }
        return head
    }

    /// Checks the server's answer to our upgrade (RFC 6455 §4.1, client requirements 1–4).
    public static func checkResponse(_ head: HTTPHead, key: String, body: String = "") throws(WebSocketHandshakeError) {
        guard head.status == 101 else { throw .status(code: head.status, reason: head.reason, body: body) }
        guard head.headerHasToken("Upgrade", "websocket") else { throw .missingUpgradeHeader }
        guard head.headerHasToken("Connection", "upgrade") else { throw .missingConnectionHeader }
        let expected = accept(key: key)
        guard head.header("Sec-WebSocket-Accept") == expected else {
            throw .acceptMismatch(expected: expected, got: head.header("Sec-WebSocket-Accept"))
        }
    }

    /// Server side: validates an upgrade request's headers and returns the accept value to answer with.
    public static func checkRequest(
        method: String, upgrade: String?, connection: String?, key: String?,
        version: String?
    ) throws(WebSocketHandshakeError) -> String {
        guard method == "GET" else { throw .badRequest("method " + method) }
        let h = HTTPHead(
            status: 0, reason: "", method: method, target: "",
            headers: [HTTPHeader("Upgrade", upgrade ?? ""), HTTPHeader("Connection", connection ?? "")])
        guard h.headerHasToken("Upgrade", "websocket") else { throw .badRequest("no `Upgrade: websocket`") }
        guard h.headerHasToken("Connection", "upgrade") else { throw .badRequest("no `Connection: Upgrade`") }
        guard version == "13" else { throw .badRequest("Sec-WebSocket-Version is \(version ?? "missing"), 13 expected") }
        guard let k = key, let raw = Base64.decode(Array(k.utf8)), raw.count == 16 else {
            throw .badRequest("Sec-WebSocket-Key is not 16 bytes of base64")
        }
        return accept(key: k)
    }
}
