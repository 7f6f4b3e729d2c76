// The convert half of the Sensirion SHT40/SHT41/SHT45 (datasheet "SHT4x", version 6.6): a
// measurement answers six bytes — temperature ticks, CRC, humidity ticks, CRC — and the ticks
// scale linearly: T = −45 + 175·S_T/65535 °C, RH = −6 + 125·S_RH/65535 %RH, the latter cropped to
// 0–100 % as the datasheet says. Every 16-bit word carries a CRC-8 (polynomial 0x31, initial
// 0xFF, no reflection, no final XOR; the datasheet's example: CRC(0xBEEF) = 0x92).

/// What a hygrometer read: the air's temperature and relative humidity.
public struct HygrometerReading: Sendable, Equatable {
    public var celsius: Double
    /// 0 to 100 %RH.
    public var humidityPercent: Double

    public init(celsius: Double, humidityPercent: Double) {
        self.celsius = celsius
        self.humidityPercent = humidityPercent
    }
}

/// A hygrometer's bytes that cannot be a reading: a CRC that does not match (noise on a long wire).
public struct HygrometerDataError: Error, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

public enum SHT4x {
    /// Commands (one byte each).
    public static let measureHighPrecision: UInt8 = 0xFD
    public static let measureMediumPrecision: UInt8 = 0xF6
    public static let measureLowPrecision: UInt8 = 0xE0
    public static let readSerialNumber: UInt8 = 0x89
    public static let softReset: UInt8 = 0x94
    /// Seconds to wait after each command before reading its answer (Sensirion's driver waits these).
    public static let highPrecisionSeconds = 0.010
    public static let mediumPrecisionSeconds = 0.005
    public static let lowPrecisionSeconds = 0.002
    public static let commandSeconds = 0.010
    /// Bytes in a measurement's or the serial number's answer.
    public static let answerBytes = 6

    /// Sensirion's CRC-8 over one word.
    public static func crc8(_ msb: UInt8, _ lsb: UInt8) -> UInt8 { step(step(0xFF, msb), lsb) }

    private static func step(_ crc: UInt8, _ byte: UInt8) -> UInt8 {
        var c = crc ^ byte
        for _ in 0..<8 { c = c & 0x80 != 0 ? (c << 1) ^ 0x31 : c << 1 }
        return c
    }

    /// The two CRC'd words of a six-byte answer; throws naming the word whose CRC is wrong.
    public static func words(_ b: UnsafeRawBufferPointer, what: String) throws(HygrometerDataError) -> (UInt16, UInt16) {
        guard b.count >= answerBytes else { throw HygrometerDataError("\(what): \(b.count) bytes, not \(answerBytes)") }
        for i in stride(from: 0, through: 3, by: 3) where crc8(b[i], b[i + 1]) != b[i + 2] {
            throw HygrometerDataError(
                "\(what): the \(i == 0 ? "first" : "second") word's CRC is 0x\(String(b[i + 2], radix: 16)), "
                    + "not 0x\(String(crc8(b[i], b[i + 1]), radix: 16)) (noise on the bus: check the wiring and pull-ups)")
        }
        return (UInt16(b[0]) << 8 | UInt16(b[1]), UInt16(b[3]) << 8 | UInt16(b[4]))
    }

    public static func celsius(ticks: UInt16) -> Double { -45 + 175 * Double(ticks) / 65535 }

    public static func humidityPercent(ticks: UInt16) -> Double { min(max(-6 + 125 * Double(ticks) / 65535, 0), 100) }

    /// A measurement's six bytes.
    public static func reading(_ b: UnsafeRawBufferPointer) throws(HygrometerDataError) -> HygrometerReading {
        let (t, rh) = try words(b, what: "SHT4x measurement")
        return HygrometerReading(celsius: celsius(ticks: t), humidityPercent: humidityPercent(ticks: rh))
    }

    /// The ticks a measurement of `celsius` and `percent` gives (the simulated chip's answer).
    public static func ticks(celsius: Double, percent: Double) -> (temperature: UInt16, humidity: UInt16) {
        func clamp(_ v: Double) -> UInt16 { UInt16(min(max(v.rounded(), 0), 65535)) }
        return (clamp((celsius + 45) * 65535 / 175), clamp((percent + 6) * 65535 / 125))
    }
}
