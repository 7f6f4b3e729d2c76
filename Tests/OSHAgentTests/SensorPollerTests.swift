import OSHCore
import XCTest
@testable import OSHAgent
import OSHPlatform
import OSHSimulation

/// On a virtual loop: the poller's timers fire as the test moves time, without waiting for it.
final class SensorPollerTests: XCTestCase {
    /// A device on the simulated bus that starts failing mid-run: polls stop, it is reopened with
    /// backoff, and polling resumes once the bus answers again.
    func testFailingDevicePausesAndComesBack() throws {
        let loop = try EventLoop(time: .virtual())
        let bus = SimulatedI2CBus(recordsTrace: false)
        bus.attach(RegisterMapDevice(registers: [0x75: 0x71]), at: 0x68)
        var samples = 0
        var states: [SensorPoller.State] = []
        let poller = SensorPoller(
            loop: loop, name: "MPU9250 at 0x68", rate: 100, backoff: Backoff(initial: 0.05, maximum: 0.1),
            reopen: { _ = try bus.readRegister(0x68, 0x75) },
            poll: { _ in
                _ = try bus.readRegister(0x68, 0x3B); samples += 1
            })
        poller.onStateChange = { states.append($0) }
        try poller.start()
        try loop.run(until: loop.deadline(after: 0.1))
        XCTAssertGreaterThan(samples, 3)
        bus.inject(.ioError, at: 0x68)
        try loop.run(until: loop.deadline(after: 0.25))
        let during = samples
        guard case .retrying(_, _, let error)? = states.last else { return XCTFail("\(states)") }
        XCTAssertTrue(error.contains("bus error"), error)
        try loop.run(until: loop.deadline(after: 0.15))
        XCTAssertEqual(samples, during, "no samples while the chip fails")
        bus.clearFaults(at: 0x68)
        try loop.run(until: loop.deadline(after: 0.3))
        XCTAssertEqual(states.last, .running)
        XCTAssertGreaterThan(samples, during + 3)
        XCTAssertEqual(poller.reopens, 1)
        poller.stop()
    }

    /// An outage is logged by the reconnect policy: its first failure with the retry, a
    /// different reason once, the same reason again not at all, the return once.
    func testAnOutageIsLoggedOncePerReason() throws {
        let loop = try EventLoop(time: .virtual())
        var reason = "bus error"
        var failing = true
        let log = LogCapture()
        defer { log.stop() }
        let poller = SensorPoller(
            loop: loop, name: "BMP280", rate: 100, backoff: Backoff(initial: 0.05, maximum: 0.05),
            failuresBeforeReopen: 1,
            reopen: { if failing { throw I2CError(.unexpectedResponse, bus: 1, address: 0x76, operation: reason) } },
            poll: { _ in if failing { throw I2CError(.unexpectedResponse, bus: 1, address: 0x76, operation: reason) } })
        try poller.start()
        try loop.run(until: loop.deadline(after: 0.3))
        reason = "no conversion"
        try loop.run(until: loop.deadline(after: 0.3))
        failing = false
        try loop.run(until: loop.deadline(after: 0.2))
        XCTAssertEqual(poller.state, .running)
        let lines = log.lines.filter { $0.hasPrefix("BMP280") }
        XCTAssertEqual(lines.count, 3, "\(lines)")
        XCTAssertTrue(lines[0].contains("bus error") && lines[0].contains("retrying in"), lines[0])
        XCTAssertTrue(lines[1].contains("no conversion"), lines[1])
        XCTAssertTrue(lines[2].contains("back"), lines[2])
        poller.stop()
    }

    /// One bad transfer in a row of good ones does not take the device down.
    func testIsolatedErrorIsTolerated() throws {
        let loop = try EventLoop(time: .virtual())
        let bus = SimulatedI2CBus(recordsTrace: false)
        bus.attach(RegisterMapDevice(), at: 0x76)
        let poller = SensorPoller(
            loop: loop, name: "BMP280", rate: 100,
            reopen: {}, poll: { _ in _ = try bus.readRegister(0x76, 0xF7) })
        try poller.start()
        bus.inject(.ioError, at: 0x76, times: 1)
        try loop.run(until: loop.deadline(after: 0.1))
        XCTAssertEqual(poller.state, .running)
        XCTAssertEqual(poller.failedPolls, 1)
        poller.stop()
    }
}
