import Foundation
import OSHAgent
import OSHCore
import OSHPlatform
import XCTest
import OSHSimulation

/// `osh-edge decode DPS310` and `probe --dump` for it, through the Agent functions and the binary.
final class DPS310DecodeCommandTests: XCTestCase {
    /// Infineon issue #23's part as i2cdump shows it: COEF 0x10–0x21, then 0x00–0x07 with Praw
    /// −1509278 (PRS_CFG ×4) and Traw 156656 (TMP_CFG ×1). The reference row's values:
    /// 24.5498962402 °C, 100424.4941761424 Pa (Fixtures/baro/dps310_vectors.csv).
    let coefficients = "0d fe dd 13 8c af 25 1d f3 b7 05 98 d9 41 00 98 fa d7"
    let burst = "e8 f8 62 02 63 f0 02 00"

    func testDecode() throws {
        let r = try BarometerDecode.decode(chip: "dps310", calibrationHex: coefficients, rawHex: burst)
        XCTAssertEqual(r.chip, "DPS310")
        XCTAssertEqual(r.raw.map(\.name), ["Praw", "Traw"])
        XCTAssertEqual(r.raw.map(\.value), [-1509278, 156656])
        XCTAssertEqual(String(format: "%.10f", r.celsius), "24.5498962402")
        XCTAssertEqual(String(format: "%.10f", r.pressurePa), "100424.4941761424")
        XCTAssertNil(r.humidityPercent)
        XCTAssertThrowsError(try BarometerDecode.decode(chip: "DPS310", calibrationHex: burst, rawHex: burst)) { e in
            XCTAssertTrue("\(e)".contains("DPS310 calibration needs 18 bytes from 0x10 (0x10–0x21); got 8"), "\(e)")
        }
        XCTAssertTrue(BarometerDecode.layouts.contains { $0.chip == "DPS310" && $0.burst.hasPrefix("8 bytes from 0x00") })
    }

    func testCLI() throws {
        let table = try runOSHEdge(["decode", "DPS310", coefficients, burst])
        XCTAssertEqual(table.status, 0, table.err)
        XCTAssertTrue(table.out.contains("raw          Praw -1509278  Traw 156656"), table.out)
        XCTAssertTrue(table.out.contains("temperature  24.5499 °C"), table.out)
        XCTAssertTrue(table.out.contains("pressure     1004.2449 hPa  (100424.4942 Pa)"), table.out)

        let json = try runOSHEdge(["decode", "DPS310", coefficients.replacingOccurrences(of: " ", with: ""), "E8F8620263F00200", "--json"])
        XCTAssertEqual(json.status, 0, json.err)
        let obj = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
        XCTAssertEqual(obj["chip"] as? String, "DPS310")
        XCTAssertEqual(obj["raw"] as? [String: Int], ["Praw": -1509278, "Traw": 156656])
        XCTAssertEqual(obj["temperatureC"] as? Double ?? 0, 24.5498962402, accuracy: 1e-9)
        XCTAssertEqual(obj["pressurePa"] as? Double ?? 0, 100424.4941761424, accuracy: 1e-9)

        let usage = try runOSHEdge(["decode"])
        XCTAssertEqual(usage.status, 2)
        XCTAssertTrue(usage.err.contains("18 bytes from 0x10"), usage.err)
    }

    /// `probe --dump` finds it, starts it, and its bytes decode to what the simulated chip measures.
    func testProbeDump() throws {
        Log.muted = true
        defer { Log.muted = false }
        let bus = SimulatedI2CBus()
        try SimulatedBarometerBoard.attach(to: bus, chip: "DPS310", address: 0x76) { (1002.5, 19.75) }
        let found = probeBarometers(bus: bus)
        XCTAssertEqual(found.map(\.identity.name), ["DPS310"])
        let r = try XCTUnwrap(found.first)
        XCTAssertEqual(r.address, 0x76)
        XCTAssertNil(r.error)
        XCTAssertEqual(r.calibrationHex, BarometerDecode.hex(SimulatedDPS310.realPartCoefficients))
        let again = try BarometerDecode.decode(chip: "DPS310", calibrationHex: r.calibrationHex, rawHex: r.rawHex)
        XCTAssertEqual(again.pressureHPa, 1002.5, accuracy: 0.01)
        XCTAssertEqual(again.celsius, 19.75, accuracy: 0.001)
        XCTAssertEqual(r.decoded, again)
    }
}
