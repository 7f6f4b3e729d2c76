import OSHCore
import OSHPlatform

/// Everything `osh-edge run` and `osh-edge-dev demo` need to know.
public struct AgentConfig: Sendable {
    public var server: HTTPServer
    public var identity: SystemIdentity
    public var options: OutputOptions
    /// Output names to publish (scalar outputs; video comes with the camera issue). Nil = all scalar outputs.
    public var outputs: [String]?
    /// Rate overrides per output name (Hz).
    public var rates: [String: Double] = [:]
    public var publisher = PublisherSettings()
    public var ringCapacity = 1000
    /// Store-and-forward in `stateDirectory/spool` (off unless enabled).
    public var spool = SpoolSettings()
    /// Directory for the per-server id cache.
    public var stateDirectory: String
    /// Trust the host clock even if the kernel says it is unsynchronised (the demo's default).
    public var trustHostClock = false
    /// Never stamp a time before this (epoch seconds): the build's date.
    public var notBefore: Double = 1_767_225_600  // 2026-01-01
    /// Where gps_data comes from; nil = simulated (demo) or disabled.
    public var gps: GPSInputConfig?
    /// Publish the camera datastream (swe+binary, through the video path: one frame in flight).
    public var video = false
    /// Register the `device_control` control stream and take the node's commands over its WebSocket.
    public var commands = false
    /// Outputs beyond the catalogue's (a pan-tilt unit's `ptz_position`).
    public var extraSpecs: [OutputSpec] = []
    /// The node's command timing as the receiver assumes it (OSH: 5 s); tests shorten it.
    public var commandOptions = CommandReceiver.Options()
    /// Waits between failed registrations (1, 2, 4 … 30 s); tests shorten it.
    public var registrationBackoff = Backoff(initial: 1, maximum: 30)
    /// Outputs whose values arrive through `record(_:monotonicTime:values:)` from a device input
    /// (barometer, IMU, audio…); the others are sampled on a timer (simulated values, health).
    public var externalOutputs: Set<String> = []
    /// `[record]`: the board's own recording (off unless enabled).
    public var record = RecordSettings()
    /// Recording rates (Hz) by the datastream's output name (`MPU9250_Accelerometer_data`, not
    /// `accelerometer`); filled from `record` for the outputs published, empty when it is off.
    public var recordRates: [String: Double] = [:]

    public init(server: HTTPServer, identity: SystemIdentity, options: OutputOptions, stateDirectory: String) {
        self.server = server
        self.identity = identity
        self.options = options
        self.stateDirectory = stateDirectory
    }
}

/// The running agent, built as a chain of stages on one EventLoop:
///
///     source (Inputs/) → OutputPort (typed sample → slots) → OutputGate (enable, rate)
///       → ring (Publisher) → encoder → HTTPNodeClient (Transport/) → node
///
/// beside the chain: the ClockGate (when observations get wall-clock times), the
/// RegistrationService (the ids the publisher posts to) and the CommandService (the node's
/// commands, applied to the gate), and the TimedSampler for the outputs no device paces.
/// This type only builds and wires them.
public final class AgentRuntime {
    public let loop: EventLoop
    public let config: AgentConfig
    public let specs: [OutputSpec]
    public let publisher: Publisher
    /// The camera datastream, when `config.video`.
    public let videoSpec: OutputSpec?
    public let videoPublisher: VideoPublisher?
    /// Store-and-forward, when `[publisher] spool = true` and its directory opened.
    public private(set) var fileSpool: FileSpool?
    /// The on-board recording (issue 18), when `[record] enabled` and its directory opened.
    public private(set) var recording: RecordingStore?
    private var recorder: Recorder?
    private var uploader: Uploader?
    /// An upload the previous process did not finish: reported FAILED once the command channel is up.
    private var interruptedUpload: (commandID: String, message: String)?
    /// The camera records faster than it streams: it encodes at the recording's rate with a key
    /// frame every live interval, and only the key frames go live (a P-frame cannot be thinned).
    private var videoLiveKeyFramesOnly = false

    private let http: HTTPClient
    private let node: HTTPNodeClient
    private let gate: OutputGate
    private let clock: ClockGate
    private let registration: RegistrationService
    private lazy var commands = CommandService(runtime: self, http: http, builder: node.builder)
    private var timers: [EventLoop.Timer] = []
    /// device_health and simulated outputs, once started.
    private var sampler: TimedSampler?
    private var gpsPort: OutputPort<PositionSample>?
    /// The publisher's outage: logged when it starts and when it ends, not at every probe.
    private var nodeOutage = RetryLog()
    private var gpsInput: GPSInput?
    /// The camera's datastream on/off (enableOutput).
    var videoEnabled = true

    public init(config: AgentConfig, loop: EventLoop) throws {
        self.loop = loop
        self.config = config
        let catalogue = OutputCatalogue.all(config.options)
        let wanted = config.outputs.map(Set.init)
        specs = catalogue.filter { (wanted?.contains($0.outputName) ?? true) && $0.binaryEncoding == nil } + config.extraSpecs
        http = try HTTPClient(loop: loop, server: config.server)
        let builder = CSRequestBuilder(credentials: config.server.credentials)
        node = HTTPNodeClient(http: http, builder: builder)
        let widest = specs.map { $0.leaves.count }.max() ?? 1
        let ring = ObservationRing(capacity: config.ringCapacity, maxValues: widest, datastreams: specs.count)
        let encoders = try specs.map { try ObservationEncoder(spec: $0, format: config.publisher.format) }
        publisher = Publisher(
            ring: ring, encoders: encoders, transport: node, settings: config.publisher,
            now: { Double(Clock.monotonicNanoseconds()) / 1e9 })
        gate = OutputGate(
            rates: specs.map { config.rates[$0.outputName] ?? $0.defaultRate },
            publisher: publisher)
        clock = ClockGate(trustHostClock: config.trustHostClock, notBefore: config.notBefore)
        if config.video, let v = catalogue.first(where: { $0.binaryEncoding != nil }) {
            videoSpec = v
            videoPublisher = VideoPublisher(
                transport: node, link: publisher, expectedFrameBytes: config.options.videoWidth * config.options.videoHeight / 2)
        } else {
            videoSpec = nil
            videoPublisher = nil
        }
        registration = RegistrationService(
            loop: loop, client: node, builder: builder, config: config,
            specs: specs + (videoSpec.map { [$0] } ?? []))
        if config.spool.enabled { openSpool() }
        if config.record.enabled { openRecording() }
        wire()
    }

    /// Store-and-forward in `stateDirectory/spool`; without it the agent still streams, and only
    /// what a long outage overflows is lost.
    private func openSpool() {
        let dir = config.stateDirectory + "/spool"
        do {
            let spool = try FileSpool(
                options: FileSpoolOptions(
                    directory: dir, maxBytes: config.spool.maxMegabytes << 20,
                    sync: config.spool.sync),
                outputNames: specs.map(\.outputName), maxValues: publisher.ring.maxValues)
            spool.onProblem = { Log.warning($0) }
            if spool.pendingBytes > 0 {
                Log.notice(
                    "spool: \(spool.pendingBytes) bytes of observations from an earlier outage wait in \(dir); "
                        + "they are sent after the ring once the node answers")
            }
            publisher.spool = spool
            fileSpool = spool
        } catch {
            Log.error("spool disabled: \(error); check that \(config.stateDirectory) is writable by the service user")
        }
    }

    /// The recording in `stateDirectory/record`, at each output's `[record.NAME]` rate; without it
    /// the agent streams as before and `uploadTimeRange` is refused.
    private func openRecording() {
        let names = specs.map(\.outputName) + (videoSpec.map { [$0.outputName] } ?? [])
        let rates = names.map { config.recordRates[$0] ?? 0 }
        guard rates.contains(where: { $0 > 0 }) else {
            Log.warning("recording: none of the recorded outputs is published here; nothing is recorded")
            return
        }
        let dir = config.stateDirectory + "/record"
        let store: RecordingStore
        do {
            // The recording leaves the spool room for two of its segments (and the state files a MiB).
            let keepFree = (fileSpool.map { 2 * $0.options.segmentBytes } ?? 0) + (1 << 20)
            store = try RecordingStore(
                options: RecordingOptions(
                    directory: dir, maxBytes: config.record.maxMegabytes << 20,
                    maxAge: config.record.maxHours * 3600, sync: config.record.sync,
                    keepFreeBytes: keepFree),
                outputNames: names.indices.filter { rates[$0] > 0 }.map { names[$0] })
        } catch {
            Log.error("recording disabled: \(error); check that \(config.stateDirectory) is writable by the service user")
            return
        }
        store.onProblem = { Log.warning($0) }
        if let w = store.boundWarning { Log.warning(w) }
        // A full card: the spool (the live backlog) comes first, the recording gives back room.
        fileSpool?.onNoSpace = { [weak store] bytes in (store?.yieldSpace(bytes) ?? 0) > 0 }
        let r = Recorder(rates: rates, sink: store)
        r.clockOffset = publisher.clockOffset
        gate.recorder = r
        recorder = r
        recording = store
        if let v = videoSpec {
            videoLiveKeyFramesOnly = rates[specs.count] > (config.rates[v.outputName] ?? v.defaultRate)
        }
        let publisher = publisher
        let up = Uploader(
            loop: loop,
            settings: .init(
                directory: dir, outputNames: names, recorded: rates.map { $0 > 0 },
                videoIndex: videoSpec == nil ? nil : specs.count, share: config.record.uploadShare,
                format: config.publisher.format, batchMax: config.publisher.batchMax),
            hooks: .init(
                datastreamID: { [unowned self] i in
                    i < self.specs.count ? publisher.datastreamID(i) : self.videoPublisher?.datastreamID
                },
                encoder: { publisher.encoder($0) },
                linkOnline: { publisher.connectivity == .online },
                linkFailed: { publisher.requestFailed() },
                datastreamLost: { [unowned self] i in
                    Log.warning("upload: the node no longer knows \(names[i])'s datastream; registering again")
                    self.reregister()
                },
                report: { [unowned self] id, outcome in
                    self.commandReceiver?.report(commandID: id, outcome)
                    self.commands.laterOutcome("uploadTimeRange", outcome)
                }),
            scalarTransport: node, videoTransport: node)
        interruptedUpload = up.interruptedJob()
        uploader = up
        Log.notice(
            "recording \(zip(names, rates).filter { $0.1 > 0 }.map { "\($0.0) " + Self.rateText($0.1) }.joined(separator: ", ")) in \(dir)")
    }

    /// "at 25 Hz", "at 2.5 Hz", "every 60 s" (device_health's once a minute).
    static func rateText(_ hz: Double) -> String {
        if hz < 1 { return "every \(Int((1 / hz).rounded())) s" }
        return hz == hz.rounded() ? "at \(Int(hz)) Hz" : "at \(hz) Hz"
    }

    /// `uploadTimeRange` from the node: EXECUTING while it runs, or why not.
    func startUpload(commandID: String?, start: Double, stop: Double, outputs: [String]) -> CommandOutcome {
        guard let uploader else {
            return .rejected(
                config.record.enabled
                    ? "the recording could not be opened on this board (see its log)"
                    : "recording is off: set [record] enabled = true to record on the board")
        }
        guard let commandID else { return .rejected("an upload needs the node's command id to report its progress") }
        return uploader.start(commandID: commandID, start: start, stop: stop, outputs: outputs)
    }

    /// The device_control channel is open: an upload the previous process left unfinished is reported now.
    func commandChannelReady() {
        guard let u = interruptedUpload, let receiver = commandReceiver else { return }
        interruptedUpload = nil
        receiver.report(commandID: u.commandID, .failed(u.message))
        Log.notice("upload \(u.commandID): reported FAILED — \(u.message)")
    }

    /// The running upload's progress or the last one's result (status line, the demo's table).
    public var uploadStatus: String? { uploader?.statusLine }

    /// What the recording holds and lost, one line (the demo's table); nil when not recording.
    public var recordingSummary: String? {
        guard let store = recording, let r = recorder else { return nil }
        var records = 0, dropped = 0
        for (_, c) in counterRows {
            records += c.recorded
            dropped += c.recordDropped
        }
        let parts = r.rates.indices.filter(r.isRecording).map { i in
            "\(i < specs.count ? specs[i].outputName : videoSpec?.outputName ?? "camera") " + Self.rateText(r.rates[i])
        }
        return parts.joined(separator: ", ")
            + "; \(records) records this run, \(Double(store.storedBytes * 10 / (1 << 20)) / 10) MiB on the card"
            + (dropped > 0 ? ", \(dropped) not kept (bound, clock, disk)" : "")
    }

    /// Connects the stages' callbacks: registration feeds the publishers' ids and starts the
    /// command service; a publisher that lost its datastream asks for registration again.
    private func wire() {
        registration.willRegister = { [unowned self] in
            for i in self.specs.indices { self.publisher.setDatastreamID(i, nil) }
            self.videoPublisher?.datastreamID = nil
        }
        registration.onRegistered = { [unowned self] state in self.registered(state) }
        registration.onFailureStatus = { [unowned self] in self.onStatus?($0) }
        publisher.onDatastreamLost = { [unowned self] i in
            Log.warning("the node no longer knows datastream \(self.specs[i].outputName); registering again")
            self.reregister()
        }
        videoPublisher?.onDatastreamLost = { [unowned self] in
            Log.warning("the node no longer knows the camera datastream; registering again")
            self.reregister()
        }
        publisher.onFirstRejection = { [unowned self] i, message in
            Log.error("the node rejected \(self.specs[i].outputName) observations: \(message) (dropped and counted; logged once)")
        }
        publisher.onConnectivity = { [unowned self] state in
            switch state {
            case .online:
                if self.nodeOutage.recovered() { Log.notice("node reachable again; sending the backlog in order") }
                self.onStatus?(self.streamingStatus)
            case .backoff(_, let d):
                // The status shows every step; the log the first (the next probes fail alike).
                let cause = self.publisher.backoffCause
                self.nodeOutage.failed(.warning, cause, firstSuffix: ", retrying in \(RetryLog.seconds(d))")
                self.onStatus?("\(cause), retrying in \(RetryLog.seconds(d))")
            case .probing: break
            }
        }
    }

    private func registered(_ state: RegistrationState) {
        publisher.setFOI(state.foiID)
        let ids = registration.registrar.datastreamIDs
        for i in specs.indices { publisher.setDatastreamID(i, ids[i]) }
        if videoSpec != nil { videoPublisher?.datastreamID = ids.last ?? nil }
        onRegistered?()
        onStatus?(streamingStatus)
        if config.commands, let sys = state.systemID { commands.start(systemID: sys) }
        let created = registration.registrar.created
        Log.notice(
            "registered \(config.identity.uid) with \(config.server.apiRoot): "
                + "\(registration.registrar.specs.count) datastreams"
                + (created.isEmpty ? "" : ", created \(created.joined(separator: ", "))"))
    }

    /// Starts registration, the GPS input, the flush and clock timers and the timer-sampled outputs.
    public func start() throws {
        checkClock()
        registration.schedule(after: 0)
        let tick = UInt64(config.publisher.flushInterval * 1e9)
        // On the loop's grid, after the samplers due at the same instant: one wake-up reads and
        // sends. The first flush comes no sooner than one interval after the start.
        timers.append(
            try loop.addAlignedTimer(
                every: tick, runsLast: true,
                notBefore: loop.deadline(after: config.publisher.flushInterval)
            ) { [unowned self] _ in
                self.publisher.tick(now: Double(Clock.monotonicNanoseconds()) / 1e9)
            })
        timers.append(
            try loop.addAlignedTimer(every: 1_000_000_000) { [unowned self] _ in
                self.checkClock()
                self.recording?.tick(now: Clock.realtimeSeconds())
            })
        let sampler = TimedSampler(
            loop: loop, specs: specs, gate: gate, publisher: publisher, clock: clock,
            healthPort: try port(DeviceHealthSample.self), diskPath: config.stateDirectory)
        sampler.onPosition = { [unowned self] in self.onPosition?($0, $1, $2, $3) }
        self.sampler = sampler
        gpsPort = try port(PositionSample.self)
        if let gps = config.gps, gpsPort != nil {
            let input = try GPSInput(loop: loop, config: gps, notBefore: config.notBefore) { [unowned self] p in
                self.recordPosition(p)
            }
            try input.start()
            gpsInput = input
        }
        for (i, spec) in specs.enumerated() {
            if spec.kind == .gps && gpsInput != nil { continue }  // the receiver paces it
            if config.externalOutputs.contains(spec.outputName) { continue }  // its device input paces it
            if spec.kind != .deviceHealth && SimulationHooks.provider == nil {
                // No device and no simulation: registered, but nothing is invented for it.
                Log.warning("\(spec.outputName): no device feeds it and no simulation is linked; it is not published")
                continue
            }
            try sampler.arm(i, rate: rate(i))
        }
    }

    // MARK: Sources → pipeline

    /// The port through which a source sends `S` samples, nil when that output is not published.
    /// Throws when `S`'s leaf names do not match the output's record (checked here, once).
    public func port<S: OutputSample>(_ type: S.Type) throws(OutputLayoutError) -> OutputPort<S>? {
        guard let i = specs.firstIndex(where: { $0.kind == S.kind }) else { return nil }
        return try OutputPort<S>(gate: gate, datastream: i, spec: specs[i])
    }

    /// The datastream index of an output (for device inputs), nil when it is not published.
    public func index(of outputName: String) -> Int? { specs.firstIndex { $0.outputName == outputName } }

    /// One observation: values in the output's leaf order, time excluded (ports write them by name).
    /// `always` skips the rate thinning (a pan-tilt unit's final position must not be thinned away).
    public func record(_ i: Int, monotonicTime: Double, values: UnsafeBufferPointer<Double>, always: Bool = false) {
        gate.record(i, monotonicTime: monotonicTime, values: values, always: always)
    }

    /// One encoded camera access unit; dropped (and counted) while the previous one is in flight.
    /// Recorded whether it goes live or not.
    public func offerVideo(monotonicTime: Double, accessUnit: UnsafeRawBufferPointer, keyFrame: Bool = true) {
        var live = false
        if let v = videoPublisher, videoEnabled, keyFrame || !videoLiveKeyFramesOnly {
            v.clockOffset = publisher.clockOffset
            live = v.offer(monotonicTime: monotonicTime, frame: accessUnit)
        }
        recorder?.offerVideo(specs.count, monotonicTime: monotonicTime, accessUnit: accessUnit, keyFrame: keyFrame, live: live)
    }

    /// A GPS position: stamped with the receiver's UTC time when it has one (as Android stamps a
    /// location with its fix time), else with the time it arrived. A valid GPS time also stands in
    /// for an unsynchronised system clock (SPEC §6).
    private func recordPosition(_ p: GPSPosition) {
        guard let port = gpsPort else { return }
        let mono = Double(Clock.monotonicNanoseconds()) / 1e9
        var t = mono
        if let epoch = p.epochTime {
            if clock.gpsTime(epoch, monotonic: mono) { checkClock() }
            if epoch >= config.notBefore, let offset = publisher.clockOffset { t = epoch - offset }
        }
        onPosition?(p.lat, p.lon, p.altHAE.isFinite ? p.altHAE : 0, p.epochTime ?? Clock.realtimeSeconds())
        port.send(PositionSample(lat: p.lat, lon: p.lon, alt: p.altHAE), at: t, always: true)
    }

    /// Each GPS fix (lat, lon, height above the ellipsoid, epoch seconds or nil): true north needs it.
    public var onPosition: ((Double, Double, Double, Double) -> Void)?

    /// What the GPS input is doing (status line).
    public var gpsState: String? { gpsInput?.stateText }

    // MARK: Control (the node's commands, SIGHUP-free changes)

    public func rate(_ i: Int) -> Double { gate.rates[i] }
    public func isEnabled(_ i: Int) -> Bool { gate.enabled[i] }

    public struct ControlError: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    private func controlIndex(_ outputName: String) throws(ControlError) -> Int {
        guard let i = index(of: outputName) else {
            throw ControlError(
                description: "no output named '\(outputName)' is published by this board; outputs: "
                    + specs.map(\.outputName).joined(separator: ", "))
        }
        return i
    }

    /// Changes an output's rate (Hz, more than 0 and up to 100, as the config allows).
    public func setRate(_ outputName: String, _ hz: Double) throws(ControlError) {
        let i = try controlIndex(outputName)
        guard hz.isFinite, hz > 0, hz <= 100 else {
            throw ControlError(description: "rate \(hz) Hz for \(outputName) is out of range: more than 0, up to 100 Hz")
        }
        if specs[i].kind == .gps && gpsInput != nil {
            throw ControlError(description: "gps_data follows the receiver's own rate; change it on the receiver")
        }
        gate.setRate(i, hz)
        if let sampler, sampler.isSampling(i) {
            do { try sampler.arm(i, rate: hz) } catch { throw ControlError(description: "cannot re-arm \(outputName)'s timer: \(error)") }
        }
        Log.notice("\(outputName): rate set to \(hz) Hz")
    }

    /// Turns an output on or off (its datastream stays registered; off sends nothing).
    public func setEnabled(_ outputName: String, _ on: Bool) throws(ControlError) {
        let i = try controlIndex(outputName)
        gate.setEnabled(i, on)
        Log.notice("\(outputName): \(on ? "enabled" : "disabled")")
    }

    /// Registers again now: the cached ids are checked against the node and whatever it lost
    /// (system, datastreams) is created again.
    public func reregister() { registration.schedule(after: 0) }

    // MARK: Registration, commands and clock, as the daemon, the demo and tests see them

    public var registrar: Registrar { registration.registrar }
    public var registered: Bool { registration.registered }
    public var lastRegistrationError: RegistrationError? { registration.lastError }
    public var commandReceivers: [String: CommandReceiver] { commands.receivers }
    /// The `device_control` receiver.
    public var commandReceiver: CommandReceiver? { commands.receivers[DeviceControl.inputName] }
    public var onIdentify: ((Double) -> String?)? {
        get { commands.onIdentify }
        set { commands.onIdentify = newValue }
    }
    public var extraControls: [ExtraControl] {
        get { commands.extraControls }
        set { commands.extraControls = newValue }
    }
    public var lastCommand: String? { commands.lastCommand }
    func execute(_ c: DeviceControlCommand, commandID: String?) -> CommandOutcome { commands.execute(c, commandID: commandID) }

    public var clockState: ClockSync.State { clock.state }
    /// Replaces the clock check (tests simulate an unsynchronised board with it).
    public var clockProvider: (() -> ClockSync.State)? {
        get { clock.provider }
        set { clock.provider = newValue }
    }
    /// Re-evaluates the clock now (otherwise once a second).
    public func recheckClock() { checkClock() }
    private func checkClock() {
        let wasHolding = clock.holdingSince != nil
        publisher.clockOffset = clock.check()
        recorder?.clockOffset = publisher.clockOffset
        // While holding, the status says for how long (every 10 s); and once, that it streams again.
        if let held = clock.heldSeconds, held % 10 == 0 {
            onStatus?(streamingStatus)
        } else if wasHolding, clock.holdingSince == nil, registered {
            onStatus?(streamingStatus)
        }
    }

    // MARK: Status

    /// A line for people (systemd STATUS=, the LED later): registration, streaming, outages.
    public var onStatus: ((String) -> Void)?
    /// Called after each successful registration (systemd STATUS=streaming).
    public var onRegistered: (() -> Void)?

    /// What `osh-edge status` reads from the counters file's header: registered, the node link,
    /// the clock (and for how long observations have been held), as `key=value` tokens.
    public var stateTokens: String {
        let link: String
        switch publisher.connectivity {
        case .online: link = "online"
        case .backoff: link = "unreachable"
        case .probing: link = "probing"
        }
        var t = "registered=\(registered ? 1 : 0) link=\(link) clock=" + (clock.heldSeconds == nil ? "synchronised" : "held")
        if let h = clock.heldSeconds { t += " held_seconds=\(h)" }
        if let r = recording { t += " recording=\(r.writeState.rawValue)" }
        return t
    }

    public var streamingStatus: String {
        let host = config.server.apiRoot.split(separator: "/").dropFirst().first.map(String.init) ?? config.server.apiRoot
        if let held = clock.heldSeconds {
            return "holding \(specs.count) output\(specs.count == 1 ? "" : "s"): clock not synchronised for \(held) s "
                + "(timedatectl; or [time] require_sync = false)"
        }
        return "streaming \(specs.count) output\(specs.count == 1 ? "" : "s") to \(host)"
    }

    public struct Row: Sendable {
        public var outputName: String
        public var counters: StreamCounters
        public var datastreamID: String?
        /// The first field of the latest observation, with its name (e.g. `pressure`).
        public var lastValue: Double
        public var lastField: String
    }

    public var rows: [Row] {
        specs.indices.map { i in
            let leaves = specs[i].leaves
            return Row(
                outputName: specs[i].outputName, counters: publisher.counters(i), datastreamID: publisher.datastreamID(i),
                lastValue: gate.lastValues[i], lastField: leaves.count > 1 ? leaves[1].names.last ?? "" : "")
        }
    }

    /// Every datastream's counters by output name, the camera's included (the counters file).
    public var counterRows: [(outputName: String, counters: StreamCounters)] {
        var rows = specs.indices.map { (specs[$0].outputName, publisher.counters($0)) }
        if let v = videoPublisher, let spec = videoSpec {
            rows.append((spec.outputName, v.counters.streamCounters(clockOffset: publisher.clockOffset, inFlight: v.inFlight)))
        }
        if let r = recorder, let store = recording {
            for i in rows.indices {
                guard let k = r.sinkIndex(i) else { continue }
                let c = store.counters(k)
                rows[i].1.recorded = c.recorded
                rows[i].1.recordDropped = c.dropped + r.counters[i].droppedNoClock
            }
        }
        return rows
    }

    // MARK: Stopping

    private enum StopPhase { case running, draining, stopped }
    private var stopPhase = StopPhase.running
    private var drainTimer: EventLoop.Timer?
    private var stopCompletions: [() -> Void] = []
    /// How often a drain ticks the publisher: a partial batch goes out at a tick, a full one as
    /// soon as the previous request completes.
    private static let drainTick: UInt64 = 10_000_000

    /// Stops the sources now, then lets the publisher send what it holds on the loop's own turns
    /// (it never turns the loop itself, so any handler may call it) until it is idle, the node is
    /// not online or `deadline` (the loop's monotonic ns, `loop.deadline(after:)`) passes; then
    /// cancels what is in flight, keeps the ring in the spool during an outage, closes the spool
    /// and calls `completion` on a later turn. Called again while draining, it adds `completion`;
    /// after the stop, it calls it at once.
    public func beginStop(deadline: UInt64, completion: @escaping () -> Void) {
        stopCompletions.append(completion)
        switch stopPhase {
        case .draining: return
        case .stopped: return finishStop()
        case .running: break
        }
        stopPhase = .draining
        stopSources()
        publisher.tick(now: Double(Clock.monotonicNanoseconds()) / 1e9)
        do {
            drainTimer = try loop.addTimer(firstAt: loop.now, interval: Self.drainTick) { [unowned self] _ in
                self.publisher.tick(now: Double(Clock.monotonicNanoseconds()) / 1e9)
                // Held for the clock, or not registered (no datastream ids), nothing can be sent:
                // the stop goes straight to the spool.
                if self.publisher.isIdle || self.publisher.connectivity != .online || self.publisher.clockOffset == nil
                    || !self.registered || self.loop.now >= deadline
                {
                    self.finishStop()
                }
            }
        } catch {
            Log.warning("stopping without flushing: the loop cannot time the flush (\(error))")
            finishStop()
        }
    }

    /// Stops at once without flushing (a runtime whose start failed, whose ring is empty).
    public func stopNow() {
        if stopPhase == .running { stopSources() }
        finishStop()
    }

    /// `beginStop`, waiting for it here by turning the loop: for tools and tests at top level
    /// only — inside a handler the loop cannot be turned (it is not re-entrant); use `beginStop`.
    public func stop(flushUntil deadline: UInt64) throws {
        var done = false
        beginStop(deadline: deadline) { done = true }
        let seconds = Double(deadline > loop.now ? deadline - loop.now : 0) / 1e9
        try loop.run(for: seconds + 1) { done }
    }

    private func stopSources() {
        uploader?.stop()
        commands.stop()
        gpsInput?.stop()
        gpsInput = nil
        registration.cancel()
        for t in timers { loop.cancel(t) }
        timers.removeAll()
        sampler?.stop()
    }

    private func finishStop() {
        if let t = drainTimer { loop.cancel(t) }
        drainTimer = nil
        if stopPhase != .stopped {
            stopPhase = .stopped
            publisher.stopping = true
            http.cancelAll()
            // Stopping during an outage: what the ring holds would die with the process; the spool keeps it.
            let kept = publisher.spillRingToSpool()
            if kept > 0 { Log.notice("spool: kept the ring's \(kept) unsent observations for the next start") }
            let lost = publisher.dropRemaining()
            if lost > 0 { Log.notice("stopping: \(lost) unsent observations were dropped (counted as dropped at stop)") }
            // Closed here, not whenever this runtime is released: a SIGHUP reload opens the same
            // directory for the next runtime while this one still exists.
            publisher.spool = nil
            fileSpool = nil
            // Synced and closed for the same reason; the next runtime reopens it.
            gate.recorder = nil
            recording?.close()
            recording = nil
        }
        let done = stopCompletions
        stopCompletions.removeAll()
        // Last: a completion may release this runtime.
        for c in done { c() }
    }
}
