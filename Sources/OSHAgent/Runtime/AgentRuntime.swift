import OSHCore
import OSHPlatform

/// The running agent, built as a chain of stages on one EventLoop:
///
///     device inputs (Hardware's table, Inputs/) → OutputPort (typed sample → slots)
///       → OutputGate (enable, rate) → ring (Publisher) → encoder → HTTPNodeClient (Transport/) → node
///     camera → VideoPath (one frame in flight) → HTTPNodeClient → node
///
/// beside the chain: the ClockGate (when observations get wall-clock times), the
/// RegistrationService (the ids the publishers post to), the CommandService (the node's
/// commands, reaching the OutputControls, registration and the uploader), the TimedSampler for
/// the outputs no device paces, and the board's storage (spool, recording: `+Storage`). This
/// type builds the chain, wires the stages' callbacks, and starts and stops it; the parts it
/// builds never hold it.
public final class AgentRuntime {
    public let loop: EventLoop
    public let config: AgentConfig
    public let specs: [OutputSpec]
    public let publisher: Publisher
    /// The camera's path to the node, when `config.video`.
    public let video: VideoPath?
    public var videoSpec: OutputSpec? { video?.spec }
    public var videoPublisher: VideoPublisher? { video?.publisher }
    /// Store-and-forward, when `[publisher] spool = true` and its directory opened.
    public internal(set) var fileSpool: FileSpool?
    /// The on-board recording, when `[record] enabled` and its directory opened.
    public internal(set) var recording: RecordingStore?
    var recorder: Recorder?
    var uploader: Uploader?

    let http: HTTPClient
    let node: HTTPNodeClient
    /// With `transport = "mqtt"`: the broker link observations and frames go through.
    public let mqtt: MQTTClient?
    let gate: OutputGate
    let clock: ClockGate
    let registration: RegistrationService
    let controls: OutputControls
    let commands: CommandService
    private var timers: [EventLoop.Timer] = []
    /// device_health and simulated outputs, once started.
    private var sampler: TimedSampler?
    /// Set once in `init`, through `port(_:)` like every input's.
    private var gpsPort: OutputPort<PositionSample>?
    /// The publisher's outage: logged when it starts and when it ends, not at every probe.
    private var nodeOutage = RetryLog()
    /// The declination at the latest GPS fix: the IMU's orientation turns to true north with it.
    public let trueNorth = TrueNorth()
    /// A line for people (systemd STATUS=, the LED later): registration, streaming, outages.
    public var onStatus: ((String) -> Void)?
    /// Called after each successful registration (systemd STATUS=streaming).
    public var onRegistered: (() -> Void)?

    public init(config: AgentConfig, loop: EventLoop) throws {
        self.loop = loop
        self.config = config
        let catalogue = OutputCatalogue.all(config.options)
        let wanted = config.outputs.map(Set.init)
        specs = catalogue.filter { (wanted?.contains($0.outputName) ?? true) && $0.binaryEncoding == nil } + config.extraSpecs
        http = try HTTPClient(loop: loop, server: config.server)
        let builder = CSRequestBuilder(credentials: config.server.credentials)
        node = HTTPNodeClient(http: http, builder: builder)
        let transport: PublisherTransport & VideoTransport
        if let m = config.mqtt {
            let client: MQTTClient
            do { client = try MQTTClient(loop: loop, options: m.options) } catch { throw AgentStartError(description: "\(error)") }
            mqtt = client
            transport = MQTTNodeClient(client: client, topics: m.topics)
        } else {
            mqtt = nil
            transport = node
        }
        let widest = specs.map { $0.leaves.count }.max() ?? 1
        let ring = ObservationRing(capacity: config.ringCapacity, maxValues: widest, datastreams: specs.count)
        let encoders = try specs.map { try ObservationEncoder(spec: $0, format: config.publisher.format) }
        publisher = Publisher(
            ring: ring, encoders: encoders, transport: transport, settings: config.publisher,
            now: { Double(Clock.monotonicNanoseconds()) / 1e9 })
        gate = OutputGate(
            rates: specs.map { config.rates[$0.outputName] ?? $0.defaultRate },
            publisher: publisher)
        clock = ClockGate(trustHostClock: config.trustHostClock, notBefore: config.notBefore)
        if config.video, let v = catalogue.first(where: { $0.binaryEncoding != nil }) {
            let videoPublisher = VideoPublisher(
                transport: transport, link: publisher, expectedFrameBytes: config.options.videoWidth * config.options.videoHeight / 2)
            video = VideoPath(spec: v, publisher: videoPublisher, link: publisher, recordIndex: specs.count)
        } else {
            video = nil
        }
        registration = RegistrationService(
            loop: loop, client: node, builder: builder, config: config,
            specs: specs + (video.map { [$0.spec] } ?? []))
        let specs = specs
        controls = OutputControls(
            specs: specs, gate: gate, video: video,
            receiverPaced: Set(specs.indices.filter { specs[$0].kind == .gps && config.externalOutputs.contains(specs[$0].outputName) }))
        commands = CommandService(
            loop: loop, http: http, builder: builder, controls: controls, registration: registration,
            options: config.commandOptions, systemLabel: config.identity.label)
        if let m = mqtt, let c = config.mqtt, c.commands { commands.mqtt = (m, c.topics) }
        gpsPort = try port(PositionSample.self)
        if config.spool.enabled { openSpool() }
        if config.record.enabled {
            commands.noUploader = "the recording could not be opened on this board (see its log)"
            openRecording()
        }
        wire()
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
        video?.publisher.onDatastreamLost = { [unowned self] in
            Log.warning("the node no longer knows the camera datastream; registering again")
            self.reregister()
        }
        publisher.onFirstRejection = { [unowned self] i, message in
            let who = self.mqtt.map { "the \($0.options.brokerName)" } ?? "the node"
            Log.error("\(who) rejected \(self.specs[i].outputName) observations: \(message) (dropped and counted; logged once)")
        }
        publisher.onConnectivity = { [unowned self] state in
            switch state {
            case .online:
                if self.nodeOutage.recovered() {
                    Log.notice(
                        "\(self.mqtt?.options.brokerName ?? "node") reachable again; sending the backlog in order")
                }
                self.onStatus?(self.streamingStatus)
            case .backoff(_, let d):
                let cause = self.publisher.backoffCause
                // A first flush before the broker's first CONNACK is no outage: the status says it,
                // the log waits for a connect that fails.
                if let m = self.mqtt, m.state == .connecting, !m.hasConnected {
                    self.onStatus?("\(cause), retrying in \(RetryLog.seconds(d))")
                    return
                }
                // The status shows every step; the log the first (the next probes fail alike).
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
        if let v = video { v.publisher.datastreamID = ids.last ?? nil }
        onRegistered?()
        onStatus?(streamingStatus)
        if config.commands, let sys = state.systemID { commands.start(systemID: sys) }
        let created = registration.registrar.created
        Log.notice(
            "registered \(config.identity.uid) with \(config.server.apiRoot): "
                + "\(registration.registrar.specs.count) datastreams"
                + (created.isEmpty ? "" : ", created \(created.joined(separator: ", "))"))
    }

    /// Starts registration, the flush and clock timers and the timer-sampled outputs.
    public func start() throws {
        checkClock()
        registration.schedule(after: 0)
        if let m = mqtt, let c = config.mqtt {
            m.start()
            Log.notice(
                "observations go to the \(m.options.brokerName) (topics \(c.topics.scheme.rawValue) under "
                    + "\(c.topics.root), QoS 1, client id \(m.options.clientID)); registration stays on \(config.server.apiRoot)")
        }
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
        let trueNorth = trueNorth
        sampler.onPosition = { lat, lon, alt, unixTime in Self.update(trueNorth, lat, lon, alt, unixTime) }
        self.sampler = sampler
        controls.sampler = sampler
        for (i, spec) in specs.enumerated() {
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
    public func index(of outputName: String) -> Int? { controls.index(of: outputName) }

    /// One observation: values in the output's leaf order, time excluded (ports write them by name).
    /// `always` skips the rate thinning (a pan-tilt unit's final position must not be thinned away).
    public func record(_ i: Int, monotonicTime: Double, values: UnsafeBufferPointer<Double>, always: Bool = false) {
        gate.record(i, monotonicTime: monotonicTime, values: values, always: always)
    }

    /// One encoded camera access unit; dropped (and counted) while the previous one is in flight.
    /// Recorded whether it goes live or not.
    public func offerVideo(monotonicTime: Double, accessUnit: UnsafeRawBufferPointer, keyFrame: Bool = true) {
        video?.offer(monotonicTime: monotonicTime, accessUnit: accessUnit, keyFrame: keyFrame)
    }

    /// Where a GPS input sends its fixes, nil when gps_data is not published.
    var positionSink: ((GPSPosition) -> Void)? {
        gpsPort == nil ? nil : { [weak self] p in self?.recordPosition(p) }
    }

    /// A GPS position: stamped with the receiver's UTC time when it has one (as Android stamps a
    /// location with its fix time), else with the time it arrived. A valid GPS time also stands in
    /// for an unsynchronised system clock.
    private func recordPosition(_ p: GPSPosition) {
        guard let port = gpsPort else { return }
        let mono = Double(Clock.monotonicNanoseconds()) / 1e9
        var t = mono
        if let epoch = p.epochTime {
            if clock.gpsTime(epoch, monotonic: mono) { checkClock() }
            if epoch >= config.notBefore, let offset = publisher.clockOffset { t = epoch - offset }
        }
        Self.update(trueNorth, p.lat, p.lon, p.altHAE.isFinite ? p.altHAE : 0, p.epochTime ?? Clock.realtimeSeconds())
        port.send(PositionSample(lat: p.lat, lon: p.lon, alt: p.altHAE), at: t, always: true)
    }

    /// A fix (lat, lon, height above the ellipsoid, epoch seconds) gives the declination.
    private static func update(_ north: TrueNorth, _ lat: Double, _ lon: Double, _ alt: Double, _ unixTime: Double) {
        if north.update(latitude: lat, longitude: lon, heightMeters: alt, unixTime: unixTime) {
            Log.info("declination \((north.declination * 100).rounded() / 100)° at the GPS fix (WMM2025)")
        }
    }

    // MARK: Control (the node's commands, SIGHUP-free changes)

    public func rate(_ i: Int) -> Double { controls.rate(i) }
    public func isEnabled(_ i: Int) -> Bool { controls.isEnabled(i) }
    /// Changes an output's rate (Hz, more than 0 and up to 100, as the config allows).
    public func setRate(_ outputName: String, _ hz: Double) throws(ControlError) { try controls.setRate(outputName, hz) }
    /// Turns an output on or off (its datastream stays registered; off sends nothing).
    public func setEnabled(_ outputName: String, _ on: Bool) throws(ControlError) { try controls.setEnabled(outputName, on) }

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
        commands.stop()
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
            mqtt?.stop()
            // Synced and closed for the same reason; the next runtime reopens it.
            gate.recorder = nil
            video?.recorder = nil
            recording?.close()
            recording = nil
        }
        let done = stopCompletions
        stopCompletions.removeAll()
        // Last: a completion may release this runtime.
        for c in done { c() }
    }
}

/// A runtime that cannot be built from its configuration (a part the configuration names).
public struct AgentStartError: Error, CustomStringConvertible {
    public let description: String
}
