import Foundation
import OSHAgent
import OSHCore
import OSHDevNode
import OSHPlatform
import XCTest

extension HTTPClient {
    /// Sends `request` and turns `loop` until its answer arrives (tests that set up the node by hand).
    func sendWaiting(_ request: CSRequest, on loop: EventLoop, timeout: Double = 10) throws -> HTTPResult {
        var got: HTTPResult?
        send(request) { got = $0 }
        try loop.run(for: timeout) { got != nil }
        return try XCTUnwrap(got, "no answer to \(request.method) \(request.path) within \(timeout) s")
    }
}

/// What the agent logs, captured through `Log.sink` instead of stderr until `stop()`.
final class LogCapture {
    private(set) var lines: [String] = []
    init() { Log.sink = { [unowned self] _, m in self.lines.append(m) } }
    deinit { stop() }
    func stop() { Log.sink = nil }
    func count(_ needle: String) -> Int { lines.filter { $0.contains(needle) }.count }
}

/// A development node on loopback, started; the test stops it.
func startedNode(_ config: DevNodeConfig = DevNodeConfig()) throws -> DevNode {
    let node = DevNode(config: config)
    _ = try node.start()
    return node
}

/// A path under the temporary directory no other run uses; the test removes what it makes there.
func scratchPath(_ prefix: String) -> String { NSTemporaryDirectory() + prefix + "-\(UUID().uuidString)" }

/// An agent's configuration for a test Pi (`serial`, `label`) publishing to `node`.
func agentConfig(_ node: DevNode, serial: String, label: String, stateDirectory: String) -> AgentConfig {
    let identity = SystemIdentity(uid: "urn:osh:rpi:" + serial, label: label, serial: serial)
    return AgentConfig(server: HTTPServer(apiRoot: node.apiRoot), identity: identity,
                       options: OutputOptions(uid: identity.uid), stateDirectory: stateDirectory)
}
