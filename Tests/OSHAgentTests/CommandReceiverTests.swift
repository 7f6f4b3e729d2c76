import OSHAgent
import OSHCore
import OSHDevNode
import OSHPlatform
import XCTest

/// The command transport end to end over loopback: control stream on the development node, the
/// agent's WebSocket receiver, an operator's POST, the status the node ends up holding.
final class CommandReceiverTests: XCTestCase {
    private var node: DevNode!
    private var loop: EventLoop!
    private var http: HTTPClient!
    private let builder = CSRequestBuilder(credentials: .basic(username: "pi", password: "secret"))
    private let outputs = ["barometer", "gps_data"]

    override func setUpWithError() throws {
        Log.muted = true
        var c = DevNodeConfig(users: [("pi", "secret")])
        c.commandAckSeconds = 0.3
        c.noReceiverWaitSeconds = 0.2
        node = DevNode(config: c)
        try node.start()
        loop = try EventLoop()
        http = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: node.apiRoot, credentials: builder.credentials))
    }

    override func tearDown() {
        http = nil
        node?.stop()
    }

    @discardableResult
    private func run(timeout: Double = 5, until condition: () -> Bool) throws -> Bool {
        try loop.run(for: timeout, until: condition)
    }

    private func call(_ r: CSRequest) throws -> HTTPResult { try http.sendWaiting(r, on: loop) }

    /// System + device_control control stream; returns the control stream id.
    private func register() throws -> String {
        let sys = SystemBody.bytes(
            SystemDescription(uid: "urn:osh:rpi:cmdtest", label: "Cmd Pi", serial: "cmdtest", validFrom: 1.7e9, components: []))
        let s = try call(builder.createSystem(body: sys))
        XCTAssertEqual(s.status, 201)
        let sysID = try XCTUnwrap(CSResponse.resourceID(fromLocation: s.location))
        let body = DeviceControl.body(systemLabel: "Cmd Pi", outputNames: outputs)
        var got: Result<String, CommandChannelSetupError>?
        CommandReceiver.registerControlStream(http: http, builder: builder, systemID: sysID, body: body) { got = $0 }
        try run { got != nil }
        let csID = try XCTUnwrap(got).get()
        // Idempotent by inputName.
        let again = try call(builder.createControlStream(systemID: sysID, body: body))
        XCTAssertEqual(CSResponse.resourceID(fromLocation: again.location), csID)
        return csID
    }

    private func receiver(_ csID: String, handled: @escaping (DeviceControlCommand) -> CommandOutcome) throws -> CommandReceiver {
        let opts = CommandReceiver.Options(
            ackWindow: 0.3, repostMargin: 0.2,
            websocket: WebSocketClient.Options(backoff: Backoff(initial: 0.1, maximum: 0.3), pingInterval: 0))
        return try CommandReceiver.deviceControl(
            loop: loop, http: http, builder: builder, controlStreamID: csID,
            outputNames: outputs, options: opts
        ) { c, _ in handled(c) }
    }

    private func operatorPost(_ csID: String, _ parameters: String) -> CSRequest {
        builder.request(
            .post, "/controlstreams/" + csID + "/commands", contentType: MediaType.json,
            body: Array(("{\"parameters\":" + parameters + "}").utf8))
    }

    func testSetRateRoundTripEndsCompletedOnTheNodeAndInvalidOnesAreRejected() throws {
        let csID = try register()
        var seen: [DeviceControlCommand] = []
        let r = try receiver(csID) { cmd in
            seen.append(cmd)
            return .completed("done")
        }
        r.start()
        XCTAssertTrue(try run { node.hasCommandReceiver(controlStreamID: csID) })

        let ok = try call(operatorPost(csID, DeviceControl.parametersJSON(.setRate(outputName: "barometer", hz: 2))))
        XCTAssertEqual(ok.status, 200)
        // The node answers the operator with PENDING when its window runs out (HTTP statuses never correlate).
        XCTAssertEqual(try JSONValue.parse(ok.body)["statusCode"]?.string, "PENDING")
        XCTAssertEqual(seen, [.setRate(outputName: "barometer", hz: 2)])
        XCTAssertTrue(
            try run {
                let c = node.commands(controlStreamID: csID)
                return c.count == 1 && c[0].reports.count >= 3 && c[0].currentStatus == "COMPLETED"
            }, "\(node.commands(controlStreamID: csID))")
        let first = node.commands(controlStreamID: csID)[0]
        XCTAssertEqual(first.reports.map(\.statusCode), ["COMPLETED", "PENDING", "COMPLETED"])
        XCTAssertEqual(first.sender, "pi")

        // Unknown output: rejected by the schema's token list, never reaches the handler.
        let capture = LogCapture()
        defer { capture.stop() }
        _ = try call(operatorPost(csID, "{\"setRate\":{\"outputName\":\"nope\",\"rate\":1}}"))
        // Out of range.
        _ = try call(operatorPost(csID, "{\"setRate\":{\"outputName\":\"gps_data\",\"rate\":500}}"))
        XCTAssertTrue(
            try run {
                let c = node.commands(controlStreamID: csID)
                return c.count == 3 && c[1].reports.count >= 3 && c[2].reports.count >= 3
            })
        let cmds = node.commands(controlStreamID: csID)
        XCTAssertEqual(cmds[1].currentStatus, "REJECTED")
        XCTAssertEqual(cmds[1].current?.message, "setRate.outputName: 'nope' is not one of barometer, gps_data")
        XCTAssertEqual(cmds[2].currentStatus, "REJECTED")
        XCTAssertEqual(cmds[2].current?.message, "setRate.rate 500 Hz is outside 0.001…100 Hz")
        XCTAssertEqual(seen.count, 1)
        XCTAssertEqual(r.rejectedCount, 2)
        // Each rejection is in the board's log with its reason, named as the other outcomes are.
        let said = capture.lines.filter { $0.hasPrefix("command setRate: REJECTED — ") }
        XCTAssertEqual(said.count, 2, "\(capture.lines)")
        XCTAssertTrue(said.contains { $0.contains("'nope' is not one of barometer, gps_data") }, "\(said)")
        XCTAssertTrue(said.contains { $0.contains("500 Hz is outside 0.001…100 Hz") }, "\(said)")
        // What a client polling the node sees.
        let list = try JSONValue.parse(try call(builder.request(.get, "/controlstreams/" + csID + "/commands")).body)
        let items = try XCTUnwrap(list["items"]?.array)
        XCTAssertEqual(items.map { $0["currentStatus"]?.string ?? "" }, ["COMPLETED", "REJECTED", "REJECTED"])
        XCTAssertEqual(items[0]["parameters"]?["setRate"]?["rate"]?.double, 2)
        XCTAssertEqual(items[0]["controlstream@id"]?.string, csID)

        // The node itself refuses a command that does not fit the schema's shape.
        let bad = try call(operatorPost(csID, "{\"launch\":{}}"))
        XCTAssertEqual(bad.status, 400)
        XCTAssertEqual(try JSONValue.parse(bad.body)["message"]?.string, "Invalid choice selector value")
        let partial = try call(operatorPost(csID, "{\"setRate\":{\"outputName\":\"gps_data\"}}"))
        XCTAssertEqual(partial.status, 400)
        XCTAssertEqual(try JSONValue.parse(partial.body)["message"]?.string, "Expected a name but was END_OBJECT")

        r.stop()
        XCTAssertTrue(try run { !node.hasCommandReceiver(controlStreamID: csID) })
    }

    func testHandlerOutcomesIdentifyAndFailure() throws {
        let csID = try register()
        let r = try receiver(csID) { cmd in
            if case .identify(let s) = cmd { return .completed("blinking for \(Int(s)) s") }
            return .failed("cannot do that now")
        }
        r.start()
        XCTAssertTrue(try run { node.hasCommandReceiver(controlStreamID: csID) })
        _ = try call(operatorPost(csID, DeviceControl.parametersJSON(.identify(seconds: 5))))
        _ = try call(operatorPost(csID, DeviceControl.parametersJSON(.enableOutput(outputName: "gps_data", enabled: false))))
        XCTAssertTrue(
            try run {
                let c = node.commands(controlStreamID: csID)
                return c.count == 2 && c.allSatisfy { $0.reports.count >= 3 }
            })
        let c = node.commands(controlStreamID: csID)
        XCTAssertEqual(c[0].currentStatus, "COMPLETED")
        XCTAssertEqual(c[0].current?.message, "blinking for 5 s")
        XCTAssertEqual(c[1].currentStatus, "FAILED")
        r.stop()
    }

    func testAcceptedThenCompletedLaterIsWhatTheNodeHolds() throws {
        let csID = try register()
        var accepted: [String] = []
        let receiver = try CommandReceiver(
            loop: loop, http: http, builder: builder, controlStreamID: csID,
            schema: DeviceControl.schema(outputNames: outputs),
            options: CommandReceiver.Options(
                ackWindow: 0.3, repostMargin: 0.2,
                websocket: WebSocketClient.Options(pingInterval: 0))
        ) { cmd in
            accepted.append(cmd.id)
            return .accepted("blinking")
        }
        receiver.start()
        XCTAssertTrue(try run { receiver.channel.state == .open && node.hasCommandReceiver(controlStreamID: csID) })
        var answered = false
        http.send(operatorPost(csID, DeviceControl.parametersJSON(.identify(seconds: 0.1)))) { _ in answered = true }
        XCTAssertTrue(try run { accepted.count == 1 })
        // The blink ends before the node's window: the final status replaces the pending re-post.
        receiver.report(commandID: accepted[0], .completed("identify finished"))
        XCTAssertTrue(try run { answered && (node.commands(controlStreamID: csID).first?.reports.count ?? 0) >= 4 })
        let c = try XCTUnwrap(node.commands(controlStreamID: csID).first)
        // The first two were posted back to back (two connections: either may land first).
        XCTAssertEqual(Set(c.reports.prefix(2).map(\.statusCode)), ["ACCEPTED", "COMPLETED"])
        XCTAssertEqual(c.reports.dropFirst(2).map(\.statusCode), ["PENDING", "COMPLETED"])
        XCTAssertEqual(c.currentStatus, "COMPLETED")
        XCTAssertEqual(c.current?.message, "identify finished")
        receiver.stop()
    }

    func testReceiverReconnectsAfterTheNodeRestarts() throws {
        let csID = try register()
        let r = try receiver(csID) { _ in .completed() }
        r.start()
        XCTAssertTrue(try run { node.hasCommandReceiver(controlStreamID: csID) && r.channel.state == .open })
        XCTAssertEqual(r.channel.opens, 1)
        node.stop()
        XCTAssertTrue(try run { r.channel.state == .waitingToReconnect })
        XCTAssertEqual(r.channel.lastError, .closedByServer(code: 1001, reason: "node stopping"))
        try node.start()
        XCTAssertTrue(try run { node.hasCommandReceiver(controlStreamID: csID) && r.channel.state == .open })
        XCTAssertEqual(r.channel.opens, 2)
        // Commands flow again.
        let ok = try call(operatorPost(csID, DeviceControl.parametersJSON(.reregister)))
        XCTAssertEqual(ok.status, 200)
        XCTAssertTrue(try run { node.commands(controlStreamID: csID).last?.reports.count ?? 0 >= 3 })
        XCTAssertEqual(node.commands(controlStreamID: csID).last?.currentStatus, "COMPLETED")
        r.stop()
    }

    /// uploadTimeRange passes the node's shape check (ISO times) and the handler gets the node's
    /// command id with it; a window that ends before it starts is REJECTED without reaching it.
    func testUploadTimeRangeReachesTheHandlerWithTheCommandID() throws {
        let csID = try register()
        var seen: [(DeviceControlCommand, String)] = []
        let r = try CommandReceiver.deviceControl(
            loop: loop, http: http, builder: builder, controlStreamID: csID, outputNames: outputs,
            options: CommandReceiver.Options(
                ackWindow: 0.3, repostMargin: 0.2,
                websocket: WebSocketClient.Options(backoff: Backoff(initial: 0.1, maximum: 0.3), pingInterval: 0))
        ) { c, received in
            seen.append((c, received.id))
            return .accepted("uploading")
        }
        r.start()
        XCTAssertTrue(try run { node.hasCommandReceiver(controlStreamID: csID) })
        let upload = DeviceControlCommand.uploadTimeRange(start: 1_780_000_000, stop: 1_780_000_600.5, outputs: ["barometer"])
        XCTAssertEqual(try call(operatorPost(csID, DeviceControl.parametersJSON(upload))).status, 200)
        XCTAssertTrue(try run { node.commands(controlStreamID: csID).first?.currentStatus == "ACCEPTED" })
        XCTAssertEqual(seen.map(\.0), [upload])
        XCTAssertEqual(seen.map(\.1), node.commands(controlStreamID: csID).map(\.id))

        let backwards = #"{"uploadTimeRange":{"start":"2026-06-01T10:00:00Z","stop":"2026-06-01T09:00:00Z","outputs":""}}"#
        XCTAssertEqual(try call(operatorPost(csID, backwards)).status, 200)
        XCTAssertTrue(
            try run { node.commands(controlStreamID: csID).count == 2 && node.commands(controlStreamID: csID)[1].reports.count >= 3 })
        XCTAssertEqual(node.commands(controlStreamID: csID)[1].currentStatus, "REJECTED")
        XCTAssertEqual(
            node.commands(controlStreamID: csID)[1].current?.message,
            "uploadTimeRange.stop 2026-06-01T09:00:00.000Z is not after start 2026-06-01T10:00:00.000Z: give a window with stop later than start"
        )
        XCTAssertEqual(seen.count, 1)
        // The node itself refuses a time that is not ISO 8601.
        let numeric = try call(operatorPost(csID, #"{"uploadTimeRange":{"start":1780000000,"stop":"2026-06-01T09:00:00Z","outputs":""}}"#))
        XCTAssertEqual(numeric.status, 400)
        r.stop()
    }

    func testSecondReceiverIsToldOneIsAlreadyConnected() throws {
        let csID = try register()
        let a = try receiver(csID) { _ in .completed() }
        a.start()
        XCTAssertTrue(try run { node.hasCommandReceiver(controlStreamID: csID) && a.channel.state == .open })
        let b = try receiver(csID) { _ in .completed() }
        var downs: [WebSocketClientError?] = []
        b.onChannelDown = { e, _ in downs.append(e) }
        b.start()
        XCTAssertTrue(try run { !downs.isEmpty })
        guard case .alreadyConnected(let m)? = b.channel.lastError else { return XCTFail("\(String(describing: b.channel.lastError))") }
        XCTAssertEqual(m, "A command receiver is already connected")
        XCTAssertTrue(b.channel.lastError?.description.contains("already has a command receiver") ?? false)
        XCTAssertEqual(a.channel.state, .open)
        b.stop()
        a.stop()
    }

    func testNoReceiverMeansTheCommandIsNotStoredAnd202() throws {
        let csID = try register()
        let r = try call(operatorPost(csID, DeviceControl.parametersJSON(.identify(seconds: 1))))
        XCTAssertEqual(r.status, 202)
        XCTAssertTrue(node.commands(controlStreamID: csID).isEmpty)
    }

    func testWrongCredentialsAndUnknownStreamAreClear() throws {
        let csID = try register()
        let server = NodeEndpoint(apiRoot: node.apiRoot, credentials: .basic(username: "pi", password: "wrong"))
        let bad = try WebSocketClient(
            loop: loop, server: server,
            request: CSRequestBuilder(credentials: server.credentials).commandChannel(controlStreamID: csID),
            options: WebSocketClient.Options(backoff: Backoff(initial: 5, maximum: 5)))
        bad.start()
        XCTAssertTrue(try run { bad.lastError != nil })
        XCTAssertEqual(bad.lastError, .unauthorized(401))
        bad.stop()
        let gone = try WebSocketClient(
            loop: loop, server: http.server, request: builder.commandChannel(controlStreamID: "zzzz"),
            options: WebSocketClient.Options(backoff: Backoff(initial: 5, maximum: 5)))
        gone.start()
        XCTAssertTrue(try run { gone.lastError != nil })
        guard case .notFound? = gone.lastError else { return XCTFail("\(String(describing: gone.lastError))") }
        gone.stop()
    }
    /// `osh-edge command` as a field engineer runs it, against the development node behaving as
    /// osh-core does (the POST answers PENDING when its window ends): the CLI reads the outcome
    /// back from the command's status reports and prints it — COMPLETED with the handler's
    /// message, REJECTED with the reason — and says plainly when nothing is listening.
    func testTheCLIPrintsTheOutcomeNotTheNodesPending() throws {
        let csID = try register()
        let r = try receiver(csID) { cmd in
            if case .setRate(let name, let hz) = cmd { return .completed("\(name) now at \(hz) Hz") }
            return .completed()
        }
        r.start()
        XCTAssertTrue(try run { node.hasCommandReceiver(controlStreamID: csID) && r.channel.state == .open })
        func cli(_ parameters: String) throws -> (Int32, String) {
            let p = Process()
            p.executableURL = builtBinary("osh-edge")
            p.arguments = ["command", csID, parameters, "--node", node.apiRoot, "--user", "pi"]
            var env = ProcessInfo.processInfo.environment
            env["OSH_EDGE_PASSWORD"] = "secret"
            p.environment = env
            let out = Pipe()
            p.standardOutput = out
            p.standardError = out
            try p.run()
            // The receiver answers on this loop while the CLI waits.
            try run(timeout: 30) { !p.isRunning }
            p.waitUntilExit()
            return (p.terminationStatus, String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
        }
        let (okStatus, ok) = try cli(#"{"setRate":{"outputName":"barometer","rate":2}}"#)
        XCTAssertEqual(okStatus, 0, ok)
        XCTAssertTrue(ok.contains("\nstatus: COMPLETED at "), ok)
        XCTAssertTrue(ok.contains(" — barometer now at 2.0 Hz\n"), ok)
        XCTAssertTrue(ok.contains("(the node answered PENDING when its window ended"), ok)
        let (rejectedStatus, rejected) = try cli(#"{"setRate":{"outputName":"barometer","rate":500}}"#)
        XCTAssertEqual(rejectedStatus, 1, "a script can tell a refusal: \(rejected)")
        XCTAssertTrue(rejected.contains("\nstatus: REJECTED at "), rejected)
        XCTAssertTrue(rejected.contains(" — setRate.rate 500 Hz is outside 0.001…100 Hz"), rejected)
        r.stop()
        XCTAssertTrue(try run { !node.hasCommandReceiver(controlStreamID: csID) })
        let (nobodyStatus, nobody) = try cli(#"{"identify":{"duration":1}}"#)
        XCTAssertEqual(nobodyStatus, 1, nobody)
        XCTAssertTrue(nobody.hasPrefix("command on control stream \(csID): the node kept no command (HTTP 202 after "), nobody)
        XCTAssertTrue(nobody.contains("no receiver acknowledged it in its window"), nobody)
        // The node's message as quoted from Jetty's page (its MESSAGE cell), not the page's text.
        XCTAssertTrue(
            nobody.contains("(\"Command accepted but request timed out before command was acknowledged by receiving system\")"), nobody)
        XCTAssertTrue(nobody.contains("commands: listening on control stream \(csID)"), nobody)
        // Where the ids come from: the system's control streams and the commands each offers.
        let listed = try runOSHEdge(
            ["controlstreams", "urn:osh:rpi:cmdtest", "--node", node.apiRoot, "--user", "pi"],
            env: ["OSH_EDGE_PASSWORD": "secret"])
        XCTAssertEqual(listed.status, 0, listed.err)
        XCTAssertTrue(listed.out.contains(csID), listed.out)
        XCTAssertTrue(listed.out.contains("device_control"), listed.out)
        XCTAssertTrue(listed.out.contains("setRate, enableOutput, identify, reregister, uploadTimeRange"), listed.out)
    }
}
