import OSHAgent
import OSHCore
import OSHDevNode
import OSHPlatform
import OSHSimulation
#if canImport(Glibc)
import Glibc
#endif

/// `osh-edge-dev demo`: the whole agent on a laptop — the development node on loopback
/// (or a real node with `--node`), simulated sources for every scalar output, and a
/// live table of what each datastream sent.
public struct DemoOptions: Sendable {
    public var duration: Double?
    /// An external node instead of the built-in one.
    public var nodeURL: String?
    public var user: String?
    public var password: String?
    public var tls: TLSPolicy = .verify
    public var stateDirectory: String?
    public var format: ScalarFormat = .omJSON
    public var uid: String?
    public var label: String?
    public var trustHostClock = true
    /// A recorded NMEA log replayed through a pseudo-terminal for gps_data (nil = simulated positions).
    public var gpsLog: String?
    /// The simulated microphone, looped: nil = generated pink noise at −20 dBFS (`DemoInputs`).
    public var audioWAV: String?
    /// No microphone at all.
    public var audio = true
    /// The camera: a generated test pattern through libx264 (false: no camera datastream).
    public var video = true
    public var videoFPS = 5.0
    /// Take the node's commands, and (with the built-in node) send some to ourselves through it:
    /// identify, a rate change and an upload of a recorded window, so the table shows the round trip.
    public var commands = true
    /// Record on the board at full rate (the orientation at the IMU's 100 Hz, the camera at 25
    /// frames per second) while streaming at the live rates, in the state directory's `record`.
    public var record = true
    public init() {}
}

public enum Demo {
    static let recordFPS = 25.0
    /// Runs until the duration passes or SIGINT/SIGTERM. Returns the final rows.
    @discardableResult
    public static func run(_ o: DemoOptions, output: @escaping (String) -> Void) throws -> [AgentRuntime.Row] {
        DemoSimulation.install()
        // Before the encoder and ALSA start their threads (they inherit the mask).
        let blocked = EventLoop.blockSignals([SIGINT, SIGTERM])
        // Give the caller its mask back (a test process spawns children after us).
        defer { EventLoop.unblockSignals(blocked) }
        var devNode: DevNode?
        let apiRoot: String
        if let url = o.nodeURL {
            apiRoot = url
        } else {
            let n = DevNode(config: DevNodeConfig())
            _ = try n.start()
            devNode = n
            apiRoot = n.apiRoot
        }
        defer { devNode?.stop() }

        let identity = try Agent.localIdentity(uid: o.uid, uidExtension: "", label: o.label)
        let credentials: CSCredentials = (o.user?.isEmpty ?? true) ? .none : .basic(username: o.user ?? "", password: o.password ?? "")
        var config = AgentConfig(
            server: NodeEndpoint(apiRoot: apiRoot, credentials: credentials, tls: o.tls),
            identity: identity, options: OutputOptions(uid: identity.uid),
            stateDirectory: o.stateDirectory ?? Agent.defaultStateDirectory())
        config.publisher.format = o.format
        config.trustHostClock = o.trustHostClock
        if o.record {
            // A small recording: the demo's state directory is the user's.
            config.record.enabled = true
            config.record.maxMegabytes = 64
            config.record.maxHours = 1
            config.recordRates = ["quat_orientation_data": 100]
            if o.video { config.recordRates["camera0_H264"] = Demo.recordFPS }
        }
        let loop = try EventLoop()
        // The simulated board: chips on a simulated I²C bus read by the real drivers, a WAV through
        // ALSA's file plugin, a test pattern through libx264.
        var plan = HardwarePlan()
        plan.barometer = .simulated
        plan.imu = .simulated
        plan.magnetometerRate = OutputSettings.defaults(for: OutputKind.magnetometer.settingsKey).rate
        try? StateFiles.makeDirectories(config.stateDirectory)
        plan.audio = o.audio ? .simulated : nil
        if o.audio {
            do { plan.audioWAV = try o.audioWAV ?? DemoInputs.pinkNoiseWAV(directory: config.stateDirectory) } catch {
                output("cannot write the demo's pink noise to \(config.stateDirectory): \(error)")
            }
        }
        plan.camera = o.video ? .simulated : nil
        plan.cameraFPS = o.videoFPS
        if o.record && o.video { plan.recordCamera(liveFPS: o.videoFPS, recordFPS: Demo.recordFPS) }
        plan.ptz = .simulated
        if let log = o.gpsLog {
            if access(log, R_OK) == 0 { plan.gps = .replay(logPath: log) } else { output("no NMEA log at \(log): gps_data is simulated") }
        }
        plan.scratchDirectory = config.stateDirectory
        let hardware = Hardware(loop: loop, plan: plan)
        hardware.open()
        for n in hardware.notes { output(n) }
        config.options = hardware.options(config.options)
        config.externalOutputs = Set(hardware.catalogueNames(config.options))
        config.video = hardware.hasVideo
        config.commands = o.commands
        config.extraSpecs = hardware.extraSpecs
        let agent = try AgentRuntime(config: config, loop: loop)
        agent.extraControls = hardware.extraControls(systemLabel: identity.label)
        output("osh-edge-dev demo: \(identity.uid) → \(apiRoot)" + (devNode != nil ? " (built-in development node)" : ""))
        try agent.start()
        try hardware.start(feeding: agent)
        defer { hardware.stop() }
        // A simulated status LED driven by the same StatusLED as a board's GPIO line.
        let ledLine = SimulatedGPIOLine()
        let led = StatusLED(line: ledLine) {
            LEDState.derive(
                registered: agent.registered, nodeReachable: agent.publisher.connectivity == .online,
                clockSynchronized: agent.clockState.isSynchronized)
        }
        try led.start(on: loop)
        defer { led.stop() }
        agent.onIdentify = { seconds in
            led.identify(seconds: seconds)
            return "blinking the (simulated) status LED for \(Int(seconds)) s"
        }
        var selfCommands: SelfCommands?
        // Through an external node too: the board is simulated, so its own commands drive nothing
        // real, and they show that node's command path end to end.
        if o.commands {
            selfCommands = try SelfCommands(loop: loop, agent: agent, server: config.server)
        }
        _ = selfCommands

        try loop.onSignals([SIGINT, SIGTERM]) { _ in loop.stop() }
        let table = StatusTable(interactive: isatty(1) != 0)
        // On a terminal the table is redrawn in place: log lines written between two redraws
        // would break it, so they are shown in it instead (the newest few, under the table).
        if table.interactive { Log.sink = { level, message in table.note(level, message) } }
        defer { if table.interactive { Log.sink = nil } }
        try loop.addTimer(firstAt: EventLoop.deadline(after: 1), interval: 1_000_000_000) { _ in
            selfCommands?.tick()
            table.identifying = led.isIdentifying
            output(table.render(agent))
        }
        if let d = o.duration { try loop.run(until: EventLoop.deadline(after: d)) } else { try loop.run() }
        try agent.stop(flushUntil: EventLoop.deadline(after: 3))
        output(StatusTable(interactive: false).render(agent))
        return agent.rows
    }
}

/// The live table: one row per datastream, redrawn in place on a terminal, plain lines otherwise.
struct StatusTable {
    let interactive: Bool
    final class Memory {
        var lastSent: [Int] = []
        var lastVideoSent = 0
        var lastTime = 0.0
        var drawnLines = 0
        var identifying = false
        var logLines: [String] = []
    }
    let memory = Memory()
    var identifying: Bool {
        get { memory.identifying }
        nonmutating set { memory.identifying = newValue }
    }

    /// A log line to show with the table (interactive only): the newest five are kept.
    func note(_ level: Log.Level, _ message: String) {
        memory.logLines.append("\(level.word): " + String(message.prefix(160)))
        if memory.logLines.count > 5 { memory.logLines.removeFirst(memory.logLines.count - 5) }
    }

    func render(_ a: AgentRuntime) -> String {
        let rows = a.rows
        let now = Double(Clock.monotonicNanoseconds()) / 1e9
        let dt = memory.lastTime > 0 ? now - memory.lastTime : 0
        var lines: [String] = []
        let state: String
        switch a.publisher.connectivity {
        case .online: state = a.registered ? "streaming" : "registering"
        case .backoff(_, let d): state = "node unreachable, retrying in \(Int(d)) s"
        case .probing: state = "probing the node"
        }
        lines.append(
            "\(state); clock: \(a.clockState.isSynchronized ? "trusted" : "held"); queued \(a.publisher.ring.occupied)"
                + (identifying ? "; LED: identify (blinking)" : ""))
        if a.config.commands {
            let ch = a.commandReceiver.map { "\($0.channel.state)" } ?? (a.lastCommand == nil ? "not yet" : "closed")
            lines.append("commands: channel \(ch); last: \(a.lastCommand ?? "none")")
        }
        if let r = a.recordingSummary { lines.append("recording: " + r) }
        if let u = a.uploadStatus { lines.append(u) }
        lines.append(
            pad("datastream", 30) + lpad("sent", 8) + lpad("bytes", 10) + lpad("rate/s", 8) + lpad("dropped", 9) + "  last value"
                + "                  last error")
        for (i, r) in rows.enumerated() {
            let prev = i < memory.lastSent.count ? memory.lastSent[i] : 0
            let rate = dt > 0 ? Double(r.counters.sent - prev) / dt : 0
            lines.append(
                pad(r.outputName, 30) + lpad(String(r.counters.sent), 8) + lpad(String(r.counters.bytes), 10)
                    + lpad(String(Int(rate.rounded())), 8) + lpad(String(r.counters.dropped), 9)
                    + "  " + pad(r.lastValue.isNaN ? "-" : "\(r.lastField) \(short(r.lastValue))", 26)
                    + (r.counters.lastError.map { String($0.prefix(60)) } ?? ""))
        }
        if let v = a.videoPublisher, let spec = a.videoSpec {
            // Video has its own path: frames sent, bytes, frames/s, dropped while one was in flight.
            let prev = memory.lastVideoSent
            let rate = dt > 0 ? Double(v.counters.sent - prev) / dt : 0
            let c = v.counters
            lines.append(
                pad(spec.outputName, 30) + lpad(String(c.sent), 8) + lpad(String(c.bytes), 10)
                    + lpad(String(Int(rate.rounded())), 8) + lpad(String(c.droppedBusy + c.droppedNotReady + c.droppedRejected), 9)
                    + "  " + pad(c.sent > 0 ? "frame \(c.bytes / max(c.sent, 1)) B" : "-", 26)
                    + (c.lastError.map { String($0.prefix(60)) } ?? ""))
            memory.lastVideoSent = c.sent
        }
        if interactive, !memory.logLines.isEmpty {
            lines.append("log (newest last):")
            lines += memory.logLines.map { "  " + $0 }
        }
        memory.lastSent = rows.map(\.counters.sent)
        memory.lastTime = now
        var text = lines.joined(separator: "\n")
        if interactive && memory.drawnLines > 0 {
            // Move up over the previous table and clear it: redraw in place.
            text = "\u{1B}[\(memory.drawnLines)A\u{1B}[J" + text
        }
        memory.drawnLines = interactive ? lines.count : 0
        return text
    }

    /// A value with about four significant digits, for a table cell.
    private func short(_ v: Double) -> String {
        let digits = v == 0 ? 0 : max(0, 3 - Int(log10(abs(v)).rounded(.down)))
        var scale = 1.0
        for _ in 0..<min(digits, 7) { scale *= 10 }
        let r = (v * scale).rounded() / scale
        return "\(r)"
    }

    private func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s + " " : s + String(repeating: " ", count: n - s.count) }
    private func lpad(_ s: String, _ n: Int) -> String { s.count >= n ? " " + s : String(repeating: " ", count: n - s.count) + s }
}

extension Agent {
    /// The service's state directory when root, else a per-user one.
    public static func defaultStateDirectory() -> String {
        if getuid() == 0 { return "/var/lib/osh-edge" }
        if let x = getenv("XDG_STATE_HOME").map({ String(cString: $0) }), !x.isEmpty { return x + "/osh-edge" }
        if let h = getenv("HOME").map({ String(cString: $0) }), !h.isEmpty { return h + "/.local/state/osh-edge" }
        return "/tmp/osh-edge-\(getuid())"
    }
}

extension Agent {
    /// `osh-edge-dev node`: the development node alone, until killed; with `journal`, its resources
    /// and their ids survive restarts (DevNodeConfig.journalPath); with `ledger`, what it accepted is
    /// appended there (DevNodeConfig.ledgerPath); with `controlStdin`, standard input steers it
    /// (DevNode.control) and the answers go to `output`.
    public static func runDevelopmentNode(
        port: UInt16, users: [(String, String)], journal: String? = nil,
        ledger: String? = nil, controlStdin: Bool = false,
        oshInMemoryStore: Bool = false, refuseReceivers: Bool = false, mqttBroker: MQTTBroker? = nil,
        output: @escaping (String) -> Void
    ) throws -> Never {
        var config = DevNodeConfig()
        config.port = port
        config.users = users
        config.journalPath = journal
        config.ledgerPath = ledger
        config.oshInMemoryStore = oshInMemoryStore
        config.refuseReceivers = refuseReceivers ? DevNodeConfig.oshSecuredReceiverRefusal : nil
        try DevNode.runForever(
            config: config,
            onStart: { n in
                n.journalNotes.forEach(output)
                output("development node listening at \(n.apiRoot)" + (users.isEmpty ? "" : " (Basic auth required)"))
                guard let b = mqttBroker else { return }
                // Kept for the process's life: the node never returns.
                let ingest = DevNodeMQTTIngest(node: n, host: b.host, port: b.port)
                do {
                    try ingest.start()
                    _ = Unmanaged.passRetained(ingest)
                    output(
                        "MQTT side: storing what \(b.url) receives on /api/datastreams/+/observations and "
                            + "api/datastreams/+/observations:data/+")
                } catch {
                    output("MQTT side: \(error); the node runs without it")
                }
            }, controlReply: controlStdin ? output : nil)
    }
}

/// The demo as its own operator: once the command channel is open, POSTs `identify` and a
/// `setRate` to the node, which forwards them over the WebSocket back to the agent.
final class SelfCommands {
    let agent: AgentRuntime
    let http: HTTPClient
    let builder: CSRequestBuilder
    private var step = 0

    init(loop: EventLoop, agent: AgentRuntime, server: NodeEndpoint) throws {
        self.agent = agent
        http = try HTTPClient(loop: loop, server: server)
        builder = CSRequestBuilder(credentials: server.credentials)
    }

    func tick() {
        guard let r = agent.commandReceiver, r.channel.state == .open else { return }
        step += 1
        let target = agent.specs.first { $0.outputName == "quat_orientation_data" }?.outputName ?? agent.specs.first?.outputName ?? ""
        let parameters: String
        switch step {
        case 2: parameters = #"{"identify":{"duration":5}}"#
        case 5: parameters = #"{"setRate":{"outputName":""# + target + #"","rate":2}}"#
        case 20 where agent.recording != nil:
            // Ten seconds of the full-rate recording, from 15 s ago, pulled as the node would.
            let now = Clock.realtimeSeconds()
            parameters =
                #"{"uploadTimeRange":{"start":""# + ISOTime.string(epochSeconds: now - 15) + #"","stop":""#
                + ISOTime.string(epochSeconds: now - 5) + #"","outputs":""}}"#
        case 3:
            // Point the (simulated) pan-tilt unit 30° right.
            guard let ptz = agent.commandReceivers[PTZSchema.inputName], ptz.channel.state == .open else { return }
            send(ptz.controlStreamID, #"{"rpan":30}"#)
            return
        default: return
        }
        send(r.controlStreamID, parameters)
    }

    private func send(_ controlStreamID: String, _ parameters: String) {
        http.send(
            builder.request(
                .post, "/controlstreams/" + controlStreamID + "/commands", contentType: MediaType.json,
                body: Array(("{\"parameters\":" + parameters + "}").utf8))
        ) { _ in }
    }
}
