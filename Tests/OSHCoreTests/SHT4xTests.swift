import OSHCore
import XCTest

/// The SHT4x convert half against the datasheet (SHT4x, v6.6: §4.4 CRC example, §4.6 conversion)
/// and Sensirion's own driver's integer conversion (Sensirion/embedded-i2c-sht4x @ 53b1b8b,
/// sht4x_i2c.c: convert_ticks_to_celsius / convert_ticks_to_percent_rh, milli-units).
final class SHT4xTests: XCTestCase {
    func testTheDatasheetsCRCExample() {
        XCTAssertEqual(SHT4x.crc8(0xBE, 0xEF), 0x92)
    }

    func testConversionMatchesTheDatasheetAndSensirionsDriver() throws {
        // Sensirion's driver: ((21875 * ticks) >> 13) - 45000 m°C, ((15625 * ticks) >> 13) - 6000 m%RH;
        // its shift for 65535 makes it up to 4 m°C low at the top of the range.
        for ticks: UInt16 in [0, 1, 0x3000, 0x6666, 0x8000, 0xABCD, 0xFFFE, 0xFFFF] {
            let milliC = ((21875 * Int(ticks)) >> 13) - 45000
            let milliRH = ((15625 * Int(ticks)) >> 13) - 6000
            XCTAssertEqual(SHT4x.celsius(ticks: ticks), Double(milliC) / 1000, accuracy: 0.005, "\(ticks)")
            XCTAssertEqual(SHT4x.humidityPercent(ticks: ticks), min(max(Double(milliRH) / 1000, 0), 100), accuracy: 0.005, "\(ticks)")
        }
        XCTAssertEqual(SHT4x.celsius(ticks: 0), -45)
        XCTAssertEqual(SHT4x.celsius(ticks: 0xFFFF), 130)
        XCTAssertEqual(SHT4x.humidityPercent(ticks: 0), 0, "cropped, not −6 %")
        XCTAssertEqual(SHT4x.humidityPercent(ticks: 0xFFFF), 100, "cropped, not 119 %")
    }

    func testAMeasurementsBytesAndItsCRCs() throws {
        let t = SHT4x.ticks(celsius: 23.4, percent: 51.2)
        var b: [UInt8] = [UInt8(t.temperature >> 8), UInt8(t.temperature & 0xFF), 0, UInt8(t.humidity >> 8), UInt8(t.humidity & 0xFF), 0]
        b[2] = SHT4x.crc8(b[0], b[1])
        b[5] = SHT4x.crc8(b[3], b[4])
        let r = try b.withUnsafeBytes { try SHT4x.reading($0) }
        XCTAssertEqual(r.celsius, 23.4, accuracy: 0.002)
        XCTAssertEqual(r.humidityPercent, 51.2, accuracy: 0.002)
        b[5] ^= 1
        XCTAssertThrowsError(try b.withUnsafeBytes { try SHT4x.reading($0) }) { e in
            XCTAssertTrue("\(e)".contains("the second word's CRC"), "\(e)")
        }
    }
}
