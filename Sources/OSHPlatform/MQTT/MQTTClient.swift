import CMQTTShim
import CMosquitto
import CShim
import OSHCore

#if canImport(Glibc)
import Glibc
#endif

/// Where and how the client connects to a broker.
public struct MQTTOptions: Sendable, Equatable {
    public var host: String
    public var port: Int
    /// The client identifier: the board's UID, so the broker keeps one session per board.
    public var clientID: String
    /// Seconds between PINGREQs when nothing else is sent.
    public var keepAlive = 30
    /// How long the broker keeps the session (QoS 1 state, subscriptions) after a disconnect.
    public var sessionExpiry: UInt32 = 3600
    public var username: String?
    public var password: String?
    /// Between failed connects (1, 2, 4 … 30 s).
    public var backoff = Backoff(initial: 1, maximum: 30)
    /// A PUBLISH whose PUBACK has not come this long after it was last sent on a live connection
    /// is reported failed; libmosquitto may still deliver it later, so it counts as unknown.
    public var ackTimeout: Double = 20
    /// TLS to the broker (`mqtts://`): nil for plain TCP.
    public var tls: MQTTTLS?

    public init(host: String, port: Int, clientID: String) {
        self.host = host
        self.port = port
        self.clientID = clientID
    }

    /// "host:port" for messages.
    public var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    /// "MQTT broker host:port": how the log, the status and `check` name the broker.
    public var brokerName: String { "MQTT broker \(address)" }
}

/// How the client trusts the broker's certificate; the broker's host name (or IP address) must be
/// in it either way.
public enum MQTTTLS: Sendable, Equatable {
    /// The system's CA store (Debian's ca-certificates).
    case systemCAs
    /// This PEM file only: a self-signed certificate or a private CA.
    case caFile(String)
    /// The broker's public key alone (`sha256//<base64>` of its SubjectPublicKeyInfo, with or
    /// without the prefix), as `tls = "pin"` is for the node: no CA, no name check; checked inside
    /// the handshake, before CONNECT carries the credentials.
    case pinnedKey(String)
}

/// What came back for one PUBLISH at QoS 1: the broker's PUBACK reason code, or why none came.
public enum MQTTPublishResult: Sendable, Equatable {
    case acknowledged(reasonCode: Int)
    /// Not sent or not acknowledged: not connected, the connection dropped, no PUBACK in time.
    case failed(String)
}

/// An MQTT 5 client on the event loop, through libmosquitto's external-loop API: the loop watches
/// the client's socket (write interest only while libmosquitto has bytes queued), `loop_misc`
/// runs on the loop's 1 s grid (keep-alive), and every connect — name resolution, TCP, TLS — runs
/// on a short-lived thread of its own (the C shim), so a broker that never answers stalls nothing.
/// The session is kept (clean start off, a session expiry): the broker holds QoS 1 state across
/// reconnects. Reconnects follow `options.backoff`.
public final class MQTTClient {
    public enum State: Equatable, Sendable {
        case idle
        case connecting
        case connected
        /// The last attempt failed (why), the next one in `retryIn` seconds.
        case waiting(reason: String, retryIn: Double)
        case stopped
    }

    public let options: MQTTOptions
    public private(set) var state = State.idle
    /// A CONNACK has accepted this client at least once since it started.
    public private(set) var hasConnected = false
    /// Each state change, for the owner's log and status.
    public var onState: ((State) -> Void)?
    /// Topics subscribed at QoS 1 (again at every CONNACK: a broker that lost the session), each
    /// with what gets its PUBLISHes: the payload (valid during the call) and the MQTT 5
    /// correlation data (empty when there is none). Exact topics only, no wildcards.
    private var handlers: [String: (UnsafeRawBufferPointer, [UInt8]) -> Void] = [:]
    public var subscriptions: [String] { Array(handlers.keys) }

    private let loop: EventLoop
    private let mosq: OpaquePointer
    private var destroyed = false
    /// The TLS context of a pinned broker (our reference; libmosquitto holds its own).
    private var pinContext: UnsafeMutableRawPointer?
    private var connecting: UnsafeMutablePointer<osh_mqtt_connect>?
    private var connectWatch: EventLoop.Registration?
    private var socketWatch: EventLoop.Registration?
    private var watchingWrite = false
    private var misc: EventLoop.Timer?
    private var retry: EventLoop.Timer?
    private var policy: ReconnectPolicy
    /// QoS 1 PUBLISHes waiting for their PUBACK, by message id, with the loop time they last went
    /// out on a live connection (nil while the link is down). A PUBLISH in flight when the link
    /// drops stays here: libmosquitto sends it again after the reconnect (same message id), so the
    /// owner neither resends it nor sees it fail for an outage — only for a PUBACK that never comes.
    private var pending: [Int32: Pending] = [:]
    private struct Pending {
        var sent: UInt64?
        let completion: (MQTTPublishResult) -> Void
    }

    private static let libraryReady: Bool = mosquitto_lib_init() == MOSQ_ERR_SUCCESS.rawValue

    public init(loop: EventLoop, options: MQTTOptions) throws(MQTTError) {
        guard Self.libraryReady else { throw MQTTError("libmosquitto could not be initialised") }
        guard let m = mosquitto_new(options.clientID, false, nil) else {
            throw MQTTError("cannot make an MQTT client for \(options.clientID): \(String(cString: strerror(errno)))")
        }
        self.loop = loop
        self.options = options
        mosq = m
        policy = ReconnectPolicy(backoff: options.backoff)
        mosquitto_int_option(m, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5)
        if let user = options.username {
            mosquitto_username_pw_set(m, user, options.password)
        }
        osh_mqtt_capture_errors(m)
        switch options.tls {
        case nil:
            break
        case .systemCAs?:
            mosquitto_int_option(m, MOSQ_OPT_TLS_USE_OS_CERTS, 1)
        case .caFile(let path)?:
            let rc = mosquitto_tls_set(m, path, nil, nil, nil, nil)
            guard rc == MOSQ_ERR_SUCCESS.rawValue else {
                mosquitto_destroy(m)
                throw MQTTError("the broker's certificate file \(path) cannot be used: \(Self.errorText(rc))")
            }
        case .pinnedKey(let value)?:
            guard let pin = KeyPins.curlForm(value) else {
                mosquitto_destroy(m)
                throw MQTTError(
                    "pin_sha256 \"\(value)\" is not a key pin: give sha256//<44 base64 characters>, as `osh-edge check` prints it")
            }
            guard let ctx = osh_mqtt_pin_context(pin) else {
                mosquitto_destroy(m)
                throw MQTTError("OpenSSL could not make a TLS context for the pinned broker (out of memory?)")
            }
            let rc = osh_mqtt_pin_attach(m, ctx)
            guard rc == MOSQ_ERR_SUCCESS.rawValue else {
                osh_mqtt_pin_release(ctx)
                mosquitto_destroy(m)
                throw MQTTError("libmosquitto refused the pinned TLS context: \(Self.errorText(rc))")
            }
            pinContext = ctx
        }
        mosquitto_user_data_set(m, Unmanaged.passUnretained(self).toOpaque())
        mosquitto_connect_v5_callback_set(m) { _, obj, rc, _, _ in
            guard let obj else { return }
            Unmanaged<MQTTClient>.fromOpaque(obj).takeUnretainedValue().connack(Int(rc))
        }
        mosquitto_disconnect_v5_callback_set(m) { _, obj, rc, _ in
            guard let obj else { return }
            Unmanaged<MQTTClient>.fromOpaque(obj).takeUnretainedValue().disconnected(Int(rc))
        }
        mosquitto_message_v5_callback_set(m) { _, obj, msg, props in
            guard let obj, let msg else { return }
            var correlation = [UInt8](repeating: 0, count: 64)
            let n = osh_mqtt_correlation(props, &correlation, correlation.count)
            let topic = String(cString: msg.pointee.topic)
            let payload = UnsafeRawBufferPointer(start: msg.pointee.payload, count: max(0, Int(msg.pointee.payloadlen)))
            Unmanaged<MQTTClient>.fromOpaque(obj).takeUnretainedValue().handlers[topic]?(payload, Array(correlation.prefix(n)))
        }
        mosquitto_publish_v5_callback_set(m) { _, obj, mid, reason, _ in
            guard let obj else { return }
            Unmanaged<MQTTClient>.fromOpaque(obj).takeUnretainedValue().acknowledged(mid, Int(reason))
        }
    }

    deinit {
        stop()
        if !destroyed { mosquitto_destroy(mosq) }
        osh_mqtt_pin_release(pinContext)
    }

    /// Connects, and keeps connecting after each loss until `stop`.
    public func start() {
        guard state == .idle else { return }
        do {
            misc = try loop.addAlignedTimer(every: 1_000_000_000) { [weak self] _ in self?.tick() }
        } catch {
            Log.warning("MQTT \(options.address): no keep-alive timer (\(error)); the broker may drop the link")
        }
        connect()
    }

    public func stop() {
        guard state != .stopped else { return }
        if let t = misc { loop.cancel(t) }
        if let t = retry { loop.cancel(t) }
        misc = nil
        retry = nil
        if let r = connectWatch { loop.remove(r) }
        connectWatch = nil
        let wasConnected = state == .connected
        // First: the disconnect's callback must not read as a lost link to retry.
        set(.stopped)
        if let c = connecting {
            // The thread may still be inside connect: it destroys the client when it returns.
            osh_mqtt_connect_abandon(c)
            connecting = nil
            destroyed = true
        } else if wasConnected {
            mosquitto_disconnect_v5(mosq, Int32(MQTT_RC_NORMAL_DISCONNECTION.rawValue), nil)
        }
        unwatchSocket()
        failPending("the MQTT client stopped")
    }

    /// Subscribes `topic` at QoS 1 now if connected, and at every (re)connect; `handler` gets its
    /// PUBLISHes (replacing an earlier one for the same topic).
    public func subscribe(_ filter: String, handler: @escaping (UnsafeRawBufferPointer, [UInt8]) -> Void) {
        let known = handlers[filter] != nil
        handlers[filter] = handler
        if !known, state == .connected {
            mosquitto_subscribe_v5(mosq, nil, filter, 1, 0, nil)
            updateWriteInterest()
        }
    }

    public func unsubscribe(_ filter: String) {
        guard handlers.removeValue(forKey: filter) != nil else { return }
        if state == .connected {
            mosquitto_unsubscribe(mosq, nil, filter)
            updateWriteInterest()
        }
    }

    /// One PUBLISH at QoS 1, not retained; `payload` is copied by libmosquitto before this returns.
    /// `correlation`: MQTT 5 correlation data (a command status echoes its command's).
    public func publish(
        topic: String, payload: UnsafeRawBufferPointer, contentType: String? = nil, correlation: [UInt8] = [],
        completion: @escaping (MQTTPublishResult) -> Void
    ) {
        guard state == .connected else {
            return completion(.failed(notConnectedReason))
        }
        var mid: Int32 = 0
        let rc = correlation.withUnsafeBytes { c in
            osh_mqtt_publish(
                mosq, &mid, topic, payload.baseAddress, Int32(payload.count), 1, contentType, c.baseAddress, UInt16(c.count))
        }
        guard rc == MOSQ_ERR_SUCCESS.rawValue else {
            return completion(.failed("PUBLISH to \(topic) not sent: \(Self.errorText(rc))"))
        }
        pending[mid] = Pending(sent: loop.now, completion: completion)
        updateWriteInterest()
    }

    /// Why nothing can be sent now, for the publisher's log line.
    public var notConnectedReason: String {
        switch state {
        case .waiting(let reason, _): return reason
        case .connecting: return "still connecting"
        case .idle, .stopped: return "not started"
        case .connected: return ""
        }
    }

    // MARK: Connecting

    private func connect() {
        retry = nil
        set(.connecting)
        guard
            let c = osh_mqtt_connect_start(
                mosq, options.host, Int32(options.port), Int32(options.keepAlive), options.sessionExpiry)
        else {
            return failed("cannot start a connect thread: \(String(cString: strerror(errno)))")
        }
        connecting = c
        do {
            connectWatch = try loop.add(fd: osh_mqtt_connect_fd(c), events: .readable) { [weak self] _ in
                self?.connectReturned()
            }
        } catch {
            osh_mqtt_connect_abandon(c)
            connecting = nil
            destroyed = true
            set(.stopped)
            Log.error("MQTT \(options.address): cannot watch the connect: \(error)")
        }
    }

    private func connectReturned() {
        guard let c = connecting else { return }
        if let r = connectWatch { loop.remove(r) }
        connectWatch = nil
        connecting = nil
        var err: Int32 = 0
        var line = [CChar](repeating: 0, count: 256)
        let rc = osh_mqtt_connect_finish(c, &err, &line, line.count)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else {
            let detail = String(cBuffer: line)
            let why =
                rc == MOSQ_ERR_ERRNO.rawValue
                ? String(cString: strerror(err)).lowercased()
                : pinRefusal(detail) ?? Self.errorText(rc) + (detail.isEmpty ? "" : " (\(detail))")
            return failed(rc == MOSQ_ERR_EAI.rawValue ? "cannot resolve \(options.host)" : "cannot connect: \(why)")
        }
        // TCP (and TLS) are up and CONNECT is queued; CONNACK comes through the socket.
        watchSocket()
    }

    private func connack(_ rc: Int) {
        guard rc == 0 else {
            let reason = String(cString: mosquitto_reason_string(Int32(rc)))
            unwatchSocket()
            mosquitto_disconnect(mosq)
            // 134 bad user name or password, 135 not authorised: what the board sends is wrong.
            let hint = rc == 134 || rc == 135 ? "; check the user name and password it is given" : ""
            return failed("the broker refused the connection: \(reason) (CONNACK reason code \(rc))\(hint)")
        }
        _ = policy.succeeded()
        hasConnected = true
        // libmosquitto resends what was in flight: its PUBACK is awaited from now.
        for mid in pending.keys { pending[mid]?.sent = loop.now }
        for filter in subscriptions { mosquitto_subscribe_v5(mosq, nil, filter, 1, 0, nil) }
        set(.connected)
    }

    private func disconnected(_ rc: Int) {
        guard state == .connected || state == .connecting else { return }
        unwatchSocket()
        let reason = rc == 0 ? "the broker closed the connection" : "connection lost: \(Self.errorText(Int32(rc)))"
        failed(reason)
    }

    /// An attempt or the link failed: retry on the backoff. Not logged here: the publisher says
    /// once that the broker is unreachable, with this reason, and once that it is back.
    private func failed(_ reason: String) {
        guard state != .stopped else { return }
        for mid in pending.keys { pending[mid]?.sent = nil }
        let v = policy.failed(key: reason)
        set(.waiting(reason: reason, retryIn: v.step))
        do {
            retry = try loop.addTimer(firstAt: loop.deadline(after: v.delay)) { [weak self] _ in self?.connect() }
        } catch {
            Log.error("MQTT \(options.address): cannot time the reconnect: \(error)")
        }
    }

    // MARK: The socket on the loop

    private func watchSocket() {
        let fd = mosquitto_socket(mosq)
        guard fd >= 0 else { return failed("no socket after the connect") }
        // libmosquitto's blocking connect leaves the socket blocking: a read of half a packet
        // would then wait on the loop. Non-blocking, its reads and writes stop at EAGAIN.
        guard osh_set_nonblocking(fd) == 0 else { return failed("cannot make the socket non-blocking") }
        do {
            watchingWrite = mosquitto_want_write(mosq)
            socketWatch = try loop.add(fd: fd, events: watchingWrite ? [.readable, .writable] : .readable) {
                [weak self] events in self?.socketReady(events)
            }
        } catch {
            failed("cannot watch the socket: \(error)")
        }
    }

    /// Before libmosquitto closes or replaces the socket: the loop forgets it first.
    private func unwatchSocket() {
        if let r = socketWatch { loop.remove(r) }
        socketWatch = nil
        watchingWrite = false
    }

    private func socketReady(_ events: EventLoop.Events) {
        if !events.isDisjoint(with: [.readable, .error, .hangup]) {
            let rc = mosquitto_loop_read(mosq, 1)
            if rc != MOSQ_ERR_SUCCESS.rawValue { return lost(rc) }
        }
        if events.contains(.writable) {
            let rc = mosquitto_loop_write(mosq, 1)
            if rc != MOSQ_ERR_SUCCESS.rawValue { return lost(rc) }
        }
        updateWriteInterest()
    }

    private func lost(_ rc: Int32) {
        guard state == .connected || state == .connecting else { return }
        unwatchSocket()
        // The TLS handshake finishes on the loop: OpenSSL's reason is in libmosquitto's log.
        var line = [CChar](repeating: 0, count: 256)
        let n = osh_mqtt_take_error(&line, line.count)
        let text = String(cBuffer: line)
        let why = pinRefusal(text) ?? Self.errorText(rc) + (n > 0 ? " (" + text + ")" : "")
        failed((state == .connecting ? "cannot connect: " : "connection lost: ") + why)
    }

    /// A handshake the pin refused, said with the key the broker did present (what to pin if the
    /// broker's key changed on purpose); nil for any other failure.
    private func pinRefusal(_ openSSLLine: String) -> String? {
        guard let ctx = pinContext, openSSLLine.hasSubstring("certificate verify failed") else { return nil }
        var key = [CChar](repeating: 0, count: 64)
        guard osh_mqtt_pin_presented(ctx, &key, key.count) > 0 else { return nil }
        let presented = String(cBuffer: key)
        return "the broker's key \(presented) is not the pinned one (pin_sha256); nothing was sent. "
            + "If the broker's key changed on purpose, set pin_sha256 = \"\(presented)\""
    }

    private func updateWriteInterest() {
        guard let r = socketWatch else { return }
        let want = mosquitto_want_write(mosq)
        guard want != watchingWrite else { return }
        watchingWrite = want
        try? loop.modify(r, events: want ? [.readable, .writable] : .readable)
    }

    /// Keep-alive and libmosquitto's retries, once a second; PUBLISHes past their time fail.
    private func tick() {
        if socketWatch != nil {
            let rc = mosquitto_loop_misc(mosq)
            if rc != MOSQ_ERR_SUCCESS.rawValue { return lost(rc) }
            updateWriteInterest()
        }
        let limit = EventLoop.nanoseconds(options.ackTimeout)
        let now = loop.now
        let late = pending.filter { p in p.value.sent.map { now &- $0 > limit } ?? false }
        for (mid, p) in late {
            pending[mid] = nil
            p.completion(.failed("no PUBACK from the \(options.brokerName) in \(Int(options.ackTimeout)) s"))
        }
    }

    private func acknowledged(_ mid: Int32, _ reason: Int) {
        guard let p = pending.removeValue(forKey: mid) else { return }
        p.completion(.acknowledged(reasonCode: reason))
    }

    private func failPending(_ why: String) {
        let all = pending
        pending.removeAll()
        for (_, p) in all { p.completion(.failed(why)) }
    }

    private func set(_ s: State) {
        guard s != state else { return }
        state = s
        onState?(s)
    }

    static func errorText(_ rc: Int32) -> String { String(cString: mosquitto_strerror(rc)) }
}

public struct MQTTError: Error, CustomStringConvertible, Equatable {
    public let description: String
    public init(_ d: String) { description = d }
}
