// Size (~520 lines): one connection's life — connect, handshake, frames, ping, reconnect —
// over one libcurl handle whose state every step reads.
//
// A WebSocket client on the EventLoop for the node's command channel.
//
// libcurl 7.88.1 (Debian 12) is built without its experimental WebSocket API (`curl -V` lists no
// ws/wss), so libcurl only sets up the connection (CURLOPT_CONNECT_ONLY: TCP, TLS with the
// server's TLS policy, proxies) and we speak RFC 6455 over it with curl_easy_send/recv, using the
// pure codec in OSHCore/WebSocket. The connect phase runs in a private multi handle stepped by a
// short loop timer, so nothing blocks the loop; afterwards the socket (CURLINFO_ACTIVESOCKET) is
// watched by the loop. The connection is re-established with Backoff after any failure until
// `stop()`.
import CCurl
#if canImport(Glibc)
import Glibc
#endif
import OSHCore

/// Why the channel is down. Each says what failed and what to do.
public enum WebSocketClientError: Error, Sendable, Equatable, CustomStringConvertible {
    case connect(String)
    case handshake(WebSocketHandshakeError)
    /// 401/403 on the upgrade.
    case unauthorized(Int)
    /// 404 on the upgrade: the control stream is gone (a node restarted without a database).
    case notFound(String)
    /// The node keeps one command receiver per control stream and already has one.
    case alreadyConnected(String)
    case protocolViolation(WebSocketFrameError)
    case closedByServer(code: UInt16, reason: String)
    /// The node accepted the upgrade and closed the channel before it proved itself (no message,
    /// less than `Options.stableAfter` open): retried on the growing backoff, like a refused connect.
    case closedRightAfterOpening(code: UInt16, reason: String)
    case connectionLost(String)
    case noPong

    public var description: String {
        switch self {
        case .connect(let m): return "cannot connect to the node for the command channel: " + m
        case .handshake(let e): return e.description
        case .unauthorized(let s):
            return
                "the node refused the command channel with \(s): check the user name and password (the user needs permission to post command status)"
        case .notFound(let m):
            return "the node does not know this control stream (\(m)); it probably restarted without a database — register again"
        case .alreadyConnected(let m):
            return
                "the node already has a command receiver on this control stream (\(m)): another osh-edge registered as this system, or the node has not yet noticed our previous connection drop"
        case .protocolViolation(let e): return "the node broke the WebSocket protocol: " + e.description
        case .closedByServer(let c, let r): return "the node closed the command channel (\(c)\(r.isEmpty ? "" : " " + r))"
        case .closedRightAfterOpening(let c, let r):
            var m = "the node accepted the command channel and closed it at once (close code \(c)\(r.isEmpty ? "" : ": " + r))"
            if r.lowercased().hasSubstring("permission") || r.lowercased().hasSubstring("no user") {
                // osh-core 4c87a65 with security on: the receiver's permission check runs where no
                // user is known (CommandHandler.startRealTimeStream), whatever the user may do.
                m +=
                    "; the node's permission check refused this board as command receiver — give the user the "
                    + "right to create command status, or, if it has it, this is the node's own fault (OSH with "
                    + "security on checks it without the logged-in user)"
            }
            return m + ". Commands will not reach this board until it stays open; observations still flow"
        case .connectionLost(let m): return "the command channel was lost: " + m
        case .noPong: return "the node stopped answering pings on the command channel"
        }
    }

    /// The description without libcurl's elapsed time ("… after 9 ms: …", "… after 5001
    /// milliseconds"), which differs at every attempt: two failures with the same key are the same
    /// failure repeating (for logging each once — `RetryLog`).
    public var repeatKey: String { RetryLog.withoutElapsedTime(description) }
}

public final class WebSocketClient {
    public enum State: Equatable, Sendable {
        case idle, connecting, handshaking, open, closing, waitingToReconnect, stopped
    }

    public struct Options: Sendable {
        public var maxMessageBytes: Int
        public var backoff: Backoff
        /// Seconds between our pings while open; a connection with no traffic for two intervals is
        /// dropped and re-made. 0 disables.
        public var pingInterval: Double
        /// Seconds to wait for the peer's close frame after ours.
        public var closeTimeout: Double
        /// A connection counts as working (the backoff starts again from its first step) once it
        /// delivered a message or stayed open this long; one the node closes sooner is a failure.
        public var stableAfter: Double

        public init(
            maxMessageBytes: Int = 1 << 20, backoff: Backoff = Backoff(initial: 1, maximum: 60),
            pingInterval: Double = 30, closeTimeout: Double = 2, stableAfter: Double = 10
        ) {
            self.maxMessageBytes = maxMessageBytes
            self.backoff = backoff
            self.pingInterval = pingInterval
            self.closeTimeout = closeTimeout
            self.stableAfter = stableAfter
        }
    }

    public let server: NodeEndpoint
    public let request: CSRequest
    public let options: Options
    public private(set) var state: State = .idle
    public private(set) var lastError: WebSocketClientError?
    /// Consecutive failed attempts (0 once a connection opened).
    public var failures: Int { policy.failures }
    /// Counts the failures and says how long to wait (`options.backoff`); the owner logs.
    private var policy: ReconnectPolicy
    /// Connections opened so far.
    public private(set) var opens = 0

    /// The channel works: it delivered a message or stayed open `Options.stableAfter` seconds (a
    /// node that closes it straight after the upgrade never gets here).
    public var onOpen: (() -> Void)?
    /// A text message (the view is valid only during the call).
    public var onText: ((UnsafeRawBufferPointer) -> Void)?
    public var onBinary: ((UnsafeRawBufferPointer) -> Void)?
    /// The channel went down; `retryIn` is nil after `stop()`. The client logs nothing itself: the
    /// owner knows which channel this is and whether it retries (see `RetryLog`, `repeatKey`).
    public var onDown: ((WebSocketClientError?, _ retryIn: Double?) -> Void)?

    private let loop: EventLoop
    private let url: String
    private let target: String
    private let hostHeader: String
    private var multi: UnsafeMutableRawPointer?
    private var easy: UnsafeMutableRawPointer?
    private var stepTimer: EventLoop.Timer?
    private var socketReg: EventLoop.Registration?
    private var key = ""
    private var head: [UInt8] = []
    private var errorBody: [UInt8] = []
    private var failedHead: HTTPHead?
    private let parser: WebSocketFrameParser
    private let out = ByteBuffer(capacity: 4096)
    private var outOffset = 0
    private let inBuf: UnsafeMutableRawBufferPointer
    private var retry: LoopDeadline?
    private var closeDeadline: LoopDeadline?
    private var pingDeadline: LoopDeadline?
    private var stableDeadline: LoopDeadline?
    /// The open connection has proved itself (`Options.stableAfter`).
    private var stable = false
    private var lastTraffic: UInt64 = 0
    private var rng = SystemRandomNumberGenerator()
    /// CURLOPT_ERRORBUFFER: libcurl keeps the pointer, so it lives as long as the client.
    private let errorText: UnsafeMutablePointer<CChar>
    private static let curlReady: Bool = osh_curl_global_init_default() == CURLE_OK

    /// `request` is the CSRequest of the channel (e.g. `CSRequestBuilder.commandChannel`); its
    /// headers (Accept, Authorization) go on the upgrade.
    public init(loop: EventLoop, server: NodeEndpoint, request: CSRequest, options: Options = Options()) throws {
        guard Self.curlReady else { throw HTTPClientError.curl("curl_global_init failed") }
        let full = request.url(apiRoot: server.apiRoot)
        guard let (origin, authority, path) = Self.split(full) else { throw HTTPClientError.invalidAPIRoot(server.apiRoot) }
        self.loop = loop
        self.server = server
        self.request = request
        self.options = options
        policy = ReconnectPolicy(backoff: options.backoff)
        self.url = origin
        self.hostHeader = authority
        self.target = path
        self.parser = WebSocketFrameParser(role: .client, maxMessageBytes: options.maxMessageBytes)
        self.inBuf = .allocate(byteCount: 16 * 1024, alignment: 8)
        self.errorText = .allocate(capacity: 256)
        errorText.initialize(repeating: 0, count: 256)
    }

    deinit {
        teardown()
        inBuf.deallocate()
        errorText.deallocate()
    }

    /// `http://host:port/a/b?q` → (`http://host:port/`, `host:port`, `/a/b?q`).
    static func split(_ url: String) -> (String, String, String)? {
        let lower = url.lowercased()
        let schemeEnd: String.Index
        if lower.hasPrefix("http://") {
            schemeEnd = url.index(url.startIndex, offsetBy: 7)
        } else if lower.hasPrefix("https://") {
            schemeEnd = url.index(url.startIndex, offsetBy: 8)
        } else {
            return nil
        }
        let rest = url[schemeEnd...]
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = String(rest[..<slash])
        guard !authority.isEmpty else { return nil }
        let path = slash == rest.endIndex ? "/" : String(rest[slash...])
        return (String(url[..<schemeEnd]) + authority + "/", authority, path)
    }

    // MARK: Control

    /// Connects now (and again after every failure) until `stop()`.
    public func start() {
        guard state == .idle || state == .stopped else { return }
        state = .idle
        connect()
    }

    /// Closes with 1000 and does not reconnect.
    public func stop() {
        retry?.cancel()
        if state == .open {
            sendClose(WebSocketCloseCode.normal, "")
            state = .stopped
            teardown()
        } else {
            state = .stopped
            teardown()
        }
        onDown?(nil, nil)
    }

    /// Sends a text message (masked). False if the channel is not open.
    @discardableResult
    public func sendText(_ bytes: [UInt8]) -> Bool {
        guard state == .open else { return false }
        bytes.withUnsafeBytes { WebSocketFrameWriter.write(.text, payload: $0, mask: maskKey(), to: out) }
        flush()
        return true
    }

    // MARK: Connect (libcurl CONNECT_ONLY in a private multi handle)

    private func connect() {
        teardown()
        state = .connecting
        guard let m = curl_multi_init(), let e = curl_easy_init() else { return fail(.connect("libcurl: out of memory")) }
        multi = m
        easy = e
        var ok = true
        func long(_ o: CURLoption, _ v: Int) { ok = ok && osh_curl_easy_setopt_long(e, o, v) == CURLE_OK }
        func str(_ o: CURLoption, _ v: String) { ok = ok && osh_curl_easy_setopt_str(e, o, v) == CURLE_OK }
        str(CURLOPT_URL, url)
        long(CURLOPT_CONNECT_ONLY, 1)
        long(CURLOPT_NOSIGNAL, 1)
        long(CURLOPT_TCP_KEEPALIVE, 1)
        // Through an HTTP proxy the upgrade must travel in a CONNECT tunnel, not as a proxied GET.
        long(CURLOPT_HTTPPROXYTUNNEL, 1)
        str(CURLOPT_PROTOCOLS_STR, "http,https")
        if server.connectTimeout > 0 { long(CURLOPT_CONNECTTIMEOUT_MS, Int(server.connectTimeout * 1000)) }
        errorText[0] = 0
        ok = ok && osh_curl_easy_setopt_ptr(e, CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(errorText)) == CURLE_OK
        switch server.tls {
        case .verify:
            break
        case .trustCertificate(let path):
            str(CURLOPT_CAINFO, path)
        case .pinnedKey(let pin):
            long(CURLOPT_SSL_VERIFYPEER, 0)
            long(CURLOPT_SSL_VERIFYHOST, 0)
            str(CURLOPT_PINNEDPUBLICKEY, KeyPins.curlForm(pin) ?? pin)
        }
        guard ok, curl_multi_add_handle(m, e) == CURLM_OK else { return fail(.connect("libcurl refused the connection options")) }
        do {
            stepTimer = try loop.addTimer(firstAt: EventLoop.deadline(after: 0.001), interval: 10_000_000) { [weak self] _ in
                self?.stepConnect()
            }
        } catch {
            fail(.connect("event loop: \(error)"))
        }
    }

    private func stepConnect() {
        guard let m = multi, let e = easy, state == .connecting else { return }
        var running: Int32 = 0
        _ = curl_multi_perform(m, &running)
        var left: Int32 = 0
        while let msg = curl_multi_info_read(m, &left) {
            guard msg.pointee.msg == CURLMSG_DONE else { continue }
            if let t = stepTimer { loop.cancel(t); stepTimer = nil }
            let rc = osh_curl_msg_result(msg)
            guard rc == CURLE_OK else {
                let detail = String(cString: errorText)
                return fail(.connect(detail.isEmpty ? String(cString: curl_easy_strerror(rc)) : detail))
            }
            var fd: curl_socket_t = -1
            guard osh_curl_easy_getinfo_socket(e, &fd) == CURLE_OK, fd >= 0 else {
                return fail(.connect("libcurl gave no socket"))
            }
            startHandshake(fd: fd)
            return
        }
    }

    private func startHandshake(fd: Int32) {
        state = .handshaking
        var random: [UInt8] = []
        for _ in 0..<4 {
            let r = maskKey()
            random += [UInt8(r >> 24), UInt8(r >> 16 & 0xFF), UInt8(r >> 8 & 0xFF), UInt8(r & 0xFF)]
        }
        key = WebSocketHandshake.key(randomBytes: random)
        head = []
        errorBody = []
        failedHead = nil
        parser.reset()
        out.reset()
        outOffset = 0
        let extra = request.headers.filter { $0.name.lowercased() != "content-type" }
        out.append(WebSocketHandshake.request(path: target, host: hostHeader, key: key, extraHeaders: extra))
        do {
            socketReg = try loop.add(fd: fd, events: [.readable]) { [weak self] ev in self?.onSocket(ev) }
        } catch {
            return fail(.connect("event loop: \(error)"))
        }
        flush()
    }

    // MARK: I/O

    private func onSocket(_ ev: EventLoop.Events) {
        if ev.contains(.writable) { flush() }
        guard ev.contains(.readable) || ev.contains(.hangup) || ev.contains(.error) else { return }
        while let e = easy, state == .handshaking || state == .open || state == .closing {
            var n = 0
            let rc = curl_easy_recv(e, inBuf.baseAddress, inBuf.count, &n)
            if rc == CURLE_AGAIN { return }
            guard rc == CURLE_OK else { return fail(.connectionLost(String(cString: curl_easy_strerror(rc)))) }
            if n == 0 { return eof() }
            lastTraffic = Clock.monotonicNanoseconds()
            received(UnsafeRawBufferPointer(rebasing: inBuf[0..<n]))
        }
    }

    private func eof() {
        if state == .handshaking, let h = failedHead { return refused(h) }
        if state == .closing { return closedCleanly() }
        fail(.connectionLost("the node closed the connection without a close frame"))
    }

    private func received(_ bytes: UnsafeRawBufferPointer) {
        if state == .handshaking {
            if let h = failedHead {
                errorBody += bytes.prefix(max(0, 64 * 1024 - errorBody.count))
                if let cl = h.header("Content-Length").flatMap({ Int($0) }), errorBody.count >= cl { refused(h) }
                return
            }
            head += bytes
            guard let end = WebSocketHandshake.headEnd(head) else {
                if head.count > WebSocketHandshake.maxHeadBytes { fail(.handshake(.malformedResponse("head over 16 KiB"))) }
                return
            }
            let parsed: HTTPHead
            do throws(WebSocketHandshakeError) {
                parsed = try WebSocketHandshake.parseHead(head[0..<end])
                if parsed.status != 101 {
                    failedHead = parsed
                    errorBody = Array(head[end...])
                    if let cl = parsed.header("Content-Length").flatMap({ Int($0) }), errorBody.count >= cl { refused(parsed) }
                    return
                }
                try WebSocketHandshake.checkResponse(parsed, key: key)
            } catch {
                return fail(.handshake(error))
            }
            let rest = Array(head[end...])
            head = []
            opened()
            if !rest.isEmpty, state == .open { rest.withUnsafeBytes { frames($0) } }
            return
        }
        frames(bytes)
    }

    private func refused(_ h: HTTPHead) {
        let body = String(decoding: errorBody, as: UTF8.self)
        let message = (try? JSONValue.parse(errorBody))?["message"]?.string ?? body
        switch h.status {
        case 401, 403: fail(.unauthorized(h.status))
        case 404: fail(.notFound(message.isEmpty ? "404" : message))
        default:
            if message.lowercased().hasSubstring("already connected") {
                fail(.alreadyConnected(message))
            } else {
                fail(.handshake(.status(code: h.status, reason: h.reason, body: message)))
            }
        }
    }

    private func opened() {
        state = .open
        stable = false
        opens += 1
        lastTraffic = Clock.monotonicNanoseconds()
        armPing()
        if options.stableAfter > 0 {
            if stableDeadline == nil { stableDeadline = LoopDeadline(loop: loop) { [weak self] in self?.becameStable() } }
            try? stableDeadline?.arm(after: options.stableAfter)
        } else {
            becameStable()
        }
    }

    /// The channel works: the next failure starts a new outage at the backoff's first step.
    private func becameStable() {
        guard state == .open, !stable else { return }
        stable = true
        stableDeadline?.disarm()
        _ = policy.succeeded()
        lastError = nil
        onOpen?()
    }

    private func frames(_ bytes: UnsafeRawBufferPointer) {
        do throws(WebSocketFrameError) {
            try parser.feed(bytes) { [unowned self] event in
                switch event {
                case .text(let p): if state == .open { becameStable(); onText?(p) }
                case .binary(let p): if state == .open { becameStable(); onBinary?(p) }
                case .ping(let p):
                    WebSocketFrameWriter.write(.pong, payload: p, mask: maskKey(), to: out)
                    flush()
                case .pong: break
                case .close(let code, let reason): serverClosed(code, reason)
                }
            }
        } catch {
            sendClose(error.closeCode, "")
            fail(.protocolViolation(error))
        }
    }

    private func serverClosed(_ code: UInt16, _ reason: String) {
        if state == .closing { return closedCleanly() }
        sendClose(code == WebSocketCloseCode.noStatus ? WebSocketCloseCode.normal : code, "")
        if reason.lowercased().hasSubstring("already connected") { return fail(.alreadyConnected(reason)) }
        // A node going away (1001) or refusing what we sent (1007) is not a channel that failed
        // to open; either way only a stable channel resets the backoff.
        let plain = stable || code == WebSocketCloseCode.goingAway || code == WebSocketCloseCode.invalidPayload
        fail(plain ? .closedByServer(code: code, reason: reason) : .closedRightAfterOpening(code: code, reason: reason))
    }

    private func sendClose(_ code: UInt16, _ reason: String) {
        WebSocketFrameWriter.writeClose(code: code, reason: reason, mask: maskKey(), to: out)
        flush()
    }

    /// Sends what is queued; waits for writability when the socket is full.
    private func flush() {
        guard let e = easy else { return }
        while outOffset < out.count {
            var n = 0
            let rc = curl_easy_send(e, out.base + outOffset, out.count - outOffset, &n)
            if rc == CURLE_AGAIN { break }
            guard rc == CURLE_OK else { return fail(.connectionLost(String(cString: curl_easy_strerror(rc)))) }
            outOffset += n
        }
        if outOffset >= out.count {
            out.reset()
            outOffset = 0
        }
        if let r = socketReg {
            try? loop.modify(r, events: out.count > 0 ? [.readable, .writable] : [.readable])
        }
    }

    /// RFC 6455 §5.3: a fresh, unpredictable key per frame.
    private func maskKey() -> UInt32 {
        let x: UInt64 = rng.next()
        return UInt32(truncatingIfNeeded: x)
    }

    private func armPing() {
        guard options.pingInterval > 0 else { return }
        if pingDeadline == nil { pingDeadline = LoopDeadline(loop: loop) { [weak self] in self?.pingDue() } }
        try? pingDeadline?.arm(after: options.pingInterval)
    }

    private func pingDue() {
        guard state == .open else { return }
        let idle = Double(Clock.monotonicNanoseconds() &- lastTraffic) / 1e9
        if idle > 2 * options.pingInterval { return fail(.noPong) }
        WebSocketFrameWriter.write(.ping, payload: [], mask: maskKey(), to: out)
        flush()
        armPing()
    }

    private func closedCleanly() {
        teardown()
        if state != .stopped { scheduleRetry(after: nil) }
    }

    // MARK: Failure and reconnection

    private func fail(_ e: WebSocketClientError) {
        guard state != .stopped else { return teardown() }
        lastError = e
        teardown()
        scheduleRetry(after: e)
    }

    private func scheduleRetry(after e: WebSocketClientError?) {
        let verdict = policy.failed(key: e?.repeatKey ?? "closed")
        state = .waitingToReconnect
        if retry == nil { retry = LoopDeadline(loop: loop) { [weak self] in self?.connect() } }
        try? retry?.arm(after: verdict.delay)
        onDown?(e, verdict.step)
    }

    private func teardown() {
        if let t = stepTimer { loop.cancel(t); stepTimer = nil }
        if let r = socketReg { loop.remove(r); socketReg = nil }
        pingDeadline?.disarm()
        closeDeadline?.disarm()
        stableDeadline?.disarm()
        if let m = multi, let e = easy { curl_multi_remove_handle(m, e) }
        if let e = easy { curl_easy_cleanup(e) }
        if let m = multi { curl_multi_cleanup(m) }
        easy = nil
        multi = nil
        out.reset()
        outOffset = 0
    }
}
