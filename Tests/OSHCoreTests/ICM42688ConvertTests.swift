import OSHCore
import XCTest

/// The ICM-42688-P's convert half against TDK's datasheet DS-000347: full-scale codes
/// (GYRO_CONFIG0/ACCEL_CONFIG0 bits 7:5), sensitivities (tables 1 and 2), the two temperature
/// formulas (TEMP_DATA: raw/132.48 + 25; FIFO: raw/2.07 + 25) and FIFO packet 3 (§6.1) decoded
/// from packets made by hand byte by byte.
final class ICM42688ConvertTests: XCTestCase {
    private func bytes(_ b: [UInt8], _ body: (UnsafeRawBufferPointer) -> Void) { b.withUnsafeBytes(body) }

    func testFullScaleCodesAreTheDatasheetsReversedOrder() {
        // ACCEL_FS_SEL 000 = ±16 g, 001 = ±8 g, 010 = ±4 g, 011 = ±2 g.
        XCTAssertEqual([AccelRange.g16, .g8, .g4, .g2].map(\.icm42688Code), [0, 1, 2, 3])
        // GYRO_FS_SEL 000 = ±2000, 001 = ±1000, 010 = ±500, 011 = ±250 dps.
        XCTAssertEqual([GyroRange.dps2000, .dps1000, .dps500, .dps250].map(\.icm42688Code), [0, 1, 2, 3])
    }

    func testScaleFactorsPerRange() {
        // Table 2: accel sensitivity 16384, 8192, 4096, 2048 LSB/g at ±2, ±4, ±8, ±16 g.
        for (range, lsbPerG) in [(AccelRange.g2, 16384.0), (.g4, 8192), (.g8, 4096), (.g16, 2048)] {
            XCTAssertEqual(IMUConvert.icm42688AccelScale(range), 9.80665 / lsbPerG, accuracy: 1e-15, "\(range)")
        }
        // Table 1: gyro sensitivity 131, 65.5, 32.8, 16.4 LSB/(°/s) at ±250, ±500, ±1000, ±2000.
        for (range, lsbPerDPS) in [(GyroRange.dps250, 131.0), (.dps500, 65.5), (.dps1000, 32.8), (.dps2000, 16.4)] {
            XCTAssertEqual(IMUConvert.icm42688GyroScale(range), Double.pi / 180 / lsbPerDPS, accuracy: 1e-15, "\(range)")
        }
    }

    func testTemperatures() {
        // TEMP_DATA: °C = raw / 132.48 + 25; 13248 = 100 × 132.48, −6624 = −50 × 132.48.
        XCTAssertEqual(IMUConvert.icm42688Temperature(0), 25)
        XCTAssertEqual(IMUConvert.icm42688Temperature(13248), 125, accuracy: 1e-12)
        XCTAssertEqual(IMUConvert.icm42688Temperature(-6624), -25, accuracy: 1e-12)
        XCTAssertEqual(IMUConvert.icm42688Temperature(1000), 25 + 1000 / 132.48, accuracy: 1e-12)  // 32.548 °C
        // FIFO (8-bit): °C = raw / 2.07 + 25.
        XCTAssertEqual(IMUConvert.icm42688FIFOTemperature(0), 25)
        XCTAssertEqual(IMUConvert.icm42688FIFOTemperature(21), 35.144_927_536_231_88, accuracy: 1e-12)
        XCTAssertEqual(IMUConvert.icm42688FIFOTemperature(-52), -0.120_772_946_859_9, accuracy: 1e-12)
    }

    /// Packet 3 at ±4 g / ±250 dps: header 0x68 (accel, gyro, ODR timestamp), accel X/Y/Z
    /// 0x2000 0xE000 0x4000 = 8192, −8192, 16384 counts = 1, −1, 2 g; gyro 0x0083 0xFF7D
    /// 0x1068 = 131, −131, 4200 counts = 1, −1, 32.061 °/s; temperature 0x15 = 21 → 35.14 °C;
    /// timestamp 0x1234 (not used).
    func testPacket3DecodesAccelGyroAndTemperature() {
        let packet: [UInt8] = [0x68, 0x20, 0x00, 0xE0, 0x00, 0x40, 0x00, 0x00, 0x83, 0xFF, 0x7D, 0x10, 0x68, 0x15, 0x12, 0x34]
        XCTAssertEqual(packet.count, ICM42688Fifo.packetBytes)
        var s = IMUSample(t: 7, mag: IMUVector(1, 2, 3), magIsNew: true)
        let a = IMUConvert.icm42688AccelScale(.g4), g = IMUConvert.icm42688GyroScale(.dps250)
        // After two bytes of something else, as in a burst.
        bytes([0xAA, 0xBB] + packet) { p in
            XCTAssertEqual(ICM42688Fifo.decode(p, at: 2, accelScale: a, gyroScale: g, into: &s), .sample)
        }
        let d2r = Double.pi / 180
        XCTAssertEqual(s.accel.x, 9.80665, accuracy: 1e-12)
        XCTAssertEqual(s.accel.y, -9.80665, accuracy: 1e-12)
        XCTAssertEqual(s.accel.z, 19.6133, accuracy: 1e-12)
        XCTAssertEqual(s.gyro.x, d2r, accuracy: 1e-12)
        XCTAssertEqual(s.gyro.y, -d2r, accuracy: 1e-12)
        XCTAssertEqual(s.gyro.z, 4200 / 131 * d2r, accuracy: 1e-12)
        XCTAssertEqual(s.temperature ?? 0, 35.144_927_536_231_88, accuracy: 1e-12)
        XCTAssertEqual(s.t, 7, "the time is the driver's and input's business")
        XCTAssertEqual(s.mag, IMUVector(1, 2, 3), "the magnetometer is not in the FIFO")
        XCTAssertFalse(ICM42688Fifo.odrChanged(0x68))
    }

    func testHeaderCases() {
        let a = IMUConvert.icm42688AccelScale(.g16), g = IMUConvert.icm42688GyroScale(.dps2000)
        func decode(_ b: [UInt8]) -> (ICM42688Fifo.Packet, IMUSample) {
            var s = IMUSample()
            var r = ICM42688Fifo.Packet.empty
            bytes(b) { r = ICM42688Fifo.decode($0, at: 0, accelScale: a, gyroScale: g, into: &s) }
            return (r, s)
        }
        let body: [UInt8] = [0x08, 0x00, 0x00, 0x00, 0xF8, 0x00, 0x00, 0xA4, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]
        // HEADER_MSG (bit 7): the FIFO is empty; an empty FIFO reads 0x80 (or 0xFF) throughout.
        XCTAssertEqual(decode([0x80] + body).0, .empty)
        XCTAssertEqual(decode([UInt8](repeating: 0xFF, count: 16)).0, .empty)
        // ODR-change flags (bits 1:0) on a valid packet: still a sample (2048 LSB/g: 0x0800 = 1 g, 0xF800 = −1 g).
        let (odr, s) = decode([0x6B] + body)
        XCTAssertEqual(odr, .sample)
        XCTAssertTrue(ICM42688Fifo.odrChanged(0x6B))
        XCTAssertTrue(ICM42688Fifo.odrChanged(0x6A))
        XCTAssertEqual(s.accel.x, 9.80665, accuracy: 1e-12)
        XCTAssertEqual(s.accel.z, -9.80665, accuracy: 1e-12)
        XCTAssertEqual(s.gyro.x, 164 / 16.4 * .pi / 180, accuracy: 1e-12)  // 0x00A4 = 164 counts = 10 °/s
        // Accel only (packet 1), gyro only (packet 2), 20-bit (packet 4): not what was configured.
        XCTAssertEqual(decode([0x48] + body).0, .foreign(header: 0x48))
        XCTAssertEqual(decode([0x28] + body).0, .foreign(header: 0x28))
        XCTAssertEqual(decode([0x78] + body).0, .foreign(header: 0x78))
        // Accel with no sample: −32768 on every axis; one axis at −32768 is a saturated reading.
        let noAccel: [UInt8] = [0x68, 0x80, 0x00, 0x80, 0x00, 0x80, 0x00, 0, 1, 0, 2, 0, 3, 0x00, 0, 0]
        XCTAssertEqual(decode(noAccel).0, .invalid)
        var noGyro = noAccel
        noGyro.replaceSubrange(1...12, with: [0, 1, 0, 2, 0, 3, 0x80, 0x00, 0x80, 0x00, 0x80, 0x00])
        XCTAssertEqual(decode(noGyro).0, .invalid)
        var saturated = noAccel
        saturated[3] = 0x7F
        saturated[4] = 0xFF
        let (r, sat) = decode(saturated)
        XCTAssertEqual(r, .sample)
        XCTAssertEqual(sat.accel.x, -16 * 9.80665, accuracy: 1e-9)  // −32768 / 2048 LSB/g
        XCTAssertEqual(sat.accel.y, 32767 / 2048 * 9.80665, accuracy: 1e-9)
        // The 8-bit temperature's invalid value (−128) gives no temperature.
        var noTemp = [0x68] + body
        noTemp[13] = 0x80
        XCTAssertNil(decode(noTemp).1.temperature)
    }
}
