import OSHCore
import OSHPlatform

/// What reports a command's later status (an upload's progress), whichever channel took it.
protocol CommandStatusReporter: AnyObject {
    func report(commandID: String, _ outcome: CommandOutcome)
}

extension CommandReceiver: CommandStatusReporter {}

/// The receiver of one control stream over MQTT 5, as OSH's MQTT service delivers commands: it
/// subscribes to the stream's commands topic (which makes it the stream's receiver at the node),
/// runs each command through the same decoder and handlers as the WebSocket receiver, and
/// publishes the status on the stream's status topic with the command's correlation data, so the
/// node matches it at once (no PENDING window to outlast, no re-post). Later reports (an upload's
/// progress) go without correlation data; the node matches them by command id.
final class MQTTCommandReceiver: CommandStatusReporter {
    let controlStreamID: String
    let schema: DataComponent
    private let client: MQTTClient
    private let commandsTopic: String
    private let statusTopic: String
    private let handler: (ReceivedCommand) -> CommandOutcome

    init(
        client: MQTTClient, topics: MQTTTopics, controlStreamID: String, schema: DataComponent,
        handler: @escaping (ReceivedCommand) -> CommandOutcome
    ) {
        self.client = client
        self.controlStreamID = controlStreamID
        self.schema = schema
        self.handler = handler
        commandsTopic = topics.commands(controlStreamID: controlStreamID)
        statusTopic = topics.status(controlStreamID: controlStreamID)
    }

    func start() {
        client.subscribe(commandsTopic) { [weak self] payload, correlation in self?.command(payload, correlation) }
    }

    func stop() { client.unsubscribe(commandsTopic) }

    func report(commandID: String, _ outcome: CommandOutcome) {
        publish(CommandReceiver.status(commandID, outcome), correlation: [])
    }

    private func command(_ payload: UnsafeRawBufferPointer, _ correlation: [UInt8]) {
        guard let status = CommandReceiver.run(payload, schema: schema, controlStreamID: controlStreamID, handler: handler)
        else { return }
        publish(status, correlation: correlation)
    }

    private func publish(_ status: CommandStatus, correlation: [UInt8]) {
        let body = CommandStatusBody.bytes(status)
        body.withUnsafeBytes { b in
            client.publish(topic: statusTopic, payload: b, contentType: MediaType.json, correlation: correlation) { r in
                if case .failed(let why) = r {
                    Log.warning("command status \(status.statusCode.rawValue) for \(status.commandID) was not sent: \(why)")
                } else if case .acknowledged(let rc) = r, rc >= 0x80 {
                    Log.warning(
                        "command status \(status.statusCode.rawValue) for \(status.commandID) was refused (PUBACK reason code \(rc))")
                }
            }
        }
    }
}
