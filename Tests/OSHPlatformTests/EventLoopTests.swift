import CShim
import Glibc
import OSHPlatform
import Foundation
import XCTest

final class EventLoopTests: XCTestCase {
    func testPeriodicTimerFiresOnScheduleAndReportsMissedTicks() throws {
        let loop = try EventLoop()
        var ticks: [UInt64] = []
        let t = try loop.addTimer(firstAt: EventLoop.deadline(after: 0.01), interval: 10_000_000) { n in ticks.append(n) }
        try loop.run(until: EventLoop.deadline(after: 0.055))
        XCTAssertGreaterThanOrEqual(ticks.reduce(0, +), 4)
        // Block the loop for 50 ms: the next wake-up reports the ticks it missed in one call.
        usleep(50_000)
        ticks.removeAll()
        try loop.runOnce(timeoutMs: 100)
        XCTAssertGreaterThanOrEqual(ticks.first ?? 0, 4)
        loop.cancel(t)
        XCTAssertEqual(loop.sourceCount, 0)
    }

    func testRunForUntilStopsWhenTheConditionHoldsOrTimeRunsOut() throws {
        let loop = try EventLoop()
        var fired = false
        try loop.addTimer(firstAt: EventLoop.deadline(after: 0.05), interval: 0) { _ in fired = true }
        XCTAssertTrue(try loop.run(for: 5) { fired }, "a timer's effect ends the wait")
        let t0 = Clock.monotonicNanoseconds()
        XCTAssertFalse(try loop.run(for: 0.1) { false })
        XCTAssertGreaterThanOrEqual(Clock.monotonicNanoseconds() - t0, 100_000_000, "waited the whole time")
    }

    func testOneShotTimerAndRearm() throws {
        let loop = try EventLoop()
        var fired = 0
        let t = try loop.addTimer(firstAt: EventLoop.deadline(after: 0.005)) { _ in fired += 1 }
        try loop.run(until: EventLoop.deadline(after: 0.03))
        XCTAssertEqual(fired, 1)
        try loop.rearm(t, at: EventLoop.deadline(after: 0.005))
        try loop.run(until: EventLoop.deadline(after: 0.03))
        XCTAssertEqual(fired, 2)
        loop.disarm(t)
        try loop.run(until: EventLoop.deadline(after: 0.02))
        XCTAssertEqual(fired, 2)
    }

    func testStaleEventsAfterRemovalAreIgnored() throws {
        let loop = try EventLoop()
        var p1: [Int32] = [0, 0], p2: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&p1), 0)
        XCTAssertEqual(pipe(&p2), 0)
        defer { for fd in p1 + p2 { close(fd) } }
        // Both pipes are readable in the same epoll batch, and each handler removes the other's
        // registration: whichever runs first, the other's queued event is stale and must not run.
        var calls = 0
        var r1: EventLoop.Registration?, r2: EventLoop.Registration?
        r1 = try loop.add(fd: p1[0], events: .readable) { _ in
            calls += 1; if let r = r2 { loop.remove(r) }
        }
        r2 = try loop.add(fd: p2[0], events: .readable) { _ in
            calls += 1; if let r = r1 { loop.remove(r) }
        }
        _ = write(p1[1], "x", 1)
        _ = write(p2[1], "y", 1)
        try loop.runOnce(timeoutMs: 100)
        XCTAssertEqual(calls, 1)
        XCTAssertEqual(loop.sourceCount, 1)
    }

    func testSignalsArriveOnTheLoop() throws {
        let loop = try EventLoop()
        var got: [Int32] = []
        try loop.onSignals([SIGUSR2]) { sig in
            got.append(sig); loop.stop()
        }
        raise(SIGUSR2)
        try loop.run(until: EventLoop.deadline(after: 1))
        XCTAssertEqual(got, [SIGUSR2])
    }

    func testWakeFromAnotherThread() throws {
        let loop = try EventLoop()
        var woken = 0
        try loop.onWake {
            woken += 1; loop.stop()
        }
        let waker = loop.waker
        let thread = Thread {
            usleep(10_000); waker.wake()
        }
        thread.start()
        try loop.run(until: EventLoop.deadline(after: 2))
        XCTAssertEqual(woken, 1)
    }
}
