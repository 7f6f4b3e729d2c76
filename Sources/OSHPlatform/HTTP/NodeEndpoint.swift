import OSHCore

/// How the client decides to trust a node's TLS certificate (verified by default; per
/// server, a self-signed certificate may be trusted or the key pinned).
public enum TLSPolicy: Sendable, Equatable {
    /// Chain and host name checked against the system's CA store.
    case verify
    /// Chain checked against this PEM file only (a self-signed certificate, or a private CA),
    /// for this server's requests only. Verification stays on: the URL's host must be named in
    /// the certificate (subjectAltName), so an IP address in the URL needs an IP entry.
    case trustCertificate(pemPath: String)
    /// The server's public key must hash to this value (base64 SHA-256 of the DER
    /// SubjectPublicKeyInfo, with or without a `sha256//` prefix). The key is the identity, so
    /// CA chain and host name are not checked: a self-signed certificate is fine.
    case pinnedKey(sha256Base64: String)
}

/// A transfer slower than `bytesPerSecond` for `seconds` in a row fails with `.timeout`, so a
/// stalled body (or a node that accepts a connection and never answers) ends before `requestTimeout`.
public struct LowSpeedLimit: Sendable, Equatable {
    public var bytesPerSecond: Int
    public var seconds: Int

    public init(bytesPerSecond: Int, seconds: Int) {
        self.bytesPerSecond = bytesPerSecond
        self.seconds = seconds
    }

    /// Under 1 byte/s for 15 s: only a connection that has gone silent.
    public static let stalled = LowSpeedLimit(bytesPerSecond: 1, seconds: 15)
}

/// One OpenSensorHub node as the HTTP client sees it.
public struct NodeEndpoint: Sendable, Equatable {
    /// The CS API root, e.g. `http://127.0.0.1:8181/sensorhub/api` (http or https).
    public var apiRoot: String
    /// Sent as `Authorization` on every request that does not carry its own.
    public var credentials: CSCredentials
    public var tls: TLSPolicy
    /// Seconds to establish TCP (and TLS) before giving up; 0 = libcurl's default (300 s).
    public var connectTimeout: Double
    /// Seconds for a whole request, connection included; 0 = no limit.
    public var requestTimeout: Double
    /// nil = no low-speed check.
    public var lowSpeed: LowSpeedLimit?

    public init(
        apiRoot: String, credentials: CSCredentials = .none, tls: TLSPolicy = .verify,
        connectTimeout: Double = 10, requestTimeout: Double = 30,
        lowSpeed: LowSpeedLimit? = .stalled
    ) {
        self.apiRoot = apiRoot
        self.credentials = credentials
        self.tls = tls
        self.connectTimeout = connectTimeout
        self.requestTimeout = requestTimeout
        self.lowSpeed = lowSpeed
    }
}

/// Why an `HTTPClient` could not be created. Each case names what was wrong and what to change.
public enum HTTPClientError: Error, Equatable, CustomStringConvertible {
    case invalidAPIRoot(String)
    case unreadableCertificate(path: String, errno: Int32)
    case invalidPin(String)
    case curl(String)
    case eventLoop(SystemError)

    public var description: String {
        switch self {
        case .invalidAPIRoot(let r):
            return "invalid API root '\(r)': expected http://HOST[:PORT]/PATH or https://…, "
                + "e.g. http://192.168.1.10:8181/sensorhub/api"
        case .unreadableCertificate(let p, let e):
            let reason = SystemError("open", errno: e).description.dropFirst("open: ".count)
            return "cannot read the trusted certificate file '\(p)' (\(reason)): "
                + "give the path of the node's PEM certificate, readable by this user"
        case .invalidPin(let p):
            return "invalid public-key pin '\(p)': expected the base64 SHA-256 of the server's "
                + "SubjectPublicKeyInfo (44 characters ending in '='), optionally prefixed with sha256//"
        case .curl(let m):
            return "libcurl: \(m)"
        case .eventLoop(let e):
            return "event loop: \(e)"
        }
    }
}
