import Foundation
import OSHAgent
import OSHCore
import OSHSimulation
import XCTest

/// `osh-edge decode BMP581|BMP585 - <burst>` and `probe --dump`'s barometer part for them.
final class BMP58xDecodeCommandTests: XCTestCase {
    /// 25 °C and 101 325 Pa as i2cdump shows 0x1D–0x22 (a row of Fixtures/baro/bmp58x_vectors.csv).
    let burst = "00 00 19 40 f3 62"

    func testDecodeThroughTheAgent() throws {
        let r = try BarometerDecode.decode(chip: "bmp581", calibrationHex: "-", rawHex: burst)
        XCTAssertEqual(r.chip, "BMP581")
        XCTAssertEqual(r.raw.map(\.value), [1_638_400, 6_484_800])
        XCTAssertEqual(r.celsius, 25)
        XCTAssertEqual(r.pressurePa, 101_325)
        let cold = try BarometerDecode.decode(chip: "BMP585", calibrationHex: "", rawHex: "0080ff20c65c")
        XCTAssertEqual(cold.celsius, -0.5)
        XCTAssertEqual(cold.pressurePa, 95_000.5)
        XCTAssertThrowsError(try BarometerDecode.decode(chip: "BMP581", calibrationHex: "00", rawHex: burst)) { e in
            XCTAssertTrue("\(e)".contains("BMP581 calibration needs none: give - (it compensates on chip); got 1 bytes"), "\(e)")
        }
    }

    func testCLI() throws {
        let table = try runOSHEdge(["decode", "BMP581", "-", burst])
        XCTAssertEqual(table.status, 0, table.err)
        XCTAssertTrue(table.out.contains("raw          TEMP_DATA 1638400  PRESS_DATA 6484800"), table.out)
        XCTAssertTrue(table.out.contains("temperature  25.0000 °C"), table.out)
        XCTAssertTrue(table.out.contains("pressure     1013.2500 hPa  (101325.0000 Pa)"), table.out)

        let json = try runOSHEdge(["decode", "BMP585", "-", "000019 40F362", "--json"])
        XCTAssertEqual(json.status, 0, json.err)
        XCTAssertEqual(
            json.out,
            "{\"chip\":\"BMP585\",\"raw\":{\"TEMP_DATA\":1638400,\"PRESS_DATA\":6484800},"
                + "\"temperatureC\":25.0,\"pressureHPa\":1013.25,\"pressurePa\":101325.0}\n")

        let short = try runOSHEdge(["decode", "BMP581", "-", "00 00 19"])
        XCTAssertEqual(short.status, 1)
        XCTAssertTrue(short.err.contains("6 bytes from 0x1D"), short.err)
        let usage = try runOSHEdge(["decode"])
        XCTAssertEqual(usage.status, 2)
        XCTAssertTrue(usage.err.contains("BMP585"), usage.err)
        XCTAssertTrue(usage.err.contains("6 bytes from 0x1D (TEMP_DATA xlsb lsb msb, PRESS_DATA xlsb lsb msb)"), usage.err)
    }

    /// `probe --dump` finds both chips at their straps, and the bytes it prints decode to what it read.
    func testProbeDumpsBytesThatDecodeToTheReading() throws {
        let bus = SimulatedI2CBus(recordsTrace: false)
        try SimulatedBarometerBoard.attach(to: bus, chip: "BMP581", address: 0x47) { (1001.25, -5.5) }
        try SimulatedBarometerBoard.attach(to: bus, chip: "BMP585", address: 0x46) { (955.5, 30) }
        let found = probeBarometers(bus: bus)
        XCTAssertEqual(found.map(\.identity.name), ["BMP581", "BMP585"])
        XCTAssertEqual(found.map(\.address), [0x47, 0x46])
        for f in found {
            XCTAssertNil(f.error)
            XCTAssertEqual(f.calibrationHex, "")
            let again = try BarometerDecode.decode(chip: f.identity.name, calibrationHex: f.calibrationHex, rawHex: f.rawHex)
            XCTAssertEqual(again, f.decoded)
        }
        XCTAssertEqual(found[0].decoded?.celsius, -5.5)
        XCTAssertEqual(found[0].decoded?.pressureHPa ?? 0, 1001.25, accuracy: 1e-4)
        XCTAssertEqual(found[1].decoded?.pressureHPa ?? 0, 955.5, accuracy: 1e-4)
    }
}
