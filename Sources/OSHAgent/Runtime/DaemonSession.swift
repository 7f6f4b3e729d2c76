import OSHCore
import OSHPlatform

#if canImport(Glibc)
import Glibc
#endif

/// One `osh-edge run` process once its configuration was accepted: the loop, systemd's
/// notifications and watchdog, the status LED and the counters file, and the supervisor that
/// starts the agent, replaces it on SIGHUP and stops it on SIGTERM.
final class DaemonSession {
    private let loop: EventLoop
    private let notify = SDNotify()
    private let configPath: String
    private let secretsPath: String?
    /// Process totals across reloads; the path is read at start (changing it takes a restart).
    private let counters: ProcessCounters?
    /// What runs now: the LED and the counters follow it (SIGHUP replaces it).
    private var current: Daemon.Running?
    private var led: StatusLED?
    private var supervisor: AgentSupervisor<Daemon.Loaded, Daemon.Running>?
    private var exitCode: Int32?
    /// A libcamera camera was lost: the agent stopped (everything kept) to start again.
    private(set) var restartRequested = false

    init(loaded: Daemon.Loaded, configPath: String, secretsPath: String?) throws {
        loop = try EventLoop()
        self.configPath = configPath
        self.secretsPath = secretsPath
        counters = ProcessCounters.resolve(loaded.settings.countersFile).map(ProcessCounters.init)
    }

    /// Starts the agent on `loaded` and turns the loop until it exits; returns the exit code.
    func run(_ loaded: Daemon.Loaded) throws -> Int32 {
        notify.status("starting: registering with \(loaded.config.server.apiRoot)")
        try armWatchdog()
        supervisor = AgentSupervisor(
            config: loaded, running: try startRunning(loaded), source: configPath,
            start: { [self] in try startRunning($0) },
            stop: { [self] r, seconds, done in stop(r, seconds: seconds, done) },
            exit: { [self] code in exited(code) })
        // Opened once the first agent runs: opening the devices blocks the loop (a second or two
        // on a slow board), and a pattern started before would show a stretched first blink.
        led = StatusLED.open(loaded.settings.devices.led, loop: loop) { [self] in ledState }
        try armCounters()
        try armActivityBlips()
        try loop.onSignals([SIGTERM, SIGINT, SIGHUP]) { [self] in signal($0) }
        // Ready once the loop turns with the devices open: a node that is down, unreachable or
        // refusing is a state (STATUS, the LED, the counters), not a start that never ends —
        // systemd would otherwise kill a board without its node at the start timeout, again and again.
        let ready = LoopDeadline(loop: loop) { [self] in
            guard let a = current?.agent else { return }
            notify.ready(status: a.registered ? a.streamingStatus : "running: registering with \(a.config.server.apiRoot)")
        }
        try ready.arm(after: 0.001)
        while exitCode == nil { try loop.run() }
        led?.stop()
        // The supervisor's closures hold this session: let both go.
        supervisor = nil
        if exitCode == 0 { Log.notice("stopped") }
        return exitCode ?? 1
    }

    /// Opens the devices and starts an agent on them; on failure releases what it took.
    private func startRunning(_ l: Daemon.Loaded) throws -> Daemon.Running {
        Log.threshold = Daemon.logLevel(l.settings.logLevel)
        let (agent, hardware) = try Daemon.startAgent(l, loop: loop)
        let notify = notify
        agent.onStatus = { notify.status($0) }
        agent.onRegistered = { [unowned agent] in notify.status(agent.streamingStatus) }
        agent.onIdentify = { [weak self] seconds in
            guard let led = self?.led else { return nil }
            led.identify(seconds: seconds)
            return "blinking the status LED for \(Int(seconds)) s"
        }
        do {
            try agent.start()
            try hardware.start(feeding: agent)
        } catch {
            hardware.stop()
            agent.stopNow()
            throw error
        }
        let outputs = agent.specs.map(\.outputName) + (agent.videoSpec.map { [$0.outputName] } ?? [])
        Log.notice(
            "osh-edge \(Agent.version) running: \(l.config.identity.uid) → \(l.config.server.apiRoot), "
                + "outputs \(outputs.joined(separator: ", "))")
        hardware.onRestartNeeded = { [weak self] in self?.restartForCamera() }
        let r = Daemon.Running(agent: agent, hardware: hardware)
        current = r
        counters?.live = { [unowned agent] in agent.counterRows }
        counters?.state = { [unowned agent] in agent.stateTokens }
        return r
    }

    /// Stops the devices, then drains the agent for at most `seconds`.
    private func stop(_ r: Daemon.Running, seconds: Double, _ done: @escaping () -> Void) {
        r.hardware.stop()
        let counters = counters
        r.agent.beginStop(deadline: loop.deadline(after: seconds)) {
            // After the drain: the spilled and dropped-at-stop observations are counted.
            counters?.carryLive()
            done()
        }
    }

    /// Stops as for SIGTERM (drained, the rest spooled), without telling systemd it stops: the
    /// process starts itself again with the same pid.
    private func restartForCamera() {
        guard let supervisor, !restartRequested, supervisor.phase == .running else { return }
        restartRequested = true
        notify.status("restarting: the camera was lost; libcamera finds it again in a new start")
        supervisor.terminate()
    }

    private func exited(_ code: Int32) {
        if code != 0 { notify.status("exiting: no configuration starts; see the journal") }
        exitCode = code
        loop.stop()
    }

    private func signal(_ sig: Int32) {
        guard let supervisor else { return }
        if sig == SIGHUP {
            supervisor.reload { [self] in
                try Daemon.reload(configPath: configPath, secretsPath: secretsPath, loop: loop, running: supervisor.config.settings)
            }
        } else {
            if supervisor.phase != .stopping { notify.stopping() }
            supervisor.terminate()
        }
    }

    private var ledState: LEDState {
        guard let r = current else { return .starting }
        return LEDState.derive(
            registered: r.agent.registered, nodeReachable: r.agent.publisher.connectivity == .online,
            clockSynchronized: r.agent.clockState.isSynchronized, sensorFault: r.hardware.sensorFault)
    }

    /// The watchdog is fed from the loop itself: if the loop stops turning, systemd restarts
    /// us; when nothing can run, the loop stops and the process exits non-zero.
    private func armWatchdog() throws {
        guard let period = SDNotify.watchdogInterval() else { return }
        let notify = notify
        try loop.addAlignedTimer(every: UInt64(period / 2 * 1e9)) { _ in notify.watchdog() }
    }

    private func armCounters() throws {
        guard let counters else { return }
        // On the 1 s grid the clock check and the samplers already wake for.
        try loop.addAlignedTimer(every: 1_000_000_000, runsLast: true) { _ in counters.write() }
        counters.write()
    }

    /// A short blip on the LED per request the node took (the streaming pattern).
    private func armActivityBlips() throws {
        guard let led else { return }
        var lastRequests = 0
        try loop.addAlignedTimer(every: 250_000_000, runsLast: true) { [weak self] _ in
            guard let a = self?.current?.agent else { return }
            let n = a.specs.indices.reduce(0) { $0 + a.publisher.counters($1).requests }
            if n != lastRequests {
                lastRequests = n
                led.activity()
            }
        }
    }
}
