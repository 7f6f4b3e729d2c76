import OSHCore

/// A request sent again and again with only its body changing — one datastream's observation
/// POSTs. Its easy handle keeps the URL, method, header list and every other option between
/// requests, so after the first one a request costs a body pointer and length: no
/// curl_easy_reset, no header list rebuilt, no String converted for C.
///
/// Made by `HTTPClient.prepare`, sent with `HTTPClient.send(_:body:completion:)` on that client.
/// Not thread-safe, like the client.
public final class PreparedRequest {
    public let request: CSRequest
    /// The client it belongs to: its handle carries that client's server options (TLS, credentials).
    /// Weak, so a client made later at the same address is not mistaken for it.
    weak var client: HTTPClient?
    /// Configured on the first send (and kept only when the request was sound).
    var transfer: HTTPTransfer?
    /// Requests the kept handle carried after its first (status, tests).
    public internal(set) var reuses = 0

    init(request: CSRequest, client: HTTPClient) {
        self.request = request
        self.client = client
    }
}
