import OSHCore
import OSHPlatform

extension AgentRuntime {
    /// A control stream beyond device_control (a pan-tilt unit's `ptz_control`), set before `start`.
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
}

/// The command service: after each registration, creates the control streams (device_control,
/// then the extras), listens on each one's channel, and runs what the node sends — rate and
/// enable changes go to the runtime's output gate, identify to the LED, reregister to registration.
final class CommandService {
    /// The receivers on the node's command channels, by inputName, once their control streams exist.
    private(set) var receivers: [String: CommandReceiver] = [:]
    /// `identify`: blink the status LED for the given seconds; returns a message, or nil when the
    /// board has no LED (the command then fails saying so).
    var onIdentify: ((Double) -> String?)?
    var extraControls: [AgentRuntime.ExtraControl] = []
    /// The last command handled (the demo's table, logs).
    private(set) var lastCommand: String?

    private unowned let runtime: AgentRuntime
    private let http: HTTPClient
    private let builder: CSRequestBuilder

    init(runtime: AgentRuntime, http: HTTPClient, builder: CSRequestBuilder) {
        self.runtime = runtime
        self.http = http
        self.builder = builder
    }

    func stop() {
        for r in receivers.values { r.stop() }
        receivers.removeAll()
    }

    /// Registers every control stream and opens its receiver.
    func start(systemID: String) {
        let loop = runtime.loop
        let options = runtime.config.commandOptions
        let names = runtime.specs.map(\.outputName) + (runtime.videoSpec.map { [$0.outputName] } ?? [])
        openControl(
            systemID: systemID, inputName: DeviceControl.inputName,
            body: DeviceControl.body(systemLabel: runtime.config.identity.label, outputNames: names)
        ) { [unowned self] id in
            try CommandReceiver.deviceControl(
                loop: loop, http: self.http, builder: self.builder, controlStreamID: id,
                outputNames: names, options: options
            ) { [unowned self] c, received in
                self.execute(c, commandID: received.id)
            }
        }
        for control in extraControls {
            openControl(systemID: systemID, inputName: control.inputName, body: control.body) { [unowned self] id in
                try CommandReceiver(
                    loop: loop, http: self.http, builder: self.builder, controlStreamID: id,
                    schema: control.schema, options: options
                ) { [unowned self] c in
                    let outcome = control.handler(c)
                    self.note(control.inputName, outcome)
                    return outcome
                }
            }
        }
    }

    /// One control stream: created (or found, by inputName) on the node, then its receiver opened —
    /// unless the one already open listens on the same id. A receiver told the stream is gone
    /// (a node restarted without its database) is dropped and the board registers again.
    private func openControl(
        systemID: String, inputName: String, body: [UInt8],
        makeReceiver: @escaping (String) throws -> CommandReceiver
    ) {
        CommandReceiver.registerControlStream(http: http, builder: builder, systemID: systemID, body: body) { [unowned self] r in
            switch r {
            case .failure(let e):
                Log.error("commands: \(inputName): \(e); the node cannot drive it until the next registration")
            case .success(let id):
                if let old = self.receivers[inputName] {
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
                            self.receivers[inputName]?.stop()
                            self.receivers[inputName] = nil
                            self.runtime.reregister()
                        } else if let retry {
                            outage.failed(
                                .warning, "commands: \(inputName): \(error)", key: error.repeatKey,
                                firstSuffix: "; reconnecting in \(retry == retry.rounded() ? "\(Int(retry))" : "\(retry)") s")
                        }
                    }
                    receiver.onChannelUp = {
                        if outage.recovered() { Log.notice("commands: \(inputName): the command channel is back") }
                    }
                    receiver.start()
                    self.receivers[inputName] = receiver
                    Log.notice("commands: listening on control stream \(id) (\(inputName))")
                    if inputName == DeviceControl.inputName { self.runtime.commandChannelReady() }
                } catch {
                    Log.error("commands: cannot open the \(inputName) channel: \(error)")
                }
            }
        }
    }

    /// A later outcome of a command answered EXECUTING (an upload's progress and end): what the
    /// demo's status line shows; the uploader logs it itself.
    func laterOutcome(_ what: String, _ outcome: CommandOutcome) {
        lastCommand = "\(what): \(outcome.status.rawValue)" + (outcome.message.map { " — " + $0 } ?? "")
    }

    private func note(_ what: String, _ outcome: CommandOutcome) {
        lastCommand = "\(what): \(outcome.status.rawValue)" + (outcome.message.map { " — " + $0 } ?? "")
        Log.notice("command \(lastCommand ?? "")")
    }

    /// Runs one command from the node; the outcome is what the node will hold. `commandID` is the
    /// node's id for it, for status reports after this outcome.
    func execute(_ c: DeviceControlCommand, commandID: String?) -> CommandOutcome {
        let outcome: CommandOutcome
        let video = runtime.videoSpec?.outputName
        do throws(AgentRuntime.ControlError) {
            switch c {
            case .setRate(let name, let hz):
                if name == video {
                    outcome = .rejected("the camera's frame rate is set in [outputs.\(name)] rate (1 to 25); not changed at run time")
                } else {
                    try runtime.setRate(name, hz)
                    outcome = .completed("\(name) now at \(hz) Hz")
                }
            case .enableOutput(let name, let on):
                if name == video {
                    runtime.videoEnabled = on
                } else {
                    try runtime.setEnabled(name, on)
                }
                outcome = .completed("\(name) \(on ? "enabled" : "disabled")")
            case .identify(let seconds):
                if let m = onIdentify?(seconds) {
                    outcome = .completed(m)
                } else {
                    outcome = .failed("this board has no status LED configured ([led] chip and line)")
                }
            case .reregister:
                runtime.reregister()
                outcome = .completed("registering again")
            case .uploadTimeRange(let start, let stop, let outputs):
                outcome = runtime.startUpload(commandID: commandID, start: start, stop: stop, outputs: outputs)
            }
        } catch {
            outcome = .rejected(error.description)
        }
        note(c.item, outcome)
        return outcome
    }
}
