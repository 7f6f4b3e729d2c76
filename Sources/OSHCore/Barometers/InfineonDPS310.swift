// Infineon DPS310: coefficient parsing and compensation (the convert half; the fetch half is
// OSHPlatform/Barometers/DPS310Driver.swift).
//
// WHICH FORMULAS. The datasheet's (Infineon DPS310 datasheet, "How to calculate compensated
// pressure/temperature values"), in double and in its operation order:
//   Traw_sc = Traw / kT;  T = c0 · 0.5 + c1 · Traw_sc
//   Praw_sc = Praw / kP;  P = c00 + Praw_sc · (c10 + Praw_sc · (c20 + Praw_sc · c30))
//                             + Traw_sc · c01 + Traw_sc · Praw_sc · (c11 + Praw_sc · c21)
// so the results equal the reference columns `ds_T_double_degC` / `ds_P_double_pa` of
// Tests/OSHCoreTests/Fixtures/baro/dps310_vectors.csv exactly. Infineon's own code computes the
// same in single precision (`ifx_*` columns); the difference is float rounding (≤ 0.014 Pa for
// the real parts' rows). No clamping: the chip's range is 300–1200 hPa, −40…85 °C, and
// BarometerSeries drops implausible pressures.

/// The scale factors kP / kT for oversampling codes PM_PRC / TMP_PRC 0…7 (×1 … ×128), the
/// datasheet's "Compensation Scale Factors" table (Infineon's drivers hold the same numbers). Codes 4…7 assume the result bit shift (CFG_REG
/// P_SHIFT / T_SHIFT) is on, as it must be above ×8.
public enum DPS310Scale {
    public static let factors: [Double] = [524288, 1572864, 3670016, 7864320, 253952, 516096, 1040384, 2088960]

    /// kP or kT for an oversampling code; nil for the reserved codes 8…15.
    @inlinable public static func factor(_ code: UInt8) -> Double? {
        code < 8 ? factors[Int(code)] : nil
    }

    /// Measurement time (ms) of one result at oversampling code `code`: 2.0 + 1.6 · 2^code
    /// (3.6, 5.2, 8.4, 14.8, 27.6, 53.2, 104.4, 206.8 ms — the datasheet's table; Infineon's
    /// drivers compute it the same way, `calcBusyTime`).
    @inlinable public static func measurementMilliseconds(_ code: UInt8) -> Double {
        2.0 + 1.6 * Double(1 << Int(min(code, 7)))
    }
}

/// The nine calibration coefficients of a DPS310 (18 bytes from COEF 0x10), two's complement.
public struct DPS310Calibration: Sendable, Equatable {
    public static let register: UInt8 = 0x10
    public static let byteCount = 18

    /// 12-bit: temperature offset and slope.
    public var c0: Int32, c1: Int32
    /// 20-bit: pressure offset and first-order slope.
    public var c00: Int32, c10: Int32
    /// 16-bit: the remaining pressure terms.
    public var c01: Int32, c11: Int32, c20: Int32, c21: Int32, c30: Int32

    /// Parses COEF 0x10–0x21: c0 = 0x10 << 4 | 0x11 >> 4; c1 = (0x11 & 0x0F) << 8 | 0x12; c00 =
    /// 0x13 << 12 | 0x14 << 4 | 0x15 >> 4; c10 = (0x15 & 0x0F) << 16 | 0x16 << 8 | 0x17; then
    /// c01, c11, c20, c21, c30 as big-endian 16-bit words from 0x18.
    public init(registers b: [UInt8]) throws {
        guard b.count == Self.byteCount else {
            throw BarometerDataError("DPS310 coefficients need \(Self.byteCount) bytes (registers 0x10–0x21), got \(b.count)")
        }
        try checkNotConstant(b, "the coefficient region 0x10–0x21")
        let u = { (i: Int) in UInt32(b[i]) }
        c0 = Self.signed(u(0) << 4 | u(1) >> 4, bits: 12)
        c1 = Self.signed((u(1) & 0x0F) << 8 | u(2), bits: 12)
        c00 = Self.signed(u(3) << 12 | u(4) << 4 | u(5) >> 4, bits: 20)
        c10 = Self.signed((u(5) & 0x0F) << 16 | u(6) << 8 | u(7), bits: 20)
        let word = { (i: Int) in Self.signed(u(i) << 8 | u(i + 1), bits: 16) }
        (c01, c11, c20, c21, c30) = (word(8), word(10), word(12), word(14), word(16))
    }

    public init(c0: Int32, c1: Int32, c00: Int32, c10: Int32, c01: Int32, c11: Int32, c20: Int32, c21: Int32, c30: Int32) {
        (self.c0, self.c1, self.c00, self.c10) = (c0, c1, c00, c10)
        (self.c01, self.c11, self.c20, self.c21, self.c30) = (c01, c11, c20, c21, c30)
    }

    /// The 18 register bytes these coefficients are read from (the inverse of `init(registers:)`).
    public var registers: [UInt8] {
        let m = { (v: Int32, bits: Int) in UInt32(bitPattern: v) & (UInt32(1) << UInt32(bits) - 1) }
        let (a, b, p, q) = (m(c0, 12), m(c1, 12), m(c00, 20), m(c10, 20))
        var out: [UInt8] = [
            UInt8(a >> 4), UInt8((a & 0x0F) << 4 | b >> 8), UInt8(b & 0xFF),
            UInt8(p >> 12), UInt8((p >> 4) & 0xFF), UInt8((p & 0x0F) << 4 | q >> 16),
            UInt8((q >> 8) & 0xFF), UInt8(q & 0xFF),
        ]
        for w in [c01, c11, c20, c21, c30] {
            let v = m(w, 16)
            out += [UInt8(v >> 8), UInt8(v & 0xFF)]
        }
        return out
    }

    /// The low `bits` of `v` as a two's complement number.
    @inlinable static func signed(_ v: UInt32, bits: Int) -> Int32 {
        let shift = UInt32(32 - bits)
        return Int32(bitPattern: v << shift) >> Int32(shift)
    }

    /// Traw_sc and °C from the raw temperature and kT.
    @inlinable public func temperature(raw: Int32, kT: Double) -> (scaled: Double, celsius: Double) {
        let t = Double(raw) / kT
        return (t, Double(c0) * 0.5 + Double(c1) * t)
    }

    /// Pa from the raw pressure, kP and Traw_sc (the temperature the pressure was measured at).
    @inlinable public func pressurePa(raw: Int32, kP: Double, scaledTemperature t: Double) -> Double {
        let p = Double(raw) / kP
        return Double(c00) + p * (Double(c10) + p * (Double(c20) + p * Double(c30))) + t * Double(c01)
            + t * p * (Double(c11) + p * Double(c21))
    }

    /// Both: °C and Pa.
    @inlinable public func compensate(rawP: Int32, rawT: Int32, kP: Double, kT: Double) -> (celsius: Double, pa: Double) {
        let t = temperature(raw: rawT, kT: kT)
        return (t.celsius, pressurePa(raw: rawP, kP: kP, scaledTemperature: t.scaled))
    }
}

/// One DPS310 burst: PRS_B2…B0, TMP_B2…B0 (24-bit two's complement, most significant byte first),
/// then PRS_CFG and TMP_CFG, whose oversampling codes say which kP / kT the values need.
public struct DPS310Raw: Sendable, Equatable {
    public static let register: UInt8 = 0x00
    public static let byteCount = 8
    public var pressure: Int32, temperature: Int32
    /// PRS_CFG and TMP_CFG as read with the values.
    public var pressureConfig: UInt8, temperatureConfig: UInt8

    public init(pressure: Int32, temperature: Int32, pressureConfig: UInt8, temperatureConfig: UInt8) {
        (self.pressure, self.temperature) = (pressure, temperature)
        (self.pressureConfig, self.temperatureConfig) = (pressureConfig, temperatureConfig)
    }

    @inlinable public init?(burst b: UnsafeRawBufferPointer) {
        guard b.count == Self.byteCount else { return nil }
        pressure = DPS310Calibration.signed(UInt32(b[0]) << 16 | UInt32(b[1]) << 8 | UInt32(b[2]), bits: 24)
        temperature = DPS310Calibration.signed(UInt32(b[3]) << 16 | UInt32(b[4]) << 8 | UInt32(b[5]), bits: 24)
        pressureConfig = b[6]
        temperatureConfig = b[7]
    }

    /// PM_PRC (PRS_CFG bits 3:0) and TMP_PRC (TMP_CFG bits 2:0).
    @inlinable public var pressureOversampling: UInt8 { pressureConfig & 0x0F }
    @inlinable public var temperatureOversampling: UInt8 { temperatureConfig & 0x07 }

    public var burst: [UInt8] {
        let p = UInt32(bitPattern: pressure), t = UInt32(bitPattern: temperature)
        return [
            UInt8((p >> 16) & 0xFF), UInt8((p >> 8) & 0xFF), UInt8(p & 0xFF),
            UInt8((t >> 16) & 0xFF), UInt8((t >> 8) & 0xFF), UInt8(t & 0xFF), pressureConfig, temperatureConfig,
        ]
    }
}

/// `osh-edge decode` for the DPS310: the burst carries PRS_CFG / TMP_CFG, so the bytes alone say
/// which scale factors apply.
public enum DPS310Decode {
    public static let layout = BarometerByteLayout(
        calibration: "18 bytes from 0x10 (0x10–0x21)",
        burst: "8 bytes from 0x00 (PRS_B2 B1 B0, TMP_B2 B1 B0, PRS_CFG, TMP_CFG)",
        calibrationBytes: DPS310Calibration.byteCount, burstBytes: DPS310Raw.byteCount)

    public static func decode(chip: String, calibration cal: [UInt8], burst: [UInt8]) throws -> BarometerDecodeResult {
        try layout.check(chip, calibration: cal, burst: burst)
        let c = try DPS310Calibration(registers: cal)
        guard let r = burst.withUnsafeBytes({ DPS310Raw(burst: $0) }) else {
            throw BarometerDataError("\(chip): a data burst it cannot read")
        }
        guard let kP = DPS310Scale.factor(r.pressureOversampling), let kT = DPS310Scale.factor(r.temperatureOversampling) else {
            throw BarometerDataError(
                "\(chip): PRS_CFG (byte 7 of the burst) holds oversampling code \(r.pressureOversampling), "
                    + "which the datasheet reserves; give the registers 0x00–0x07 as read")
        }
        let v = c.compensate(rawP: r.pressure, rawT: r.temperature, kP: kP, kT: kT)
        return BarometerDecodeResult(
            chip: chip,
            raw: [
                .init(name: "Praw", value: Int(r.pressure)),
                .init(name: "Traw", value: Int(r.temperature)),
            ],
            celsius: v.celsius, pressurePa: v.pa, pressureHPa: v.pa / 100, humidityPercent: nil,
            integer: nil, clamp: nil)
    }
}

extension DPS310Calibration {
    /// The raw temperature and pressure that compensate to `celsius` and `hPa` at scale factors
    /// kT / kP (24-bit two's complement).
    public func raw(celsius: Double, hPa: Double, kP: Double, kT: Double) -> (pressure: Int32, temperature: Int32) {
        let t = Int32(BarometerInversion.closest(-0x800000, 0x7FFFFF, target: celsius) { temperature(raw: Int32($0), kT: kT).celsius })
        let ts = temperature(raw: t, kT: kT).scaled
        // Real parts' pressures lie within Praw_sc −1…1 (c00 ≈ 80 000 Pa, c10 ≈ −56 000 Pa), where
        // c10 dominates and the cubic is monotone; outside it the cubic may bend back.
        let k = Int64(kP)
        let p = Int32(
            BarometerInversion.closest(max(-k, -0x800000), min(k, 0x7FFFFF), target: hPa * 100) {
                pressurePa(raw: Int32($0), kP: kP, scaledTemperature: ts)
            })
        return (p, t)
    }
}
