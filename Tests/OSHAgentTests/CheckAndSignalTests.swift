import Foundation
import OSHAgent
import OSHCore
import OSHDevNode
import OSHPlatform
import XCTest

final class CheckAndSignalTests: XCTestCase {
    private let identity = SystemIdentity(uid: "urn:osh:rpi:10000000c0ffee00", label: "Check Pi", serial: "10000000c0ffee00")

    func testCheckSaysWhatIsWrongInPlainWords() throws {
        Log.muted = true
        let node = DevNode(config: DevNodeConfig(users: [("sensor", "pwd")]))
        _ = try node.start()
        defer { node.stop() }
        let outputs = [OutputCatalogue.barometer(OutputOptions(uid: identity.uid))]
        let noCreds = try Check.run(server: HTTPServer(apiRoot: node.apiRoot), identity: identity, outputs: outputs)
        XCTAssertEqual(noCreds.map(\.ok), [false])
        XCTAssertTrue(noCreds[0].text.contains("wants credentials"), noCreds[0].text)
        let wrong = try Check.run(server: HTTPServer(apiRoot: node.apiRoot, credentials: .basic(username: "sensor", password: "x")),
                                  identity: identity, outputs: outputs)
        XCTAssertTrue(wrong[0].text.contains("refused the credentials"), wrong[0].text)
        let good = HTTPServer(apiRoot: node.apiRoot, credentials: .basic(username: "sensor", password: "pwd"))
        let before = try Check.run(server: good, identity: identity, outputs: outputs)
        XCTAssertEqual(before.map(\.ok), [true, false])
        XCTAssertTrue(before[1].text.contains("not registered"))
        // Register, then check again.
        let loop = try EventLoop()
        var c = AgentConfig(server: good, identity: identity, options: OutputOptions(uid: identity.uid),
                            stateDirectory: NSTemporaryDirectory() + "osh-check-\(UUID().uuidString)")
        c.outputs = ["barometer"]
        c.trustHostClock = true
        let a = try AgentRuntime(config: c, loop: loop)
        try a.start()
        let end = EventLoop.deadline(after: 10)
        while !a.registered, Clock.monotonicNanoseconds() < end { try loop.runOnce(timeoutMs: 20) }
        try a.stop(flushUntil: EventLoop.deadline(after: 1))
        let after = try Check.run(server: good, identity: identity, outputs: outputs)
        XCTAssertEqual(after.map(\.ok), [true, true, true], after.map(\.text).joined(separator: "\n"))
        let closed = try Check.run(server: HTTPServer(apiRoot: "http://127.0.0.1:1/sensorhub/api"), identity: identity, outputs: outputs)
        XCTAssertTrue(closed[0].text.contains("nothing accepts connections"), closed[0].text)
    }

    /// SIGTERM while the node is unreachable: the agent exits within a bounded time and its
    /// state file is intact.
    func testSIGTERMDuringAnOutageExitsPromptlyWithStateIntact() throws {
        let node = DevNode(config: DevNodeConfig())
        _ = try node.start()
        defer { node.stop() }
        let state = NSTemporaryDirectory() + "osh-sigterm-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: state) }
        let exe = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("osh-edge")
        let p = Process()
        p.executableURL = exe
        p.arguments = ["demo", "--node", node.apiRoot, "--state-dir", state, "--uid", identity.uid]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        // Wait for registration (the id cache appears), then take the node away.
        let until = Date().addingTimeInterval(10)
        func cacheFile() -> String? {
            (try? FileManager.default.contentsOfDirectory(atPath: state))?.first { $0.hasPrefix("ids-") }.map { state + "/" + $0 }
        }
        while cacheFile() == nil, Date() < until { usleep(50_000) }
        let path = try XCTUnwrap(cacheFile(), "the agent registered and saved its ids")
        node.mode = .refuseConnections
        usleep(1_500_000)
        let t0 = Date()
        p.terminate() // SIGTERM
        p.waitUntilExit()
        let took = Date().timeIntervalSince(t0)
        XCTAssertLessThan(took, 5, "exits within the flush deadline")
        XCTAssertEqual(p.terminationReason, .exit)
        let bytes = try XCTUnwrap(FileManager.default.contents(atPath: path))
        XCTAssertNotNil(RegistrationState.decode(Array(bytes)), "the id cache is intact")
    }
}
