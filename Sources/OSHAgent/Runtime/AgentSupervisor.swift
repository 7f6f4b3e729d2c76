import OSHPlatform

/// One agent at a time for `osh-edge run`: replaced on SIGHUP, stopped on SIGTERM, both from a
/// signal handler, so nothing here waits — stopping is an asynchronous drain and the next step
/// runs in its completion. A reload's configuration is loaded and checked (as far as it can be
/// without the devices) before the running agent is touched; if the new agent still fails to
/// start, the previous configuration starts again; if that fails too, `exit(1)` — systemd
/// restarts the service — rather than a process feeding the watchdog with nothing running.
final class AgentSupervisor<Config, Running> {
    enum Phase: Equatable {
        case running, replacing, stopping
        case exited(Int32)
    }

    /// Seconds the running agent gets to flush: before a reload, and at SIGTERM.
    static var reloadFlushSeconds: Double { 2 }
    static var stopFlushSeconds: Double { 5 }

    private(set) var phase = Phase.running
    /// The configuration of the running agent (or of the last one that ran).
    private(set) var config: Config
    private(set) var running: Running?
    /// Names the configuration in the log (the file's path).
    private let source: String
    private let start: (Config) throws -> Running
    private let stop: (Running, Double, @escaping () -> Void) -> Void
    private let exit: (Int32) -> Void

    /// `stop(running, seconds, completion)` stops the devices and drains the agent for at most
    /// `seconds`, then calls `completion`; `exit(code)` is called once, when nothing runs.
    init(
        config: Config, running: Running, source: String, start: @escaping (Config) throws -> Running,
        stop: @escaping (Running, Double, @escaping () -> Void) -> Void, exit: @escaping (Int32) -> Void
    ) {
        self.config = config
        self.running = running
        self.source = source
        self.start = start
        self.stop = stop
        self.exit = exit
    }

    /// SIGHUP: `load` reads and checks the new configuration; if it throws, nothing changes.
    func reload(_ load: () throws -> Config) {
        guard phase == .running, let old = running else {
            Log.warning("SIGHUP ignored: the agent is \(phase == .replacing ? "already being replaced" : "stopping")")
            return
        }
        let fresh: Config
        do { fresh = try load() } catch {
            Log.error("configuration not reloaded, keeping the running one: \(error)")
            return
        }
        phase = .replacing
        stop(old, Self.reloadFlushSeconds) { [self] in
            running = nil
            // SIGTERM during the drain: stop there.
            guard phase == .replacing else { return finish(0) }
            do {
                running = try start(fresh)
                config = fresh
                phase = .running
                Log.notice("configuration reloaded from \(source)")
            } catch {
                Log.error("the configuration reloaded from \(source) did not start: \(error); starting the previous one again")
                do {
                    running = try start(config)
                    phase = .running
                    Log.notice("running with the previous configuration; fix \(source) and send SIGHUP again")
                } catch {
                    Log.error(
                        "the previous configuration did not start again either: \(error); "
                            + "exiting so that systemd restarts osh-edge")
                    finish(1)
                }
            }
        }
    }

    /// SIGTERM/SIGINT: drains the running agent (or lets a reload's drain end there), then exits 0.
    func terminate() {
        switch phase {
        case .running:
            phase = .stopping
            guard let r = running else { return finish(0) }
            stop(r, Self.stopFlushSeconds) { [self] in
                running = nil
                finish(0)
            }
        case .replacing:
            phase = .stopping
        case .stopping, .exited:
            break
        }
    }

    private func finish(_ code: Int32) {
        phase = .exited(code)
        exit(code)
    }
}
