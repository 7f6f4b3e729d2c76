import OSHCore
import XCTest

/// LSM9DS1 conversions against vectors from the datasheet's Table 3 (DocID025715 Rev 3, "Sensor
/// characteristics": LA_So, G_So, M_GN, and 16 LSB/°C around 25 °C). Each expected value is the
/// raw count times the table's sensitivity, worked by hand; ST's lsm9ds1-pid conversion
/// functions (built outside the repository, float32) print the same to six figures.
final class LSM9DS1ConvertTests: XCTestCase {
    private let g = 9.80665

    func testAccelerometerVectors() {
        // (range, raw, mg)
        let vectors: [(AccelRange, Int16, Double)] = [
            (.g2, 16384, 999.424), (.g2, 32767, 1998.787), (.g4, -8192, -999.424),
            (.g8, 4096, 999.424), (.g16, 1366, 999.912), (.g16, -32768, -23986.176),
        ]
        for (range, raw, mg) in vectors {
            XCTAssertEqual(Double(raw) * range.lsm9ds1MilliGPerCount, mg, accuracy: 5e-4, "\(range) \(raw)")
            XCTAssertEqual(Double(raw) * IMUConvert.lsm9ds1AccelScale(range), mg / 1000 * g, accuracy: 5e-6, "\(range) \(raw)")
        }
        // FS_XL is not in range order: 00 ±2, 01 ±16, 10 ±4, 11 ±8.
        XCTAssertEqual(AccelRange.allCases.map(\.lsm9ds1Code), [0, 2, 3, 1])
        // ±16 g is 0.732 mg/LSB on this chip (the LSM6DSOX's is 0.488).
        XCTAssertEqual(AccelRange.g16.lsm9ds1MilliGPerCount, 0.732)
    }

    func testGyroscopeVectorsAndTheRangeMapping() {
        // (agent range, raw, mdps)
        let vectors: [(GyroRange, Int16, Double)] = [
            (.dps250, 1000, 8750), (.dps500, -2000, -35000), (.dps2000, 32767, 2_293_690), (.dps1000, 100, 7000),
        ]
        for (range, raw, mdps) in vectors {
            XCTAssertEqual(Double(raw) * range.lsm9ds1MilliDPSPerCount, mdps, accuracy: 1e-6, "\(range) \(raw)")
            XCTAssertEqual(Double(raw) * IMUConvert.lsm9ds1GyroScale(range), mdps / 1000 * .pi / 180, accuracy: 1e-9, "\(range) \(raw)")
        }
        // 245/500/2000 dps are FS_G 00/01/11; 1000 is served by 2000 (10 does not exist).
        XCTAssertEqual(GyroRange.allCases.map(\.lsm9ds1Code), [0, 1, 3, 3])
        XCTAssertEqual(GyroRange.allCases.map(\.lsm9ds1FullScaleDPS), [245, 500, 2000, 2000])
        // Every agent range fits in the counts of the full scale it gets (±245 reaches ±286 dps).
        for r in GyroRange.allCases {
            XCTAssertGreaterThanOrEqual(32767 * r.lsm9ds1MilliDPSPerCount / 1000, Double(r.rawValue), "\(r)")
        }
    }

    func testMagnetometerVectorsDifferFromTheLIS3MDLs() {
        // (range, raw, mgauss)
        let vectors: [(LIS3MDLRange, Int16, Double)] = [
            (.gauss4, 7143, 1000.02), (.gauss8, -3448, -999.92), (.gauss12, 2326, 1000.18), (.gauss16, 32767, 19004.86),
        ]
        for (range, raw, mgauss) in vectors {
            XCTAssertEqual(Double(raw) * range.lsm9ds1MilliGaussPerCount, mgauss, accuracy: 1e-6, "\(range) \(raw)")
            XCTAssertEqual(Double(raw) * IMUConvert.lsm9ds1MagScale(range), mgauss / 10, accuracy: 1e-7, "µT \(range) \(raw)")
        }
        // The same FS codes, another table: 0.14 mgauss/LSB against the LIS3MDL's 1/6842 gauss.
        XCTAssertEqual(IMUConvert.lsm9ds1MagScale(.gauss4), 0.014, accuracy: 1e-15)
        XCTAssertEqual(IMUConvert.lis3mdlScale(.gauss4) / IMUConvert.lsm9ds1MagScale(.gauss4), 1.044, accuracy: 0.001)
    }

    func testTemperatureVectors() {
        for (raw, celsius) in [(Int16(0), 25.0), (16, 26), (1, 25.0625), (-400, 0), (160, 35), (-32768, -2023)] {
            XCTAssertEqual(IMUConvert.lsm9ds1Temperature(raw), celsius, "\(raw)")
        }
    }

    func testMagnetometerAxesMirrorX() {
        XCTAssertEqual(IMUConvert.lsm9ds1MagToAccelGyro(IMUVector(1, 2, 3)), IMUVector(-1, 2, 3))
        let v = IMUVector(20, -5, -40)
        XCTAssertEqual(IMUConvert.lsm9ds1AccelGyroToMag(IMUConvert.lsm9ds1MagToAccelGyro(v)), v)
    }
}
