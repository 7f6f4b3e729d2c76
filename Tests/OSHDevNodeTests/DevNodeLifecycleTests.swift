import Foundation
import XCTest
@testable import OSHDevNode

/// What libmicrohttpd points into while a daemon runs — the node (its callbacks' context) and the
/// TLS key and certificate — lives until the daemon has stopped, and not after.
final class DevNodeLifecycleTests: XCTestCase {
    private let api = "/sensorhub/api"

    func testManyNodesStartServeStopAndAreFreed() throws {
        for round in 0..<30 {
            weak var gone: DevNode?
            try {
                let node = DevNode(config: DevNodeConfig())
                gone = node
                let port = try node.start()
                XCTAssertEqual(try TestHTTP.request(port: port, "GET", api + "/conformance").status, 200, "round \(round)")
                node.pause()
                try node.resume()
                XCTAssertEqual(try TestHTTP.request(port: port, "GET", api).status, 200, "round \(round)")
                node.stop()
            }()
            XCTAssertNil(gone, "round \(round): a stopped node is freed (the daemon's reference is released)")
        }
    }

    /// The caller lets go of a running node while one of its requests is being answered: the daemon
    /// keeps the node alive (it used to be freed on that connection's thread, which then stopped
    /// the daemon from inside it), and `stop()` lets it go.
    func testARunningDaemonOwnsItsNodeUntilStopped() throws {
        weak var kept: DevNode?
        let answered = DispatchSemaphore(value: 0)
        let status = Counter()
        try {
            let node = DevNode(config: DevNodeConfig())
            kept = node
            let port = try node.start()
            node.mode = .delay(0.3)
            Thread.detachNewThread {
                if (try? TestHTTP.request(port: port, "GET", "/sensorhub/api"))?.status == 200 { status.increment() }
                answered.signal()
            }
            usleep(100_000)  // the request is in the node's handler
        }()
        XCTAssertEqual(answered.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(status.value, 1)
        try {
            let node = try XCTUnwrap(kept, "the running daemon keeps its node")
            node.mode = .normal
            XCTAssertEqual(try TestHTTP.request(port: node.port, "GET", api).status, 200)
            node.stop()
        }()
        XCTAssertNil(kept, "stopped, the node is freed")
    }

    /// The PEM text comes from a buffer that is overwritten and freed before the node is started;
    /// every start (and restart) serves HTTPS from the node's own copy.
    func testTLSNodeServesFromItsOwnCopyOfThePEM() throws {
        guard toolAvailable("openssl"), toolAvailable("curl") else { throw XCTSkip("openssl or curl missing") }
        guard DevNode.tlsSupported else { throw XCTSkip("libmicrohttpd without TLS") }
        let made = try makeSelfSignedCertificate()
        func shortLived(_ pem: String) -> String {
            var buffer = Array(pem.utf8)
            let copy = String(decoding: buffer, as: UTF8.self)
            for k in buffer.indices { buffer[k] = 0x2D }
            return copy
        }
        let node = DevNode(config: DevNodeConfig(tls: (certPEM: shortLived(made.certPEM), keyPEM: shortLived(made.keyPEM))))
        defer { node.stop() }
        try node.start()
        for round in 0..<3 {
            let r = try runTool("curl", ["-sS", "--cacert", made.certPath, "-o", "/dev/null", "-w", "%{http_code}", node.apiRoot])
            XCTAssertEqual(r.output, "200", "round \(round): \(r.output)")
            node.pause()
            try node.resume()
        }
    }
}
