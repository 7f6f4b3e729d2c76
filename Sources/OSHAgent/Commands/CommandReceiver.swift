// Receives the commands of one control stream over the node's WebSocket and reports their status
// (as an OSH node sends them; docs/OSH-NODE.md). Each pushed command `{"id", "controlstream@id", "issueTime", "sender",
// "parameters"}` is decoded against the control stream's parameter schema (CommandDecoder: a
// DataChoice with exactly one item, record fields in schema order, allowed ranges enforced); a
// command that does not fit is REJECTED with the reason without reaching the handler.
//
// Timing: the node answers the operator 5 s after pushing a command and stores PENDING then,
// because status POSTs over HTTP carry no correlation id. A final status posted before that is
// overtaken by the later PENDING. So the outcome is posted at once (for anyone watching) and posted
// again `ackWindow + repostMargin` after the command arrived, with a later reportTime: the node
// ends up holding the real outcome.
#if canImport(Glibc)
import Glibc
#endif
import OSHCore
import OSHPlatform

public struct CommandChannelSetupError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// A command as the handler sees it.
public struct ReceivedCommand: Sendable, Equatable {
    /// The node's id for the command (`command@id` of every status report).
    public var id: String
    public var controlStreamID: String
    public var issueTime: Double?
    public var sender: String?
    /// The parameters, decoded against the control stream's schema.
    public var value: CommandValue
}

/// What the handler decided.
public struct CommandOutcome: Sendable, Equatable {
    public var status: CommandStatusCode
    public var message: String?

    public init(_ status: CommandStatusCode, _ message: String? = nil) {
        self.status = status
        self.message = message
    }

    public static func completed(_ m: String? = nil) -> CommandOutcome { CommandOutcome(.completed, m) }
    public static func accepted(_ m: String? = nil) -> CommandOutcome { CommandOutcome(.accepted, m) }
    public static func rejected(_ m: String) -> CommandOutcome { CommandOutcome(.rejected, m) }
    public static func failed(_ m: String) -> CommandOutcome { CommandOutcome(.failed, m) }
}

public final class CommandReceiver {
    public struct Options: Sendable {
        /// The node's acknowledgement window (OSH: 5 s).
        public var ackWindow: Double
        /// Extra wait after the window before the outcome is posted again.
        public var repostMargin: Double
        /// Post the outcome as soon as it is known too (and not only after the window).
        public var postImmediately: Bool
        public var websocket: WebSocketClient.Options

        public init(
            ackWindow: Double = 5, repostMargin: Double = 1, postImmediately: Bool = true,
            websocket: WebSocketClient.Options = WebSocketClient.Options()
        ) {
            self.ackWindow = ackWindow
            self.repostMargin = repostMargin
            self.postImmediately = postImmediately
            self.websocket = websocket
        }
    }

    public let controlStreamID: String
    public let schema: DataComponent
    public let options: Options
    /// The WebSocket (state, lastError, failures, opens).
    public let channel: WebSocketClient

    public private(set) var received = 0
    public private(set) var rejectedCount = 0
    public private(set) var statusPosts = 0
    public private(set) var statusPostFailures = 0
    /// The last status posted per command id, oldest first (tests, `status` displays); at most 64 kept.
    public private(set) var recent: [CommandStatus] = []

    /// Called after each status POST with what the node answered.
    public var onStatusPosted: ((CommandStatus, HTTPResult) -> Void)?
    /// The channel went down (nil error after `stop()`); e.g. `.notFound` means register again.
    public var onChannelDown: ((WebSocketClientError?, Double?) -> Void)? {
        didSet { channel.onDown = onChannelDown }
    }
    /// The channel works (WebSocketClient.onOpen: a message came, or it stayed open `stableAfter` s).
    public var onChannelUp: (() -> Void)? {
        didSet { channel.onOpen = onChannelUp }
    }

    private let loop: EventLoop
    private let http: HTTPClient
    private let builder: CSRequestBuilder
    private let handler: (ReceivedCommand) -> CommandOutcome
    /// Re-posts waiting for the node's window to pass: (due, status).
    private var reposts: [(due: UInt64, status: CommandStatus)] = []
    private var repostDeadline: LoopDeadline?

    /// `http` posts the status; `server` (usually `http.server`) is where the WebSocket goes, with
    /// the same credentials and TLS policy.
    public init(
        loop: EventLoop, http: HTTPClient, builder: CSRequestBuilder, controlStreamID: String,
        schema: DataComponent, options: Options = Options(),
        handler: @escaping (ReceivedCommand) -> CommandOutcome
    ) throws {
        self.loop = loop
        self.http = http
        self.builder = builder
        self.controlStreamID = controlStreamID
        self.schema = schema
        self.options = options
        self.handler = handler
        channel = try WebSocketClient(
            loop: loop, server: http.server,
            request: builder.commandChannel(controlStreamID: controlStreamID),
            options: options.websocket)
        // osh-core writes each command as a binary frame (WebSocketOutputStream.send → sendBytes);
        // a text frame carries the same JSON, so both are read alike.
        channel.onText = { [weak self] bytes in self?.onMessage(bytes) }
        channel.onBinary = { [weak self] bytes in self?.onMessage(bytes) }
    }

    /// A receiver for `device_control`: decodes into DeviceControlCommand for `handler`, which gets
    /// the received command too (its id, for later status reports).
    public static func deviceControl(
        loop: EventLoop, http: HTTPClient, builder: CSRequestBuilder,
        controlStreamID: String, outputNames: [String], options: Options = Options(),
        handler: @escaping (DeviceControlCommand, ReceivedCommand) -> CommandOutcome
    ) throws -> CommandReceiver {
        try CommandReceiver(
            loop: loop, http: http, builder: builder, controlStreamID: controlStreamID,
            schema: DeviceControl.schema(outputNames: outputNames), options: options,
            handler: deviceControlHandler(handler))
    }

    /// `device_control`'s handler: the choice decoded into a DeviceControlCommand for `handler`.
    static func deviceControlHandler(
        _ handler: @escaping (DeviceControlCommand, ReceivedCommand) -> CommandOutcome
    ) -> (ReceivedCommand) -> CommandOutcome {
        { cmd in
            do throws(CommandDecodeError) {
                return handler(try DeviceControl.command(cmd.value), cmd)
            } catch {
                // Named as the handlers name their outcomes ("command setRate: COMPLETED — …").
                let name: String
                if case .choice(let item, _) = cmd.value { name = item } else { name = "device_control" }
                Log.warning("command \(name): REJECTED — \(error.message) (command \(cmd.id))")
                return .rejected(error.message)
            }
        }
    }

    /// `POST /systems/{systemID}/controlstreams` with `body` (e.g. `DeviceControl.body(…)`); the node
    /// keys control streams by inputName, so this is safe after every restart. Completes with the
    /// control stream id, or a message naming what failed.
    public static func registerControlStream(
        http: HTTPClient, builder: CSRequestBuilder, systemID: String, body: [UInt8],
        completion: @escaping (Result<String, CommandChannelSetupError>) -> Void
    ) {
        http.send(builder.createControlStream(systemID: systemID, body: body)) { r in
            if let e = r.error {
                return completion(.failure(CommandChannelSetupError(message: "cannot create the control stream: " + e.description)))
            }
            guard r.status == 201, let id = CSResponse.resourceID(fromLocation: r.location, collection: "controlstreams") else {
                let m = (try? JSONValue.parse(r.body))?["message"]?.string ?? String(decoding: r.body.prefix(200), as: UTF8.self)
                return completion(
                    .failure(CommandChannelSetupError(message: "the node refused the control stream (HTTP \(r.status)): " + m)))
            }
            completion(.success(id))
        }
    }

    public func start() { channel.start() }

    /// Closes the channel. Pending re-posts are sent at once so the node keeps the outcomes.
    public func stop() {
        channel.stop()
        let due = reposts
        reposts = []
        repostDeadline?.cancel()
        for r in due { post(r.status) }
    }

    /// A later status for a command the handler answered ACCEPTED (or EXECUTING): e.g. COMPLETED when
    /// an `identify` blink ends. Posted now; if the node's window for the command has not passed yet,
    /// it replaces the pending re-post so this is what the node ends up holding.
    public func report(commandID: String, _ outcome: CommandOutcome) {
        let status = Self.status(commandID, outcome)
        post(status)
        for i in reposts.indices where reposts[i].status.commandID == commandID { reposts[i].status = status }
    }

    // MARK: Commands

    private func onMessage(_ bytes: UnsafeRawBufferPointer) {
        received += 1
        let arrived = Clock.monotonicNanoseconds()
        guard let status = Self.run(bytes, schema: schema, controlStreamID: controlStreamID, handler: handler) else { return }
        if status.statusCode == .rejected { rejectedCount += 1 }
        if options.postImmediately { post(status) }
        let due = arrived &+ UInt64(max(0, options.ackWindow + options.repostMargin) * 1e9)
        reposts.append((due, status))
        armRepost()
    }

    /// One pushed command `{"id", "controlstream@id", "issueTime", "sender", "parameters"}` (the
    /// WebSocket's frame or the MQTT PUBLISH's payload), decoded against `schema` and run by
    /// `handler`: the status to report; nil (logged) when it carries no command id.
    static func run(
        _ bytes: UnsafeRawBufferPointer, schema: DataComponent, controlStreamID: String,
        handler: (ReceivedCommand) -> CommandOutcome
    ) -> CommandStatus? {
        Log.debug("command channel \(controlStreamID): received \(String(decoding: bytes.prefix(500), as: UTF8.self))")
        guard let json = try? JSONValue.parse(bytes), let id = json["id"]?.string, !id.isEmpty else {
            Log.warning("command channel: a message without a command id was ignored")
            return nil
        }
        let outcome: CommandOutcome
        var reachedHandler = false
        if let params = json["parameters"] {
            do throws(CommandDecodeError) {
                let value = try CommandDecoder.decode(params, schema: schema)
                let cmd = ReceivedCommand(
                    id: id, controlStreamID: json["controlstream@id"]?.string ?? controlStreamID,
                    issueTime: json["issueTime"]?.string.flatMap(ISOTime.parse),
                    sender: json["sender"]?.string, value: value)
                reachedHandler = true
                outcome = handler(cmd)
            } catch {
                outcome = .rejected(error.message)
            }
        } else {
            outcome = .rejected("the command has no parameters")
        }
        if !reachedHandler {
            // The handlers log their outcomes; a command refused before reaching one is logged here.
            let name = json["parameters"]?.objectKeys?.first ?? "without parameters"
            Log.warning("command \(name): REJECTED — \(outcome.message ?? "no reason given") (command \(id))")
        }
        return status(id, outcome)
    }

    /// The status report of `outcome` for command `id`, stamped now.
    static func status(_ id: String, _ outcome: CommandOutcome) -> CommandStatus {
        let now = Clock.realtimeSeconds()
        return CommandStatus(
            commandID: id, statusCode: outcome.status, reportTime: now,
            executionTime: outcome.status == .completed ? (now, now) : nil, message: outcome.message)
    }

    private func armRepost() {
        guard let first = reposts.map(\.due).min() else { return }
        if repostDeadline == nil { repostDeadline = LoopDeadline(loop: loop) { [weak self] in self?.repostDue() } }
        let now = Clock.monotonicNanoseconds()
        let wait = first > now ? Double(first - now) / 1e9 : 0.001
        try? repostDeadline?.arm(after: max(0.001, wait))
    }

    private func repostDue() {
        let now = Clock.monotonicNanoseconds()
        let due = reposts.filter { $0.due <= now }
        reposts.removeAll { $0.due <= now }
        for var r in due.map(\.status) {
            r.reportTime = Clock.realtimeSeconds()  // later than the node's PENDING
            post(r)
        }
        armRepost()
    }

    private func post(_ status: CommandStatus) {
        let req = builder.postCommandStatus(controlStreamID: controlStreamID, body: CommandStatusBody.bytes(status))
        statusPosts += 1
        remember(status)
        http.send(req) { [weak self] result in
            guard let self else { return }
            if !result.isSuccess {
                self.statusPostFailures += 1
                Log.warning(
                    "command status \(status.statusCode.rawValue) for \(status.commandID) was not accepted: "
                        + (result.error?.description ?? "HTTP \(result.status) " + NodeError.parse(result.body).summary))
            }
            self.onStatusPosted?(status, result)
        }
    }

    private func remember(_ s: CommandStatus) {
        recent.removeAll { $0.commandID == s.commandID }
        recent.append(s)
        if recent.count > 64 { recent.removeFirst(recent.count - 64) }
    }
}
