import OSHCore

/// TDK InvenSense ICM-42688-P: accelerometer and gyroscope, register banks behind REG_BANK_SEL
/// (0x76) of which everything here is in bank 0, a 2 KB FIFO of 16-byte packets, and no
/// magnetometer of its own — a LIS3MDL beside it (`SeparateMagnetometer`) gives heading.
///
/// Register facts: TDK's datasheet DS-000347 and TDK's Linux driver (drivers/iio/imu/inv_icm42600,
/// which drives the ICM-42688-P). Timer pacing reads one 12-byte burst per sample; FIFO pacing
/// reads whole packets (packet 3: header, accel, gyro, 8-bit temperature, timestamp).
public final class ICM42688Driver: IMUDriver {
    /// Bank-0 registers and bits.
    public enum Reg {
        public static let deviceConfig: UInt8 = 0x11
        public static let fifoConfig: UInt8 = 0x16
        public static let tempData1: UInt8 = 0x1D
        public static let accelDataX1: UInt8 = 0x1F
        public static let gyroDataX1: UInt8 = 0x25
        public static let intStatus: UInt8 = 0x2D
        /// FIFO_COUNTH/L (0x2E/0x2F), then FIFO_DATA, which a burst does not advance past.
        public static let fifoCountH: UInt8 = 0x2E
        public static let fifoData: UInt8 = 0x30
        public static let signalPathReset: UInt8 = 0x4B
        public static let intfConfig0: UInt8 = 0x4C
        public static let pwrMgmt0: UInt8 = 0x4E
        public static let gyroConfig0: UInt8 = 0x4F
        public static let accelConfig0: UInt8 = 0x50
        public static let gyroAccelConfig0: UInt8 = 0x52
        public static let fifoConfig1: UInt8 = 0x5F
        public static let whoAmI: UInt8 = 0x75
        /// REG_BANK_SEL, in every bank: bits 2:0 select bank 0…4.
        public static let bankSel: UInt8 = 0x76
        /// DEVICE_CONFIG.SOFT_RESET_CONFIG (clears itself).
        public static let softReset: UInt8 = 0x01
        /// INT_STATUS (cleared by reading): RESET_DONE_INT, DATA_RDY_INT, FIFO_FULL_INT.
        public static let resetDone: UInt8 = 0x10
        public static let dataReady: UInt8 = 0x08
        public static let fifoFull: UInt8 = 0x02
        /// FIFO_CONFIG.FIFO_MODE (bits 7:6): 00 bypass, 01 stream-to-FIFO, 1x stop-on-full.
        public static let fifoBypass: UInt8 = 0x00
        public static let fifoStream: UInt8 = 0x40
        /// SIGNAL_PATH_RESET.FIFO_FLUSH (clears itself).
        public static let fifoFlush: UInt8 = 0x02
        /// INTF_CONFIG0: FIFO_COUNT_REC (count packets, not bytes), FIFO_COUNT_ENDIAN and
        /// SENSOR_DATA_ENDIAN (1 = big-endian, the reset values), UI_SIFS_CFG = 10 (SPI off).
        public static let fifoCountRecords: UInt8 = 0x40
        public static let fifoCountBigEndian: UInt8 = 0x20
        public static let dataBigEndian: UInt8 = 0x10
        public static let spiDisabled: UInt8 = 0x02
        /// PWR_MGMT0: GYRO_MODE (3:2) and ACCEL_MODE (1:0) = 11, low-noise; TEMP_DIS (bit 5) 0.
        public static let lowNoise: UInt8 = 0x0F
        /// FIFO_CONFIG1: RESUME_PARTIAL_RD, TEMP_EN, GYRO_EN, ACCEL_EN (accel + gyro: packet 3).
        public static let fifoResumePartialRead: UInt8 = 0x40
        public static let fifoTemp: UInt8 = 0x04
        public static let fifoGyro: UInt8 = 0x02
        public static let fifoAccel: UInt8 = 0x01
    }

    public static let icm42688p = I2CChipIdentity(
        name: "ICM42688P", kind: .imu, addresses: [0x68, 0x69], idRegister: 0x75, idValues: [0x47],
        note: "6-axis; pair it with a LIS3MDL magnetometer (0x1C/0x1E) for heading. A Pi RTC board (DS3231) "
            + "also answers at 0x68: strap the IMU's AP_AD0/SDO high for 0x69",
        measures: [.acceleration, .rotation, .temperature])

    /// The driver table's entry; its ID read brings the chip back to bank 0 when it was left elsewhere.
    public static let chip = IMUChip(identity: icm42688p, readID: { bus, address in try readID(bus: bus, address: address) }) {
        ICM42688Driver(bus: $0, address: $1, whoAmI: $2, settings: $3, sleep: $4)
    }

    /// WHO_AM_I is in bank 0. When it does not match and REG_BANK_SEL reads 1…4 (another program
    /// left the chip in another bank), bank 0 is selected and WHO_AM_I read again; if that still
    /// is no ICM-42688-P, the bank register is put back — the chip at the address is someone else's.
    static func readID(bus: I2CBus, address: UInt8) throws -> UInt8 {
        let v = try bus.readRegister(address, Reg.whoAmI)
        guard !icm42688p.matches(id: v) else { return v }
        let bank = try bus.readRegister(address, Reg.bankSel)
        guard (1...4).contains(bank) else { return v }
        try bus.writeRegister(address, Reg.bankSel, 0)
        let again = try bus.readRegister(address, Reg.whoAmI)
        guard icm42688p.matches(id: again) else {
            try bus.writeRegister(address, Reg.bankSel, bank)
            return v
        }
        return again
    }

    /// ODR codes (GYRO_CONFIG0/ACCEL_CONFIG0 bits 3:0) both sensors run at in low-noise mode, slowest
    /// first. 2–32 kHz are left out: a 100–400 kHz I²C bus cannot carry them.
    public static let odr: [(code: UInt8, hz: Double)] = [
        (0x0B, 12.5), (0x0A, 25), (0x09, 50), (0x08, 100), (0x07, 200), (0x0F, 500), (0x06, 1000),
    ]

    /// The slowest ODR at or above `rate` (the chip then never runs slower than it is read).
    static func odr(for rate: Double) -> (code: UInt8, hz: Double) {
        odr.first { $0.hz >= rate * 0.99 } ?? odr[odr.count - 1]
    }

    /// GYRO_ACCEL_CONFIG0 UI filter bandwidths in low-noise mode at `odr`: code 0 = ODR/2,
    /// 1…7 = max(400 Hz, ODR) / 4, 5, 8, 10, 16, 20, 40.
    static func uiFilter(odr: Double) -> [(code: UInt8, hz: Double)] {
        let base = max(400, odr)
        return [(0, odr / 2)] + zip(UInt8(1)...7, [4.0, 5, 8, 10, 16, 20, 40]).map { ($0, base / $1) }
    }

    /// After PWR_MGMT0 turns the sensors on: no register write for 200 µs (DS-000347), and the
    /// gyro's start-up (60 ms in TDK's Linux driver) before its data is kept.
    static let startupSeconds = 0.06
    /// 2 KB (DS-000347); the count is in bytes (INTF_CONFIG0.FIFO_COUNT_REC left 0).
    public static let fifoBytes = 2048

    public let identity = ICM42688Driver.icm42688p
    public let address: UInt8
    public var bus: I2CBus { io.bus }
    public let whoAmI: UInt8
    public private(set) var settings: IMUDriverSettings
    public var magnetometerName: String? { magnetometer?.name }
    public var magnetometerAddress: UInt8? { magnetometer?.address }
    public let appliesMountingOnChip = false
    public private(set) var fifo: IMUFifoLayout?
    /// The ODR configured (Hz).
    public private(set) var odrHz = 0.0
    /// FIFO packets whose accel or gyro had no sample (-32768 on every axis): skipped.
    public private(set) var invalidPackets = 0

    private let io: IMURegisterIO
    private let sleep: (Double) -> Void
    private var accelScale = 0.0
    private var gyroScale = 0.0
    private var magnetometer: SeparateMagnetometer?
    /// The register path reads TEMP_DATA once a second: health, not fusion, so the per-sample burst stays 12 bytes.
    private var temperature: Double?
    private var temperatureEvery = 1
    private var sinceTemperature = 0

    init(bus: I2CBus, address: UInt8, whoAmI: UInt8, settings: IMUDriverSettings, sleep: @escaping (Double) -> Void) {
        self.address = address
        self.whoAmI = whoAmI
        self.settings = settings
        self.sleep = sleep
        io = IMURegisterIO(bus: bus, address: address, chip: "ICM42688P", capacity: IMUFifoLayout.maxTransferBytes)
    }

    public func reopen() throws {
        let id = try Self.readID(bus: bus, address: address)
        guard identity.matches(id: id) else { throw io.unexpected("WHO_AM_I reads \(IMUDrivers.hex(id)), expected 0x47") }
        try io.write(Reg.deviceConfig, Reg.softReset)
        sleep(0.001)  // no register access for 1 ms after a soft reset
        let status = try io.read(Reg.intStatus)
        guard status & Reg.resetDone != 0 else {
            throw io.unexpected(
                "the soft reset did not complete (INT_STATUS reads \(IMUDrivers.hex(status)) without RESET_DONE); "
                    + "check the chip's supply (it is retried)")
        }
        // Big-endian data and byte count, as after reset, said explicitly; SPI off (on I²C a low CS
        // can only be a glitch: TDK's Linux driver does the same).
        try io.write(Reg.intfConfig0, Reg.fifoCountBigEndian | Reg.dataBigEndian | Reg.spiDisabled)
        let rate = Self.odr(for: min(1000, max(1, settings.rateHz)))
        odrHz = rate.hz
        try io.write(Reg.gyroConfig0, settings.gyroRange.icm42688Code << 5 | rate.code)
        try io.write(Reg.accelConfig0, settings.accelRange.icm42688Code << 5 | rate.code)
        // The filter stays below half the rate samples are kept at: the ODR when the FIFO keeps
        // every one, the agent's rate when it reads the registers itself.
        let bw = lowPassCode(for: settings.fifo ? rate.hz : min(rate.hz, settings.rateHz), Self.uiFilter(odr: rate.hz))
        try io.write(Reg.gyroAccelConfig0, bw << 4 | bw)
        accelScale = IMUConvert.icm42688AccelScale(settings.accelRange)
        gyroScale = IMUConvert.icm42688GyroScale(settings.gyroRange)
        if settings.fifo {
            try io.write(Reg.fifoConfig1, Reg.fifoResumePartialRead | Reg.fifoTemp | Reg.fifoGyro | Reg.fifoAccel)
        }
        // Sensors on last: nothing is written in the 200 µs after, nor during the start-up.
        try io.write(Reg.pwrMgmt0, Reg.lowNoise)
        sleep(Self.startupSeconds)
        fifo = nil
        if settings.fifo {
            fifo = IMUFifoLayout(capacityBytes: Self.fifoBytes, frameBytes: ICM42688Fifo.packetBytes, rateHz: rate.hz)
            try io.write(Reg.fifoConfig, Reg.fifoStream)
            try resetFIFO()
        }
        temperature = nil
        temperatureEvery = max(1, Int(settings.rateHz.rounded()))
        sinceTemperature = temperatureEvery
        invalidPackets = 0
        magnetometer = nil
        magnetometer = try SeparateMagnetometer.find(io: io, settings: settings, imuRateHz: settings.rateHz, sleep: sleep)
    }

    /// FIFO_FLUSH, then one FIFO_COUNT read: the first after a flush reads 0 (TDK's Linux driver's workaround).
    private func resetFIFO() throws {
        try io.write(Reg.signalPathReset, Reg.fifoFlush)
        _ = try io.burst(Reg.fifoCountH, 2)
    }

    public func readFIFO(into samples: inout [IMUSample]) throws -> IMUFifoRead {
        samples.removeAll(keepingCapacity: true)
        guard let layout = fifo else { throw io.noFIFO() }
        let c = try io.burst(Reg.fifoCountH, 2)
        let count = Int(c[0]) << 8 | Int(c[1])
        // Stream mode: a full FIFO drops its oldest packets, so a count at capacity means some were lost.
        if layout.overflowed(count: count) {
            try resetFIFO()
            return IMUFifoRead(overflowed: true, lost: max(1, layout.wholeFrames(count: count)))
        }
        var s = IMUSample()
        var stop: ICM42688Fifo.Packet?
        var invalid = 0
        let a = accelScale, g = gyroScale
        try io.drain(
            Reg.fifoData, frames: layout.wholeFrames(count: count), frameBytes: layout.frameBytes,
            perTransfer: layout.framesPerTransfer
        ) { p, at in
            guard stop == nil else { return }
            switch ICM42688Fifo.decode(p, at: at, accelScale: a, gyroScale: g, into: &s) {
            case .sample: samples.append(s)
            case .invalid: invalid += 1
            case let other: stop = other
            }
        }
        invalidPackets += invalid
        if case .foreign(let header)? = stop {
            samples.removeAll(keepingCapacity: true)
            try resetFIFO()
            throw io.unexpected(
                "FIFO packet header \(IMUDrivers.hex(header)) is not a 16-bit accel+gyro packet (the reads lost "
                    + "step with the packets, or another program reconfigured the chip); the FIFO was flushed")
        }
        try magnetometer?.read(onto: &samples)
        return IMUFifoRead()
    }

    public func read(into sample: inout IMUSample) throws -> Bool {
        // ACCEL_DATA_X1 … GYRO_DATA_Z0 in one 12-byte burst. DATA_RDY sits in INT_STATUS past the
        // timestamp registers; instead a sensor with no sample yet reads -32768 on every axis.
        let p = try io.burst(Reg.accelDataX1, 12)
        let ready = !ICM42688Fifo.allInvalid(p, 0) && !ICM42688Fifo.allInvalid(p, 6)
        if ready {
            sample.accel = IMUConvert.scaled(IMUConvert.vector(p, at: 0, bigEndian: true), accelScale)
            sample.gyro = IMUConvert.scaled(IMUConvert.vector(p, at: 6, bigEndian: true), gyroScale)
        }
        sinceTemperature += 1
        if sinceTemperature >= temperatureEvery {
            sinceTemperature = 0
            let t = try io.burst(Reg.tempData1, 2)
            let raw = IMUConvert.int16BE(t, 0)
            temperature = raw == ICM42688Fifo.invalid ? nil : IMUConvert.icm42688Temperature(raw)
        }
        sample.temperature = temperature
        sample.magIsNew = false
        try magnetometer?.read(into: &sample)
        return ready
    }
}
