import Foundation
import OSHCore
import XCTest

/// The DPS310's pure conversion against Fixtures/baro/dps310_vectors.csv (see its README): the
/// datasheet columns exactly, Infineon's float code within float rounding.
final class DPS310Tests: XCTestCase {
    private func rows() throws -> [CSVRow] { CSVRow.parse(try fixture("baro/dps310_vectors.csv")) }

    private func calibration(_ r: CSVRow) throws -> DPS310Calibration {
        try DPS310Calibration(registers: bytes(hex: r["coef_regs_0x10_0x21_hex"]))
    }

    /// The row's registers 0x00–0x07 as the chip holds them.
    private func burst(_ r: CSVRow) -> [UInt8] {
        bytes(hex: r["prs_regs_0x00_0x02_hex"] + r["tmp_regs_0x03_0x05_hex"]) + [UInt8(r.int("pm_prc")), UInt8(r.int("tmp_prc"))]
    }

    /// The sizes of the formula's terms: float code rounds relative to them, not to the result.
    private func scales(_ c: DPS310Calibration, _ r: CSVRow) -> (t: Double, p: Double) {
        let x = Double(r.int("Praw")) / r.double("kP"), t = Double(r.int("Traw")) / r.double("kT")
        let d = { (v: Int32) in abs(Double(v)) }
        return (
            d(c.c0) / 2 + abs(d(c.c1) * t),
            d(c.c00) + abs(x * d(c.c10)) + abs(x * x * d(c.c20)) + abs(x * x * x * d(c.c30)) + abs(t * d(c.c01))
                + abs(t * x * d(c.c11)) + abs(t * x * x * d(c.c21))
        )
    }

    func testEveryRow() throws {
        let all = try rows()
        XCTAssertEqual(all.count, 141)
        for r in all {
            let id = "case \(r["case"])"
            let c = try calibration(r)
            XCTAssertEqual(
                [c.c0, c.c1, c.c00, c.c10, c.c01, c.c11, c.c20, c.c21, c.c30].map(Int.init),
                ["c0", "c1", "c00", "c10", "c01", "c11", "c20", "c21", "c30"].map { r.int($0) }, id)
            XCTAssertEqual(c.registers, bytes(hex: r["coef_regs_0x10_0x21_hex"]), id)
            let b = burst(r)
            let raw = try XCTUnwrap(b.withUnsafeBytes { DPS310Raw(burst: $0) }, id)
            XCTAssertEqual(raw.burst, b, id)
            XCTAssertEqual(Int(raw.pressure), r.int("Praw"), id)
            XCTAssertEqual(Int(raw.temperature), r.int("Traw"), id)
            let kP = try XCTUnwrap(DPS310Scale.factor(raw.pressureOversampling)),
                kT = try XCTUnwrap(DPS310Scale.factor(raw.temperatureOversampling))
            XCTAssertEqual(kP, r.double("kP"), id)
            XCTAssertEqual(kT, r.double("kT"), id)

            let v = c.compensate(rawP: raw.pressure, rawT: raw.temperature, kP: kP, kT: kT)
            XCTAssertEqual(ten(v.celsius), r["ds_T_double_degC"], id)
            XCTAssertEqual(ten(v.pa), r["ds_P_double_pa"], id)
            // Infineon's float code: within 1e-6 (≈ 17 float ulps) of the terms' sizes; the
            // worst row is at 4.
            let s = scales(c, r)
            XCTAssertEqual(v.celsius, r.double("ifx_T_float_degC"), accuracy: 1e-6 * max(s.t, 1), id)
            XCTAssertEqual(v.pa, r.double("ifx_P_float_hpa") * 100, accuracy: 1e-6 * max(s.p, 1), id)
            // Infineon's Arduino code agrees where its integer c0 / 2U does (c0 even and ≥ 0),
            // is 0.5 °C low for odd c0 ≥ 0, and is unusable for c0 < 0 (unsigned division).
            if c.c0 >= 0 {
                let low = c.c0 % 2 == 0 ? 0.0 : 0.5
                XCTAssertEqual(v.celsius - low, r.double("ard_T_float_degC"), accuracy: 1e-6 * max(s.t, 1), id)
                XCTAssertEqual(v.pa, r.double("ard_P_float_pa"), accuracy: 1e-6 * max(s.p, 1), id)
            } else {
                XCTAssertGreaterThan(r.double("ard_T_float_degC"), 2e9, id)
            }

            // The decode command: the same numbers from the same bytes.
            let d = try DPS310Decode.decode(chip: "DPS310", calibration: c.registers, burst: b)
            XCTAssertEqual(d.raw.map(\.value), [r.int("Praw"), r.int("Traw")], id)
            XCTAssertEqual(ten(d.pressurePa), r["ds_P_double_pa"], id)
            XCTAssertEqual(ten(d.celsius), r["ds_T_double_degC"], id)
        }
    }

    /// Infineon issue #23's part: Praw −1509278 at ×4, Traw 156656 read at ×1 — 24.55 °C and
    /// 1004.24 hPa, as Infineon's code gives them (24.5498962, 1004.24487).
    func testRealPart() throws {
        let c = try DPS310Calibration(registers: bytes(hex: "0DFEDD138CAF251DF3B70598D9410098FAD7"))
        XCTAssertEqual(
            c, DPS310Calibration(c0: 223, c1: -291, c00: 80074, c10: -56035, c01: -3145, c11: 1432, c20: -9919, c21: 152, c30: -1321))
        let v = c.compensate(rawP: -1509278, rawT: 156656, kP: 3670016, kT: 524288)
        XCTAssertEqual(v.celsius, 24.5498962, accuracy: 1e-6)
        XCTAssertEqual(v.pa / 100, 1004.24487, accuracy: 1e-4)
        let d = try DPS310Decode.decode(chip: "DPS310", calibration: c.registers, burst: bytes(hex: "E8F8620263F00200"))
        XCTAssertEqual(d.pressurePa, v.pa)
        XCTAssertEqual(d.celsius, v.celsius)
        XCTAssertNil(d.clamp)
        XCTAssertTrue(d.table.contains("Praw -1509278  Traw 156656"), d.table)
    }

    func testRefusals() throws {
        XCTAssertThrowsError(try DPS310Calibration(registers: [UInt8](repeating: 0xFF, count: 18))) { e in
            XCTAssertTrue("\(e)".contains("0x10–0x21 reads all 0xFF"), "\(e)")
        }
        XCTAssertThrowsError(try DPS310Calibration(registers: [1, 2, 3]))
        let cal = issue23Coefficients
        XCTAssertThrowsError(try DPS310Decode.decode(chip: "DPS310", calibration: cal, burst: [0, 0, 0, 0, 0, 0])) { e in
            XCTAssertTrue("\(e)".contains("8 bytes from 0x00 (PRS_B2 B1 B0, TMP_B2 B1 B0, PRS_CFG, TMP_CFG); got 6"), "\(e)")
        }
        // PM_PRC 8…15 is reserved: no scale factor to use.
        XCTAssertThrowsError(try DPS310Decode.decode(chip: "DPS310", calibration: cal, burst: [0, 0, 0, 0, 0, 0, 0x08, 0])) { e in
            XCTAssertTrue("\(e)".contains("oversampling code 8"), "\(e)")
        }
        // PRS_CFG's rate bits do not matter to the decode.
        let a = try DPS310Decode.decode(chip: "DPS310", calibration: cal, burst: [0xE8, 0xF8, 0x62, 0x02, 0x63, 0xF0, 0x02, 0x00])
        let b = try DPS310Decode.decode(chip: "DPS310", calibration: cal, burst: [0xE8, 0xF8, 0x62, 0x02, 0x63, 0xF0, 0x72, 0x80])
        XCTAssertEqual(a, b)
    }

    func testScaleFactorsAndMeasurementTimes() {
        XCTAssertEqual(
            (0...7).map { DPS310Scale.factor(UInt8($0)) ?? 0 },
            [524288, 1572864, 3670016, 7864320, 253952, 516096, 1040384, 2088960])
        XCTAssertNil(DPS310Scale.factor(8))
        let ms = (0...7).map { DPS310Scale.measurementMilliseconds(UInt8($0)) }
        for (got, want) in zip(ms, [3.6, 5.2, 8.4, 14.8, 27.6, 53.2, 104.4, 206.8]) { XCTAssertEqual(got, want, accuracy: 1e-9) }
    }

    /// The simulated chip's inversion: the codes compensate back to the asked values within one
    /// code's worth (|c10| / kP Pa, |c1| / kT °C).
    func testInversionRoundTrips() throws {
        let c = try DPS310Calibration(registers: issue23Coefficients)
        for (kP, kT) in [(524288.0, 524288.0), (253952, 524288), (1040384, 1572864)] {
            for hPa in [300.0, 850, 1013.25, 1200] {
                for celsius in [-40.0, 0, 21.5, 85] {
                    let r = c.raw(celsius: celsius, hPa: hPa, kP: kP, kT: kT)
                    let v = c.compensate(rawP: r.pressure, rawT: r.temperature, kP: kP, kT: kT)
                    XCTAssertEqual(v.celsius, celsius, accuracy: 291 / kT, "\(hPa) \(celsius)")
                    XCTAssertEqual(v.pa, hPa * 100, accuracy: 56035 / kP, "\(hPa) \(celsius)")
                }
            }
        }
    }
}

/// Infineon issue #23's coefficients (SimulatedDPS310's too; OSHCoreTests does not see OSHSimulation).
private let issue23Coefficients: [UInt8] = bytes(hex: "0DFEDD138CAF251DF3B70598D9410098FAD7")
