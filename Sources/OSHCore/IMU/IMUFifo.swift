// The pure half of FIFO reads (IIO "buffered mode"): a chip's FIFO geometry, how many whole
// frames a count holds, how a burst is split into transfers, the sample times a burst gets,
// and the frame decoders. The drivers in OSHPlatform do only the bus transactions.

/// One chip's hardware FIFO as the driver configured it.
public struct IMUFifoLayout: Sendable, Equatable {
    /// Bytes the FIFO holds (MPU-6050 1024, MPU-6500/9250 and ICM-20948 512).
    public var capacityBytes: Int
    /// Bytes per accel+gyro sample (InvenSense 12: accel then gyro, big-endian; LSM6DSOX 14:
    /// a tagged gyro word and a tagged accel word of 7 bytes each).
    public var frameBytes: Int
    /// The rate the chip writes samples at (Hz), as configured (the register rate, not the asked one).
    public var rateHz: Double

    public init(capacityBytes: Int, frameBytes: Int, rateHz: Double) {
        self.capacityBytes = capacityBytes
        self.frameBytes = frameBytes
        self.rateHz = rateHz
    }

    /// At most this many bytes per I²C read: 128 bytes take ≈12 ms at the Pi's default
    /// 100 kHz, and the loop is single-threaded, so a long burst is split rather than stall
    /// every other source (and the barometer on the same bus) for tens of milliseconds.
    public static let maxTransferBytes = 128

    /// Whole frames per transfer (10 for 12-byte frames, 9 for the LSM6DSOX's 14).
    public var framesPerTransfer: Int { max(1, Self.maxTransferBytes / frameBytes) }

    /// Whole frames a read may find: two thirds of the FIFO, the last third left for a late loop
    /// (512 bytes, 12-byte frames: 28 frames; at 100 Hz the FIFO is full 140 ms after that).
    public var readFrames: Int { max(1, capacityBytes * 2 / 3 / frameBytes) }

    /// The longest wait between reads that keeps to `readFrames` at `rateHz` (0.28 s above).
    public var fillInterval: Double { Double(readFrames) / max(rateHz, 0.001) }

    /// A count this close to the capacity means a sample may have found no room: the FIFO
    /// overflowed (InvenSense stop-when-full mode stops a frame short of full; the MPU-6050
    /// overwrites and sits at capacity with its frames misaligned).
    public func overflowed(count: Int) -> Bool { count > capacityBytes - frameBytes }

    /// Whole frames in `count` bytes (a frame being written stays for the next read).
    public func wholeFrames(count: Int) -> Int { max(0, count) / frameBytes }

    /// The seconds between reads: the asked interval (the publisher's flush interval —
    /// observations leave only then, so reading sooner gains nothing), or the largest whole
    /// fraction of it (½, ⅓ …) within `fillInterval`: the reads stay on the loop's grid, in the
    /// flush's own wake-up.
    public func burstInterval(asked: Double) -> Double {
        guard asked.isFinite, asked > 0 else { return fillInterval }
        let parts = max(1, (asked / fillInterval).rounded(.up))
        return asked / parts
    }
}

/// Sample times for a burst. The FIFO has no timestamps (the InvenSense parts) or ones in a
/// chip clock we do not track, so the times are reconstructed from the configured rate: the
/// last whole sample is taken as made at the read time (it is at most one period old), the
/// earlier ones 1/rate apart before it — so the filter integrates each with dt = 1/rate.
/// When that would put a sample at or before the previous burst's last one (the timer ran
/// late, or the chip's clock is a little fast), the burst is spread evenly between the two
/// instead, so time never runs backwards.
public enum IMUFifoTiming {
    public static func time(ofSample i: Int, count n: Int, readAt now: Double, rateHz: Double, previous: Double?) -> Double {
        guard n > 0 else { return now }
        let period = 1 / max(rateHz, 0.001)
        let first = now - Double(n - 1) * period
        if let p = previous, first <= p, now > p {
            return p + Double(i + 1) * (now - p) / Double(n)
        }
        return now - Double(n - 1 - i) * period
    }
}

/// Frame decoders (the scales are the register path's: same ranges, same functions).
public enum IMUFifoFrames {
    /// InvenSense FIFO frame with ACCEL and the three GYRO enables set: ACCEL_XOUT_H…ZOUT_L then
    /// GYRO_XOUT_H…ZOUT_L, written in register order, big-endian (MPU-6500 register map §4.7,
    /// ICM-20948 DS-000189 FIFO_EN_2).
    @inlinable public static func invensense(_ p: UnsafeRawBufferPointer, at offset: Int, accelScale: Double, gyroScale: Double,
                                             into s: inout IMUSample) {
        s.accel = IMUConvert.scaled(IMUConvert.vector(p, at: offset, bigEndian: true), accelScale)
        s.gyro = IMUConvert.scaled(IMUConvert.vector(p, at: offset + 6, bigEndian: true), gyroScale)
    }

    /// LSM6DSOX FIFO_DATA_OUT_TAG (78h): TAG_SENSOR in bits 7:3, TAG_CNT in 2:1, parity in 0
    /// (DS12814 §9.85); 0x01 = gyroscope, 0x02 = accelerometer (uncompressed).
    public static let stGyroTag: UInt8 = 0x01
    public static let stAccelTag: UInt8 = 0x02
}

/// Pairs the LSM6DSOX's tagged words into samples: a gyro word and an accel word of the same
/// batch (same TAG_CNT) make one sample. A word whose partner is missing (the FIFO was read
/// at a batch boundary, or reset) waits for it or is replaced: tags realign by themselves.
public struct STFifoPairing: Sendable {
    private var gyro: IMUVector?
    private var gyroCount: UInt8 = 0
    private var accel: IMUVector?
    private var accelCount: UInt8 = 0
    /// Words with a tag this decoder does not use (temperature, timestamp…).
    public private(set) var skipped = 0

    public init() {}

    public mutating func reset() { gyro = nil; accel = nil }

    /// One 7-byte word at `offset`; true when it completed a sample (then `s` holds it).
    public mutating func take(_ p: UnsafeRawBufferPointer, at offset: Int, accelScale: Double, gyroScale: Double,
                              into s: inout IMUSample) -> Bool {
        let tag = p[offset]
        let sensor = tag >> 3, count = tag >> 1 & 3
        let v = IMUConvert.vector(p, at: offset + 1, bigEndian: false)
        switch sensor {
        case IMUFifoFrames.stGyroTag:
            gyro = IMUConvert.scaled(v, gyroScale)
            gyroCount = count
        case IMUFifoFrames.stAccelTag:
            accel = IMUConvert.scaled(v, accelScale)
            accelCount = count
        default:
            skipped += 1
            return false
        }
        guard let g = gyro, let a = accel, gyroCount == accelCount else { return false }
        s.gyro = g
        s.accel = a
        gyro = nil
        accel = nil
        return true
    }
}
