import Foundation
import XCTest
@testable import OSHAgent
import OSHCore
import OSHPlatform
import OSHSimulation

final class LEDStatusTests: XCTestCase {
    private let ms: UInt64 = 1_000_000

    /// A StatusLED on a simulated line with a hand-turned clock: `run(to:)` ticks every 50 ms.
    private final class Rig {
        var t: UInt64 = 1_000_000_000
        var state: LEDState = .starting
        let line: SimulatedGPIOLine
        var led: StatusLED!
        init(activeLow: Bool = false) {
            line = SimulatedGPIOLine(initialHigh: activeLow)
            line.now = { [unowned self] in self.t }
            led = StatusLED(line: line, activeLow: activeLow, now: { [unowned self] in self.t }, state: { [unowned self] in self.state })
        }
        func run(ms: UInt64) {
            for _ in 0..<(ms / 50) { led.update(at: t); t += 50_000_000 }
        }
        /// Transitions as (ms since `origin`, level).
        func edges(since origin: UInt64) -> [String] {
            line.transitions.filter { $0.time >= origin }.map { "\(($0.time - origin) / 1_000_000):\($0.high ? 1 : 0)" }
        }
    }

    func testStateChangesRestartThePatternAtOnce() {
        let r = Rig()
        let t0 = r.t
        r.run(ms: 2000)
        XCTAssertEqual(r.edges(since: t0), ["0:1", "500:0", "1000:1", "1500:0"])
        r.state = .nodeUnreachable
        let t1 = r.t
        r.run(ms: 400)
        XCTAssertEqual(r.edges(since: t1), ["0:1", "100:0", "200:1", "300:0"])
        r.state = .streaming
        let t2 = r.t
        r.run(ms: 1000)
        XCTAssertEqual(r.edges(since: t2), ["0:1"])
    }

    func testBatchesBlipAtMostOncePerSecond() {
        let r = Rig()
        r.state = .streaming
        r.run(ms: 100)
        let t0 = r.t
        for _ in 0..<8 { r.led.activity(); r.run(ms: 250) }  // a batch every 250 ms for 2 s
        XCTAssertEqual(r.edges(since: t0), ["0:0", "100:1", "1000:0", "1100:1"])
    }

    /// A refused configuration: three blinks on the real loop, then the LED goes dark before exit.
    func testAConfigErrorBlinksThreeTimesThenGoesDark() throws {
        let loop = try EventLoop(time: .virtual())
        let line = SimulatedGPIOLine(now: { loop.now })
        let t0 = loop.now
        try StatusLED.showConfigError(line: line, activeLow: false, loop: loop, seconds: 0.9)
        XCTAssertEqual(line.transitions.map { $0.high ? 1 : 0 }, [1, 0, 1, 0, 1, 0], "three blinks, then off")
        XCTAssertFalse(line.level)
        let ms = line.transitions.map { ($0.time &- t0) / self.ms }
        XCTAssertEqual(ms[1], 150, "a 150 ms blink")
        XCTAssertEqual(ms[2], 300)
    }

    func testIdentifyOverridesThenReturns() {
        let r = Rig()
        r.state = .streaming
        r.run(ms: 100)
        let t0 = r.t
        r.led.identify(seconds: 0.3)
        r.run(ms: 500)
        XCTAssertEqual(
            r.edges(since: t0), ["50:0", "100:1", "150:0", "200:1", "250:0", "300:1"],
            "rapid blinking for 0.3 s, then back to solid")
        XCTAssertFalse(r.led.isIdentifying)
    }

    func testActiveLowInvertsAndStopTurnsItOff() {
        let r = Rig(activeLow: true)
        let t0 = r.t
        r.run(ms: 1000)
        XCTAssertEqual(r.edges(since: t0), ["0:0", "500:1"], "on = low")
        r.led.stop()
        XCTAssertTrue(r.line.level, "off = high when active low")
    }

    func testAFailingLineIsSurvived() {
        let r = Rig()
        r.line.failNext = GPIOError(.other, chip: "sim", line: 0, errno: 5, operation: "setting")
        Log.muted = true
        defer { Log.muted = false }
        r.run(ms: 1000)
        XCTAssertEqual(r.line.transitions.count, 2, "the next tick drives it again")
    }

    /// On a real event loop: the timer ticks and edges land near their 50 ms grid.
    func testTicksOnTheEventLoop() throws {
        // Virtual time: the LED's clock is the loop's, so the edges land exactly on the pattern.
        let loop = try EventLoop(time: .virtual())
        let line = SimulatedGPIOLine(now: { loop.now })
        let led = StatusLED(line: line, now: { loop.now }, state: { .nodeUnreachable })
        let t0 = loop.now
        try led.start(on: loop)
        try loop.run(until: t0 + 650 * ms)
        led.stop()
        let ons = line.transitions.filter { $0.high }.map { ($0.time - t0) / ms }
        // Fast blink: on at 0, 200, 400, 600 ms.
        XCTAssertEqual(ons, [0, 200, 400, 600])
        XCTAssertFalse(line.level)
        XCTAssertEqual(loop.sourceCount, 0, "stop() removes the timer")
    }

    /// Streaming with a request a second: the LED wakes on the 250 ms grid the flush shares and
    /// once more per blip's end — not every 50 ms.
    func testASteadyLEDWakesOnlyForEdgesAndTheSharedGrid() throws {
        let loop = try EventLoop(time: .virtual())
        let line = SimulatedGPIOLine(now: { loop.now })
        var asked: [UInt64] = []
        let led = StatusLED(
            line: line, now: { loop.now },
            state: {
                asked.append(loop.now); return .streaming
            })
        try led.start(on: loop)
        try loop.addAlignedTimer(every: 250 * ms, runsLast: true) { _ in led.activity() }
        let t0 = loop.now
        try loop.run(until: t0 + 10_000 * ms)
        let transitions = line.transitions
        led.stop()
        let instants = Set(asked.filter { $0 > t0 })
        let offGrid = instants.filter { $0 % (250 * ms) != 0 }
        XCTAssertLessThanOrEqual(offGrid.count, 11, "one wake-up per blip's end: \(offGrid.count)")
        XCTAssertLessThanOrEqual(instants.count, 52, "\(instants.count) wake-ups in 10 s (a 50 ms ticker: 200)")
        let offs = transitions.filter { !$0.high && $0.time > t0 }.count
        XCTAssertEqual(offs, 10, "a blip a second")
        let blips = zip(transitions, transitions.dropFirst()).filter { !$0.0.high && $0.1.high && $0.0.time > t0 }
        XCTAssertTrue(blips.allSatisfy { $0.1.time - $0.0.time == 100 * ms }, "each blip 100 ms dark")
    }

    func testNoLEDConfiguredIsNil() throws {
        let loop = try EventLoop()
        XCTAssertNil(StatusLED.open(LEDSettings(chip: ""), loop: loop, state: { .starting }))
        Log.muted = true
        defer { Log.muted = false }
        // No GPIO chip here: a warning, no LED, and the agent goes on.
        if GPIOChips.present().isEmpty {
            XCTAssertNil(StatusLED.open(LEDSettings(), loop: loop, state: { .starting }))
        }
    }

    /// `osh-edge led` on a machine without GPIO: exit 1 with the chip named, no crash; bad options exit 2.
    func testLEDCommandErrors() throws {
        let exe = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("osh-edge")
        func run(_ args: [String]) throws -> (Int32, String) {
            let p = Process()
            p.executableURL = exe
            p.arguments = args
            let err = Pipe()
            p.standardError = err
            p.standardOutput = FileHandle.nullDevice
            try p.run()
            let e = err.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return (p.terminationStatus, String(decoding: e, as: UTF8.self))
        }
        if GPIOChips.present().isEmpty {
            let (status, err) = try run(["led", "--chip", "pinctrl-rp1", "--line", "17", "--seconds", "1"])
            XCTAssertEqual(status, 1, err)
            XCTAssertTrue(err.contains("GPIO line 17 of pinctrl-rp1: no such GPIO chip"), err)
        }
        XCTAssertEqual(try run(["led", "--line", "-3"]).0, 2)
        XCTAssertEqual(try run(["led", "--show", "disco"]).0, 2)
        XCTAssertEqual(try run(["led", "--chip", "/etc/passwd"]).0, 2)
        // --config: a refused file without a usable [led] section names the file and shows nothing.
        let conf = NSTemporaryDirectory() + "osh-led-\(UUID().uuidString).conf"
        try "[server.main\nurl = 3\n".write(toFile: conf, atomically: false, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: conf) }
        let (status, err) = try run(["led", "--config", conf, "--show", "configError", "--seconds", "1"])
        XCTAssertEqual(status, 1, err)
        XCTAssertTrue(err.contains("\(conf) has no usable [led] section"), err)
        XCTAssertEqual(try run(["led", "--config", conf + ".missing"]).0, 1)
    }
}
