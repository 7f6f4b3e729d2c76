import Foundation
import OSHAgent
import OSHCore
import OSHSimulation
import XCTest

/// `osh-edge decode LPS25H - <burst>` and `probe --dump`'s barometer part for the Sense HAT's
/// barometer.
final class LPS25HDecodeCommandTests: XCTestCase {
    /// AN4450 §4.3's example as i2cdump shows 0x28–0x2C: P 0x3FF58D, T 0xE07C (a row of
    /// Fixtures/baro/lps25h_vectors.csv).
    let burst = "8d f5 3f 7c e0"

    func testDecodeThroughTheAgent() throws {
        let r = try BarometerDecode.decode(chip: "lps25h", calibrationHex: "-", rawHex: burst)
        XCTAssertEqual(r.chip, "LPS25H")
        XCTAssertEqual(r.raw.map(\.name), ["PRESS_OUT", "TEMP_OUT"])
        XCTAssertEqual(r.raw.map(\.value), [4_191_629, -8068])
        XCTAssertEqual(r.pressureHPa, 1023.346923828125)
        XCTAssertEqual(r.celsius, 25.691666666666666)
        XCTAssertThrowsError(try BarometerDecode.decode(chip: "LPS25H", calibrationHex: "00", rawHex: burst)) { e in
            XCTAssertTrue("\(e)".contains("LPS25H calibration needs none: give - (it compensates on chip); got 1 bytes"), "\(e)")
        }
    }

    func testCLI() throws {
        let table = try runOSHEdge(["decode", "LPS25H", "-", burst])
        XCTAssertEqual(table.status, 0, table.err)
        XCTAssertTrue(table.out.contains("raw          PRESS_OUT 4191629  TEMP_OUT -8068"), table.out)
        XCTAssertTrue(table.out.contains("temperature  25.6917 °C"), table.out)
        XCTAssertTrue(table.out.contains("pressure     1023.3469 hPa  (102334.6924 Pa)"), table.out)

        let json = try runOSHEdge(["decode", "lps25h", "-", "8DF53F7CE0", "--json"])
        XCTAssertEqual(json.status, 0, json.err)
        let obj = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
        XCTAssertEqual(obj["chip"] as? String, "LPS25H")
        XCTAssertEqual(obj["pressureHPa"] as? Double, 1023.346923828125)
        XCTAssertEqual(obj["temperatureC"] as? Double ?? 0, 25.691666666666666, accuracy: 1e-12)

        let short = try runOSHEdge(["decode", "LPS25H", "-", "8d f5 3f"])
        XCTAssertEqual(short.status, 1)
        XCTAssertTrue(short.err.contains("5 bytes from 0x28 (PRESS_OUT_XL L H, TEMP_OUT_L H)"), short.err)
        let usage = try runOSHEdge(["decode"])
        XCTAssertEqual(usage.status, 2)
        XCTAssertTrue(usage.err.contains("LPS25H"), usage.err)
    }

    /// `probe --dump` finds the Sense HAT's barometer at 0x5C beside an LPS22HB at 0x5D, and the
    /// bytes it prints decode to what it read.
    func testProbeDumpsBytesThatDecodeToTheReading() throws {
        let bus = SimulatedI2CBus(recordsTrace: false)
        try SimulatedBarometerBoard.attach(to: bus, chip: "LPS25H", address: 0x5C) { (1001.25, -5.5) }
        try SimulatedBarometerBoard.attach(to: bus, chip: "LPS22HB", address: 0x5D) { (955.5, 30) }
        let found = probeBarometers(bus: bus)
        XCTAssertEqual(found.map(\.identity.name), ["LPS22HB", "LPS25H"])
        XCTAssertEqual(found.map(\.address), [0x5D, 0x5C])
        for f in found {
            XCTAssertNil(f.error)
            XCTAssertEqual(f.calibrationHex, "")
            let again = try BarometerDecode.decode(chip: f.identity.name, calibrationHex: f.calibrationHex, rawHex: f.rawHex)
            XCTAssertEqual(again, f.decoded)
        }
        XCTAssertEqual(found[1].decoded?.pressureHPa ?? 0, 1001.25, accuracy: 0.5 / 4096)
        XCTAssertEqual(found[1].decoded?.celsius ?? 0, -5.5, accuracy: 0.5 / 480)
    }
}
