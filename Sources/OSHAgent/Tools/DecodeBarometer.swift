#if canImport(Glibc)
import Glibc
#endif
import OSHCore
import OSHPlatform

/// `osh-edge decode` and the barometer part of `osh-edge probe --dump`: compensated values from
/// register bytes as `i2cdump` shows them — the calibration region and one data burst. The same
/// pure functions as the drivers, so a user can check a board's numbers (or ours) by hand.
public struct BarometerDecodeResult: Sendable, Equatable {
    public var chip: String
    /// The raw ADC values, named as the datasheet names them, in burst order.
    public var raw: [RawValue]
    public var celsius: Double
    public var pressurePa: Double
    public var pressureHPa: Double
    public var humidityPercent: Double?
    /// BMP280/BME280: the datasheet's integer results too (t_fine, 0.01 °C, Pa × 256).
    public var integer: (tFine: Int32, centiCelsius: Int32, pressureQ24_8: UInt32)?
    /// BMP3: which range clamp applied, if any.
    public var clamp: String?

    public struct RawValue: Sendable, Equatable {
        public var name: String
        public var value: Int
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.chip == b.chip && a.raw == b.raw && a.celsius == b.celsius && a.pressurePa == b.pressurePa
            && a.pressureHPa == b.pressureHPa && a.humidityPercent == b.humidityPercent && a.clamp == b.clamp
            && a.integer?.tFine == b.integer?.tFine && a.integer?.centiCelsius == b.integer?.centiCelsius
            && a.integer?.pressureQ24_8 == b.integer?.pressureQ24_8
    }

    /// A readable table for a terminal.
    public var table: String {
        var lines = ["chip         \(chip)",
                     "raw          " + raw.map { "\($0.name) \($0.value)" }.joined(separator: "  "),
                     "temperature  \(BarometerDecode.fixed(celsius, 4)) °C",
                     "pressure     \(BarometerDecode.fixed(pressureHPa, 4)) hPa  (\(BarometerDecode.fixed(pressurePa, 4)) Pa)"]
        if let h = humidityPercent { lines.append("humidity     \(BarometerDecode.fixed(h, 4)) %RH") }
        if let i = integer {
            lines.append("integer      t_fine \(i.tFine)  T \(i.centiCelsius) (0.01 °C)  P \(i.pressureQ24_8) (Pa×256 = "
                         + "\(BarometerDecode.fixed(Double(i.pressureQ24_8) / 256, 2)) Pa)")
        }
        if let c = clamp { lines.append("clamped      \(c)") }
        return lines.joined(separator: "\n")
    }

    /// One JSON object on one line.
    public var json: String {
        let out = ByteBuffer(capacity: 512)
        var w = JSONWriter(out)
        w.beginObject()
        w.key("chip"); w.string(chip)
        w.key("raw"); w.beginObject()
        for r in raw { w.key(r.name); w.int(r.value) }
        w.endObject()
        w.key("temperatureC"); w.number(celsius)
        w.key("pressureHPa"); w.number(pressureHPa)
        w.key("pressurePa"); w.number(pressurePa)
        if let h = humidityPercent { w.key("humidityPercent"); w.number(h) }
        if let i = integer {
            w.key("integer"); w.beginObject()
            w.key("tFine"); w.int(Int(i.tFine))
            w.key("centiCelsius"); w.int(Int(i.centiCelsius))
            w.key("pressureQ24_8"); w.int(Int(i.pressureQ24_8))
            w.endObject()
        }
        if let c = clamp { w.key("clamp"); w.string(c) }
        w.endObject()
        return out.string
    }
}

public enum BarometerDecode {
    /// What `decode` expects for each chip: calibration bytes, data burst bytes.
    public static let layouts: [(chip: String, calibration: String, burst: String)] = [
        ("BMP280", "24 bytes from 0x88 (0x88–0x9F)", "6 bytes from 0xF7 (press msb lsb xlsb, temp msb lsb xlsb)"),
        ("BME280", "33 bytes: 0x88–0xA1 (26) then 0xE1–0xE7 (7)", "8 bytes from 0xF7 (press, temp, hum msb lsb)"),
        ("BMP388", "21 bytes from 0x31 (0x31–0x45)", "6 bytes from 0x04 (press xlsb lsb msb, temp xlsb lsb msb)"),
        ("BMP390", "21 bytes from 0x31 (0x31–0x45)", "6 bytes from 0x04 (press xlsb lsb msb, temp xlsb lsb msb)"),
        ("LPS22HB", "none: give - (it compensates on chip)", "5 bytes from 0x28 (PRESS_OUT_XL L H, TEMP_OUT_L H)"),
    ]

    /// Hex bytes as i2cdump or a user writes them: separators (space, `:`, `,`, `-`, `_`) and
    /// `0x` prefixes are ignored; "-" or "" alone is no bytes. nil when it is not hex.
    public static func parseHex(_ s: String) -> [UInt8]? {
        var digits: [UInt8] = []
        for token in s.split(whereSeparator: { " \t\n:,;-_".contains($0) }) {
            var t = Substring(token)
            if t.hasPrefix("0x") || t.hasPrefix("0X") { t = t.dropFirst(2) }
            for c in t.utf8 {
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digits.append(c - 48)
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digits.append(c - 87)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digits.append(c - 55)
                default: return nil
                }
            }
        }
        guard digits.count % 2 == 0 else { return nil }
        return stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
    }

    public static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { b in let s = String(b, radix: 16); return s.count == 1 ? "0" + s : s }.joined()
    }

    /// Decodes `calibration` and one data burst for `chip` (case-insensitive). Errors say which
    /// bytes the chip needs.
    public static func decode(chip: String, calibrationHex: String, rawHex: String) throws -> BarometerDecodeResult {
        guard let cal = parseHex(calibrationHex) else { throw BarometerDataError("calibration '\(calibrationHex)' is not hex bytes") }
        guard let raw = parseHex(rawHex) else { throw BarometerDataError("data burst '\(rawHex)' is not hex bytes") }
        return try decode(chip: chip, calibration: cal, burst: raw)
    }

    public static func decode(chip name: String, calibration cal: [UInt8], burst: [UInt8]) throws -> BarometerDecodeResult {
        guard let id = BarometerDrivers.identity(named: name), let layout = layouts.first(where: { $0.chip == id.name }) else {
            throw BarometerDataError("'\(name)' is not a known barometer; use one of \(BarometerDrivers.names.joined(separator: ", "))")
        }
        func need(_ ok: Bool, _ what: String) throws {
            if !ok { throw BarometerDataError("\(id.name) \(what) needs \(what == "calibration" ? layout.calibration : layout.burst); got \(what == "calibration" ? cal.count : burst.count) bytes") }
        }
        switch id.name {
        case "BMP280", "BME280":
            let humid = id.name == "BME280"
            try need(cal.count == (humid ? 33 : 24), "calibration")
            try need(burst.count == (humid ? 8 : 6), "data burst")
            let tp: BMP280Calibration
            var hc: BME280Calibration?
            if humid {
                let c = try BME280Calibration(registers: Array(cal[0..<26]), humidity: Array(cal[26...]))
                (tp, hc) = (c.tp, c)
            } else {
                tp = try BMP280Calibration(registers: cal)
            }
            guard let r = burst.withUnsafeBytes({ BMx280Raw(burst: $0) }) else { throw BarometerDataError("bad burst") }
            let t = tp.temperature(adcT: r.adcT)
            let pa = tp.pressurePa(adcP: r.adcP, tFine: t.tFine)
            let ti = tp.temperatureInteger(adcT: r.adcT)
            var values = [BarometerDecodeResult.RawValue(name: "adc_T", value: Int(r.adcT)), .init(name: "adc_P", value: Int(r.adcP))]
            var h: Double?
            if let hc, let adcH = r.adcH {
                values.append(.init(name: "adc_H", value: Int(adcH)))
                h = hc.humidityPercent(adcH: adcH, tFine: t.tFine)
            }
            return BarometerDecodeResult(chip: id.name, raw: values, celsius: t.celsius, pressurePa: pa, pressureHPa: pa / 100,
                                         humidityPercent: h,
                                         integer: (ti.tFine, ti.centiCelsius, tp.pressureQ24_8(adcP: r.adcP, tFine: ti.tFine)), clamp: nil)
        case "BMP388", "BMP390":
            try need(cal.count == BMP3Calibration.byteCount, "calibration")
            try need(burst.count == BMP3Raw.byteCount, "data burst")
            let c = try BMP3Calibration(registers: cal)
            guard let r = burst.withUnsafeBytes({ BMP3Raw(burst: $0) }) else { throw BarometerDataError("bad burst") }
            let v = c.compensate(uncompensatedT: r.temperature, uncompensatedP: r.pressure)
            let clamp: String? = switch v.clamp {
            case .none: nil
            case .temperatureBelowRange: "temperature below −40 °C (pressure not computed)"
            case .temperatureAboveRange: "temperature above 85 °C (pressure not computed)"
            case .pressureBelowRange: "pressure below 300 hPa"
            case .pressureAboveRange: "pressure above 1250 hPa"
            }
            return BarometerDecodeResult(chip: id.name, raw: [.init(name: "uncomp_T", value: Int(r.temperature)), .init(name: "uncomp_P", value: Int(r.pressure))],
                                         celsius: v.celsius, pressurePa: v.pa, pressureHPa: v.pa / 100, humidityPercent: nil, integer: nil, clamp: clamp)
        default:
            try need(cal.isEmpty, "calibration")
            try need(burst.count == LPS22HBRaw.byteCount, "data burst")
            guard let r = burst.withUnsafeBytes({ LPS22HBRaw(burst: $0) }) else { throw BarometerDataError("bad burst") }
            return BarometerDecodeResult(chip: id.name, raw: [.init(name: "PRESS_OUT", value: Int(r.pressure)), .init(name: "TEMP_OUT", value: Int(r.temperature))],
                                         celsius: r.celsius, pressurePa: r.pressureHPa * 100, pressureHPa: r.pressureHPa,
                                         humidityPercent: nil, integer: nil, clamp: nil)
        }
    }

    /// `v` with `decimals` digits after the point (no Foundation), e.g. 1006.5326.
    public static func fixed(_ v: Double, _ decimals: Int) -> String {
        guard v.isFinite else { return "\(v)" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (abs(v) * scale).rounded()
        guard scaled < 9e15 else { return "\(v)" }
        let n = Int(scaled), unit = Int(scale)
        var frac = String(n % unit)
        frac = String(repeating: "0", count: max(0, decimals - frac.count)) + frac
        return (v < 0 && n != 0 ? "-" : "") + "\(n / unit)" + (decimals > 0 ? "." + frac : "")
    }
}

/// One barometer `probe --dump` found: its bytes and what they decode to.
public struct BarometerProbeResult: Sendable {
    public var identity: I2CChipIdentity
    public var address: UInt8
    /// The calibration region(s) and one data burst as hex, exactly what `decode` takes.
    public var calibrationHex: String
    public var rawHex: String
    public var decoded: BarometerDecodeResult?
    /// Why it could not be read, when it was identified but failed after.
    public var error: String?
}

/// Looks for every known barometer at each of its addresses on `bus` (by ID register), starts
/// each one found with the default configuration, waits (≤ 1 s) for its first conversion and
/// returns its calibration bytes, one data burst and the decoded values. Addresses that do not
/// answer are skipped silently; nothing found gives [].
public func probeBarometers(bus: I2CBus) -> [BarometerProbeResult] {
    var found: [BarometerProbeResult] = []
    var taken: Set<UInt8> = []
    for id in BarometerDrivers.identities {
        for a in id.addresses where !taken.contains(a) {
            guard let d = BarometerDrivers.driver(for: id, bus: bus, address: a), (try? d.identify()) != nil else { continue }
            taken.insert(a)
            var result = BarometerProbeResult(identity: id, address: a, calibrationHex: "", rawHex: "", decoded: nil, error: nil)
            do {
                try d.start(BarometerConfiguration())
                var reading = try d.read()
                var waited = 0
                while reading == nil && waited < 50 {
                    usleep(20_000)
                    waited += 1
                    reading = try d.read()
                }
                result.calibrationHex = BarometerDecode.hex(d.calibrationBytes)
                result.rawHex = BarometerDecode.hex(d.lastBurst)
                if reading == nil { result.error = "no conversion finished within 1 s" } else {
                    result.decoded = try BarometerDecode.decode(chip: id.name, calibration: d.calibrationBytes, burst: d.lastBurst)
                }
            } catch {
                result.error = "\(error)"
            }
            found.append(result)
        }
    }
    return found
}
