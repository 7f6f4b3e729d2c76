// Size (~850 lines): one test per libcurl path (status, redirects, TLS policy, timeouts, cancel,
// prepared requests), each short.
import CShim
import Foundation
import Glibc
import OSHCore
import OSHPlatform
import XCTest

/// HTTPClient against a throwaway loopback server (Python's http.server, written out at run time),
/// driven by the real EventLoop.
final class HTTPClientTests: XCTestCase {
    private var dir: URL!
    private var servers: [TestServer] = []

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("osh-http-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try TestServer.script.write(to: dir.appendingPathComponent("server.py"), atomically: true, encoding: .utf8)
    }

    override func tearDownWithError() throws {
        for s in servers { s.stop() }
        servers.removeAll()
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    // MARK: Helpers

    private func startServer(tls: Bool = false) throws -> TestServer {
        var args = [dir.appendingPathComponent("server.py").path]
        if tls {
            try makeCertificate()
            args += ["--tls", certPath, keyPath]
        }
        let s = try TestServer(arguments: args)
        servers.append(s)
        return s
    }

    private var certPath: String { dir.appendingPathComponent("cert.pem").path }
    private var keyPath: String { dir.appendingPathComponent("key.pem").path }

    /// Self-signed, subjectAltName IP:127.0.0.1 only (CN is not a host name): valid for
    /// https://127.0.0.1, not for https://localhost, although both reach the same server.
    private func makeCertificate() throws {
        guard !FileManager.default.fileExists(atPath: certPath) else { return }
        _ = try shell(
            "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 "
                + "-subj /CN=osh-edge-test-node -addext subjectAltName=IP:127.0.0.1 "
                + "-keyout '\(keyPath)' -out '\(certPath)' 2>/dev/null")
    }

    /// base64 SHA-256 of the certificate's SubjectPublicKeyInfo, as `.pinnedKey` takes it.
    private func spkiHash() throws -> String {
        try shell(
            "openssl x509 -in '\(certPath)' -pubkey -noout | openssl pkey -pubin -outform der "
                + "| openssl dgst -sha256 -binary | base64"
        ).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func shell(_ command: String) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", command]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw NSError(
                domain: "shell", code: Int(p.terminationStatus),
                userInfo: [NSLocalizedDescriptionKey: "failed: \(command)"])
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Runs the loop until `count` completions arrived (or `seconds` passed).
    private func run(_ loop: EventLoop, until done: () -> Bool, seconds: Double = 10) throws {
        let deadline = EventLoop.deadline(after: seconds)
        while !done(), osh_monotonic_ns() < deadline {
            try loop.runOnce(timeoutMs: 50)
        }
    }

    /// Sends one request and waits for its result.
    private func roundTrip(
        _ client: HTTPClient, _ loop: EventLoop, _ request: CSRequest,
        body: UnsafeRawBufferPointer? = nil, seconds: Double = 10
    ) throws -> HTTPResult {
        var result: HTTPResult?
        client.send(request, body: body) { result = $0 }
        try run(loop, until: { result != nil }, seconds: seconds)
        return try XCTUnwrap(result, "no completion within \(seconds) s")
    }

    /// Sends `prepared` with `text` as its body and waits for the result.
    private func roundTrip(
        _ client: HTTPClient, _ loop: EventLoop, _ prepared: PreparedRequest,
        _ text: String
    ) throws -> HTTPResult {
        let bytes = Array(text.utf8)
        return try bytes.withUnsafeBytes { body in
            var result: HTTPResult?
            client.send(prepared, body: body) { result = $0 }
            try run(loop, until: { result != nil })
            return try XCTUnwrap(result, "no completion within 10 s")
        }
    }

    private func echo(_ r: HTTPResult) throws -> Echo {
        try JSONDecoder().decode(Echo.self, from: Data(r.body))
    }

    private struct Echo: Decodable {
        var method: String
        var path: String
        var headers: [[String]]
        var body_hex: String
        var conn: Int
        var accepts: Int

        func header(_ name: String) -> String? {
            headers.first { $0[0].lowercased() == name.lowercased() }?[1]
        }
        func has(_ name: String) -> Bool { header(name) != nil }
        var names: [String] { headers.map { $0[0].lowercased() } }
        var body: [UInt8] {
            var out: [UInt8] = []
            var it = body_hex.utf8.makeIterator()
            while let a = it.next(), let b = it.next() {
                out.append(UInt8(String(decoding: [a, b], as: UTF8.self), radix: 16) ?? 0)
            }
            return out
        }
    }

    private let builder = CSRequestBuilder(credentials: .none)

    // MARK: Methods, bodies, headers

    func testGetPostPutDeleteThroughTheLoop() throws {
        let srv = try startServer()
        let loop = try EventLoop()
        let client = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: srv.root))

        let get = try roundTrip(client, loop, builder.request(.get, "/echo", query: [("f", "application/om+json")]))
        XCTAssertNil(get.error)
        XCTAssertEqual(get.status, 200)
        XCTAssertEqual(get.contentType, "application/json")
        let g = try echo(get)
        XCTAssertEqual(g.method, "GET")
        XCTAssertEqual(g.path, "/sensorhub/api/echo?f=application%2Fom%2Bjson")
        XCTAssertFalse(g.has("Content-Type"))
        XCTAssertFalse(g.has("Content-Length"))
        XCTAssertEqual(g.header("Accept"), "application/json")

        let payload = Array("{\"a\":1,\"b\":[true,null]}".utf8)
        let post = try roundTrip(client, loop, builder.request(.post, "/echo", contentType: "application/om+json", body: payload))
        let p = try echo(post)
        XCTAssertEqual(p.method, "POST")
        XCTAssertEqual(p.body, payload)
        XCTAssertEqual(p.header("Content-Type"), "application/om+json")
        XCTAssertEqual(p.header("Content-Length"), String(payload.count))

        let put = try roundTrip(client, loop, builder.request(.put, "/echo", contentType: "application/sml+json", body: payload))
        let u = try echo(put)
        XCTAssertEqual(u.method, "PUT")
        XCTAssertEqual(u.body, payload)

        let del = try roundTrip(client, loop, builder.request(.delete, "/echo"))
        let d = try echo(del)
        XCTAssertEqual(d.method, "DELETE")
        XCTAssertTrue(d.body.isEmpty)
        XCTAssertFalse(d.has("Content-Type"))

        let noContent = try roundTrip(
            client, loop,
            builder.request(
                .put, "/echo", query: [("status", "204")],
                contentType: "application/json", body: payload))
        XCTAssertEqual(noContent.status, 204)
        XCTAssertTrue(noContent.body.isEmpty)
        XCTAssertEqual(client.inFlight, 0)
    }

    func testCallerBufferIsSentAsIsAndHeadersKeepTheirOrder() throws {
        let srv = try startServer()
        let loop = try EventLoop()
        let client = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: srv.root + "/"))
        // 3 MB of every byte value: above libcurl's 1 MiB Expect threshold, and binary.
        let big = ByteBuffer(capacity: 3 << 20)
        for i in 0..<(3 << 20) { big.append(UInt8(truncatingIfNeeded: i &* 7 &+ i >> 9)) }
        var request = builder.request(.post, "datastreams/x/observations", contentType: "application/swe+binary")
        request.headers.append(HTTPHeader("X-First", "1"))
        request.headers.append(HTTPHeader("X-Empty", ""))
        request.headers.append(HTTPHeader("X-Last", "2"))
        let r = try roundTrip(client, loop, request, body: UnsafeRawBufferPointer(start: big.base, count: big.count))
        XCTAssertNil(r.error)
        XCTAssertEqual(r.status, 200)
        let e = try echo(r)
        XCTAssertEqual(e.path, "/sensorhub/api/datastreams/x/observations")
        XCTAssertEqual(e.header("Content-Length"), String(3 << 20))
        XCTAssertFalse(e.has("Expect"), "no Expect: 100-continue")
        XCTAssertEqual(e.header("Content-Type"), "application/swe+binary")
        XCTAssertEqual(e.header("X-Empty"), "")
        // Our headers in our order (libcurl's own Host/User-Agent/Content-Length come first).
        let ours = e.names.filter { ["accept", "content-type", "x-first", "x-empty", "x-last"].contains($0) }
        XCTAssertEqual(ours, ["accept", "content-type", "x-first", "x-empty", "x-last"])
        XCTAssertEqual(e.body.count, 0, "large bodies are digested, not echoed")
        let digest = try XCTUnwrap(r.location, "the server puts the body's SHA-256 in Location for large bodies")
        let expected = try sha256Hex(UnsafeRawBufferPointer(start: big.base, count: big.count))
        XCTAssertEqual(digest, "/digest/" + expected)
    }

    func testBodyWithoutContentTypeGetsNoFormContentTypeAndNoAcceptDefault() throws {
        let srv = try startServer()
        let loop = try EventLoop()
        let client = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: srv.root))
        let r = try roundTrip(client, loop, CSRequest(method: .post, path: "/echo", headers: [], body: [1, 2, 3]))
        let e = try echo(r)
        XCTAssertFalse(e.has("Content-Type"), "no application/x-www-form-urlencoded")
        XCTAssertFalse(e.has("Accept"), "no Accept: */* (it turns node errors into HTML)")
        XCTAssertFalse(e.has("Expect"))
        XCTAssertEqual(e.body, [1, 2, 3])

        let empty = try roundTrip(client, loop, CSRequest(method: .post, path: "/echo", headers: []))
        let e2 = try echo(empty)
        XCTAssertEqual(e2.header("Content-Length"), "0")
        XCTAssertTrue(e2.body.isEmpty)
    }

    func testLocationStatusAndNodeErrorBody() throws {
        let srv = try startServer()
        let loop = try EventLoop()
        let client = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: srv.root))
        let created = try roundTrip(
            client, loop,
            builder.request(
                .post, "/echo", query: [("status", "201"), ("location", "/systems/0e2b7shpqb3g")],
                contentType: "application/sml+json", body: Array("{}".utf8)))
        XCTAssertEqual(created.status, 201)
        XCTAssertEqual(created.location, "/systems/0e2b7shpqb3g")
        XCTAssertEqual(CSResponse.resourceID(fromLocation: created.location), "0e2b7shpqb3g")

        let bad = try roundTrip(
            client, loop,
            builder.request(
                .get, "/echo",
                query: [
                    ("status", "400"),
                    ("message", "Missing content type"),
                ]))
        XCTAssertEqual(bad.status, 400)
        XCTAssertNil(bad.error, "an HTTP error status is an answer, not a transport error")
        XCTAssertNil(bad.location)
        XCTAssertEqual(NodeError.parse(bad.body).message, "Missing content type")
    }

    func testLargeResponseIsCappedNotFailed() throws {
        let srv = try startServer()
        let loop = try EventLoop()
        let client = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: srv.root), maxResponseBody: 1000)
        let r = try roundTrip(client, loop, builder.request(.get, "/echo", query: [("size", "100000")]))
        XCTAssertNil(r.error)
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.body.count, 1000)
        XCTAssertTrue(r.bodyTruncated)
        XCTAssertEqual(r.body, [UInt8](repeating: UInt8(ascii: "x"), count: 1000))
        // The connection survives the drop: the next request reuses it.
        let next = try roundTrip(client, loop, builder.request(.get, "/echo"))
        XCTAssertEqual(next.newConnections, 0)
    }

    // MARK: Prepared requests

    func testPreparedRequestReusesItsHandleAndHonoursEachBodyLength() throws {
        let srv = try startServer()
        let loop = try EventLoop()
        let client = try HTTPClient(
            loop: loop,
            server: NodeEndpoint(
                apiRoot: srv.root, credentials: .basic(username: "admin", password: "admin")))
        let prepared = client.prepare(builder.postObservations(datastreamID: "ds1", format: .omJSON))
        let bodies = ["[1]", "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]", "", "[2]", String(repeating: "7", count: 5000)]
        var conns: [Int] = []
        for text in bodies {
            let r = try roundTrip(client, loop, prepared, text)
            XCTAssertNil(r.error)
            XCTAssertEqual(r.status, 200)
            let e = try echo(r)
            XCTAssertEqual(e.method, "POST")
            XCTAssertEqual(e.path, "/sensorhub/api/datastreams/ds1/observations")
            XCTAssertEqual(String(decoding: e.body, as: UTF8.self), text, "each request sends its own body, whole")
            XCTAssertEqual(e.header("Content-Length"), String(text.utf8.count))
            XCTAssertEqual(e.header("Content-Type"), "application/om+json")
            XCTAssertEqual(e.header("Accept"), "application/json")
            XCTAssertEqual(e.headers.filter { $0[0].lowercased() == "authorization" }.count, 1)
            XCTAssertFalse(e.has("Expect"))
            XCTAssertEqual(e.headers.filter { $0[0].lowercased() == "user-agent" }.map { $0[1] }, ["osh-edge"])
            conns.append(e.conn)
        }
        XCTAssertEqual(prepared.reuses, bodies.count - 1, "one handle configured once, then reused")
        XCTAssertEqual(Set(conns).count, 1, "one kept-alive connection: \(conns)")
        XCTAssertEqual(client.inFlight, 0)
    }

    func testPreparedRequestAnswersStatusesAndTransportErrorsAsAOneOffDoes() throws {
        let srv = try startServer()
        let loop = try EventLoop()
        let client = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: srv.root))
        let request = builder.request(.post, "/echo", contentType: "application/json")
        let prepared = client.prepare(request)
        let cases = ["{}", "!status=302", "!status=401", "!status=503", "!close", "!rst", "!status=302", "{\"n\":2}"]
        for text in cases {
            let reused = try roundTrip(client, loop, prepared, text)
            let oneOff = try Array(text.utf8).withUnsafeBytes { try roundTrip(client, loop, request, body: $0) }
            XCTAssertEqual(reused.status, oneOff.status, text)
            XCTAssertEqual(reused.location, oneOff.location, text)
            // An RST arrives as a reset or a receive error, whichever read sees it first.
            if text != "!rst" { XCTAssertEqual(reused.error?.kind, oneOff.error?.kind, text) }
            XCTAssertEqual(reused.error == nil, oneOff.error == nil, text)
            switch text {
            case "!status=302": XCTAssertEqual(reused.location, "/moved")
            case "!status=401", "!status=503": XCTAssertNil(reused.location, "nothing left over from the 302 before")
            case "!close": XCTAssertEqual(reused.error?.kind, .reset, "\(String(describing: reused.error))")
            case "!rst": XCTAssertTrue([.reset, .recv].contains(reused.error?.kind), "\(String(describing: reused.error))")
            default: XCTAssertEqual(try echo(reused).body, Array(text.utf8))
            }
        }
        XCTAssertEqual(prepared.reuses, cases.count - 1, "errors do not cost the handle its configuration")
    }

    func testPreparedRequestWhileBusyTakesAPooledHandleAndRefusesAnotherClient() throws {
        let srv = try startServer()
        let loop = try EventLoop()
        let client = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: srv.root))
        let prepared = client.prepare(builder.request(.post, "/echo", contentType: "application/json"))
        let first = Array("[1]".utf8), second = Array("[2,2]".utf8)
        var results: [Int: HTTPResult] = [:]
        try first.withUnsafeBytes { a in
            try second.withUnsafeBytes { b in
                client.send(prepared, body: a) { results[1] = $0 }
                client.send(prepared, body: b) { results[2] = $0 }
                try run(loop, until: { results.count == 2 })
            }
        }
        XCTAssertEqual(try echo(try XCTUnwrap(results[1])).body, first)
        XCTAssertEqual(try echo(try XCTUnwrap(results[2])).body, second)
        XCTAssertEqual(prepared.reuses, 0, "the second went through the pool")
        XCTAssertEqual(try roundTrip(client, loop, prepared, "[3]").status, 200)
        XCTAssertEqual(prepared.reuses, 1)

        let other = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: srv.root))
        let refused = try roundTrip(other, loop, prepared, "[4]")
        XCTAssertEqual(refused.error?.kind, .invalidRequest)
    }

    func testSteadyRequestsArmTheLoopTimerAtMostOncePerRequest() throws {
        let srv = try startServer()
        let loop = try EventLoop()
        let client = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: srv.root))
        let prepared = client.prepare(builder.postObservations(datastreamID: "ds1", format: .sweJSON))
        XCTAssertEqual(try roundTrip(client, loop, prepared, "{}").status, 200)
        let before = client.timerArms
        for i in 0..<20 { XCTAssertEqual(try roundTrip(client, loop, prepared, "{\"i\":\(i)}").status, 200) }
        // Per request libcurl asks for "now", then for 1 s (its low-speed check), then again for
        // 1 s a little later after each read; the loop timer used to be armed for each. "Now" is
        // served inside send and a slightly later deadline keeps the armed one: one arm per request.
        XCTAssertLessThanOrEqual(client.timerArms - before, 22, "arms for 20 requests")
        XCTAssertEqual(client.watchedSockets, 0)
    }

    // MARK: Credentials

    func testBasicCredentialsPresentWithUserAbsentWithout() throws {
        let srv = try startServer()
        let loop = try EventLoop()
        let plain = CSRequestBuilder(credentials: .none)

        let withUser = try HTTPClient(
            loop: loop,
            server: NodeEndpoint(
                apiRoot: srv.root, credentials: .basic(username: "admin", password: "admin")))
        let a = try echo(try roundTrip(withUser, loop, plain.request(.get, "/echo")))
        XCTAssertEqual(a.header("Authorization"), "Basic YWRtaW46YWRtaW4=")
        XCTAssertEqual(a.headers.filter { $0[0].lowercased() == "authorization" }.count, 1)

        // The request's own Authorization wins; it is not doubled.
        let signed = CSRequestBuilder(credentials: .basic(username: "sensor", password: "pwd"))
        let b = try echo(try roundTrip(withUser, loop, signed.request(.get, "/echo")))
        XCTAssertEqual(b.headers.filter { $0[0].lowercased() == "authorization" }.count, 1)
        XCTAssertEqual(b.header("Authorization"), "Basic c2Vuc29yOnB3ZA==")

        let noUser = try HTTPClient(
            loop: loop,
            server: NodeEndpoint(
                apiRoot: srv.root, credentials: .basic(username: "", password: "secret")))
        let c = try echo(try roundTrip(noUser, loop, plain.request(.get, "/echo")))
        XCTAssertFalse(c.has("Authorization"))

        let none = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: srv.root))
        XCTAssertFalse(try echo(try roundTrip(none, loop, plain.request(.get, "/echo"))).has("Authorization"))
    }

    // MARK: Failures

    func testConnectionRefusedFailsQuicklyAsConnect() throws {
        // A port nobody listens on: bind one, note it, close it.
        let port = try freePort()
        let loop = try EventLoop()
        let client = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: "http://127.0.0.1:\(port)/sensorhub/api"))
        let start = osh_monotonic_ns()
        let r = try roundTrip(client, loop, builder.request(.get, "/systems"))
        XCTAssertEqual(r.status, 0)
        XCTAssertEqual(r.error?.kind, .connect)
        XCTAssertEqual(r.error?.osErrno, ECONNREFUSED)
        XCTAssertLessThan(Double(osh_monotonic_ns() - start) / 1e9, 2)
        let text = try XCTUnwrap(r.error).description
        XCTAssertTrue(text.contains("127.0.0.1:\(port)"), text)
        XCTAssertEqual(client.watchedSockets, 0)
    }

    func testSlowServerTimesOut() throws {
        let srv = try startServer()
        let loop = try EventLoop()
        let client = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: srv.root, requestTimeout: 0.5))
        let start = osh_monotonic_ns()
        let r = try roundTrip(client, loop, builder.request(.get, "/echo", query: [("delay", "3")]))
        let elapsed = Double(osh_monotonic_ns() - start) / 1e9
        XCTAssertEqual(r.error?.kind, .timeout, "\(String(describing: r.error))")
        XCTAssertGreaterThanOrEqual(elapsed, 0.45)
        XCTAssertLessThan(elapsed, 2)
    }

    func testStalledBodyFailsOnTheLowSpeedLimit() throws {
        let srv = try startServer()
        let loop = try EventLoop()
        let client = try HTTPClient(
            loop: loop,
            server: NodeEndpoint(
                apiRoot: srv.root, requestTimeout: 30, lowSpeed: LowSpeedLimit(bytesPerSecond: 100, seconds: 1)))
        let start = osh_monotonic_ns()
        let r = try roundTrip(client, loop, builder.request(.get, "/echo", query: [("stall", "1")]))
        XCTAssertEqual(r.error?.kind, .timeout, "\(String(describing: r.error))")
        XCTAssertLessThan(Double(osh_monotonic_ns() - start) / 1e9, 5)
    }

    func testAbruptCloseIsATransportError() throws {
        let srv = try startServer()
        let loop = try EventLoop()
        let client = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: srv.root))
        let fin = try roundTrip(
            client, loop,
            builder.request(
                .post, "/echo", query: [("close", "1")],
                contentType: "application/json", body: [0x7B, 0x7D]))
        XCTAssertEqual(fin.status, 0)
        XCTAssertEqual(fin.error?.kind, .reset, "\(String(describing: fin.error))")
        let rst = try roundTrip(client, loop, builder.request(.get, "/echo", query: [("close", "rst")]))
        XCTAssertEqual(rst.status, 0)
        XCTAssertNotNil(rst.error)
        XCTAssertTrue([.reset, .recv].contains(rst.error?.kind), "\(String(describing: rst.error))")
        // The client is still usable afterwards.
        XCTAssertEqual(try roundTrip(client, loop, builder.request(.get, "/echo")).status, 200)
    }

    func testBadRequestsAreRefusedWithoutSendingAndCompleteFromTheLoop() throws {
        let srv = try startServer()
        let loop = try EventLoop()
        let client = try HTTPClient(
            loop: loop,
            server: NodeEndpoint(
                apiRoot: srv.root, credentials: .basic(username: "admin", password: "admin")))
        var results: [HTTPResult] = []
        client.send(CSRequest(method: .get, path: "/sys tems", headers: [])) { results.append($0) }
        client.send(CSRequest(method: .get, path: "/echo", headers: [HTTPHeader("X-Bad", "a\r\nInjected: 1")])) {
            results.append($0)
        }
        client.send(CSRequest(method: .get, path: "http://198.51.100.7/steal", headers: [])) { results.append($0) }
        XCTAssertTrue(results.isEmpty, "completions never run inside send")
        XCTAssertEqual(client.inFlight, 3)
        try run(loop, until: { results.count == 3 })
        XCTAssertEqual(results.map { $0.error?.kind }, [.invalidRequest, .invalidRequest, .invalidRequest])
        XCTAssertTrue(results[2].error?.message.contains("not on the configured node") ?? false)
        // An absolute URL on the same node is fine.
        let same = try roundTrip(client, loop, CSRequest(method: .get, path: srv.root + "/echo", headers: []))
        XCTAssertEqual(same.status, 200)
        XCTAssertEqual(try echo(same).accepts, 1, "only the valid request reached the server")
    }

    func testInvalidConfigurationIsRefusedWithAReason() throws {
        let loop = try EventLoop()
        XCTAssertThrowsError(try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: "ftp://node/api"))) {
            XCTAssertTrue("\($0)".contains("invalid API root"))
        }
        XCTAssertThrowsError(try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: "http://admin:pw@node/api")))
        XCTAssertThrowsError(
            try HTTPClient(
                loop: loop,
                server: NodeEndpoint(
                    apiRoot: "https://node/api", tls: .trustCertificate(pemPath: "/nonexistent/node.pem")))
        ) {
            XCTAssertTrue("\($0)".contains("/nonexistent/node.pem"))
        }
        XCTAssertThrowsError(
            try HTTPClient(
                loop: loop,
                server: NodeEndpoint(
                    apiRoot: "https://node/api", tls: .pinnedKey(sha256Base64: "not-a-hash"))))
        XCTAssertNoThrow(
            try HTTPClient(
                loop: loop,
                server: NodeEndpoint(
                    apiRoot: "https://node/api", tls: .pinnedKey(sha256Base64: "sha256//" + String(repeating: "A", count: 43) + "="))))
        XCTAssertEqual(loop.sourceCount, 0, "clients that were refused or released leave nothing on the loop")
    }

    // MARK: Connections

    func testSequentialRequestsReuseOneConnection() throws {
        let srv = try startServer()
        let loop = try EventLoop()
        let client = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: srv.root))
        var conns: [Int] = []
        var newConnections: [Int] = []
        for i in 0..<10 {
            let method: HTTPMethod = [.get, .post, .put, .delete][i % 4]
            let r = try roundTrip(
                client, loop,
                builder.request(
                    method, "/echo", contentType: "application/json",
                    body: method == .get ? nil : Array("[\(i)]".utf8)))
            XCTAssertEqual(r.status, 200)
            conns.append(try echo(r).conn)
            newConnections.append(r.newConnections)
        }
        XCTAssertEqual(Set(conns).count, 1, "one kept-alive connection: \(conns)")
        XCTAssertEqual(newConnections, [1] + Array(repeating: 0, count: 9))
    }

    func testFiftyConcurrentRequestsAllComplete() throws {
        let srv = try startServer()
        let loop = try EventLoop()
        let client = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: srv.root))
        // Bodies stay in our buffers until completion (no copy).
        let bodies = (0..<50).map { i -> ByteBuffer in
            let b = ByteBuffer(capacity: 64)
            b.appendUTF8("{\"n\":\(i)}")
            return b
        }
        var done: [Int: HTTPResult] = [:]
        for i in 0..<50 {
            let request = builder.postObservations(datastreamID: "ds\(i)", format: .omJSON)
            client.send(request, body: UnsafeRawBufferPointer(start: bodies[i].base, count: bodies[i].count)) {
                done[i] = $0
            }
        }
        XCTAssertEqual(client.inFlight, 50)
        try run(loop, until: { done.count == 50 }, seconds: 20)
        XCTAssertEqual(done.count, 50)
        var connections = 0
        for i in 0..<50 {
            let r = try XCTUnwrap(done[i])
            XCTAssertEqual(r.status, 200, "\(i): \(String(describing: r.error))")
            let e = try echo(r)
            XCTAssertEqual(e.path, "/sensorhub/api/datastreams/ds\(i)/observations")
            XCTAssertEqual(String(decoding: e.body, as: UTF8.self), "{\"n\":\(i)}")
            connections = max(connections, e.accepts)
        }
        XCTAssertEqual(client.inFlight, 0)
        XCTAssertGreaterThanOrEqual(connections, 1)
        XCTAssertLessThanOrEqual(connections, 2, "at most maxHostConnections connections")
    }

    func testCancelAllCompletesEverythingAndReleasesTheLoop() throws {
        let srv = try startServer()
        let loop = try EventLoop()
        var client: HTTPClient? = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: srv.root))
        var results: [HTTPResult] = []
        for _ in 0..<5 {
            client?.send(builder.request(.get, "/echo", query: [("delay", "5")])) { results.append($0) }
        }
        try loop.run(until: EventLoop.deadline(after: 0.3))
        XCTAssertTrue(results.isEmpty)
        XCTAssertEqual(client?.inFlight, 5)
        client?.cancelAll()
        XCTAssertEqual(results.count, 5)
        XCTAssertTrue(results.allSatisfy { $0.error?.kind == .cancelled })
        XCTAssertEqual(client?.inFlight, 0)
        // One in flight, then the client goes away: nothing left on the loop, nothing called.
        var late = false
        client?.send(builder.request(.get, "/echo", query: [("delay", "5")])) { _ in late = true }
        try loop.run(until: EventLoop.deadline(after: 0.2))
        client = nil
        XCTAssertEqual(loop.sourceCount, 0)
        try loop.run(until: EventLoop.deadline(after: 0.1))
        XCTAssertFalse(late)
    }

    func testRequestsBeyondTheConnectionLimitWaitInOrderAndCancelAlone() throws {
        let srv = try startServer()
        let loop = try EventLoop()
        let client = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: srv.root), maxHostConnections: 1)
        var order: [Int] = []
        var results: [Int: HTTPResult] = [:]
        var ids: [TransferID] = []
        for i in 0..<4 {
            ids.append(
                client.send(builder.request(.get, "/echo", query: [("delay", i == 0 ? "0.2" : "0")])) {
                    order.append(i)
                    results[i] = $0
                })
        }
        XCTAssertEqual(client.inFlight, 4)
        XCTAssertTrue(client.cancel(ids[2]), "a waiting request cancels without reaching libcurl")
        XCTAssertEqual(results[2]?.error?.kind, .cancelled)
        try run(loop, until: { results.count == 4 })
        XCTAssertEqual(order, [2, 0, 1, 3])
        for i in [0, 1, 3] { XCTAssertEqual(results[i]?.status, 200, "\(i)") }
        XCTAssertEqual(Set(try [0, 1, 3].map { try echo(try XCTUnwrap(results[$0])).conn }).count, 1, "one connection, in turn")
        XCTAssertEqual(client.inFlight, 0)
    }

    // MARK: TLS

    func testVerifyRefusesASelfSignedCertificate() throws {
        let srv = try startServer(tls: true)
        let loop = try EventLoop()
        let client = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: srv.root))
        let r = try roundTrip(client, loop, builder.request(.get, "/echo"))
        XCTAssertEqual(r.status, 0)
        let error = try XCTUnwrap(r.error)
        XCTAssertEqual(error.kind, .tls)
        XCTAssertTrue(
            error.message.lowercased().contains("self-signed") || error.message.lowercased().contains("self signed"),
            error.message)
        XCTAssertTrue(error.description.contains("trust that certificate or pin its public key"), error.description)
    }

    func testTrustedCertificateIsAcceptedForTheHostItNamesOnly() throws {
        let srv = try startServer(tls: true)
        let loop = try EventLoop()
        let trusted = try HTTPClient(
            loop: loop,
            server: NodeEndpoint(
                apiRoot: srv.root, tls: .trustCertificate(pemPath: certPath)))
        XCTAssertTrue(srv.root.hasPrefix("https://127.0.0.1:"))
        let ok = try roundTrip(trusted, loop, builder.request(.get, "/echo"))
        XCTAssertNil(ok.error)
        XCTAssertEqual(ok.status, 200)

        // Same server, same file, but reached as "localhost", which the certificate does not name.
        let byName = try HTTPClient(
            loop: loop,
            server: NodeEndpoint(
                apiRoot: "https://localhost:\(srv.port)/sensorhub/api", tls: .trustCertificate(pemPath: certPath)))
        let refused = try roundTrip(byName, loop, builder.request(.get, "/echo"))
        XCTAssertEqual(refused.error?.kind, .tls)
        XCTAssertTrue(refused.error?.message.contains("localhost") ?? false, "\(String(describing: refused.error))")

        // Trusting the file for this server does not make it trusted for others: .verify still refuses.
        let other = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: srv.root))
        XCTAssertEqual(try roundTrip(other, loop, builder.request(.get, "/echo")).error?.kind, .tls)
    }

    func testPinnedKeyAcceptsTheRightKeyAndRefusesAWrongOne() throws {
        let srv = try startServer(tls: true)
        let hash = try spkiHash()
        XCTAssertEqual(hash.count, 44)
        let loop = try EventLoop()
        // The key is the identity: even the host name the certificate does not carry is accepted.
        for host in ["127.0.0.1", "localhost"] {
            let pinned = try HTTPClient(
                loop: loop,
                server: NodeEndpoint(
                    apiRoot: "https://\(host):\(srv.port)/sensorhub/api", tls: .pinnedKey(sha256Base64: hash)))
            let ok = try roundTrip(pinned, loop, builder.request(.get, "/echo"))
            XCTAssertNil(ok.error, host)
            XCTAssertEqual(ok.status, 200, host)
        }
        let wrongHash = "sha256//" + String(hash.reversed().dropFirst()) + "="
        let wrong = try HTTPClient(
            loop: loop,
            server: NodeEndpoint(
                apiRoot: srv.root, tls: .pinnedKey(sha256Base64: wrongHash)))
        let refused = try roundTrip(wrong, loop, builder.request(.get, "/echo"))
        XCTAssertEqual(refused.status, 0)
        XCTAssertEqual(refused.error?.kind, .tls, "\(String(describing: refused.error))")
        XCTAssertEqual(refused.error?.peerPublicKey, "sha256//" + hash, "the error names the key the server has")
        XCTAssertTrue(refused.error?.description.contains(hash) ?? false)
    }

    func testProbeReportsTheServersKey() throws {
        let srv = try startServer(tls: true)
        let hash = try spkiHash()
        let loop = try EventLoop()
        let client = try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: srv.root))
        var key: Result<String, TransportError>?
        client.probePublicKey { key = $0 }
        try run(loop, until: { key != nil })
        XCTAssertEqual(try XCTUnwrap(key).get(), "sha256//" + hash)
    }

    // MARK: Support

    private func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                bind(fd, sa, len) == 0 && getsockname(fd, sa, &len) == 0
            }
        }
        XCTAssertTrue(ok)
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    private func sha256Hex(_ bytes: UnsafeRawBufferPointer) throws -> String {
        let file = dir.appendingPathComponent("body.bin")
        try Data(bytes).write(to: file)
        let out = try shell("openssl dgst -sha256 -r '\(file.path)'")
        return String(out.prefix(while: { $0 != " " }))
    }
}

/// A Python http.server on 127.0.0.1, port chosen by the kernel, in its own process.
private final class TestServer {
    let process = Process()
    let port: Int
    let root: String

    init(arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-u"] + arguments
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        // The first line is the port.
        var line = Data()
        let reader = out.fileHandleForReading
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let p = Int(text.split(separator: " ").last ?? "") else {
            process.terminate()
            throw NSError(domain: "TestServer", code: 1, userInfo: [NSLocalizedDescriptionKey: "server did not start: '\(text)'"])
        }
        port = p
        let scheme = text.hasPrefix("https") ? "https" : "http"
        root = "\(scheme)://127.0.0.1:\(p)/sensorhub/api"
    }

    func stop() {
        if process.isRunning {
            // SIGKILL: a throwaway server needs no graceful stop, and a SIGTERM it inherited
            // blocked (from a test that blocked it in this process) would hang the suite.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    static let script = #"""
        import hashlib, json, socket, ssl, struct, sys, threading, time
        from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
        from urllib.parse import urlsplit, parse_qs

        lock = threading.Lock()
        accepted = 0
        used = set()  # connections that carried at least one request

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def handle(self):
                try:
                    if isinstance(self.request, ssl.SSLSocket):
                        self.request.do_handshake()
                    super().handle()
                except (OSError, ValueError):
                    self.close_connection = True

            def respond(self):
                with lock:
                    used.add(self.conn_number)
                    count = len(used)
                u = urlsplit(self.path)
                q = {k: v[0] for k, v in parse_qs(u.query).items()}
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                # A body "!close", "!rst" or "!status=N" acts like the query: a prepared request's
                # path is fixed, its body is not.
                if body.startswith(b"!"):
                    cmd = body[1:].decode()
                    if cmd.startswith("status="):
                        q["status"] = cmd[7:]
                        if cmd[7] == "3":
                            q["location"] = "/moved"
                    else:
                        q["close"] = cmd
                close = q.get("close")
                if close:
                    if close == "rst":
                        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        self.connection.close()
                    self.close_connection = True
                    return
                if "delay" in q:
                    time.sleep(float(q["delay"]))
                if "stall" in q:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "1000")
                    self.end_headers()
                    self.wfile.write(b"[1")
                    self.wfile.flush()
                    time.sleep(10)
                    self.close_connection = True
                    return
                status = int(q.get("status", "200"))
                if "size" in q:
                    return self.send(status, b"x" * int(q["size"]), "application/octet-stream")
                if "message" in q:
                    return self.send(status, json.dumps({"status": status, "message": q["message"]}).encode(), "application/json")
                location = q.get("location")
                if len(body) > 65536:
                    location = "/digest/" + hashlib.sha256(body).hexdigest()
                    body = b""
                echo = {
                    "method": self.command,
                    "path": self.path,
                    "headers": [[k, v] for k, v in self.headers.items()],
                    "body_hex": body.hex(),
                    "conn": self.conn_number,
                    "accepts": count,
                }
                self.send(status, json.dumps(echo).encode(), "application/json", location)

            def send(self, status, body, ctype, location=None):
                self.send_response(status)
                if location:
                    self.send_header("Location", location)
                if status == 204:
                    self.end_headers()
                    return
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = respond

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True

            def __init__(self, addr, handler, context=None):
                super().__init__(addr, handler)
                self.context = context

            def get_request(self):
                global accepted
                sock, addr = self.socket.accept()
                with lock:
                    accepted += 1
                    n = accepted
                if self.context is not None:
                    sock = self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
                return (sock, (addr, n))

            def finish_request(self, request, client_address):
                addr, n = client_address
                handler = self.RequestHandlerClass
                class Numbered(handler):
                    conn_number = n
                Numbered(request, addr, self)

        context = None
        if len(sys.argv) > 1 and sys.argv[1] == "--tls":
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(sys.argv[2], sys.argv[3])
        httpd = Server(("127.0.0.1", 0), Handler, context)
        print(("https " if context else "http ") + str(httpd.server_address[1]), flush=True)
        httpd.serve_forever()
        """#
}
