// Size (~540 lines): the receiver socket, the hub and the upgrade path are one protocol (osh-core's
// command channel) whose timings the tests pin together.
//
// The development node's command side, as osh-core has it (docs/OSH-NODE.md):
// - `GET /controlstreams/{id}/commands` with a WebSocket Upgrade makes the caller the stream's one
//   command receiver; a second one gets its socket closed with 1011 "A command receiver is already
//   connected"; any text/binary frame from a receiver closes it with 1007.
// - `POST /controlstreams/{id}/commands` stores the command, pushes it to the receiver and waits
//   `commandAckSeconds` (OSH: 5 s) for a correlated status. Status POSTs over HTTP never correlate,
//   so the node then stores PENDING and answers it with 200. With no receiver nothing is stored and
//   the POST answers 202 after `noReceiverWaitSeconds` (OSH: ~29.5 s).
// Each WebSocket is read on a thread of its own; command POST threads write frames to it under
// its lock.
import CMicroHTTPD
#if canImport(Glibc)
import Glibc
#endif
import OSHCore

/// One connected receiver: an upgraded socket, written to by command POST threads.
final class CommandReceiverSocket: @unchecked Sendable {
    let fd: Int32
    let controlStreamID: String
    let user: String
    private let writeLock = Lock()
    private let out = ByteBuffer(capacity: 4096)
    private var closeSent = false

    init(fd: Int32, controlStreamID: String, user: String) {
        self.fd = fd
        self.controlStreamID = controlStreamID
        self.user = user
    }

    /// Writes one unmasked frame; false when the socket is gone or a close was already sent.
    @discardableResult
    func send(_ opcode: WebSocketOpcode, _ payload: UnsafeRawBufferPointer) -> Bool {
        writeLock.withLock {
            guard !closeSent else { return false }
            out.reset()
            WebSocketFrameWriter.write(opcode, payload: payload, mask: nil, to: out)
            return writeAll()
        }
    }

    @discardableResult
    func send(_ opcode: WebSocketOpcode, _ payload: [UInt8]) -> Bool {
        payload.withUnsafeBytes { send(opcode, $0) }
    }

    /// Sends a close frame once (later calls do nothing).
    func sendClose(_ code: UInt16, _ reason: String) {
        writeLock.withLock {
            guard !closeSent else { return }
            closeSent = true
            out.reset()
            WebSocketFrameWriter.writeClose(code: code, reason: reason, mask: nil, to: out)
            _ = writeAll()
        }
    }

    var isClosing: Bool { writeLock.withLock { closeSent } }

    private func writeAll() -> Bool {
        var off = 0
        while off < out.count {
            let n = Glibc.send(fd, out.base + off, out.count - off, Int32(MSG_NOSIGNAL))
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            off += n
        }
        return true
    }
}

/// A command the node stored (only commands a connected receiver was sent are stored, as in OSH).
struct StoredCommand {
    var id: String
    var controlStreamID: String
    var issueTime: Double
    var sender: String
    var parameters: JSONValue
}

/// Receivers and commands. Lock order: the node's lock, then this one; never the reverse.
final class CommandHub: @unchecked Sendable {
    private let lock = Lock()
    private var receivers: [String: CommandReceiverSocket] = [:]
    /// Per control stream, the newest `maxStoredCommands`.
    private var commandsStored: [String: BoundedLog<StoredCommand>] = [:]
    private var stopping = false

    func receiver(_ csID: String) -> CommandReceiverSocket? { lock.withLock { receivers[csID] } }

    /// Upgrades answered 101 whose socket has not been handed over yet (csID → when). Taken before
    /// the 101 goes out so a command posted right after the client saw it still finds the receiver.
    private var reserved: [String: Double] = [:]

    /// Claims the stream for an upgrade about to be answered; false if it has a receiver already
    /// (or a claim younger than 2 s, so an upgrade that never completed does not block it forever).
    func reserve(_ csID: String) -> Bool {
        lock.withLock {
            guard !stopping, receivers[csID] == nil else { return false }
            if let t = reserved[csID], wallClock() - t < 2 { return false }
            reserved[csID] = wallClock()
            return true
        }
    }

    func unreserve(_ csID: String) { lock.withLock { reserved[csID] = nil } }

    /// Makes `r` the stream's receiver (after `reserve`) unless one is connected already.
    func attach(_ r: CommandReceiverSocket) -> Bool {
        lock.withLock {
            reserved[r.controlStreamID] = nil
            guard !stopping, receivers[r.controlStreamID] == nil else { return false }
            receivers[r.controlStreamID] = r
            return true
        }
    }

    /// The receiver, waiting up to `timeout` s while an answered upgrade is still being handed over.
    func awaitReceiver(_ csID: String, timeout: Double = 1) -> CommandReceiverSocket? {
        let end = wallClock() + timeout
        while true {
            let (r, pending) = lock.withLock { (receivers[csID], reserved[csID] != nil) }
            if let r { return r }
            if !pending || wallClock() > end { return nil }
            sleepSeconds(0.002)
        }
    }

    func detach(_ r: CommandReceiverSocket) {
        lock.withLock { if receivers[r.controlStreamID] === r { receivers[r.controlStreamID] = nil } }
    }

    var isStopping: Bool { lock.withLock { stopping } }

    func store(_ c: StoredCommand, cap: Int) {
        lock.withLock { commandsStored[c.controlStreamID, default: BoundedLog(capacity: cap)].append(c) }
    }

    func commands(_ csID: String) -> [StoredCommand] { lock.withLock { commandsStored[csID].map { Array($0) } ?? [] } }

    /// Commands evicted to keep the cap (of control streams still stored).
    var evicted: Int { lock.withLock { commandsStored.values.reduce(0) { $0 + $1.evicted } } }

    func forget() { lock.withLock { commandsStored = [:] } }

    private var liveThreads = 0
    func threadStarted() { lock.withLock { liveThreads += 1 } }
    func threadEnded() { lock.withLock { liveThreads -= 1 } }

    /// Closes every receiver with 1001 and waits (≤ 2 s) until their threads have handed the sockets
    /// back (MHD_upgrade_action CLOSE), which must happen before the daemon stops.
    @discardableResult
    func closeAll() -> Bool {
        let all = lock.withLock { () -> [CommandReceiverSocket] in
            stopping = true
            return Array(receivers.values)
        }
        for r in all {
            r.sendClose(WebSocketCloseCode.goingAway, "node stopping")
            shutdown(r.fd, Int32(SHUT_RDWR))
        }
        // A receiver thread still running when the daemon stops would use the upgrade handle
        // libmicrohttpd frees: wait for every one (10 s at most on a loaded machine).
        for _ in 0..<1000 {
            if lock.withLock({ liveThreads == 0 }) { return true }
            sleepSeconds(0.01)
        }
        return lock.withLock { liveThreads == 0 }
    }

    /// Called when the daemon starts again.
    func reopen() { lock.withLock { stopping = false } }

    /// Number of receivers connected now (tests).
    var receiverCount: Int { lock.withLock { receivers.count } }
}

/// One receiver's thread: serves the socket, then hands it back to libmicrohttpd.
final class ReceiverThread: @unchecked Sendable {
    let node: DevNode
    let fd: Int32
    let urh: OpaquePointer
    let extra: [UInt8]
    let ctx: UpgradeContext
    init(node: DevNode, fd: Int32, urh: OpaquePointer, extra: [UInt8], ctx: UpgradeContext) {
        self.node = node
        self.fd = fd
        self.urh = urh
        self.extra = extra
        self.ctx = ctx
    }

    func run() {
        node.serveReceiver(fd: fd, extra: extra, ctx: ctx)
        _ = oshdev_upgrade_close(urh)
        node.commandHub.threadEnded()
    }
}

/// What the upgrade handler needs; retained through libmicrohttpd's `cls`.
final class UpgradeContext {
    let node: DevNode
    let controlStreamID: String
    let user: String
    /// Another receiver holds the stream: this one is refused once upgraded.
    let duplicate: Bool
    init(node: DevNode, controlStreamID: String, user: String, duplicate: Bool) {
        self.node = node
        self.controlStreamID = controlStreamID
        self.user = user
        self.duplicate = duplicate
    }
}

extension DevNode {
    /// The command routes handled outside the regular (locked, non-blocking) handler. Nil: not one of
    /// them, or a case the regular handler answers the same way (401, 404, misbehaviour modes).
    func commandRoute(_ connection: OpaquePointer, _ req: HTTPRequest) -> MHD_Result? {
        guard let csID = Self.commandsPath(req.path, apiPath: config.apiPath) else { return nil }
        let upgrade = header(connection, "Upgrade")
        let ready: Bool = withStore { store in
            store.mode == .normal && store.controlStreamIndex(csID) != nil
        }
        guard ready, isAuthorized(req) else { return nil }
        if req.method == "GET", let u = upgrade, u.lowercased().contains("websocket") {
            return upgradeToReceiver(connection, req, csID: csID)
        }
        if req.method == "POST" { return postCommand(connection, req, csID: csID) }
        if req.method == "GET" { return listCommands(connection, req, csID: csID) }
        return nil
    }

    /// `{api}/controlstreams/{id}/commands` → id.
    static func commandsPath(_ path: Substring, apiPath: String) -> String? {
        let api = apiPath.hasSuffix("/") ? String(apiPath.dropLast()) : apiPath
        guard path.hasPrefix(api) else { return nil }
        let segs = path.dropFirst(api.count).split(separator: "/").map(URLDecoding.path)
        guard segs.count == 3, segs[0] == "controlstreams", segs[2] == "commands" else { return nil }
        return segs[1]
    }

    func user(of req: HTTPRequest) -> String {
        guard let auth = req.authorization else { return "anonymous" }
        let parts = auth.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, let d = Base64.decode(Array(parts[1].utf8)) else { return "anonymous" }
        let text = String(decoding: d, as: UTF8.self)
        return text.split(separator: ":", maxSplits: 1).first.map(String.init) ?? "anonymous"
    }

    private func answer(_ connection: OpaquePointer, _ req: HTTPRequest, route: String, _ r: HTTPResponse) -> MHD_Result {
        logCommandRequest(req, route: route, status: r.status)
        return queue(connection, r, reset: false)
    }

    func logCommandRequest(_ req: HTTPRequest, route: String, status: Int) {
        if let log = config.log { log("\(req.method) \(req.uri) → \(status)") }
        withStore { store in
            store.logRequest(
                DevNodeRequestRecord(
                    method: req.method, path: req.uri, route: route,
                    contentType: req.contentType, status: status, time: wallClock()),
                cap: config.maxLoggedRequests)
        }
    }

    // MARK: WebSocket receiver

    private func upgradeToReceiver(_ connection: OpaquePointer, _ req: HTTPRequest, csID: String) -> MHD_Result {
        let route = "GET /controlstreams/{id}/commands (WebSocket)"
        let accept: String
        do throws(WebSocketHandshakeError) {
            accept = try WebSocketHandshake.checkRequest(
                method: req.method, upgrade: header(connection, "Upgrade"),
                connection: header(connection, "Connection"),
                key: header(connection, "Sec-WebSocket-Key"),
                version: header(connection, "Sec-WebSocket-Version"))
        } catch {
            return answer(
                connection, req, route: route,
                HTTPResponse(status: 400, body: errorBody(status: 400, message: error.description)))
        }
        let duplicate = !commandHub.reserve(csID)
        let ctx = UpgradeContext(node: self, controlStreamID: csID, user: user(of: req), duplicate: duplicate)
        let cls = Unmanaged.passRetained(ctx).toOpaque()
        guard
            let response = MHD_create_response_for_upgrade(
                { cls, _, _, extraIn, extraSize, sock, urh in
                    guard let cls, let urh else { return }
                    let ctx = Unmanaged<UpgradeContext>.fromOpaque(cls).takeRetainedValue()
                    var extra: [UInt8] = []
                    if let e = extraIn, extraSize > 0 {
                        e.withMemoryRebound(to: UInt8.self, capacity: extraSize) {
                            extra = Array(UnsafeBufferPointer(start: $0, count: extraSize))
                        }
                    }
                    ctx.node.spawnReceiver(fd: sock, urh: urh, extra: extra, ctx: ctx)
                }, cls)
        else {
            Unmanaged<UpgradeContext>.fromOpaque(cls).release()
            if !duplicate { commandHub.unreserve(csID) }
            return answer(
                connection, req, route: route, HTTPResponse(status: 500, body: errorBody(status: 500, message: "Internal server error")))
        }
        MHD_add_response_header(response, "Upgrade", "websocket")
        MHD_add_response_header(response, "Connection", "Upgrade")
        MHD_add_response_header(response, "Sec-WebSocket-Accept", accept)
        logCommandRequest(req, route: route, status: 101)
        let result = MHD_queue_response(connection, 101, response)
        MHD_destroy_response(response)
        if result != oshdev_yes(), !duplicate { commandHub.unreserve(csID) }
        return result
    }

    /// Serves the receiver on a thread of its own: with TLS, libmicrohttpd forwards between the TLS
    /// connection and `fd` (a socketpair) on the connection's thread only after the upgrade handler
    /// returns, so the handler must not block.
    func spawnReceiver(fd: Int32, urh: OpaquePointer, extra: [UInt8], ctx: UpgradeContext) {
        // An upgrade finishing while the node stops: hand the socket back now, on libmicrohttpd's
        // thread, rather than start a thread that would outlive the daemon.
        if commandHub.isStopping {
            if !ctx.duplicate { commandHub.unreserve(ctx.controlStreamID) }
            _ = oshdev_upgrade_close(urh)
            return
        }
        let job = ReceiverThread(node: self, fd: fd, urh: urh, extra: extra, ctx: ctx)
        commandHub.threadStarted()
        var tid = pthread_t()
        let arg = Unmanaged.passRetained(job).toOpaque()
        let rc = pthread_create(
            &tid, nil,
            { raw in
                guard let raw else { return nil }
                Unmanaged<ReceiverThread>.fromOpaque(raw).takeRetainedValue().run()
                return nil
            }, arg)
        if rc == 0 {
            pthread_detach(tid)
        } else {
            Unmanaged<ReceiverThread>.fromOpaque(arg).release()
            _ = oshdev_upgrade_close(urh)
            commandHub.threadEnded()
        }
    }

    /// Runs until the receiver goes away or the node stops.
    func serveReceiver(fd: Int32, extra: [UInt8], ctx: UpgradeContext) {
        let sock = CommandReceiverSocket(fd: fd, controlStreamID: ctx.controlStreamID, user: ctx.user)
        let parser = WebSocketFrameParser(role: .server, maxMessageBytes: 64 * 1024)
        var attached = false
        var closingSince: Double?
        if let reason = config.refuseReceivers {
            sock.sendClose(WebSocketCloseCode.internalError, reason)
            closingSince = wallClock()
        } else if !ctx.duplicate, commandHub.attach(sock) {
            attached = true
            log("command receiver connected to control stream " + ctx.controlStreamID)
        } else {
            // osh-core's connectCommandReceiver throws; the socket fails.
            sock.sendClose(WebSocketCloseCode.internalError, "A command receiver is already connected")
            closingSince = wallClock()
        }
        defer { if attached { commandHub.detach(sock); log("command receiver left control stream " + ctx.controlStreamID) } }
        var done = false
        func handle(_ bytes: UnsafeRawBufferPointer) {
            do throws(WebSocketFrameError) {
                try parser.feed(bytes) { event in
                    switch event {
                    case .ping(let p): sock.send(.pong, p)
                    case .pong: break
                    case .close(let code, _):
                        sock.sendClose(code == WebSocketCloseCode.noStatus ? WebSocketCloseCode.normal : code, "")
                        done = true
                    case .text, .binary:
                        sock.sendClose(WebSocketCloseCode.invalidPayload, "Incoming data is not supported")
                        if closingSince == nil { closingSince = wallClock() }
                    }
                }
            } catch {
                sock.sendClose(error.closeCode, error.description)
                done = true
            }
        }
        extra.withUnsafeBytes { handle($0) }
        var buf = [UInt8](repeating: 0, count: 4096)
        while !done {
            if let since = closingSince, wallClock() - since > 1 { break }  // peer never answered our close
            if commandHub.isStopping {
                sock.sendClose(WebSocketCloseCode.goingAway, "node stopping")
                break
            }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let r = poll(&pfd, 1, 100)
            if r < 0 { if errno == EINTR { continue } else { break } }
            if r == 0 { continue }
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0, errno == EINTR || errno == EAGAIN { continue }
            if n <= 0 { break }
            buf.withUnsafeBytes { handle(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
    }

    // MARK: Sending a command

    private func postCommand(_ connection: OpaquePointer, _ req: HTTPRequest, csID: String) -> MHD_Result {
        let route = "POST /controlstreams/{id}/commands"
        let prepared: Result<(JSONValue, String), NodeFailure> = withStore { store in
            let h = RequestHandler(req: req, store: store, config: config, apiRoot: "")
            do {
                _ = try h.contentType(allowed: [MediaType.json])
                let (items, _) = try h.jsonItems(malformedPrefix: "Invalid JSON: ")
                guard items.count == 1, case .object(let m) = items[0] else {
                    throw NodeFailure.badRequest("Invalid payload: Expected BEGIN_OBJECT")
                }
                guard let params = m.first(where: { $0.0 == "parameters" })?.1 else {
                    throw NodeFailure.badRequest("Invalid payload: Missing property: parameters")
                }
                guard let i = store.controlStreamIndex(csID) else { throw NodeFailure.notFound(csID) }
                let schema: DataComponent
                do throws(SWEDecodingError) {
                    schema = try SchemaDecoder.component(store.controlStreams[i].parameters)
                } catch {
                    throw NodeFailure.internalError
                }
                do throws(CommandDecodeError) {
                    _ = try CommandDecoder.decode(params, schema: schema, checkConstraints: false)
                } catch {
                    switch error.kind {
                    case .badChoice: throw NodeFailure.badRequest("Invalid choice selector value")
                    case .missingField: throw NodeFailure.badRequest("Expected a name but was END_OBJECT")
                    default: throw NodeFailure.badRequest("Invalid payload: " + error.message)
                    }
                }
                return .success((params, store.mint()))
            } catch let f as NodeFailure {
                return .failure(f)
            } catch {
                return .failure(NodeFailure.internalError)
            }
        }
        let params: JSONValue, id: String
        switch prepared {
        case .failure(let f):
            return answer(
                connection, req, route: route, HTTPResponse(status: f.status, body: errorBody(status: f.status, message: f.message)))
        case .success(let (p, i)):
            params = p
            id = i
        }
        let issued = wallClock()
        let cmd = StoredCommand(id: id, controlStreamID: csID, issueTime: issued, sender: user(of: req), parameters: params)
        let pushed = commandHub.awaitReceiver(csID).map { r in r.send(.binary, Self.commandJSON(cmd, currentStatus: nil)) } ?? false
        if !pushed, let side = mqttSide,
            let status = side.deliver(
                command: Self.commandJSON(cmd, currentStatus: nil), controlStreamID: csID, waiting: config.commandAckSeconds)
        {
            // An MQTT 5 receiver answered with the command's correlation data: the POST gets its status.
            commandHub.store(cmd, cap: config.maxStoredCommands)
            return answer(connection, req, route: route, HTTPResponse(status: 200, body: status))
        }
        guard pushed else {
            // Nobody subscribed: OSH stores nothing and the POST gives up after ~29.5 s with 202
            // (CommandHandler.addEntry: REQUEST_ACCEPTED_TIMEOUT), its message in Jetty's HTML error page.
            sleepSeconds(config.noReceiverWaitSeconds)
            // As osh-core 4c87a65 answers it: its JSON error when Accept is absent or names json,
            // else Jetty's error page (its URI/STATUS/MESSAGE table included).
            let message = "Command accepted but request timed out before command was acknowledged by receiving system"
            if req.accept.map({ $0.contains("json") }) ?? true {
                let body = "{\n  \"status\": 202,\n  \"message\": \"\(message)\"\n}"
                return answer(
                    connection, req, route: route, HTTPResponse(status: 202, body: Array(body.utf8), contentType: "application/json"))
            }
            let page =
                "<html>\n<head>\n<meta http-equiv=\"Content-Type\" content=\"text/html;charset=ISO-8859-1\"/>\n"
                + "<title>Error 202 \(message)</title>\n</head>\n<body><h2>HTTP ERROR 202 \(message)</h2>\n<table>\n"
                + "<tr><th>URI:</th><td>\(DevNode.htmlEscaped(String(req.path)))</td></tr>\n<tr><th>STATUS:</th><td>202</td></tr>\n"
                + "<tr><th>MESSAGE:</th><td>\(message)</td></tr>\n</table>\n\n</body>\n</html>\n"
            return answer(
                connection, req, route: route,
                HTTPResponse(
                    status: 202, body: Array(page.utf8),
                    contentType: "text/html;charset=iso-8859-1"))
        }
        commandHub.store(cmd, cap: config.maxStoredCommands)
        // Status reports posted over HTTP carry no correlation id: the wait always runs out.
        sleepSeconds(config.commandAckSeconds)
        let pending = withStore { store -> [UInt8] in
            let body = jsonBytes { w in
                w.beginObject()
                w.key("command@id"); w.string(id)
                w.key("reportTime"); w.isoTime(wallClock())
                w.key("statusCode"); w.string("PENDING")
                w.endObject()
            }
            if let i = store.controlStreamIndex(csID), let v = try? JSONValue.parse(body) {
                store.controlStreams[i].statuses.append((store.mint(), v))
            }
            return body
        }
        return answer(connection, req, route: route, HTTPResponse(status: 200, body: pending))
    }

    static func commandJSON(_ c: StoredCommand, currentStatus: String?) -> [UInt8] {
        jsonBytes { w in
            w.beginObject()
            w.key("id"); w.string(c.id)
            w.key("controlstream@id"); w.string(c.controlStreamID)
            w.key("issueTime"); w.isoTime(c.issueTime)
            w.key("sender"); w.string(c.sender)
            if let s = currentStatus { w.key("currentStatus"); w.string(s) }
            w.key("parameters"); w.value(c.parameters)
            w.endObject()
        }
    }

    private func listCommands(_ connection: OpaquePointer, _ req: HTTPRequest, csID: String) -> MHD_Result {
        let all = commands(controlStreamID: csID)
        let stored = commandHub.commands(csID)
        let body = jsonBytes { w in
            w.beginObject()
            w.key("items"); w.beginArray()
            for (c, s) in zip(stored, all) {
                let one = Self.commandJSON(c, currentStatus: s.currentStatus)
                one.withUnsafeBytes { w.rawValue($0) }
            }
            w.endArray()
            w.key("links"); w.beginArray(); w.endArray()
            w.endObject()
        }
        return answer(connection, req, route: "GET /controlstreams/{id}/commands", HTTPResponse(status: 200, body: body))
    }

    // MARK: Observability

    /// The commands stored for a control stream, oldest first, each with its status reports in
    /// arrival order and the status the node holds now (latest `reportTime`; later arrival on a tie).
    public func commands(controlStreamID: String) -> [DevNodeCommand] {
        let stored = commandHub.commands(controlStreamID)
        let statuses: [JSONValue] = withStore { store in
            guard let i = store.controlStreamIndex(controlStreamID) else { return [] }
            return store.controlStreams[i].statuses.map(\.body)
        }
        return stored.map { c in
            var reports: [DevNodeCommandStatus] = []
            for s in statuses where s["command@id"]?.string == c.id {
                reports.append(
                    DevNodeCommandStatus(
                        statusCode: s["statusCode"]?.string ?? "",
                        reportTime: s["reportTime"]?.string.flatMap(ISOTime.parse) ?? 0,
                        message: s["message"]?.string))
            }
            var current: DevNodeCommandStatus?
            for r in reports {
                if let cur = current, r.reportTime < cur.reportTime { continue }
                current = r
            }
            let p = jsonBytes { $0.value(c.parameters) }
            return DevNodeCommand(
                id: c.id, issueTime: c.issueTime, sender: c.sender,
                parametersJSON: String(decoding: p, as: UTF8.self), reports: reports, current: current)
        }
    }

    /// Whether a receiver is connected to this control stream now.
    public func hasCommandReceiver(controlStreamID: String) -> Bool { commandHub.receiver(controlStreamID) != nil }
}

public struct DevNodeCommandStatus: Sendable, Equatable {
    public var statusCode: String
    public var reportTime: Double
    public var message: String?
}

public struct DevNodeCommand: Sendable, Equatable {
    public var id: String
    public var issueTime: Double
    public var sender: String
    public var parametersJSON: String
    /// Status reports in arrival order.
    public var reports: [DevNodeCommandStatus]
    /// What the node holds as the command's status (latest reportTime).
    public var current: DevNodeCommandStatus?
    public var currentStatus: String? { current?.statusCode }
}
