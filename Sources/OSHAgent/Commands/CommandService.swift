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
/// then the extras), listens on each one's channel, and runs what the node sends. It reaches
/// what the commands change through narrow parts — the output controls (rate, on/off), the
/// registration service, the uploader, the LED's `onIdentify` — and holds no runtime.
final class CommandService {
    /// The receivers on the node's command channels, by inputName, once their control streams exist.
    private(set) var receivers: [String: CommandReceiver] = [:]
    /// With `commands = "mqtt"`: the broker link and its topics; the receivers are subscriptions.
    var mqtt: (client: MQTTClient, topics: MQTTTopics)?
    private(set) var mqttReceivers: [String: MQTTCommandReceiver] = [:]
    /// `identify`: blink the status LED for the given seconds; returns a message, or nil when the
    /// board has no LED (the command then fails saying so).
    var onIdentify: ((Double) -> String?)?
    var extraControls: [AgentRuntime.ExtraControl] = []
    /// The last command handled (the demo's table, logs).
    private(set) var lastCommand: String?
    /// `uploadTimeRange`'s worker, when the recording opened; else why there is none.
    var uploader: Uploader?
    var noUploader = "recording is off: set [record] enabled = true to record on the board"
    /// An upload the previous process did not finish: reported FAILED once device_control is up.
    var interruptedUpload: (commandID: String, message: String)?

    private let loop: EventLoop
    private let http: HTTPClient
    private let builder: CSRequestBuilder
    private let controls: OutputControls
    private let registration: RegistrationService
    private let options: CommandReceiver.Options
    private let systemLabel: String

    init(
        loop: EventLoop, http: HTTPClient, builder: CSRequestBuilder, controls: OutputControls,
        registration: RegistrationService, options: CommandReceiver.Options, systemLabel: String
    ) {
        self.loop = loop
        self.http = http
        self.builder = builder
        self.controls = controls
        self.registration = registration
        self.options = options
        self.systemLabel = systemLabel
    }

    func stop() {
        uploader?.stop()
        for r in receivers.values { r.stop() }
        receivers.removeAll()
        for r in mqttReceivers.values { r.stop() }
        mqttReceivers.removeAll()
    }

    /// Whichever receiver takes `inputName`'s commands.
    private func reporter(_ inputName: String) -> CommandStatusReporter? { receivers[inputName] ?? mqttReceivers[inputName] }

    /// Registers every control stream and opens its receiver.
    func start(systemID: String) {
        let loop = loop
        let options = options
        let names = controls.outputNames
        if let (client, topics) = mqtt {
            openMQTTControl(
                client, topics, systemID: systemID, inputName: DeviceControl.inputName,
                body: DeviceControl.body(systemLabel: systemLabel, outputNames: names),
                schema: DeviceControl.schema(outputNames: names),
                handler: CommandReceiver.deviceControlHandler { [unowned self] c, received in self.execute(c, commandID: received.id) })
            for control in extraControls {
                openMQTTControl(
                    client, topics, systemID: systemID, inputName: control.inputName, body: control.body, schema: control.schema
                ) { [unowned self] c in
                    let outcome = control.handler(c)
                    self.note(control.inputName, outcome)
                    return outcome
                }
            }
            return
        }
        openControl(
            systemID: systemID, inputName: DeviceControl.inputName,
            body: DeviceControl.body(systemLabel: systemLabel, outputNames: names)
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
        createControlStream(systemID: systemID, inputName: inputName, body: body) { [unowned self] id in
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
                        self.registration.schedule(after: 0)
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
                if inputName == DeviceControl.inputName { self.reportInterruptedUpload() }
            } catch {
                Log.error("commands: cannot open the \(inputName) channel: \(error)")
            }
        }
    }

    /// Creates (or finds, by inputName) a control stream on the node over HTTP, then `created(id)`;
    /// a refusal is logged, and the stream waits for the next registration.
    private func createControlStream(systemID: String, inputName: String, body: [UInt8], created: @escaping (String) -> Void) {
        CommandReceiver.registerControlStream(http: http, builder: builder, systemID: systemID, body: body) { r in
            switch r {
            case .failure(let e):
                Log.error("commands: \(inputName): \(e); the node cannot drive it until the next registration")
            case .success(let id):
                created(id)
            }
        }
    }

    /// One control stream (created or found over HTTP as for the WebSocket), its commands taken by a
    /// subscription to its commands topic.
    private func openMQTTControl(
        _ client: MQTTClient, _ topics: MQTTTopics, systemID: String, inputName: String, body: [UInt8], schema: DataComponent,
        handler: @escaping (ReceivedCommand) -> CommandOutcome
    ) {
        createControlStream(systemID: systemID, inputName: inputName, body: body) { [unowned self] id in
            if let old = self.mqttReceivers[inputName] {
                if old.controlStreamID == id { return }
                old.stop()
            }
            let receiver = MQTTCommandReceiver(client: client, topics: topics, controlStreamID: id, schema: schema, handler: handler)
            receiver.start()
            self.mqttReceivers[inputName] = receiver
            Log.notice(
                "commands: subscribed to \(topics.commands(controlStreamID: id)) on the \(client.options.brokerName) "
                    + "(\(inputName))")
            if inputName == DeviceControl.inputName { self.reportInterruptedUpload() }
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

    /// The device_control channel is open: an upload the previous process left unfinished is reported now.
    private func reportInterruptedUpload() {
        guard let u = interruptedUpload, let receiver = reporter(DeviceControl.inputName) else { return }
        interruptedUpload = nil
        receiver.report(commandID: u.commandID, .failed(u.message))
        Log.notice("upload \(u.commandID): reported FAILED — \(u.message)")
    }

    /// An upload's progress and end, after the EXECUTING its command was answered with.
    func uploadProgress(commandID: String, _ outcome: CommandOutcome) {
        reporter(DeviceControl.inputName)?.report(commandID: commandID, outcome)
        laterOutcome("uploadTimeRange", outcome)
    }

    /// `uploadTimeRange` from the node: EXECUTING while it runs, or why not.
    private func startUpload(commandID: String?, start: Double, stop: Double, outputs: [String]) -> CommandOutcome {
        guard let uploader else { return .rejected(noUploader) }
        guard let commandID else { return .rejected("an upload needs the node's command id to report its progress") }
        return uploader.start(commandID: commandID, start: start, stop: stop, outputs: outputs)
    }

    /// Runs one command from the node; the outcome is what the node will hold. `commandID` is the
    /// node's id for it, for status reports after this outcome.
    func execute(_ c: DeviceControlCommand, commandID: String?) -> CommandOutcome {
        let outcome: CommandOutcome
        do throws(ControlError) {
            switch c {
            case .setRate(let name, let hz):
                try controls.setRate(name, hz)
                outcome = .completed("\(name) now at \(hz) Hz")
            case .enableOutput(let name, let on):
                try controls.setEnabled(name, on)
                outcome = .completed("\(name) \(on ? "enabled" : "disabled")")
            case .identify(let seconds):
                if let m = onIdentify?(seconds) {
                    outcome = .completed(m)
                } else {
                    outcome = .failed("this board has no status LED configured ([led] chip and line)")
                }
            case .reregister:
                registration.schedule(after: 0)
                outcome = .completed("registering again")
            case .uploadTimeRange(let start, let stop, let outputs):
                outcome = startUpload(commandID: commandID, start: start, stop: stop, outputs: outputs)
            }
        } catch {
            outcome = .rejected(error.description)
        }
        note(c.item, outcome)
        return outcome
    }
}
