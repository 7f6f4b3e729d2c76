import OSHCore

/// TDK InvenSense ICM-20948: four register banks (REG_BANK_SEL 0x7F, bits 5:4) and an
/// AK09916 magnetometer on the chip's auxiliary bus.
///
/// The AK09916 is read through the chip's **own I²C master**: I2C_SLV4 does the one-off
/// transactions (ID check, reset, mode), then I2C_SLV0 copies its 9 bytes ST1…ST2 into
/// EXT_SLV_SENS_DATA_00 at every sample, so one 23-byte burst from ACCEL_XOUT_H returns accel,
/// gyro, temperature and magnetometer together (and reading ST2 each time releases the
/// AK09916's data). Chosen over bypass because it is one transaction per sample and the
/// magnetometer sample is taken in step with the accel/gyro one.
public final class ICM20948Driver: IMUDriver {
    /// Registers (ICM-20948 datasheet DS-000189 rev 1.3 §7–8); banks in the comments.
    public enum Reg {
        public static let bankSel: UInt8 = 0x7F
        // bank 0
        public static let whoAmI: UInt8 = 0x00
        public static let userCtrl: UInt8 = 0x03
        public static let pwrMgmt1: UInt8 = 0x06
        public static let pwrMgmt2: UInt8 = 0x07
        public static let intPinCfg: UInt8 = 0x0F
        public static let intEnable1: UInt8 = 0x11
        public static let i2cMstStatus: UInt8 = 0x17
        public static let intStatus1: UInt8 = 0x1A
        public static let accelXoutH: UInt8 = 0x2D
        public static let extSlvSensData00: UInt8 = 0x3B
        /// FIFO (DS-000189 §8, bank 0): FIFO_EN_2, FIFO_RST, FIFO_MODE, FIFO_COUNTH/L, FIFO_R_W.
        public static let fifoEn2: UInt8 = 0x67
        public static let fifoRst: UInt8 = 0x68
        public static let fifoMode: UInt8 = 0x69
        public static let fifoCountH: UInt8 = 0x70
        public static let fifoRW: UInt8 = 0x72
        /// FIFO_EN_2: ACCEL_FIFO_EN | GYRO_Z/Y/X_FIFO_EN (TEMP_FIFO_EN 0x01 left off).
        public static let fifoAccelGyro: UInt8 = 0x1E
        /// USER_CTRL.FIFO_EN.
        public static let fifoEnable: UInt8 = 0x40
        /// FIFO_MODE = 1: snapshot, a full FIFO takes no more samples.
        public static let fifoSnapshot: UInt8 = 0x01
        // bank 2
        public static let gyroSmplrtDiv: UInt8 = 0x00
        public static let gyroConfig1: UInt8 = 0x01
        public static let odrAlignEn: UInt8 = 0x09
        public static let accelSmplrtDiv1: UInt8 = 0x10
        public static let accelSmplrtDiv2: UInt8 = 0x11
        public static let accelConfig: UInt8 = 0x14
        // bank 3
        public static let i2cMstCtrl: UInt8 = 0x01
        public static let i2cSlv0Addr: UInt8 = 0x03
        public static let i2cSlv0Reg: UInt8 = 0x04
        public static let i2cSlv0Ctrl: UInt8 = 0x05
        public static let i2cSlv4Addr: UInt8 = 0x13
        public static let i2cSlv4Reg: UInt8 = 0x14
        public static let i2cSlv4Ctrl: UInt8 = 0x15
        public static let i2cSlv4DO: UInt8 = 0x16
        public static let i2cSlv4DI: UInt8 = 0x17
        // bits
        public static let deviceReset: UInt8 = 0x80
        public static let i2cMstEn: UInt8 = 0x20
        public static let slvEnable: UInt8 = 0x80
        public static let slvRead: UInt8 = 0x80
        public static let slv4Done: UInt8 = 0x40
        public static let slv4Nack: UInt8 = 0x10
        public static let rawDataReady: UInt8 = 0x01
    }

    /// AK09916 registers (AK09916 datasheet §9).
    public enum AK09916 {
        public static let address: UInt8 = 0x0C
        public static let wia2: UInt8 = 0x01
        public static let wia2Value: UInt8 = 0x09
        public static let st1: UInt8 = 0x10
        public static let cntl2: UInt8 = 0x31
        public static let cntl3: UInt8 = 0x32
        public static let continuous100Hz: UInt8 = 0x08
        public static let softReset: UInt8 = 0x01
        public static let drdy: UInt8 = 0x01
        public static let overflow: UInt8 = 0x08
    }

    public static let icm20948 = I2CChipIdentity(
        name: "ICM20948", kind: .imu, addresses: [0x69, 0x68], idRegister: 0x00, idValues: [0xEA],
        note: "9-axis: AK09916 magnetometer read through the chip's own I²C master",
        measures: [.acceleration, .rotation, .magneticField, .temperature], builtInMagnetometer: "AK09916")
    /// Inside the package, on the chip's auxiliary bus: never on the Pi's bus (probe does not look for it).
    public static let ak09916 = I2CChipIdentity(
        name: "AK09916", kind: .magnetometer, addresses: [AK09916.address], idRegister: 0x01, idValues: [AK09916.wia2Value],
        note: "inside the ICM-20948, read through its auxiliary I²C master", measures: [.magneticField])

    /// The driver table's entry. Its ID read first returns the chip to register bank 0: the
    /// ICM-20948 keeps its bank across a restart of the agent.
    public static let chip = IMUChip(identity: icm20948, readID: { bus, address in try readID(bus: bus, address: address) }) {
        ICM20948Driver(bus: $0, address: $1, whoAmI: $2, settings: $3, sleep: $4)
    }

    /// WHO_AM_I in bank 0; when another bank is selected it reads something else, so a
    /// REG_BANK_SEL that holds only bank bits is reset to bank 0 and the ID read again.
    static func readID(bus: I2CBus, address: UInt8) throws -> UInt8 {
        let v = try bus.readRegister(address, icm20948.idRegister ?? 0)
        if !icm20948.matches(id: v) {
            let bank = try bus.readRegister(address, Reg.bankSel)
            if bank != 0, bank & ~0x30 == 0 {
                try bus.writeRegister(address, Reg.bankSel, 0)
                return try bus.readRegister(address, icm20948.idRegister ?? 0)
            }
        }
        return v
    }

    public let identity = ICM20948Driver.icm20948
    public let address: UInt8
    public var bus: I2CBus { io.bus }
    public let whoAmI: UInt8
    public private(set) var settings: IMUDriverSettings
    public private(set) var magnetometerName: String?
    public let appliesMountingOnChip = false

    private let io: IMURegisterIO
    private let sleep: (Double) -> Void
    private var bank: UInt8? = nil
    private var accelScale = 0.0
    private var gyroScale = 0.0
    private var lastMag: IMUVector?
    public private(set) var fifo: IMUFifoLayout?

    init(bus: I2CBus, address: UInt8, whoAmI: UInt8, settings: IMUDriverSettings, sleep: @escaping (Double) -> Void) {
        self.address = address
        self.whoAmI = whoAmI
        self.settings = settings
        self.sleep = sleep
        io = IMURegisterIO(bus: bus, address: address, chip: "ICM20948", capacity: IMUFifoLayout.maxTransferBytes)
    }

    /// DLPF 3 dB bandwidths (Hz) for GYRO_DLPFCFG and ACCEL_DLPFCFG (FCHOICE = 1).
    static let gyroDLPF: [(code: UInt8, hz: Double)] = [(0, 196.6), (1, 151.8), (2, 119.5), (3, 51.2), (4, 23.9), (5, 11.6), (6, 5.7)]
    static let accelDLPF: [(code: UInt8, hz: Double)] = [(1, 246), (2, 111.4), (3, 50.4), (4, 23.9), (5, 11.5), (6, 5.7)]

    /// Selects `b` (0…3) unless it is already selected: a bank write per register would
    /// double the bus traffic.
    private func select(_ b: UInt8) throws {
        guard bank != b else { return }
        bank = nil  // unknown if the write fails
        try io.write(Reg.bankSel, b << 4)
        bank = b
    }

    private func write(_ b: UInt8, _ reg: UInt8, _ value: UInt8) throws {
        try select(b)
        try io.write(reg, value)
    }

    public func reopen() throws {
        bank = nil
        try select(0)
        let id = try io.read(Reg.whoAmI)
        guard identity.matches(id: id) else { throw io.unexpected("WHO_AM_I reads \(IMUDrivers.hex(id)), expected 0xEA") }
        try io.write(Reg.pwrMgmt1, Reg.deviceReset)
        sleep(0.1)
        bank = nil  // the reset put the chip back in bank 0; say so once more to be sure
        try write(0, Reg.pwrMgmt1, 0x01)  // awake, best available clock
        try write(0, Reg.pwrMgmt2, 0x00)  // accel and gyro on
        sleep(0.01)
        // Gyro ODR = 1100 / (1 + div); accel ODR = 1125 / (1 + div).
        let rate = min(1100, max(4.4, settings.rateHz))
        let gdiv = UInt8(max(0, min(255, (1100 / rate).rounded() - 1)))
        let adiv = UInt16(max(0, min(4095, (1125 / rate).rounded() - 1)))
        let actual = 1100 / (Double(gdiv) + 1)
        try write(2, Reg.gyroSmplrtDiv, gdiv)
        try write(2, Reg.gyroConfig1, lowPassCode(for: actual, Self.gyroDLPF) << 3 | settings.gyroRange.code << 1 | 1)
        try write(2, Reg.accelSmplrtDiv1, UInt8(adiv >> 8))
        try write(2, Reg.accelSmplrtDiv2, UInt8(adiv & 0xFF))
        try write(2, Reg.accelConfig, lowPassCode(for: actual, Self.accelDLPF) << 3 | settings.accelRange.invensenseCode << 1 | 1)
        try write(2, Reg.odrAlignEn, 0x01)
        accelScale = IMUConvert.invensenseAccelScale(settings.accelRange)
        gyroScale = IMUConvert.invensenseGyroScale(settings.gyroRange)
        magnetometerName = nil
        lastMag = nil
        if settings.wantsMagnetometer {
            try write(0, Reg.intPinCfg, 0x00)  // no bypass: the master owns the aux bus
            try write(0, Reg.userCtrl, Reg.i2cMstEn)
            try write(3, Reg.i2cMstCtrl, 0x07)  // 345.6 kHz on the aux bus
            let wia: UInt8
            do { wia = try slv4Read(AK09916.wia2) } catch let e as I2CError where e.isAbsent {
                try settings.magnetometerMissing("AK09916", bus: bus, address: address, e)
                try write(0, Reg.userCtrl, 0x00)
                try write(0, Reg.intEnable1, Reg.rawDataReady)
                try select(0)
                return
            }
            guard wia == AK09916.wia2Value else { throw io.unexpected("AK09916 WIA2 reads \(IMUDrivers.hex(wia)), expected 0x09") }
            try slv4Write(AK09916.cntl3, AK09916.softReset)
            sleep(0.001)
            try slv4Write(AK09916.cntl2, AK09916.continuous100Hz)
            // SLV0: read ST1…ST2 (9 bytes) into EXT_SLV_SENS_DATA_00 every sample.
            try write(3, Reg.i2cSlv0Addr, Reg.slvRead | AK09916.address)
            try write(3, Reg.i2cSlv0Reg, AK09916.st1)
            try write(3, Reg.i2cSlv0Ctrl, Reg.slvEnable | 9)
            magnetometerName = "AK09916"
        }
        try write(0, Reg.intEnable1, Reg.rawDataReady)
        fifo = nil
        if settings.fifo {
            // 512 bytes; the gyro divider paces it (ODR_ALIGN_EN keeps the accel in step).
            fifo = IMUFifoLayout(capacityBytes: 512, frameBytes: 12, rateHz: actual)
            try write(0, Reg.fifoMode, Reg.fifoSnapshot)
            try write(0, Reg.fifoEn2, Reg.fifoAccelGyro)
            try write(0, Reg.userCtrl, (magnetometerName == nil ? 0 : Reg.i2cMstEn) | Reg.fifoEnable)
            try resetFIFO()
        }
        try select(0)
        sleep(0.01)
    }

    /// FIFO_RST asserted (one bit per FIFO) then released: empty, frame-aligned.
    private func resetFIFO() throws {
        try write(0, Reg.fifoRst, 0x1F)
        try write(0, Reg.fifoRst, 0x00)
    }

    public func readFIFO(into samples: inout [IMUSample]) throws -> IMUFifoRead {
        samples.removeAll(keepingCapacity: true)
        guard let layout = fifo else { throw io.noFIFO() }
        try select(0)
        let r = try io.readInvensenseFIFO(
            layout, count: Reg.fifoCountH, data: Reg.fifoRW, accelScale: accelScale,
            gyroScale: gyroScale, reset: resetFIFO, into: &samples)
        if magnetometerName != nil, !samples.isEmpty {
            // The master's latest copy of ST1…ST2, once per burst, onto the newest sample.
            let m = try io.burst(Reg.extSlvSensData00, 9)
            let firstEver = lastMag == nil
            var new = false
            if m[0] & AK09916.drdy != 0, m[8] & AK09916.overflow == 0 {
                let v = IMUConvert.vector(UnsafeRawBufferPointer(rebasing: m[1..<7]), at: 0, bigEndian: false)
                lastMag = IMUConvert.ak09916ToICM20948(IMUConvert.scaled(v, IMUConvert.ak09916MicroteslaPerCount))
                new = true
            }
            attachMagnetometer(lastMag, new: new, firstEver: firstEver, to: &samples)
        }
        return r
    }

    /// One transaction on the aux bus through I2C_SLV4, waiting for SLV4_DONE.
    private func slv4(_ addr: UInt8, _ reg: UInt8, _ out: UInt8?) throws {
        try write(3, Reg.i2cSlv4Addr, addr)
        try write(3, Reg.i2cSlv4Reg, reg)
        if let v = out { try write(3, Reg.i2cSlv4DO, v) }
        try write(3, Reg.i2cSlv4Ctrl, Reg.slvEnable)
        try select(0)
        for _ in 0..<50 {
            let s = try io.read(Reg.i2cMstStatus)
            if s & Reg.slv4Nack != 0 {
                throw I2CError(
                    .noAcknowledge, bus: bus.number, address: address,
                    operation: "ICM20948: the AK09916 magnetometer did not answer on the auxiliary bus (register \(IMUDrivers.hex(reg)))")
            }
            if s & Reg.slv4Done != 0 { return }
            sleep(0.001)
        }
        throw io.unexpected("the auxiliary I²C master never finished a transaction to the AK09916 (I2C_MST_STATUS)")
    }

    private func slv4Write(_ reg: UInt8, _ value: UInt8) throws { try slv4(AK09916.address, reg, value) }

    private func slv4Read(_ reg: UInt8) throws -> UInt8 {
        try slv4(Reg.slvRead | AK09916.address, reg, nil)
        try select(3)
        let v = try io.read(Reg.i2cSlv4DI)
        try select(0)
        return v
    }

    public func read(into sample: inout IMUSample) throws -> Bool {
        try select(0)
        let ready = try io.read(Reg.intStatus1) & Reg.rawDataReady != 0
        let n = magnetometerName == nil ? 14 : 23
        let p = try io.burst(Reg.accelXoutH, n)
        sample.accel = IMUConvert.scaled(IMUConvert.vector(p, at: 0, bigEndian: true), accelScale)
        sample.gyro = IMUConvert.scaled(IMUConvert.vector(p, at: 6, bigEndian: true), gyroScale)
        sample.temperature = IMUConvert.invensenseTemperature(IMUConvert.int16BE(p, 12))
        sample.magIsNew = false
        if magnetometerName != nil {
            // EXT_SLV_SENS_DATA: ST1, HXL…HZH (little-endian), TMPS, ST2. The master refreshes
            // it once per sample, so without a new sample it still holds the last (DRDY) copy.
            if ready, p[14] & AK09916.drdy != 0, p[22] & AK09916.overflow == 0 {
                let m = IMUConvert.vector(UnsafeRawBufferPointer(rebasing: p[15..<21]), at: 0, bigEndian: false)
                lastMag = IMUConvert.ak09916ToICM20948(IMUConvert.scaled(m, IMUConvert.ak09916MicroteslaPerCount))
                sample.magIsNew = true
            }
            sample.mag = lastMag
        }
        return ready
    }
}
