import CShim
import Foundation
import Glibc
import OSHCore
import OSHPlatform
import XCTest

/// GPSDSource against a fake gpsd: a loopback TCP listener served on the same event loop,
/// speaking gpsd's JSON the way gpsd 3.22 does (reports taken from gpsd's regression files).
final class GPSDSourceTests: XCTestCase {
    static let version = #"{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}"#
    static let devices =
        #"{"class":"DEVICES","devices":[{"class":"DEVICE","path":"/dev/ttyUSB0","driver":"NMEA0183","activated":"2021-01-06T03:07:18.000Z","flags":1,"native":0,"bps":4800,"parity":"N","stopbits":1,"cycle":1.00}]}"#
    static let watch =
        #"{"class":"WATCH","enable":true,"json":true,"nmea":false,"raw":0,"scaled":false,"timing":false,"split24":false,"pps":false}"#
    static let sky =
        #"{"class":"SKY","device":"/dev/ttyUSB0","xdop":0.63,"ydop":0.85,"vdop":1.50,"tdop":0.89,"hdop":1.10,"gdop":2.01,"pdop":1.80,"nSat":12,"uSat":8,"satellites":[{"PRN":17,"el":72.0,"az":207.0,"ss":32.0,"used":true,"gnssid":0,"svid":17},{"PRN":28,"el":59.0,"az":95.0,"ss":31.0,"used":true,"gnssid":0,"svid":28},{"PRN":6,"el":35.0,"az":347.0,"ss":25.0,"used":true,"gnssid":0,"svid":6}]}"#
    static let noFix = #"{"class":"TPV","device":"/dev/ttyUSB0","mode":1}"#
    static let tpv = [
        #"{"class":"TPV","device":"/dev/ttyUSB0","mode":3,"lat":-37.784788333,"lon":175.314896667,"altHAE":83.6000,"altMSL":59.9000,"alt":59.9000,"magvar":20.5,"geoidSep":23.700,"eph":20.900}"#,
        #"{"class":"TPV","device":"/dev/ttyUSB0","mode":3,"time":"2034-08-16T03:07:19.000Z","ept":0.005,"lat":-37.784788333,"lon":175.314896667,"altHAE":83.6000,"altMSL":59.9000,"alt":59.9000,"epv":34.500,"track":181.3900,"magtrack":201.9320,"magvar":20.5,"speed":0.355,"geoidSep":23.700,"eph":20.900,"sep":34.200}"#,
        #"{"class":"TPV","device":"/dev/ttyUSB0","mode":3,"time":"2034-08-16T03:07:20.000Z","ept":0.005,"lat":-37.784791667,"lon":175.314896667,"altHAE":83.5000,"altMSL":59.8000,"alt":59.8000,"epv":34.500,"track":181.3900,"magtrack":201.9320,"magvar":20.5,"speed":0.592,"climb":-0.100,"epc":69.00,"geoidSep":23.700,"eph":20.900,"sep":34.200}"#,
        #"{"class":"TPV","device":"/dev/ttyUSB0","mode":3,"time":"2034-08-16T03:07:21.000Z","ept":0.005,"lat":-37.784793333,"lon":175.314890000,"altHAE":83.8000,"altMSL":60.1000,"alt":60.1000,"epx":9.484,"epy":12.791,"epv":34.500,"track":181.3900,"magtrack":201.9320,"magvar":20.5,"speed":0.458,"climb":0.300,"epc":69.00,"geoidSep":23.700,"eph":20.900,"sep":34.200}"#,
    ]
    static let gst =
        #"{"class":"GST","device":"/dev/ttyUSB0","time":"2034-08-16T03:07:21.000Z","rms":2.0,"major":2.500,"minor":2.400,"orient":126.000,"lat":0.980,"lon":1.000,"alt":3.100}"#
    /// 2034-08-16T03:07:19Z (the .chk files show gpsd's week-rollover guess for this 2014 log).
    static let t19 = 2_039_310_439.0

    override func setUp() { Log.muted = true }
    override func tearDown() { Log.muted = false }

    // MARK: - Fake gpsd

    final class FakeGPSD {
        let loop: EventLoop
        let listenFD: Int32
        let port: UInt16
        var listenReg: EventLoop.Registration?
        var client: Int32 = -1
        var clientReg: EventLoop.Registration?
        var received: [UInt8] = []
        var connections = 0
        /// Sent as soon as a client connects (gpsd greets with VERSION).
        var greeting: String? = GPSDSourceTests.version
        /// Called when a client's first line (the WATCH command) has arrived.
        var onCommand: ((FakeGPSD, String) -> Void)?
        var rng: UInt64 = 0x2545_F491_4F6C_DD1D

        /// Binds 127.0.0.1 on a kernel-chosen port; until `listen()` connections are refused.
        init(loop: EventLoop) throws {
            self.loop = loop
            listenFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard listenFD >= 0 else { throw SystemError.last("socket") }
            var one: Int32 = 1
            setsockopt(listenFD, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            addr.sin_port = 0
            var len = socklen_t(MemoryLayout<sockaddr_in>.size)
            let fd = listenFD
            let ok = withUnsafeMutablePointer(to: &addr) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                    bind(fd, sa, len) == 0 && getsockname(fd, sa, &len) == 0
                }
            }
            guard ok else { throw SystemError.last("bind") }
            port = UInt16(bigEndian: addr.sin_port)
        }

        deinit {
            dropClient()
            if let r = listenReg { loop.remove(r) }
            close(listenFD)
        }

        func listen() throws {
            guard Glibc.listen(listenFD, 4) == 0 else { throw SystemError.last("listen") }
            listenReg = try loop.add(fd: listenFD, events: .readable) { [unowned self] _ in self.accept() }
        }

        private func accept() {
            let fd = Glibc.accept(listenFD, nil, nil)
            guard fd >= 0 else { return }
            _ = osh_set_nonblocking(fd)
            _ = osh_set_cloexec(fd)
            dropClient()
            client = fd
            connections += 1
            received.removeAll()
            clientReg = try? loop.add(fd: fd, events: .readable) { [unowned self] _ in self.readClient() }
            if let g = greeting {
                let bytes = Array((g + "\n").utf8)
                _ = bytes.withUnsafeBytes { osh_send_nosignal(fd, $0.baseAddress, $0.count) }
            }
        }

        private func readClient() {
            var buf = [UInt8](repeating: 0, count: 1024)
            let n = buf.withUnsafeMutableBytes { read(client, $0.baseAddress, $0.count) }
            if n <= 0 { if n == 0 || (errno != EAGAIN && errno != EINTR) { dropClient() }; return }
            received += buf[0..<n]
            while let nl = received.firstIndex(of: 0x0A) {
                let line = String(decoding: received[..<nl], as: UTF8.self)
                received.removeSubrange(...nl)
                onCommand?(self, line)
            }
        }

        /// Sends `lines` in chunks cut at odd places (1…97 bytes), one chunk per millisecond.
        func send(_ lines: [String], then: (() -> Void)? = nil) throws {
            let bytes = Array(lines.map { $0 + "\n" }.joined().utf8)
            var off = 0
            var timer: EventLoop.Timer?
            let fd = client
            timer = try loop.addTimer(firstAt: EventLoop.deadline(after: 0.001), interval: 1_000_000) { [unowned self] _ in
                guard off < bytes.count, self.client == fd else {
                    if let t = timer { self.loop.cancel(t) }
                    if self.client == fd { then?() }
                    return
                }
                self.rng ^= self.rng >> 12; self.rng ^= self.rng << 25; self.rng ^= self.rng >> 27
                let n = min(bytes.count - off, 1 + Int((self.rng &* 2_685_821_657_736_338_717) % 97))
                let w = bytes[off..<(off + n)].withUnsafeBytes { osh_send_nosignal(fd, $0.baseAddress, $0.count) }
                if w > 0 { off += w }
            }
        }

        func dropClient() {
            if let r = clientReg { loop.remove(r) }
            clientReg = nil
            if client >= 0 { close(client) }
            client = -1
        }
    }

    // MARK: - Tests

    func testWatchesAndReportsFixesThenReconnectsAfterTheConnectionIsKilled() throws {
        let loop = try EventLoop()
        let gpsd = try FakeGPSD(loop: loop)
        try gpsd.listen()
        var commands: [String] = []
        gpsd.onCommand = { g, line in
            commands.append(line)
            // Like gpsd: VERSION went out on connect; WATCH is answered with DEVICES and WATCH, then reports.
            if g.connections == 1 {
                try? g.send([
                    Self.devices, Self.watch, Self.sky, Self.noFix, Self.tpv[0], Self.sky,
                    Self.tpv[1], Self.gst, Self.tpv[2],
                ])
            } else {
                try? g.send([Self.devices, Self.watch, Self.tpv[3]])
            }
        }
        var reports: [GPSDReport] = []
        var states: [GPSDSource.State] = []
        let source = GPSDSource(
            loop: loop, host: "127.0.0.1", port: gpsd.port,
            onFix: { reports.append($0) }, onState: { states.append($0) })
        source.backoff = Backoff(initial: 0.1, maximum: 1)
        source.start()
        try run(loop, seconds: 5) { reports.count == 3 }
        XCTAssertEqual(commands, [#"?WATCH={"enable":true,"json":true}"#])
        XCTAssertEqual(reports.count, 3)
        XCTAssertEqual(
            reports.first,
            GPSDReport(
                time: nil, lat: -37.784788333, lon: 175.314896667, altHAE: 83.6,
                altMSL: 59.9, mode: 3, device: "/dev/ttyUSB0"))
        XCTAssertEqual(reports[1].time, Self.t19)
        XCTAssertEqual(reports[2].time, Self.t19 + 1)
        XCTAssertEqual(reports[2].lat, -37.784791667)
        XCTAssertEqual(reports[2].altHAE, 83.5)
        XCTAssertEqual(source.release, "3.22")
        XCTAssertEqual(source.devices, ["/dev/ttyUSB0"])
        XCTAssertEqual(source.state, .streaming)
        XCTAssertEqual(states, [.connecting, .waitingForFix, .streaming])  // mode 1 before the first fix changes nothing
        XCTAssertEqual(source.linesReceived, 10)

        // gpsd restarts: the connection dies; the source reconnects, re-sends WATCH and resumes.
        gpsd.dropClient()
        try run(loop, seconds: 2) { if case .disconnected = source.state { return true } else { return false } }
        guard case .disconnected(let why) = source.state else { return XCTFail("\(source.state)") }
        XCTAssertTrue(why.contains("gpsd closed the connection"), why)
        try run(loop, seconds: 3) { reports.count == 4 }
        XCTAssertEqual(reports.count, 4)
        XCTAssertEqual(reports[3].time, Self.t19 + 2)
        XCTAssertEqual(commands.count, 2)
        XCTAssertEqual(commands.last, #"?WATCH={"enable":true,"json":true}"#)
        XCTAssertEqual(source.reconnectCount, 1)
        XCTAssertEqual(gpsd.connections, 2)
        source.stop()
        XCTAssertEqual(source.state, .disconnected("stopped"))
    }

    func testRefusedConnectionsBackOffUntilGPSDListens() throws {
        let loop = try EventLoop()
        let gpsd = try FakeGPSD(loop: loop)  // bound, not listening: connections are refused
        var attempts: [UInt64] = []
        var reasons: [String] = []
        var reports: [GPSDReport] = []
        let source = GPSDSource(
            loop: loop, port: gpsd.port, onFix: { reports.append($0) },
            onState: { s in
                if s == .connecting { attempts.append(osh_monotonic_ns()) }
                if case .disconnected(let r) = s { reasons.append(r) }
            })
        source.backoff = Backoff(initial: 0.05, maximum: 0.2)
        source.start()
        try loop.run(until: EventLoop.deadline(after: 0.6))
        let gaps = zip(attempts.dropFirst(), attempts).map { Double($0 - $1) / 1e9 }
        XCTAssertGreaterThanOrEqual(gaps.count, 3, "\(gaps)")
        assertGap(gaps[0], 0.05)
        assertGap(gaps[1], 0.10)
        assertGap(gaps[2], 0.20)
        XCTAssertTrue(reasons.first?.contains("gpsd is not listening on 127.0.0.1:\(gpsd.port)") ?? false, "\(reasons)")
        XCTAssertTrue(reasons.first?.contains("retrying in 0.05 s") ?? false, "\(reasons)")

        gpsd.onCommand = { g, _ in try? g.send([Self.devices, Self.watch, Self.tpv[1]]) }
        try gpsd.listen()
        try run(loop, seconds: 2) { reports.count == 1 }
        XCTAssertEqual(reports.first?.time, Self.t19)
        XCTAssertEqual(source.reconnectCount, 0)
        XCTAssertEqual(source.connectAttempts, attempts.count)
        source.stop()
    }

    /// gpsd's outages in the journal: a gpsd that accepts and hangs up at every retry (socket
    /// activation failing) is one line, its answer one line; a lost connection is one line, its
    /// return one line.
    func testOutagesAreLoggedOnceNotAtEveryRetry() throws {
        let loop = try EventLoop()
        let gpsd = try FakeGPSD(loop: loop)
        try gpsd.listen()
        gpsd.greeting = nil
        gpsd.onCommand = { g, _ in g.dropClient() }
        var reports: [GPSDReport] = []
        let source = GPSDSource(loop: loop, port: gpsd.port, onFix: { reports.append($0) }, onState: { _ in })
        source.backoff = Backoff(initial: 0.05, maximum: 0.1)
        let at = "127.0.0.1:\(gpsd.port)"
        let lines = try capturingLog {
            source.start()
            try run(loop, seconds: 3) { gpsd.connections >= 5 }
            XCTAssertGreaterThanOrEqual(gpsd.connections, 5)
            // gpsd starts properly. (Its VERSION greeting goes with the answer to WATCH here, so a
            // connection accepted just before the switch greets too.)
            gpsd.onCommand = { g, _ in try? g.send([Self.version, Self.devices, Self.watch, Self.tpv[1]]) }
            try run(loop, seconds: 3) { reports.count == 1 }
            // …and restarts while fixes flow; it hangs up at the next attempts too, then answers.
            gpsd.onCommand = { g, _ in g.dropClient() }
            gpsd.dropClient()
            let before = gpsd.connections
            try run(loop, seconds: 3) { gpsd.connections >= before + 4 }
            gpsd.onCommand = { g, _ in try? g.send([Self.version, Self.devices, Self.watch, Self.tpv[2]]) }
            try run(loop, seconds: 3) { reports.count == 2 }
            source.stop()
        }.map(\.1)
        XCTAssertEqual(
            lines,
            [
                "gps: lost gpsd at \(at) (gpsd closed the connection); retrying in 0.05 s",
                "gps: connected to gpsd 3.22 at \(at)",
                "gps: gpsd devices: /dev/ttyUSB0",
                "gps: lost gpsd at \(at) (gpsd closed the connection); positions pause, retrying in 0.05 s",
                "gps: connected to gpsd 3.22 at \(at) again",
                "gps: gpsd devices: /dev/ttyUSB0",
            ])
    }

    func testOversizedLinesAreDroppedAndTheStreamContinues() throws {
        let loop = try EventLoop()
        let gpsd = try FakeGPSD(loop: loop)
        try gpsd.listen()
        let huge = #"{"class":"SKY","satellites":["# + String(repeating: #"{"PRN":1,"el":1.0},"#, count: 400) + "{}]}"
        gpsd.onCommand = { g, _ in try? g.send([huge, Self.tpv[1], "not json at all", Self.tpv[2]]) }
        var reports: [GPSDReport] = []
        let source = GPSDSource(loop: loop, port: gpsd.port, onFix: { reports.append($0) }, onState: { _ in })
        source.maxLineBytes = 4096
        source.start()
        try run(loop, seconds: 5) { reports.count == 2 }
        XCTAssertEqual(reports.map(\.time), [Self.t19, Self.t19 + 1])
        XCTAssertEqual(source.oversizedLines, 1)
        source.stop()
    }

    func testBadHostIsBlocked() throws {
        let loop = try EventLoop()
        let source = GPSDSource(loop: loop, host: "gps.example", onFix: { _ in }, onState: { _ in })
        source.start()
        guard case .blocked(let why) = source.state else { return XCTFail("\(source.state)") }
        XCTAssertTrue(why.contains("not an IP address"), why)
        source.stop()
        XCTAssertEqual(loop.sourceCount, 0)
    }

    func testReportParsing() throws {
        let old = try JSONValue.parse(
            #"{"class":"TPV","device":"/dev/ttyS0","mode":2,"time":"2019-04-07T00:00:01.5Z","lat":51.5,"lon":-0.12,"alt":35.1}"#)
        XCTAssertEqual(
            GPSDReport(tpv: old),
            GPSDReport(
                time: 1_554_595_201.5, lat: 51.5, lon: -0.12, altHAE: nil,
                altMSL: 35.1, mode: 2, device: "/dev/ttyS0"))
        XCTAssertNil(GPSDReport(tpv: try JSONValue.parse(Self.noFix)))
        XCTAssertNil(GPSDReport(tpv: try JSONValue.parse(#"{"class":"TPV","mode":3}"#)))
        XCTAssertNil(GPSDReport(tpv: try JSONValue.parse(Self.gst)))
        XCTAssertNil(GPSDReport(tpv: try JSONValue.parse(#"{"class":"TPV","mode":3,"lat":91,"lon":0}"#)))
    }

    func testProbeAgainstAFakeGPSDOnAThread() throws {
        let listener = try FakeGPSD(loop: try EventLoop())  // only its socket is used, blocking, on a thread
        XCTAssertEqual(Glibc.listen(listener.listenFD, 1), 0)
        let fd = listener.listenFD
        let version = Self.version, devices = Self.devices
        let server = Thread {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 3000) == 1 else { return }
            let c = accept(fd, nil, nil)
            guard c >= 0 else { return }
            defer { close(c) }
            let hello = Array((version + "\n").utf8)
            _ = hello.withUnsafeBytes { osh_send_nosignal(c, $0.baseAddress, $0.count) }
            var got = [UInt8]()
            var buf = [UInt8](repeating: 0, count: 256)
            while !got.contains(0x0A) {
                var q = pollfd(fd: c, events: Int16(POLLIN), revents: 0)
                guard poll(&q, 1, 3000) == 1 else { return }
                let n = buf.withUnsafeMutableBytes { read(c, $0.baseAddress, $0.count) }
                if n <= 0 { return }
                got += buf[0..<n]
            }
            guard String(decoding: got, as: UTF8.self) == "?DEVICES;\n" else { return }
            let answer = Array((String(devices.prefix(40)) + "").utf8)
            _ = answer.withUnsafeBytes { osh_send_nosignal(c, $0.baseAddress, $0.count) }
            usleep(20_000)
            let rest = Array((String(devices.dropFirst(40)) + "\n").utf8)
            _ = rest.withUnsafeBytes { osh_send_nosignal(c, $0.baseAddress, $0.count) }
            usleep(100_000)
        }
        server.start()
        let found = GPSDSource.probe(port: listener.port, timeout: 2)
        XCTAssertEqual(try found.get(), GPSDSource.Probe(release: "3.22", devices: ["/dev/ttyUSB0"]))

        // Nobody there: refused, quickly.
        let closed = try FakeGPSD(loop: try EventLoop())
        let started = osh_monotonic_ns()
        guard case .failure(let e) = GPSDSource.probe(port: closed.port, timeout: 1) else { return XCTFail("probe succeeded") }
        XCTAssertEqual(e.errno, ECONNREFUSED)
        XCTAssertLessThan(osh_monotonic_ns() - started, 500_000_000)
    }
}
