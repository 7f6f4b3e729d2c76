// A hobby-servo pan-tilt unit driven by a PCA9685 (the chip on common Pi pan-tilt HATs):
// per-axis calibration between pulse width and degrees, soft limits and speed, and the
// chip's arithmetic (prescale from its 25 MHz oscillator, microseconds ↔ 12-bit counts).
// Pure: the I²C transactions are in OSHPlatform/PTZ/PCA9685.swift.

/// One servo axis. The pulse maps linearly onto the angle: `minPulseMicros` at `minDegrees`,
/// `maxPulseMicros` at `maxDegrees` (swap the pulses for a servo mounted the other way round).
public struct ServoAxisCalibration: Sendable, Equatable {
    /// PCA9685 output, 0…15.
    public var channel: Int
    public var minPulseMicros: Double
    public var maxPulseMicros: Double
    public var minDegrees: Double
    public var maxDegrees: Double
    /// Soft limits in degrees (inside the calibrated span): a command beyond them is clamped and says so.
    public var lowerLimit: Double
    public var upperLimit: Double
    /// Degrees per second the axis may slew; nil moves in one step.
    public var maxSpeed: Double?
    /// Where the axis goes when nothing better is known (at start, with no readable position).
    public var home: Double

    public init(
        channel: Int, minPulseMicros: Double = 500, maxPulseMicros: Double = 2500,
        minDegrees: Double = -90, maxDegrees: Double = 90,
        lowerLimit: Double? = nil, upperLimit: Double? = nil, maxSpeed: Double? = nil, home: Double = 0
    ) {
        self.channel = channel
        self.minPulseMicros = minPulseMicros
        self.maxPulseMicros = maxPulseMicros
        self.minDegrees = minDegrees
        self.maxDegrees = maxDegrees
        self.lowerLimit = lowerLimit ?? Swift.min(minDegrees, maxDegrees)
        self.upperLimit = upperLimit ?? Swift.max(minDegrees, maxDegrees)
        self.maxSpeed = maxSpeed
        self.home = home
    }

    /// Microseconds of pulse per degree (negative for a reversed servo).
    public var microsPerDegree: Double { (maxPulseMicros - minPulseMicros) / (maxDegrees - minDegrees) }

    public func pulseMicros(degrees: Double) -> Double { minPulseMicros + (degrees - minDegrees) * microsPerDegree }

    public func degrees(pulseMicros: Double) -> Double { minDegrees + (pulseMicros - minPulseMicros) / microsPerDegree }

    /// `degrees` within the soft limits; `clamped` says whether it had to move.
    public func clamp(_ degrees: Double) -> (value: Double, clamped: Bool) {
        if degrees < lowerLimit { return (lowerLimit, true) }
        if degrees > upperLimit { return (upperLimit, true) }
        return (degrees, false)
    }

    /// Every problem with this axis, named (`axis` is "pan" or "tilt").
    public func problems(axis: String) -> [String] {
        var out: [String] = []
        if !(0...15).contains(channel) { out.append("\(axis): channel \(channel) is not a PCA9685 output (0…15)") }
        for (name, v) in [("min_pulse_us", minPulseMicros), ("max_pulse_us", maxPulseMicros)] where !(100...3000).contains(v) {
            out.append("\(axis): \(name) = \(v) µs is outside what hobby servos take (100…3000 µs; 500…2500 is typical)")
        }
        if minPulseMicros == maxPulseMicros { out.append("\(axis): min_pulse_us and max_pulse_us are equal: the axis could not move") }
        if !(minDegrees < maxDegrees) { out.append("\(axis): min_degrees (\(minDegrees)) must be below max_degrees (\(maxDegrees))") }
        if !(lowerLimit <= upperLimit) { out.append("\(axis): the lower limit (\(lowerLimit)°) is above the upper limit (\(upperLimit)°)") }
        if lowerLimit < minDegrees || upperLimit > maxDegrees {
            out.append("\(axis): limits \(lowerLimit)…\(upperLimit)° reach outside the calibrated span \(minDegrees)…\(maxDegrees)°")
        }
        if let s = maxSpeed, !(s > 0) { out.append("\(axis): max_speed must be positive degrees per second (or absent)") }
        if !(lowerLimit...upperLimit).contains(home) { out.append("\(axis): home \(home)° is outside the limits") }
        return out
    }
}

public struct PTZCalibration: Sendable, Equatable {
    public var pan: ServoAxisCalibration
    public var tilt: ServoAxisCalibration
    /// Servo frame rate; 50 Hz (20 ms) is what analogue hobby servos expect.
    public var frequency: Double
    /// The PCA9685's internal oscillator (datasheet: 25 MHz, ±a few percent per chip).
    public var oscillator: Double
    /// Named positions offered as the `preset` command (empty: no preset item in the schema).
    public var presets: [(name: String, pan: Double, tilt: Double)]

    public init(
        pan: ServoAxisCalibration = ServoAxisCalibration(channel: 0),
        tilt: ServoAxisCalibration = ServoAxisCalibration(channel: 1),
        frequency: Double = 50, oscillator: Double = PCA9685Math.internalOscillator,
        presets: [(name: String, pan: Double, tilt: Double)] = []
    ) {
        self.pan = pan
        self.tilt = tilt
        self.frequency = frequency
        self.oscillator = oscillator
        self.presets = presets
    }

    public static func == (a: PTZCalibration, b: PTZCalibration) -> Bool {
        a.pan == b.pan && a.tilt == b.tilt && a.frequency == b.frequency && a.oscillator == b.oscillator
            && a.presets.map(\.name) == b.presets.map(\.name) && a.presets.map(\.pan) == b.presets.map(\.pan)
            && a.presets.map(\.tilt) == b.presets.map(\.tilt)
    }

    /// Every problem, each naming the setting; empty when usable.
    public func problems() -> [String] {
        var out = pan.problems(axis: "pan") + tilt.problems(axis: "tilt")
        if pan.channel == tilt.channel { out.append("pan and tilt are both on channel \(pan.channel)") }
        if !(24...1526).contains(frequency) {
            out.append("frequency \(frequency) Hz is outside what a PCA9685 makes (24…1526 Hz; servos want 50)")
        }
        let period = 1e6 / frequency
        for (axis, a) in [("pan", pan), ("tilt", tilt)] where Swift.max(a.minPulseMicros, a.maxPulseMicros) >= period {
            out.append(
                "\(axis): a \(Swift.max(a.minPulseMicros, a.maxPulseMicros)) µs pulse does not fit a \(Int(period)) µs frame at \(frequency) Hz"
            )
        }
        for p in presets {
            if pan.clamp(p.pan).clamped || tilt.clamp(p.tilt).clamped {
                out.append("preset '\(p.name)' (\(p.pan)°, \(p.tilt)°) is outside the limits")
            }
        }
        return out
    }
}

/// The PCA9685's arithmetic (NXP PCA9685 datasheet §7.3.5: prescale = round(osc / (4096 × f)) − 1,
/// 12-bit counters per period).
public enum PCA9685Math {
    public static let internalOscillator = 25_000_000.0
    /// The chip forces PRE_SCALE values below 3 to 3.
    public static let minimumPrescale: UInt8 = 3

    public static func prescale(frequency: Double, oscillator: Double = internalOscillator) -> UInt8 {
        guard frequency > 0, oscillator > 0 else { return 255 }
        let p = (oscillator / (4096 * frequency)).rounded() - 1
        return UInt8(Swift.max(Double(minimumPrescale), Swift.min(255, p)))
    }

    /// The frequency the chip actually runs at with `prescale`.
    public static func frequency(prescale: UInt8, oscillator: Double = internalOscillator) -> Double {
        oscillator / (4096 * (Double(prescale) + 1))
    }

    /// Microseconds per count: one period is 4096 counts.
    public static func microsPerCount(prescale: UInt8, oscillator: Double = internalOscillator) -> Double {
        (Double(prescale) + 1) * 1e6 / oscillator
    }

    /// The OFF count (with ON at 0) for a pulse, rounded to the nearest count, within 0…4095.
    public static func counts(pulseMicros: Double, prescale: UInt8, oscillator: Double = internalOscillator) -> UInt16 {
        guard pulseMicros.isFinite, pulseMicros > 0 else { return 0 }
        let c = (pulseMicros / microsPerCount(prescale: prescale, oscillator: oscillator)).rounded()
        return UInt16(Swift.min(4095, c))
    }

    public static func pulseMicros(counts: UInt16, prescale: UInt8, oscillator: Double = internalOscillator) -> Double {
        Double(counts) * microsPerCount(prescale: prescale, oscillator: oscillator)
    }

    // Register map (datasheet table 4).
    public static let mode1: UInt8 = 0x00
    public static let mode2: UInt8 = 0x01
    public static let led0OnL: UInt8 = 0x06
    public static let allLEDOnL: UInt8 = 0xFA
    public static let allLEDOffH: UInt8 = 0xFD
    public static let preScale: UInt8 = 0xFE

    /// LEDn_ON_L; ON_H, OFF_L, OFF_H follow.
    public static func ledOnL(channel: Int) -> UInt8 { UInt8(truncatingIfNeeded: 0x06 + 4 * channel) }

    // MODE1 bits.
    public static let restart: UInt8 = 0x80
    public static let extclk: UInt8 = 0x40
    public static let autoIncrement: UInt8 = 0x20
    public static let sleep: UInt8 = 0x10
    public static let allCall: UInt8 = 0x01
    /// MODE2 OUTDRV: totem-pole outputs (what servo signal lines want; the power-on default).
    public static let outdrv: UInt8 = 0x04
    /// Bit 4 of LEDn_ON_H / LEDn_OFF_H: the output fully on / fully off.
    public static let fullBit: UInt8 = 0x10
}
