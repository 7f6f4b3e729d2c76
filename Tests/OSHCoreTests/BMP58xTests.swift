import Foundation
import OSHCore
import XCTest

/// BMP581/BMP585 conversion against the reference vectors (Fixtures/baro/bmp58x_vectors.csv,
/// origins in that folder's README): register bytes → °C and Pa, equal to the datasheet's exact
/// values and to Bosch's BMP5 API (float build) on every row.
final class BMP58xTests: XCTestCase {
    private func rows() throws -> [CSVRow] { CSVRow.parse(try fixture("baro/bmp58x_vectors.csv")) }

    func testEveryRow() throws {
        let all = try rows()
        XCTAssertEqual(all.count, 64)
        for r in all {
            let burst = bytes(hex: r["regs_0x1D_0x22_hex"])
            guard let raw = burst.withUnsafeBytes({ BMP58xRaw(burst: $0) }) else { return XCTFail("burst, case \(r["case"])") }
            XCTAssertEqual(Int(raw.temperature), r.int("temp_raw_int24"), "case \(r["case"])")
            XCTAssertEqual(Int(raw.pressure), r.int("press_raw_uint24"), "case \(r["case"])")
            // Exact: the datasheet's division by a power of two, and the API's float agrees bit for bit.
            XCTAssertEqual(raw.celsius, r.double("ds_T_degC"), "case \(r["case"])")
            XCTAssertEqual(raw.pressurePa, r.double("ds_P_pa"), "case \(r["case"])")
            XCTAssertEqual(raw.celsius, r.double("api_T_float_degC"), "case \(r["case"])")
            XCTAssertEqual(raw.pressurePa, r.double("api_P_float_pa"), "case \(r["case"])")
            XCTAssertEqual(raw.burst, burst, "case \(r["case"])")
        }
    }

    func testDecodeEveryRowGivesTheSameNumbers() throws {
        for r in try rows() {
            let d = try BMP58xDecode.decode(chip: "BMP585", calibration: [], burst: bytes(hex: r["regs_0x1D_0x22_hex"]))
            XCTAssertEqual(d.chip, "BMP585")
            XCTAssertEqual(d.raw.map(\.name), ["TEMP_DATA", "PRESS_DATA"])
            XCTAssertEqual(d.raw.map(\.value), [r.int("temp_raw_int24"), r.int("press_raw_uint24")])
            XCTAssertEqual(d.celsius, r.double("ds_T_degC"), "case \(r["case"])")
            XCTAssertEqual(d.pressurePa, r.double("ds_P_pa"), "case \(r["case"])")
            XCTAssertEqual(d.pressureHPa, r.double("ds_P_pa") / 100, "case \(r["case"])")
            XCTAssertNil(d.humidityPercent)
            XCTAssertNil(d.integer)
            XCTAssertNil(d.clamp)
        }
    }

    /// Byte order and signedness, spelled out: XLSB first; temperature signed, pressure not.
    func testByteOrderAndSignedness() throws {
        let r = try XCTUnwrap(([0x01, 0x02, 0x03, 0x04, 0x05, 0x06] as [UInt8]).withUnsafeBytes { BMP58xRaw(burst: $0) })
        XCTAssertEqual(r.temperature, 0x030201)
        XCTAssertEqual(r.pressure, 0x060504)
        let extremes = try XCTUnwrap(([0x00, 0x00, 0x80, 0xFF, 0xFF, 0xFF] as [UInt8]).withUnsafeBytes { BMP58xRaw(burst: $0) })
        XCTAssertEqual(extremes.celsius, -128)
        XCTAssertEqual(extremes.pressurePa, 262_143.984375)
        let minusOne = try XCTUnwrap(([0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x80] as [UInt8]).withUnsafeBytes { BMP58xRaw(burst: $0) })
        XCTAssertEqual(minusOne.celsius, -1.0 / 65536)
        XCTAssertEqual(minusOne.pressurePa, 131_072, "bit 23 of pressure is a value, not a sign")
        XCTAssertEqual(BMP58xRaw(temperature: -2_621_440, pressure: 6_484_800).burst, [0x00, 0x00, 0xD8, 0x40, 0xF3, 0x62])
        XCTAssertNil(([0x00] as [UInt8]).withUnsafeBytes { BMP58xRaw(burst: $0) })
    }

    /// The registers' reset value (0x7F in every byte) is "not measured", for either register.
    func testResetValueIsNotAMeasurement() throws {
        let reset = try XCTUnwrap([UInt8](repeating: 0x7F, count: 6).withUnsafeBytes { BMP58xRaw(burst: $0) })
        XCTAssertFalse(reset.isMeasured)
        XCTAssertFalse(BMP58xRaw(temperature: 25 << 16, pressure: BMP58xRaw.notMeasured).isMeasured)
        XCTAssertFalse(BMP58xRaw(temperature: Int32(BMP58xRaw.notMeasured), pressure: 6_484_800).isMeasured)
        XCTAssertTrue(BMP58xRaw(temperature: 25 << 16, pressure: 6_484_800).isMeasured)
        XCTAssertTrue(BMP58xRaw(temperature: -1, pressure: 0).isMeasured)
    }

    func testWrongLengthsSayWhatIsNeeded() {
        XCTAssertThrowsError(try BMP58xDecode.decode(chip: "BMP581", calibration: [1], burst: [UInt8](repeating: 0, count: 6))) { e in
            XCTAssertTrue("\(e)".contains("BMP581 calibration needs none: give -"), "\(e)")
        }
        XCTAssertThrowsError(try BMP58xDecode.decode(chip: "BMP581", calibration: [], burst: [1, 2, 3])) { e in
            XCTAssertTrue("\(e)".contains("6 bytes from 0x1D"), "\(e)")
            XCTAssertTrue("\(e)".contains("got 3 bytes"), "\(e)")
        }
    }
}
