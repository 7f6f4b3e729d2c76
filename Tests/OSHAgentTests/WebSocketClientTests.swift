import Foundation
import OSHAgent
import OSHCore
import OSHDevNode
import OSHPlatform
import XCTest

/// WebSocketClient against the development node's command channel (frames on a real socket).
final class WebSocketClientTests: XCTestCase {
    private var node: DevNode!
    private var loop: EventLoop!
    private var http: HTTPClient!
    private var csID = ""

    override func setUpWithError() throws {
        Log.muted = true
        node = DevNode(config: DevNodeConfig())
        try node.start()
        loop = try EventLoop()
        http = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: node.apiRoot))
        let b = CSRequestBuilder()
        let sys = try call(
            b.createSystem(
                body: SystemBody.bytes(
                    SystemDescription(
                        uid: "urn:osh:rpi:ws", label: "WS", serial: "ws",
                        validFrom: 1.7e9, components: []))))
        let sysID = try XCTUnwrap(CSResponse.resourceID(fromLocation: sys.location))
        let cs = try call(b.createControlStream(systemID: sysID, body: DeviceControl.body(systemLabel: "WS", outputNames: [])))
        csID = try XCTUnwrap(CSResponse.resourceID(fromLocation: cs.location))
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

    private func client(ping: Double = 0) throws -> WebSocketClient {
        try WebSocketClient(
            loop: loop, server: http.server, request: CSRequestBuilder().commandChannel(controlStreamID: csID),
            options: WebSocketClient.Options(backoff: Backoff(initial: 5, maximum: 5), pingInterval: ping))
    }

    func testTextFromTheReceiverIsRefusedWith1007LikeOSH() throws {
        let c = try client()
        c.start()
        XCTAssertTrue(try run { c.state == .open })
        XCTAssertTrue(c.sendText(Array("hello".utf8)))
        XCTAssertTrue(try run { c.state == .waitingToReconnect })
        XCTAssertEqual(c.lastError, .closedByServer(code: 1007, reason: "Incoming data is not supported"))
        c.stop()
        XCTAssertEqual(c.state, .stopped)
    }

    func testPingsAreAnsweredSoTheChannelStaysUp() throws {
        let c = try client(ping: 0.05)
        c.start()
        XCTAssertTrue(try run { c.state == .open })
        try run(timeout: 0.5) { false }
        XCTAssertEqual(c.state, .open)
        XCTAssertNil(c.lastError)
        c.stop()
        XCTAssertTrue(try run { !node.hasCommandReceiver(controlStreamID: csID) })
    }

    func testRefusedConnectionIsRetriedWithBackoff() throws {
        node.stop()
        let c = try WebSocketClient(
            loop: loop, server: http.server, request: CSRequestBuilder().commandChannel(controlStreamID: csID),
            options: WebSocketClient.Options(
                backoff: Backoff(initial: 0.05, maximum: 0.1), pingInterval: 0,
                stableAfter: 0.2))
        c.start()
        XCTAssertTrue(try run { c.failures >= 3 })
        guard case .connect? = c.lastError else { return XCTFail("\(String(describing: c.lastError))") }
        try node.start()
        XCTAssertTrue(try run { c.state == .open })
        // The backoff starts again only once the channel has proved itself.
        XCTAssertGreaterThanOrEqual(c.failures, 3)
        XCTAssertTrue(try run { c.failures == 0 })
        XCTAssertEqual(c.state, .open)
        c.stop()
    }

    /// osh-core with security on accepts the upgrade and closes the channel at once with 1011
    /// ("Permission denied: … No user specified"). That is a failure like a refused connect: the
    /// waits grow to the backoff's maximum instead of a reconnect every step, and the error quotes
    /// the close code and reason and says what it means.
    func testAChannelClosedRightAfterTheUpgradeBacksOff() throws {
        node.stop()
        var cfg = DevNodeConfig()
        cfg.refuseReceivers = DevNodeConfig.oshSecuredReceiverRefusal
        let secured = DevNode(config: cfg)
        try secured.start()
        defer { secured.stop() }
        let b = CSRequestBuilder()
        let h = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: secured.apiRoot))
        let sys = try h.sendWaiting(
            b.createSystem(
                body: SystemBody.bytes(
                    SystemDescription(
                        uid: "urn:osh:rpi:ws2", label: "WS", serial: "ws2",
                        validFrom: 1.7e9, components: []))), on: loop)
        let cs = try h.sendWaiting(
            b.createControlStream(
                systemID: try XCTUnwrap(CSResponse.resourceID(fromLocation: sys.location)),
                body: DeviceControl.body(systemLabel: "WS", outputNames: [])), on: loop)
        let c = try WebSocketClient(
            loop: loop, server: h.server,
            request: b.commandChannel(controlStreamID: try XCTUnwrap(CSResponse.resourceID(fromLocation: cs.location))),
            options: WebSocketClient.Options(backoff: Backoff(initial: 0.05, maximum: 0.4), pingInterval: 0))
        var steps: [Double] = []
        c.onDown = { _, retry in if let retry { steps.append(retry) } }
        c.start()
        XCTAssertTrue(try run(timeout: 10) { steps.count >= 5 })
        c.stop()
        XCTAssertEqual(Array(steps.prefix(5)), [0.05, 0.1, 0.2, 0.4, 0.4])
        XCTAssertEqual(c.lastError, .closedRightAfterOpening(code: 1011, reason: DevNodeConfig.oshSecuredReceiverRefusal))
        let text = c.lastError?.description ?? ""
        XCTAssertTrue(text.contains("close code 1011: Permission denied"), text)
        XCTAssertTrue(text.contains("Commands will not reach this board"), text)
        XCTAssertTrue(text.contains("observations still flow"), text)
        XCTAssertGreaterThanOrEqual(c.opens, 5)  // each upgrade succeeded: the node closed what it had opened
    }

    /// The client logs nothing (its owner knows which channel it is: AgentRuntime logs once per
    /// outage), and the retries of one failure share a repeat key although libcurl's text
    /// carries the elapsed time.
    func testRetriesOfOneFailureShareARepeatKeyAndTheClientLogsNothing() throws {
        node.stop()
        let c = try WebSocketClient(
            loop: loop, server: http.server, request: CSRequestBuilder().commandChannel(controlStreamID: csID),
            options: WebSocketClient.Options(backoff: Backoff(initial: 0.05, maximum: 0.1), pingInterval: 0))
        var errors: [WebSocketClientError] = []
        c.onDown = { e, _ in if let e { errors.append(e) } }
        let capture = LogCapture()
        c.start()
        XCTAssertTrue(try run { c.failures >= 3 })
        c.stop()
        capture.stop()
        XCTAssertEqual(capture.lines, [])
        XCTAssertGreaterThanOrEqual(errors.count, 3)
        XCTAssertEqual(Set(errors.map(\.repeatKey)).count, 1, "\(errors)")

        let a = WebSocketClientError.connect("Failed to connect to 127.0.0.1 port 8181 after 9 ms: Could not connect to server")
        let b = WebSocketClientError.connect("Failed to connect to 127.0.0.1 port 8181 after 1012 ms: Could not connect to server")
        XCTAssertEqual(a.repeatKey, b.repeatKey)
        XCTAssertEqual(
            a.repeatKey,
            "cannot connect to the node for the command channel: Failed to connect to 127.0.0.1 port 8181: Could not connect to server")
        XCTAssertEqual(
            WebSocketClientError.connect("Connection timed out after 5001 milliseconds").repeatKey,
            "cannot connect to the node for the command channel: Connection timed out")
        XCTAssertNotEqual(a.repeatKey, WebSocketClientError.connect("Could not resolve host: node").repeatKey)
        XCTAssertEqual(
            WebSocketClientError.connect("after 3 s, after ms").repeatKey,
            "cannot connect to the node for the command channel: after 3 s, after ms")
    }

    func testUpgradeFailureDescriptionsSayWhatToDo() {
        XCTAssertTrue(WebSocketClientError.notFound("x").description.contains("register again"))
        XCTAssertTrue(WebSocketClientError.unauthorized(401).description.contains("user name and password"))
    }
}

/// The command channel over HTTPS: TLS comes from libcurl (CONNECT_ONLY), frames from us.
final class WebSocketTLSTests: XCTestCase {
    func testCommandRoundTripOverTLSWithATrustedSelfSignedCertificate() throws {
        Log.muted = true
        guard DevNode.tlsSupported else { throw XCTSkip("libmicrohttpd built without TLS") }
        let dir = scratchPath("osh-ws-tls")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (cert, key, _) = try selfSignedCertificate(in: dir, subject: "/CN=osh-edge ws test")
        var c = DevNodeConfig(users: [("pi", "pw")], tls: (cert, key))
        c.noReceiverWaitSeconds = 0.5
        c.commandAckSeconds = 0.2
        let node = DevNode(config: c)
        try node.start()
        defer { node.stop() }
        let loop = try EventLoop()
        let builder = CSRequestBuilder(credentials: .basic(username: "pi", password: "pw"))
        let http = try HTTPClient(
            loop: loop,
            server: NodeEndpoint(
                apiRoot: node.apiRoot, credentials: builder.credentials,
                tls: .trustCertificate(pemPath: dir + "/cert.pem")))
        func run(_ timeout: Double = 10, until done: () -> Bool) throws -> Bool {
            try loop.run(for: timeout, until: done)
        }
        var sys: HTTPResult?
        http.send(
            builder.createSystem(
                body: SystemBody.bytes(
                    SystemDescription(
                        uid: "urn:osh:rpi:wstls", label: "TLS", serial: "t",
                        validFrom: 1.7e9, components: [])))
        ) { sys = $0 }
        XCTAssertTrue(try run { sys != nil })
        let sysID = try XCTUnwrap(CSResponse.resourceID(fromLocation: sys?.location))
        var cs: Result<String, CommandChannelSetupError>?
        CommandReceiver.registerControlStream(
            http: http, builder: builder, systemID: sysID,
            body: DeviceControl.body(systemLabel: "TLS", outputNames: ["gps_data"])
        ) { cs = $0 }
        XCTAssertTrue(try run { cs != nil })
        let csID = try XCTUnwrap(cs).get()
        var seen: [DeviceControlCommand] = []
        let r = try CommandReceiver.deviceControl(
            loop: loop, http: http, builder: builder, controlStreamID: csID, outputNames: ["gps_data"],
            options: CommandReceiver.Options(
                ackWindow: 0.2, repostMargin: 0.1,
                websocket: WebSocketClient.Options(backoff: Backoff(initial: 0.1, maximum: 0.2), pingInterval: 0))
        ) { cmd, _ in
            seen.append(cmd)
            return .completed()
        }
        r.start()
        XCTAssertTrue(try run { r.channel.state == .open }, "\(String(describing: r.channel.lastError))")
        var posted: HTTPResult?
        http.send(
            builder.request(
                .post, "/controlstreams/" + csID + "/commands", contentType: MediaType.json,
                body: Array(("{\"parameters\":" + DeviceControl.parametersJSON(.identify(seconds: 2)) + "}").utf8))
        ) { posted = $0 }
        XCTAssertTrue(try run { posted != nil && (node.commands(controlStreamID: csID).first?.reports.count ?? 0) >= 3 })
        XCTAssertEqual(seen, [.identify(seconds: 2)])
        XCTAssertEqual(node.commands(controlStreamID: csID).first?.currentStatus, "COMPLETED")
        r.stop()
    }
}
