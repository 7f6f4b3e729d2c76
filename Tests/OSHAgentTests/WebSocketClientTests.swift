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
        http = try HTTPClient(loop: loop, server: HTTPServer(apiRoot: node.apiRoot))
        let b = CSRequestBuilder()
        let sys = try call(b.createSystem(body: SystemBody.bytes(SystemDescription(uid: "urn:osh:rpi:ws", label: "WS", serial: "ws",
                                                                                   validFrom: 1.7e9, components: []))))
        let sysID = try XCTUnwrap(sys.location?.split(separator: "/").last.map(String.init))
        let cs = try call(b.createControlStream(systemID: sysID, body: DeviceControl.body(systemLabel: "WS", outputNames: [])))
        csID = try XCTUnwrap(cs.location?.split(separator: "/").last.map(String.init))
    }

    override func tearDown() {
        http = nil
        node?.stop()
    }

    @discardableResult
    private func run(timeout: Double = 5, until condition: () -> Bool) throws -> Bool {
        let end = EventLoop.deadline(after: timeout)
        while !condition() {
            if Clock.monotonicNanoseconds() > end { return false }
            try loop.runOnce(timeoutMs: 10)
        }
        return true
    }

    private func call(_ r: CSRequest) throws -> HTTPResult {
        var got: HTTPResult?
        http.send(r) { got = $0 }
        try run(timeout: 10) { got != nil }
        return try XCTUnwrap(got)
    }

    private func client(ping: Double = 0) throws -> WebSocketClient {
        try WebSocketClient(loop: loop, server: http.server, request: CSRequestBuilder().commandChannel(controlStreamID: csID),
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
        let c = try WebSocketClient(loop: loop, server: http.server, request: CSRequestBuilder().commandChannel(controlStreamID: csID),
                                    options: WebSocketClient.Options(backoff: Backoff(initial: 0.05, maximum: 0.1), pingInterval: 0))
        c.start()
        XCTAssertTrue(try run { c.failures >= 3 })
        guard case .connect? = c.lastError else { return XCTFail("\(String(describing: c.lastError))") }
        try node.start()
        XCTAssertTrue(try run { c.state == .open })
        XCTAssertEqual(c.failures, 0)
        c.stop()
    }

    func testUpgradeFailureDescriptionsSayWhatToDo() {
        XCTAssertTrue(WebSocketClientError.notFound("x").description.contains("register again"))
        XCTAssertTrue(WebSocketClientError.unauthorized(401).description.contains("user name and password"))
    }
}
