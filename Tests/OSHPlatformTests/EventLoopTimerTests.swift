import CShim
import Glibc
@testable import OSHPlatform
import XCTest

/// The loop's deadline heap: one timerfd for all timers, deadline order, cancel/re-arm from
/// handlers, and virtual time for tests that must not wait on the wall clock.
final class EventLoopTimerTests: XCTestCase {
    private let ms: UInt64 = 1_000_000

    func testTimersFireInDeadlineOrderThenInTheOrderTheyWereArmed() throws {
        for time in [EventLoop.TimeSource.virtual(), .monotonic] {
            let loop = try EventLoop(time: time)
            var order: [String] = []
            let t0 = loop.now + 20 * ms
            for (name, offset) in [("a", 3), ("b", 1), ("c", 2), ("d", 1), ("e", 0)] {
                try loop.addTimer(firstAt: t0 + UInt64(offset) * ms) { _ in order.append(name) }
            }
            try loop.run(until: t0 + 10 * ms)
            XCTAssertEqual(order, ["e", "b", "d", "c", "a"], "\(time)")
            XCTAssertEqual(loop.armedTimerCount, 0, "one-shot timers leave the heap when they fire")
            XCTAssertEqual(loop.sourceCount, 5, "until cancelled they stay registered (re-armable)")
        }
    }

    func testAHandlerMayCancelAnotherDueTimerOrItself() throws {
        let loop = try EventLoop(time: .virtual())
        var fired: [String] = []
        let at = loop.deadline(after: 1)
        var second: EventLoop.Timer?
        try loop.addTimer(firstAt: at) { _ in
            fired.append("first")
            if let s = second { loop.cancel(s) }
        }
        second = try loop.addTimer(firstAt: at) { _ in fired.append("second") }
        var periodic: EventLoop.Timer?
        periodic = try loop.addTimer(firstAt: at, interval: 100 * ms) { _ in
            fired.append("periodic")
            if let p = periodic { loop.cancel(p) }
        }
        try loop.advance(by: 5)
        XCTAssertEqual(fired, ["first", "periodic"])
        XCTAssertFalse(loop.isRegistered(second!.registration))
        XCTAssertFalse(loop.isRegistered(periodic!.registration))
        XCTAssertEqual(loop.sourceCount, 1)
    }

    func testRearmAndDisarmFromInsideAndOutsideHandlers() throws {
        let loop = try EventLoop(time: .virtual())
        var times: [UInt64] = []
        let t0 = loop.now
        var timer: EventLoop.Timer?
        // A one-shot timer that re-arms itself 300 ms later: a periodic timer by hand.
        timer = try loop.addTimer(firstAt: t0 + 100 * ms) { _ in
            times.append((loop.now - t0) / self.ms)
            if let t = timer { try? loop.rearm(t, at: loop.now + 300 * self.ms) }
        }
        try loop.advance(by: 1)
        XCTAssertEqual(times, [100, 400, 700, 1000])
        loop.disarm(timer!)
        try loop.advance(by: 1)
        XCTAssertEqual(times.count, 4, "disarmed")
        XCTAssertTrue(loop.isRegistered(timer!.registration), "disarmed, not cancelled")
        try loop.rearm(timer!, at: loop.now + 50 * ms, interval: 0)
        try loop.advance(by: 0.05)
        XCTAssertEqual(times.last, 2050)
        // Re-armed at a time already passed from its own handler: it runs again at the next
        // turn, not in a loop inside this one.
        var spins = 0
        var spinner: EventLoop.Timer?
        spinner = try loop.addTimer(firstAt: loop.now) { _ in
            spins += 1
            if let s = spinner { try? loop.rearm(s, at: 1) }
        }
        loop.disarm(timer!)
        try loop.runOnce(timeoutMs: 0)
        XCTAssertEqual(spins, 1)
        try loop.runOnce(timeoutMs: 0)
        XCTAssertEqual(spins, 2)
        loop.cancel(spinner!)
    }

    func testPeriodicTicksOnTheGridAndALateLoopFiresOnceWithTheCount() throws {
        let loop = try EventLoop(time: .virtual())
        var calls: [UInt64] = []
        let t0 = loop.now
        try loop.addTimer(firstAt: t0 + 10 * ms, interval: 10 * ms) { n in calls.append(n) }
        try loop.advance(by: 0.1)
        XCTAssertEqual(calls, [UInt64](repeating: 1, count: 10), "a punctual loop: each tick once")
        // The real clock, late by 55 ms: one call that says 5 ticks came due, none back-filled.
        let real = try EventLoop()
        var late: [UInt64] = []
        let start = real.now
        try real.addTimer(firstAt: start + 10 * ms, interval: 10 * ms) { n in late.append(n) }
        usleep(55_000)
        try real.runOnce(timeoutMs: 100)
        XCTAssertEqual(late.count, 1)
        XCTAssertGreaterThanOrEqual(late.first ?? 0, 5)
    }

    func testAlignedTimersShareTheirInstantsAndTheLastRunsAfterTheRest() throws {
        let loop = try EventLoop(time: .virtual(startingAt: 1_000_000_000 + 37 * ms))
        var fired: [(name: String, at: UInt64)] = []
        // Armed in the "wrong" order on purpose: the flush first, then the samplers.
        try loop.addAlignedTimer(every: 250 * ms, runsLast: true) { _ in fired.append(("flush", loop.now)) }
        for (name, period) in [("imu", 100 * ms), ("health", 1000 * ms), ("baro", 1000 * ms)] {
            try loop.addAlignedTimer(every: period) { _ in fired.append((name, loop.now)) }
        }
        try loop.advance(by: 2)
        let periods = ["flush": 250 * ms, "imu": 100 * ms, "health": 1000 * ms, "baro": 1000 * ms]
        for f in fired { XCTAssertEqual(f.at % (periods[f.name] ?? 1), 0, "\(f.name) on its grid") }
        XCTAssertEqual(fired.filter { $0.name == "imu" }.count, 20)
        XCTAssertEqual(fired.filter { $0.name == "flush" }.count, 8)
        // 20 + 8 + 2 + 2 ticks at 24 instants (100 ms ∪ 250 ms grids), not 32 wake-ups.
        XCTAssertEqual(Set(fired.map(\.at)).count, 24)
        for at in Set(fired.map(\.at)) {
            let names = fired.filter { $0.at == at }.map(\.name)
            if names.contains("flush") { XCTAssertEqual(names.last, "flush", "the flush runs after the samplers: \(names)") }
        }
        // notBefore: the first grid instant at or after it.
        let late = try EventLoop(time: .virtual(startingAt: 1_000_000_000 + 37 * ms))
        var first: UInt64?
        try late.addAlignedTimer(every: 250 * ms, notBefore: late.now + 250 * ms) { _ in if first == nil { first = late.now } }
        try late.addAlignedTimer(every: 250 * ms, notBefore: 1_500_000_000) { _ in }
        try late.advance(by: 1)
        XCTAssertEqual(first, 1_500_000_000, "1.037 s + 0.25 s → the 1.5 s instant, not 1.25 s")
        XCTAssertEqual(EventLoop.nextMultiple(of: 0, after: 5), 6)
        XCTAssertEqual(EventLoop.nextMultiple(of: 10, after: 20), 30, "strictly after now")
        XCTAssertEqual(EventLoop.nextMultiple(of: UInt64.max / 2, after: UInt64.max - 3), UInt64.max - 1)
        XCTAssertEqual(EventLoop.nextMultiple(of: UInt64.max - 1, after: UInt64.max - 1), .max, "no trap at the end of the clock")
    }

    /// Counts this process's timerfds (what `ls -l /proc/PID/fd | grep -c timerfd` shows).
    private func openTimerFDs() -> Int {
        guard let dir = opendir("/proc/self/fd") else { return -1 }
        defer { closedir(dir) }
        var n = 0
        var target = [CChar](repeating: 0, count: 256)
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            let len = readlink("/proc/self/fd/" + name, &target, target.count - 1)
            guard len > 0 else { continue }
            let link = target.prefix(len).map { UInt8(bitPattern: $0) }
            if String(decoding: link, as: UTF8.self).contains("timerfd") { n += 1 }
        }
        return n
    }

    func testTenThousandTimersShareOneTimerfdAndFireInOrder() throws {
        let before = openTimerFDs()
        let loop = try EventLoop()
        var rng = SystemRandomNumberGenerator()
        let start = loop.now + 20 * ms
        var fired: [(deadline: UInt64, at: UInt64)] = []
        fired.reserveCapacity(10_000)
        for _ in 0..<10_000 {
            let d = start + UInt64.random(in: 0..<(80 * ms), using: &rng)
            try loop.addTimer(firstAt: d) { _ in fired.append((d, osh_monotonic_ns())) }
        }
        XCTAssertEqual(openTimerFDs() - before, 1, "one timerfd for the whole heap")
        XCTAssertTrue(try loop.run(for: 10) { fired.count == 10_000 })
        XCTAssertTrue(zip(fired, fired.dropFirst()).allSatisfy { $0.deadline <= $1.deadline }, "deadline order")
        XCTAssertTrue(fired.allSatisfy { $0.at >= $0.deadline }, "none early")
        withExtendedLifetime(loop) {}
    }

    func testAVirtualHourPassesInMillisecondsWithTimersAndDescriptors() throws {
        let loop = try EventLoop(time: .virtual())
        let t0 = loop.now
        var seconds = 0, minutes = 0, deadlineFired: UInt64 = 0
        try loop.addTimer(firstAt: t0 + 1_000 * ms, interval: 1_000 * ms) { _ in seconds += 1 }
        try loop.addTimer(firstAt: t0 + 60_000 * ms, interval: 60_000 * ms) { _ in minutes += 1 }
        let deadline = LoopDeadline(loop: loop) { deadlineFired = loop.now }
        try deadline.arm(after: 1800)
        // A pipe written before the hour: served on the way, through epoll, without waiting.
        var p: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&p), 0)
        defer { close(p[0]); close(p[1]) }
        var piped = 0
        try loop.add(fd: p[0], events: .readable) { _ in
            var b: UInt8 = 0
            if read(p[0], &b, 1) == 1 { piped += 1 }
        }
        _ = write(p[1], "x", 1)
        let wall = osh_monotonic_ns()
        try loop.advance(by: 3600)
        let wallMs = Double(osh_monotonic_ns() - wall) / 1e6
        XCTAssertEqual(seconds, 3600)
        XCTAssertEqual(minutes, 60)
        XCTAssertEqual(deadlineFired, t0 + 1_800_000 * ms)
        XCTAssertEqual(piped, 1)
        XCTAssertEqual(loop.now, t0 + 3_600_000 * ms)
        XCTAssertLessThan(wallMs, 2_000, "an hour of virtual time took \(wallMs) ms of wall time")
        print("EventLoopTimerTests: 1 h of virtual time (3660 timer calls) in \(wallMs) ms of wall time")
        // run(for:until:) moves virtual time too, and only as far as needed.
        var flag = false
        try loop.addTimer(firstAt: loop.deadline(after: 5)) { _ in flag = true }
        XCTAssertTrue(try loop.run(for: 10) { flag })
        XCTAssertEqual(loop.now, t0 + 3_605_000 * ms)
        XCTAssertFalse(try loop.run(for: 2) { false })
        XCTAssertEqual(loop.now, t0 + 3_607_000 * ms)
    }

    /// `runOnce` refuses to be entered from a handler with a precondition (a crash cannot be
    /// tested in-process); what it checks is `isRunning`, true exactly while handlers run.
    func testIsRunningIsTrueExactlyInsideHandlers() throws {
        let loop = try EventLoop(time: .virtual())
        var seen: [Bool] = []
        try loop.addTimer(firstAt: loop.deadline(after: 0.01)) { _ in seen.append(loop.isRunning) }
        var p: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&p), 0)
        defer { close(p[0]); close(p[1]) }
        try loop.add(fd: p[0], events: .readable) { _ in
            var b: UInt8 = 0
            _ = read(p[0], &b, 1)
            seen.append(loop.isRunning)
        }
        _ = write(p[1], "x", 1)
        XCTAssertFalse(loop.isRunning)
        try loop.advance(by: 1)
        XCTAssertEqual(seen, [true, true])
        XCTAssertFalse(loop.isRunning, "cleared after each turn")
    }
}
