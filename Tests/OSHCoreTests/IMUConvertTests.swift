import OSHCore
import XCTest
import OSHSimulation

final class IMUConvertTests: XCTestCase {
    private func bytes(_ b: [UInt8], _ body: (UnsafeRawBufferPointer) -> Void) { b.withUnsafeBytes(body) }

    func testByteOrder() {
        bytes([0x80, 0x00, 0x7F, 0xFF, 0xFF, 0xFE]) { p in
            XCTAssertEqual(IMUConvert.int16BE(p, 0), -32768)
            XCTAssertEqual(IMUConvert.int16BE(p, 2), 32767)
            XCTAssertEqual(IMUConvert.int16LE(p, 4), -257)
            XCTAssertEqual(IMUConvert.vector(p, at: 0, bigEndian: true), IMUVector(-32768, 32767, -2))
            XCTAssertEqual(IMUConvert.vector(p, at: 0, bigEndian: false), IMUVector(128, -129, -257))
        }
    }

    func testInvenSenseScalesFollowTheConfiguredRange() {
        // Datasheet sensitivities: 16384 LSB/g at ±2 g … 2048 at ±16 g; 131 LSB/(°/s) at ±250 …
        XCTAssertEqual(16384 * IMUConvert.invensenseAccelScale(.g2), 9.80665, accuracy: 1e-12)
        XCTAssertEqual(2048 * IMUConvert.invensenseAccelScale(.g16), 9.80665, accuracy: 1e-12)
        XCTAssertEqual(8192 * IMUConvert.invensenseAccelScale(.g4), 9.80665, accuracy: 1e-12)
        XCTAssertEqual(131 * IMUConvert.invensenseGyroScale(.dps250), Double.pi / 180, accuracy: 1e-15)
        XCTAssertEqual(16.4 * IMUConvert.invensenseGyroScale(.dps2000), Double.pi / 180, accuracy: 1e-15)
        XCTAssertEqual(AccelRange.g8.invensenseCode, 2)
        XCTAssertEqual(GyroRange.dps1000.code, 2)
        XCTAssertEqual(IMUConvert.mpu6050Temperature(0), 36.53)
        XCTAssertEqual(IMUConvert.mpu6050Temperature(-3740), 25.53, accuracy: 1e-9)
        XCTAssertEqual(IMUConvert.invensenseTemperature(0), 21)
    }

    func testAKMagnetometers() {
        // H_adj = H · ((ASA − 128) · 0.5 / 128 + 1)
        XCTAssertEqual(IMUConvert.ak8963Adjustment(128), 1)
        XCTAssertEqual(IMUConvert.ak8963Adjustment(0), 0.5)
        XCTAssertEqual(IMUConvert.ak8963Adjustment(255), 1 + 127 * 0.5 / 128)
        let s = IMUConvert.ak8963Scale(asa: (176, 128, 0))
        XCTAssertEqual(s.x, 0.15 * 1.1875, accuracy: 1e-12)
        XCTAssertEqual(s.y, 0.15)
        XCTAssertEqual(s.z, 0.075)
        XCTAssertEqual(IMUConvert.ak8963Scale(asa: (128, 128, 128), sixteenBit: false).x, 0.6)
        XCTAssertEqual(IMUConvert.ak09916MicroteslaPerCount, 0.15)
        // Die axes → accel/gyro axes.
        XCTAssertEqual(IMUConvert.ak8963ToMPU9250(IMUVector(1, 2, 3)), IMUVector(2, 1, -3))
        XCTAssertEqual(IMUConvert.ak09916ToICM20948(IMUVector(1, 2, 3)), IMUVector(1, -2, -3))
        let v = IMUVector(4, -5, 6)
        XCTAssertEqual(IMUConvert.ak8963ToMPU9250(IMUConvert.mpu9250ToAK8963(v)), v)
        XCTAssertEqual(IMUConvert.ak09916ToICM20948(IMUConvert.icm20948ToAK09916(v)), v)
    }

    func testSTScales() {
        XCTAssertEqual(IMUConvert.lis3mdlScale(.gauss4) * 6842, 100, accuracy: 1e-9)  // 1 gauss = 100 µT
        XCTAssertEqual(IMUConvert.lis3mdlScale(.gauss16) * 1711, 100, accuracy: 1e-9)
        XCTAssertEqual(LIS3MDLRange.gauss12.code, 2)
        XCTAssertEqual(IMUConvert.lsm6dsoxAccelScale(.g2), 0.061e-3 * 9.80665, accuracy: 1e-15)
        XCTAssertEqual(IMUConvert.lsm6dsoxGyroScale(.dps2000), 0.070 * .pi / 180, accuracy: 1e-15)
        // FS_XL codes are not in range order on this chip.
        XCTAssertEqual(AccelRange.allCases.map(\.lsm6dsoxCode), [0, 2, 3, 1])
        XCTAssertEqual(IMUConvert.lsm6dsoxTemperature(256), 26)
    }

    func testBNO055Units() {
        bytes([0x00, 0x40, 0x00, 0xC0, 0x00, 0x00, 0x00, 0x20]) { p in
            let q = IMUConvert.bno055Quaternion(p, at: 0)
            XCTAssertEqual(q, IMUQuaternion(w: 1, x: -1, y: 0, z: 0.5))
        }
        XCTAssertEqual(981 * IMUConvert.bno055AccelScale, 9.81, accuracy: 1e-12)
        XCTAssertEqual(900 * IMUConvert.bno055GyroScale, 1)
        XCTAssertEqual(16 * IMUConvert.bno055MagScale, 1)
    }

    func testCountsRoundAndSaturate() {
        XCTAssertEqual(IMUConvert.counts(9.80665, perCount: IMUConvert.invensenseAccelScale(.g2)), 16384)
        XCTAssertEqual(IMUConvert.counts(100, perCount: 0.001), 32767)
        XCTAssertEqual(IMUConvert.counts(-100, perCount: 0.001), -32768)
        XCTAssertEqual(IMUConvert.counts(.nan, perCount: 1), 0)
    }

    func testAxisMapParsesAppliesAndRejects() throws {
        let m = try AxisMap(["+y", "-x", "z"])
        XCTAssertEqual(m.apply(IMUVector(1, 2, 3)), IMUVector(2, -1, 3))
        XCTAssertEqual(m.inverse(m.apply(IMUVector(1, 2, 3))), IMUVector(1, 2, 3))
        XCTAssertEqual(m.axes, ["+y", "-x", "+z"])
        XCTAssertTrue(try AxisMap(["+x", "+y", "+z"]).isIdentity)
        XCTAssertThrowsError(try AxisMap(["+x", "+x", "+z"])) {
            XCTAssertEqual($0 as? AxisMap.ParseError, .notAPermutation(["+x", "+x", "+z"]))
        }
        XCTAssertThrowsError(try AxisMap(["+x", "+y", "-z"])) { e in
            XCTAssertTrue("\(e)".contains("left-handed"), "\(e)")
        }
        XCTAssertThrowsError(try AxisMap(["+w", "+y", "+z"])) { XCTAssertEqual($0 as? AxisMap.ParseError, .badAxis("+w")) }
        XCTAssertThrowsError(try AxisMap(["+x", "+y"]))
        // The quaternion is the same rotation, for every rotation among the 24.
        let names = ["x", "y", "z"]
        var rotations = 0
        for a in 0..<3 {
            for b in 0..<3 where b != a {
                for s in 0..<8 {
                    let c = 3 - a - b
                    let picks: [(Int, Int)] = [(a, s & 1), (b, (s >> 1) & 1), (c, (s >> 2) & 1)]
                    let axes: [String] = picks.map { p -> String in (p.1 == 1 ? "-" : "+") + names[p.0] }
                    guard let map = try? AxisMap(axes) else { continue }
                    rotations += 1
                    let v = IMUVector(0.3, -1.7, 2.9)
                    let r = map.quaternion.rotate(v), e = map.apply(v)
                    XCTAssertEqual(r.x, e.x, accuracy: 1e-12, "\(axes)")
                    XCTAssertEqual(r.y, e.y, accuracy: 1e-12, "\(axes)")
                    XCTAssertEqual(r.z, e.z, accuracy: 1e-12, "\(axes)")
                }
            }
        }
        XCTAssertEqual(rotations, 24)
    }

    func testSimulatedMotionIsConsistent() {
        let motion = SimulatedMotion()
        for t in stride(from: 0.0, through: 40, by: 3.7) {
            let truth = motion.truth(at: t)
            XCTAssertEqual(truth.accel.norm, 9.80665, accuracy: 1e-9)
            XCTAssertEqual(truth.mag.norm, 48, accuracy: 1e-9)
            // Back to the world: gravity up, the field north and down at 60°.
            let up = truth.orientation.rotate(truth.accel)
            XCTAssertEqual(up.z, 9.80665, accuracy: 1e-9)
            XCTAssertEqual(up.x, 0, accuracy: 1e-9)
            let f = truth.orientation.rotate(truth.mag)
            XCTAssertEqual(f.y, 24, accuracy: 1e-9)
            XCTAssertEqual(f.z, -41.569219, accuracy: 1e-6)
            // Integrating the body rate over a short step lands on the next orientation.
            let dt = 1e-3
            let w = truth.gyro
            let half = IMUQuaternion(w: 1, x: w.x * dt / 2, y: w.y * dt / 2, z: w.z * dt / 2)
            let next = truth.orientation * half, exact = motion.orientation(at: t + dt)
            XCTAssertEqual(next.x, exact.x, accuracy: 1e-6)
            XCTAssertEqual(next.z, exact.z, accuracy: 1e-6)
        }
        // Level and turning: the gyro sees −10 °/s about z (clockwise seen from above), and the
        // body y axis points at the compass heading.
        let level = SimulatedMotion(pitchAmplitudeDeg: 0, rollAmplitudeDeg: 0)
        let tr = level.truth(at: 4.5)
        XCTAssertEqual(tr.gyro.z, -10 * .pi / 180, accuracy: 1e-9)
        XCTAssertEqual(tr.headingDeg, 45, accuracy: 1e-9)
        let forward = tr.orientation.rotate(IMUVector(0, 1, 0))
        XCTAssertEqual(atan2(forward.x, forward.y) * 180 / .pi, 45, accuracy: 1e-9)
        // Heading from the magnetometer alone agrees (level board).
        XCTAssertEqual(atan2(-tr.mag.x, tr.mag.y) * 180 / .pi, 45, accuracy: 1e-9)
    }
}
