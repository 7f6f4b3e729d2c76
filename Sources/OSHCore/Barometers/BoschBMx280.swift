// BMP280 and BME280: calibration parsing and compensation (the convert half; the fetch half is
// OSHPlatform/Barometers/BMx280Driver.swift).
//
// WHICH FORMULAS. The driver uses the datasheet's *double* formulas (BST-BMP280-DS001 §8.1,
// BST-BME280-DS002 §8.1, rev 1.1 code): temperature to ~1e-5 °C and pressure to ~1e-3 Pa instead
// of 0.01 °C / 1/256 Pa, at a cost (≈5400 Cortex-M3 cycles) that is nothing on a Pi. They are
// evaluated here in the datasheet's operation order, so on IEEE-754 doubles the results are
// bit-identical to the reference columns `ds_T_double_degC`, `ds_P_double_pa`, `ds_H_double_pct`
// of Tests/OSHCoreTests/Fixtures/baro (which equal Bosch's own `api_*_double` columns). As in the
// datasheet, `t_fine` is truncated to an integer before pressure and humidity use it, and
// humidity is clamped to 0…100 %RH. No other clamping: out-of-range inputs give what the formula gives.
//
// The datasheet's integer formulas (32-bit temperature, 64-bit pressure, arithmetic `>>`) are
// here too, for callers that want them and to check the columns `ds_t_fine_int`,
// `ds_T_int32_centideg`, `ds_P_int64_q24_8` bit for bit. They are *not* Bosch's API integer code,
// which divides with C `/` (truncation toward zero) and clamps; that differs by a few LSB.

/// Why a calibration region or data burst was refused (the chip is not ready, or it is not this chip).
public struct BarometerDataError: Error, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Little-endian 16-bit value at `i` (Bosch calibration words).
@inline(__always) func le16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }

/// Refuses regions that read as a constant: an unpowered chip or a failed NVM copy gives all 0x00
/// or all 0xFF, and the compensation would then produce plausible-looking nonsense.
func checkNotConstant(_ bytes: [UInt8], _ what: String) throws {
    if let first = bytes.first, bytes.allSatisfy({ $0 == first }) {
        let hex = String(first, radix: 16, uppercase: true)
        throw BarometerDataError("\(what) reads all 0x\(hex.count == 1 ? "0" + hex : hex); the chip is not ready or not the chip named")
    }
}

/// Double → Int32 as C's `(int32_t)` cast truncates, without trapping on out-of-range values.
@usableFromInline @inline(__always) func truncatedInt32(_ d: Double) -> Int32 {
    guard d.isFinite else { return 0 }
    if d >= 2147483647 { return .max }
    if d <= -2147483648 { return .min }
    return Int32(d)
}

/// The 12 temperature and pressure trimming words of a BMP280 (registers 0x88…0x9F), which a
/// BME280 has at the same place.
public struct BMP280Calibration: Sendable, Equatable {
    /// First calibration register and the region's length.
    public static let register: UInt8 = 0x88
    public static let byteCount = 24

    public var t1: UInt16, t2: Int16, t3: Int16
    public var p1: UInt16, p2: Int16, p3: Int16, p4: Int16, p5: Int16, p6: Int16, p7: Int16, p8: Int16, p9: Int16

    public init(
        t1: UInt16, t2: Int16, t3: Int16, p1: UInt16, p2: Int16, p3: Int16, p4: Int16, p5: Int16,
        p6: Int16, p7: Int16, p8: Int16, p9: Int16
    ) {
        (self.t1, self.t2, self.t3) = (t1, t2, t3)
        (self.p1, self.p2, self.p3, self.p4, self.p5, self.p6, self.p7, self.p8, self.p9) = (p1, p2, p3, p4, p5, p6, p7, p8, p9)
    }

    /// Parses registers 0x88…0x9F (24 bytes, little-endian words `dig_T1`…`dig_P9`).
    public init(registers b: [UInt8]) throws {
        guard b.count == Self.byteCount else {
            throw BarometerDataError("BMP280 calibration needs \(Self.byteCount) bytes (registers 0x88–0x9F), got \(b.count)")
        }
        try checkNotConstant(b, "the calibration region 0x88–0x9F")
        let s = { (i: Int) in Int16(bitPattern: le16(b, i)) }
        self.init(
            t1: le16(b, 0), t2: s(2), t3: s(4), p1: le16(b, 6), p2: s(8), p3: s(10), p4: s(12), p5: s(14),
            p6: s(16), p7: s(18), p8: s(20), p9: s(22))
        // dig_T1 and dig_P1 are divisors-to-be (P1 = 0 makes every pressure 0): never 0 on a real part.
        guard t1 != 0, p1 != 0 else {
            throw BarometerDataError("calibration has dig_T1 = \(t1), dig_P1 = \(p1); a real part has neither 0")
        }
    }

    // MARK: Double (datasheet §8.1) — what the driver uses

    /// Temperature in °C and `t_fine` (the datasheet's fine temperature, truncated to an integer
    /// as the datasheet's double code does) from the 20-bit `adc_T`.
    @inlinable public func temperature(adcT: Int32) -> (celsius: Double, tFine: Int32) {
        let adc = Double(adcT), dt1 = Double(t1)
        let var1 = (adc / 16384.0 - dt1 / 1024.0) * Double(t2)
        let d = adc / 131072.0 - dt1 / 8192.0
        let var2 = (d * d) * Double(t3)
        return ((var1 + var2) / 5120.0, truncatedInt32(var1 + var2))
    }

    /// Pressure in Pa from the 20-bit `adc_P` and the `t_fine` of the same measurement. 0 when
    /// the calibration makes the divisor 0 (as the datasheet returns).
    @inlinable public func pressurePa(adcP: Int32, tFine: Int32) -> Double {
        var var1 = Double(tFine) / 2.0 - 64000.0
        var var2 = var1 * var1 * Double(p6) / 32768.0
        var2 = var2 + var1 * Double(p5) * 2.0
        var2 = var2 / 4.0 + Double(p4) * 65536.0
        var1 = (Double(p3) * var1 * var1 / 524288.0 + Double(p2) * var1) / 524288.0
        var1 = (1.0 + var1 / 32768.0) * Double(p1)
        if var1 == 0.0 { return 0 }
        var p = 1048576.0 - Double(adcP)
        p = (p - var2 / 4096.0) * 6250.0 / var1
        var1 = Double(p9) * p * p / 2147483648.0
        var2 = p * Double(p8) / 32768.0
        return p + (var1 + var2 + Double(p7)) / 16.0
    }

    // MARK: Integer (datasheet §3.11.3: 32-bit temperature, 64-bit pressure)

    /// Temperature in 0.01 °C and the integer `t_fine`. Wrapping arithmetic, as the C code on a
    /// two's-complement machine; `>>` rounds toward −∞.
    @inlinable public func temperatureInteger(adcT: Int32) -> (centiCelsius: Int32, tFine: Int32) {
        let a = adcT, t1 = Int32(self.t1), t2 = Int32(self.t2), t3 = Int32(self.t3)
        // Swift's shifts bind tighter than `*`: every C expression is parenthesised as written.
        let var1 = (((a >> 3) &- (t1 << 1)) &* t2) >> 11
        let d = (a >> 4) &- t1
        let var2 = (((d &* d) >> 12) &* t3) >> 14
        let tFine = var1 &+ var2
        return (((tFine &* 5) &+ 128) >> 8, tFine)
    }

    /// Pressure in Pa × 256 (Q24.8) from `adc_P` and the integer `t_fine`; 0 when the divisor is 0.
    @inlinable public func pressureQ24_8(adcP: Int32, tFine: Int32) -> UInt32 {
        var var1 = Int64(tFine) - 128000
        var var2 = var1 &* var1 &* Int64(p6)
        var2 = var2 &+ ((var1 &* Int64(p5)) &<< 17)
        var2 = var2 &+ (Int64(p4) &<< 35)
        var1 = ((var1 &* var1 &* Int64(p3)) >> 8) &+ ((var1 &* Int64(p2)) &<< 12)
        var1 = (((Int64(1) << 47) &+ var1) &* Int64(p1)) >> 33
        if var1 == 0 { return 0 }
        var p = 1048576 - Int64(adcP)
        let q = (((p &<< 31) &- var2) &* 3125).dividedReportingOverflow(by: var1)
        p = q.overflow ? 0 : q.partialValue
        var1 = (Int64(p9) &* (p >> 13) &* (p >> 13)) >> 25
        var2 = (Int64(p8) &* p) >> 19
        p = ((p &+ var1 &+ var2) >> 8) &+ (Int64(p7) &<< 4)
        return UInt32(truncatingIfNeeded: p)
    }
}

/// A BME280's calibration: the BMP280 words plus six humidity coefficients from 0xA1 and
/// 0xE1…0xE7 (dig_H4 and dig_H5 are 12-bit values sharing the nibbles of 0xE5).
public struct BME280Calibration: Sendable, Equatable {
    /// The humidity block's first register and length (0xA1 is read with the T/P region).
    public static let humidityRegister: UInt8 = 0xE1
    public static let humidityByteCount = 7
    /// 0x88…0xA1 as one burst (0xA0 is unused): 26 bytes.
    public static let mainByteCount = 26

    public var tp: BMP280Calibration
    public var h1: UInt8, h2: Int16, h3: UInt8, h4: Int16, h5: Int16, h6: Int8

    public init(tp: BMP280Calibration, h1: UInt8, h2: Int16, h3: UInt8, h4: Int16, h5: Int16, h6: Int8) {
        self.tp = tp
        (self.h1, self.h2, self.h3, self.h4, self.h5, self.h6) = (h1, h2, h3, h4, h5, h6)
    }

    /// Parses registers 0x88…0xA1 (26 bytes) and 0xE1…0xE7 (7 bytes).
    public init(registers main: [UInt8], humidity e: [UInt8]) throws {
        guard main.count == Self.mainByteCount, e.count == Self.humidityByteCount else {
            throw BarometerDataError(
                "BME280 calibration needs 26 bytes (0x88–0xA1) and 7 bytes (0xE1–0xE7), got \(main.count) and \(e.count)")
        }
        let tp = try BMP280Calibration(registers: Array(main[0..<24]))
        try checkNotConstant(e, "the humidity calibration region 0xE1–0xE7")
        // H4 = 0xE4 (bits 11:4, signed) | 0xE5 bits 3:0; H5 = 0xE6 (bits 11:4, signed) | 0xE5 bits 7:4.
        let h4 = Int16(Int8(bitPattern: e[3])) * 16 | Int16(e[4] & 0x0F)
        let h5 = Int16(Int8(bitPattern: e[5])) * 16 | Int16(e[4] >> 4)
        self.init(tp: tp, h1: main[25], h2: Int16(bitPattern: le16(e, 0)), h3: e[2], h4: h4, h5: h5, h6: Int8(bitPattern: e[6]))
    }

    /// Relative humidity in % (0…100) from the 16-bit `adc_H` and the double formula's `t_fine`.
    @inlinable public func humidityPercent(adcH: Int32, tFine: Int32) -> Double {
        var h = Double(tFine) - 76800.0
        h =
            (Double(adcH) - (Double(h4) * 64.0 + Double(h5) / 16384.0 * h))
            * (Double(h2) / 65536.0 * (1.0 + Double(h6) / 67108864.0 * h * (1.0 + Double(h3) / 67108864.0 * h)))
        h = h * (1.0 - Double(h1) * h / 524288.0)
        return h > 100.0 ? 100.0 : (h < 0.0 ? 0.0 : h)
    }
}

/// The raw ADC values of one BMP280/BME280 data burst (registers 0xF7…0xFC, and 0xFD…0xFE on a BME280).
public struct BMx280Raw: Sendable, Equatable {
    /// First data register; 6 bytes on a BMP280, 8 on a BME280.
    public static let register: UInt8 = 0xF7
    /// What a skipped or not-yet-made measurement reads as (20-bit) and its 16-bit humidity twin.
    public static let skipped: Int32 = 0x80000
    public static let skippedHumidity: Int32 = 0x8000

    public var adcT: Int32, adcP: Int32
    /// nil on a BMP280 burst (6 bytes).
    public var adcH: Int32?

    public init(adcT: Int32, adcP: Int32, adcH: Int32? = nil) {
        (self.adcT, self.adcP, self.adcH) = (adcT, adcP, adcH)
    }

    /// Decodes press_msb, press_lsb, press_xlsb[7:4], temp_msb, temp_lsb, temp_xlsb[7:4]
    /// (+ hum_msb, hum_lsb). `burst.count` must be 6 or 8.
    @inlinable public init?(burst b: UnsafeRawBufferPointer) {
        guard b.count == 6 || b.count == 8 else { return nil }
        adcP = Int32(b[0]) << 12 | Int32(b[1]) << 4 | Int32(b[2]) >> 4
        adcT = Int32(b[3]) << 12 | Int32(b[4]) << 4 | Int32(b[5]) >> 4
        adcH = b.count == 8 ? Int32(b[6]) << 8 | Int32(b[7]) : nil
    }

    /// The burst bytes for these values (what a simulated chip serves).
    public var burst: [UInt8] {
        var out: [UInt8] = [
            UInt8(truncatingIfNeeded: adcP >> 12), UInt8(truncatingIfNeeded: adcP >> 4), UInt8(truncatingIfNeeded: adcP << 4),
            UInt8(truncatingIfNeeded: adcT >> 12), UInt8(truncatingIfNeeded: adcT >> 4), UInt8(truncatingIfNeeded: adcT << 4),
        ]
        if let h = adcH { out += [UInt8(truncatingIfNeeded: h >> 8), UInt8(truncatingIfNeeded: h)] }
        return out
    }
}

/// `osh-edge decode` for the BMP280 and BME280: the datasheet's floating-point and integer results.
public enum BMx280Decode {
    public static let bmp280Layout = BarometerByteLayout(
        calibration: "24 bytes from 0x88 (0x88–0x9F)", burst: "6 bytes from 0xF7 (press msb lsb xlsb, temp msb lsb xlsb)",
        calibrationBytes: BMP280Calibration.byteCount, burstBytes: 6)
    public static let bme280Layout = BarometerByteLayout(
        calibration: "33 bytes: 0x88–0xA1 (26) then 0xE1–0xE7 (7)", burst: "8 bytes from 0xF7 (press, temp, hum msb lsb)",
        calibrationBytes: BME280Calibration.mainByteCount + BME280Calibration.humidityByteCount, burstBytes: 8)

    public static func decode(chip: String, humidity: Bool, calibration cal: [UInt8], burst: [UInt8]) throws -> BarometerDecodeResult {
        try (humidity ? bme280Layout : bmp280Layout).check(chip, calibration: cal, burst: burst)
        let tp: BMP280Calibration
        var hc: BME280Calibration?
        if humidity {
            let c = try BME280Calibration(
                registers: Array(cal[0..<BME280Calibration.mainByteCount]),
                humidity: Array(cal[BME280Calibration.mainByteCount...]))
            (tp, hc) = (c.tp, c)
        } else {
            tp = try BMP280Calibration(registers: cal)
        }
        guard let r = burst.withUnsafeBytes({ BMx280Raw(burst: $0) }) else {
            throw BarometerDataError("\(chip): a data burst it cannot read")
        }
        let t = tp.temperature(adcT: r.adcT)
        let pa = tp.pressurePa(adcP: r.adcP, tFine: t.tFine)
        let ti = tp.temperatureInteger(adcT: r.adcT)
        var values = [BarometerDecodeResult.RawValue(name: "adc_T", value: Int(r.adcT)), .init(name: "adc_P", value: Int(r.adcP))]
        var h: Double?
        if let hc, let adcH = r.adcH {
            values.append(.init(name: "adc_H", value: Int(adcH)))
            h = hc.humidityPercent(adcH: adcH, tFine: t.tFine)
        }
        return BarometerDecodeResult(
            chip: chip, raw: values, celsius: t.celsius, pressurePa: pa, pressureHPa: pa / 100,
            humidityPercent: h,
            integer: (ti.tFine, ti.centiCelsius, tp.pressureQ24_8(adcP: r.adcP, tFine: ti.tFine)), clamp: nil)
    }
}
