import OSHCore
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
