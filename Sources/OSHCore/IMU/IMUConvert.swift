// The convert halves of the IMU drivers: raw register bytes → SI units, pure and
// allocation-free. Every scale comes from the chip's datasheet and the range the driver
// configured; a driver that configures one range and converts with another is the classic
// IMU bug, so each function takes the range explicitly.

/// Accelerometer full-scale range.
public enum AccelRange: Int, Sendable, CaseIterable {
    case g2 = 2, g4 = 4, g8 = 8, g16 = 16

    /// From a config value in g (2, 4, 8, 16).
    public init?(g: Int) { self.init(rawValue: g) }

    /// InvenSense (MPU-6050/6500/9250, ICM-20948) FS_SEL code: 0…3 for ±2…±16 g.
    public var invensenseCode: UInt8 {
        switch self {
        case .g2: return 0;
        case .g4: return 1;
        case .g8: return 2;
        case .g16: return 3
        }
    }

    /// InvenSense sensitivity: 16384, 8192, 4096, 2048 LSB/g.
    public var invensenseCountsPerG: Double { 32768 / Double(rawValue) }

    /// LSM6DSOX FS_XL code (CTRL1_XL bits 3:2): note the datasheet's order 00=±2, 01=±16, 10=±4, 11=±8.
    public var lsm6dsoxCode: UInt8 {
        switch self {
        case .g2: return 0;
        case .g16: return 1;
        case .g4: return 2;
        case .g8: return 3
        }
    }

    /// ICM-42688-P ACCEL_FS_SEL (ACCEL_CONFIG0 bits 7:5): the MPU order reversed, 0 = ±16 g … 3 = ±2 g.
    public var icm42688Code: UInt8 {
        switch self {
        case .g16: return 0;
        case .g8: return 1;
        case .g4: return 2;
        case .g2: return 3
        }
    }

    /// LSM6DSOX sensitivity: 0.061, 0.122, 0.244, 0.488 mg/LSB.
    public var lsm6dsoxMilliGPerCount: Double {
        switch self {
        case .g2: return 0.061;
        case .g4: return 0.122;
        case .g8: return 0.244;
        case .g16: return 0.488
        }
    }
}

/// Gyroscope full-scale range in degrees per second.
public enum GyroRange: Int, Sendable, CaseIterable {
    case dps250 = 250, dps500 = 500, dps1000 = 1000, dps2000 = 2000

    public init?(dps: Int) { self.init(rawValue: dps) }

    /// InvenSense FS_SEL code 0…3, and the LSM6DSOX FS_G code (CTRL2_G bits 3:2) happens to match.
    public var code: UInt8 {
        switch self {
        case .dps250: return 0;
        case .dps500: return 1;
        case .dps1000: return 2;
        case .dps2000: return 3
        }
    }

    /// InvenSense sensitivity: 131, 65.5, 32.8, 16.4 LSB/(°/s) (rounded in the datasheet, so
    /// these are the datasheet's numbers, not 32768/range).
    public var invensenseCountsPerDPS: Double {
        switch self {
        case .dps250: return 131;
        case .dps500: return 65.5;
        case .dps1000: return 32.8;
        case .dps2000: return 16.4
        }
    }

    /// ICM-42688-P GYRO_FS_SEL (GYRO_CONFIG0 bits 7:5): 0 = ±2000 … 3 = ±250 dps (4–7, the
    /// ranges below 250 dps, are not offered).
    public var icm42688Code: UInt8 {
        switch self {
        case .dps2000: return 0;
        case .dps1000: return 1;
        case .dps500: return 2;
        case .dps250: return 3
        }
    }

    /// LSM6DSOX sensitivity: 8.75, 17.5, 35, 70 mdps/LSB.
    public var lsm6dsoxMilliDPSPerCount: Double {
        switch self {
        case .dps250: return 8.75;
        case .dps500: return 17.5;
        case .dps1000: return 35;
        case .dps2000: return 70
        }
    }
}

/// LIS3MDL full-scale range in gauss.
public enum LIS3MDLRange: Int, Sendable, CaseIterable {
    case gauss4 = 4, gauss8 = 8, gauss12 = 12, gauss16 = 16

    /// FS bits (CTRL_REG2 bits 6:5).
    public var code: UInt8 {
        switch self {
        case .gauss4: return 0;
        case .gauss8: return 1;
        case .gauss12: return 2;
        case .gauss16: return 3
        }
    }

    /// 6842, 3421, 2281, 1711 LSB/gauss (datasheet table 3).
    public var countsPerGauss: Double {
        switch self {
        case .gauss4: return 6842;
        case .gauss8: return 3421;
        case .gauss12: return 2281;
        case .gauss16: return 1711
        }
    }
}

public enum IMUConvert {
    /// Standard gravity (CGPM 1901), the g of every accelerometer datasheet.
    public static let standardGravity = 9.80665
    public static let radiansPerDegree = Double.pi / 180

    // MARK: byte order

    /// Signed 16-bit from two bytes, high byte first (InvenSense).
    @inlinable public static func int16BE(_ p: UnsafeRawBufferPointer, _ offset: Int) -> Int16 {
        Int16(bitPattern: UInt16(p[offset]) << 8 | UInt16(p[offset + 1]))
    }

    /// Signed 16-bit from two bytes, low byte first (AKM, ST, Bosch).
    @inlinable public static func int16LE(_ p: UnsafeRawBufferPointer, _ offset: Int) -> Int16 {
        Int16(bitPattern: UInt16(p[offset + 1]) << 8 | UInt16(p[offset]))
    }

    /// Three consecutive 16-bit values as doubles.
    @inlinable public static func vector(_ p: UnsafeRawBufferPointer, at offset: Int, bigEndian: Bool) -> IMUVector {
        bigEndian
            ? IMUVector(Double(int16BE(p, offset)), Double(int16BE(p, offset + 2)), Double(int16BE(p, offset + 4)))
            : IMUVector(Double(int16LE(p, offset)), Double(int16LE(p, offset + 2)), Double(int16LE(p, offset + 4)))
    }

    @inlinable public static func scaled(_ v: IMUVector, _ k: Double) -> IMUVector { IMUVector(v.x * k, v.y * k, v.z * k) }

    // MARK: InvenSense (MPU-6050/6500/9250, ICM-20948)

    /// m/s² per count at `range`.
    @inlinable public static func invensenseAccelScale(_ range: AccelRange) -> Double {
        standardGravity / range.invensenseCountsPerG
    }

    /// rad/s per count at `range`.
    @inlinable public static func invensenseGyroScale(_ range: GyroRange) -> Double {
        radiansPerDegree / range.invensenseCountsPerDPS
    }

    /// MPU-6050: T = raw/340 + 36.53 °C (register map rev 4.2 §4.18).
    @inlinable public static func mpu6050Temperature(_ raw: Int16) -> Double { Double(raw) / 340 + 36.53 }

    /// MPU-6500/9250 and ICM-20948: T = raw/333.87 + 21 °C (room-temperature offset 0).
    @inlinable public static func invensenseTemperature(_ raw: Int16) -> Double { Double(raw) / 333.87 + 21 }

    // MARK: TDK InvenSense ICM-42688-P (DS-000347)

    /// m/s² per count: 16384, 8192, 4096, 2048 LSB/g at ±2…±16 g (DS-000347 table 2), the MPU family's numbers.
    @inlinable public static func icm42688AccelScale(_ range: AccelRange) -> Double { invensenseAccelScale(range) }

    /// rad/s per count: 131, 65.5, 32.8, 16.4 LSB/(°/s) at ±250…±2000 (DS-000347 table 1), as the MPU family.
    @inlinable public static func icm42688GyroScale(_ range: GyroRange) -> Double { invensenseGyroScale(range) }

    /// TEMP_DATA1/0 (16-bit): T = raw / 132.48 + 25 °C (DS-000347, TEMP_DATA register description).
    @inlinable public static func icm42688Temperature(_ raw: Int16) -> Double { Double(raw) / 132.48 + 25 }

    /// The 8-bit temperature of FIFO packets 1–3: T = raw / 2.07 + 25 °C (DS-000347 §6.1).
    @inlinable public static func icm42688FIFOTemperature(_ raw: Int8) -> Double { Double(raw) / 2.07 + 25 }

    // MARK: AKM magnetometers

    /// AK8963 in 16-bit output: 0.15 µT/LSB (14-bit: 0.6).
    public static let ak8963MicroteslaPerCount16 = 0.15
    public static let ak8963MicroteslaPerCount14 = 0.6

    /// AK8963 sensitivity adjustment from the fuse-ROM ASA byte: H·((ASA−128)·0.5/128 + 1).
    @inlinable public static func ak8963Adjustment(_ asa: UInt8) -> Double { (Double(asa) - 128) * 0.5 / 128 + 1 }

    /// µT per count for each AK8963 axis, given its three ASA bytes.
    @inlinable public static func ak8963Scale(asa: (UInt8, UInt8, UInt8), sixteenBit: Bool = true) -> IMUVector {
        let k = sixteenBit ? ak8963MicroteslaPerCount16 : ak8963MicroteslaPerCount14
        return IMUVector(k * ak8963Adjustment(asa.0), k * ak8963Adjustment(asa.1), k * ak8963Adjustment(asa.2))
    }

    /// AK09916 (inside the ICM-20948): 0.15 µT/LSB, no adjustment ROM.
    public static let ak09916MicroteslaPerCount = 0.15

    /// The AK8963's axes in the MPU-9250 accel/gyro frame: the die is placed with x and y
    /// swapped and z pointing the other way (MPU-9250 product spec, orientation figure).
    @inlinable public static func ak8963ToMPU9250(_ m: IMUVector) -> IMUVector { IMUVector(m.y, m.x, -m.z) }
    /// The inverse (the simulator needs it): the same swap is its own inverse.
    @inlinable public static func mpu9250ToAK8963(_ v: IMUVector) -> IMUVector { IMUVector(v.y, v.x, -v.z) }

    /// The AK09916's axes in the ICM-20948 frame: x shared, y and z reversed (ICM-20948
    /// datasheet, orientation figure; InvenSense's compass mounting matrix diag(1, −1, −1)).
    @inlinable public static func ak09916ToICM20948(_ m: IMUVector) -> IMUVector { IMUVector(m.x, -m.y, -m.z) }
    @inlinable public static func icm20948ToAK09916(_ v: IMUVector) -> IMUVector { IMUVector(v.x, -v.y, -v.z) }

    // MARK: ST (LSM6DSOX, LIS3MDL)

    @inlinable public static func lsm6dsoxAccelScale(_ range: AccelRange) -> Double {
        range.lsm6dsoxMilliGPerCount / 1000 * standardGravity
    }

    @inlinable public static func lsm6dsoxGyroScale(_ range: GyroRange) -> Double {
        range.lsm6dsoxMilliDPSPerCount / 1000 * radiansPerDegree
    }

    /// LSM6DSOX: 256 LSB/°C, 0 at 25 °C.
    @inlinable public static func lsm6dsoxTemperature(_ raw: Int16) -> Double { Double(raw) / 256 + 25 }

    /// µT per count (1 gauss = 100 µT).
    @inlinable public static func lis3mdlScale(_ range: LIS3MDLRange) -> Double { 100 / range.countsPerGauss }

    // MARK: Bosch BNO055 (UNIT_SEL as the driver sets it: m/s², rad/s, degrees, °C)

    /// Accelerometer (and linear acceleration, gravity): 1 m/s² = 100 LSB.
    public static let bno055AccelScale = 1.0 / 100
    /// Gyro in rad/s mode: 1 rad/s = 900 LSB.
    public static let bno055GyroScale = 1.0 / 900
    /// Magnetometer: 1 µT = 16 LSB.
    public static let bno055MagScale = 1.0 / 16
    /// Euler angles in degree mode: 1° = 16 LSB.
    public static let bno055EulerScale = 1.0 / 16
    /// Quaternion: 1 = 2^14 LSB.
    public static let bno055QuaternionScale = 1.0 / 16384

    /// The quaternion block (w, x, y, z, each little-endian) at `offset`.
    @inlinable public static func bno055Quaternion(_ p: UnsafeRawBufferPointer, at offset: Int) -> IMUQuaternion {
        IMUQuaternion(
            w: Double(int16LE(p, offset)) * bno055QuaternionScale,
            x: Double(int16LE(p, offset + 2)) * bno055QuaternionScale,
            y: Double(int16LE(p, offset + 4)) * bno055QuaternionScale,
            z: Double(int16LE(p, offset + 6)) * bno055QuaternionScale)
    }

    // MARK: the other way (simulated chips)

    /// The count a chip reports for `value` at `perCount` units per count: rounded, saturated
    /// at the 16-bit limits like a real ADC.
    @inlinable public static func counts(_ value: Double, perCount: Double) -> Int16 {
        let c = (value / perCount).rounded()
        if !(c == c) { return 0 }
        return Int16(max(-32768, min(32767, c)))
    }
}
