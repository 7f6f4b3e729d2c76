#if canImport(Glibc)
import Glibc
#endif
import OSHCore

/// The PCA9685 16-channel 12-bit PWM driver (NXP datasheet rev. 4) as a servo controller: the
/// fetch half of the pan-tilt unit. Each call is one or two short I²C transactions, issued
/// synchronously from the event loop (a 5-byte write at 100 kHz takes ~0.5 ms).
///
/// No software reset: SWRST is a general-call (address 0x00) byte every chip on the bus may act
/// on, and the sensors share the bus. `configure` instead rewrites MODE1/MODE2/PRE_SCALE to known
/// values, which is all a reset would give us.
public final class PCA9685 {
    public static let defaultAddress: UInt8 = 0x40

    public let bus: I2CBus
    public let address: UInt8
    public let oscillator: Double
    public private(set) var prescale: UInt8 = 0x1E
    /// Waits this many seconds (the oscillator needs 500 µs after SLEEP is cleared before RESTART).
    let pause: (Double) -> Void
    private var frame = [UInt8](repeating: 0, count: 5)

    public init(
        bus: I2CBus, address: UInt8 = defaultAddress, oscillator: Double = PCA9685Math.internalOscillator,
        pause: @escaping (Double) -> Void = { s in usleep(UInt32(max(0, s) * 1e6)) }
    ) {
        self.bus = bus
        self.address = address
        self.oscillator = oscillator
        self.pause = pause
    }

    /// Brings the chip to a known state at `frequency`: asleep (PRE_SCALE is only writable in
    /// sleep), PRE_SCALE, MODE2 totem-pole, awake with auto-increment, 500 µs, RESTART so
    /// channels that were running before resume. Channel registers are left as they are: servos
    /// hold their last position across an agent restart, and the caller may read it back.
    public func configure(frequency: Double) throws {
        let m = try bus.readRegister(address, PCA9685Math.mode1)
        // EXTCLK is sticky until power-off; keep it rather than pretend it can be cleared.
        let base = (m & (PCA9685Math.extclk | PCA9685Math.allCall)) | PCA9685Math.autoIncrement
        let p = PCA9685Math.prescale(frequency: frequency, oscillator: oscillator)
        try bus.writeRegister(address, PCA9685Math.mode1, base | PCA9685Math.sleep)
        try bus.writeRegister(address, PCA9685Math.preScale, p)
        try bus.writeRegister(address, PCA9685Math.mode2, PCA9685Math.outdrv)
        try bus.writeRegister(address, PCA9685Math.mode1, base)
        pause(0.0005)
        try bus.writeRegister(address, PCA9685Math.mode1, base | PCA9685Math.restart)
        let readBack = try bus.readRegister(address, PCA9685Math.preScale)
        guard readBack == p else {
            throw I2CError(
                .unexpectedResponse, bus: bus.number, address: address,
                operation: "setting PRE_SCALE to \(p) (read back \(readBack)); is this chip a PCA9685?")
        }
        prescale = p
    }

    /// Sets a channel's pulse: ON at count 0, OFF at `counts` (0 = fully off), one 4-register write.
    public func setCounts(channel: Int, _ counts: UInt16) throws {
        guard (0...15).contains(channel) else {
            throw I2CError(.unexpectedResponse, bus: bus.number, address: address, operation: "addressing channel \(channel) (0…15)")
        }
        let off = min(counts, 4095)
        frame[0] = PCA9685Math.ledOnL(channel: channel)
        frame[1] = 0
        frame[2] = 0
        frame[3] = UInt8(truncatingIfNeeded: off)
        frame[4] = counts == 0 ? PCA9685Math.fullBit : UInt8(truncatingIfNeeded: off >> 8)
        try frame.withUnsafeBytes {
            try bus.transfer(address: address, write: $0, read: UnsafeMutableRawBufferPointer(start: nil, count: 0))
        }
    }

    /// Sets a channel's pulse in microseconds; returns the counts written.
    @discardableResult
    public func setPulse(channel: Int, micros: Double) throws -> UInt16 {
        let c = PCA9685Math.counts(pulseMicros: micros, prescale: prescale, oscillator: oscillator)
        try setCounts(channel: channel, c)
        return c
    }

    /// The channel's OFF count when it is a plain pulse starting at 0; nil when fully off/on or phase-shifted.
    public func readCounts(channel: Int) throws -> UInt16? {
        guard (0...15).contains(channel) else { return nil }
        var regs = [UInt8](repeating: 0, count: 4)
        try regs.withUnsafeMutableBytes { try bus.readRegisters(address, PCA9685Math.ledOnL(channel: channel), into: $0) }
        let on = UInt16(regs[0]) | UInt16(regs[1]) << 8
        let off = UInt16(regs[2]) | UInt16(regs[3]) << 8
        guard on == 0, off & 0x1000 == 0, off > 0 else { return nil }
        return off & 0x0FFF
    }

    /// Every output fully off (ALL_LED_OFF_H full-off bit): servos go limp.
    public func allOff() throws {
        try bus.writeRegister(address, PCA9685Math.allLEDOffH, PCA9685Math.fullBit)
    }

    /// Oscillator off (outputs stop); `configure` wakes it again.
    public func sleep() throws {
        let m = try bus.readRegister(address, PCA9685Math.mode1)
        try bus.writeRegister(address, PCA9685Math.mode1, (m & ~PCA9685Math.restart) | PCA9685Math.sleep)
    }
}
