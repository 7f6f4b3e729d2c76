import OSHCore

/// Bosch BNO055: accelerometer, gyroscope and magnetometer with on-chip fusion, run in NDOF
/// mode; the driver reads the raw vectors and the fused quaternion in one burst.
///
/// Raspberry Pi caveat: the BNO055 stretches SCL while it prepares data, and the Pi's
/// BCM2835-family I²C controller does not honour stretching in every bit phase — reads come
/// back with flipped bits or time out (ETIMEDOUT, reported as a bus fault and retried). The
/// workaround is a slow bus: `dtparam=i2c_arm_baudrate=10000` in /boot/firmware/config.txt
/// (at 10 kHz this driver's 32-byte burst takes ≈30 ms, so keep imu.rate ≤ 25 Hz), or the
/// bit-banged `dtoverlay=i2c-gpio` bus, which handles stretching.
///
/// The mounting map is programmed into AXIS_MAP_CONFIG/AXIS_MAP_SIGN, so the chip's fusion
/// (and its quaternion) runs in the device frame. The driver never pulses RST_SYS: a system
/// reset costs 650 ms of blocked bus, and switching to CONFIG mode resets what we configure.
public final class BNO055Driver: IMUDriver {
    /// Page 0 registers (BNO055 datasheet BST-BNO055-DS000 §4.3).
    public enum Reg {
        public static let chipID: UInt8 = 0x00
        public static let pageID: UInt8 = 0x07
        public static let accDataXLSB: UInt8 = 0x08
        public static let quaDataWLSB: UInt8 = 0x20
        public static let temp: UInt8 = 0x34
        public static let sysStatus: UInt8 = 0x39
        public static let unitSel: UInt8 = 0x3B
        public static let oprMode: UInt8 = 0x3D
        public static let pwrMode: UInt8 = 0x3E
        public static let axisMapConfig: UInt8 = 0x41
        public static let axisMapSign: UInt8 = 0x42
        public static let configMode: UInt8 = 0x00
        public static let ndofMode: UInt8 = 0x0C
        /// UNIT_SEL: m/s² (bit 0 = 0), rad/s (bit 1 = 1), degrees, °C, Android orientation (bit 7).
        public static let units: UInt8 = 0x82
        /// SYS_STATUS value while the fusion algorithm runs.
        public static let fusionRunning: UInt8 = 5
    }

    public static let bno055 = I2CChipIdentity(
        name: "BNO055", kind: .imu, addresses: [0x28, 0x29], idRegister: 0x00, idValues: [0xA0],
        note: "on-chip fusion; it stretches the I²C clock, which the Pi's hardware I²C mishandles "
            + "(corrupt bytes, timeouts): add dtparam=i2c_arm_baudrate=10000 to /boot/firmware/config.txt "
            + "(≈25 Hz reads at most) or use the i2c-gpio overlay",
        measures: [.acceleration, .rotation, .magneticField, .orientation, .temperature], builtInMagnetometer: "BNO055")

    /// The driver table's entry.
    public static let chip = IMUChip(identity: bno055) {
        BNO055Driver(bus: $0, address: $1, whoAmI: $2, settings: $3, sleep: $4)
    }

    public let identity = BNO055Driver.bno055
    public let address: UInt8
    public var bus: I2CBus { io.bus }
    public let whoAmI: UInt8
    public private(set) var settings: IMUDriverSettings
    public let magnetometerName: String? = "BNO055"
    public let appliesMountingOnChip = true

    private let io: IMURegisterIO
    private let sleep: (Double) -> Void

    init(bus: I2CBus, address: UInt8, whoAmI: UInt8, settings: IMUDriverSettings, sleep: @escaping (Double) -> Void) {
        self.address = address
        self.whoAmI = whoAmI
        self.settings = settings
        self.sleep = sleep
        io = IMURegisterIO(bus: bus, address: address, chip: "BNO055", capacity: 32)
    }

    /// AXIS_MAP_CONFIG: 2 bits per remapped axis (X in 1:0, Y in 3:2, Z in 5:4) naming the
    /// chip axis; AXIS_MAP_SIGN: bit 2 X, bit 1 Y, bit 0 Z set for a negative axis.
    public static func axisRegisters(_ m: AxisMap) -> (config: UInt8, sign: UInt8) {
        let config = UInt8(m.source.0) | UInt8(m.source.1) << 2 | UInt8(m.source.2) << 4
        let sign: UInt8 = (m.sign.0 < 0 ? 4 : 0) | (m.sign.1 < 0 ? 2 : 0) | (m.sign.2 < 0 ? 1 : 0)
        return (config, sign)
    }

    public func reopen() throws {
        try io.write(Reg.pageID, 0)
        let id = try io.read(Reg.chipID)
        guard identity.matches(id: id) else { throw io.unexpected("CHIP_ID reads \(IMUDrivers.hex(id)), expected 0xA0") }
        // Unit and axis registers are writable only in CONFIG mode (any → CONFIG takes 19 ms).
        try io.write(Reg.oprMode, Reg.configMode)
        sleep(0.025)
        try io.write(Reg.pwrMode, 0x00)  // normal
        try io.write(Reg.unitSel, Reg.units)
        let axes = Self.axisRegisters(settings.mounting)
        try io.write(Reg.axisMapConfig, axes.config)
        try io.write(Reg.axisMapSign, axes.sign)
        try io.write(Reg.oprMode, Reg.ndofMode)
        sleep(0.02)  // CONFIG → any mode: 7 ms
        let status = try io.read(Reg.sysStatus)
        if status == 1 {  // system error
            throw io.unexpected("SYS_STATUS reports a system error after entering NDOF mode")
        }
    }

    public func read(into sample: inout IMUSample) throws -> Bool {
        // Accel, mag, gyro, Euler, quaternion: 0x08…0x27, all little-endian. NDOF fuses at
        // 100 Hz and offers no per-sample data-ready bit: reads are timer-paced.
        let p = try io.burst(Reg.accDataXLSB, 32)
        sample.accel = IMUConvert.scaled(IMUConvert.vector(p, at: 0, bigEndian: false), IMUConvert.bno055AccelScale)
        sample.mag = IMUConvert.scaled(IMUConvert.vector(p, at: 6, bigEndian: false), IMUConvert.bno055MagScale)
        sample.magIsNew = true
        sample.gyro = IMUConvert.scaled(IMUConvert.vector(p, at: 12, bigEndian: false), IMUConvert.bno055GyroScale)
        sample.quaternion = IMUConvert.bno055Quaternion(p, at: 24)
        return true
    }
}
