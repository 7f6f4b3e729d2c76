// BMP388 and BMP390: calibration parsing and compensation (the convert half; the fetch half is
// OSHPlatform/Barometers/BMP3Driver.swift).
//
// WHICH FORMULAS. The floating-point compensation of the BMP388 datasheet (BST-BMP388-DS001
// §9.2–9.3, the same for the BMP390) in the operation order of Bosch's BMP3 sensor API with
// `BMP3_FLOAT_COMPENSATION` — including its single-precision powers (t², t³, p², p³) — so that the results are bit-identical to the reference columns
// `api_T_double_degC` / `api_P_double_pa` / `api_rslt_double`
// (Tests/OSHCoreTests/Fixtures/baro/bmp3_vectors.csv). Like that API it clamps temperature to
// −40…85 °C and pressure to 300…1250 hPa and reports which clamp applied; when temperature
// clamps it does not compute pressure. The calibration words are scaled by the datasheet's
// powers of two, which is exact in double.

/// Which range limit a BMP3 compensation hit. Raw values are Bosch's API warning codes.
public enum BMP3Clamp: Int8, Sendable {
    case none = 0
    case temperatureBelowRange = 3, temperatureAboveRange = 4, pressureBelowRange = 5, pressureAboveRange = 6
}

/// The 14 trimming coefficients of a BMP388/BMP390 (21 bytes from register 0x31), scaled to
/// the floating-point values the datasheet's formulas take.
public struct BMP3Calibration: Sendable, Equatable {
    public static let register: UInt8 = 0x31
    public static let byteCount = 21
    public static let minimumCelsius = -40.0, maximumCelsius = 85.0
    public static let minimumPa = 30000.0, maximumPa = 125000.0

    public var t1: Double, t2: Double, t3: Double
    public var p1: Double, p2: Double, p3: Double, p4: Double, p5: Double, p6: Double
    public var p7: Double, p8: Double, p9: Double, p10: Double, p11: Double

    /// Parses NVM_PAR_T1…NVM_PAR_P11 (little-endian; T1, T2, P5, P6 unsigned; the rest signed).
    public init(registers b: [UInt8]) throws {
        guard b.count == Self.byteCount else {
            throw BarometerDataError("BMP3 calibration needs \(Self.byteCount) bytes (registers 0x31–0x45), got \(b.count)")
        }
        try checkNotConstant(b, "the calibration region 0x31–0x45")
        let u16 = { (i: Int) in Double(le16(b, i)) }
        let s16 = { (i: Int) in Double(Int16(bitPattern: le16(b, i))) }
        let s8 = { (i: Int) in Double(Int8(bitPattern: b[i])) }
        let two = { (n: Int) in Double(sign: .plus, exponent: n, significand: 1) }  // 2^n, exact
        t1 = u16(0) * two(8)
        t2 = u16(2) / two(30)
        t3 = s8(4) / two(48)
        p1 = (s16(5) - two(14)) / two(20)
        p2 = (s16(7) - two(14)) / two(29)
        p3 = s8(9) / two(32)
        p4 = s8(10) / two(37)
        p5 = u16(11) * two(3)
        p6 = u16(13) / two(6)
        p7 = s8(15) / two(8)
        p8 = s8(16) / two(15)
        p9 = s16(17) / two(48)
        p10 = s8(19) / two(48)
        p11 = s8(20) / two(65)
        guard t1 != 0 else { throw BarometerDataError("calibration has NVM_PAR_T1 = 0; a real part never has") }
    }

    /// Temperature in °C (t_lin, clamped to −40…85 °C) from the 24-bit raw temperature.
    @inlinable public func temperature(uncompensated raw: UInt32) -> (celsius: Double, clamp: BMP3Clamp) {
        let d1 = Double(raw) - t1
        let d2 = d1 * t2
        let tLin = d2 + (d1 * d1) * t3
        if tLin < Self.minimumCelsius { return (Self.minimumCelsius, .temperatureBelowRange) }
        if tLin > Self.maximumCelsius { return (Self.maximumCelsius, .temperatureAboveRange) }
        return (tLin, .none)
    }

    /// Pressure in Pa (clamped to 300…1250 hPa) from the 24-bit raw pressure and t_lin (°C).
    @inlinable public func pressurePa(uncompensated raw: UInt32, celsius t: Double) -> (pa: Double, clamp: BMP3Clamp) {
        let t2 = Self.power(t, 2), t3 = Self.power(t, 3)
        let out1 = p5 + p6 * t + p7 * t2 + p8 * t3
        let up = Double(raw)
        let out2 = up * (p1 + p2 * t + p3 * t2 + p4 * t3)
        let up2 = Self.power(up, 2), up3 = Self.power(up, 3)
        let d4 = up2 * (p9 + p10 * t) + up3 * p11
        let pa = out1 + out2 + d4
        if pa < Self.minimumPa { return (Self.minimumPa, .pressureBelowRange) }
        if pa > Self.maximumPa { return (Self.maximumPa, .pressureAboveRange) }
        return (pa, .none)
    }

    /// x^n as Bosch's API computes it: repeated multiplication in *single* precision (its power
    /// helper works in float). Doing it in double would be more exact, and differ from the
    /// reference by up to ~1e-3 Pa; the API is what shipped parts are tested with, so we follow it.
    @inlinable static func power(_ x: Double, _ n: Int) -> Double {
        var out: Float = 1
        for _ in 0..<n { out = Float(x) * out }
        return Double(out)
    }

    /// Both, as the API does: pressure is NaN when the temperature clamped.
    @inlinable public func compensate(uncompensatedT: UInt32, uncompensatedP: UInt32) -> (celsius: Double, pa: Double, clamp: BMP3Clamp) {
        let t = temperature(uncompensated: uncompensatedT)
        if t.clamp != .none { return (t.celsius, .nan, t.clamp) }
        let p = pressurePa(uncompensated: uncompensatedP, celsius: t.celsius)
        return (t.celsius, p.pa, p.clamp)
    }
}

/// One BMP3 data burst: registers 0x04…0x09, pressure then temperature, 24-bit little-endian.
public struct BMP3Raw: Sendable, Equatable {
    public static let register: UInt8 = 0x04
    public static let byteCount = 6
    public var pressure: UInt32, temperature: UInt32

    public init(pressure: UInt32, temperature: UInt32) { (self.pressure, self.temperature) = (pressure, temperature) }

    @inlinable public init?(burst b: UnsafeRawBufferPointer) {
        guard b.count == Self.byteCount else { return nil }
        pressure = UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16
        temperature = UInt32(b[3]) | UInt32(b[4]) << 8 | UInt32(b[5]) << 16
    }

    public var burst: [UInt8] {
        [
            UInt8(truncatingIfNeeded: pressure), UInt8(truncatingIfNeeded: pressure >> 8), UInt8(truncatingIfNeeded: pressure >> 16),
            UInt8(truncatingIfNeeded: temperature), UInt8(truncatingIfNeeded: temperature >> 8),
            UInt8(truncatingIfNeeded: temperature >> 16),
        ]
    }
}

/// `osh-edge decode` for the BMP388 and BMP390, with the range clamp Bosch's driver applies.
public enum BMP3Decode {
    public static let layout = BarometerByteLayout(
        calibration: "21 bytes from 0x31 (0x31–0x45)", burst: "6 bytes from 0x04 (press xlsb lsb msb, temp xlsb lsb msb)",
        calibrationBytes: BMP3Calibration.byteCount, burstBytes: BMP3Raw.byteCount)

    public static func decode(chip: String, calibration cal: [UInt8], burst: [UInt8]) throws -> BarometerDecodeResult {
        try layout.check(chip, calibration: cal, burst: burst)
        let c = try BMP3Calibration(registers: cal)
        guard let r = burst.withUnsafeBytes({ BMP3Raw(burst: $0) }) else {
            throw BarometerDataError("\(chip): a data burst it cannot read")
        }
        let v = c.compensate(uncompensatedT: r.temperature, uncompensatedP: r.pressure)
        let clamp: String? =
            switch v.clamp {
            case .none: nil
            case .temperatureBelowRange: "temperature below −40 °C (pressure not computed)"
            case .temperatureAboveRange: "temperature above 85 °C (pressure not computed)"
            case .pressureBelowRange: "pressure below 300 hPa"
            case .pressureAboveRange: "pressure above 1250 hPa"
            }
        return BarometerDecodeResult(
            chip: chip,
            raw: [
                .init(name: "uncomp_T", value: Int(r.temperature)),
                .init(name: "uncomp_P", value: Int(r.pressure)),
            ],
            celsius: v.celsius, pressurePa: v.pa, pressureHPa: v.pa / 100, humidityPercent: nil,
            integer: nil, clamp: clamp)
    }
}
