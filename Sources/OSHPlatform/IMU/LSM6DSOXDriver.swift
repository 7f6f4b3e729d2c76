import OSHCore

/// ST LSM6DSOX accelerometer/gyroscope, with an optional separate LIS3MDL magnetometer on the
/// same bus (the Adafruit/Pololu pairing; `SeparateMagnetometer` finds and reads it).
public final class LSM6DSOXDriver: IMUDriver {
    /// LSM6DSOX registers (datasheet DS12814 §8–9).
    public enum Reg {
        public static let whoAmI: UInt8 = 0x0F
        public static let ctrl1XL: UInt8 = 0x10
        public static let ctrl2G: UInt8 = 0x11
        public static let ctrl3C: UInt8 = 0x12
        public static let statusReg: UInt8 = 0x1E
        public static let outTempL: UInt8 = 0x20
        /// CTRL3_C bits.
        public static let swReset: UInt8 = 0x01
        public static let ifInc: UInt8 = 0x04
        public static let bdu: UInt8 = 0x40
        /// STATUS_REG bits.
        public static let xlda: UInt8 = 0x01
        public static let gda: UInt8 = 0x02
        /// FIFO (DS12814 §9): FIFO_CTRL3 (BDR_GY 7:4, BDR_XL 3:0, codes as the ODR's),
        /// FIFO_CTRL4 (FIFO_MODE 2:0), FIFO_STATUS1/2 (DIFF_FIFO 9:0 in words, FIFO_OVR_IA
        /// bit 6 of STATUS2), FIFO_DATA_OUT_TAG then six data bytes, read repeatedly from 78h.
        public static let fifoCtrl3: UInt8 = 0x09
        public static let fifoCtrl4: UInt8 = 0x0A
        public static let fifoStatus1: UInt8 = 0x3A
        public static let fifoDataOutTag: UInt8 = 0x78
        public static let fifoBypass: UInt8 = 0x00
        /// Continuous: a full FIFO drops its oldest word (whole words, tags keep them apart).
        public static let fifoContinuous: UInt8 = 0x06
        public static let fifoOverrun: UInt8 = 0x40
        /// Bytes per FIFO word (tag + 6 data).
        public static let fifoWordBytes = 7
    }

    public static let lsm6dsox = I2CChipIdentity(
        name: "LSM6DSOX", kind: .imu, addresses: [0x6A, 0x6B], idRegister: 0x0F, idValues: [0x6C],
        note: "6-axis; pair it with a LIS3MDL magnetometer (0x1C/0x1E) for heading",
        measures: [.acceleration, .rotation, .temperature])

    /// The driver table's entry.
    public static let chip = IMUChip(identity: lsm6dsox) {
        LSM6DSOXDriver(bus: $0, address: $1, whoAmI: $2, settings: $3, sleep: $4)
    }

    public let identity = LSM6DSOXDriver.lsm6dsox
    public let address: UInt8
    public var bus: I2CBus { io.bus }
    public let whoAmI: UInt8
    public private(set) var settings: IMUDriverSettings
    public var magnetometerName: String? { magnetometer?.name }
    public var magnetometerAddress: UInt8? { magnetometer?.address }
    public let appliesMountingOnChip = false

    private let io: IMURegisterIO
    private let sleep: (Double) -> Void
    private var accelScale = 0.0
    private var gyroScale = 0.0
    private var magnetometer: SeparateMagnetometer?
    public private(set) var fifo: IMUFifoLayout?
    private var pairing = STFifoPairing()

    init(bus: I2CBus, address: UInt8, whoAmI: UInt8, settings: IMUDriverSettings, sleep: @escaping (Double) -> Void) {
        self.address = address
        self.whoAmI = whoAmI
        self.settings = settings
        self.sleep = sleep
        io = IMURegisterIO(bus: bus, address: address, chip: "LSM6DSOX", capacity: IMUFifoLayout.maxTransferBytes)
    }

    /// ODR codes (CTRL1_XL/CTRL2_G bits 7:4), high-performance mode.
    public static let odr: [(code: UInt8, hz: Double)] = [(1, 12.5), (2, 26), (3, 52), (4, 104), (5, 208), (6, 416), (7, 833), (8, 1666)]

    /// The lowest ODR at or above `rate` (the chip then never runs slower than we read).
    static func odrCode(for rate: Double) -> UInt8 {
        odr.first { $0.hz >= rate * 0.99 }?.code ?? 8
    }

    public func reopen() throws {
        let id = try io.read(Reg.whoAmI)
        guard identity.matches(id: id) else { throw io.unexpected("WHO_AM_I reads \(IMUDrivers.hex(id)), expected 0x6C") }
        try io.write(Reg.ctrl3C, Reg.swReset)
        sleep(0.01)
        try io.write(Reg.ctrl3C, Reg.bdu | Reg.ifInc)
        let code = Self.odrCode(for: settings.rateHz)
        try io.write(Reg.ctrl1XL, code << 4 | settings.accelRange.lsm6dsoxCode << 2)
        try io.write(Reg.ctrl2G, code << 4 | settings.gyroRange.code << 2)
        accelScale = IMUConvert.lsm6dsoxAccelScale(settings.accelRange)
        gyroScale = IMUConvert.lsm6dsoxGyroScale(settings.gyroRange)
        let actual = Self.odr.first { $0.code == code }?.hz ?? settings.rateHz
        fifo = nil
        if settings.fifo {
            // "Up to 9 kbytes" (DS12814 §6.5); a sample is a gyro word and an accel word.
            fifo = IMUFifoLayout(capacityBytes: 9 * 1024, frameBytes: 2 * Reg.fifoWordBytes, rateHz: actual)
            try io.write(Reg.fifoCtrl3, code << 4 | code)
            try resetFIFO()
        }
        magnetometer = nil
        magnetometer = try SeparateMagnetometer.find(io: io, settings: settings, imuRateHz: actual, sleep: sleep)
    }

    /// Bypass empties the FIFO; continuous starts it again.
    private func resetFIFO() throws {
        try io.write(Reg.fifoCtrl4, Reg.fifoBypass)
        try io.write(Reg.fifoCtrl4, Reg.fifoContinuous)
        pairing.reset()
    }

    public func readFIFO(into samples: inout [IMUSample]) throws -> IMUFifoRead {
        samples.removeAll(keepingCapacity: true)
        guard let layout = fifo else { throw io.noFIFO() }
        let st = try io.burst(Reg.fifoStatus1, 2)
        let words = Int(st[1] & 0x03) << 8 | Int(st[0])
        if st[1] & Reg.fifoOverrun != 0 {
            // Continuous mode lost its oldest words: start clean rather than pair across the gap.
            try resetFIFO()
            return IMUFifoRead(overflowed: true, lost: max(1, words / 2))
        }
        guard words > 0 else { return IMUFifoRead() }
        var s = IMUSample()
        let a = accelScale, g = gyroScale
        let perTransfer = layout.framesPerTransfer * 2
        try io.drain(Reg.fifoDataOutTag, frames: words, frameBytes: Reg.fifoWordBytes, perTransfer: perTransfer) { p, at in
            if pairing.take(p, at: at, accelScale: a, gyroScale: g, into: &s) { samples.append(s) }
        }
        try magnetometer?.read(onto: &samples)
        return IMUFifoRead()
    }

    public func read(into sample: inout IMUSample) throws -> Bool {
        // STATUS_REG, a reserved byte, then temperature, gyro, accel (little-endian): one burst.
        let p = try io.burst(Reg.statusReg, 16)
        let ready = p[0] & (Reg.xlda | Reg.gda) != 0
        sample.temperature = IMUConvert.lsm6dsoxTemperature(IMUConvert.int16LE(p, 2))
        sample.gyro = IMUConvert.scaled(IMUConvert.vector(p, at: 4, bigEndian: false), gyroScale)
        sample.accel = IMUConvert.scaled(IMUConvert.vector(p, at: 10, bigEndian: false), accelScale)
        sample.magIsNew = false
        try magnetometer?.read(into: &sample)
        return ready
    }
}
