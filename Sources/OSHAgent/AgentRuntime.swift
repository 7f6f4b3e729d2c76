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
    public var notBefore: Double = 1_767_225_600 // 2026-01-01
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

    public init(server: HTTPServer, identity: SystemIdentity, options: OutputOptions, stateDirectory: String) {
        self.server = server
        self.identity = identity
        self.options = options
        self.stateDirectory = stateDirectory
    }
}

/// The running agent: sources → ring → publisher → libcurl, registration, clock gate,
/// all on one EventLoop.
public final class AgentRuntime {
    public let loop: EventLoop
    public let config: AgentConfig
    public let specs: [OutputSpec]
    public let publisher: Publisher
    /// The camera datastream, when `config.video`.
    public let videoSpec: OutputSpec?
    public let videoPublisher: VideoPublisher?
    public let registrar: Registrar
    public private(set) var registered = false
    public private(set) var lastRegistrationError: RegistrationError?
    public private(set) var clockState: ClockSync.State = .unsynchronized(reason: "not checked yet")

    private let http: HTTPClient
    private let node: HTTPNodeClient
    private let health: HealthProbe
    private var timers: [EventLoop.Timer] = []
    private var scratch: UnsafeMutableBufferPointer<Double>
    private let startTime: Double
    private var registrationFailures = 0
    /// Failed registrations: the first with its retry and each different failure once, not every retry.
    private var registrationOutage = RetryLog()
    private var registering = false
    /// The publisher's outage: logged when it starts and when it ends, not at every probe.
    private var nodeOutage = RetryLog()
    private lazy var registrationDeadline = LoopDeadline(loop: loop) { [unowned self] in self.register() }
    private var gpsInput: GPSInput?
    /// Store-and-forward, when `[publisher] spool = true` and its directory opened.
    public private(set) var fileSpool: FileSpool?
    /// Wall-clock offset learnt from GPS time (used while the system clock is not synchronised).
    private var gpsClockOffset: Double?

    public init(config: AgentConfig, loop: EventLoop) throws {
        self.loop = loop
        self.config = config
        let catalogue = OutputCatalogue.all(config.options)
        let wanted = config.outputs.map(Set.init)
        specs = catalogue.filter { (wanted?.contains($0.outputName) ?? true) && $0.binaryEncoding == nil } + config.extraSpecs
        http = try HTTPClient(loop: loop, server: config.server)
        let builder = CSRequestBuilder(credentials: config.server.credentials)
        node = HTTPNodeClient(http: http, builder: builder)
        let ring = ObservationRing(capacity: config.ringCapacity, maxValues: specs.map { $0.leaves.count }.max() ?? 1,
                                   datastreams: specs.count)
        let encoders = try specs.map { try ObservationEncoder(spec: $0, format: config.publisher.format) }
        publisher = Publisher(ring: ring, encoders: encoders, transport: node, settings: config.publisher,
                              now: { Double(Clock.monotonicNanoseconds()) / 1e9 })
        if config.spool.enabled {
            let dir = config.stateDirectory + "/spool"
            do {
                let spool = try FileSpool(options: FileSpoolOptions(directory: dir, maxBytes: config.spool.maxMegabytes << 20,
                                                                    sync: config.spool.sync),
                                          outputNames: specs.map(\.outputName), maxValues: ring.maxValues)
                spool.onProblem = { Log.warning($0) }
                if spool.pendingBytes > 0 {
                    Log.notice("spool: \(spool.pendingBytes) bytes of observations from an earlier outage wait in \(dir); "
                               + "they are sent after the ring once the node answers")
                }
                publisher.spool = spool
                fileSpool = spool
            } catch {
                // The agent still streams; only what a long outage overflows is lost, as without a spool.
                Log.error("spool disabled: \(error); check that \(config.stateDirectory) is writable by the service user")
            }
        }
        if config.video, let v = catalogue.first(where: { $0.binaryEncoding != nil }) {
            videoSpec = v
            videoPublisher = VideoPublisher(transport: node, link: publisher, expectedFrameBytes: config.options.videoWidth * config.options.videoHeight / 2)
        } else {
            videoSpec = nil
            videoPublisher = nil
        }
        let cachePath = config.stateDirectory + "/" + RegistrationState.fileName(server: config.server.apiRoot, uid: config.identity.uid)
        let cached = (try? StateFiles.read(cachePath)).flatMap { $0 }.flatMap(RegistrationState.decode)
        registrar = Registrar(client: node, builder: builder, server: config.server.apiRoot, identity: config.identity,
                              specs: specs + (videoSpec.map { [$0] } ?? []), format: config.publisher.format, cached: cached,
                              now: { Clock.realtimeSeconds() })
        scratch = .allocate(capacity: 32)
        lastValues = [Double](repeating: .nan, count: specs.count)
        health = HealthProbe(diskPath: config.stateDirectory)
        startTime = Double(Clock.monotonicNanoseconds()) / 1e9
        publisher.onDatastreamLost = { [unowned self] i in
            Log.warning("the node no longer knows datastream \(self.specs[i].outputName); registering again")
            self.scheduleRegistration(after: 0)
        }
        videoPublisher?.onDatastreamLost = { [unowned self] in
            Log.warning("the node no longer knows the camera datastream; registering again")
            self.scheduleRegistration(after: 0)
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
                self.nodeOutage.failed(.warning, "node unreachable", firstSuffix: ", retrying in \(Int(d)) s")
                self.onStatus?("node unreachable, retrying in \(Int(d)) s")
            case .probing: break
            }
        }
    }

    deinit { scratch.deallocate() }

    var cachePath: String {
        config.stateDirectory + "/" + RegistrationState.fileName(server: config.server.apiRoot, uid: config.identity.uid)
    }

    /// Re-evaluates the clock now (otherwise once a second).
    public func recheckClock() { checkClock() }

    /// Starts registration, the sources and the publisher's clock.
    public func start() throws {
        checkClock()
        scheduleRegistration(after: 0)
        let tick = UInt64(config.publisher.flushInterval * 1e9)
        timers.append(try loop.addTimer(firstAt: EventLoop.deadline(after: config.publisher.flushInterval), interval: tick) { [unowned self] _ in
            self.publisher.tick(now: Double(Clock.monotonicNanoseconds()) / 1e9)
        })
        timers.append(try loop.addTimer(firstAt: EventLoop.deadline(after: 1), interval: 1_000_000_000) { [unowned self] _ in
            self.checkClock()
        })
        if let gps = config.gps, let gi = specs.firstIndex(where: { $0.outputName == "gps_data" }) {
            let input = try GPSInput(loop: loop, config: gps, notBefore: config.notBefore) { [unowned self] p in
                self.recordPosition(gi, p)
            }
            try input.start()
            gpsInput = input
        }
        for (i, spec) in specs.enumerated() {
            if spec.outputName == "gps_data" && gpsInput != nil { continue } // the receiver paces it
            if config.externalOutputs.contains(spec.outputName) { continue } // its device input paces it
            if spec.outputName != "device_health" && SimulationHooks.provider == nil {
                // No device and no simulation: registered, but nothing is invented for it.
                Log.warning("\(spec.outputName): no device feeds it and no simulation is linked; it is not published")
                continue
            }
            try armSampleTimer(i)
        }
    }

    /// Outputs sampled on a timer (simulated values, device_health), by datastream index.
    private var sampleTimers: [Int: EventLoop.Timer] = [:]

    private func armSampleTimer(_ i: Int) throws {
        if let t = sampleTimers[i] { loop.cancel(t) }
        let period = UInt64(1e9 / max(rate(i), 0.001))
        sampleTimers[i] = try loop.addTimer(firstAt: EventLoop.deadline(after: 0.05), interval: period) { [unowned self] _ in
            // Missed ticks are not back-filled: a sensor reading is taken now, once.
            self.sample(i)
        }
    }

    // MARK: Control (the node's commands, SIGHUP-free changes)

    /// Per output: published at all, and at most how often (device inputs may sample faster —
    /// the IMU runs its filter at 100 Hz — and are thinned here to the output's rate).
    private lazy var enabled = [Bool](repeating: true, count: specs.count)
    private lazy var rates: [Double] = specs.map { config.rates[$0.outputName] ?? $0.defaultRate }
    private lazy var nextDue = [Double](repeating: 0, count: specs.count)

    public func rate(_ i: Int) -> Double { rates[i] }
    public func isEnabled(_ i: Int) -> Bool { enabled[i] }

    public struct ControlError: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    private func controlIndex(_ outputName: String) throws(ControlError) -> Int {
        guard let i = index(of: outputName) else {
            throw ControlError(description: "no output named '\(outputName)' is published by this board; outputs: "
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
        if outputName == "gps_data" && gpsInput != nil {
            throw ControlError(description: "gps_data follows the receiver's own rate; change it on the receiver")
        }
        rates[i] = hz
        nextDue[i] = 0
        if sampleTimers[i] != nil {
            do { try armSampleTimer(i) } catch { throw ControlError(description: "cannot re-arm \(outputName)'s timer: \(error)") }
        }
        Log.notice("\(outputName): rate set to \(hz) Hz")
    }

    /// Turns an output on or off (its datastream stays registered; off sends nothing).
    public func setEnabled(_ outputName: String, _ on: Bool) throws(ControlError) {
        let i = try controlIndex(outputName)
        enabled[i] = on
        nextDue[i] = 0
        Log.notice("\(outputName): \(on ? "enabled" : "disabled")")
    }

    /// Registers again now: the cached ids are checked against the node and whatever it lost
    /// (system, datastreams) is created again.
    public func reregister() {
        scheduleRegistration(after: 0)
    }

    /// True when output `i` should take a sample at `t` (enabled, and due at its rate).
    private func due(_ i: Int, _ t: Double) -> Bool {
        guard enabled[i] else { return false }
        let interval = 1 / rates[i]
        // 5 % slack so a 100 Hz source thinned to 10 Hz keeps every tenth sample despite jitter.
        guard t >= nextDue[i] - interval * 0.05 else { return false }
        nextDue[i] += interval
        if nextDue[i] < t { nextDue[i] = t + interval }
        return true
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
                if self.publisher.isIdle || self.publisher.connectivity != .online || self.loop.now >= deadline {
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
        for r in commandReceivers.values { r.stop() }
        commandReceivers.removeAll()
        gpsInput?.stop()
        gpsInput = nil
        registrationDeadline.cancel()
        for t in timers { loop.cancel(t) }
        timers.removeAll()
        for t in sampleTimers.values { loop.cancel(t) }
        sampleTimers.removeAll()
    }

    private func finishStop() {
        if let t = drainTimer { loop.cancel(t) }
        drainTimer = nil
        if stopPhase != .stopped {
            stopPhase = .stopped
            http.cancelAll()
            // Stopping during an outage: what the ring holds would die with the process; the spool keeps it.
            let kept = publisher.spillRingToSpool()
            if kept > 0 { Log.notice("spool: kept the ring's \(kept) unsent observations for the next start") }
            // Closed here, not whenever this runtime is released: a SIGHUP reload opens the same
            // directory for the next runtime while this one still exists.
            publisher.spool = nil
            fileSpool = nil
        }
        let done = stopCompletions
        stopCompletions.removeAll()
        // Last: a completion may release this runtime.
        for c in done { c() }
    }

    // MARK: Sources

    private func sample(_ i: Int) {
        guard enabled[i] else { return }
        let spec = specs[i]
        let n = spec.leaves.count - 1
        let out = UnsafeMutableBufferPointer(rebasing: scratch[0..<n])
        let now = Double(Clock.monotonicNanoseconds()) / 1e9
        if spec.outputName == "device_health" {
            let r = health.read()
            let values = [r.cpuTemperature, r.underVoltage ? 1 : 0, r.throttled ? 1 : 0, Double(r.throttleFlags),
                          r.loadAverage, r.memoryAvailableMB, r.diskFreePercent,
                          Double(publisher.ring.occupied), Double((0..<specs.count).map { publisher.counters($0).dropped }.reduce(0, +)),
                          r.uptimeSeconds, clockState.isSynchronized ? 1 : 0]
            for k in 0..<min(n, values.count) { out[k] = values[k] }
        } else {
            guard SimulationHooks.provider?.fill(spec.outputName, at: now - startTime, into: out) == true else { return }
            if spec.outputName == "gps_data", n >= 3 { onPosition?(out[0], out[1], out[2], Clock.realtimeSeconds()) }
        }
        publisher.record(datastream: i, monotonicTime: now, values: UnsafeBufferPointer(out))
        lastValues[i] = n > 0 ? out[0] : .nan
    }

    /// The first value of each output's latest observation (the demo's table).
    private var lastValues: [Double] = []

    /// The datastream index of an output (for device inputs), nil when it is not published.
    public func index(of outputName: String) -> Int? { specs.firstIndex { $0.outputName == outputName } }

    /// One observation from a device input: values in the output's leaf order, time excluded.
    /// `always` skips the rate thinning (a pan-tilt unit's final position must not be thinned away).
    public func record(_ i: Int, monotonicTime: Double, values: UnsafeBufferPointer<Double>, always: Bool = false) {
        guard always ? enabled[i] : due(i, monotonicTime) else { return }
        publisher.record(datastream: i, monotonicTime: monotonicTime, values: values)
        lastValues[i] = values.first ?? .nan
    }

    /// One encoded camera access unit; dropped (and counted) while the previous one is in flight.
    public func offerVideo(monotonicTime: Double, accessUnit: UnsafeRawBufferPointer) {
        guard let v = videoPublisher, videoEnabled else { return }
        v.clockOffset = publisher.clockOffset
        v.offer(monotonicTime: monotonicTime, frame: accessUnit)
    }

    /// A GPS position: stamped with the receiver's UTC time when it has one (as Android stamps a
    /// location with its fix time), else with the time it arrived. A valid GPS time also stands in
    /// for an unsynchronised system clock (SPEC §6).
    private func recordPosition(_ i: Int, _ p: GPSPosition) {
        let mono = Double(Clock.monotonicNanoseconds()) / 1e9
        var t = mono
        if let epoch = p.epochTime, epoch >= config.notBefore {
            var systemSynced = false
            if case .synchronized(let source) = clockState, source != "GPS" { systemSynced = true }
            if !systemSynced {
                if gpsClockOffset == nil { Log.info("clock: using GPS time until the system clock is synchronised") }
                gpsClockOffset = epoch - mono
                checkClock()
            }
            if let offset = publisher.clockOffset { t = epoch - offset }
        }
        let n = specs[i].leaves.count - 1
        guard n >= 3 else { return }
        onPosition?(p.lat, p.lon, p.altHAE.isFinite ? p.altHAE : 0, p.epochTime ?? Clock.realtimeSeconds())
        scratch[0] = p.lat
        scratch[1] = p.lon
        scratch[2] = p.altHAE
        publisher.record(datastream: i, monotonicTime: t, values: UnsafeBufferPointer(rebasing: scratch[0..<n]))
        lastValues[i] = p.lat
    }

    /// Each GPS fix (lat, lon, height above the ellipsoid, epoch seconds or nil): true north needs it.
    public var onPosition: ((Double, Double, Double, Double) -> Void)?

    /// What the GPS input is doing (status line).
    public var gpsState: String? { gpsInput?.stateText }

    // MARK: Clock

    /// A line for people (systemd STATUS=, the LED later): registration, streaming, outages.
    public var onStatus: ((String) -> Void)?
    /// Called after each successful registration (systemd READY=1 the first time).
    public var onRegistered: (() -> Void)?

    public var streamingStatus: String {
        let host = config.server.apiRoot.split(separator: "/").dropFirst().first.map(String.init) ?? config.server.apiRoot
        return "streaming \(specs.count) output\(specs.count == 1 ? "" : "s") to \(host)"
    }

    /// Replaces the clock check (tests simulate an unsynchronised board with it).
    public var clockProvider: (() -> ClockSync.State)?

    private func checkClock() {
        var state: ClockSync.State
        if let p = clockProvider {
            state = p()
        } else if config.trustHostClock {
            state = Clock.realtimeSeconds() >= config.notBefore ? .synchronized(source: "host clock (trusted by configuration)")
                : ClockSync.current(notBefore: config.notBefore)
        } else {
            state = ClockSync.current(notBefore: config.notBefore)
        }
        // A GPS time stands in while the system clock is not synchronised.
        if !state.isSynchronized, gpsClockOffset != nil { state = .synchronized(source: "GPS") }
        if state != clockState {
            if case .unsynchronized(let why) = state { Log.warning("holding observations: \(why)") }
            else if case .synchronized(let src) = state { Log.info("clock trusted (\(src)); observations get wall-clock times") }
            clockState = state
        }
        // Re-read the offset every second: it follows NTP's corrections, and held observations
        // (sampled on CLOCK_MONOTONIC) get correct times when they finally go out.
        if case .synchronized("GPS") = state, let g = gpsClockOffset {
            publisher.clockOffset = g
        } else {
            publisher.clockOffset = state.isSynchronized
                ? Clock.realtimeSeconds() - Double(Clock.monotonicNanoseconds()) / 1e9 : nil
        }
    }

    // MARK: Registration

    private func scheduleRegistration(after seconds: Double) {
        if registering { return }
        do { try registrationDeadline.arm(after: seconds) }
        catch { Log.error("cannot schedule registration: \(error)") }
    }

    private func register() {
        registering = true
        for i in specs.indices { publisher.setDatastreamID(i, nil) }
        videoPublisher?.datastreamID = nil
        registrar.register { [unowned self] result in
            self.registering = false
            switch result {
            case .success(let state):
                self.registered = true
                self.lastRegistrationError = nil
                self.registrationFailures = 0
                // The outage ends with the "registered …" line below, the one line for it (observations
                // have their own: the publisher's "node reachable again").
                _ = self.registrationOutage.recovered()
                do { try StateFiles.write(state.encoded(), to: self.cachePath) }
                catch { Log.warning("could not save the id cache (\(error)); registration repeats at the next start") }
                self.publisher.setFOI(state.foiID)
                let ids = self.registrar.datastreamIDs
                for i in self.specs.indices { self.publisher.setDatastreamID(i, ids[i]) }
                if self.videoSpec != nil { self.videoPublisher?.datastreamID = ids.last ?? nil }
                self.onRegistered?()
                self.onStatus?(self.streamingStatus)
                if self.config.commands, let sys = state.systemID { self.startCommands(systemID: sys) }
                Log.notice("registered \(self.config.identity.uid) with \(self.config.server.apiRoot): "
                           + "\(self.specs.count) datastreams" + (self.registrar.created.isEmpty ? "" : ", created \(self.registrar.created.joined(separator: ", "))"))
            case .failure(let e):
                self.lastRegistrationError = e
                self.registrationFailures += 1
                let d = self.config.registrationBackoff.delay(afterFailures: self.registrationFailures)
                let retry = "retrying in \(RetryLog.seconds(d))"
                // The status shows every step; the log the first failure with its retry and then
                // only a different failure (libcurl's elapsed time does not make one new).
                self.registrationOutage.failed(.error, "registration failed: \(e)", key: RetryLog.withoutElapsedTime("\(e)"),
                                               firstSuffix: "; " + retry)
                self.onStatus?(e.status == 0 ? "node unreachable, \(retry)" : "registration refused (HTTP \(e.status)), \(retry)")
                self.scheduleRegistration(after: d)
            }
        }
    }

    // MARK: Commands (device_control)

    /// The receivers on the node's command channels, by inputName, once their control streams exist.
    public private(set) var commandReceivers: [String: CommandReceiver] = [:]
    /// The `device_control` receiver.
    public var commandReceiver: CommandReceiver? { commandReceivers[DeviceControl.inputName] }
    /// `identify`: blink the status LED for the given seconds; returns a message, or nil when the
    /// board has no LED (the command then fails saying so).
    public var onIdentify: ((Double) -> String?)?
    /// Control streams beyond device_control (a pan-tilt unit's `ptz_control`), set before `start`.
    public struct ExtraControl {
        public var inputName: String
        public var body: [UInt8]
        public var schema: DataComponent
        public var handler: (ReceivedCommand) -> CommandOutcome
        public init(inputName: String, body: [UInt8], schema: DataComponent, handler: @escaping (ReceivedCommand) -> CommandOutcome) {
            self.inputName = inputName
            self.body = body
            self.schema = schema
            self.handler = handler
        }
    }
    public var extraControls: [ExtraControl] = []

    /// Every command handled (the demo's table, logs).
    public private(set) var lastCommand: String?

    /// Registers every control stream (device_control, then the extras) and opens its receiver.
    private func startCommands(systemID: String) {
        let names = specs.map(\.outputName) + (videoSpec.map { [$0.outputName] } ?? [])
        openControl(systemID: systemID, inputName: DeviceControl.inputName,
                    body: DeviceControl.body(systemLabel: config.identity.label, outputNames: names)) { [unowned self] id in
            try CommandReceiver.deviceControl(loop: self.loop, http: self.http, builder: self.node.builder, controlStreamID: id,
                                              outputNames: names, options: self.config.commandOptions) { [unowned self] c in
                self.execute(c)
            }
        }
        for control in extraControls {
            openControl(systemID: systemID, inputName: control.inputName, body: control.body) { [unowned self] id in
                try CommandReceiver(loop: self.loop, http: self.http, builder: self.node.builder, controlStreamID: id,
                                    schema: control.schema, options: self.config.commandOptions) { [unowned self] c in
                    let outcome = control.handler(c)
                    self.noteCommand(control.inputName, outcome)
                    return outcome
                }
            }
        }
    }

    /// One control stream: created (or found, by inputName) on the node, then its receiver opened —
    /// unless the one already open listens on the same id. A receiver told the stream is gone
    /// (a node restarted without its database) is dropped and the board registers again.
    private func openControl(systemID: String, inputName: String, body: [UInt8],
                             makeReceiver: @escaping (String) throws -> CommandReceiver) {
        CommandReceiver.registerControlStream(http: http, builder: node.builder, systemID: systemID, body: body) { [unowned self] r in
            switch r {
            case .failure(let e):
                Log.error("commands: \(inputName): \(e); the node cannot drive it until the next registration")
            case .success(let id):
                if let old = self.commandReceivers[inputName] {
                    if old.controlStreamID == id { return }
                    old.stop()
                }
                do {
                    let receiver = try makeReceiver(id)
                    // The one place a channel's trouble is logged (the WebSocket client logs nothing):
                    // the first failure with when it reconnects, a different failure once, the return once.
                    var outage = RetryLog()
                    receiver.onChannelDown = { [unowned self] error, retry in
                        guard let error else { return }
                        if case .notFound = error {
                            Log.warning("commands: \(inputName): \(error)")
                            self.commandReceivers[inputName]?.stop()
                            self.commandReceivers[inputName] = nil
                            self.scheduleRegistration(after: 0)
                        } else if let retry {
                            outage.failed(.warning, "commands: \(inputName): \(error)", key: error.repeatKey,
                                          firstSuffix: "; reconnecting in \(retry == retry.rounded() ? "\(Int(retry))" : "\(retry)") s")
                        }
                    }
                    receiver.onChannelUp = {
                        if outage.recovered() { Log.notice("commands: \(inputName): the command channel is back") }
                    }
                    receiver.start()
                    self.commandReceivers[inputName] = receiver
                    Log.notice("commands: listening on control stream \(id) (\(inputName))")
                } catch {
                    Log.error("commands: cannot open the \(inputName) channel: \(error)")
                }
            }
        }
    }

    private func noteCommand(_ what: String, _ outcome: CommandOutcome) {
        lastCommand = "\(what): \(outcome.status.rawValue)" + (outcome.message.map { " — " + $0 } ?? "")
        Log.notice("command \(lastCommand ?? "")")
    }

    /// Runs one command from the node; the outcome is what the node will hold.
    func execute(_ c: DeviceControlCommand) -> CommandOutcome {
        let outcome: CommandOutcome
        do throws(ControlError) {
            switch c {
            case .setRate(let name, let hz):
                if name == videoSpec?.outputName {
                    outcome = .rejected("the camera's frame rate is set in [outputs.\(name)] rate (1 to 25); not changed at run time")
                } else {
                    try setRate(name, hz)
                    outcome = .completed("\(name) now at \(hz) Hz")
                }
            case .enableOutput(let name, let on):
                if name == videoSpec?.outputName {
                    videoEnabled = on
                } else {
                    try setEnabled(name, on)
                }
                outcome = .completed("\(name) \(on ? "enabled" : "disabled")")
            case .identify(let seconds):
                if let m = onIdentify?(seconds) { outcome = .completed(m) }
                else { outcome = .failed("this board has no status LED configured ([led] chip and line)") }
            case .reregister:
                reregister()
                outcome = .completed("registering again")
            }
        } catch {
            outcome = .rejected(error.description)
        }
        noteCommand(c.item, outcome)
        return outcome
    }

    /// The camera's datastream on/off (enableOutput).
    private var videoEnabled = true

    // MARK: Status

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
            return Row(outputName: specs[i].outputName, counters: publisher.counters(i), datastreamID: publisher.datastreamID(i),
                       lastValue: lastValues[i], lastField: leaves.count > 1 ? leaves[1].names.last ?? "" : "")
        }
    }
}

/// The CS API over libcurl, as registration and the publisher see it (the publish bench too).
public func nodeTransport(http: HTTPClient, builder: CSRequestBuilder) -> NodeClient & PublisherTransport {
    HTTPNodeClient(http: http, builder: builder)
}

/// The CS API over libcurl, as registration and the publisher see it.
final class HTTPNodeClient: NodeClient, PublisherTransport, VideoTransport {
    let http: HTTPClient
    let builder: CSRequestBuilder

    init(http: HTTPClient, builder: CSRequestBuilder) {
        self.http = http
        self.builder = builder
    }

    func send(_ request: CSRequest, completion: @escaping (NodeResponse) -> Void) {
        http.send(request) { r in
            completion(NodeResponse(status: r.error == nil ? r.status : 0, location: r.location, body: r.body,
                                    transportError: r.error.map { "\($0)" }))
        }
    }

    /// Observation requests per datastream id and format: built once, not per POST.
    private var observationRequests: [String: CSRequest] = [:]

    func postObservations(datastreamID: String, contentType: String, body: ByteBuffer,
                          completion: @escaping (TransportOutcome) -> Void) {
        let key = datastreamID + contentType
        let request: CSRequest
        if let cached = observationRequests[key] {
            request = cached
        } else {
            let format: ScalarFormat = contentType == MediaType.sweJSON ? .sweJSON : .omJSON
            request = builder.postObservations(datastreamID: datastreamID, format: format)
            observationRequests[key] = request
        }
        // The body goes from the publisher's buffer straight to curl: no copy.
        http.send(request, body: UnsafeRawBufferPointer(start: body.base, count: body.count)) { r in
            completion(HTTPNodeClient.outcome(r))
        }
    }

    /// A transport failure is status 0 with curl's explanation, as the publisher's verdicts expect.
    static func outcome(_ r: HTTPResult) -> TransportOutcome {
        TransportOutcome(status: r.error == nil ? r.status : 0, transportError: r.error.map { "\($0)" }, body: r.body)
    }

    private var videoRequests: [String: CSRequest] = [:]

    func postVideo(datastreamID: String, body: ByteBuffer, completion: @escaping (TransportOutcome) -> Void) {
        let request: CSRequest
        if let cached = videoRequests[datastreamID] { request = cached } else {
            request = builder.postVideo(datastreamID: datastreamID)
            videoRequests[datastreamID] = request
        }
        http.send(request, body: UnsafeRawBufferPointer(start: body.base, count: body.count)) { r in
            completion(HTTPNodeClient.outcome(r))
        }
    }

    func probe(completion: @escaping (TransportOutcome) -> Void) {
        http.send(builder.landingPage()) { r in
            completion(HTTPNodeClient.outcome(r))
        }
    }
}
