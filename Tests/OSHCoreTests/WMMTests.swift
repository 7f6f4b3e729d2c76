import OSHCore
import XCTest

/// WMM2025 against NOAA's 12 official test values (Fixtures/wmm, see its README).
final class WMMTests: XCTestCase {
    func testNOAAOfficialTestValues() throws {
        let text = try fixture("wmm/WMM2025_test_values.csv")
        let rows = text.split(whereSeparator: \.isNewline).dropFirst().map { $0.split(separator: ",").map { Double(String($0)) ?? .nan } }
        XCTAssertEqual(rows.count, 12)
        let model = WorldMagneticModel()
        for r in rows {
            let f = model.field(latitude: r[2], longitude: r[3], heightKm: r[1], decimalYear: r[0])
            let at = "year \(r[0]) h \(r[1]) lat \(r[2]) lon \(r[3])"
            XCTAssertEqual(f.x, r[4], accuracy: 1, "X " + at)
            XCTAssertEqual(f.y, r[5], accuracy: 1, "Y " + at)
            XCTAssertEqual(f.z, r[6], accuracy: 1, "Z " + at)
            XCTAssertEqual(f.h, r[7], accuracy: 1, "H " + at)
            XCTAssertEqual(f.f, r[8], accuracy: 1, "F " + at)
            XCTAssertEqual(f.inclination, r[9], accuracy: 0.01, "I " + at)
            XCTAssertEqual(f.declination, r[10], accuracy: 0.01, "D " + at)
            // Rates are printed to 0.1 nT/yr and 0.01°/yr.
            XCTAssertEqual(f.xDot, r[12], accuracy: 0.1, "Xdot " + at)
            XCTAssertEqual(f.yDot, r[13], accuracy: 0.1, "Ydot " + at)
            XCTAssertEqual(f.zDot, r[14], accuracy: 0.1, "Zdot " + at)
            XCTAssertEqual(f.hDot, r[15], accuracy: 0.1, "Hdot " + at)
            XCTAssertEqual(f.fDot, r[16], accuracy: 0.1, "Fdot " + at)
            XCTAssertEqual(f.inclinationDot, r[17], accuracy: 0.01, "Idot " + at)
            XCTAssertEqual(f.declinationDot, r[18], accuracy: 0.01, "Ddot " + at)
            XCTAssertTrue(f.dateIsValid)
        }
    }

    func testValidityWindowAndPoles() {
        let model = WorldMagneticModel()
        XCTAssertFalse(model.field(latitude: 45, longitude: 7, heightKm: 0, decimalYear: 2031).dateIsValid)
        XCTAssertFalse(model.field(latitude: 45, longitude: 7, heightKm: 0, decimalYear: 2024.9).dateIsValid)
        let pole = model.field(latitude: 90, longitude: 0, heightKm: 0, decimalYear: 2026)
        XCTAssertTrue(pole.f.isFinite && pole.f > 50_000, "\(pole)")
        XCTAssertTrue(pole.declination.isFinite)
    }

    func testDecimalYears() {
        XCTAssertEqual(DecimalYear.from(year: 2025, month: 1, day: 1), 2025.0)
        XCTAssertEqual(DecimalYear.parse("2027-07-02") ?? 0, 2027 + 182.0 / 365, accuracy: 1e-12)
        XCTAssertEqual(DecimalYear.parse("2027.5"), 2027.5)
        XCTAssertNil(DecimalYear.parse("2027-02-30"))
        XCTAssertNil(DecimalYear.parse("soon"))
        // 2026-11-29T12:00:00Z
        XCTAssertEqual(DecimalYear.from(unixSeconds: 1_795_953_600), 2026 + (332.5 / 365), accuracy: 1e-9)
    }
}
