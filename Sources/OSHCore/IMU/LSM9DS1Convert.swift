// ST LSM9DS1 conversions: sensitivities from the datasheet (DocID025715 Rev 3) Table 3 "Sensor
// characteristics", full-scale codes from its CTRL_REG1_G, CTRL_REG6_XL and CTRL_REG2_M
// descriptions. ST's own driver (lsm9ds1-pid, lsm9ds1_from_fs*_to_*) uses the same constants.

extension AccelRange {
    /// FS_XL (CTRL_REG6_XL bits 4:3): 00 = ±2 g, 01 = ±16 g, 10 = ±4 g, 11 = ±8 g — not in range order.
    public var lsm9ds1Code: UInt8 {
        switch self {
        case .g2: return 0;
        case .g16: return 1;
        case .g4: return 2;
        case .g8: return 3
        }
    }

    /// LA_So: 0.061, 0.122, 0.244, 0.732 mg/LSB. ±16 g is 0.732, not 0.488: its counts span ±24 g.
    public var lsm9ds1MilliGPerCount: Double {
        switch self {
        case .g2: return 0.061;
        case .g4: return 0.122;
        case .g8: return 0.244;
        case .g16: return 0.732
        }
    }
}

extension GyroRange {
    /// The chip's full scales are ±245, ±500 and ±2000 dps: each of the agent's ranges gets the
    /// chip's smallest that holds it. ±250 → ±245 (8.75 mdps/LSB: its counts reach ±286 dps, as the
    /// LSM6DSOX's ±250 does with the same sensitivity); ±1000 → ±2000 (the chip has no ±1000).
    public var lsm9ds1FullScaleDPS: Int {
        switch self {
        case .dps250: return 245;
        case .dps500: return 500;
        case .dps1000, .dps2000: return 2000
        }
    }

    /// FS_G (CTRL_REG1_G bits 4:3): 00 = 245, 01 = 500, 11 = 2000 dps (10 is not available).
    public var lsm9ds1Code: UInt8 {
        switch self {
        case .dps250: return 0;
        case .dps500: return 1;
        case .dps1000, .dps2000: return 3
        }
    }

    /// G_So: 8.75, 17.50, 70 mdps/LSB.
    public var lsm9ds1MilliDPSPerCount: Double {
        switch self {
        case .dps250: return 8.75;
        case .dps500: return 17.5;
        case .dps1000, .dps2000: return 70
        }
    }
}

extension LIS3MDLRange {
    /// The LSM9DS1 magnetometer's M_GN: 0.14, 0.29, 0.43, 0.58 mgauss/LSB. Its FS codes are the
    /// LIS3MDL's, its sensitivities its own table's (the LIS3MDL's 6842…1711 LSB/gauss differ by up to 4 %).
    public var lsm9ds1MilliGaussPerCount: Double {
        switch self {
        case .gauss4: return 0.14;
        case .gauss8: return 0.29;
        case .gauss12: return 0.43;
        case .gauss16: return 0.58
        }
    }
}

extension IMUConvert {
    /// m/s² per count.
    @inlinable public static func lsm9ds1AccelScale(_ range: AccelRange) -> Double {
        range.lsm9ds1MilliGPerCount / 1000 * standardGravity
    }

    /// rad/s per count.
    @inlinable public static func lsm9ds1GyroScale(_ range: GyroRange) -> Double {
        range.lsm9ds1MilliDPSPerCount / 1000 * radiansPerDegree
    }

    /// µT per count (1 mgauss = 0.1 µT).
    @inlinable public static func lsm9ds1MagScale(_ range: LIS3MDLRange) -> Double { range.lsm9ds1MilliGaussPerCount / 10 }

    /// OUT_TEMP: 16 LSB/°C, 0 at 25 °C.
    @inlinable public static func lsm9ds1Temperature(_ raw: Int16) -> Double { Double(raw) / 16 + 25 }

    /// The magnetometer die's axes in the accel/gyro frame: X points the other way, Y and Z are
    /// shared (the datasheet's pin-connection figure; RTIMULib, which the Sense HAT's Python library uses, flips the
    /// same axis). A mirror, so no mounting map can express it: the driver applies it.
    @inlinable public static func lsm9ds1MagToAccelGyro(_ m: IMUVector) -> IMUVector { IMUVector(-m.x, m.y, m.z) }
    /// The inverse (the simulator's): a mirror is its own.
    @inlinable public static func lsm9ds1AccelGyroToMag(_ v: IMUVector) -> IMUVector { IMUVector(-v.x, v.y, v.z) }
}
