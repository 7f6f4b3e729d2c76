// libcurl's socket and timer callbacks, the transfer table and the loop's registrations: one
// state machine. How a request is set up on a handle is in HTTPRequestSetup.swift.
import CCurl
import CShim
import OSHCore
#if canImport(Glibc)
import Glibc
#endif

/// HTTP to one OpenSensorHub node on libcurl's multi-socket API, driven by the `EventLoop`
///: libcurl tells us which sockets to watch (CURLMOPT_SOCKETFUNCTION) and when it
/// next needs the clock (CURLMOPT_TIMERFUNCTION); the loop tells libcurl what became ready
/// (`curl_multi_socket_action`); finished transfers are collected with `curl_multi_info_read`.
///
/// Single-threaded: create it, call it and let it complete on the loop's thread. Completions
/// always run from the loop (never inside `send`), except for `cancel`/`cancelAll`, which
/// complete the cancelled transfers before they return.
///
/// Connections are kept alive in the multi handle's cache (at most `maxHostConnections` to the
/// node). Requests beyond that many wait in the client, not in libcurl: a transfer libcurl holds
/// pending parses its URL and builds a connection to match again each time it is woken. A waiting
/// request's timeout starts when it is handed to libcurl. Easy handles, header and body buffers are
/// pooled. A request sent again and again (a datastream's observations) keeps its own configured
/// handle (`prepare`), so per request only its body is set; libcurl still allocates its own
/// per-transfer state.
public final class HTTPClient {
    public let server: NodeEndpoint
    /// Response bytes kept per request; the rest is read and dropped (`HTTPResult.bodyTruncated`).
    public let maxResponseBody: Int

    let loop: EventLoop
    let multi: UnsafeMutableRawPointer
    var timer: EventLoop.Timer?
    /// When libcurl next wants `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)` (monotonic ns).
    var curlDeadline: UInt64?
    /// What the loop timer is armed at (nil: disarmed): re-armed only when the deadline moves.
    var armedAt: UInt64?
    /// Set while we call libcurl from a place that serves its "timeout 0" right after (`callCurl`).
    var servingZeroTimeout = false
    var zeroTimeoutWanted = false
    /// Loop timer (re)arms, for tests: a steady stream of requests should not move it per request.
    public internal(set) var timerArms = 0
    var sockets: [Int32: WatchedSocket] = [:]
    var active: [HTTPTransfer] = []
    /// Started while `maxActive` transfers were in libcurl; handed over in order as they finish.
    var waiting: [HTTPTransfer] = []
    let maxActive: Int
    var idle: [HTTPTransfer] = []
    /// Requests that failed before reaching libcurl; delivered from the loop.
    var ready: [FinishedRequest] = []
    /// `ready`'s twin while its completions run: both keep their capacity.
    var delivering: [FinishedRequest] = []
    private var nextID: UInt64 = 1
    private let poolLimit: Int

    // Per-server constants, computed once.
    let root: [UInt8]  // API root, trimmed, without trailing '/'
    let originLower: [UInt8]  // scheme://authority, lowercased
    private let origin: String  // scheme://authority, as configured (for messages)
    let isHTTPS: Bool
    let authorizationLine: String?
    let pin: String?
    /// "User-Agent: …" as a header line: CURLOPT_USERAGENT would make libcurl format it anew per request.
    let userAgentLine: String?
    let connectTimeoutMs: Int
    let requestTimeoutMs: Int

    // Scratch reused for every request.
    var urlScratch: [UInt8] = []
    var lineScratch: [UInt8] = []

    /// The last event-loop failure while registering a libcurl socket or timer (such a transfer
    /// then ends by its timeout). For status output.
    public internal(set) var lastLoopError: String?

    /// curl_global_init, once per process, before the first handle.
    private static let curlReady: Bool = osh_curl_global_init_default() == CURLE_OK

    /// A placeholder pin no key hashes to: makes libcurl report the server's real key hash.
    private static let probePin = "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="

    public init(
        loop: EventLoop, server: NodeEndpoint, maxResponseBody: Int = 1 << 20,
        maxHostConnections: Int = 2, handlePool: Int = 8, userAgent: String = "osh-edge"
    ) throws {
        guard Self.curlReady else { throw HTTPClientError.curl("curl_global_init failed (out of memory or a broken TLS library)") }
        guard let parsed = Self.parseRoot(server.apiRoot) else { throw HTTPClientError.invalidAPIRoot(server.apiRoot) }
        var pinValue: String?
        switch server.tls {
        case .verify:
            break
        case .trustCertificate(let path):
            guard access(path, R_OK) == 0 else {
                throw HTTPClientError.unreadableCertificate(path: path, errno: Glibc.errno)
            }
        case .pinnedKey(let b64):
            guard let p = KeyPins.curlForm(b64) else { throw HTTPClientError.invalidPin(b64) }
            pinValue = p
        }
        guard let m = curl_multi_init() else { throw HTTPClientError.curl("curl_multi_init failed (out of memory)") }

        self.loop = loop
        self.server = server
        self.maxResponseBody = max(0, maxResponseBody)
        self.multi = m
        self.poolLimit = max(1, handlePool)
        self.maxActive = max(1, maxHostConnections)
        self.root = parsed.root
        self.originLower = parsed.origin.map(HTTPBytes.lower)
        self.origin = String(decoding: parsed.origin, as: UTF8.self)
        self.isHTTPS = parsed.https
        self.authorizationLine = server.credentials.authorization.map { "Authorization: " + $0 }
        self.pin = pinValue
        self.userAgentLine = userAgent.isEmpty ? nil : "User-Agent: " + userAgent
        self.connectTimeoutMs = Self.milliseconds(server.connectTimeout)
        self.requestTimeoutMs = Self.milliseconds(server.requestTimeout)
        urlScratch.reserveCapacity(256)
        lineScratch.reserveCapacity(256)
        active.reserveCapacity(maxActive)
        waiting.reserveCapacity(16)
        idle.reserveCapacity(poolLimit)

        let me = Unmanaged.passUnretained(self).toOpaque()
        _ = osh_curl_multi_setopt_ptr(m, CURLMOPT_SOCKETDATA, me)
        _ = osh_curl_multi_setopt_socket_cb(m) { _, fd, what, userp, _ -> Int32 in
            guard let userp else { return 0 }
            Unmanaged<HTTPClient>.fromOpaque(userp).takeUnretainedValue().watch(fd: fd, what: what)
            return 0
        }
        _ = osh_curl_multi_setopt_ptr(m, CURLMOPT_TIMERDATA, me)
        _ = osh_curl_multi_setopt_timer_cb(m) { _, timeoutMs, userp -> Int32 in
            guard let userp else { return 0 }
            Unmanaged<HTTPClient>.fromOpaque(userp).takeUnretainedValue().curlTimer(ms: timeoutMs)
            return 0
        }
        _ = osh_curl_multi_setopt_long(m, CURLMOPT_MAX_HOST_CONNECTIONS, max(1, maxHostConnections))

        do {
            let t = try loop.addTimer(firstAt: EventLoop.deadline(after: 3600)) { [weak self] _ in self?.onTimer() }
            loop.disarm(t)
            timer = t
        } catch let e as SystemError {
            throw HTTPClientError.eventLoop(e)
        }
    }

    deinit {
        // Nothing may call back into a half-destroyed client.
        _ = osh_curl_multi_setopt_socket_cb(multi, nil)
        _ = osh_curl_multi_setopt_timer_cb(multi, nil)
        for (_, w) in sockets { loop.remove(w.registration) }
        sockets.removeAll()
        if let timer { loop.cancel(timer) }
        // libcurl's order: remove every easy handle, clean them up, then the multi handle.
        for t in active { curl_multi_remove_handle(multi, t.easy) }
        active.removeAll()
        waiting.removeAll()
        idle.removeAll()
        curl_multi_cleanup(multi)
    }

    /// Requests started and not yet completed.
    public var inFlight: Int { active.count + waiting.count + ready.count }

    /// Open libcurl sockets watched on the loop (tests, status).
    public var watchedSockets: Int { sockets.count }

    // MARK: Sending

    /// Sends `request` to the node; `completion` runs on the loop with the answer or the failure.
    ///
    /// The body is `body` when given — sent straight from the caller's memory, which must stay
    /// valid and unchanged until `completion` runs — else `request.body`, copied into a buffer the
    /// client reuses. GET sends no body. Headers go out in `request.headers` order; the server's
    /// credentials are added when the request has no `Authorization`. libcurl's own defaults are
    /// suppressed: no `Expect: 100-continue`, no form `Content-Type`, no `Accept: */*`.
    @discardableResult
    public func send(
        _ request: CSRequest, body: UnsafeRawBufferPointer? = nil,
        completion: @escaping (HTTPResult) -> Void
    ) -> TransferID {
        launch(completion) { configure($0, request, body) }
    }

    /// `request` for sending again and again with `send(_:body:completion:)`: checked and
    /// configured on its first send, then only the body is set per request.
    public func prepare(_ request: CSRequest) -> PreparedRequest {
        PreparedRequest(request: request, client: self)
    }

    /// Sends `prepared.request` as `send(_:body:completion:)` does, on the handle kept for it: after
    /// the first request only the body (pointer and length) is set. While that handle is busy (a
    /// second request before the first completed) a pooled handle carries the request.
    @discardableResult
    public func send(
        _ prepared: PreparedRequest, body: UnsafeRawBufferPointer? = nil,
        completion: @escaping (HTTPResult) -> Void
    ) -> TransferID {
        guard prepared.client === self else {
            return launch(completion, refusal: "the prepared request was made by another HTTPClient; prepare it on this one") { _ in nil }
        }
        let request = prepared.request
        guard let t = prepared.transfer else {
            // First send: configure a handle of its own and keep it if the request is sound.
            guard let fresh = HTTPTransfer(bodyLimit: maxResponseBody) else {
                return launch(completion) { configure($0, request, body) }
            }
            fresh.isPrepared = true
            return launch(completion, on: fresh) { t in
                let problem = configure(t, request, body)
                if problem == nil { prepared.transfer = t }
                return problem
            }
        }
        // Busy, or a DELETE whose body comes or goes (its header list differs): a pooled handle.
        guard t.completion == nil, t.preparedWithBody == Self.hasBody(request, body) else {
            return launch(completion) { configure($0, request, body) }
        }
        t.bodyLimit = maxResponseBody
        prepared.reuses &+= 1
        return launch(completion, on: t) { t in
            var s = OptionSetter(t.easy)
            setBody(&s, t, request, body)
            return s.problem
        }
    }

    /// Mints the transfer's id, then: `refusal`, or no transfer to be had, or a problem `setUp`
    /// reports fails the request without sending it; else the transfer starts. `given`: a
    /// prepared request's own handle, else one from the pool.
    private func launch(
        _ completion: @escaping (HTTPResult) -> Void, refusal: String? = nil, on given: HTTPTransfer? = nil,
        setUp: (HTTPTransfer) -> String?
    ) -> TransferID {
        let id = TransferID(rawValue: nextID)
        nextID &+= 1
        if let refusal {
            fail(completion, .invalidRequest, refusal)
            return id
        }
        guard let t = given ?? obtainTransfer() else {
            fail(completion, .other, "curl_easy_init failed (out of memory)")
            return id
        }
        t.id = id.rawValue
        if let problem = setUp(t) {
            recycle(t)
            fail(completion, .invalidRequest, problem)
            return id
        }
        start(t, completion)
        return id
    }

    /// Connects to the node with certificate checks off, only to learn its public key
    /// (`sha256//<base64>`, what `.pinnedKey` takes). Sends no request and no credentials. For
    /// `osh-edge check` when a TLS error says the certificate is not trusted; the answer is only as
    /// trustworthy as the network it came over.
    @discardableResult
    public func probePublicKey(completion: @escaping (Result<String, TransportError>) -> Void) -> TransferID {
        let origin = self.origin
        let done: (HTTPResult) -> Void = { r in
            if let key = r.error?.peerPublicKey {
                completion(.success(key))
            } else {
                completion(
                    .failure(
                        r.error
                            ?? TransportError(
                                kind: .other, message: "libcurl reported no public key",
                                origin: origin)))
            }
        }
        return launch(done, refusal: isHTTPS ? nil : "the API root is not https; there is no key to pin") { t in
            var s = OptionSetter(t.easy)
            commonOptions(&s, t)
            s.str(CURLOPT_URL, origin, "CURLOPT_URL")
            s.long(CURLOPT_CONNECT_ONLY, 1, "CURLOPT_CONNECT_ONLY")
            s.long(CURLOPT_TIMEOUT_MS, connectTimeoutMs, "CURLOPT_TIMEOUT_MS")
            s.long(CURLOPT_SSL_VERIFYPEER, 0, "CURLOPT_SSL_VERIFYPEER")
            s.long(CURLOPT_SSL_VERIFYHOST, 0, "CURLOPT_SSL_VERIFYHOST")
            s.str(CURLOPT_PINNEDPUBLICKEY, Self.probePin, "CURLOPT_PINNEDPUBLICKEY")
            pinReporting(&s, t)
            return s.problem
        }
    }

    /// Cancels one transfer; its completion runs now with `.cancelled`. False if it already completed.
    @discardableResult
    public func cancel(_ id: TransferID) -> Bool {
        if let i = waiting.firstIndex(where: { $0.id == id.rawValue }) {
            dropWaiting(waiting.remove(at: i))
            return true
        }
        guard let t = active.first(where: { $0.id == id.rawValue }) else { return false }
        finish(t, code: CURLE_OK, cancelled: true)
        return true
    }

    /// Cancels every transfer, waiting or in libcurl; their completions run now with `.cancelled`.
    /// Afterwards libcurl holds no pointer into any caller's body.
    public func cancelAll() {
        // The waiting first, so none is handed to libcurl as the active ones end.
        let queued = waiting
        waiting.removeAll()
        for t in queued { dropWaiting(t) }
        let victims = active
        for t in victims where active.contains(where: { $0 === t }) {
            finish(t, code: CURLE_OK, cancelled: true)
        }
    }

    /// Completes a request that never reached libcurl as cancelled.
    private func dropWaiting(_ t: HTTPTransfer) {
        let completion = t.completion
        recycle(t)
        completion?(HTTPResult(status: 0, error: TransportError(kind: .cancelled, message: "cancelled", origin: origin)))
    }

    // MARK: Completion

    /// Ends a transfer; `deliver` false queues its completion for the loop (inside `send`).
    func finish(_ t: HTTPTransfer, code: CURLcode, cancelled: Bool = false, deliver: Bool = true) {
        let result = makeResult(t, code: code, cancelled: cancelled)
        if Log.isDebug { Log.debug(Self.debugLine(t, result)) }
        curl_multi_remove_handle(multi, t.easy)
        if let i = active.firstIndex(where: { $0 === t }) { active.remove(at: i) }
        let completion = t.completion
        recycle(t)
        handOverWaiting()
        guard let completion else { return }
        if deliver {
            completion(result)
        } else {
            ready.append(FinishedRequest(result: result, completion: completion))
            armTimer()
        }
    }

    /// `[log] level = "debug"`: each request's method, path, status, sizes and latency, and what
    /// the node said when it refused.
    static func debugLine(_ t: HTTPTransfer, _ r: HTTPResult) -> String {
        var line = "HTTP \(t.method.rawValue) \(t.path) → "
        if let e = r.error { line += "failed: \(e)" } else { line += "\(r.status)" }
        line += ", sent \(t.sentBytes) B, received \(r.body.count) B in \(Int((r.totalSeconds * 1000).rounded())) ms"
        if r.newConnections > 0 { line += " (new connection)" }
        if r.error == nil, r.status >= 400 {
            line += ": " + String(decoding: r.body.prefix(400), as: UTF8.self).split(whereSeparator: \.isNewline).joined(separator: " ")
        }
        return line
    }

    /// A prepared request's handle keeps its options; any other goes back to the pool blank.
    func recycle(_ t: HTTPTransfer) {
        if t.isPrepared {
            t.clearResponse()
            return
        }
        t.recycle()
        if idle.count < poolLimit { idle.append(t) }
    }

    private func makeResult(_ t: HTTPTransfer, code: CURLcode, cancelled: Bool) -> HTTPResult {
        var micros: curl_off_t = 0
        _ = osh_curl_easy_getinfo_off(t.easy, CURLINFO_TOTAL_TIME_T, &micros)
        var connects = 0
        _ = osh_curl_easy_getinfo_long(t.easy, CURLINFO_NUM_CONNECTS, &connects)
        let seconds = Double(micros) / 1e6
        if cancelled {
            return HTTPResult(
                status: 0, error: TransportError(kind: .cancelled, message: "cancelled", origin: origin),
                totalSeconds: seconds, newConnections: connects)
        }
        guard code == CURLE_OK else {
            var osErrno = 0
            _ = osh_curl_easy_getinfo_long(t.easy, CURLINFO_OS_ERRNO, &osErrno)
            var message = t.errorBuffer[0] != 0 ? String(cString: t.errorBuffer) : String(cString: curl_easy_strerror(code))
            while message.last == "\n" || message.last == "\r" { message.removeLast() }
            let kind = Self.classify(code, osErrno: Int32(truncatingIfNeeded: osErrno))
            let error = TransportError(
                kind: kind, message: message, curlCode: Int(code.rawValue),
                osErrno: Int32(truncatingIfNeeded: osErrno), origin: origin,
                peerPublicKey: kind == .tls ? t.peerPublicKey : nil)
            return HTTPResult(status: 0, error: error, totalSeconds: seconds, newConnections: connects)
        }
        var status = 0
        _ = osh_curl_easy_getinfo_long(t.easy, CURLINFO_RESPONSE_CODE, &status)
        let n = t.responseBody.count
        let body =
            n == 0
            ? []
            : [UInt8](unsafeUninitializedCapacity: n) { dst, count in
                _ = t.responseBody.withUnsafeBufferPointer { dst.initialize(from: $0) }
                count = n
            }
        return HTTPResult(
            status: status, location: t.location, contentType: t.contentType, body: body,
            bodyTruncated: t.bodyTruncated, totalSeconds: seconds, newConnections: connects)
    }

    static func classify(_ code: CURLcode, osErrno: Int32) -> TransportError.Kind {
        switch code {
        case CURLE_COULDNT_CONNECT:
            return .connect
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .dns
        case CURLE_OPERATION_TIMEDOUT:
            return .timeout
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS,
            CURLE_SSL_ISSUER_ERROR, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED,
            CURLE_SSL_ENGINE_INITFAILED, CURLE_SSL_SHUTDOWN_FAILED, CURLE_USE_SSL_FAILED, CURLE_SSL_CLIENTCERT:
            return .tls
        case CURLE_GOT_NOTHING:
            return .reset
        case CURLE_RECV_ERROR:
            return osErrno == ECONNRESET ? .reset : .recv
        case CURLE_SEND_ERROR:
            return osErrno == ECONNRESET || osErrno == EPIPE ? .reset : .send
        case CURLE_PARTIAL_FILE:
            return .recv
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            return .invalidRequest
        default:
            return .other
        }
    }

    /// A request that never reached libcurl: completed from the loop, like every other.
    func fail(_ completion: @escaping (HTTPResult) -> Void, _ kind: TransportError.Kind, _ message: String) {
        let result = HTTPResult(status: 0, error: TransportError(kind: kind, message: message, origin: origin))
        ready.append(FinishedRequest(result: result, completion: completion))
        armTimer()
    }

}

/// A request that ended where its completion may not run (inside `send`, or before reaching
/// libcurl), waiting for the loop. A struct, not a tuple: a closure in a tuple array is re-wrapped
/// (allocated) on every append.
struct FinishedRequest {
    let result: HTTPResult
    let completion: (HTTPResult) -> Void
}

/// One libcurl socket on the loop, with the interest it is registered for.
struct WatchedSocket {
    let registration: EventLoop.Registration
    var events: EventLoop.Events
}
