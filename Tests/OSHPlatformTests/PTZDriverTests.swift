import OSHCore
import OSHPlatform
import XCTest
import OSHSimulation

/// The PCA9685 driver against the simulated chip (the I²C mocking seam).
final class PTZDriverTests: XCTestCase {
    func testPrescaleAndCountsFromTheDatasheet() {
        // 25 MHz / (4096 × 50 Hz) = 122.07 → 122 − 1.
        XCTAssertEqual(PCA9685Math.prescale(frequency: 50), 121)
        XCTAssertEqual(PCA9685Math.prescale(frequency: 200), 30)  // the power-on 0x1E
        XCTAssertEqual(PCA9685Math.prescale(frequency: 1526), 3)
        XCTAssertEqual(PCA9685Math.prescale(frequency: 5000), 3, "the chip cannot go below 3")
        XCTAssertEqual(PCA9685Math.prescale(frequency: 10), 255)
        XCTAssertEqual(PCA9685Math.frequency(prescale: 121), 50.03, accuracy: 0.01)
        XCTAssertEqual(PCA9685Math.microsPerCount(prescale: 121), 4.88, accuracy: 1e-9)
        XCTAssertEqual(PCA9685Math.counts(pulseMicros: 1500, prescale: 121), 307)
        XCTAssertEqual(PCA9685Math.counts(pulseMicros: 1e9, prescale: 121), 4095)
        XCTAssertEqual(PCA9685Math.counts(pulseMicros: -5, prescale: 121), 0)
        XCTAssertEqual(PCA9685Math.ledOnL(channel: 15), 0x42)
    }

    func testInitSequenceIsSleepPrescaleModeWakeWaitRestart() throws {
        let bus = SimulatedI2CBus()
        let chip = SimulatedPCA9685()
        bus.attach(chip, at: 0x40)
        var writesBeforePause: [Int] = []
        let pwm = PCA9685(
            bus: bus,
            pause: { s in
                XCTAssertEqual(s, 0.0005)
                writesBeforePause.append(chip.writes.count)
            })
        try pwm.configure(frequency: 50)
        XCTAssertEqual(chip.writes.map(\.register), [0x00, 0xFE, 0x01, 0x00, 0x00])
        XCTAssertEqual(chip.writes.map(\.value), [0x31, 121, 0x04, 0x21, 0xA1])
        XCTAssertEqual(writesBeforePause, [4], "500 µs between waking the oscillator and RESTART")
        XCTAssertEqual(chip.ignoredPrescaleWrites, 0)
        XCTAssertEqual(chip.prescale, 121)
        XCTAssertFalse(chip.isAsleep)
        XCTAssertEqual(chip.frequency, 50.03, accuracy: 0.01)
        XCTAssertEqual(pwm.prescale, 121)
        // Channels stay fully off until set.
        XCTAssertNil(chip.pulseMicros(channel: 0))
        XCTAssertNil(try pwm.readCounts(channel: 0))

        try pwm.setPulse(channel: 3, micros: 1500)
        // One 5-byte transaction per channel update (auto-increment on).
        XCTAssertEqual(bus.trace.last?.written, [0x12, 0, 0, 0x33, 0x01])
        XCTAssertEqual(chip.channel(3).off, 307)
        XCTAssertEqual(try XCTUnwrap(chip.pulseMicros(channel: 3)), 1498.16, accuracy: 0.01)
        XCTAssertEqual(try pwm.readCounts(channel: 3), 307)
        try pwm.allOff()
        XCTAssertNil(chip.pulseMicros(channel: 3))
        XCTAssertEqual(chip.readRegister(0xFD), 0, "ALL_LED registers read back as 0")
    }

    func testSimulatedChipFollowsTheDatasheet() throws {
        let bus = SimulatedI2CBus()
        let chip = SimulatedPCA9685()
        bus.attach(chip, at: 0x41)
        // Awake chip: PRE_SCALE ignores writes.
        try bus.writeRegister(0x41, 0x00, 0x01)
        try bus.writeRegister(0x41, 0xFE, 121)
        XCTAssertEqual(chip.prescale, 0x1E)
        XCTAssertEqual(chip.ignoredPrescaleWrites, 1)
        // Without AI a burst lands in one register.
        try [UInt8(0x06), 1, 2, 3].withUnsafeBytes {
            try bus.transfer(address: 0x41, write: $0, read: UnsafeMutableRawBufferPointer(start: nil, count: 0))
        }
        XCTAssertEqual(chip.registers[0x06], 3)
        XCTAssertEqual(chip.registers[0x07], 0)
        // Sleeping with PWM running sets RESTART; writing RESTART clears it.
        try bus.writeRegister(0x41, 0x08, 0x00)
        try bus.writeRegister(0x41, 0x09, 0x01)  // channel 0 OFF at 256: running
        try bus.writeRegister(0x41, 0x00, 0x11)
        XCTAssertEqual(try bus.readRegister(0x41, 0x00) & 0x80, 0x80)
        XCTAssertNil(chip.pulseMicros(channel: 0), "no output while asleep")
        try bus.writeRegister(0x41, 0x00, 0x01)
        try bus.writeRegister(0x41, 0x00, 0x81)
        XCTAssertEqual(try bus.readRegister(0x41, 0x00) & 0x80, 0)
        XCTAssertNotNil(chip.pulseMicros(channel: 0))
        chip.powerOnReset()
        XCTAssertEqual(chip.registers[0], 0x11)
        XCTAssertTrue(chip.channel(0).fullOff)
    }

    func testAbsentChipIsReportedWithBusAndAddress() {
        let bus = SimulatedI2CBus()
        let pwm = PCA9685(bus: bus, pause: { _ in })
        XCTAssertThrowsError(try pwm.configure(frequency: 50)) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .noAcknowledge)
            XCTAssertTrue("\(e)".contains("0x40"), "\(e)")
        }
    }
}
