// LPS25H: conversion of the output registers (the convert half; the fetch half is
// OSHPlatform/Barometers/LPS25HDriver.swift). The barometer of the Raspberry Pi Sense HAT.
//
// The chip compensates on silicon: PRESS_OUT (24-bit two's complement, 4096 LSB/hPa) and TEMP_OUT
// (16-bit two's complement, 480 LSB/°C around 42.5 °C: T = 42.5 + TEMP_OUT / 480), datasheet
// DocID023722 and ST's AN4450 §4.3, whose worked example (0x3FF58D → 1023.347 hPa, 0xE07C →
// 25.7 °C) is a row of Tests/OSHCoreTests/Fixtures/baro/lps25h_vectors.csv. There is no
// calibration to read. TEMP_OUT's 16 bits span −25.77…110.76 °C only.

public struct LPS25HRaw: Sendable, Equatable {
    /// PRESS_OUT_XL; PRESS_OUT_XL L H then TEMP_OUT_L H are 0x28…0x2C.
    public static let register: UInt8 = 0x28
    public static let byteCount = 5
    public static let lsbPerHPa = 4096.0
    public static let lsbPerCelsius = 480.0
    /// 42.5 °C × 480 LSB/°C: the offset in LSB, so the temperature is one division.
    public static let offsetLSB: Int32 = 20_400

    /// Sign-extended 24-bit pressure and 16-bit temperature.
    public var pressure: Int32, temperature: Int16

    public init(pressure: Int32, temperature: Int16) { (self.pressure, self.temperature) = (pressure, temperature) }

    @inlinable public init?(burst b: UnsafeRawBufferPointer) {
        guard b.count == Self.byteCount else { return nil }
        // Shift the 24 bits to the top of an Int32, then back: an arithmetic shift sign-extends.
        pressure = Int32(bitPattern: UInt32(b[0]) << 8 | UInt32(b[1]) << 16 | UInt32(b[2]) << 24) >> 8
        temperature = Int16(bitPattern: UInt16(b[3]) | UInt16(b[4]) << 8)
    }

    /// Exact: a 24-bit integer over a power of two.
    @inlinable public var pressureHPa: Double { Double(pressure) / Self.lsbPerHPa }
    /// (TEMP_OUT + 20400) / 480: one rounding, so the result is the correctly rounded value.
    @inlinable public var celsius: Double { Double(Int32(temperature) + Self.offsetLSB) / Self.lsbPerCelsius }

    public var burst: [UInt8] {
        let p = UInt32(bitPattern: pressure), t = UInt16(bitPattern: temperature)
        return [
            UInt8(truncatingIfNeeded: p), UInt8(truncatingIfNeeded: p >> 8), UInt8(truncatingIfNeeded: p >> 16),
            UInt8(truncatingIfNeeded: t), UInt8(truncatingIfNeeded: t >> 8),
        ]
    }

    /// The registers' values for `hPa` and `celsius`, rounded and held to what they can hold
    /// (the simulated chip's output).
    public static func registers(hPa: Double, celsius: Double) -> LPS25HRaw {
        let p = (min(max(hPa, 0), 2047) * lsbPerHPa).rounded()
        let t = (min(max(celsius * lsbPerCelsius - Double(offsetLSB), -32768), 32767)).rounded()
        return LPS25HRaw(pressure: Int32(p), temperature: Int16(t))
    }
}

/// `osh-edge decode` for the LPS25H: no calibration (it compensates on chip).
public enum LPS25HDecode {
    public static let layout = BarometerByteLayout(
        calibration: "none: give - (it compensates on chip)", burst: "5 bytes from 0x28 (PRESS_OUT_XL L H, TEMP_OUT_L H)",
        calibrationBytes: 0, burstBytes: LPS25HRaw.byteCount)

    public static func decode(chip: String, calibration cal: [UInt8], burst: [UInt8]) throws -> BarometerDecodeResult {
        try layout.check(chip, calibration: cal, burst: burst)
        guard let r = burst.withUnsafeBytes({ LPS25HRaw(burst: $0) }) else {
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
