import OSHCore
import OSHPlatform

/// Registration as its own stage: registers the system, its datastreams and feature (`Registrar`),
/// retries with the reconnect policy's backoff, keeps the id cache, and hands the ids on
/// (`onRegistered`). A new attempt while one runs is ignored; the node losing a datastream or a
/// `reregister` command schedules one.
final class RegistrationService {
    let registrar: Registrar
    private(set) var registered = false
    private(set) var lastError: RegistrationError?
    /// Before an attempt: the publishers forget the ids (nothing is posted to a stale one).
    var willRegister: () -> Void = {}
    var onRegistered: (RegistrationState) -> Void = { _ in }
    /// Each failure's status line ("node unreachable, retrying in 4 s").
    var onFailureStatus: (String) -> Void = { _ in }

    private let loop: EventLoop
    private let cachePath: String
    /// Waits between failures, and which failures are logged: the first with its retry, then
    /// only a different one (libcurl's elapsed time does not make one new).
    private var policy: ReconnectPolicy
    private var registering = false
    private var noticesSaid: Set<String> = []
    private lazy var deadline = LoopDeadline(loop: loop) { [unowned self] in self.register() }

    init(loop: EventLoop, client: NodeClient, builder: CSRequestBuilder, config: AgentConfig, specs: [OutputSpec]) {
        self.loop = loop
        cachePath = config.stateDirectory + "/" + RegistrationState.fileName(server: config.server.apiRoot, uid: config.identity.uid)
        let cached = (try? StateFiles.read(cachePath)).flatMap { $0 }.flatMap(RegistrationState.decode)
        registrar = Registrar(
            client: client, builder: builder, server: config.server.apiRoot, identity: config.identity,
            specs: specs, format: config.publisher.format, cached: cached, now: { Clock.realtimeSeconds() })
        policy = ReconnectPolicy(backoff: config.registrationBackoff)
    }

    func schedule(after seconds: Double) {
        if registering { return }
        do { try deadline.arm(after: seconds) } catch { Log.error("cannot schedule registration: \(error); restart osh-edge") }
    }

    func cancel() { deadline.cancel() }

    private func register() {
        registering = true
        willRegister()
        registrar.register { [unowned self] result in
            self.registering = false
            switch result {
            case .success(let state):
                self.registered = true
                self.lastError = nil
                // The outage ends with the caller's "registered …" line, the one line for it.
                _ = self.policy.succeeded()
                // Each way out is logged once per run, with the node's message; a later registration
                // that meets the same refusal says nothing new.
                for n in self.registrar.notices where !self.noticesSaid.contains(n) {
                    if self.noticesSaid.count < 64 { self.noticesSaid.insert(n) }
                    Log.warning(n)
                }
                do { try StateFiles.write(state.encoded(), to: self.cachePath) } catch {
                    Log.warning("could not save the id cache (\(error)); registration repeats at the next start")
                }
                self.onRegistered(state)
            case .failure(let e):
                self.lastError = e
                let v = self.policy.failed(key: RetryLog.withoutElapsedTime("\(e)"))
                let retry = "retrying in \(RetryLog.seconds(v.step))"
                switch v.log {
                case .firstFailure: Log.error("registration failed: \(e); " + retry)
                case .newReason: Log.error("registration failed: \(e)")
                case nil: break
                }
                self.onFailureStatus(e.status == 0 ? "node unreachable, \(retry)" : "registration refused (HTTP \(e.status)), \(retry)")
                self.schedule(after: v.delay)
            }
        }
    }
}
