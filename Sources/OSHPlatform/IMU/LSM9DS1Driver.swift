import OSHCore

/// ST LSM9DS1, the Raspberry Pi Sense HAT's IMU: an accelerometer/gyroscope at 0x6A/0x6B and,
/// in the same package but at its own address (0x1C/0x1E), a magnetometer die with the LIS3MDL's
/// register map, which `SeparateMagnetometer` (model `.lsm9ds1`) finds and reads.
public final class LSM9DS1Driver: IMUDriver {
    /// Accelerometer/gyroscope registers (datasheet DocID025715 Rev 3, register mapping table).
    public enum Reg {
        public static let whoAmI: UInt8 = 0x0F
        public static let whoAmIValue: UInt8 = 0x68
        /// ODR_G 7:5, FS_G 4:3, BW_G 1:0.
        public static let ctrlReg1G: UInt8 = 0x10
        public static let outTempL: UInt8 = 0x15
        public static let statusReg: UInt8 = 0x17
        public static let outXLG: UInt8 = 0x18
        /// ODR_XL 7:5, FS_XL 4:3, BW_SCAL_ODR 2 (1: BW_XL sets the anti-aliasing filter), BW_XL 1:0.
        public static let ctrlReg6XL: UInt8 = 0x20
        public static let bwScalODR: UInt8 = 0x04
        public static let ctrlReg8: UInt8 = 0x22
        public static let ctrlReg9: UInt8 = 0x23
        public static let outXLXL: UInt8 = 0x28
        public static let fifoCtrl: UInt8 = 0x2E
        public static let fifoSrc: UInt8 = 0x2F
        /// CTRL_REG8 bits (IF_ADD_INC is set after reset).
        public static let boot: UInt8 = 0x80
        public static let bdu: UInt8 = 0x40
        public static let ifAddInc: UInt8 = 0x04
        public static let swReset: UInt8 = 0x01
        /// CTRL_REG9.FIFO_EN.
        public static let fifoEnable: UInt8 = 0x02
        /// STATUS_REG bits.
        public static let xlda: UInt8 = 0x01
        public static let gda: UInt8 = 0x02
        /// FIFO_CTRL.FMODE (7:5): bypass (which also empties it), continuous (a full FIFO drops its oldest sample).
        public static let fifoBypass: UInt8 = 0x00
        public static let fifoContinuous: UInt8 = 0x06 << 5
        /// FIFO_SRC: OVRN (a sample was overwritten), FSS 5:0 (unread samples, 32 = full).
        public static let fifoOverrun: UInt8 = 0x40
        public static let fifoUnread: UInt8 = 0x3F
        /// 32 slots; with both sensors on, a slot is the gyro's 6 bytes then the accel's 6.
        public static let fifoDepth = 32
        public static let fifoSlotBytes = 12
    }

    public static let lsm9ds1 = I2CChipIdentity(
        name: "LSM9DS1", kind: .imu, addresses: [0x6A, 0x6B], idRegister: 0x0F, idValues: [0x68],
        note: "9-axis (the Raspberry Pi Sense HAT's, at 0x6A): its magnetometer sits at its own address, 0x1C/0x1E "
            + "(0x1C on the Sense HAT), and answers WHO_AM_I 0x3D as a LIS3MDL does, so probe lists it under that name",
        measures: [.acceleration, .rotation, .magneticField, .temperature], builtInMagnetometer: "LSM9DS1")

    /// The driver table's entry.
    public static let chip = IMUChip(identity: lsm9ds1) {
        LSM9DS1Driver(bus: $0, address: $1, whoAmI: $2, settings: $3, sleep: $4)
    }

    public let identity = LSM9DS1Driver.lsm9ds1
    public let address: UInt8
    public var bus: I2CBus { io.bus }
    public let whoAmI: UInt8
    public private(set) var settings: IMUDriverSettings
    public var magnetometerName: String? { magnetometer?.name }
    public var magnetometerAddress: UInt8? { magnetometer?.address }
    public let appliesMountingOnChip = false
    /// The output rate configured (Hz): gyro and accelerometer share it.
    public private(set) var rateHz = 0.0
    public private(set) var fifo: IMUFifoLayout?

    private let io: IMURegisterIO
    private let sleep: (Double) -> Void
    private var accelScale = 0.0
    private var gyroScale = 0.0
    private var magnetometer: SeparateMagnetometer?
    /// The first sample after the FIFO (re)starts is to be discarded (the datasheets of this
    /// accel/gyro, e.g. the LSM6DS0's §3.5, ask it on switching into and out of FIFO mode).
    private var discardFirst = false

    init(bus: I2CBus, address: UInt8, whoAmI: UInt8, settings: IMUDriverSettings, sleep: @escaping (Double) -> Void) {
        self.address = address
        self.whoAmI = whoAmI
        self.settings = settings
        self.sleep = sleep
        io = IMURegisterIO(bus: bus, address: address, chip: "LSM9DS1", capacity: IMUFifoLayout.maxTransferBytes)
    }

    /// ODR_G codes with the gyro on; the accelerometer then runs at the gyro's rate.
    public static let odr: [(code: UInt8, hz: Double)] = [(1, 14.9), (2, 59.5), (3, 119), (4, 238), (5, 476), (6, 952)]

    /// BW_XL anti-aliasing bandwidths (Hz) with BW_SCAL_ODR set.
    public static let accelBandwidth: [(code: UInt8, hz: Double)] = [(0, 408), (1, 211), (2, 105), (3, 50)]

    /// The lowest ODR at or above `rate` (the chip then never runs slower than we read).
    static func odrCode(for rate: Double) -> UInt8 {
        odr.first { $0.hz >= rate * 0.99 }?.code ?? 6
    }

    public func reopen() throws {
        let id = try io.read(Reg.whoAmI)
        guard identity.matches(id: id) else {
            throw io.unexpected("WHO_AM_I (0x0F) reads \(IMUDrivers.hex(id)), expected 0x68; another chip took this address")
        }
        try io.write(Reg.ctrlReg8, Reg.swReset | Reg.ifAddInc)
        sleep(0.01)
        // SW_RESET clears itself when the registers are back at their defaults.
        if try io.read(Reg.ctrlReg8) & Reg.swReset != 0 {
            sleep(0.05)
            guard try io.read(Reg.ctrlReg8) & Reg.swReset == 0 else {
                throw io.unexpected("software reset did not complete (CTRL_REG8.SW_RESET still set after 60 ms); power-cycle the board")
            }
        }
        try io.write(Reg.ctrlReg8, Reg.bdu | Reg.ifAddInc)
        let code = Self.odrCode(for: settings.rateHz)
        rateHz = Self.odr.first { $0.code == code }?.hz ?? settings.rateHz
        // The gyro's LPF1 follows its ODR (BW_G tunes only LPF2, left out of the output path);
        // the accelerometer's anti-aliasing filter is chosen as the other drivers' low-pass is:
        // the widest not above half the rate (BW_XL, which counts with BW_SCAL_ODR set).
        try io.write(Reg.ctrlReg1G, code << 5 | settings.gyroRange.lsm9ds1Code << 3)
        try io.write(
            Reg.ctrlReg6XL,
            code << 5 | settings.accelRange.lsm9ds1Code << 3 | Reg.bwScalODR
                | lowPassCode(for: rateHz, Self.accelBandwidth))
        accelScale = IMUConvert.lsm9ds1AccelScale(settings.accelRange)
        gyroScale = IMUConvert.lsm9ds1GyroScale(settings.gyroRange)
        fifo = nil
        if settings.fifo {
            fifo = IMUFifoLayout(capacityBytes: Reg.fifoDepth * Reg.fifoSlotBytes, frameBytes: Reg.fifoSlotBytes, rateHz: rateHz)
            try io.write(Reg.ctrlReg9, Reg.fifoEnable)
            try resetFIFO()
        }
        magnetometer = nil
        magnetometer = try SeparateMagnetometer.find(io: io, settings: settings, imuRateHz: rateHz, model: .lsm9ds1, sleep: sleep)
    }

    /// Bypass empties the FIFO; continuous starts it again.
    private func resetFIFO() throws {
        try io.write(Reg.fifoCtrl, Reg.fifoBypass)
        try io.write(Reg.fifoCtrl, Reg.fifoContinuous)
        discardFirst = true
    }

    public func readFIFO(into samples: inout [IMUSample]) throws -> IMUFifoRead {
        samples.removeAll(keepingCapacity: true)
        guard let layout = fifo else { throw io.noFIFO() }
        let src = try io.read(Reg.fifoSrc)
        let unread = Int(src & Reg.fifoUnread)
        if src & Reg.fifoOverrun != 0 {
            // Continuous mode overwrote its oldest sample: the gap is unknown, so start clean.
            try resetFIFO()
            return IMUFifoRead(overflowed: true, lost: unread + 1)
        }
        guard unread > 0 else { return IMUFifoRead() }
        var s = IMUSample()
        let a = accelScale, g = gyroScale
        var skip = discardFirst
        // From OUT_X_L_G with both sensors on, a multiple read runs through the gyro's six bytes
        // and the accel's six, then starts at 18h again (the datasheet's multiple reads, burst):
        // each 12 bytes are one slot, oldest first.
        try io.drain(Reg.outXLG, frames: unread, frameBytes: Reg.fifoSlotBytes, perTransfer: layout.framesPerTransfer) { p, at in
            if skip { skip = false; return }
            s.gyro = IMUConvert.scaled(IMUConvert.vector(p, at: at, bigEndian: false), g)
            s.accel = IMUConvert.scaled(IMUConvert.vector(p, at: at + 6, bigEndian: false), a)
            samples.append(s)
        }
        discardFirst = false
        try magnetometer?.read(onto: &samples)
        return IMUFifoRead()
    }

    public func read(into sample: inout IMUSample) throws -> Bool {
        // OUT_TEMP, STATUS_REG and the gyro in one burst, the accelerometer in a second: two
        // reads of plain consecutive registers, whatever the rollover does.
        let p = try io.burst(Reg.outTempL, 9)
        let ready = p[2] & (Reg.xlda | Reg.gda) != 0
        sample.temperature = IMUConvert.lsm9ds1Temperature(IMUConvert.int16LE(p, 0))
        sample.gyro = IMUConvert.scaled(IMUConvert.vector(p, at: 3, bigEndian: false), gyroScale)
        let x = try io.burst(Reg.outXLXL, 6)
        sample.accel = IMUConvert.scaled(IMUConvert.vector(x, at: 0, bigEndian: false), accelScale)
        sample.magIsNew = false
        try magnetometer?.read(into: &sample)
        return ready
    }
}
