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
