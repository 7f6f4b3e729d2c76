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
    return AgentConfig(
        server: NodeEndpoint(apiRoot: node.apiRoot), identity: identity,
        options: OutputOptions(uid: identity.uid), stateDirectory: stateDirectory)
}

/// A self-signed certificate for 127.0.0.1 and its key, made by openssl in `dir` (created here):
/// their PEM texts and the certificate's path.
func selfSignedCertificate(in dir: String, subject: String) throws -> (cert: String, key: String, certPath: String) {
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    p.arguments = [
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", dir + "/key.pem", "-out", dir + "/cert.pem",
        "-days", "2", "-subj", subject, "-addext", "subjectAltName=IP:127.0.0.1",
    ]
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    try p.run()
    p.waitUntilExit()
    let cert = try String(contentsOfFile: dir + "/cert.pem", encoding: .utf8)
    let key = try String(contentsOfFile: dir + "/key.pem", encoding: .utf8)
    return (cert, key, dir + "/cert.pem")
}
