import OSHCore
import CShim
import Foundation
import Glibc
import OSHPlatform
import XCTest

/// SerialSource against real pseudo-terminals: the test writes NMEA into the master, the
/// source reads the slave through a symlink (as /dev/serial0 → /dev/ttyS0 on a Pi).
final class SerialSourceTests: XCTestCase {
    // Sentences from gpsd's regression log of a GlobalSat BU-353-S4 (test vectors).
    static let nmea: [String] = [
        "$GPGGA,030719.000,3747.0873,S,17518.8938,E,1,08,1.1,59.9,M,23.7,M,,0000*7D",
        "$GPGSA,A,3,17,28,06,01,30,20,26,13,,,,,1.8,1.1,1.5*33",
        "$GPRMC,030719.000,A,3747.0873,S,17518.8938,E,0.69,181.39,311214,,,A*7D",
        "$GPGGA,030720.000,3747.0875,S,17518.8938,E,1,08,1.1,59.8,M,23.7,M,,0000*70",
        "$GPGSA,A,3,17,28,06,01,30,20,26,13,,,,,1.8,1.1,1.5*33",
        "$GPRMC,030720.000,A,3747.0875,S,17518.8938,E,1.15,181.39,311214,,,A*7B",
        "$GPGGA,030721.000,3747.0876,S,17518.8934,E,1,08,1.1,60.1,M,23.7,M,,0000*7D",
        "$GPGSA,A,3,17,28,06,01,30,20,26,13,,,,,1.8,1.1,1.5*33",
        "$GPGSV,3,1,12,17,72,207,32,28,59,095,31,06,35,347,25,01,29,132,23*7B",
        "$GPGSV,3,2,12,30,23,011,29,20,17,069,20,26,09,293,23,13,07,304,10*7C",
        "$GPGSV,3,3,12,11,12,132,04,08,38,008,,02,35,348,,03,14,091,*73",
        "$GPRMC,030721.000,A,3747.0876,S,17518.8934,E,0.89,181.39,311214,,,A*71",
    ]
    static var stream: [UInt8] { Array(nmea.map { $0 + "\r\n" }.joined().utf8) }

    var dir = ""

    override func setUpWithError() throws {
        Log.muted = true
        dir = NSTemporaryDirectory() + "serial-source-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
        Log.muted = false
    }

    // MARK: - Helpers

    /// A pseudo-terminal pair; the master is raw, the slave path is /dev/pts/N.
    final class Pty {
        var master: Int32
        let slave: String
        init() throws {
            var name = [CChar](repeating: 0, count: 128)
            master = osh_pty_open(&name, name.count)
            guard master >= 0 else { throw SystemError.last("posix_openpt") }
            slave = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        func write(_ bytes: ArraySlice<UInt8>) {
            var off = bytes.startIndex
            while off < bytes.endIndex {
                let n = bytes[off...].withUnsafeBytes { Glibc.write(master, $0.baseAddress, $0.count) }
                if n <= 0 { if errno == EINTR { continue }; return }
                off += n
            }
        }
        func close() { if master >= 0 { Glibc.close(master); master = -1 } }
        deinit { close() }
    }

    /// Points `link` at `target` atomically (a new link renamed over the old one).
    func point(_ link: String, to target: String) {
        let tmp = link + ".new"
        unlink(tmp)
        XCTAssertEqual(symlink(target, tmp), 0)
        XCTAssertEqual(rename(tmp, link), 0)
    }

    /// The caller's side of the contract: assembles lines and says whether one was a
    /// checksummed $GP/$GN sentence since the last reset.
    final class Checker {
        var line: [UInt8] = []
        var valid = 0
        var received: [UInt8] = []
        func reset() { line.removeAll(); valid = 0 }
        func feed(_ b: UnsafeRawBufferPointer) {
            received.append(contentsOf: b)
            for c in b {
                if c == 0x0A {
                    if Self.isValid(line) { valid += 1 }
                    line.removeAll(keepingCapacity: true)
                } else if line.count < 128 {
                    line.append(c)
                }
            }
        }
        static func isValid(_ l: [UInt8]) -> Bool {
            var s = l
            if s.last == 0x0D { s.removeLast() }
            guard s.count > 6, s[0] == UInt8(ascii: "$"), s[1] == UInt8(ascii: "G"),
                s[2] == UInt8(ascii: "P") || s[2] == UInt8(ascii: "N"),
                let star = s.lastIndex(of: UInt8(ascii: "*")), star + 3 == s.count,
                let want = UInt8(String(decoding: s[(star + 1)...], as: UTF8.self), radix: 16)
            else { return false }
            return s[1..<star].reduce(0, ^) == want
        }
    }

    /// xorshift64*: reproducible chunkings.
    struct Rng {
        var s: UInt64
        mutating func next(_ range: ClosedRange<Int>) -> Int {
            s ^= s >> 12; s ^= s << 25; s ^= s >> 27
            let r = s &* 2_685_821_657_736_338_717
            return range.lowerBound + Int(r % UInt64(range.count))
        }
    }

    /// Writes `bytes` into the pty in random chunks of 1…max bytes, one chunk per `gapMs` tick.
    func writeChunked(
        _ loop: EventLoop, _ pty: @escaping () -> Pty?, _ bytes: [UInt8], seed: UInt64,
        maxChunk: Int = 80, gapMs: UInt64 = 3
    ) throws -> EventLoop.Timer {
        var rng = Rng(s: seed)
        var off = 0
        var timer: EventLoop.Timer?
        timer = try loop.addTimer(firstAt: EventLoop.deadline(after: 0.001), interval: gapMs * 1_000_000) { _ in
            guard off < bytes.count, let p = pty() else { if let t = timer { loop.cancel(t) }; return }
            let n = min(bytes.count - off, rng.next(1...maxChunk))
            p.write(bytes[off..<(off + n)])
            off += n
        }
        return timer!
    }

    // MARK: - Tests

    func testDeliversExactlyTheBytesWrittenInRandomChunks() throws {
        let loop = try EventLoop()
        let pty = try Pty()
        let link = dir + "/gps0"
        point(link, to: pty.slave)
        let checker = Checker()
        var states: [SerialSource.State] = []
        let source = SerialSource(
            loop: loop, path: link, baud: 9600,
            onData: { checker.feed($0) }, isConfirmed: { checker.valid > 0 },
            onReset: { checker.reset() }, onState: { states.append($0) })
        source.start()
        XCTAssertEqual(states, [.opening, .streaming(9600)])
        XCTAssertEqual(source.device, SerialPortDiagnostics.resolve(pty.slave))

        var expected: [UInt8] = []
        for _ in 0..<4 { expected += Self.stream }
        let writer = try writeChunked(loop, { pty }, expected, seed: 0x9E37_79B9_7F4A_7C15)
        try run(loop, seconds: 5) { checker.received.count >= expected.count }
        loop.cancel(writer)
        XCTAssertEqual(checker.received, expected)
        XCTAssertEqual(checker.valid, 4 * Self.nmea.count)
        XCTAssertEqual(source.bytesReceived, UInt64(expected.count))
        XCTAssertEqual(source.state, .streaming(9600))
        source.stop()
        XCTAssertEqual(source.state, .disconnected("stopped"))
        XCTAssertEqual(loop.sourceCount, 0)
    }

    func testAutomaticBaudSettlesOnTheThirdRate() throws {
        let loop = try EventLoop()
        let pty = try Pty()
        let link = dir + "/gps0"
        point(link, to: pty.slave)
        let checker = Checker()
        var resets = 0
        var states: [SerialSource.State] = []
        // The receiver "speaks" only the third rate: confirmation is refused before it.
        let source = SerialSource(
            loop: loop, path: link, baud: nil,
            onData: { checker.feed($0) },
            isConfirmed: { resets >= 3 && checker.valid > 0 },
            onReset: {
                resets += 1; checker.reset()
            },
            onState: { states.append($0) })
        source.probeDwell = 0.25
        source.start()
        var lines = Self.stream
        for _ in 0..<40 { lines += Self.stream }
        let writer = try writeChunked(loop, { pty }, lines, seed: 7, maxChunk: 60, gapMs: 2)
        try run(loop, seconds: 5) { source.state == .streaming(115200) }
        loop.cancel(writer)
        XCTAssertEqual(states, [.opening, .probingBaud(9600), .probingBaud(38400), .probingBaud(115200), .streaming(115200)])
        XCTAssertEqual(source.currentBaud, 115200)
        XCTAssertEqual(resets, 3)

        // The tty itself was switched: read the slave's termios through another descriptor.
        let fd = osh_open(pty.slave, O_RDWR | O_NOCTTY | O_NONBLOCK, 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        var t = termios()
        XCTAssertEqual(tcgetattr(fd, &t), 0)
        XCTAssertEqual(cfgetispeed(&t), speed_t(B115200))
        XCTAssertEqual(withUnsafeBytes(of: t.c_cc) { $0[Int(VMIN)] }, 0)
        XCTAssertEqual(withUnsafeBytes(of: t.c_cc) { $0[Int(VTIME)] }, 0)
        XCTAssertEqual(t.c_cflag & tcflag_t(CRTSCTS), 0)
        XCTAssertEqual(t.c_cflag & tcflag_t(CSIZE), tcflag_t(CS8))
        close(fd)
        source.stop()
    }

    func testGarbageAfterConfirmationTriggersARescan() throws {
        let loop = try EventLoop()
        let pty = try Pty()
        let link = dir + "/gps0"
        point(link, to: pty.slave)
        let checker = Checker()
        var states: [SerialSource.State] = []
        // Read-and-clear confirmation: "valid NMEA since I last said yes".
        let source = SerialSource(
            loop: loop, path: link, baud: nil,
            onData: { checker.feed($0) },
            isConfirmed: {
                defer { checker.valid = 0 }; return checker.valid > 0
            },
            onReset: { checker.reset() }, onState: { states.append($0) })
        source.probeDwell = 0.3
        source.staleAfter = 0.3
        source.start()
        _ = try writeChunked(loop, { pty }, Self.stream, seed: 3)
        try run(loop, seconds: 3) { source.state == .streaming(9600) && checker.received.count >= Self.stream.count }
        XCTAssertEqual(source.state, .streaming(9600))
        // The receiver switches rate: what arrives now is framing garbage.
        let garbage = (0..<6000).map { UInt8(truncatingIfNeeded: $0 &* 151 | 0x80) }
        _ = try writeChunked(loop, { pty }, garbage, seed: 5, maxChunk: 40, gapMs: 2)
        try run(loop, seconds: 3) { states.last == .probingBaud(9600) && states.count > 3 }
        XCTAssertEqual(Array(states.suffix(2)), [.streaming(9600), .probingBaud(9600)])
        source.stop()
    }

    func testUnplugThenReplugRecoversWhileTheLoopKeepsTicking() throws {
        let loop = try EventLoop()
        var pty: Pty? = try Pty()
        let link = dir + "/gps0"
        point(link, to: pty!.slave)
        let checker = Checker()
        var states: [SerialSource.State] = []
        var replacement: Pty?
        let source = SerialSource(
            loop: loop, path: link, baud: 38400,
            onData: { checker.feed($0) }, isConfirmed: { checker.valid > 0 },
            onReset: { checker.reset() },
            onState: { s in
                states.append(s)
                // The receiver comes back on a new pty; its udev-style link follows it.
                if case .disconnected = s, replacement == nil, let p = try? Pty() {
                    replacement = p
                    self.point(link, to: p.slave)
                }
            })
        // Another source on the same loop: a 20 ms ticker that must never stall.
        var ticks = 0
        var last = osh_monotonic_ns()
        var maxGap: UInt64 = 0
        let ticker = try loop.addTimer(firstAt: EventLoop.deadline(after: 0.02), interval: 20_000_000) { _ in
            let now = osh_monotonic_ns()
            maxGap = max(maxGap, now - last)
            last = now
            ticks += 1
        }
        source.start()
        let first = Self.stream
        _ = try writeChunked(loop, { pty }, first, seed: 11)
        try run(loop, seconds: 3) { checker.received.count >= first.count }
        XCTAssertEqual(checker.received, first)

        // Unplug.
        pty?.close()
        pty = nil
        try run(loop, seconds: 2) { if case .disconnected = source.state { return true } else { return false } }
        guard case .disconnected(let why) = source.state else { return XCTFail("still \(source.state)") }
        XCTAssertTrue(why.contains("went away"), why)
        XCTAssertTrue(why.contains("retrying in 0.5 s"), why)
        XCTAssertNil(source.currentBaud)

        // It reopens by itself after the backoff; data flows again.
        try run(loop, seconds: 3) { source.state == .streaming(38400) }
        XCTAssertEqual(source.state, .streaming(38400))
        XCTAssertEqual(source.reopenCount, 1)
        checker.received.removeAll()
        let second = Self.stream + Self.stream
        _ = try writeChunked(loop, { replacement }, second, seed: 13)
        try run(loop, seconds: 3) { checker.received.count >= second.count }
        XCTAssertEqual(checker.received, second)
        XCTAssertEqual(source.bytesReceived, UInt64(first.count + second.count))

        loop.cancel(ticker)
        XCTAssertGreaterThan(ticks, 20)
        XCTAssertLessThan(maxGap, 200_000_000, "the ticker stalled for \(maxGap / 1_000_000) ms")
        source.stop()
    }

    func testMissingDeviceIsRetriedWithGrowingBackoffUntilItAppears() throws {
        let loop = try EventLoop()
        let link = dir + "/by-id-gps"
        var attempts: [UInt64] = []
        var states: [SerialSource.State] = []
        let source = SerialSource(
            loop: loop, path: link, baud: 9600,
            onData: { _ in }, isConfirmed: { true }, onReset: {},
            onState: { s in
                states.append(s)
                if s == .opening { attempts.append(osh_monotonic_ns()) }
            })
        source.backoff = Backoff(initial: 0.05, maximum: 0.2)
        source.start()
        guard case .disconnected(let why) = source.state else { return XCTFail("\(source.state)") }
        XCTAssertTrue(why.contains("does not exist"), why)
        try loop.run(until: EventLoop.deadline(after: 0.8))
        // Attempts at 0, 0.05, 0.15, 0.35, 0.55, 0.75 s: doubling, then capped.
        let gaps = zip(attempts.dropFirst(), attempts).map { Double($0 - $1) / 1e9 }
        XCTAssertGreaterThanOrEqual(gaps.count, 4, "\(gaps)")
        assertGap(gaps[0], 0.05)
        assertGap(gaps[1], 0.10)
        assertGap(gaps[2], 0.20)
        if gaps.count > 3 { assertGap(gaps[3], 0.20) }
        XCTAssertEqual(source.openAttempts, attempts.count)

        // Plugged in: the next retry opens it.
        let pty = try Pty()
        point(link, to: pty.slave)
        try run(loop, seconds: 2) { source.state == .streaming(9600) }
        XCTAssertEqual(source.state, .streaming(9600))
        XCTAssertEqual(source.reopenCount, 0, "the first successful open is not a reopen")
        source.stop()
        _ = states
    }

    /// The journal of an unplug: the loss once (with the first retry), what changes once, the
    /// return once — not a line per retry; the state still says when the next attempt is.
    func testAnOutageIsLoggedOnceNotAtEveryRetry() throws {
        let loop = try EventLoop()
        var pty: Pty? = try Pty()
        let link = dir + "/gps0"
        point(link, to: pty!.slave)
        let first = SerialPortDiagnostics.display(path: link, device: SerialPortDiagnostics.resolve(pty!.slave))
        var stateTexts: [String] = []
        let source = SerialSource(
            loop: loop, path: link, baud: 9600, onData: { _ in }, isConfirmed: { true },
            onReset: {}, onState: { stateTexts.append($0.description) })
        source.backoff = Backoff(initial: 0.05, maximum: 0.2)
        var replacement: Pty?
        let lines = try capturingLog {
            source.start()
            XCTAssertEqual(source.state, .streaming(9600))
            // Unplugged: the port hangs up and its path disappears.
            pty?.close()
            pty = nil
            point(link, to: dir + "/absent")
            try run(loop, seconds: 3) { source.openAttempts >= 6 }
            XCTAssertGreaterThanOrEqual(source.openAttempts, 6, "several retries")
            // Plugged in again.
            replacement = try Pty()
            point(link, to: replacement!.slave)
            try run(loop, seconds: 2) { source.state == .streaming(9600) }
            XCTAssertEqual(source.state, .streaming(9600))
            source.stop()
        }.map(\.1)
        let second = SerialPortDiagnostics.display(path: link, device: SerialPortDiagnostics.resolve(replacement!.slave))
        XCTAssertEqual(lines.count, 4, "\(lines)")
        guard lines.count == 4 else { return }
        XCTAssertEqual(lines[0], "gps: opened \(first) at 9600 baud")
        XCTAssertTrue(lines[1].hasPrefix("gps: \(first) went away ("), lines[1])
        XCTAssertTrue(lines[1].hasSuffix("; unplugged?); positions pause, retrying in 0.05 s"), lines[1])
        XCTAssertEqual(lines[2], "gps: \(link) does not exist")
        XCTAssertEqual(lines[3], "gps: \(second) back at 9600 baud; positions resume")
        // The state texts keep saying what happens at each retry (status displays).
        XCTAssertTrue(stateTexts.contains("\(link) does not exist; retrying in 0.2 s"), "\(stateTexts)")
        XCTAssertGreaterThan(stateTexts.filter { $0 == "opening the serial port" }.count, 4)
    }

    func testSecondSourceOnTheSamePortIsBlockedAndNamesTheHolder() throws {
        let loop = try EventLoop()
        let pty = try Pty()
        let link = dir + "/gps0"
        point(link, to: pty.slave)
        let a = Checker()
        let first = SerialSource(
            loop: loop, path: link, baud: 9600, onData: { a.feed($0) },
            isConfirmed: { a.valid > 0 }, onReset: { a.reset() }, onState: { _ in })
        first.start()
        XCTAssertEqual(first.state, .streaming(9600))

        var secondStates: [SerialSource.State] = []
        let b = Checker()
        let second = SerialSource(
            loop: loop, path: link, baud: 9600, onData: { b.feed($0) },
            isConfirmed: { b.valid > 0 }, onReset: { b.reset() },
            onState: { secondStates.append($0) })
        second.backoff = Backoff(initial: 0.05, maximum: 0.2)
        second.start()
        guard case .blocked(let why) = second.state else { return XCTFail("\(second.state)") }
        XCTAssertTrue(why.contains("(pid \(getpid()))"), why)
        XCTAssertTrue(why.contains("in use by"), why)
        XCTAssertTrue(why.contains("→ \(SerialPortDiagnostics.resolve(pty.slave)!)"), why)

        // The first keeps its data.
        _ = try writeChunked(loop, { pty }, Self.stream, seed: 17)
        try run(loop, seconds: 3) { a.received.count >= Self.stream.count }
        XCTAssertEqual(a.received, Self.stream)
        XCTAssertTrue(b.received.isEmpty)

        // When the holder lets go, the blocked source takes over on its next retry.
        first.stop()
        try run(loop, seconds: 2) { second.state == .streaming(9600) }
        XCTAssertEqual(second.state, .streaming(9600))
        second.stop()
    }

    func testNonTerminalAndUnsupportedBaudAreBlocked() throws {
        let loop = try EventLoop()
        let file = dir + "/not-a-tty"
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        let s1 = SerialSource(
            loop: loop, path: file, baud: 9600, onData: { _ in }, isConfirmed: { false },
            onReset: {}, onState: { _ in })
        s1.start()
        guard case .blocked(let why) = s1.state else { return XCTFail("\(s1.state)") }
        XCTAssertTrue(why.contains("is not a serial port"), why)
        s1.stop()

        let s2 = SerialSource(
            loop: loop, path: file, baud: 12345, onData: { _ in }, isConfirmed: { false },
            onReset: {}, onState: { _ in })
        s2.start()
        guard case .blocked(let why2) = s2.state else { return XCTFail("\(s2.state)") }
        XCTAssertTrue(why2.contains("12345 baud"), why2)
        XCTAssertEqual(s2.openAttempts, 0)
        s2.stop()
        XCTAssertEqual(loop.sourceCount, 0)
    }

    func testConsoleBusyAndBluetoothDiagnostics() {
        let pi: (String) -> String? = { p in
            [
                "/dev/serial0": "/dev/ttyS0", "/dev/serial1": "/dev/ttyAMA0", "/dev/ttyS0": "/dev/ttyS0",
                "/dev/ttyAMA0": "/dev/ttyAMA0",
            ][p]
        }
        let cmdline = "coherent_pool=1M console=serial0,115200 console=tty1 root=PARTUUID=1234-02 rootwait\n"
        XCTAssertEqual(
            SerialPortDiagnostics.kernelConsole(
                on: "/dev/ttyS0", configuredPath: "/dev/serial0",
                cmdline: cmdline, resolve: pi), "console=serial0,115200")
        XCTAssertEqual(
            SerialPortDiagnostics.kernelConsole(
                on: "/dev/ttyS0", configuredPath: "/dev/ttyS0",
                cmdline: "console=ttyS0,115200 quiet", resolve: pi), "console=ttyS0,115200")
        XCTAssertNil(
            SerialPortDiagnostics.kernelConsole(
                on: "/dev/ttyUSB0", configuredPath: "/dev/ttyUSB0",
                cmdline: cmdline, resolve: pi))
        XCTAssertNil(
            SerialPortDiagnostics.kernelConsole(
                on: "/dev/ttyAMA0", configuredPath: "/dev/serial1",
                cmdline: cmdline, resolve: pi))
        let fix = SerialPortDiagnostics.consoleFix(device: "/dev/ttyS0", consoleEntry: "console=serial0,115200")
        XCTAssertTrue(fix.contains("remove console=serial0,115200 from /boot/firmware/cmdline.txt"), fix)
        XCTAssertTrue(fix.contains("serial-getty@ttyS0"), fix)

        let gpsd = SerialPortDiagnostics.busyMessage(
            display: "/dev/serial0 (→ /dev/ttyS0)", device: "/dev/ttyS0",
            holders: [.init(pid: 812, name: "gpsd")])
        XCTAssertTrue(gpsd.hasPrefix("/dev/serial0 (→ /dev/ttyS0) is in use by gpsd (pid 812)"), gpsd)
        XCTAssertTrue(gpsd.contains("use the gpsd source"), gpsd)
        let getty = SerialPortDiagnostics.busyMessage(
            display: "/dev/ttyS0", device: "/dev/ttyS0",
            holders: [.init(pid: 610, name: "agetty", confirmed: false)])
        XCTAssertTrue(getty.contains("probably held by agetty (pid 610)"), getty)
        XCTAssertTrue(getty.contains("serial-getty@ttyS0"), getty)
        let unknown = SerialPortDiagnostics.busyMessage(display: "/dev/ttyUSB0", device: "/dev/ttyUSB0", holders: [])
        XCTAssertTrue(unknown.contains("fuser -v /dev/ttyUSB0"), unknown)

        XCTAssertNotNil(SerialPortDiagnostics.bluetoothUARTWarning(device: "/dev/ttyAMA0", resolve: pi))
        XCTAssertNil(SerialPortDiagnostics.bluetoothUARTWarning(device: "/dev/ttyS0", resolve: pi))
        XCTAssertEqual(Backoff().delay(afterFailures: 1), 0.5)
        XCTAssertEqual((1...7).map { Backoff().delay(afterFailures: $0) }, [0.5, 1, 2, 4, 8, 10, 10])
    }

    func testHolderScanFindsThisProcess() throws {
        let pty = try Pty()
        let fd = osh_open(pty.slave, O_RDWR | O_NOCTTY | O_NONBLOCK, 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        let holders = SerialPortDiagnostics.holders(of: SerialPortDiagnostics.resolve(pty.slave)!)
        XCTAssertEqual(holders.map(\.pid), [getpid()])
        XCTAssertTrue(holders[0].confirmed)
    }

    func testAnotherProcessReadingThePortIsNamedEvenWithoutALock() throws {
        // A plain reader (as gpsd or minicom would be when we run as root): no flock, no TIOCEXCL.
        let loop = try EventLoop()
        let pty = try Pty()
        let link = dir + "/gps0"
        point(link, to: pty.slave)
        let fd = osh_open(pty.slave, O_RDWR | O_NOCTTY, 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sleep")
        child.arguments = ["30"]
        child.standardInput = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        try child.run()
        defer { child.terminate(); child.waitUntilExit() }
        child.standardInput = nil
        let source = SerialSource(
            loop: loop, path: link, baud: 9600, onData: { _ in }, isConfirmed: { false },
            onReset: {}, onState: { _ in })
        source.start()
        guard case .blocked(let why) = source.state else { return XCTFail("\(source.state)") }
        XCTAssertTrue(why.contains("in use by sleep (pid \(child.processIdentifier))"), why)
        source.stop()
    }
}
