import OSHCore

/// ST LSM6DSOX accelerometer/gyroscope, with an optional separate LIS3MDL magnetometer on the
/// same bus (the Adafruit/Pololu pairing). The LIS3MDL is its own chip with its own address;
/// its axes are the board's business — `IMUSettings.magnetometerMounting` aligns them when
/// the board does not place the two chips alike.
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
    }

    public static let lsm6dsox = I2CChipIdentity(
        name: "LSM6DSOX", kind: .imu, addresses: [0x6A, 0x6B], idRegister: 0x0F, idValues: [0x6C],
        note: "6-axis; pair it with a LIS3MDL magnetometer (0x1C/0x1E) for heading",
        measures: [.acceleration, .rotation, .temperature])
    public static let lis3mdl = I2CChipIdentity(
        name: "LIS3MDL", kind: .magnetometer, addresses: [0x1C, 0x1E], idRegister: 0x0F, idValues: [0x3D],
        measures: [.magneticField])

    /// The driver table's entry.
    public static let chip = IMUChip(identity: lsm6dsox) {
        LSM6DSOXDriver(bus: $0, address: $1, whoAmI: $2, settings: $3, sleep: $4)
    }

    public let identity = LSM6DSOXDriver.lsm6dsox
    public let address: UInt8
    public var bus: I2CBus { io.bus }
    public let whoAmI: UInt8
    public private(set) var settings: IMUDriverSettings
    public private(set) var magnetometerName: String?
    public private(set) var magnetometerAddress: UInt8?
    public let appliesMountingOnChip = false

    private let io: IMURegisterIO
    private let sleep: (Double) -> Void
    private var accelScale = 0.0
    private var gyroScale = 0.0
    private var magScale = 0.0
    private var lastMag: IMUVector?
    private var magEvery = 1
    private var sinceMag = 0
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
        fifo = nil
        if settings.fifo {
            // "Up to 9 kbytes" (DS12814 §6.5); a sample is a gyro word and an accel word.
            let rate = Self.odr.first { $0.code == code }?.hz ?? settings.rateHz
            fifo = IMUFifoLayout(capacityBytes: 9 * 1024, frameBytes: 2 * Reg.fifoWordBytes, rateHz: rate)
            try io.write(Reg.fifoCtrl3, code << 4 | code)
            try resetFIFO()
        }
        magnetometerName = nil
        magnetometerAddress = nil
        lastMag = nil
        let wanted = IMUDrivers.normalise(settings.magnetometer)
        if settings.wantsMagnetometer {
            let addrs = settings.magnetometerAddress.map { [$0] } ?? IMUDrivers.lis3mdl.addresses
            for a in addrs {
                guard let v = try? io.read(LIS3MDL.whoAmI, at: a), v == LIS3MDL.whoAmIValue else { continue }
                try openLIS3MDL(at: a)
                magnetometerName = "LIS3MDL"
                magnetometerAddress = a
                break
            }
            if magnetometerName == nil && wanted != "AUTO" {
                try settings.magnetometerMissing("LIS3MDL", bus: bus, address: settings.magnetometerAddress,
                    I2CError(.noAcknowledge, bus: bus.number, address: nil,
                             operation: "nothing answered with WHO_AM_I 0x3D at " + addrs.map(IMUDrivers.hex).joined(separator: "/")))
            }
            let actual = Self.odr.first { $0.code == code }?.hz ?? settings.rateHz
            // Read it every sample up to 160 Hz (ZYXDA says when its 80 Hz data is new): a
            // stale field behind a turning gyro skews the heading.
            magEvery = max(1, Int((actual / 160).rounded(.down)))
            sinceMag = magEvery
        }
    }

    private func openLIS3MDL(at a: UInt8) throws {
        try io.write(LIS3MDL.ctrlReg2, LIS3MDL.softReset, at: a)
        sleep(0.01)
        try io.write(LIS3MDL.ctrlReg1, LIS3MDL.uhp80Hz, at: a)
        try io.write(LIS3MDL.ctrlReg2, settings.magnetometerRange.code << 5, at: a)
        try io.write(LIS3MDL.ctrlReg4, LIS3MDL.uhpZ, at: a)
        try io.write(LIS3MDL.ctrlReg5, LIS3MDL.bdu, at: a)
        try io.write(LIS3MDL.ctrlReg3, 0x00, at: a) // continuous conversion
        magScale = IMUConvert.lis3mdlScale(settings.magnetometerRange)
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
        if let addr = magnetometerAddress, !samples.isEmpty {
            let m = try io.burst(LIS3MDL.statusReg | LIS3MDL.autoIncrement, 7, at: addr)
            let firstEver = lastMag == nil
            var new = false
            if m[0] & LIS3MDL.zyxda != 0 {
                lastMag = IMUConvert.scaled(IMUConvert.vector(UnsafeRawBufferPointer(rebasing: m[1..<7]), at: 0, bigEndian: false), magScale)
                new = true
            }
            attachMagnetometer(lastMag, new: new, firstEver: firstEver, to: &samples)
        }
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
        if let a = magnetometerAddress {
            sinceMag += 1
            if sinceMag >= magEvery {
                sinceMag = 0
                let m = try io.burst(LIS3MDL.statusReg | LIS3MDL.autoIncrement, 7, at: a)
                if m[0] & LIS3MDL.zyxda != 0 {
                    lastMag = IMUConvert.scaled(IMUConvert.vector(UnsafeRawBufferPointer(rebasing: m[1..<7]), at: 0, bigEndian: false), magScale)
                    sample.magIsNew = true
                }
            }
            sample.mag = lastMag
        }
        return ready
    }
}
