import Foundation
import OSHAgent
import OSHCore
import XCTest

/// `osh-edge decode` through the Agent function and through the real binary.
final class DecodeCommandTests: XCTestCase {
    /// The BMP280 datasheet's worked example, as i2cdump shows 0x88–0x9F and 0xF7–0xFC.
    let datasheetCalibration = "70 6b 43 67 18 fc 7d 8e 43 d6 d0 0b 27 0b 8c 00 f9 ff 8c 3c f8 c6 70 17"
    let datasheetBurst = "65 5a c0 7e ed 00"

    func testDatasheetExample() throws {
        let r = try BarometerDecode.decode(chip: "BMP280", calibrationHex: datasheetCalibration, rawHex: datasheetBurst)
        XCTAssertEqual(r.raw.map(\.value), [519888, 415148])
        XCTAssertEqual(r.celsius, 25.08, accuracy: 0.005)
        XCTAssertEqual(r.pressurePa, 100653.27, accuracy: 0.05)
        XCTAssertEqual(r.integer?.tFine, 128422)
        XCTAssertEqual(r.integer?.centiCelsius, 2508)
        XCTAssertEqual(Double(r.integer?.pressureQ24_8 ?? 0) / 256, 100653.27, accuracy: 0.05)
        XCTAssertEqual(BarometerDecode.parseHex("0x70:6B,43-67"), [0x70, 0x6B, 0x43, 0x67])
        XCTAssertNil(BarometerDecode.parseHex("7g"))
        XCTAssertNil(BarometerDecode.parseHex("706"))
        XCTAssertEqual(fixed(-0.00004, 4), "0.0000")
        XCTAssertEqual(fixed(-12.34567, 2), "-12.35")
    }

    func testWrongLengthsSayWhatIsNeeded() {
        XCTAssertThrowsError(try BarometerDecode.decode(chip: "BME280", calibrationHex: datasheetCalibration, rawHex: datasheetBurst)) {
            e in
            XCTAssertTrue("\(e)".contains("33 bytes: 0x88–0xA1 (26) then 0xE1–0xE7 (7); got 24"), "\(e)")
        }
        XCTAssertThrowsError(try BarometerDecode.decode(chip: "MS5611", calibrationHex: "", rawHex: "")) { e in
            XCTAssertTrue("\(e)".contains("BMP280, BME280, BMP388, BMP390, LPS22HB"), "\(e)")
        }
    }

    // MARK: The binary

    private func run(_ args: [String]) throws -> (status: Int32, out: String, err: String) { try runOSHEdge(args) }

    func testCLIPrintsTheDatasheetExample() throws {
        let table = try run(["decode", "BMP280", datasheetCalibration, datasheetBurst])
        XCTAssertEqual(table.status, 0, table.err)
        XCTAssertTrue(table.out.contains("temperature  25.0825 °C"), table.out)
        XCTAssertTrue(table.out.contains("pressure     1006.5326 hPa  (100653.2581 Pa)"), table.out)
        XCTAssertTrue(table.out.contains("t_fine 128422  T 2508"), table.out)

        let json = try run(["decode", "BMP280", datasheetCalibration.replacingOccurrences(of: " ", with: ""), "655AC07EED00", "--json"])
        XCTAssertEqual(json.status, 0, json.err)
        let lines = json.out.split(separator: "\n")
        XCTAssertEqual(lines.count, 1)
        let obj = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        XCTAssertEqual(obj["chip"] as? String, "BMP280")
        XCTAssertEqual(obj["temperatureC"] as? Double ?? 0, 25.0824779308, accuracy: 1e-9)
        XCTAssertEqual(obj["pressurePa"] as? Double ?? 0, 100653.2581448147, accuracy: 1e-9)

        let lps = try run(["decode", "LPS22HB", "-", "00 54 3F C4 09", "--json"])
        XCTAssertEqual(
            lps.out,
            "{\"chip\":\"LPS22HB\",\"raw\":{\"PRESS_OUT\":4150272,\"TEMP_OUT\":2500},\"temperatureC\":25.0,\"pressureHPa\":1013.25,\"pressurePa\":101325.0}\n"
        )

        let bad = try run(["decode", "BMP280", "zz", datasheetBurst])
        XCTAssertEqual(bad.status, 1)
        XCTAssertTrue(bad.err.contains("not hex bytes"), bad.err)
        let usage = try run(["decode"])
        XCTAssertEqual(usage.status, 2)
        XCTAssertTrue(usage.err.contains("21 bytes from 0x31"), usage.err)
    }
}
