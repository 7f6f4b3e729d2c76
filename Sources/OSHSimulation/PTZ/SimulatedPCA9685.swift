import OSHCore
import OSHPlatform

/// A PCA9685 on the simulated I²C bus, modelled from the datasheet's register description:
/// - power-on state: MODE1 0x11 (SLEEP, ALLCALL), MODE2 0x04, PRE_SCALE 0x1E (200 Hz),
///   every channel fully off (LEDn_OFF_H bit 4);
/// - the register pointer auto-increments only with MODE1.AI set (else every byte of a burst
///   lands in the same register);
/// - PRE_SCALE takes writes only while SLEEP is set (others are ignored, and counted);
/// - RESTART reads 1 after a sleep that stopped running PWM; writing 1 clears it and resumes;
/// - ALL_LED_* writes go to every channel and read back as 0;
/// - while asleep, outputs are off whatever the channel registers say.
public final class SimulatedPCA9685: RegisterMapDevice {
    public let oscillator: Double
    /// PRE_SCALE writes refused because the chip was awake.
    public private(set) var ignoredPrescaleWrites = 0
    private var restartPending = false

    public init(oscillator: Double = PCA9685Math.internalOscillator) {
        self.oscillator = oscillator
        super.init()
        powerOnReset()
    }

    /// Power cycle (or the general-call SWRST): every register back to its default.
    public func powerOnReset() {
        for i in registers.indices { registers[i] = 0 }
        registers[0x00] = 0x11
        registers[0x01] = 0x04
        registers[0x02] = 0xE2
        registers[0x03] = 0xE4
        registers[0x04] = 0xE8
        registers[0x05] = 0xE0
        for ch in 0..<16 { registers[Int(PCA9685Math.ledOnL(channel: ch)) + 3] = PCA9685Math.fullBit }
        registers[Int(PCA9685Math.preScale)] = 0x1E
        restartPending = false
        pointer = 0
    }

    var mode1: UInt8 { registers[0] }
    public var isAsleep: Bool { mode1 & PCA9685Math.sleep != 0 }
    public var prescale: UInt8 { registers[Int(PCA9685Math.preScale)] }
    /// The PWM frequency the outputs run at.
    public var frequency: Double { PCA9685Math.frequency(prescale: max(prescale, PCA9685Math.minimumPrescale), oscillator: oscillator) }

    /// (ON count, OFF count, fully on, fully off) of a channel's registers.
    public func channel(_ n: Int) -> (on: UInt16, off: UInt16, fullOn: Bool, fullOff: Bool) {
        let b = Int(PCA9685Math.ledOnL(channel: n))
        let onH = registers[b + 1], offH = registers[b + 3]
        return (
            UInt16(registers[b]) | UInt16(onH & 0x0F) << 8, UInt16(registers[b + 2]) | UInt16(offH & 0x0F) << 8,
            onH & PCA9685Math.fullBit != 0, offH & PCA9685Math.fullBit != 0
        )
    }

    /// The high time of a channel's output in microseconds; nil when no pulse comes out
    /// (asleep, fully off, or fully on).
    public func pulseMicros(channel n: Int) -> Double? {
        let c = channel(n)
        guard !isAsleep, !c.fullOff, !c.fullOn else { return nil }
        let high = (Int(c.off) - Int(c.on) + 4096) % 4096
        return PCA9685Math.pulseMicros(counts: UInt16(high), prescale: max(prescale, PCA9685Math.minimumPrescale), oscillator: oscillator)
    }

    override public func nextRegister(after register: UInt8) -> UInt8 {
        mode1 & PCA9685Math.autoIncrement != 0 ? register &+ 1 : register
    }

    override public func readRegister(_ register: UInt8) -> UInt8 {
        switch register {
        case 0x00: return (mode1 & ~PCA9685Math.restart) | (restartPending ? PCA9685Math.restart : 0)
        case 0xFA...0xFD: return 0
        default: return registers[Int(register)]
        }
    }

    override public func writeRegister(_ register: UInt8, _ value: UInt8) {
        switch register {
        case 0x00:
            let wasAsleep = isAsleep
            var v = value
            if !wasAsleep && v & PCA9685Math.sleep != 0 && anyChannelRunning() { restartPending = true }
            if v & PCA9685Math.restart != 0 && v & PCA9685Math.sleep == 0 { restartPending = false }
            if registers[0] & PCA9685Math.extclk != 0 { v |= PCA9685Math.extclk }  // sticky until reset
            registers[0] = v & ~PCA9685Math.restart
        case PCA9685Math.preScale:
            if isAsleep { registers[Int(register)] = value } else { ignoredPrescaleWrites += 1 }
        case 0xFA...0xFD:
            let k = Int(register - 0xFA)
            for ch in 0..<16 { registers[Int(PCA9685Math.ledOnL(channel: ch)) + k] = value }
        case 0xFF:
            break  // test mode: never written by a driver
        default:
            registers[Int(register)] = value
        }
    }

    private func anyChannelRunning() -> Bool { (0..<16).contains { !channel($0).fullOff } }
}
