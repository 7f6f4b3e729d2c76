import CShim
import OSHCore
#if canImport(Glibc)
import Glibc
#endif

/// One position report from gpsd: a `TPV` object with a 2D or 3D fix.
public struct GPSDReport: Sendable, Equatable {
    /// Unix epoch seconds from TPV's ISO 8601 `time`, when gpsd has one.
    public var time: Double?
    public var lat: Double
    public var lon: Double
    /// Height above the WGS84 ellipsoid (gpsd ≥ 3.20 `altHAE`).
    public var altHAE: Double?
    /// Height above mean sea level (`altMSL`, or the older `alt`).
    public var altMSL: Double?
    /// 2 = 2D fix, 3 = 3D fix.
    public var mode: Int
    /// The receiver's device path as gpsd names it.
    public var device: String?

    public init(time: Double?, lat: Double, lon: Double, altHAE: Double?, altMSL: Double?, mode: Int, device: String?) {
        self.time = time
        self.lat = lat
        self.lon = lon
        self.altHAE = altHAE
        self.altMSL = altMSL
        self.mode = mode
        self.device = device
    }

    /// The report in a parsed TPV object, or nil: not TPV, mode < 2, or no finite lat/lon.
    public init?(tpv v: JSONValue) {
        guard v["class"]?.string == "TPV", let mode = v["mode"]?.int, mode >= 2,
            let lat = v["lat"]?.double, let lon = v["lon"]?.double, lat.isFinite, lon.isFinite,
            abs(lat) <= 90, abs(lon) <= 180
        else { return nil }
        self.init(
            time: v["time"]?.string.flatMap { ISOTime.parse($0) },
            lat: lat, lon: lon,
            altHAE: v["altHAE"]?.double,
            altMSL: v["altMSL"]?.double ?? v["alt"]?.double,
            mode: mode, device: v["device"]?.string)
    }
}

/// gpsd as the position source: a non-blocking TCP client on the one event loop. It sends
/// `?WATCH={"enable":true,"json":true}`, reads newline-delimited JSON, and calls `onFix` for
/// every TPV report with a fix (mode ≥ 2). SKY, GST and other classes are skipped without
/// being parsed. Refused, reset or closed connections are retried with backoff.
///
/// Logging (`RetryLog`): an outage is one warning with the first retry's delay, then only what
/// changes until gpsd answers again (its first line on a new connection), which is one line too;
/// a gpsd that accepts and hangs up at once (socket activation failing) stays quiet while it
/// retries. The state texts are for status displays, not the log.
///
/// Use it when gpsd already owns the receiver (SerialSource says so when it finds gpsd
/// holding the port). Not thread-safe: use it on the loop's thread only. Callbacks may call `stop()`.
public final class GPSDSource {
    public enum State: Sendable, Equatable, CustomStringConvertible {
        case connecting
        /// Connected and watching; no fix (yet, or any more).
        case waitingForFix
        /// Fixes are arriving.
        case streaming
        /// Not connected; a sentence saying why and when it is retried.
        case disconnected(String)
        /// A person must act (bad address).
        case blocked(String)

        public var description: String {
            switch self {
            case .connecting: return "connecting to gpsd"
            case .waitingForFix: return "connected to gpsd, waiting for a fix"
            case .streaming: return "receiving fixes from gpsd"
            case .disconnected(let s): return s
            case .blocked(let s): return s
            }
        }
    }

    public static let defaultPort: UInt16 = 2947
    static let watchBytes = Array("?WATCH={\"enable\":true,\"json\":true}\n".utf8)

    public let host: String
    public let port: UInt16

    /// Tunables; set them before `start()`.
    /// Reconnect delays: the retry policy's.
    public var backoff: Backoff {
        get { log.backoff }
        set { log.backoff = newValue }
    }
    public var connectTimeout: Double = 5
    /// Longest JSON line kept; longer ones (never seen from gpsd) are dropped whole.
    public var maxLineBytes = 16 * 1024

    public private(set) var state: State = .disconnected("not started")
    public private(set) var fixesReceived = 0
    public private(set) var linesReceived = 0
    public private(set) var oversizedLines = 0
    /// Successful connections after the first one.
    public private(set) var reconnectCount = 0
    public private(set) var connectAttempts = 0
    /// From gpsd's VERSION and DEVICES reports.
    public private(set) var release: String?
    public private(set) var devices: [String] = []

    private let loop: EventLoop
    private let onFix: (GPSDReport) -> Void
    private let onState: (State) -> Void

    private enum Phase { case idle, retry, connectTimeout }
    private var phase: Phase = .idle
    private lazy var deadline = LoopDeadline(loop: loop) { [weak self] in self?.timerFired() }
    private var fd: Int32 = -1
    private var socket: FileDescriptor { FileDescriptor(rawValue: fd) }
    private var registration: EventLoop.Registration?
    private var connected = false
    private var everConnected = false
    private var generation: UInt64 = 0
    private var running = false
    private var log = RetryLog()
    /// gpsd said something on this connection (its VERSION comes first).
    private var answered = false
    /// gpsd answered on some connection before.
    private var everAnswered = false
    private var line: [UInt8] = []
    private var discarding = false
    private let buffer: UnsafeMutableRawBufferPointer

    public init(
        loop: EventLoop, host: String = "127.0.0.1", port: UInt16 = GPSDSource.defaultPort,
        onFix: @escaping (GPSDReport) -> Void,
        onState: @escaping (GPSDSource.State) -> Void
    ) {
        self.loop = loop
        self.host = host
        self.port = port
        self.onFix = onFix
        self.onState = onState
        buffer = .allocate(byteCount: 8192, alignment: 16)
    }

    deinit {
        if let r = registration { loop.remove(r) }
        if fd >= 0 { socket.close() }
        deadline.cancel()
        buffer.deallocate()
    }

    public var endpoint: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    public func start() {
        guard !running else { return }
        running = true
        _ = log.recovered()  // a new start is a new story: the backoff starts over
        line.reserveCapacity(min(maxLineBytes, 64 * 1024))
        connect()
    }

    public func stop() {
        guard running else { return }
        running = false
        closeSocket()
        deadline.cancel()
        phase = .idle
        setState(.disconnected("stopped"))
    }

    /// `localhost` → 127.0.0.1; other names are not resolved (a DNS lookup would block the loop).
    static func numericHost(_ host: String) -> String {
        host == "localhost" ? "127.0.0.1" : host
    }

    // MARK: - Connecting

    private func connect() {
        guard running else { return }
        connectAttempts += 1
        setState(.connecting)
        var inProgress: Int32 = 0
        let newFD = osh_tcp_connect_numeric(Self.numericHost(host), port, &inProgress)
        guard newFD >= 0 else {
            let e = errno
            if e == EINVAL {
                block("gpsd host \"\(host)\" is not an IP address; use 127.0.0.1 or the address of the gpsd machine")
            } else {
                failed(e)
            }
            return
        }
        fd = newFD
        do {
            registration = try loop.add(fd: newFD, events: inProgress != 0 ? .writable : .readable) { [weak self] ev in
                self?.ready(ev)
            }
        } catch {
            closeSocket()
            retryLater("cannot watch the gpsd socket: \(error)")
            return
        }
        if inProgress != 0 {
            schedule(.connectTimeout, after: connectTimeout)
        } else {
            didConnect()
        }
    }

    private func ready(_ events: EventLoop.Events) {
        guard fd >= 0 else { return }
        if connected {
            readable(events)
            return
        }
        let err = osh_socket_error(fd)
        if err != 0 {
            closeSocket()
            failed(err > 0 ? err : errno)
            return
        }
        guard let r = registration else { return }
        do { try loop.modify(r, events: .readable) } catch {
            closeSocket()
            retryLater("cannot watch the gpsd socket: \(error)")
            return
        }
        didConnect()
    }

    private func didConnect() {
        connected = true
        phase = .idle
        deadline.disarm()
        line.removeAll(keepingCapacity: true)
        discarding = false
        answered = false
        do {
            try Self.watchBytes.withUnsafeBytes { try socket.sendAll($0) }
        } catch {
            lost((error as? SystemError)?.code.text ?? "\(error)")
            return
        }
        if everConnected { reconnectCount += 1 }
        everConnected = true
        setState(.waitingForFix)
    }

    private func failed(_ e: Int32) {
        if e == ECONNREFUSED {
            retryLater("gpsd is not listening on \(endpoint) (is it installed and running? `sudo systemctl enable --now gpsd.socket`)")
        } else {
            retryLater("cannot connect to gpsd at \(endpoint): \(Errno(e).text)")
        }
    }

    // MARK: - Reading

    private func readable(_ events: EventLoop.Events) {
        let gen = generation
        let socket = self.socket
        for _ in 0..<64 {
            switch socket.readAvailable(into: buffer) {
            case .bytes(let n):
                feed(UnsafeRawBufferPointer(start: buffer.baseAddress, count: n))
                guard running, gen == generation else { return }
            case .empty:
                return
            case .end:
                lost("gpsd closed the connection")
                return
            case .failed(let e):
                lost(e.code.text)
                return
            }
        }
    }

    /// Splits bytes into lines; a line longer than `maxLineBytes` is dropped up to its newline.
    private func feed(_ chunk: UnsafeRawBufferPointer) {
        let gen = generation
        var start = 0
        let n = chunk.count
        while start < n {
            var end = start
            while end < n && chunk[end] != 0x0A { end += 1 }
            let piece = UnsafeRawBufferPointer(rebasing: chunk[start..<end])
            let complete = end < n
            if discarding {
                if complete { discarding = false }
            } else if line.count + piece.count > maxLineBytes {
                oversizedLines += 1
                line.removeAll(keepingCapacity: true)
                discarding = !complete
            } else if complete && line.isEmpty {
                handleLine(piece)  // the whole line is in this chunk: no copy
            } else {
                line.append(contentsOf: piece)
                if complete {
                    line.withUnsafeBytes { handleLine($0) }
                    line.removeAll(keepingCapacity: true)
                }
            }
            guard running, gen == generation else { return }
            start = end + 1
        }
    }

    private static let classPrefix = Array("{\"class\":\"".utf8)

    private func handleLine(_ raw: UnsafeRawBufferPointer) {
        var bytes = raw
        while let last = bytes.last, last == 0x0D || last == 0x20 { bytes = UnsafeRawBufferPointer(rebasing: bytes.dropLast()) }
        guard !bytes.isEmpty else { return }
        linesReceived += 1
        // gpsd writes "class" first; read it from the prefix so SKY and friends are never parsed.
        var cls: String?
        if bytes.count > Self.classPrefix.count && bytes.starts(with: Self.classPrefix) {
            var i = Self.classPrefix.count
            while i < bytes.count && bytes[i] != 0x22 { i += 1 }
            cls = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[Self.classPrefix.count..<i]), as: UTF8.self)
            switch cls {
            case "TPV", "VERSION", "DEVICES", "ERROR": break
            default:
                heard()
                return
            }
        }
        guard let v = try? JSONValue.parse(bytes), let c = cls ?? v["class"]?.string else { return heard() }
        if c == "VERSION" { release = v["release"]?.string }
        heard()
        switch c {
        case "TPV":
            if let report = GPSDReport(tpv: v) {
                fixesReceived += 1
                setState(.streaming)
                onFix(report)
            } else if v["mode"]?.int != nil {
                setState(.waitingForFix)
            }
        case "VERSION":
            break  // said by heard(), which the VERSION line opening a connection triggers
        case "DEVICES":
            devices = (v["devices"]?.array ?? []).compactMap { $0["path"]?.string }
            if devices.isEmpty {
                log.note(.warning, "gps: gpsd at \(endpoint) has no receiver (check DEVICES in /etc/default/gpsd, or plug one in)")
            } else {
                log.note(.info, "gps: gpsd devices: \(devices.joined(separator: ", "))")
            }
        case "ERROR":
            log.note(.warning, "gps: gpsd says: \(v["message"]?.string ?? "error")")
        default:
            break
        }
    }

    /// gpsd's first line on a connection: it is there (again). One line, with its release when the
    /// line was VERSION.
    private func heard() {
        guard !answered else { return }
        answered = true
        let version = release.map { " \($0)" } ?? ""
        if log.recovered() && everAnswered {
            log.note(.notice, "gps: connected to gpsd\(version) at \(endpoint) again")
        } else {
            log.note(.notice, "gps: connected to gpsd\(version) at \(endpoint)")
        }
        everAnswered = true
    }

    private func lost(_ why: String) {
        closeSocket()
        retryLater("lost gpsd at \(endpoint) (\(why))")
    }

    // MARK: - Timer and state

    private func timerFired() {
        switch phase {
        case .idle:
            break
        case .retry:
            phase = .idle
            connect()
        case .connectTimeout:
            phase = .idle
            guard !connected, fd >= 0 else { return }
            closeSocket()
            retryLater("no answer from gpsd at \(endpoint) within \(SerialSource.seconds(connectTimeout))")
        }
    }

    private func schedule(_ p: Phase, after seconds: Double) {
        guard running else { return }
        phase = p
        do {
            try deadline.arm(after: seconds)
        } catch {
            Log.error("gps: cannot arm a timer: \(error)")
        }
    }

    private func retryLater(_ why: String) {
        let step = log.nextStep
        // The state says when the next attempt is, every time; the log says it once per outage.
        let pause = state == .streaming && !log.isDown ? "positions pause, " : ""
        setState(.disconnected("\(why); retrying in \(SerialSource.seconds(step))"))
        let verdict = log.failed(.warning, "gps: " + why, firstSuffix: "; \(pause)retrying in \(SerialSource.seconds(step))")
        schedule(.retry, after: verdict.delay)
    }

    private func block(_ why: String) {
        setState(.blocked(why))
        log.failed(.error, "gps: " + why)
    }

    private func closeSocket() {
        if let r = registration { loop.remove(r) }
        registration = nil
        if fd >= 0 { socket.close() }
        fd = -1
        connected = false
        generation &+= 1
    }

    private func setState(_ s: State) {
        guard s != state else { return }
        state = s
        onState(s)
    }

    // MARK: - Probe

    /// What a one-off check found at a gpsd address.
    public struct Probe: Sendable, Equatable {
        public var release: String?
        public var devices: [String]
        public init(release: String?, devices: [String]) {
            self.release = release
            self.devices = devices
        }
    }

    /// A blocking check (for a CLI `probe`, before any loop runs): connects, reads gpsd's VERSION,
    /// asks `?DEVICES;` and returns what it learned within `timeout` seconds, or a sentence why not.
    public static func probe(
        host: String = "127.0.0.1", port: UInt16 = defaultPort,
        timeout: Double = 1
    ) -> Result<Probe, SystemError> {
        let endpoint = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        let deadline = EventLoop.deadline(after: timeout)
        var inProgress: Int32 = 0
        let fd = osh_tcp_connect_numeric(numericHost(host), port, &inProgress)
        guard fd >= 0 else { return .failure(.last("connect", subject: "to gpsd at \(endpoint)")) }
        let socket = FileDescriptor(rawValue: fd)
        defer { socket.close() }
        func wait(_ events: Int16) -> Bool { (try? socket.wait(for: events, until: deadline)) ?? false }
        if inProgress != 0 {
            guard wait(Int16(POLLOUT)) else { return .failure(SystemError("connect", errno: ETIMEDOUT, subject: "to gpsd at \(endpoint)")) }
            let err = osh_socket_error(fd)
            if err != 0 { return .failure(SystemError("connect", errno: err > 0 ? err : errno, subject: "to gpsd at \(endpoint)")) }
        }
        do {
            try Array("?DEVICES;\n".utf8).withUnsafeBytes { try socket.sendAll($0) }
        } catch {
            return .failure(
                (error as? SystemError)?.on("to gpsd at \(endpoint)") ?? SystemError("send", .ioError, subject: "to gpsd at \(endpoint)"))
        }
        var result = Probe(release: nil, devices: [])
        var sawVersion = false, sawDevices = false
        var pending: [UInt8] = []
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
        defer { chunk.deallocate() }
        while !sawDevices && wait(Int16(POLLIN)) {
            let got = socket.readAvailable(into: chunk)
            if case .empty = got { continue }
            guard case .bytes(let n) = got else { break }
            pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[0..<n]))
            while let nl = pending.firstIndex(of: 0x0A) {
                let lineBytes = Array(pending[..<nl])
                pending.removeSubrange(...nl)
                guard let v = try? JSONValue.parse(lineBytes) else { continue }
                switch v["class"]?.string {
                case "VERSION":
                    sawVersion = true
                    result.release = v["release"]?.string
                case "DEVICES":
                    sawDevices = true
                    result.devices = (v["devices"]?.array ?? []).compactMap { $0["path"]?.string }
                default: break
                }
            }
            if pending.count > 64 * 1024 { break }
        }
        guard sawVersion || sawDevices else {
            return .failure(SystemError("read", errno: ETIMEDOUT, subject: "from \(endpoint) (no gpsd VERSION)"))
        }
        return .success(result)
    }
}
