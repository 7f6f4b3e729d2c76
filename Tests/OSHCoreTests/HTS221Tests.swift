import Foundation
import OSHCore
import XCTest

/// HTS221 calibration parsing and interpolation against the reference vectors
/// (Fixtures/hygro/hts221_vectors.csv, origins in that folder's README): 16 calibration bytes
/// and the H_OUT/T_OUT counts → %RH and °C, equal to the exact line on every row and to ST's
/// float code (hts221-pid getters, its example's interpolation and 0–100 % hold) within 5e-5.
final class HTS221Tests: XCTestCase {
    private func rows() throws -> [CSVRow] { CSVRow.parse(try fixture("hygro/hts221_vectors.csv")) }

    func testEveryRow() throws {
        let all = try rows()
        XCTAssertEqual(all.count, 96)
        XCTAssertEqual(Set(all.map { $0["set"] }), ["ludwigs", "stforum_t", "sense_emu", "edge_msb"])
        for r in all {
            let cal = try HTS221Calibration(registers: bytes(hex: r["calib_0x30_0x3F_hex"]))
            let h = try XCTUnwrap(Int16(r["H_OUT"])), t = try XCTUnwrap(Int16(r["T_OUT"]))
            let what = "case \(r["case"]) (\(r["set"]) \(r["kind"]))"
            XCTAssertEqual(cal.unclampedHumidity(raw: h), r.double("exact_rh_unclamped"), what)
            XCTAssertEqual(cal.humidityPercent(raw: h), r.double("exact_rh"), what)
            XCTAssertEqual(cal.celsius(raw: t), r.double("exact_degC"), what)
            XCTAssertEqual(cal.humidityPercent(raw: h), r.double("st_float_rh"), accuracy: 5e-5, what)
            XCTAssertEqual(cal.celsius(raw: t), r.double("st_float_degC"), accuracy: 5e-5, what)
            XCTAssertEqual(
                cal.reading(humidityRaw: h, temperatureRaw: t),
                HygrometerReading(celsius: r.double("exact_degC"), humidityPercent: r.double("exact_rh")), what)
        }
    }

    /// The calibration points themselves come out exactly, for every set.
    func testCalibrationPointsAreExact() throws {
        for r in try rows() where r["kind"] == "h0_t0" || r["kind"] == "h1_t1" {
            let cal = try HTS221Calibration(registers: bytes(hex: r["calib_0x30_0x3F_hex"]))
            let first = r["kind"] == "h0_t0"
            XCTAssertEqual(cal.unclampedHumidity(raw: first ? cal.h0T0Out : cal.h1T0Out), Double(first ? cal.h0RHx2 : cal.h1RHx2) / 2)
            XCTAssertEqual(cal.celsius(raw: first ? cal.t0Out : cal.t1Out), Double(first ? cal.t0DegCx8 : cal.t1DegCx8) / 8)
        }
    }

    /// A part's bytes (mattludwigs/hts221's test set), field by field: the reserved top bits of
    /// 0x35 are set and must not reach T1.
    func testAPartsBytesParse() throws {
        let cal = try HTS221Calibration(registers: bytes(hex: "40909F0A00C4EEFF0404C5C9FEFFB302"))
        XCTAssertEqual(cal.h0RHx2, 64)
        XCTAssertEqual(cal.h1RHx2, 144)
        XCTAssertEqual(cal.t0DegCx8, 159, "T0 = 19.875 °C")
        XCTAssertEqual(cal.t1DegCx8, 266, "T1 = 33.25 °C: 0x35 = 0xC4 gives T1.9-8 = 01")
        XCTAssertEqual([cal.h0T0Out, cal.h1T0Out, cal.t0Out, cal.t1Out], [-18, -13_883, -2, 691])
        // Both MSB fields at once, different from each other.
        let edge = try HTS221Calibration(registers: bytes(hex: "FF00104000F60080AAAAFF7FFF7F0080"))
        XCTAssertEqual(edge.t0DegCx8, 0x210)
        XCTAssertEqual(edge.t1DegCx8, 0x140)
        // Written back as the chip holds it (reserved bits zero), it parses to the same.
        XCTAssertEqual(try HTS221Calibration(registers: cal.registers), cal)
        XCTAssertEqual(cal.registers, bytes(hex: "40909F0A0004EEFF0000C5C9FEFFB302"))
    }

    /// A region read before the chip loaded it (all 0x00), all 0xFF, or a short read is refused
    /// with what to do.
    func testWhatIsNotACalibrationIsRefused() {
        for b in [[UInt8](repeating: 0, count: 16), [UInt8](repeating: 0xFF, count: 16)] {
            XCTAssertThrowsError(try HTS221Calibration(registers: b)) { e in
                XCTAssertTrue("\(e)".contains("both pairs must differ"), "\(e)")
                XCTAssertTrue("\(e)".contains("reboot the chip (BOOT) or power-cycle it"), "\(e)")
            }
        }
        XCTAssertThrowsError(try HTS221Calibration(registers: [UInt8](repeating: 1, count: 15))) { e in
            XCTAssertTrue("\(e)".contains("needs 16 bytes from 0x30; got 15"), "\(e)")
        }
    }

    /// The simulated chip's counts come back through the calibration within half a count.
    func testCountsInvertTheCalibration() throws {
        let cal = try HTS221Calibration(registers: bytes(hex: "40909F0A00C4EEFF0404C5C9FEFFB302"))
        let perCountT = abs(Double(cal.t1DegCx8) - Double(cal.t0DegCx8)) / 8 / abs(Double(cal.t1Out) - Double(cal.t0Out))
        let perCountH = abs(Double(cal.h1RHx2) - Double(cal.h0RHx2)) / 2 / abs(Double(cal.h1T0Out) - Double(cal.h0T0Out))
        for (c, p) in [(21.5, 45.0), (-10, 5), (60, 95), (33.25, 72), (0, 0.5)] {
            let n = cal.counts(celsius: c, percent: p)
            XCTAssertEqual(cal.celsius(raw: n.temperature), c, accuracy: perCountT / 2 + 1e-12)
            XCTAssertEqual(cal.humidityPercent(raw: n.humidity), p, accuracy: perCountH / 2 + 1e-12)
        }
    }

    func testOutputBurstParses() throws {
        let o = try XCTUnwrap(([0x03, 0x34, 0x12, 0xFE, 0xFF] as [UInt8]).withUnsafeBytes { HTS221Output.parse($0) })
        XCTAssertEqual(o.status, 0x03)
        XCTAssertEqual(o.humidity, 0x1234)
        XCTAssertEqual(o.temperature, -2)
        XCTAssertNil(([0x03] as [UInt8]).withUnsafeBytes { HTS221Output.parse($0) })
    }
}
