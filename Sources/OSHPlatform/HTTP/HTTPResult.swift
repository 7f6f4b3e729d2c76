/// Identifies one `HTTPClient.send`; pass it to `cancel(_:)`.
public struct TransferID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "transfer#" + String(rawValue) }
}

/// What a request came back with: the node's answer, or why there is none.
public struct HTTPResult: Sendable, Equatable {
    /// The HTTP status, or 0 when the transfer failed (`error` says why).
    public var status: Int
    /// The `Location` response header (create responses), as sent.
    public var location: String?
    public var contentType: String?
    /// The first `HTTPClient.maxResponseBody` bytes of the response body.
    public var body: [UInt8]
    /// More body arrived than was kept.
    public var bodyTruncated: Bool
    public var error: TransportError?
    /// Wall time of the transfer (queueing, connect, TLS, request and response).
    public var totalSeconds: Double
    /// New connections this transfer opened: 0 when it reused a kept-alive one.
    public var newConnections: Int

    public init(
        status: Int, location: String? = nil, contentType: String? = nil, body: [UInt8] = [],
        bodyTruncated: Bool = false, error: TransportError? = nil, totalSeconds: Double = 0,
        newConnections: Int = 0
    ) {
        self.status = status
        self.location = location
        self.contentType = contentType
        self.body = body
        self.bodyTruncated = bodyTruncated
        self.error = error
        self.totalSeconds = totalSeconds
        self.newConnections = newConnections
    }

    /// A 2xx answer.
    public var isSuccess: Bool { error == nil && (200..<300).contains(status) }
}

/// A transfer that produced no HTTP answer.
public struct TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// TCP connection refused or the host/network unreachable.
        case connect
        /// The host name did not resolve.
        case dns
        /// Connect timeout, request timeout, or the low-speed limit.
        case timeout
        /// TLS handshake or certificate verification failed (see `peerPublicKey`).
        case tls
        /// The node closed or reset the connection without (a complete) answer.
        case reset
        /// Reading the answer failed.
        case recv
        /// Sending the request failed.
        case send
        /// The request could not be started (bad URL, header or option); nothing was sent.
        case invalidRequest
        /// `cancel` / `cancelAll`.
        case cancelled
        case other
    }

    public var kind: Kind
    /// libcurl's own message (CURLOPT_ERRORBUFFER, else curl_easy_strerror), or ours.
    public var message: String
    /// The CURLcode, 0 for errors raised by the client itself.
    public var curlCode: Int
    /// errno of the failed socket call when libcurl recorded one, else 0.
    public var osErrno: Int32
    /// The URL's `scheme://host[:port]` (never the path or credentials).
    public var origin: String
    /// TLS: the server key as `sha256//<base64>` when libcurl reported it (`.pinnedKey` servers
    /// and `HTTPClient.probePublicKey`); paste it into a pin to trust this exact key.
    public var peerPublicKey: String?

    public init(
        kind: Kind, message: String, curlCode: Int = 0, osErrno: Int32 = 0, origin: String = "",
        peerPublicKey: String? = nil
    ) {
        self.kind = kind
        self.message = message
        self.curlCode = curlCode
        self.osErrno = osErrno
        self.origin = origin
        self.peerPublicKey = peerPublicKey
    }

    /// What failed, libcurl's words, and what to check.
    public var description: String {
        let at = origin.isEmpty ? "the node" : origin
        switch kind {
        case .connect:
            return "cannot connect to \(at): \(message) — is the node running, listening on that port, and reachable from this board?"
        case .dns:
            return "cannot resolve the host of \(at): \(message) — check the host name in the API root and the board's DNS"
        case .timeout:
            return "\(at) did not answer in time: \(message) — the node or the network is slow or down"
        case .tls:
            // OpenSSL's reading of a plain-HTTP answer to its ClientHello.
            if message.lowercased().hasSubstring("wrong version number") {
                return "\(at) does not speak TLS on that port (\(message)): it answers plain HTTP — use http:// in the URL, "
                    + "or the port where the node serves HTTPS"
            }
            // A plain-HTTP server that just closes on a ClientHello (libmicrohttpd does).
            let m = message.lowercased()
            if m.hasSubstring("ssl_error_syscall") || m.hasSubstring("unexpected eof") {
                return "\(at) closed the connection during the TLS handshake (\(message)) — if that port serves plain HTTP, "
                    + "use http:// in the URL; otherwise the node's TLS setup is failing"
            }
            var s = "TLS with \(at) failed: \(message) — "
            if let key = peerPublicKey {
                s += "the server's public key is \(key); pin it if this is your node, "
            } else {
                s += "for a node with a self-signed certificate, trust that certificate or pin its public key; "
            }
            return s + "otherwise check the node's certificate and the board's clock"
        case .reset:
            // A TLS port closes on a plain-HTTP request without a byte: libcurl's "Empty reply".
            if origin.lowercased().hasPrefix("http://"), message.lowercased().hasSubstring("empty reply") {
                return "\(at) closed the connection without answering (\(message)) — if that port serves HTTPS, use https:// "
                    + "in the URL; otherwise the node is restarting or failing"
            }
            return
                "\(at) closed the connection without a complete answer: \(message) — the node may be restarting or a proxy cut the request"
        case .recv:
            return "reading the answer from \(at) failed: \(message)"
        case .send:
            return "sending the request to \(at) failed: \(message)"
        case .invalidRequest:
            return "request not sent to \(at): \(message)"
        case .cancelled:
            return "request to \(at) cancelled"
        case .other:
            return "request to \(at) failed: \(message)"
        }
    }
}
