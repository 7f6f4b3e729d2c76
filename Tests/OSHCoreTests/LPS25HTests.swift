import Foundation
import OSHCore
import XCTest

/// LPS25H conversion against the reference vectors (Fixtures/baro/lps25h_vectors.csv, origins in
/// that folder's README): register bytes → hPa and °C, equal to the exact values on every row
/// and to ST's float conversion (lps25hb-pid) within its float rounding.
final class LPS25HTests: XCTestCase {
    private func rows() throws -> [CSVRow] { CSVRow.parse(try fixture("baro/lps25h_vectors.csv")) }

    private func burst(_ r: CSVRow) -> [UInt8] {
        bytes(hex: r["PRESS_OUT_XL_0x28"] + r["PRESS_OUT_L_0x29"] + r["PRESS_OUT_H_0x2A"] + r["TEMP_OUT_L_0x2B"] + r["TEMP_OUT_H_0x2C"])
    }

    func testEveryRow() throws {
        let all = try rows()
        XCTAssertEqual(all.count, 40)
        for r in all {
            let b = burst(r)
            guard let raw = b.withUnsafeBytes({ LPS25HRaw(burst: $0) }) else { return XCTFail("burst, case \(r["case"])") }
            XCTAssertEqual(Int(raw.pressure), r.int("press_raw_int24"), "case \(r["case"])")
            XCTAssertEqual(Int(raw.temperature), r.int("temp_raw_int16"), "case \(r["case"])")
            // Exact: the correctly rounded value of the datasheet's formula.
            XCTAssertEqual(raw.pressureHPa, r.double("pressure_hPa"), "case \(r["case"])")
            XCTAssertEqual(raw.celsius, r.double("temperature_degC"), "case \(r["case"])")
            XCTAssertEqual(raw.burst, b, "case \(r["case"])")
            // ST's driver works in float and reads pressure unsigned: equal where PRESS_OUT's
            // sign bit is clear; its temperature is two float roundings away at most.
            let stP = try XCTUnwrap(Float(r["st_float_hPa"])), stT = try XCTUnwrap(Float(r["st_float_degC"]))
            if raw.pressure >= 0 { XCTAssertEqual(Float(raw.pressureHPa), stP, "case \(r["case"])") }
            XCTAssertEqual(Double(stT), raw.celsius, accuracy: 1e-5, "case \(r["case"])")
        }
    }

    /// AN4450 §4.3's worked example and its two reference temperatures.
    func testTheApplicationNotesExample() throws {
        let r = try XCTUnwrap(([0x8D, 0xF5, 0x3F, 0x7C, 0xE0] as [UInt8]).withUnsafeBytes { LPS25HRaw(burst: $0) })
        XCTAssertEqual(r.pressure, 0x3FF58D)
        XCTAssertEqual(r.pressureHPa, 1023.347, accuracy: 0.0005)
        XCTAssertEqual(r.temperature, -8068)
        XCTAssertEqual(r.celsius, 25.7, accuracy: 0.01)
        XCTAssertEqual(LPS25HRaw(pressure: 0, temperature: 0x6BD0).celsius, 100)
        XCTAssertEqual(LPS25HRaw(pressure: 0, temperature: Int16(bitPattern: 0xB050)).celsius, 0)
    }

    /// Byte order and sign: XL first; PRESS_OUT is two's complement (the datasheet), bit 23 a sign.
    func testByteOrderAndSign() throws {
        let r = try XCTUnwrap(([0x01, 0x02, 0x03, 0x04, 0x05] as [UInt8]).withUnsafeBytes { LPS25HRaw(burst: $0) })
        XCTAssertEqual(r.pressure, 0x030201)
        XCTAssertEqual(r.temperature, 0x0504)
        let minusOne = try XCTUnwrap(([0xFF, 0xFF, 0xFF, 0xFF, 0xFF] as [UInt8]).withUnsafeBytes { LPS25HRaw(burst: $0) })
        XCTAssertEqual(minusOne.pressure, -1)
        XCTAssertEqual(minusOne.celsius, 42.5 - 1.0 / 480, accuracy: 1e-12)
        XCTAssertNil(([0x00] as [UInt8]).withUnsafeBytes { LPS25HRaw(burst: $0) })
    }

    /// What the simulated chip writes comes back within half an LSB, and the registers' limits hold.
    func testRegistersForValuesRoundTrip() {
        for (hPa, c) in [(1013.25, 21.5), (260.0, -25.0), (1260.0, 105.0), (987.654321, 0.001)] {
            let r = LPS25HRaw.registers(hPa: hPa, celsius: c)
            XCTAssertEqual(r.pressureHPa, hPa, accuracy: 0.5 / 4096)
            XCTAssertEqual(r.celsius, c, accuracy: 0.5 / 480)
        }
        XCTAssertEqual(LPS25HRaw.registers(hPa: 1000, celsius: -40).temperature, Int16.min, "below −25.77 °C the register is full scale")
        XCTAssertEqual(LPS25HRaw.registers(hPa: 1000, celsius: 120).temperature, Int16.max)
    }

    func testDecodeEveryRowAndWrongLengths() throws {
        for r in try rows() {
            let d = try LPS25HDecode.decode(chip: "LPS25H", calibration: [], burst: burst(r))
            XCTAssertEqual(d.raw.map(\.name), ["PRESS_OUT", "TEMP_OUT"])
            XCTAssertEqual(d.raw.map(\.value), [r.int("press_raw_int24"), r.int("temp_raw_int16")])
            XCTAssertEqual(d.pressureHPa, r.double("pressure_hPa"), "case \(r["case"])")
            XCTAssertEqual(d.pressurePa, r.double("pressure_hPa") * 100, "case \(r["case"])")
            XCTAssertEqual(d.celsius, r.double("temperature_degC"), "case \(r["case"])")
            XCTAssertNil(d.humidityPercent)
        }
        XCTAssertThrowsError(try LPS25HDecode.decode(chip: "LPS25H", calibration: [1], burst: [UInt8](repeating: 0, count: 5))) { e in
            XCTAssertTrue("\(e)".contains("LPS25H calibration needs none: give -"), "\(e)")
        }
        XCTAssertThrowsError(try LPS25HDecode.decode(chip: "LPS25H", calibration: [], burst: [1, 2, 3])) { e in
            XCTAssertTrue("\(e)".contains("5 bytes from 0x28"), "\(e)")
        }
    }
}
