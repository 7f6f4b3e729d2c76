import OSHCore
import XCTest

/// The pure half of FIFO reads: geometry, the burst interval cap, sample times, frame decoding.
final class IMUFifoTests: XCTestCase {
    func testGeometryAndTheFillCapOnTheFlushGrid() {
        let mpu9250 = IMUFifoLayout(capacityBytes: 512, frameBytes: 12, rateHz: 100)
        XCTAssertEqual(mpu9250.readFrames, 28)
        XCTAssertEqual(mpu9250.fillInterval, 0.28, accuracy: 1e-12)
        XCTAssertEqual(mpu9250.burstInterval(asked: 0.25), 0.25, accuracy: 1e-12, "the flush interval: one wake-up for both")
        XCTAssertEqual(mpu9250.burstInterval(asked: 0.1), 0.1, accuracy: 1e-12)
        XCTAssertEqual(mpu9250.burstInterval(asked: 0.5), 0.25, accuracy: 1e-12, "half the flush interval, on its grid")
        XCTAssertEqual(mpu9250.burstInterval(asked: 1), 0.25, accuracy: 1e-12, "a quarter")
        XCTAssertEqual(
            IMUFifoLayout(capacityBytes: 512, frameBytes: 12, rateHz: 200).burstInterval(asked: 0.25), 0.125,
            accuracy: 1e-12, "200 Hz fills 28 frames in 0.14 s")
        XCTAssertEqual(mpu9250.burstInterval(asked: .nan), 0.28, accuracy: 1e-12)
        XCTAssertEqual(mpu9250.framesPerTransfer, 10, "≤ 128 bytes per I²C read")
        XCTAssertEqual(IMUFifoLayout(capacityBytes: 1024, frameBytes: 12, rateHz: 100).burstInterval(asked: 0.25), 0.25)
        XCTAssertEqual(IMUFifoLayout(capacityBytes: 9216, frameBytes: 14, rateHz: 104).framesPerTransfer, 9)
        // Partial frames stay in the FIFO; a count a frame short of capacity is an overflow.
        XCTAssertEqual(mpu9250.wholeFrames(count: 41), 3)
        XCTAssertEqual(mpu9250.wholeFrames(count: 11), 0)
        XCTAssertFalse(mpu9250.overflowed(count: 500))
        XCTAssertTrue(mpu9250.overflowed(count: 504))
        XCTAssertTrue(IMUFifoLayout(capacityBytes: 1024, frameBytes: 12, rateHz: 100).overflowed(count: 1024))
    }

    func testSampleTimesEndAtTheReadAndStepByThePeriod() {
        let t = (0..<5).map { IMUFifoTiming.time(ofSample: $0, count: 5, readAt: 10, rateHz: 100, previous: 9.95) }
        for (got, want) in zip(t, [9.96, 9.97, 9.98, 9.99, 10.0]) { XCTAssertEqual(got, want, accuracy: 1e-9) }
        // Without a previous burst the same rule applies.
        XCTAssertEqual(IMUFifoTiming.time(ofSample: 0, count: 3, readAt: 1, rateHz: 50, previous: nil), 0.96, accuracy: 1e-12)
    }

    func testOverlappingBurstIsSpreadAfterThePreviousSample() {
        // 10 samples at 100 Hz read only 50 ms after the last: spread evenly, never backwards.
        let t = (0..<10).map { IMUFifoTiming.time(ofSample: $0, count: 10, readAt: 1.05, rateHz: 100, previous: 1.0) }
        XCTAssertEqual(t.first ?? 0, 1.005, accuracy: 1e-12)
        XCTAssertEqual(t.last ?? 0, 1.05, accuracy: 1e-12)
        for (a, b) in zip(t, t.dropFirst()) { XCTAssertGreaterThan(b, a) }
    }

    func testInvensenseFrameIsBigEndianAccelThenGyro() {
        let bytes: [UInt8] = [0xFA, 0x76, 0xFD, 0x36, 0x1F, 0x64, 0x00, 0x83, 0xFF, 0x7D, 0x01, 0x00]
        var s = IMUSample()
        bytes.withUnsafeBytes { p in
            IMUFifoFrames.invensense(
                p, at: 0, accelScale: IMUConvert.invensenseAccelScale(.g4),
                gyroScale: IMUConvert.invensenseGyroScale(.dps500), into: &s)
        }
        let a = IMUConvert.invensenseAccelScale(.g4), g = IMUConvert.invensenseGyroScale(.dps500)
        XCTAssertEqual(s.accel, IMUVector(-1418 * a, -714 * a, 8036 * a))
        XCTAssertEqual(s.gyro, IMUVector(131 * g, -131 * g, 256 * g))
    }

    func testSTWordsPairByTagCount() {
        func word(_ tag: UInt8, _ cnt: UInt8, _ x: Int16) -> [UInt8] {
            let u = UInt16(bitPattern: x)
            return [tag << 3 | cnt << 1, UInt8(u & 0xFF), UInt8(u >> 8), 0, 0, 0, 0]
        }
        // An accel word left from a batch whose gyro word was read last time, then two whole
        // batches, a temperature word (skipped), and half a batch.
        let words = word(2, 3, 99) + word(1, 0, 10) + word(2, 0, 20) + word(1, 1, 11) + word(3, 0, 0) + word(2, 1, 21) + word(1, 2, 12)
        var pairing = STFifoPairing()
        var got: [IMUSample] = []
        var s = IMUSample()
        words.withUnsafeBytes { p in
            for i in 0..<(words.count / 7) where pairing.take(p, at: 7 * i, accelScale: 1, gyroScale: 1, into: &s) { got.append(s) }
        }
        XCTAssertEqual(got.map(\.gyro.x), [10, 11])
        XCTAssertEqual(got.map(\.accel.x), [20, 21])
        XCTAssertEqual(pairing.skipped, 1)
        // The pending gyro word of batch 2 completes with its accel word in the next read.
        let rest = word(2, 2, 22)
        rest.withUnsafeBytes { p in XCTAssertTrue(pairing.take(p, at: 0, accelScale: 1, gyroScale: 1, into: &s)) }
        XCTAssertEqual(s.gyro.x, 12)
        XCTAssertEqual(s.accel.x, 22)
    }
}
