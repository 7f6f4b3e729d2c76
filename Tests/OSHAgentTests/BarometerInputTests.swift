import OSHAgent
import OSHCore
import OSHPlatform
import XCTest
import OSHSimulation

/// The `barometer` output's input: simulated chips through the real drivers on the loop.
final class BarometerInputTests: XCTestCase {
    /// Runs the loop until `done` (or `timeout` s): the two shared cores may delay timers.
    private func run(_ loop: EventLoop, timeout: Double = 3, until done: () -> Bool) throws {
        let end = EventLoop.deadline(after: timeout)
        while !done() && EventLoop.deadline(after: 0) < end { try loop.run(until: EventLoop.deadline(after: 0.01)) }
    }

    /// relativeAltitude is 0 at the first good sample and follows the pressure; a chip that starts
    /// failing mid-run pauses (no samples), is reopened with backoff and resumes, keeping its reference.
    func testSamplesAltitudeAndRetryAfterBusErrors() throws {
        let loop = try EventLoop()
        let bus = SimulatedI2CBus(recordsTrace: false)
        var hPa = 1000.0
        try SimulatedBarometerBoard.attach(to: bus, chip: "BMP280", address: 0x77) { (hPa, 20) }
        var got: [(t: Double, p: Double, alt: Double)] = []
        var states: [SensorPoller.State] = []
        let input = try BarometerInput(
            loop: loop, bus: bus, settings: BarometerSettings(chip: "auto", rateHz: 50),
            backoff: Backoff(initial: 0.05, maximum: 0.1)
        ) { t, s in got.append((t, s.pressure, s.relativeAltitude)) }
        input.poller.onStateChange = { states.append($0) }
        XCTAssertEqual(input.driver.identity.name, "BMP280")
        XCTAssertEqual(input.driver.address, 0x77)
        try input.start()
        try run(loop) { got.count > 2 }
        XCTAssertGreaterThan(got.count, 2)
        XCTAssertEqual(got[0].alt, 0, "the first good sample is the reference")
        XCTAssertEqual(got[0].p, 1000, accuracy: 0.01)
        hPa = 999  // ≈ 8.4 m up
        try run(loop) { (got.last?.alt ?? 0) > 1 }
        XCTAssertEqual(got.last?.alt ?? 0, 8.42, accuracy: 0.1)
        XCTAssertTrue(got.map(\.t) == got.map(\.t).sorted())

        bus.inject(.ioError, at: 0x77)
        try run(loop) { if case .retrying? = states.last { return true } else { return false } }
        guard case .retrying(_, _, let error)? = states.last else { return XCTFail("\(states)") }
        XCTAssertTrue(error.contains("bus error"), error)
        let during = got.count
        try loop.run(until: EventLoop.deadline(after: 0.1))
        XCTAssertEqual(got.count, during, "no samples while the chip fails")
        bus.clearFaults(at: 0x77)
        hPa = 1000
        try run(loop) { states.last == .running && got.count > during + 2 }
        XCTAssertEqual(states.last, .running)
        XCTAssertEqual(input.poller.reopens, 1)
        XCTAssertGreaterThan(got.count, during + 2)
        XCTAssertEqual(got.last?.alt ?? 99, 0, accuracy: 0.05, "the reference survives the reopen")
        input.stop()
    }

    /// A chip reset behind the agent's back answers but never converts: after a few empty reads it
    /// counts as failing, and the poller's reopen configures it again.
    func testChipResetMidRunIsReconfigured() throws {
        let loop = try EventLoop()
        let bus = SimulatedI2CBus(recordsTrace: false)
        try SimulatedBarometerBoard.attach(to: bus, chip: "BMP280", address: 0x76) { (1000, 20) }
        var count = 0
        let input = try BarometerInput(
            loop: loop, bus: bus, settings: BarometerSettings(chip: "BMP280", rateHz: 100),
            backoff: Backoff(initial: 0.02, maximum: 0.05)
        ) { _, _ in count += 1 }
        try input.start()
        try run(loop) { count > 2 }
        try bus.writeRegister(0x76, 0xE0, 0xB6)
        try run(loop) { input.skipped > 0 }
        let during = count
        XCTAssertGreaterThan(input.skipped, 0)
        try run(loop) { input.poller.reopens == 1 && count > during + 3 }
        XCTAssertEqual(input.poller.reopens, 1)
        XCTAssertGreaterThan(count, during + 3)
        input.stop()
    }

    func testAbsentChipThrowsAbsent() throws {
        let loop = try EventLoop()
        XCTAssertThrowsError(try BarometerInput(loop: loop, bus: SimulatedI2CBus(), settings: BarometerSettings()) { _, _ in }) { e in
            XCTAssertTrue((e as? I2CError)?.isAbsent ?? false, "\(e)")
        }
    }

    /// A chip named in the configuration that does not answer at start (it powers up late, a
    /// jumper was loose) is looked for on the backoff and streamed once it answers, with its
    /// calibration read then; before, it was left out until the agent restarted.
    func testANamedChipThatComesLateIsFoundAndStreamed() throws {
        let loop = try EventLoop()
        let bus = SimulatedI2CBus(recordsTrace: false)
        let capture = LogCapture()
        defer { capture.stop() }
        var count = 0
        let input = try BarometerInput(
            loop: loop, bus: bus, settings: BarometerSettings(chip: "BME280", rateHz: 50),
            backoff: Backoff(initial: 0.05, maximum: 0.1)
        ) { _, _ in count += 1 }
        XCTAssertNotNil(input.absentAtStart)
        try input.start()
        try run(loop, timeout: 0.5) { false }
        XCTAssertEqual(count, 0)
        guard case .retrying = input.poller.state else { return XCTFail("\(input.poller.state)") }
        // Plugged in at its second address: the reopen looks at every address the chip may have.
        try SimulatedBarometerBoard.attach(to: bus, chip: "BME280", address: 0x77) { (1005, 22) }
        try run(loop) { count > 2 }
        XCTAssertGreaterThan(count, 2)
        XCTAssertEqual(input.driver.address, 0x77)
        XCTAssertEqual(input.lastReading?.pressureHPa ?? 0, 1005, accuracy: 0.01)
        XCTAssertEqual(capture.count("no chip answered"), 1, "said once: \(capture.lines)")
        XCTAssertEqual(capture.count("back; its outputs resume"), 1, "\(capture.lines)")
        input.stop()
    }

    /// A pressure no barometer reads is dropped, counted and said once with its value.
    func testAnImplausiblePressureIsCountedAndSaidOnce() throws {
        let loop = try EventLoop()
        let bus = SimulatedI2CBus(recordsTrace: false)
        let chip = try XCTUnwrap(try SimulatedBarometerBoard.attach(to: bus, chip: "BMP280") { (1000, 20) } as? SimulatedBMx280)
        let capture = LogCapture()
        defer { capture.stop() }
        var count = 0
        let input = try BarometerInput(loop: loop, bus: bus, settings: BarometerSettings(chip: "BMP280", rateHz: 50)) { _, _ in count += 1 }
        try input.start()
        try run(loop) { count > 1 }
        // An ADC code far below any real one: the compensation gives a pressure way above 1300 hPa.
        chip.fixedRaw = BMx280Raw(adcT: 519_888, adcP: 40_000)
        try run(loop) { input.implausible > 2 }
        XCTAssertGreaterThan(input.implausible, 2)
        let high = try XCTUnwrap(
            input.driver.calibrationBytes.isEmpty
                ? nil
                : BarometerDecode.decode(
                    chip: "BMP280", calibration: input.driver.calibrationBytes, burst: input.driver.lastBurst
                ).pressureHPa)
        XCTAssertGreaterThan(high, 1300)
        let said = capture.lines.filter { $0.contains("which no barometer on Earth reads") }
        XCTAssertEqual(said.count, 1, "\(capture.lines)")
        XCTAssertTrue(said.first?.contains("read \(high) hPa") ?? false, said.first ?? "")
        input.stop()
    }

    /// `probe --dump`'s barometer part finds each chip, and its bytes decode to what the driver read.
    func testProbeDumpsBytesThatDecodeToTheReading() throws {
        let bus = SimulatedI2CBus(recordsTrace: false)
        try SimulatedBarometerBoard.attach(to: bus, chip: "BME280", address: 0x76) { (987.65, 23.4) }
        try SimulatedBarometerBoard.attach(to: bus, chip: "BMP388", address: 0x77) { (1001.5, 19) }
        try SimulatedBarometerBoard.attach(to: bus, chip: "LPS22HB", address: 0x5D) { (1013.25, 25) }
        let found = probeBarometers(bus: bus)
        XCTAssertEqual(found.map(\.identity.name), ["BME280", "BMP388", "LPS22HB"])
        XCTAssertEqual(found.map(\.address), [0x76, 0x77, 0x5D])
        for f in found {
            XCTAssertNil(f.error)
            let again = try BarometerDecode.decode(chip: f.identity.name, calibrationHex: f.calibrationHex, rawHex: f.rawHex)
            XCTAssertEqual(again, f.decoded)
        }
        XCTAssertEqual(found[0].decoded?.pressureHPa ?? 0, 987.65, accuracy: 0.01)
        XCTAssertEqual(found[0].decoded?.humidityPercent ?? 0, 45, accuracy: 0.05)
        XCTAssertEqual(found[1].decoded?.celsius ?? 0, 19, accuracy: 0.001)
        XCTAssertEqual(found[2].rawHex, "00543fc409")
        XCTAssertEqual(probeBarometers(bus: SimulatedI2CBus()).count, 0)
    }
}
