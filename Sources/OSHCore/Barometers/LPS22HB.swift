// LPS22HB: conversion of the output registers (the convert half; the fetch half is
// OSHPlatform/Barometers/LPS22HBDriver.swift).
//
// The chip compensates on silicon: PRESS_OUT (24-bit two's complement, 4096 LSB/hPa) and TEMP_OUT
// (16-bit two's complement, 100 LSB/°C), datasheet DocID027083 §9.18–9.20. There is no
// calibration to read. The division is done in double (ST's driver uses float), so values equal
// the reference column exactly: `raw / 4096` is exact and `raw / 100` is the correctly rounded
// double (Tests/OSHCoreTests/Fixtures/baro/lps22hb_vectors.csv).

public struct LPS22HBRaw: Sendable, Equatable {
    /// PRESS_OUT_XL; the 5-byte burst 0x28…0x2C holds pressure then temperature.
    public static let register: UInt8 = 0x28
    public static let byteCount = 5
    public static let lsbPerHPa = 4096.0
    public static let lsbPerCelsius = 100.0

    /// Sign-extended 24-bit pressure and 16-bit temperature.
    public var pressure: Int32, temperature: Int16

    public init(pressure: Int32, temperature: Int16) { (self.pressure, self.temperature) = (pressure, temperature) }

    @inlinable public init?(burst b: UnsafeRawBufferPointer) {
        guard b.count == Self.byteCount else { return nil }
        // Shift the 24 bits to the top of an Int32, then back: an arithmetic shift sign-extends.
        pressure = Int32(bitPattern: UInt32(b[0]) << 8 | UInt32(b[1]) << 16 | UInt32(b[2]) << 24) >> 8
        temperature = Int16(bitPattern: UInt16(b[3]) | UInt16(b[4]) << 8)
    }

    @inlinable public var pressureHPa: Double { Double(pressure) / Self.lsbPerHPa }
    @inlinable public var celsius: Double { Double(temperature) / Self.lsbPerCelsius }

    public var burst: [UInt8] {
        let p = UInt32(bitPattern: pressure), t = UInt16(bitPattern: temperature)
        return [
            UInt8(truncatingIfNeeded: p), UInt8(truncatingIfNeeded: p >> 8), UInt8(truncatingIfNeeded: p >> 16),
            UInt8(truncatingIfNeeded: t), UInt8(truncatingIfNeeded: t >> 8),
        ]
    }
}

/// `osh-edge decode` for the LPS22HB: no calibration (it compensates on chip).
public enum LPS22HBDecode {
    public static let layout = BarometerByteLayout(
        calibration: "none: give - (it compensates on chip)", burst: "5 bytes from 0x28 (PRESS_OUT_XL L H, TEMP_OUT_L H)",
        calibrationBytes: 0, burstBytes: LPS22HBRaw.byteCount)

    public static func decode(chip: String, calibration cal: [UInt8], burst: [UInt8]) throws -> BarometerDecodeResult {
        try layout.check(chip, calibration: cal, burst: burst)
        guard let r = burst.withUnsafeBytes({ LPS22HBRaw(burst: $0) }) else {
            throw BarometerDataError("\(chip): a data burst it cannot read")
        }
        return BarometerDecodeResult(
            chip: chip,
            raw: [
                .init(name: "PRESS_OUT", value: Int(r.pressure)),
                .init(name: "TEMP_OUT", value: Int(r.temperature)),
            ],
            celsius: r.celsius, pressurePa: r.pressureHPa * 100, pressureHPa: r.pressureHPa,
            humidityPercent: nil, integer: nil, clamp: nil)
    }
}
