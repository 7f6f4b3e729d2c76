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
    @inlinable public static func invensense(
        _ p: UnsafeRawBufferPointer, at offset: Int, accelScale: Double, gyroScale: Double,
        into s: inout IMUSample
    ) {
        s.accel = IMUConvert.scaled(IMUConvert.vector(p, at: offset, bigEndian: true), accelScale)
        s.gyro = IMUConvert.scaled(IMUConvert.vector(p, at: offset + 6, bigEndian: true), gyroScale)
    }

    /// LSM6DSOX FIFO_DATA_OUT_TAG (78h): TAG_SENSOR in bits 7:3, TAG_CNT in 2:1, parity in 0
    /// (DS12814 §9.85); 0x01 = gyroscope, 0x02 = accelerometer (uncompressed).
    public static let stGyroTag: UInt8 = 0x01
    public static let stAccelTag: UInt8 = 0x02
}

/// ICM-42688-P FIFO packet 3 (DS-000347 §6.1), what FIFO_CONFIG1 with accel and gyro enabled
/// writes: the header, ACCEL X/Y/Z and GYRO X/Y/Z (16-bit, big-endian as INTF_CONFIG0 leaves
/// them), the temperature (8-bit) and a 16-bit timestamp — 16 bytes.
public enum ICM42688Fifo {
    public static let packetBytes = 16
    /// FIFO_HEADER bits. HEADER_MSG: the FIFO is empty (an empty FIFO reads 0x80…).
    public static let headerEmpty: UInt8 = 0x80
    /// The packet has room for accel / gyro data (both: packet 3 or 4).
    public static let headerAccel: UInt8 = 0x40
    public static let headerGyro: UInt8 = 0x20
    /// HEADER_20: a 20-bit packet 4, which this driver does not configure.
    public static let header20: UInt8 = 0x10
    /// 10: the packet holds the ODR timestamp; 11: FSYNC time.
    public static let headerTimestampMask: UInt8 = 0x0C
    /// The accel / gyro ODR differs from the previous packet's (set on the first packet after a change).
    public static let headerODRAccel: UInt8 = 0x02
    public static let headerODRGyro: UInt8 = 0x01
    /// A sensor with no sample to give (off, or still starting) writes -32768 on every axis.
    public static let invalid = Int16.min
    /// The 8-bit temperature's invalid value.
    public static let invalidTemperature = Int8.min

    public enum Packet: Sendable, Equatable {
        /// A sample: `s` holds it.
        case sample
        /// HEADER_MSG: nothing more in the FIFO.
        case empty
        /// Accel or gyro had no data (every axis -32768): no sample.
        case invalid
        /// Not a 16-bit accel + gyro packet: the reads are out of step with the packets.
        case foreign(header: UInt8)
    }

    /// Decodes the packet at `offset` into `s` (accel, gyro, temperature; `t` and the magnetometer untouched).
    @inlinable public static func decode(
        _ p: UnsafeRawBufferPointer, at offset: Int, accelScale: Double, gyroScale: Double,
        into s: inout IMUSample
    ) -> Packet {
        let header = p[offset]
        if header & headerEmpty != 0 { return .empty }
        guard header & (headerAccel | headerGyro) == headerAccel | headerGyro, header & header20 == 0 else {
            return .foreign(header: header)
        }
        guard !allInvalid(p, offset + 1), !allInvalid(p, offset + 7) else { return .invalid }
        s.accel = IMUConvert.scaled(IMUConvert.vector(p, at: offset + 1, bigEndian: true), accelScale)
        s.gyro = IMUConvert.scaled(IMUConvert.vector(p, at: offset + 7, bigEndian: true), gyroScale)
        let t = Int8(bitPattern: p[offset + 13])
        s.temperature = t == invalidTemperature ? nil : IMUConvert.icm42688FIFOTemperature(t)
        return .sample
    }

    /// True when the header flags an ODR change for accel or gyro.
    @inlinable public static func odrChanged(_ header: UInt8) -> Bool { header & (headerODRAccel | headerODRGyro) != 0 }

    /// Three big-endian values at `offset` all -32768. One axis alone at -32768 is a saturated
    /// reading, not a missing one.
    @inlinable public static func allInvalid(_ p: UnsafeRawBufferPointer, _ offset: Int) -> Bool {
        IMUConvert.int16BE(p, offset) == invalid && IMUConvert.int16BE(p, offset + 2) == invalid
            && IMUConvert.int16BE(p, offset + 4) == invalid
    }
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
    public mutating func take(
        _ p: UnsafeRawBufferPointer, at offset: Int, accelScale: Double, gyroScale: Double,
        into s: inout IMUSample
    ) -> Bool {
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
