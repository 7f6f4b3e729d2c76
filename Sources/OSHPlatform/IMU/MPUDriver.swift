import OSHCore

/// InvenSense MPU-6050, MPU-6500 and MPU-9250 (one register map; the 6500/9250 add
/// ACCEL_CONFIG2 and a different temperature scale; the 9250 adds an AK8963 magnetometer).
///
/// The AK8963 is reached in **bypass mode** (INT_PIN_CFG.BYPASS_EN = 1, I2C master off): its
/// own address 0x0C then appears on the host bus and the host reads it directly. Chosen over
/// the auxiliary I²C master because the host then sees the magnetometer's status bits
/// (DRDY, overflow) first-hand and the driver needs no slave-channel programming; the cost is
/// one extra 8-byte transaction per magnetometer sample (≈0.25 ms at 400 kHz).
public final class MPUDriver: IMUDriver {
    /// Register addresses (MPU-6000/6050 register map rev 4.2; MPU-9250 register map rev 1.6).
    public enum Reg {
        public static let smplrtDiv: UInt8 = 0x19
        public static let config: UInt8 = 0x1A
        public static let gyroConfig: UInt8 = 0x1B
        public static let accelConfig: UInt8 = 0x1C
        public static let accelConfig2: UInt8 = 0x1D
        public static let intPinCfg: UInt8 = 0x37
        public static let intEnable: UInt8 = 0x38
        public static let intStatus: UInt8 = 0x3A
        public static let accelXoutH: UInt8 = 0x3B
        public static let userCtrl: UInt8 = 0x6A
        public static let pwrMgmt1: UInt8 = 0x6B
        public static let pwrMgmt2: UInt8 = 0x6C
        public static let whoAmI: UInt8 = 0x75
        /// PWR_MGMT_1 bits.
        public static let deviceReset: UInt8 = 0x80
        public static let sleep: UInt8 = 0x40
        /// INT_PIN_CFG.BYPASS_EN, INT_ENABLE.DATA_RDY_EN, INT_STATUS.DATA_RDY_INT.
        public static let bypassEnable: UInt8 = 0x02
        public static let dataReady: UInt8 = 0x01
        public static let i2cMasterEnable: UInt8 = 0x20
        /// FIFO (MPU-6000/6050 register map §4.6/4.7/4.30; MPU-9250 register map rev 1.6).
        public static let fifoEn: UInt8 = 0x23
        public static let fifoCountH: UInt8 = 0x72
        public static let fifoRW: UInt8 = 0x74
        /// FIFO_EN: XG_, YG_, ZG_FIFO_EN and ACCEL_FIFO_EN (TEMP_FIFO_EN 0x80 is left off).
        public static let fifoGyro: UInt8 = 0x70
        public static let fifoAccel: UInt8 = 0x08
        public static let fifoTemp: UInt8 = 0x80
        /// USER_CTRL.FIFO_EN and FIFO_RST (the reset acts while FIFO_EN is 0 on the 6050).
        public static let fifoEnable: UInt8 = 0x40
        public static let fifoReset: UInt8 = 0x04
        /// CONFIG.FIFO_MODE (6500/9250): 1 = a full FIFO takes no more samples (instead of overwriting).
        public static let fifoMode: UInt8 = 0x40
        /// INT_STATUS.FIFO_OFLOW_INT.
        public static let fifoOverflow: UInt8 = 0x10
    }

    /// AK8963 registers (AK8963 datasheet §8).
    public enum AK8963 {
        public static let address: UInt8 = 0x0C
        public static let wia: UInt8 = 0x00
        public static let wiaValue: UInt8 = 0x48
        public static let st1: UInt8 = 0x02
        public static let cntl1: UInt8 = 0x0A
        public static let cntl2: UInt8 = 0x0B
        public static let asax: UInt8 = 0x10
        /// CNTL1: BIT (16-bit output) | MODE.
        public static let powerDown: UInt8 = 0x00
        public static let fuseROM: UInt8 = 0x0F
        public static let continuous2_16bit: UInt8 = 0x16  // 100 Hz
        public static let softReset: UInt8 = 0x01
        /// ST1.DRDY, ST2.HOFL.
        public static let drdy: UInt8 = 0x01
        public static let overflow: UInt8 = 0x08
    }

    public enum Variant: Sendable { case mpu6050, mpu6500, mpu9250 }

    public static let mpu6050 = I2CChipIdentity(
        name: "MPU6050", kind: .imu, addresses: [0x68, 0x69], idRegister: 0x75, idValues: [0x68],
        note: "6-axis, no magnetometer (an MPU-9150 also answers 0x68)", measures: [.acceleration, .rotation, .temperature])
    public static let mpu6500 = I2CChipIdentity(
        name: "MPU6500", kind: .imu, addresses: [0x68, 0x69], idRegister: 0x75, idValues: [0x70],
        note: "6-axis, no magnetometer", measures: [.acceleration, .rotation, .temperature])
    public static let mpu9250 = I2CChipIdentity(
        name: "MPU9250", kind: .imu, addresses: [0x68, 0x69], idRegister: 0x75, idValues: [0x71, 0x73],
        note: "9-axis: AK8963 magnetometer at 0x0C, reached in bypass mode (0x73 is the MPU-9255)",
        measures: [.acceleration, .rotation, .magneticField, .temperature], builtInMagnetometer: "AK8963")
    public static let ak8963 = I2CChipIdentity(
        name: "AK8963", kind: .magnetometer, addresses: [0x0C], idRegister: 0x00, idValues: [0x48],
        note: "inside the MPU-9250; visible on the bus only while the MPU-9250 is in bypass mode", measures: [.magneticField])

    /// The driver table's entries.
    public static let mpu6050Chip = chip(mpu6050, .mpu6050)
    public static let mpu6500Chip = chip(mpu6500, .mpu6500)
    public static let mpu9250Chip = chip(mpu9250, .mpu9250)

    private static func chip(_ id: I2CChipIdentity, _ variant: Variant) -> IMUChip {
        IMUChip(identity: id) { bus, address, whoAmI, settings, sleep in
            MPUDriver(identity: id, variant: variant, bus: bus, address: address, whoAmI: whoAmI, settings: settings, sleep: sleep)
        }
    }

    public let identity: I2CChipIdentity
    public let address: UInt8
    public var bus: I2CBus { io.bus }
    public let whoAmI: UInt8
    public let variant: Variant
    public private(set) var settings: IMUDriverSettings
    public private(set) var magnetometerName: String?
    public let appliesMountingOnChip = false
    /// AK8963 µT per count per axis (fuse-ROM sensitivity adjustment applied).
    public private(set) var magScale = IMUVector(0.15, 0.15, 0.15)
    public private(set) var sampleRateDivider: UInt8 = 0
    public private(set) var fifo: IMUFifoLayout?

    private let io: IMURegisterIO
    private let sleep: (Double) -> Void
    private var accelScale = 0.0
    private var gyroScale = 0.0
    private var magEvery = 1
    private var sinceMag = 0
    private var lastMag: IMUVector?

    init(
        identity: I2CChipIdentity, variant: Variant, bus: I2CBus, address: UInt8, whoAmI: UInt8, settings: IMUDriverSettings,
        sleep: @escaping (Double) -> Void
    ) {
        self.identity = identity
        self.address = address
        self.whoAmI = whoAmI
        self.settings = settings
        self.sleep = sleep
        self.variant = variant
        io = IMURegisterIO(bus: bus, address: address, chip: identity.name, capacity: IMUFifoLayout.maxTransferBytes)
    }

    /// Gyro DLPF_CFG bandwidths (Hz). 0 and 7 run the gyro at 8 kHz, so they are not offered.
    static let gyroDLPF6050: [(code: UInt8, hz: Double)] = [(1, 188), (2, 98), (3, 42), (4, 20), (5, 10), (6, 5)]
    static let gyroDLPF6500: [(code: UInt8, hz: Double)] = [(1, 184), (2, 92), (3, 41), (4, 20), (5, 10), (6, 5)]
    /// ACCEL_CONFIG2.A_DLPFCFG bandwidths (Hz), FCHOICE_B = 0.
    static let accelDLPF6500: [(code: UInt8, hz: Double)] = [(1, 218.1), (2, 99), (3, 44.8), (4, 21.2), (5, 10.2), (6, 5.05)]

    public func reopen() throws {
        let id = try io.read(Reg.whoAmI)
        guard identity.matches(id: id) else {
            throw io.unexpected(
                "WHO_AM_I reads \(IMUDrivers.hex(id)), expected \(identity.idValues.map(IMUDrivers.hex).joined(separator: " or "))")
        }
        try io.write(Reg.pwrMgmt1, Reg.deviceReset)
        sleep(0.1)  // the register map asks for 100 ms after DEVICE_RESET
        // Wake, clock from the gyro PLL (1 = X-gyro PLL on the 6050, auto-select on the 6500/9250).
        try io.write(Reg.pwrMgmt1, 0x01)
        try io.write(Reg.pwrMgmt2, 0x00)
        sleep(0.01)
        // With the DLPF on, the internal rate is 1 kHz: rate = 1000 / (1 + SMPLRT_DIV).
        let rate = min(1000, max(4, settings.rateHz))
        sampleRateDivider = UInt8(max(0, min(255, (1000 / rate).rounded() - 1)))
        try io.write(Reg.smplrtDiv, sampleRateDivider)
        let actualRate = 1000 / (Double(sampleRateDivider) + 1)
        let useFIFO = settings.fifo
        // Stop-when-full keeps whole frames in a full FIFO (the 6050 has no such bit: it overwrites).
        let mode = useFIFO && variant != .mpu6050 ? Reg.fifoMode : 0
        try io.write(Reg.config, mode | lowPassCode(for: actualRate, variant == .mpu6050 ? Self.gyroDLPF6050 : Self.gyroDLPF6500))
        try io.write(Reg.gyroConfig, settings.gyroRange.code << 3)
        try io.write(Reg.accelConfig, settings.accelRange.invensenseCode << 3)
        if variant != .mpu6050 {
            try io.write(Reg.accelConfig2, lowPassCode(for: actualRate, Self.accelDLPF6500))
        }
        accelScale = IMUConvert.invensenseAccelScale(settings.accelRange)
        gyroScale = IMUConvert.invensenseGyroScale(settings.gyroRange)
        magnetometerName = nil
        lastMag = nil
        if variant == .mpu9250 && settings.wantsMagnetometer {
            // Bypass: I2C master off, then the AK8963 appears at 0x0C on our bus.
            try io.write(Reg.userCtrl, 0x00)
            try io.write(Reg.intPinCfg, Reg.bypassEnable)
            do {
                try openAK8963()
                magnetometerName = "AK8963"
                magEvery = max(1, Int((actualRate / 100).rounded(.up)))
                sinceMag = magEvery
            } catch let e as I2CError where e.isAbsent {
                try settings.magnetometerMissing("AK8963", bus: bus, address: AK8963.address, e)
            }
        }
        try io.write(Reg.intEnable, Reg.dataReady)
        fifo = nil
        if useFIFO {
            // 1024 bytes on the 6050, 512 on the 6500/9250 (product specifications §7.17 / §3.1).
            fifo = IMUFifoLayout(capacityBytes: variant == .mpu6050 ? 1024 : 512, frameBytes: 12, rateHz: actualRate)
            try io.write(Reg.fifoEn, Reg.fifoGyro | Reg.fifoAccel)
            try resetFIFO()
        }
    }

    /// FIFO off, reset, on: the count restarts at a frame boundary (USER_CTRL keeps the I²C
    /// master off, as bypass needs).
    private func resetFIFO() throws {
        try io.write(Reg.userCtrl, 0x00)
        try io.write(Reg.userCtrl, Reg.fifoReset)
        try io.write(Reg.userCtrl, Reg.fifoEnable)
    }

    public func readFIFO(into samples: inout [IMUSample]) throws -> IMUFifoRead {
        samples.removeAll(keepingCapacity: true)
        guard let layout = fifo else { throw io.noFIFO() }
        let r = try io.readInvensenseFIFO(
            layout, count: Reg.fifoCountH, data: Reg.fifoRW, accelScale: accelScale,
            gyroScale: gyroScale, reset: resetFIFO, into: &samples)
        if magnetometerName != nil, !samples.isEmpty {
            // Once per burst (the AK8963 makes 100 samples/s at most): the newest field goes
            // with the newest sample; the earlier ones carry the previous one, not new.
            let firstEver = lastMag == nil
            try readAK8963()
            attachMagnetometer(lastMag, new: lastMagWasNew, firstEver: firstEver, to: &samples)
        }
        return r
    }

    private func openAK8963() throws {
        let a = AK8963.address
        let wia: UInt8
        do { wia = try io.read(AK8963.wia, at: a) } catch let e as I2CError where e.isAbsent {
            throw I2CError(
                .noAcknowledge, bus: bus.number, address: a,
                operation: "opening the MPU-9250's AK8963 magnetometer in bypass mode (an MPU-9250 clone "
                    + "without one? set the magnetometer to none)")
        }
        guard wia == AK8963.wiaValue else { throw io.unexpected("AK8963 WIA reads \(IMUDrivers.hex(wia)), expected 0x48", at: a) }
        try io.write(AK8963.cntl2, AK8963.softReset, at: a)
        sleep(0.001)
        // The sensitivity adjustment is readable only in fuse-ROM mode; mode changes need
        // 100 µs in power-down between them.
        try io.write(AK8963.cntl1, AK8963.powerDown, at: a)
        sleep(0.001)
        try io.write(AK8963.cntl1, AK8963.fuseROM, at: a)
        sleep(0.001)
        let asa = try io.burst(AK8963.asax, 3, at: a)
        magScale = IMUConvert.ak8963Scale(asa: (asa[0], asa[1], asa[2]))
        try io.write(AK8963.cntl1, AK8963.powerDown, at: a)
        sleep(0.001)
        try io.write(AK8963.cntl1, AK8963.continuous2_16bit, at: a)
        sleep(0.01)
    }

    public func read(into sample: inout IMUSample) throws -> Bool {
        // INT_STATUS sits just before the data: one 15-byte burst gets the data-ready bit
        // (cleared by this read) and accel, temperature, gyro from the same sample.
        let p = try io.burst(Reg.intStatus, 15)
        let ready = p[0] & Reg.dataReady != 0
        let raw = UnsafeRawBufferPointer(rebasing: p[1...])
        sample.accel = IMUConvert.scaled(IMUConvert.vector(raw, at: 0, bigEndian: true), accelScale)
        let t = IMUConvert.int16BE(raw, 6)
        sample.temperature = variant == .mpu6050 ? IMUConvert.mpu6050Temperature(t) : IMUConvert.invensenseTemperature(t)
        sample.gyro = IMUConvert.scaled(IMUConvert.vector(raw, at: 8, bigEndian: true), gyroScale)
        sample.magIsNew = false
        if magnetometerName != nil {
            sinceMag += 1
            if sinceMag >= magEvery {
                sinceMag = 0
                try readAK8963()
                sample.magIsNew = lastMagWasNew
            }
            sample.mag = lastMag
        }
        return ready
    }

    private var lastMagWasNew = false

    private func readAK8963() throws {
        // ST1, six data bytes, ST2: reading ST2 releases the data registers for the next sample.
        let m = try io.burst(AK8963.st1, 8, at: AK8963.address)
        lastMagWasNew = false
        guard m[0] & AK8963.drdy != 0, m[7] & AK8963.overflow == 0 else { return }
        let v = IMUConvert.vector(UnsafeRawBufferPointer(rebasing: m[1..<7]), at: 0, bigEndian: false)
        lastMag = IMUConvert.ak8963ToMPU9250(IMUVector(v.x * magScale.x, v.y * magScale.y, v.z * magScale.z))
        lastMagWasNew = true
    }
}
