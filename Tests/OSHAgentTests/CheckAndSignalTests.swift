import Foundation
import OSHAgent
import OSHCore
import OSHDevNode
import OSHPlatform
import OSHSimulation
import XCTest
import OSHDevTools

final class CheckAndSignalTests: XCTestCase {
    // The simulated chips and values these agents run on come from OSHSimulation.
    override class func setUp() { super.setUp(); DemoSimulation.install() }

    private let identity = SystemIdentity(uid: "urn:osh:rpi:10000000c0ffee00", label: "Check Pi", serial: "10000000c0ffee00")

    func testCheckSaysTheClockHoldsObservationsAndForHowLong() throws {
        var settings = AgentSettings(server: ServerSettings(name: "main", url: "http://127.0.0.1:8181/sensorhub/api"))
        let now = Clock.realtimeSeconds()
        let held = try XCTUnwrap(
            ServiceStatus.parse(
                "counters pid=\(getpid()) written=\(now) registered=1 link=online clock=held held_seconds=75\n",
                path: "/run/osh-edge/counters"))
        let line = Check.clockLine(settings, service: held, now: now)
        XCTAssertFalse(line.ok)
        XCTAssertTrue(line.text.hasPrefix("holding: clock not synchronised for 75 s"), line.text)
        XCTAssertTrue(line.text.contains("timedatectl") && line.text.contains("require_sync = false"), line.text)
        let synced = try XCTUnwrap(ServiceStatus.parse("counters pid=\(getpid()) written=\(now) clock=synchronised\n", path: "x"))
        XCTAssertTrue(Check.clockLine(settings, service: synced, now: now).ok)
        // A stale file (the service is gone) is not believed: the kernel's clock is judged instead.
        let stale = Check.clockLine(settings, service: held, now: now + 60)
        XCTAssertFalse(stale.text.contains("75 s"), stale.text)
        settings.requireClockSync = false
        XCTAssertTrue(Check.clockLine(settings, service: held, now: now).ok, "require_sync = false: the clock is taken as it is")
    }

    func testCheckSaysWhatIsWrongInPlainWords() throws {
        Log.muted = true
        let node = DevNode(config: DevNodeConfig(users: [("sensor", "pwd")]))
        _ = try node.start()
        defer { node.stop() }
        let outputs = [OutputCatalogue.barometer(OutputOptions(uid: identity.uid))]
        let noCreds = try Check.run(server: NodeEndpoint(apiRoot: node.apiRoot), identity: identity, outputs: outputs)
        XCTAssertEqual(noCreds.map(\.ok), [false])
        XCTAssertTrue(noCreds[0].text.contains("wants credentials"), noCreds[0].text)
        let wrong = try Check.run(
            server: NodeEndpoint(apiRoot: node.apiRoot, credentials: .basic(username: "sensor", password: "x")),
            identity: identity, outputs: outputs)
        XCTAssertTrue(wrong[0].text.contains("refused the credentials"), wrong[0].text)
        let good = NodeEndpoint(apiRoot: node.apiRoot, credentials: .basic(username: "sensor", password: "pwd"))
        let before = try Check.run(server: good, identity: identity, outputs: outputs)
        XCTAssertEqual(before.map(\.ok), [true, false])
        XCTAssertTrue(before[1].text.contains("not registered"))
        // Register, then check again.
        let loop = try EventLoop()
        var c = AgentConfig(
            server: good, identity: identity, options: OutputOptions(uid: identity.uid),
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
        XCTAssertTrue(
            after[2].text.hasPrefix("all 1 configured datastreams are there (the node holds 1 datastream for this board)"),
            after[2].text)
        // The board's own datastreams are counted, not a default set: a configuration naming
        // another output says what is missing and what the node holds beyond it; no configuration
        // (`check --node URL` alone) lists what the node holds and fails nothing.
        let other = try Check.run(
            server: good, identity: identity,
            outputs: [OutputCatalogue.gps(OutputOptions(uid: identity.uid))])
        XCTAssertEqual(
            other[2].text,
            "0 of the 1 configured datastreams are there; missing: gps_data (osh-edge creates them "
                + "when it registers) (the node holds 1 datastream for this board; not in this configuration: barometer)")
        let unjudged = try Check.run(server: good, identity: identity, outputs: nil)
        XCTAssertEqual(unjudged.map(\.ok), [true, true, true])
        XCTAssertEqual(unjudged[2].text, "the node holds 1 datastream for this board: barometer")
        let closed = try Check.run(server: NodeEndpoint(apiRoot: "http://127.0.0.1:1/sensorhub/api"), identity: identity, outputs: outputs)
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
        let exe = builtBinary("osh-edge-dev")
        let p = Process()
        p.executableURL = exe
        p.arguments = ["demo", "--node", node.apiRoot, "--state-dir", state, "--uid", identity.uid]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        // Wait for registration (the id cache appears), then take the node away.
        let until = Date().addingTimeInterval(10)
        func cacheFile() -> String? {
            (try? FileManager.default.contentsOfDirectory(atPath: state))?.first { $0.hasPrefix("ids-") && !$0.contains(".tmp") }.map {
                state + "/" + $0
            }
        }
        while cacheFile() == nil, Date() < until { usleep(50_000) }
        let path = try XCTUnwrap(cacheFile(), "the agent registered and saved its ids")
        node.mode = .refuseConnections
        usleep(1_500_000)
        let t0 = Date()
        p.terminate()  // SIGTERM
        p.waitUntilExit()
        let took = Date().timeIntervalSince(t0)
        XCTAssertLessThan(took, 5, "exits within the flush deadline")
        XCTAssertEqual(p.terminationReason, .exit)
        let bytes = try XCTUnwrap(FileManager.default.contents(atPath: path))
        XCTAssertNotNil(RegistrationState.decode(Array(bytes)), "the id cache is intact")
    }
}

/// TLS end to end: our libcurl client against the development node over HTTPS.
final class TLSAgentTests: XCTestCase {
    // The simulated chips and values these agents run on come from OSHSimulation.
    override class func setUp() { super.setUp(); DemoSimulation.install() }

    func testVerifyByDefaultTrustPerHostAndPinning() throws {
        Log.muted = true
        guard DevNode.tlsSupported else { throw XCTSkip("libmicrohttpd built without TLS") }
        let tls = try selfSignedCertificate(in: scratchPath("osh-tls"), subject: "/CN=osh-edge test node")
        let node = DevNode(config: DevNodeConfig(tls: (tls.cert, tls.key)))
        _ = try node.start()
        defer { node.stop() }
        let identity = SystemIdentity(uid: "urn:osh:rpi:10000000aabbccdd", label: "TLS Pi", serial: "x")
        let https = node.apiRoot
        XCTAssertTrue(https.hasPrefix("https://127.0.0.1:"), https)

        // Verification is on by default: a self-signed node is refused, and the message says what to do.
        let refused = try Check.run(server: NodeEndpoint(apiRoot: https), identity: identity, outputs: [])
        XCTAssertFalse(refused[0].ok)
        XCTAssertTrue(refused[0].text.contains("TLS"), refused[0].text)
        let key = try XCTUnwrap(
            refused.last?.text.split(separator: " ").first { $0.hasPrefix("sha256//") }
                .map { String($0.dropFirst("sha256//".count)) }, "the node's key is reported for pinning")
        // Once, and the value to copy without the prefix (it used to say sha256//sha256//…).
        XCTAssertFalse(refused.last?.text.contains("sha256//sha256//") ?? true, refused.last?.text ?? "")
        XCTAssertTrue(
            refused.last?.text.contains("(--pin-sha256 \(key), or pin_sha256 = \"\(key)\" in [server.NAME])") ?? false,
            refused.last?.text ?? "")
        // The wrong scheme either way gets its own diagnosis, not a certificate or proxy story.
        let plainToTLS = try Check.run(
            server: NodeEndpoint(apiRoot: https.replacingOccurrences(of: "https://", with: "http://")),
            identity: identity, outputs: [])
        XCTAssertTrue(plainToTLS[0].text.contains("if that port serves HTTPS, use https:// in the URL"), plainToTLS[0].text)
        let plainNode = DevNode(config: DevNodeConfig())
        _ = try plainNode.start()
        defer { plainNode.stop() }
        let tlsToPlain = try Check.run(
            server: NodeEndpoint(apiRoot: plainNode.apiRoot.replacingOccurrences(of: "http://", with: "https://")),
            identity: identity, outputs: [])
        // A plain-HTTP server answers a ClientHello ("wrong version number") or just closes
        // (SSL_ERROR_SYSCALL); libmicrohttpd does either. Both say to use http://.
        XCTAssertTrue(tlsToPlain[0].text.contains("use http:// in the URL"), tlsToPlain[0].text)
        XCTAssertFalse(tlsToPlain[0].text.contains("trust that certificate"), tlsToPlain[0].text)

        // Trusting that certificate for that host works…
        let trusted = try Check.run(
            server: NodeEndpoint(apiRoot: https, tls: .trustCertificate(pemPath: tls.certPath)),
            identity: identity, outputs: [])
        XCTAssertTrue(trusted[0].ok, trusted[0].text)
        // …but not for a name the certificate does not carry.
        let otherHost = https.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        let wrongHost = try Check.run(
            server: NodeEndpoint(apiRoot: otherHost, tls: .trustCertificate(pemPath: tls.certPath)),
            identity: identity, outputs: [])
        XCTAssertFalse(wrongHost[0].ok)

        // Pinning the reported key works; a different pin is refused.
        let pinned = try Check.run(
            server: NodeEndpoint(apiRoot: https, tls: .pinnedKey(sha256Base64: key)), identity: identity, outputs: [])
        XCTAssertTrue(pinned[0].ok, pinned[0].text)
        let wrongPin = try Check.run(
            server: NodeEndpoint(apiRoot: https, tls: .pinnedKey(sha256Base64: String(repeating: "A", count: 43) + "=")),
            identity: identity, outputs: [])
        XCTAssertFalse(wrongPin[0].ok)
    }
}
