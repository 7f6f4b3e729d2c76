// Size (~930 lines, one type on purpose): libcurl's socket and timer callbacks, the transfer
// table and the loop's registrations are one state machine; its parts mean nothing apart.
import CCurl
import CShim
import OSHCore
#if canImport(Glibc)
import Glibc
#endif

/// HTTP to one OpenSensorHub node on libcurl's multi-socket API, driven by the `EventLoop`
/// (SPEC §1): libcurl tells us which sockets to watch (CURLMOPT_SOCKETFUNCTION) and when it
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
    public let server: HTTPServer
    /// Response bytes kept per request; the rest is read and dropped (`HTTPResult.bodyTruncated`).
    public let maxResponseBody: Int

    private let loop: EventLoop
    private let multi: UnsafeMutableRawPointer
    private var timer: EventLoop.Timer?
    /// When libcurl next wants `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)` (monotonic ns).
    private var curlDeadline: UInt64?
    /// What the loop timer is armed at (nil: disarmed): re-armed only when the deadline moves.
    private var armedAt: UInt64?
    /// Set while we call libcurl from a place that serves its "timeout 0" right after (`callCurl`).
    private var servingZeroTimeout = false
    private var zeroTimeoutWanted = false
    /// Loop timer (re)arms, for tests: a steady stream of requests should not move it per request.
    public private(set) var timerArms = 0
    private var sockets: [Int32: WatchedSocket] = [:]
    private var active: [HTTPTransfer] = []
    /// Started while `maxActive` transfers were in libcurl; handed over in order as they finish.
    private var waiting: [HTTPTransfer] = []
    private let maxActive: Int
    private var idle: [HTTPTransfer] = []
    /// Requests that failed before reaching libcurl; delivered from the loop.
    private var ready: [FinishedRequest] = []
    /// `ready`'s twin while its completions run: both keep their capacity.
    private var delivering: [FinishedRequest] = []
    private var nextID: UInt64 = 1
    private let poolLimit: Int

    // Per-server constants, computed once.
    private let root: [UInt8]          // API root, trimmed, without trailing '/'
    private let originLower: [UInt8]   // scheme://authority, lowercased
    private let origin: String         // scheme://authority, as configured (for messages)
    private let isHTTPS: Bool
    private let authorizationLine: String?
    private let pin: String?
    /// "User-Agent: …" as a header line: CURLOPT_USERAGENT would make libcurl format it anew per request.
    private let userAgentLine: String?
    private let connectTimeoutMs: Int
    private let requestTimeoutMs: Int

    // Scratch reused for every request.
    private var urlScratch: [UInt8] = []
    private var lineScratch: [UInt8] = []

    /// The last event-loop failure while registering a libcurl socket or timer (such a transfer
    /// then ends by its timeout). For status output.
    public private(set) var lastLoopError: String?

    /// curl_global_init, once per process, before the first handle.
    private static let curlReady: Bool = osh_curl_global_init_default() == CURLE_OK

    /// A placeholder pin no key hashes to: makes libcurl report the server's real key hash.
    private static let probePin = "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="

    public init(loop: EventLoop, server: HTTPServer, maxResponseBody: Int = 1 << 20,
                maxHostConnections: Int = 2, handlePool: Int = 8, userAgent: String = "osh-edge") throws {
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
            guard let p = Self.normalisePin(b64) else { throw HTTPClientError.invalidPin(b64) }
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
    public func send(_ request: CSRequest, body: UnsafeRawBufferPointer? = nil,
                     completion: @escaping (HTTPResult) -> Void) -> TransferID {
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
    public func send(_ prepared: PreparedRequest, body: UnsafeRawBufferPointer? = nil,
                     completion: @escaping (HTTPResult) -> Void) -> TransferID {
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
    private func launch(_ completion: @escaping (HTTPResult) -> Void, refusal: String? = nil, on given: HTTPTransfer? = nil,
                        setUp: (HTTPTransfer) -> String?) -> TransferID {
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
                completion(.failure(r.error ?? TransportError(kind: .other, message: "libcurl reported no public key",
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

    // MARK: Request set-up

    private func obtainTransfer() -> HTTPTransfer? {
        if let t = idle.popLast() {
            t.bodyLimit = maxResponseBody
            return t
        }
        return HTTPTransfer(bodyLimit: maxResponseBody)
    }

    private func start(_ t: HTTPTransfer, _ completion: @escaping (HTTPResult) -> Void) {
        t.completion = completion
        if active.count >= maxActive {
            waiting.append(t)
            return
        }
        handOver(t)
    }

    /// Adds a started transfer to libcurl.
    private func handOver(_ t: HTTPTransfer) {
        guard let completion = t.completion else { return }
        var rc = CURLM_OK
        callCurl { rc = curl_multi_add_handle(multi, t.easy) }
        guard rc == CURLM_OK else {
            t.completion = nil
            recycle(t)
            fail(completion, .other, "curl_multi_add_handle failed: " + String(cString: curl_multi_strerror(rc)))
            return
        }
        active.append(t)
        // The first step ran inside callCurl; what it finished (a refused connection) completes
        // from the loop, never inside send.
        drainCompletions(deliver: false)
    }

    /// Hands waiting transfers to libcurl while there is room.
    private func handOverWaiting() {
        while active.count < maxActive, !waiting.isEmpty {
            handOver(waiting.removeFirst())
        }
    }

    /// Sets every option of one request on a blank handle. Returns what is wrong with the request, if anything.
    private func configure(_ t: HTTPTransfer, _ request: CSRequest, _ body: UnsafeRawBufferPointer?) -> String? {
        if let problem = buildURL(request.path) { return problem }
        var s = OptionSetter(t.easy)
        commonOptions(&s, t)
        urlScratch.withUnsafeBufferPointer { u in
            u.withMemoryRebound(to: CChar.self) { s.cstr(CURLOPT_URL, $0.baseAddress, "CURLOPT_URL") }
        }
        s.long(CURLOPT_TIMEOUT_MS, requestTimeoutMs, "CURLOPT_TIMEOUT_MS")
        if let low = server.lowSpeed, low.bytesPerSecond > 0, low.seconds > 0 {
            s.long(CURLOPT_LOW_SPEED_LIMIT, low.bytesPerSecond, "CURLOPT_LOW_SPEED_LIMIT")
            s.long(CURLOPT_LOW_SPEED_TIME, low.seconds, "CURLOPT_LOW_SPEED_TIME")
        }
        s.long(CURLOPT_TCP_KEEPALIVE, 1, "CURLOPT_TCP_KEEPALIVE")
        s.ptr(CURLOPT_WRITEDATA, Unmanaged.passUnretained(t).toOpaque(), "CURLOPT_WRITEDATA")
        s.writeCallback(CURLOPT_WRITEFUNCTION, { data, size, count, userdata -> Int in
            let n = size &* count
            guard let data, let userdata else { return n }
            Unmanaged<HTTPTransfer>.fromOpaque(userdata).takeUnretainedValue()
                .onBody(UnsafeRawBufferPointer(start: data, count: n))
            return n
        }, "CURLOPT_WRITEFUNCTION")
        s.ptr(CURLOPT_HEADERDATA, Unmanaged.passUnretained(t).toOpaque(), "CURLOPT_HEADERDATA")
        s.writeCallback(CURLOPT_HEADERFUNCTION, { data, size, count, userdata -> Int in
            let n = size &* count
            guard let data, let userdata else { return n }
            Unmanaged<HTTPTransfer>.fromOpaque(userdata).takeUnretainedValue()
                .onHeader(UnsafeRawBufferPointer(start: data, count: n))
            return n
        }, "CURLOPT_HEADERFUNCTION")

        if isHTTPS {
            switch server.tls {
            case .verify:
                s.long(CURLOPT_SSL_VERIFYPEER, 1, "CURLOPT_SSL_VERIFYPEER")
                s.long(CURLOPT_SSL_VERIFYHOST, 2, "CURLOPT_SSL_VERIFYHOST")
            case .trustCertificate(let path):
                // This file only: the self-signed certificate is trusted for this server and
                // nothing else, and the system CAs play no part for it.
                s.long(CURLOPT_SSL_VERIFYPEER, 1, "CURLOPT_SSL_VERIFYPEER")
                s.long(CURLOPT_SSL_VERIFYHOST, 2, "CURLOPT_SSL_VERIFYHOST")
                s.str(CURLOPT_CAINFO, path, "CURLOPT_CAINFO")
                s.str(CURLOPT_CAPATH, nil, "CURLOPT_CAPATH")
            case .pinnedKey:
                // The pinned key is the identity; chain and name checks would refuse a self-signed node.
                s.long(CURLOPT_SSL_VERIFYPEER, 0, "CURLOPT_SSL_VERIFYPEER")
                s.long(CURLOPT_SSL_VERIFYHOST, 0, "CURLOPT_SSL_VERIFYHOST")
                s.str(CURLOPT_PINNEDPUBLICKEY, pin, "CURLOPT_PINNEDPUBLICKEY")
                pinReporting(&s, t)
            }
        }

        switch request.method {
        case .get:
            s.long(CURLOPT_HTTPGET, 1, "CURLOPT_HTTPGET")
        case .post:
            break
        case .put:
            s.str(CURLOPT_CUSTOMREQUEST, "PUT", "CURLOPT_CUSTOMREQUEST")
        case .delete:
            s.str(CURLOPT_CUSTOMREQUEST, "DELETE", "CURLOPT_CUSTOMREQUEST")
        }
        let hasBody = setBody(&s, t, request, body)
        t.preparedWithBody = hasBody

        if let problem = buildHeaders(t, request, hasBody: hasBody) { return problem }
        s.slist(CURLOPT_HTTPHEADER, t.headers, "CURLOPT_HTTPHEADER")
        return s.problem
    }

    /// Whether `request` sends a body (the header list differs): not GET, and for DELETE only a non-empty one.
    private static func hasBody(_ request: CSRequest, _ body: UnsafeRawBufferPointer?) -> Bool {
        switch request.method {
        case .get: return false
        case .post, .put: return true
        case .delete: return (body.map { $0.count } ?? request.body?.count ?? 0) > 0
        }
    }

    /// The body options: the caller's memory as is, or our copy of request.body. Returns whether
    /// the request has a body.
    @discardableResult
    private func setBody(_ s: inout OptionSetter, _ t: HTTPTransfer, _ request: CSRequest,
                         _ body: UnsafeRawBufferPointer?) -> Bool {
        // For the debug line at completion: a copy of the path's reference, no text built here.
        t.method = request.method
        t.path = request.path
        t.sentBytes = body?.count ?? request.body?.count ?? 0
        guard Self.hasBody(request, body) else { return false }
        var bodyPointer: UnsafeRawPointer = UnsafeRawPointer(t.ownedBody)
        var bodyCount = 0
        if let b = body {
            if let base = b.baseAddress, b.count > 0 {
                bodyPointer = base
                bodyCount = b.count
            }
        } else if let owned = request.body, !owned.isEmpty {
            bodyPointer = t.own(owned)
            bodyCount = owned.count
        }
        // POSTFIELDS points at the bytes (never COPYPOSTFIELDS); an empty body still needs a
        // valid pointer, or libcurl would read the body from stdin.
        s.off(CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(bodyCount), "CURLOPT_POSTFIELDSIZE_LARGE")
        s.ptr(CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: bodyPointer), "CURLOPT_POSTFIELDS")
        return true
    }

    /// Options every transfer gets, probes included.
    private func commonOptions(_ s: inout OptionSetter, _ t: HTTPTransfer) {
        t.errorBuffer[0] = 0
        s.ptr(CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(t.errorBuffer), "CURLOPT_ERRORBUFFER")
        s.long(CURLOPT_NOSIGNAL, 1, "CURLOPT_NOSIGNAL")
        s.str(CURLOPT_PROTOCOLS_STR, "http,https", "CURLOPT_PROTOCOLS_STR")
        s.long(CURLOPT_CONNECTTIMEOUT_MS, connectTimeoutMs, "CURLOPT_CONNECTTIMEOUT_MS")
    }

    /// libcurl prints the server's key hash only in verbose mode; keep that one line, drop the rest.
    private func pinReporting(_ s: inout OptionSetter, _ t: HTTPTransfer) {
        s.ptr(CURLOPT_DEBUGDATA, Unmanaged.passUnretained(t).toOpaque(), "CURLOPT_DEBUGDATA")
        s.debugCallback({ _, type, data, size, userdata -> Int32 in
            guard type == CURLINFO_TEXT, let data, let userdata else { return 0 }
            Unmanaged<HTTPTransfer>.fromOpaque(userdata).takeUnretainedValue()
                .onDebugText(UnsafeRawBufferPointer(start: data, count: size))
            return 0
        })
        s.long(CURLOPT_VERBOSE, 1, "CURLOPT_VERBOSE")
    }

    /// Fills `urlScratch` with the NUL-terminated URL for `path`, or says why it cannot be sent.
    private func buildURL(_ path: String) -> String? {
        urlScratch.removeAll(keepingCapacity: true)
        let u = path.utf8
        for b in u where b <= 0x20 || b == 0x7F {
            return "the path contains a space or a control character; percent-encode it (CSURL.percentEncode)"
        }
        if Self.hasSchemePrefix(u) {
            // An absolute URL is allowed only to this node: the credentials go with every request.
            var i = u.startIndex
            for o in originLower {
                guard i != u.endIndex, HTTPBytes.lower(u[i]) == o else { return Self.foreign(path) }
                i = u.index(after: i)
            }
            if i != u.endIndex, u[i] != UInt8(ascii: "/"), u[i] != UInt8(ascii: "?") { return Self.foreign(path) }
            urlScratch.append(contentsOf: u)
        } else {
            urlScratch.append(contentsOf: root)
            if let first = u.first, first != UInt8(ascii: "/"), first != UInt8(ascii: "?") {
                urlScratch.append(UInt8(ascii: "/"))
            }
            urlScratch.append(contentsOf: u)
        }
        urlScratch.append(0)
        return nil
    }

    private static func foreign(_ path: String) -> String {
        "absolute URL '\(path)' is not on the configured node; refusing to send credentials elsewhere"
    }

    /// Builds the request's curl_slist in order, plus the lines that switch libcurl's defaults off.
    private func buildHeaders(_ t: HTTPTransfer, _ request: CSRequest, hasBody: Bool) -> String? {
        var hasAccept = false, hasContentType = false, hasAuthorization = false, hasUserAgent = false
        for h in request.headers {
            let name = h.name.utf8
            if name.isEmpty { return "a header has an empty name" }
            for b in name where b <= 0x20 || b == UInt8(ascii: ":") || b >= 0x7F {
                return "header name '\(h.name)' contains a space, a colon or a non-ASCII byte"
            }
            for b in h.value.utf8 where b == 13 || b == 10 || b == 0 {
                return "the value of header '\(h.name)' contains a line break"
            }
            if Self.equalsIgnoringCase(name, "accept") { hasAccept = true }
            if Self.equalsIgnoringCase(name, "content-type") { hasContentType = true }
            if Self.equalsIgnoringCase(name, "authorization") { hasAuthorization = true }
            if Self.equalsIgnoringCase(name, "user-agent") { hasUserAgent = true }
            lineScratch.removeAll(keepingCapacity: true)
            lineScratch.append(contentsOf: name)
            if h.value.utf8.contains(where: { !HTTPBytes.isSpace($0) }) {
                lineScratch.append(UInt8(ascii: ":"))
                lineScratch.append(UInt8(ascii: " "))
                lineScratch.append(contentsOf: h.value.utf8)
            } else {
                // "Name:" would remove the header; "Name;" sends it with an empty value.
                lineScratch.append(UInt8(ascii: ";"))
            }
            lineScratch.append(0)
            if !appendLine(t) { return "out of memory building the header list" }
        }
        if !hasAuthorization, let auth = authorizationLine, !appendLine(t, auth) {
            return "out of memory building the header list"
        }
        if !hasUserAgent, let ua = userAgentLine, !appendLine(t, ua) { return "out of memory building the header list" }
        // Without these libcurl adds `Accept: */*` (which turns node errors into HTML or a redirect),
        // `Expect: 100-continue` for large bodies, and a form Content-Type for POSTFIELDS.
        if !hasAccept, !appendLine(t, "Accept:") { return "out of memory building the header list" }
        if hasBody {
            if !appendLine(t, "Expect:") { return "out of memory building the header list" }
            if !hasContentType, !appendLine(t, "Content-Type:") { return "out of memory building the header list" }
        }
        return nil
    }

    private func appendLine(_ t: HTTPTransfer) -> Bool {
        let list = lineScratch.withUnsafeBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { curl_slist_append(t.headers, $0.baseAddress) }
        }
        guard let list else { return false }
        t.headers = list
        return true
    }

    private func appendLine(_ t: HTTPTransfer, _ line: String) -> Bool {
        guard let list = curl_slist_append(t.headers, line) else { return false }
        t.headers = list
        return true
    }

    private static func equalsIgnoringCase(_ u: String.UTF8View, _ word: StaticString) -> Bool {
        guard u.count == word.utf8CodeUnitCount else { return false }
        var i = 0
        for b in u {
            if HTTPBytes.lower(b) != HTTPBytes.lower(word.utf8Start[i]) { return false }
            i += 1
        }
        return true
    }

    private static func hasSchemePrefix(_ u: String.UTF8View) -> Bool {
        for scheme: StaticString in ["http://", "https://"] {
            let n = scheme.utf8CodeUnitCount
            guard u.count >= n else { continue }
            var i = 0
            var match = true
            for b in u.prefix(n) {
                if HTTPBytes.lower(b) != scheme.utf8Start[i] { match = false; break }
                i += 1
            }
            if match { return true }
        }
        return false
    }

    // MARK: Completion

    /// Ends a transfer; `deliver` false queues its completion for the loop (inside `send`).
    private func finish(_ t: HTTPTransfer, code: CURLcode, cancelled: Bool = false, deliver: Bool = true) {
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
    private func recycle(_ t: HTTPTransfer) {
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
            return HTTPResult(status: 0, error: TransportError(kind: .cancelled, message: "cancelled", origin: origin),
                              totalSeconds: seconds, newConnections: connects)
        }
        guard code == CURLE_OK else {
            var osErrno = 0
            _ = osh_curl_easy_getinfo_long(t.easy, CURLINFO_OS_ERRNO, &osErrno)
            var message = t.errorBuffer[0] != 0 ? String(cString: t.errorBuffer) : String(cString: curl_easy_strerror(code))
            while message.last == "\n" || message.last == "\r" { message.removeLast() }
            let kind = Self.classify(code, osErrno: Int32(truncatingIfNeeded: osErrno))
            let error = TransportError(kind: kind, message: message, curlCode: Int(code.rawValue),
                                       osErrno: Int32(truncatingIfNeeded: osErrno), origin: origin,
                                       peerPublicKey: kind == .tls ? t.peerPublicKey : nil)
            return HTTPResult(status: 0, error: error, totalSeconds: seconds, newConnections: connects)
        }
        var status = 0
        _ = osh_curl_easy_getinfo_long(t.easy, CURLINFO_RESPONSE_CODE, &status)
        let n = t.responseBody.count
        let body = n == 0 ? [] : [UInt8](unsafeUninitializedCapacity: n) { dst, count in
            _ = t.responseBody.withUnsafeBufferPointer { dst.initialize(from: $0) }
            count = n
        }
        return HTTPResult(status: status, location: t.location, contentType: t.contentType, body: body,
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
    private func fail(_ completion: @escaping (HTTPResult) -> Void, _ kind: TransportError.Kind, _ message: String) {
        let result = HTTPResult(status: 0, error: TransportError(kind: kind, message: message, origin: origin))
        ready.append(FinishedRequest(result: result, completion: completion))
        armTimer()
    }

    // MARK: Loop integration

    /// CURLMOPT_SOCKETFUNCTION: watch, re-watch or forget one of libcurl's sockets.
    private func watch(fd: Int32, what: Int32) {
        if what == CURL_POLL_REMOVE {
            if let w = sockets.removeValue(forKey: fd) { loop.remove(w.registration) }
            return
        }
        var events: EventLoop.Events = []
        if what & CURL_POLL_IN != 0 { events.insert(.readable) }
        if what & CURL_POLL_OUT != 0 { events.insert(.writable) }
        if let w = sockets[fd] {
            // libcurl reports a socket again when any transfer's interest is recomputed; an
            // unchanged one needs no epoll_ctl.
            if w.events == events { return }
            do {
                try loop.modify(w.registration, events: events)
                sockets[fd]?.events = events
                return
            } catch {
                // The fd was closed and its number reused without a REMOVE: register it afresh.
                loop.remove(w.registration)
                sockets[fd] = nil
            }
        }
        do {
            let r = try loop.add(fd: fd, events: events) { [weak self] e in self?.onSocket(fd: fd, events: e) }
            sockets[fd] = WatchedSocket(registration: r, events: events)
        } catch {
            lastLoopError = "watching libcurl socket \(fd): \(error)"
        }
    }

    private func onSocket(fd: Int32, events: EventLoop.Events) {
        var flags: Int32 = 0
        if events.contains(.readable) { flags |= CURL_CSELECT_IN }
        if events.contains(.writable) { flags |= CURL_CSELECT_OUT }
        if events.contains(.error) || events.contains(.hangup) { flags |= CURL_CSELECT_ERR }
        callCurl {
            var running: Int32 = 0
            _ = curl_multi_socket_action(multi, fd, flags, &running)
        }
        drainCompletions()
    }

    /// Calls libcurl (`body`), then serves at once a "timeout 0" libcurl asked for meanwhile —
    /// what the loop timer would do a moment later, without arming the timerfd and a turn for it
    /// (libcurl asks for 0 on every new transfer). A few rounds at most; a deadline still due
    /// after them is left to the loop timer.
    private func callCurl(_ body: () -> Void) {
        let outer = servingZeroTimeout
        servingZeroTimeout = true
        body()
        var rounds = 0
        while zeroTimeoutWanted, rounds < 3 {
            zeroTimeoutWanted = false
            rounds += 1
            var running: Int32 = 0
            _ = osh_curl_multi_socket_timeout(multi, &running)
        }
        zeroTimeoutWanted = false
        servingZeroTimeout = outer
        armTimer()
    }

    /// CURLMOPT_TIMERFUNCTION: only records the deadline; `callCurl` or the loop's timer acts on it.
    private func curlTimer(ms: Int) {
        // Only the last word counts: "now" followed by a later deadline in the same call is not served.
        if servingZeroTimeout { zeroTimeoutWanted = ms == 0 }
        if ms < 0 {
            curlDeadline = nil
        } else {
            curlDeadline = osh_monotonic_ns() &+ UInt64(ms) &* 1_000_000
            if ms == 0, servingZeroTimeout { return }
        }
        // Inside a call from callCurl the timer is armed once, after it.
        if !servingZeroTimeout { armTimer() }
    }

    private func armTimer() {
        guard let timer else { return }
        // Early failures are delivered at once (an absolute time of 1 ns has passed).
        let at: UInt64? = ready.isEmpty ? curlDeadline.map { max($0, 1) } : 1
        guard at != armedAt else { return }
        // libcurl moves a running transfer's deadline a little later on every read (its low-speed
        // check expires 1 s after the last progress): an armed time that is a little early stays —
        // firing early only re-arms (onTimer) — where re-arming each time would cost a heap move.
        if let at, let armed = armedAt, at > armed {
            let now = osh_monotonic_ns()
            if at &- armed <= max(1_000_000, (at > now ? at &- now : 0) / 64) { return }
        }
        guard let at else {
            loop.disarm(timer)
            armedAt = nil
            return
        }
        do {
            try loop.rearm(timer, at: at)
            armedAt = at
            timerArms &+= 1
        } catch {
            armedAt = nil
            lastLoopError = "arming the libcurl timer: \(error)"
        }
    }

    private func onTimer() {
        // A one-shot: the loop disarmed it before this call.
        armedAt = nil
        if !ready.isEmpty {
            swap(&ready, &delivering)
            for f in delivering { f.completion(f.result) }
            delivering.removeAll(keepingCapacity: true)
        }
        if let due = curlDeadline, osh_monotonic_ns() >= due {
            callCurl {
                var running: Int32 = 0
                _ = osh_curl_multi_socket_timeout(multi, &running)
            }
            if curlDeadline == due {
                // libcurl did not move its deadline (its clock had not quite reached it): look again
                // in a millisecond rather than spin, or stop if nothing is left to time.
                curlDeadline = active.isEmpty ? nil : osh_monotonic_ns() &+ 1_000_000
            }
            drainCompletions()
        }
        armTimer()
    }

    /// Collects finished transfers; `deliver` false queues their completions for the loop.
    private func drainCompletions(deliver: Bool = true) {
        var left: Int32 = 0
        while let msg = curl_multi_info_read(multi, &left) {
            guard msg.pointee.msg == CURLMSG_DONE, let easy = msg.pointee.easy_handle else { continue }
            let code = osh_curl_msg_result(msg)
            guard let t = active.first(where: { $0.easy == easy }) else { continue }
            finish(t, code: code, deliver: deliver)
        }
    }

    // MARK: Configuration helpers

    private static func parseRoot(_ apiRoot: String) -> (root: [UInt8], origin: [UInt8], https: Bool)? {
        var bytes = Array(apiRoot.utf8)
        while let f = bytes.first, HTTPBytes.isSpace(f) { bytes.removeFirst() }
        while let l = bytes.last, HTTPBytes.isSpace(l) { bytes.removeLast() }
        while bytes.last == UInt8(ascii: "/") { bytes.removeLast() }
        let u = String(decoding: bytes, as: UTF8.self).utf8
        guard hasSchemePrefix(u) else { return nil }
        let https = HTTPBytes.lower(bytes[4]) == UInt8(ascii: "s")
        let authorityStart = https ? 8 : 7
        var end = authorityStart
        while end < bytes.count, bytes[end] != UInt8(ascii: "/"), bytes[end] != UInt8(ascii: "?"),
              bytes[end] != UInt8(ascii: "#") {
            let b = bytes[end]
            // Credentials belong in HTTPServer.credentials, not in the URL (they would end up in logs).
            if b == UInt8(ascii: "@") || b <= 0x20 || b == 0x7F { return nil }
            end += 1
        }
        guard end > authorityStart else { return nil }
        for b in bytes[end...] where b <= 0x20 || b == 0x7F { return nil }
        return (bytes, Array(bytes[..<end]), https)
    }

    /// `sha256//<44 base64 chars>` from the value with or without its prefix, or nil.
    static func normalisePin(_ value: String) -> String? {
        var v = Substring(value)
        while let f = v.first, f == " " || f == "\t" { v.removeFirst() }
        while let l = v.last, l == " " || l == "\t" || l == "\n" || l == "\r" { v.removeLast() }
        if v.hasPrefix("sha256//") { v = v.dropFirst(8) }
        let u = v.utf8
        guard u.count == 44, u.last == UInt8(ascii: "=") else { return nil }
        for b in u.dropLast() {
            let ok = (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || (b >= 48 && b <= 57)
                || b == UInt8(ascii: "+") || b == UInt8(ascii: "/")
            if !ok { return nil }
        }
        return "sha256//" + v
    }

    /// Seconds as libcurl milliseconds; 0 (or less, or not finite) stays 0, libcurl's "default / no limit".
    private static func milliseconds(_ seconds: Double) -> Int {
        guard seconds.isFinite, seconds > 0 else { return 0 }
        return max(1, Int(min(seconds, 86_400) * 1000))
    }
}

/// A request that ended where its completion may not run (inside `send`, or before reaching
/// libcurl), waiting for the loop. A struct, not a tuple: a closure in a tuple array is re-wrapped
/// (allocated) on every append.
private struct FinishedRequest {
    let result: HTTPResult
    let completion: (HTTPResult) -> Void
}

/// One libcurl socket on the loop, with the interest it is registered for.
private struct WatchedSocket {
    let registration: EventLoop.Registration
    var events: EventLoop.Events
}

/// Sets options on one easy handle and keeps the first refusal, named, for the error message.
private struct OptionSetter {
    let easy: UnsafeMutableRawPointer
    private(set) var problem: String?

    init(_ easy: UnsafeMutableRawPointer) { self.easy = easy }

    private mutating func check(_ rc: CURLcode, _ name: StaticString) {
        guard rc != CURLE_OK, problem == nil else { return }
        problem = "libcurl refused \(name): \(String(cString: curl_easy_strerror(rc)))"
            + (rc == CURLE_NOT_BUILT_IN || rc == CURLE_UNKNOWN_OPTION
                ? " (this libcurl lacks the feature; osh-edge needs libcurl 7.88 or later built with OpenSSL)" : "")
    }

    mutating func long(_ o: CURLoption, _ v: Int, _ name: StaticString) {
        check(osh_curl_easy_setopt_long(easy, o, v), name)
    }

    mutating func off(_ o: CURLoption, _ v: curl_off_t, _ name: StaticString) {
        check(osh_curl_easy_setopt_off(easy, o, v), name)
    }

    mutating func cstr(_ o: CURLoption, _ v: UnsafePointer<CChar>?, _ name: StaticString) {
        check(osh_curl_easy_setopt_str(easy, o, v), name)
    }

    mutating func str(_ o: CURLoption, _ v: String?, _ name: StaticString) {
        if let v {
            check(osh_curl_easy_setopt_str(easy, o, v), name)
        } else {
            check(osh_curl_easy_setopt_str(easy, o, nil), name)
        }
    }

    mutating func ptr(_ o: CURLoption, _ v: UnsafeMutableRawPointer?, _ name: StaticString) {
        check(osh_curl_easy_setopt_ptr(easy, o, v), name)
    }

    mutating func slist(_ o: CURLoption, _ v: UnsafeMutablePointer<curl_slist>?, _ name: StaticString) {
        check(osh_curl_easy_setopt_slist(easy, o, v), name)
    }

    mutating func writeCallback(_ o: CURLoption, _ cb: curl_write_callback?, _ name: StaticString) {
        check(osh_curl_easy_setopt_write_cb(easy, o, cb), name)
    }

    mutating func debugCallback(_ cb: curl_debug_callback?) {
        check(osh_curl_easy_setopt_debug_cb(easy, cb), "CURLOPT_DEBUGFUNCTION")
    }
}
