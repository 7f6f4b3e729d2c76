import CShim
import Foundation
import OSHAgent
import OSHCore
import OSHDevNode
import OSHPlatform
import OSHSimulation
import XCTest
import OSHDevTools

/// gps_data end to end: NMEA through a pseudo-terminal → parser → ring → node.
final class GPSAgentTests: XCTestCase {
    // The simulated chips and values these agents run on come from OSHSimulation.
    override class func setUp() { super.setUp(); DemoSimulation.install() }

    private var node: DevNode!
    private var stateDir = ""
    private let identity = SystemIdentity(uid: "urn:osh:rpi:10000000a0b0c0d0", label: "GPS Pi", serial: "10000000a0b0c0d0")

    override func setUpWithError() throws {
        Log.muted = true
        node = try startedNode()
        stateDir = scratchPath("osh-gps")
    }

    override func tearDown() {
        node.stop()
        try? FileManager.default.removeItem(atPath: stateDir)
    }

    private func config() -> AgentConfig {
        var c = AgentConfig(
            server: NodeEndpoint(apiRoot: node.apiRoot), identity: identity,
            options: OutputOptions(uid: identity.uid), stateDirectory: stateDir)
        c.outputs = ["gps_data"]
        c.externalOutputs = ["gps_data"]
        return c
    }

    /// A runtime publishing gps_data and the board's GPS input feeding it, both started
    /// (`prepare` runs on the runtime before it starts).
    private func started(
        _ gps: GPSInputConfig, loop: EventLoop, trustHostClock: Bool = false, prepare: (AgentRuntime) -> Void = { _ in }
    ) throws -> (AgentRuntime, Hardware) {
        var plan = HardwarePlan()
        plan.gps = gps
        let hardware = Hardware(loop: loop, plan: plan)
        hardware.open()
        XCTAssertEqual(hardware.notes, [])
        XCTAssertEqual(hardware.feeds, [.gps])
        var c = config()
        c.trustHostClock = trustHostClock
        let a = try AgentRuntime(config: c, loop: loop)
        prepare(a)
        try a.start()
        try hardware.start(feeding: a)
        return (a, hardware)
    }

    private func run(_ loop: EventLoop, timeout: Double, until condition: () -> Bool) throws -> Bool {
        try loop.run(for: timeout, until: condition)
    }

    func testAReplayedReceiverLogReachesTheNodeWithItsPositions() throws {
        let log = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("OSHCoreTests/Fixtures/nmea/gpsd-3.22/ublox-neo-m9n-nmea.log").path
        // The fixes the parser finds in the log, to compare with what the node received.
        let bytes = try XCTUnwrap(FileManager.default.contents(atPath: log))
        var expected: [(Double, Double)] = []
        let parser = NMEAParser(notBefore: 0)
        bytes.withUnsafeBytes { parser.feed($0) { if $0.mode >= 2 { expected.append(($0.lat, $0.lon)) } } }
        XCTAssertGreaterThan(expected.count, 50)

        let loop = try EventLoop()
        let (a, hardware) = try started(.replay(logPath: log), loop: loop, trustHostClock: true)
        XCTAssertTrue(try run(loop, timeout: 15) { a.rows[0].counters.sent >= 3 })
        hardware.stop()
        try a.stop(flushUntil: EventLoop.deadline(after: 2))
        let obs = node.observations(datastreamID: try XCTUnwrap(a.rows[0].datastreamID))
        XCTAssertGreaterThanOrEqual(obs.count, 3)
        for (k, o) in obs.prefix(3).enumerated() {
            XCTAssertEqual(o["/location/lat"]?.double, expected[k].0, "fix \(k)")
            XCTAssertEqual(o["/location/lon"]?.double, expected[k].1, "fix \(k)")
            // Replayed positions carry the host's time, not the recording's.
            XCTAssertEqual(try XCTUnwrap(o.phenomenonTime), Clock.realtimeSeconds(), accuracy: 30)
        }
    }

    /// The virtual Pi's USB unplug, in the journal: the receiver's pty master closes and its path
    /// disappears for several retries, then a receiver comes back. Each event is one line — not
    /// once from the source and again from the agent's state note, and not a line per retry —
    /// while the state text (device_health, status) still says when the next attempt is.
    func testAnUnpluggedReceiverIsLoggedOnceNotAtEveryRetry() throws {
        let dir = NSTemporaryDirectory() + "osh-gps-link-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func openPty() throws -> (Int32, String) {
            var name = [CChar](repeating: 0, count: 128)
            let fd = osh_pty_open(&name, name.count)
            guard fd >= 0 else { throw SystemError.last("posix_openpt") }
            return (fd, String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        func point(_ link: String, to target: String) {
            unlink(link + ".new")
            XCTAssertEqual(symlink(target, link + ".new"), 0)
            XCTAssertEqual(rename(link + ".new", link), 0)
        }
        var (master, slave) = try openPty()
        defer { if master >= 0 { close(master) } }
        let link = dir + "/ttyUSB0"
        point(link, to: slave)
        let loop = try EventLoop()
        let capture = LogCapture()
        defer { capture.stop() }
        let (a, hardware) = try started(.serial(path: link, baud: 9600), loop: loop, trustHostClock: true)
        var k = 0
        let feeder = try loop.addTimer(firstAt: EventLoop.deadline(after: 0.05), interval: 200_000_000) { _ in
            guard master >= 0 else { return }
            k += 1
            let t = String(format: "12%02d%02d.00", k / 60 % 60, k % 60)  // a new receiver cycle each time
            let text = self.sentence("GPGGA,\(t),4807.038,N,01131.000,E,1,08,0.9,545.4,M,47.0,M,,")
            _ = text.withCString { write(master, $0, strlen($0)) }
        }
        XCTAssertTrue(try run(loop, timeout: 10) { a.rows[0].counters.produced >= 2 })

        // Unplugged: the master closes (the port hangs up) and the path goes.
        close(master)
        master = -1
        point(link, to: dir + "/absent")
        // Retries at 0.5, 1, 2 s: the state text says so at each one.
        XCTAssertTrue(try run(loop, timeout: 6) { hardware.gpsState?.contains("retrying in 2 s") ?? false }, hardware.gpsState ?? "nil")
        XCTAssertEqual(hardware.gpsState, "serial \(link): \(link) does not exist (receiver not plugged in?); retrying in 2 s")
        let produced = a.rows[0].counters.produced
        // Plugged in again.
        (master, slave) = try openPty()
        point(link, to: slave)
        XCTAssertTrue(try run(loop, timeout: 6) { a.rows[0].counters.produced > produced + 1 })
        XCTAssertEqual(hardware.gpsState, "serial \(link): receiving at 9600 baud")
        loop.cancel(feeder)
        hardware.stop()
        try a.stop(flushUntil: EventLoop.deadline(after: 2))

        let gps = capture.lines.filter { $0.hasPrefix("gps") }
        XCTAssertEqual(gps.count, 4, "\(gps)")
        XCTAssertEqual(Set(gps).count, gps.count, "a line repeats: \(gps)")
        // No line carries another's message under a different prefix ("gps: serial X: …" and "gps: …").
        for (i, x) in gps.enumerated() {
            let core = String(x.dropFirst("gps: ".count))
            for (j, y) in gps.enumerated() where i != j {
                XCTAssertFalse(y.contains(core), "\(y) repeats \(x)")
            }
        }
        XCTAssertTrue(gps[0].hasPrefix("gps: opened \(link) (→ /dev/pts/"), "\(gps)")
        XCTAssertTrue(gps[0].hasSuffix(") at 9600 baud"), "\(gps)")
        XCTAssertTrue(gps[1].hasPrefix("gps: \(link) (→ /dev/pts/"), "\(gps)")
        XCTAssertTrue(gps[1].contains(" went away ("), "\(gps)")
        XCTAssertTrue(gps[1].hasSuffix("unplugged?); positions pause, retrying in 0.5 s"), "\(gps)")
        XCTAssertEqual(gps[2], "gps: \(link) does not exist (receiver not plugged in?)")
        XCTAssertTrue(gps[3].hasPrefix("gps: \(link) (→ /dev/pts/"), "\(gps)")
        XCTAssertTrue(gps[3].hasSuffix(") back at 9600 baud; positions resume"), "\(gps)")
        // The per-retry state texts are not logged.
        XCTAssertEqual(capture.count("opening the serial port"), 0)
        XCTAssertEqual(capture.count("retrying in 1 s"), 0)
        XCTAssertEqual(capture.count("retrying in 2 s"), 0)
    }

    /// NMEA with a checksum, as a receiver sends it.
    private func sentence(_ body: String) -> String {
        var x: UInt8 = 0
        for b in body.utf8 { x ^= b }
        return "$" + body + "*" + String(format: "%02X", x) + "\r\n"
    }

    func testGPSTimeStandsInForAnUnsynchronisedClock() throws {
        var name = [CChar](repeating: 0, count: 128)
        let master = osh_pty_open(&name, name.count)
        XCTAssertGreaterThanOrEqual(master, 0)
        defer { close(master) }
        let loop = try EventLoop()
        let (a, hardware) = try started(.serial(path: String(cString: name), baud: 9600), loop: loop) {
            $0.clockProvider = { .unsynchronized(reason: "no NTP in this test") }
        }
        // Without GPS nothing is sent: the clock is not trusted.
        XCTAssertFalse(try run(loop, timeout: 1) { a.rows[0].counters.sent > 0 })
        // A receiver with today's date: its time becomes the clock.
        let f = DateFormatter()
        f.timeZone = TimeZone(identifier: "UTC")
        f.locale = Locale(identifier: "en_US_POSIX")
        var written = 0
        let feeder = try loop.addTimer(firstAt: EventLoop.deadline(after: 0.05), interval: 200_000_000) { _ in
            let now = Date()
            f.dateFormat = "HHmmss.SS"
            let t = f.string(from: now)
            f.dateFormat = "ddMMyy"
            let d = f.string(from: now)
            let text =
                self.sentence("GPGGA,\(t),4807.038,N,01131.000,E,1,08,0.9,545.4,M,47.0,M,,")
                + self.sentence("GPRMC,\(t),A,4807.038,N,01131.000,E,0.0,0.0,\(d),,,A")
            _ = text.withCString { write(master, $0, strlen($0)) }
            written += 1
        }
        XCTAssertTrue(try run(loop, timeout: 15) { a.rows[0].counters.sent >= 3 })
        loop.cancel(feeder)
        hardware.stop()
        try a.stop(flushUntil: EventLoop.deadline(after: 2))
        let obs = node.observations(datastreamID: try XCTUnwrap(a.rows[0].datastreamID))
        XCTAssertGreaterThanOrEqual(obs.count, 3)
        let o = obs[0]
        XCTAssertEqual(try XCTUnwrap(o["/location/lat"]?.double), 48 + 7.038 / 60, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(o["/location/lon"]?.double), 11 + 31.0 / 60, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(o["/location/alt"]?.double), 545.4 + 47.0, accuracy: 1e-6, "height above the ellipsoid")
        XCTAssertEqual(try XCTUnwrap(o.phenomenonTime), Date().timeIntervalSince1970, accuracy: 5, "stamped with GPS time")
    }
}
