// Size (~500 lines): the server's life — libmicrohttpd, the one lock, dispatch, the test switches
// and what tests observe; each resource's routes, the command channel and the journal are files
// of their own.
import CMicroHTTPD
#if canImport(Glibc)
import Glibc
#endif
import OSHCore

/// The development node: an in-memory OGC API – Connected Systems server on libmicrohttpd that
/// accepts what an OpenSensorHub node accepts and refuses what it refuses, with the node's status
/// codes and error messages (docs/OSH-NODE.md). Thread-safe; libmicrohttpd runs an
/// internal polling thread plus one thread per connection, and every request is handled under one
/// lock. Misbehaviour switches (`mode`) and observability (`stats`, `requests`, `observations`)
/// are for tests. With `config.journalPath` its resources survive restarts (Journal.swift).
/// A started node is kept alive by its daemon until `stop()`: letting go of it does not stop it.
public final class DevNode: @unchecked Sendable {
    public let config: DevNodeConfig

    /// Guards `store` (and `mode`, which lives in it). Request handlers take it.
    let lock = Lock()
    let store: NodeStore
    /// Serialises start/stop/pause/resume. Never taken by request handlers, so stopping the daemon
    /// (which joins the connection threads) while holding it cannot deadlock.
    private let lifecycle = Lock()
    private var daemon: OpaquePointer?
    /// What the running daemon points into; ended only after MHD_stop_daemon has returned.
    private var lease: DaemonLease?
    private var boundPort: UInt16 = 0
    private var everStarted = false
    /// Command receivers (WebSockets) and stored commands (CommandsChannel.swift).
    let commandHub = CommandHub()
    /// The MQTT side, while one runs (commands for streams with no WebSocket receiver go there).
    var mqttSide: DevNodeMQTTIngest? {
        get { mqttLock.withLock { mqttSideRef } }
        set { mqttLock.withLock { mqttSideRef = newValue } }
    }
    private let mqttLock = Lock()
    private weak var mqttSideRef: DevNodeMQTTIngest?

    public init(config: DevNodeConfig = DevNodeConfig()) {
        self.config = config
        self.store = NodeStore(salt: IDMinter.freshSalt())
    }

    // No daemon to stop here: a running daemon holds a reference to its node, so a node is freed
    // only once stopped (or never started).

    /// libmicrohttpd's version string.
    public static var libraryVersion: String {
        guard let v = MHD_get_version() else { return "unknown" }
        return String(cString: v)
    }

    /// Whether this libmicrohttpd can serve HTTPS.
    public static var tlsSupported: Bool { oshdev_tls_supported() != 0 }

    // MARK: Lifecycle

    /// What the journal's replay found (records replayed, a torn last record), for the operator.
    public var journalNotes: [String] { lifecycle.withLock { notes } }
    private var notes: [String] = []

    /// Starts listening and returns the bound port (the configured one, or a free one for port 0).
    /// The first start replays `config.journalPath` when set; a journal that cannot be read back
    /// throws `DevNodeError.journal` (the file and line, and the fix) and nothing listens.
    @discardableResult
    public func start() throws -> UInt16 {
        try lifecycle.withLock {
            if daemon != nil { return boundPort }
            if !everStarted, let path = config.journalPath {
                notes = try lock.withLock { try DevNodeJournal.open(path: path, store: store, config: config) }
                notes.forEach(log)
            }
            if !everStarted, let path = config.ledgerPath {
                // After the replay: replayed resources are not news.
                let ledger = try DevNodeLedger(path: path)
                lock.withLock { store.ledger = ledger }
            }
            let port = try startDaemon(port: everStarted ? boundPort : config.port)
            everStarted = true
            log("listening on " + Self.apiRoot(config: config, port: port))
            return port
        }
    }

    /// Stops listening and closes every connection. The node's data is kept; `start()` listens again
    /// (on the same port once one was bound).
    public func stop() {
        lifecycle.withLock {
            guard let d = daemon else { return }
            daemon = nil
            // Upgraded sockets must be let go before the daemon joins their threads; a receiver thread
            // that never ended would touch freed memory, so then the daemon is leaked instead.
            guard commandHub.closeAll() else {
                // The lease stays with the daemon: the node and the TLS keys outlive it.
                lease = nil
                log("a command receiver thread did not end; the daemon is left running (leaked) rather than freed under it")
                return
            }
            MHD_stop_daemon(d)
            lease?.end()
            lease = nil
            log("stopped")
        }
    }

    /// Closes the listening socket (and open connections) so connects are refused; data and port are kept.
    public func pause() { stop() }

    /// Listens again on the port bound before.
    public func resume() throws {
        try lifecycle.withLock {
            guard everStarted else { throw DevNodeError.notStarted }
            if daemon != nil { return }
            _ = try startDaemon(port: boundPort)
            log("resumed on port \(boundPort)")
        }
    }

    /// The bound port (0 before the first start).
    public var port: UInt16 { lifecycle.withLock { boundPort } }

    public var isRunning: Bool { lifecycle.withLock { daemon != nil } }

    /// `http(s)://HOST:PORT/sensorhub/api`.
    public var apiRoot: String {
        let p = lifecycle.withLock { boundPort }
        return Self.apiRoot(config: config, port: p)
    }

    static func apiRoot(config: DevNodeConfig, port: UInt16) -> String {
        (config.tls != nil ? "https://" : "http://") + config.host + ":" + String(port) + config.apiPrefix
    }

    /// Must be called with `lifecycle` held.
    private func startDaemon(port: UInt16) throws -> UInt16 {
        // MHD_USE_TLS is added by the shim when a key and certificate are given.
        let flags = oshdev_threaded_upgrade_flags()
        commandHub.reopen()
        if config.tls != nil {
            guard Self.tlsSupported else { throw DevNodeError.tlsUnsupported }
        }
        guard let newLease = DaemonLease(node: self, tls: config.tls) else {
            throw DevNodeError.startFailed(host: config.host, port: port, errno: ENOMEM)
        }
        let cls = newLease.node.toOpaque()
        let started: OpaquePointer? = oshdev_start_daemon(
            flags, port, config.host,
            { cls, connection, _, method, _, uploadData, uploadSize, conCls in
                guard let cls, let connection, let conCls else { return oshdev_no() }
                let node = Unmanaged<DevNode>.fromOpaque(cls).takeUnretainedValue()
                return node.access(connection, method, uploadData, uploadSize, conCls)
            },
            cls,
            { _, _, conCls, _ in
                guard let conCls, let p = conCls.pointee else { return }
                Unmanaged<Connection>.fromOpaque(p).release()
                conCls.pointee = nil
            },
            { _, uri, _ in
                let c = Connection(uri: uri.map { String(cString: $0) } ?? "/")
                return Unmanaged.passRetained(c).toOpaque()
            },
            cls,
            newLease.keyPEM, newLease.certPEM,
            config.connectionTimeoutSeconds)
        guard let d = started else {
            let e = errno
            newLease.end()
            throw DevNodeError.startFailed(host: config.host, port: port, errno: e)
        }
        daemon = d
        lease = newLease
        boundPort = oshdev_bound_port(d)
        let p = boundPort
        lock.withLock { store.port = p }  // handlers read it there: never the lifecycle lock
        return boundPort
    }

    /// What a daemon points into while it runs: the node, its callbacks' context (retained, so no
    /// callback reaches a freed node), and the TLS key and certificate (libmicrohttpd reads them
    /// whenever a connection starts), copied into allocations of their own. `end()` after
    /// MHD_stop_daemon — never while the daemon can still call back.
    private struct DaemonLease {
        let node: Unmanaged<DevNode>
        let keyPEM: UnsafeMutablePointer<CChar>?
        let certPEM: UnsafeMutablePointer<CChar>?

        /// Nil when the PEM text could not be copied (out of memory).
        init?(node: DevNode, tls: (certPEM: String, keyPEM: String)?) {
            keyPEM = tls.flatMap { strdup($0.keyPEM) }
            certPEM = tls.flatMap { strdup($0.certPEM) }
            guard tls == nil || (keyPEM != nil && certPEM != nil) else {
                free(keyPEM)
                free(certPEM)
                return nil
            }
            self.node = .passRetained(node)
        }

        func end() {
            free(keyPEM)
            free(certPEM)
            node.release()
        }
    }

    // MARK: Misbehaviour

    /// The current misbehaviour. Setting `.refuseConnections` stops listening; setting any other mode
    /// after it listens again on the same port.
    public var mode: DevNodeMode {
        get { lock.withLock { store.mode } }
        set {
            let old = lock.withLock { () -> DevNodeMode in
                let o = store.mode
                store.mode = newValue
                return o
            }
            if newValue == .refuseConnections, old != .refuseConnections {
                pause()
            } else if old == .refuseConnections, newValue != .refuseConnections {
                do { try resume() } catch { log("could not resume: \(error)") }
            }
        }
    }

    /// A node restart without a database: every system, datastream, feature, control stream and
    /// observation is gone; ids minted afterwards never equal old ones. Statistics of requests are kept.
    /// Returns what the node held at that instant (taken under the same lock as the forgetting, so
    /// an observation accepted just before is counted and one just after is not).
    @discardableResult
    public func forgetEverything() -> DevNodeStats {
        let held = lock.withLock {
            let held = store.stats()
            store.forget()
            do {
                try store.journal?.append(JournalText.line(.forget(counter: store.minter.counter)))
            } catch {
                log("\(error)")
            }
            return held
        }
        commandHub.forget()
        log("forgot everything")
        return held
    }

    // MARK: Observability

    public var stats: DevNodeStats {
        var s = lock.withLock { store.stats() }
        s.evictedCommands = commandHub.evicted
        return s
    }

    /// The most recent requests (at most `config.maxLoggedRequests`), oldest first.
    public var requests: [DevNodeRequestRecord] { lock.withLock { store.requestLog } }

    /// The stored observations of a datastream, decoded, in arrival order (empty for an unknown id).
    /// `phenomenonTime`, `resultTime`, `foiID` and `id` are set on each.
    public func observations(datastreamID: String) -> [SWERecordValue] {
        lock.withLock {
            guard let i = store.datastreamIndex(datastreamID) else { return [] }
            return store.datastreams[i].observations.map { o in
                var r = o.record
                r.phenomenonTime = o.phenomenonTime
                r.resultTime = o.resultTime
                r.foiID = o.foiID
                r.id = o.id
                return r
            }
        }
    }

    /// Ids of the datastreams of a system, in creation order.
    public func datastreamIDs(systemID: String) -> [String] {
        lock.withLock { store.datastreams.filter { $0.systemID == systemID }.map(\.id) }
    }

    /// Id of the system registered with this UID.
    public func systemID(uid: String) -> String? {
        lock.withLock { store.systems.first { $0.uid == uid }?.id }
    }

    // MARK: Entry point for `osh-edge node`

    /// Starts a node and serves until the process ends. `onStart` gets the running node (print its
    /// `apiRoot` there); nothing is printed otherwise. With `controlReply`, control lines are read
    /// from standard input (Control.swift) and answered through it; at its end the node keeps serving.
    public static func runForever(
        config: DevNodeConfig, onStart: (DevNode) -> Void = { _ in },
        controlReply: ((String) -> Void)? = nil
    ) throws -> Never {
        let node = DevNode(config: config)
        try node.start()
        onStart(node)
        if let reply = controlReply { node.serveControl(fd: 0, reply: reply) }
        while true { sleepSeconds(3600) }
    }

    // MARK: Request handling (libmicrohttpd threads)

    /// Per-request state, created by the URI log callback (so the raw URI is known) and released by
    /// the completion callback.
    final class Connection {
        let uri: String
        var started = false
        var body: [UInt8] = []
        var tooLarge = false
        init(uri: String) { self.uri = uri }
    }

    func log(_ s: String) { config.log?(s) }

    func header(_ c: OpaquePointer, _ name: String) -> String? {
        oshdev_header(c, name).map { String(cString: $0) }
    }

    fileprivate func access(
        _ connection: OpaquePointer, _ methodPtr: UnsafePointer<CChar>?,
        _ uploadData: UnsafePointer<CChar>?, _ uploadSize: UnsafeMutablePointer<Int>?,
        _ conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let raw = conCls.pointee else { return oshdev_no() }
        let conn = Unmanaged<Connection>.fromOpaque(raw).takeUnretainedValue()
        let method = methodPtr.map { String(cString: $0) } ?? "GET"
        if !conn.started {
            conn.started = true
            if let cl = header(connection, "Content-Length"), let n = Int(cl), n > config.maxBodyBytes {
                conn.tooLarge = true
                return finish(connection, conn, method: method)
            }
            return oshdev_yes()
        }
        if let size = uploadSize, size.pointee > 0 {
            if !conn.tooLarge, let data = uploadData {
                if conn.body.count + size.pointee > config.maxBodyBytes {
                    conn.tooLarge = true
                    conn.body = []
                } else {
                    data.withMemoryRebound(to: UInt8.self, capacity: size.pointee) {
                        conn.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: size.pointee))
                    }
                }
            }
            size.pointee = 0
            return oshdev_yes()
        }
        return finish(connection, conn, method: method)
    }

    private func finish(_ connection: OpaquePointer, _ conn: Connection, method: String) -> MHD_Result {
        let req = HTTPRequest(
            method: method, uri: conn.uri, contentType: header(connection, "Content-Type"),
            accept: header(connection, "Accept"), authorization: header(connection, "Authorization"),
            body: conn.body)
        conn.body = []
        if !conn.tooLarge, let handled = commandRoute(connection, req) { return handled }
        let (response, mode) = respond(req, tooLarge: conn.tooLarge)
        if let log = config.log { log("\(req.method) \(req.uri) → \(response.status)") }
        if case .delay(let s) = mode { sleepSeconds(s) }
        return queue(connection, response, reset: mode == .resetMidBody)
    }

    /// Decides the answer: misbehaviour, authentication, then the API itself.
    func respond(_ req: HTTPRequest, tooLarge: Bool) -> (HTTPResponse, DevNodeMode) {
        lock.withLock {
            let mode = store.mode
            let root = Self.apiRoot(config: config, port: store.port)
            var route = req.method + " (any)"
            var response: HTTPResponse
            if case .status(let s) = mode {
                response = HTTPResponse(status: s, body: errorBody(status: s, message: statusMessage(s)))
                if s == 302 { response.headers.append(("Location", "/sensorhub")) }
                if s == 401 { response.headers.append(("WWW-Authenticate", "Basic realm=\"OSH\"")) }
            } else if tooLarge {
                response = HTTPResponse(status: 413, body: errorBody(status: 413, message: "Request entity too large"))
            } else if !authorized(req) {
                response = HTTPResponse(
                    status: 401, headers: [("WWW-Authenticate", "Basic realm=\"OSH\"")],
                    body: errorBody(status: 401, message: "Unauthorized"))
            } else {
                (response, route) = handleLocked(req, root: root)
                response = jettyErrorPage(response, req)
            }
            store.logRequest(
                DevNodeRequestRecord(
                    method: req.method, path: req.uri, route: route,
                    contentType: req.contentType, status: response.status, time: wallClock()),
                cap: config.maxLoggedRequests)
            return (response, mode)
        }
    }

    /// Runs an authorised request against the store (the node's lock held). A change to resources
    /// is journaled once made; if it cannot be, it is undone and refused. What was stored goes to
    /// the ledger before the answer is sent.
    func handleLocked(_ req: HTTPRequest, root: String) -> (HTTPResponse, String) {
        let journaled = store.journal != nil && DevNodeJournal.changesResources(method: req.method, path: req.path, apiPath: config.apiPath)
        let before = journaled ? store.snapshot() : nil
        let h = RequestHandler(req: req, store: store, config: config, apiRoot: root)
        var response = h.run()
        if let journal = store.journal, let before, (200..<300).contains(response.status) {
            do {
                try journal.record(req, counter: before.minter.counter, time: h.now, response: response)
            } catch {
                store.restore(before)
                store.ledger?.discard()
                log("\(error)")
                response = HTTPResponse(status: 500, body: errorBody(status: 500, message: "Internal server error: \(error)"))
            }
        }
        // Whatever the status: a batch refused halfway keeps what it stored before (and says so here).
        do { try store.ledger?.commit() } catch { log("\(error)") }
        return (response, h.route)
    }

    /// OSH writes JSON errors only when Accept is absent or mentions json; otherwise Jetty answers
    /// with an HTML page, or a 302 to /sensorhub when the admin landing page is enabled.
    private func jettyErrorPage(_ r: HTTPResponse, _ req: HTTPRequest) -> HTTPResponse {
        guard r.status >= 400, let accept = req.accept, !accept.contains("json") else { return r }
        if config.adminLandingPage, [400, 403, 404].contains(r.status) {
            return HTTPResponse(status: 302, headers: [("Location", "/sensorhub")], body: [], contentType: nil)
        }
        let message = Self.htmlEscaped(NodeError.parse(r.body).message ?? statusMessage(r.status))
        let html =
            "<html>\n<head>\n<meta http-equiv=\"Content-Type\" content=\"text/html;charset=ISO-8859-1\"/>\n"
            + "<title>Error \(r.status) \(message)</title>\n</head>\n<body><h2>HTTP ERROR \(r.status) \(message)</h2>\n"
            + "<table>\n<tr><th>URI:</th><td>\(Self.htmlEscaped(String(req.path)))</td></tr>\n<tr><th>STATUS:</th><td>\(r.status)</td></tr>\n"
            + "<tr><th>MESSAGE:</th><td>\(message)</td></tr>\n</table>\n</body>\n</html>\n"
        return HTTPResponse(status: r.status, headers: r.headers, body: Array(html.utf8), contentType: "text/html;charset=iso-8859-1")
    }

    static func htmlEscaped(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(c)
            }
        }
        return out
    }

    /// The store under the node's lock (for the command routes in CommandsChannel.swift).
    func withStore<T>(_ body: (NodeStore) throws -> T) rethrows -> T { try lock.withLock { try body(store) } }

    func isAuthorized(_ req: HTTPRequest) -> Bool { authorized(req) }

    private func authorized(_ req: HTTPRequest) -> Bool {
        if config.users.isEmpty { return true }
        guard let auth = req.authorization else { return false }
        let parts = auth.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "basic",
            let decoded = Base64.decode(Array(parts[1].utf8))
        else { return false }
        let text = String(decoding: decoded, as: UTF8.self)
        guard let colon = text.firstIndex(of: ":") else { return false }
        let user = String(text[..<colon]), password = String(text[text.index(after: colon)...])
        return config.users.contains { $0.0 == user && $0.1 == password }
    }

    /// Bytes sent before the connection is cut in `.resetMidBody`.
    static let resetAfterBytes = 8

    /// Box for the content reader of a response that is cut short.
    final class TruncatedBody {
        let bytes: [UInt8]
        init(_ bytes: [UInt8]) { self.bytes = bytes }
    }

    func queue(_ connection: OpaquePointer, _ r: HTTPResponse, reset: Bool) -> MHD_Result {
        let response: OpaquePointer?
        if reset {
            // Declare more than will ever be sent, send a few bytes, then make MHD drop the connection.
            let box = TruncatedBody(Array(r.body.prefix(Self.resetAfterBytes)))
            let declared = UInt64(max(r.body.count, box.bytes.count) + 64)
            response = MHD_create_response_from_callback(
                declared, 1024,
                { cls, pos, buf, max in
                    guard let cls, let buf else { return oshdev_reader_end_with_error() }
                    let b = Unmanaged<TruncatedBody>.fromOpaque(cls).takeUnretainedValue().bytes
                    guard pos < UInt64(b.count) else { return oshdev_reader_end_with_error() }
                    let n = min(b.count - Int(pos), max)
                    b.withUnsafeBytes { src in
                        UnsafeMutableRawPointer(buf).copyMemory(from: src.baseAddress! + Int(pos), byteCount: n)
                    }
                    return n
                },
                Unmanaged.passRetained(box).toOpaque(),
                { cls in
                    guard let cls else { return }
                    Unmanaged<TruncatedBody>.fromOpaque(cls).release()
                })
        } else {
            response = r.body.withUnsafeBytes { b in
                oshdev_response_copy(b.count, b.baseAddress)
            }
        }
        guard let response else { return oshdev_no() }
        if let ct = r.contentType { MHD_add_response_header(response, "Content-Type", ct) }
        for (name, value) in r.headers { MHD_add_response_header(response, name, value) }
        let result = MHD_queue_response(connection, UInt32(r.status), response)
        MHD_destroy_response(response)
        return result
    }
}
