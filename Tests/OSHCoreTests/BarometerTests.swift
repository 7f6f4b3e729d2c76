import Foundation
import OSHCore
import XCTest

/// A row of a reference CSV by column name (quoted fields may hold commas).
struct CSVRow {
    let fields: [String: String]
    subscript(_ name: String) -> String {
        guard let v = fields[name] else { XCTFail("no column \(name)"); return "" }
        return v
    }
    func int(_ name: String) -> Int { Int(self[name]) ?? Int.min }
    func double(_ name: String) -> Double { Double(self[name]) ?? .nan }

    static func parse(_ text: String) -> [CSVRow] {
        var lines = text.split(whereSeparator: \.isNewline).map(String.init)
        guard !lines.isEmpty else { return [] }
        let header = split(lines.removeFirst())
        return lines.map { l in CSVRow(fields: Dictionary(uniqueKeysWithValues: zip(header, split(l)))) }
    }

    static func split(_ line: String) -> [String] {
        var out: [String] = [], cur = "", quoted = false
        for c in line {
            if c == "\"" { quoted.toggle() } else if c == ",", !quoted { out.append(cur); cur = "" } else { cur.append(c) }
        }
        out.append(cur)
        return out
    }
}

func bytes(hex: String) -> [UInt8] {
    var out: [UInt8] = []
    var chars = Array(hex.utf8)[...]
    while chars.count >= 2 {
        out.append(UInt8(String(decoding: chars.prefix(2), as: UTF8.self), radix: 16) ?? 0)
        chars = chars.dropFirst(2)
    }
    return out
}

/// The reference prints doubles with 10 decimals: equality of that rendering is the exact match.
func ten(_ v: Double) -> String { String(format: "%.10f", v) }

final class BarometerTests: XCTestCase {
    // MARK: BMP280

    func testBMP280EveryRowDoubleAndInteger() throws {
        let rows = CSVRow.parse(try fixture("baro/bmp280_vectors.csv"))
        XCTAssertEqual(rows.count, 152)
        for r in rows {
            let cal = try BMP280Calibration(registers: bytes(hex: r["regs_0x88_0x9F_hex"]))
            XCTAssertEqual(Int(cal.t1), r.int("dig_T1"))
            XCTAssertEqual(Int(cal.p9), r.int("dig_P9"))
            let adcT = Int32(r.int("adc_T")), adcP = Int32(r.int("adc_P"))
            let t = cal.temperature(adcT: adcT)
            XCTAssertEqual(Int(t.tFine), r.int("ds_t_fine_double"), "case \(r["case"])")
            XCTAssertEqual(ten(t.celsius), r["ds_T_double_degC"], "case \(r["case"])")
            XCTAssertEqual(ten(cal.pressurePa(adcP: adcP, tFine: t.tFine)), r["ds_P_double_pa"], "case \(r["case"])")
            let ti = cal.temperatureInteger(adcT: adcT)
            XCTAssertEqual(Int(ti.tFine), r.int("ds_t_fine_int"), "case \(r["case"])")
            XCTAssertEqual(Int(ti.centiCelsius), r.int("ds_T_int32_centideg"), "case \(r["case"])")
            XCTAssertEqual(Int(cal.pressureQ24_8(adcP: adcP, tFine: ti.tFine)), r.int("ds_P_int64_q24_8"), "case \(r["case"])")
        }
    }

    /// The datasheet's worked example: 25.08 °C, t_fine 128422, 100653.27 Pa printed (±0.05 Pa for
    /// the 64-bit result, whose published formula gives 3 LSB less; the double within 0.1 % and 0.05 Pa).
    func testBMP280DatasheetExample() throws {
        let cal = BMP280Calibration(
            t1: 27504, t2: 26435, t3: -1000, p1: 36477, p2: -10685, p3: 3024, p4: 2855,
            p5: 140, p6: -7, p7: 15500, p8: -14600, p9: 6000)
        let t = cal.temperature(adcT: 519888)
        XCTAssertEqual(t.celsius, 25.08, accuracy: 0.005)
        XCTAssertEqual(t.tFine, 128422)
        XCTAssertEqual(cal.pressurePa(adcP: 415148, tFine: t.tFine), 100653.27, accuracy: 0.05)
        let ti = cal.temperatureInteger(adcT: 519888)
        XCTAssertEqual(ti.centiCelsius, 2508)
        XCTAssertEqual(ti.tFine, 128422)
        XCTAssertEqual(Double(cal.pressureQ24_8(adcP: 415148, tFine: ti.tFine)) / 256, 100653.27, accuracy: 0.05)
    }

    // MARK: BME280

    func testBME280EveryRow() throws {
        let rows = CSVRow.parse(try fixture("baro/bme280_vectors.csv"))
        XCTAssertEqual(rows.count, 151)
        for r in rows {
            let cal = try BME280Calibration(registers: bytes(hex: r["regs_0x88_0xA1_hex"]), humidity: bytes(hex: r["regs_0xE1_0xE7_hex"]))
            XCTAssertEqual(
                [Int(cal.h1), Int(cal.h2), Int(cal.h3), Int(cal.h4), Int(cal.h5), Int(cal.h6)],
                ["dig_H1", "dig_H2", "dig_H3", "dig_H4", "dig_H5", "dig_H6"].map { r.int($0) }, "case \(r["case"])")
            let t = cal.tp.temperature(adcT: Int32(r.int("adc_T")))
            XCTAssertEqual(ten(t.celsius), r["ds_T_double_degC"], "case \(r["case"])")
            XCTAssertEqual(ten(cal.tp.pressurePa(adcP: Int32(r.int("adc_P")), tFine: t.tFine)), r["ds_P_double_pa"], "case \(r["case"])")
            XCTAssertEqual(ten(cal.humidityPercent(adcH: Int32(r.int("adc_H")), tFine: t.tFine)), r["ds_H_double_pct"], "case \(r["case"])")
            let ti = cal.tp.temperatureInteger(adcT: Int32(r.int("adc_T")))
            XCTAssertEqual(Int(cal.tp.pressureQ24_8(adcP: Int32(r.int("adc_P")), tFine: ti.tFine)), r.int("ds_P_int64_q24_8"))
        }
    }

    /// pimoroni's test: 24.7894877676 °C, 1006.61517564 hPa, 68.66996648709039 %RH to 4 decimals
    /// (their humidity uses an untruncated t_fine; the datasheet formula gives 68.6699643, 2e-6 away).
    func testBME280PimoroniValues() throws {
        let main = bytes(hex: "696d36643200e99802d6d00b231688fff9ff8c3cf8c67017004b"), e = bytes(hex: "780100112e031e")
        let cal = try BME280Calibration(registers: main, humidity: e)
        let t = cal.tp.temperature(adcT: 529191)
        XCTAssertEqual(t.celsius, 24.7894877676, accuracy: 1e-4)
        XCTAssertEqual(cal.tp.pressurePa(adcP: 326816, tFine: t.tFine) / 100, 1006.61517564, accuracy: 1e-4)
        XCTAssertEqual(cal.humidityPercent(adcH: 30281, tFine: t.tFine), 68.66996648709039, accuracy: 1e-4)
    }

    // MARK: BMP3

    func testBMP3EveryRow() throws {
        let rows = CSVRow.parse(try fixture("baro/bmp3_vectors.csv"))
        XCTAssertEqual(rows.count, 101)
        for r in rows {
            let cal = try BMP3Calibration(registers: bytes(hex: r["calib_regs_0x31_0x45_hex"]))
            let c = cal.compensate(uncompensatedT: UInt32(r.int("uncomp_T")), uncompensatedP: UInt32(r.int("uncomp_P")))
            XCTAssertEqual(ten(c.celsius), r["api_T_double_degC"], "case \(r["case"])")
            XCTAssertEqual(ten(c.pa), r["api_P_double_pa"], "case \(r["case"])")
            XCTAssertEqual(Int(c.clamp.rawValue), r.int("api_rslt_double"), "case \(r["case"])")
        }
    }

    /// elixir-sensors' real BMP388: 30.499314453874284 °C, 100876.00634692199 Pa (±1e-4).
    func testBMP388RealPart() throws {
        let cal = try BMP3Calibration(registers: bytes(hex: "236B5849F65CFFCEF42300EA636E79F3F6AA4312C4"))
        let c = cal.compensate(uncompensatedT: 8771699, uncompensatedP: 7184279)
        XCTAssertEqual(c.celsius, 30.499314453874284, accuracy: 1e-4)
        XCTAssertEqual(c.pa, 100876.00634692199, accuracy: 1e-4)
        XCTAssertEqual(c.clamp, .none)
        // Temperature out of range: clamped, and pressure is not computed (as Bosch's API).
        let hot = cal.compensate(uncompensatedT: 0xFFFFFF, uncompensatedP: 7184279)
        XCTAssertEqual(hot.celsius, 85)
        XCTAssertEqual(hot.clamp, .temperatureAboveRange)
        XCTAssertTrue(hot.pa.isNaN)
    }

    // MARK: LPS22HB

    func testLPS22HBEveryRow() throws {
        let rows = CSVRow.parse(try fixture("baro/lps22hb_vectors.csv"))
        XCTAssertEqual(rows.count, 37)
        for r in rows {
            let burst = bytes(
                hex: r["PRESS_OUT_XL_0x28"] + r["PRESS_OUT_L_0x29"] + r["PRESS_OUT_H_0x2A"] + r["TEMP_OUT_L_0x2B"] + r["TEMP_OUT_H_0x2C"])
            guard let raw = burst.withUnsafeBytes({ LPS22HBRaw(burst: $0) }) else { return XCTFail("burst") }
            XCTAssertEqual(Int(raw.pressure), r.int("press_raw_int24"), "case \(r["case"])")
            XCTAssertEqual(Int(raw.temperature), r.int("temp_raw_int16"), "case \(r["case"])")
            XCTAssertEqual(raw.pressureHPa, r.double("pressure_hPa"), "case \(r["case"])")
            XCTAssertEqual(raw.celsius, r.double("temperature_degC"), "case \(r["case"])")
            XCTAssertEqual(raw.burst, burst)
        }
    }

    // MARK: Raw bursts, calibration refusal, inversion, relative altitude

    func testBurstsRoundTripAndBadCalibrationIsRefused() throws {
        let r = BMx280Raw(adcT: 519888, adcP: 415148, adcH: 30281)
        XCTAssertEqual(r.burst, [0x65, 0x5A, 0xC0, 0x7E, 0xED, 0x00, 0x76, 0x49])
        XCTAssertEqual(r.burst.withUnsafeBytes { BMx280Raw(burst: $0) }, r)
        let p = BMP3Raw(pressure: 7184279, temperature: 8771699)
        XCTAssertEqual(p.burst.withUnsafeBytes { BMP3Raw(burst: $0) }, p)
        XCTAssertThrowsError(try BMP280Calibration(registers: [UInt8](repeating: 0xFF, count: 24))) { e in
            XCTAssertTrue("\(e)".contains("all 0xFF"), "\(e)")
        }
        XCTAssertThrowsError(try BMP280Calibration(registers: [1, 2, 3]))
        XCTAssertThrowsError(try BMP3Calibration(registers: [UInt8](repeating: 0, count: 21)))
    }

    func testInversionRoundTrips() throws {
        let bmp = try BMP280Calibration(registers: bytes(hex: "706b436718fc7d8e43d6d00b270b8c00f9ff8c3cf8c67017"))
        let bmp3 = try BMP3Calibration(registers: bytes(hex: "236B5849F65CFFCEF42300EA636E79F3F6AA4312C4"))
        for (c, h) in [(-20.0, 320.0), (0, 700), (21.5, 1013.25), (60, 1100)] {
            let r = bmp.raw(celsius: c, hPa: h)
            let t = bmp.temperature(adcT: r.adcT)
            XCTAssertEqual(t.celsius, c, accuracy: 0.01)
            XCTAssertEqual(bmp.pressurePa(adcP: r.adcP, tFine: t.tFine) / 100, h, accuracy: 0.01)
            let r3 = bmp3.raw(celsius: c, hPa: h)
            let c3 = bmp3.compensate(uncompensatedT: r3.temperature, uncompensatedP: r3.pressure)
            XCTAssertEqual(c3.celsius, c, accuracy: 0.001)
            XCTAssertEqual(c3.pa / 100, h, accuracy: 0.001)
        }
    }

    func testRelativeAltitudeFromTheFirstGoodSample() {
        var alt = RelativeAltitude()
        XCTAssertTrue(alt.update(pressureHPa: .nan).isNaN, "not a good sample")
        XCTAssertTrue(alt.update(pressureHPa: 0).isNaN, "a skipped measurement is not the reference")
        XCTAssertEqual(alt.update(pressureHPa: 1000), 0)
        // ≈ 8.42 m per hPa near 1000 hPa (ISA: R·T/(g·p) at 111 m, 14.3 °C).
        XCTAssertEqual(alt.update(pressureHPa: 999), 8.42, accuracy: 0.01)
        XCTAssertEqual(alt.update(pressureHPa: 1000), 0, accuracy: 1e-9)
        // 1013.25 → 898.76 hPa is 1000 m in the ISA.
        var sea = RelativeAltitude()
        _ = sea.update(pressureHPa: 1013.25)
        XCTAssertEqual(sea.update(pressureHPa: 898.76), 1000, accuracy: 0.5)
        sea.reset()
        XCTAssertEqual(sea.update(pressureHPa: 898.76), 0)
        XCTAssertEqual(RelativeAltitude.pressureAltitude(hPa: 1013.25), 0)
    }
}
