// BMP581 and BMP585: conversion of the data registers (the convert half; the fetch half is
// OSHPlatform/Barometers/BMP58xDriver.swift).
//
// The chip compensates on silicon (BST-BMP581-DS004 §4.5): TEMP_DATA (0x1D–0x1F) is °C as a 24-bit
// two's complement with 16 fractional bits, PRESS_DATA (0x20–0x22) is Pa as a 24-bit unsigned
// value with 6 fractional bits, each XLSB first. There is no calibration to read. A 24-bit integer
// divided by a power of two is exact in double (and in the float of Bosch's BMP5 API), so values
// equal the reference columns exactly (Tests/OSHCoreTests/Fixtures/baro/bmp58x_vectors.csv).

/// One BMP58x data burst: registers 0x1D…0x22, temperature then pressure.
public struct BMP58xRaw: Sendable, Equatable {
    /// TEMP_DATA_XLSB, the first register of the burst.
    public static let register: UInt8 = 0x1D
    public static let byteCount = 6
    public static let lsbPerCelsius = 65536.0
    public static let lsbPerPa = 64.0
    /// What a data register holds after a reset, and PRESS_DATA while pressure is off (0x7F in
    /// each byte, as Linux's bmp280 driver treats it): 127.498 °C and 130 558 Pa, both outside
    /// the operating range (−40…85 °C, 30…125 kPa), so no real reading is mistaken for it.
    public static let notMeasured: UInt32 = 0x7F7F7F

    /// Sign-extended 24-bit temperature.
    public var temperature: Int32
    /// 24-bit pressure (unsigned: bit 23 is 131 072 Pa, not a sign).
    public var pressure: UInt32

    public init(temperature: Int32, pressure: UInt32) { (self.temperature, self.pressure) = (temperature, pressure) }

    @inlinable public init?(burst b: UnsafeRawBufferPointer) {
        guard b.count == Self.byteCount else { return nil }
        // Shift the 24 bits to the top of an Int32, then back: an arithmetic shift sign-extends.
        temperature = Int32(bitPattern: UInt32(b[0]) << 8 | UInt32(b[1]) << 16 | UInt32(b[2]) << 24) >> 8
        pressure = UInt32(b[3]) | UInt32(b[4]) << 8 | UInt32(b[5]) << 16
    }

    @inlinable public var celsius: Double { Double(temperature) / Self.lsbPerCelsius }
    @inlinable public var pressurePa: Double { Double(pressure) / Self.lsbPerPa }

    /// Either register still at its reset value: the chip has not measured it.
    @inlinable public var isMeasured: Bool {
        UInt32(bitPattern: temperature) & 0xFFFFFF != Self.notMeasured && pressure != Self.notMeasured
    }

    public var burst: [UInt8] {
        let t = UInt32(bitPattern: temperature)
        return [
            UInt8(truncatingIfNeeded: t), UInt8(truncatingIfNeeded: t >> 8), UInt8(truncatingIfNeeded: t >> 16),
            UInt8(truncatingIfNeeded: pressure), UInt8(truncatingIfNeeded: pressure >> 8), UInt8(truncatingIfNeeded: pressure >> 16),
        ]
    }
}

/// `osh-edge decode` for the BMP581 and BMP585: no calibration (they compensate on chip).
public enum BMP58xDecode {
    public static let layout = BarometerByteLayout(
        calibration: "none: give - (it compensates on chip)",
        burst: "6 bytes from 0x1D (TEMP_DATA xlsb lsb msb, PRESS_DATA xlsb lsb msb)",
        calibrationBytes: 0, burstBytes: BMP58xRaw.byteCount)

    public static func decode(chip: String, calibration cal: [UInt8], burst: [UInt8]) throws -> BarometerDecodeResult {
        try layout.check(chip, calibration: cal, burst: burst)
        guard let r = burst.withUnsafeBytes({ BMP58xRaw(burst: $0) }) else {
            throw BarometerDataError("\(chip): a data burst it cannot read")
        }
        let pa = r.pressurePa
        return BarometerDecodeResult(
            chip: chip,
            raw: [
                .init(name: "TEMP_DATA", value: Int(r.temperature)),
                .init(name: "PRESS_DATA", value: Int(r.pressure)),
            ],
            celsius: r.celsius, pressurePa: pa, pressureHPa: pa / 100, humidityPercent: nil,
            integer: nil, clamp: nil)
    }
}
