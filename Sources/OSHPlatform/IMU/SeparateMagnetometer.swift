import OSHCore

/// A magnetometer that is its own chip on the host bus beside a 6-axis IMU (the LIS3MDL next
/// to an LSM6DSOX on Adafruit's and Pololu's boards), or its own die at its own address in the
/// IMU's package (the LSM9DS1's): found by its ID register, configured, and read once per sample
/// or once per FIFO burst by whichever IMU driver pairs with it. A separate chip's axes are the
/// board's business — `IMUSettings.magnetometerMounting` aligns them when the board does not
/// place the two chips alike; a die's are the package's, so its `Model` aligns them.
public final class SeparateMagnetometer {
    /// The dies that answer with the LIS3MDL's register map (WHO_AM_I 0x3D, CTRL_REG1…5 at
    /// 0x20…0x24, STATUS_REG and OUT_X_L…OUT_Z_H at 0x27…0x2D, SUB(7) for auto-increment, the
    /// same FS codes) and what differs between them.
    public enum Model: Sendable {
        case lis3mdl
        /// The LSM9DS1's magnetometer (DocID025715): its own sensitivity table, its X axis reversed
        /// against the accel/gyro's. CTRL_REG1_M bit 7 is TEMP_COMP and CTRL_REG3_M bit 7
        /// I2C_DISABLE where the LIS3MDL has TEMP_EN and a 0: both are written 0 either way, and
        /// the LIS3MDL's TEMP_OUT (0x2E) is not read.
        case lsm9ds1

        /// As the drivers report it: Android names the magnetometer output after it.
        public var name: String {
            switch self {
            case .lis3mdl: return "LIS3MDL";
            case .lsm9ds1: return "LSM9DS1"
            }
        }

        /// µT per count at `range`.
        public func scale(_ range: LIS3MDLRange) -> Double {
            switch self {
            case .lis3mdl: return IMUConvert.lis3mdlScale(range);
            case .lsm9ds1: return IMUConvert.lsm9ds1MagScale(range)
            }
        }

        /// A reading in the die's axes, in the host IMU's (a separate chip's are left as they are).
        public func toHost(_ m: IMUVector) -> IMUVector {
            switch self {
            case .lis3mdl: return m;
            case .lsm9ds1: return IMUConvert.lsm9ds1MagToAccelGyro(m)
            }
        }

        /// The inverse of `toHost` (the simulator's).
        public func fromHost(_ v: IMUVector) -> IMUVector {
            switch self {
            case .lis3mdl: return v;
            case .lsm9ds1: return IMUConvert.lsm9ds1AccelGyroToMag(v)
            }
        }
    }

    /// LIS3MDL registers (datasheet DocID024204 §7). A multi-byte read needs the register's
    /// MSB set (SUB(7) = 1) or the chip keeps returning the same register.
    public enum LIS3MDL {
        public static let whoAmI: UInt8 = 0x0F
        public static let whoAmIValue: UInt8 = 0x3D
        public static let ctrlReg1: UInt8 = 0x20
        public static let ctrlReg2: UInt8 = 0x21
        public static let ctrlReg3: UInt8 = 0x22
        public static let ctrlReg4: UInt8 = 0x23
        public static let ctrlReg5: UInt8 = 0x24
        public static let statusReg: UInt8 = 0x27
        public static let autoIncrement: UInt8 = 0x80
        public static let softReset: UInt8 = 0x04
        public static let zyxda: UInt8 = 0x08
        /// CTRL_REG1: ultra-high-performance X/Y (OM = 11), 80 Hz (DO = 111).
        public static let uhp80Hz: UInt8 = 0x7C
        /// CTRL_REG4: ultra-high-performance Z (OMZ = 11).
        public static let uhpZ: UInt8 = 0x0C
        public static let bdu: UInt8 = 0x40
        /// Its output rate as configured (uhp80Hz).
        public static let rateHz = 80.0
    }

    public static let lis3mdl = I2CChipIdentity(
        name: "LIS3MDL", kind: .magnetometer, addresses: [0x1C, 0x1E], idRegister: 0x0F, idValues: [0x3D],
        measures: [.magneticField])

    public let model: Model
    /// The chip's name as the drivers report it ("LIS3MDL", "LSM9DS1").
    public var name: String { model.name }
    public let address: UInt8
    /// The latest field read (µT, the magnetometer's own axes); nil before the first one.
    public private(set) var field: IMUVector?

    private let io: IMURegisterIO
    private let scale: Double
    /// Read every `every` samples on the register path (`read(into:)`).
    private let every: Int
    private var since: Int

    private init(model: Model, address: UInt8, io: IMURegisterIO, scale: Double, every: Int) {
        self.model = model
        self.address = address
        self.io = io
        self.scale = scale
        self.every = every
        since = every
    }

    /// Looks for a `model` die at `settings.magnetometerAddress` (nil: each of its addresses, the
    /// LIS3MDL's 0x1C/0x1E) and configures the first that answers. None: nil with `[imu]
    /// magnetometer` auto, an error when the config names one. `imuRateHz` is the rate
    /// `read(into:)` will be called at.
    static func find(
        io: IMURegisterIO, settings: IMUDriverSettings, imuRateHz: Double, model: Model = .lis3mdl,
        sleep: (Double) -> Void
    ) throws -> SeparateMagnetometer? {
        guard settings.wantsMagnetometer else { return nil }
        let addrs = settings.magnetometerAddress.map { [$0] } ?? lis3mdl.addresses
        // Read it every sample up to 160 Hz (ZYXDA says when its 80 Hz data is new): a stale
        // field behind a turning gyro skews the heading.
        let every = max(1, Int((imuRateHz / (2 * LIS3MDL.rateHz)).rounded(.down)))
        for a in addrs {
            guard let v = try? io.read(LIS3MDL.whoAmI, at: a), v == LIS3MDL.whoAmIValue else { continue }
            try configureLIS3MDL(io: io, at: a, range: settings.magnetometerRange, sleep: sleep)
            return SeparateMagnetometer(model: model, address: a, io: io, scale: model.scale(settings.magnetometerRange), every: every)
        }
        if IMUDrivers.normalise(settings.magnetometer) != "AUTO" {
            try settings.magnetometerMissing(
                model.name, bus: io.bus, address: settings.magnetometerAddress,
                I2CError(
                    .noAcknowledge, bus: io.bus.number, address: nil,
                    operation: "nothing answered with WHO_AM_I 0x3D at " + addrs.map(IMUDrivers.hex).joined(separator: "/")))
        }
        return nil
    }

    private static func configureLIS3MDL(io: IMURegisterIO, at a: UInt8, range: LIS3MDLRange, sleep: (Double) -> Void) throws {
        try io.write(LIS3MDL.ctrlReg2, LIS3MDL.softReset, at: a)
        sleep(0.01)
        try io.write(LIS3MDL.ctrlReg1, LIS3MDL.uhp80Hz, at: a)
        try io.write(LIS3MDL.ctrlReg2, range.code << 5, at: a)
        try io.write(LIS3MDL.ctrlReg4, LIS3MDL.uhpZ, at: a)
        try io.write(LIS3MDL.ctrlReg5, LIS3MDL.bdu, at: a)
        try io.write(LIS3MDL.ctrlReg3, 0x00, at: a)  // continuous conversion
    }

    /// STATUS_REG and the six data bytes (little-endian) in one burst; true when ZYXDA said the
    /// field was new (then `field` holds it).
    func read() throws -> Bool {
        let m = try io.burst(LIS3MDL.statusReg | LIS3MDL.autoIncrement, 7, at: address)
        guard m[0] & LIS3MDL.zyxda != 0 else { return false }
        field = model.toHost(
            IMUConvert.scaled(IMUConvert.vector(UnsafeRawBufferPointer(rebasing: m[1..<7]), at: 0, bigEndian: false), scale))
        return true
    }

    /// The register path: reads it when its turn comes (every `every` samples), puts the latest
    /// field on `sample` and marks it new when it was.
    func read(into sample: inout IMUSample) throws {
        since += 1
        if since >= every {
            since = 0
            if try read() { sample.magIsNew = true }
        }
        sample.mag = field
    }

    /// A FIFO burst: one read, onto its samples (`attachMagnetometer`).
    func read(onto samples: inout [IMUSample]) throws {
        guard !samples.isEmpty else { return }
        let firstEver = field == nil
        let new = try read()
        attachMagnetometer(field, new: new, firstEver: firstEver, to: &samples)
    }
}
