import OSHCore
import OSHPlatform

/// ICM-42688-P, bank 0 (REG_BANK_SEL selects the others, which read 0 here): WHO_AM_I 0x47, soft
/// reset raising RESET_DONE, INT_STATUS cleared by reading, data registers at the configured
/// ODR and full scale (-32768 until the sensors run), INTF_CONFIG0's byte orders and count unit,
/// and the 2 KB FIFO writing packet 3 at the ODR in stream mode: a full FIFO drops its oldest
/// whole packets and raises FIFO_FULL, FIFO_DATA does not advance in a burst, and the first
/// FIFO_COUNT read after a flush gives 0 (as TDK's Linux driver works around). The datasheet's
/// waits (1 ms after a reset, no write for 200 µs after the gyro starts) are counted, not
/// enforced: tests with a no-op sleep still run.
public final class SimulatedICM42688: SimulatedIMUChip {
    typealias R = ICM42688Driver.Reg
    public private(set) var bank: UInt8 = 0
    public private(set) var resets = 0
    /// Stream mode drops the oldest whole packets; stop-on-full takes no more.
    public let fifo = SimulatedFIFO(capacity: ICM42688Driver.fifoBytes, whenFull: .overwriteWords(ICM42688Fifo.packetBytes))
    /// Transactions within 1 ms of a soft reset.
    public private(set) var accessesDuringReset = 0
    /// Register writes within 200 µs of the gyro leaving off.
    public private(set) var writesDuringGyroStart = 0
    /// Seconds after the sensors turn on during which they give -32768 (0: data at once).
    public var startupSeconds = 0.0
    private var resetAt: Double?
    private var sensorsOnAt: Double?
    private var intStatus: UInt8 = 0
    private var countReadsZero = false
    private var latchedCount: UInt16 = 0

    /// GYRO_CONFIG0/ACCEL_CONFIG0 ODR codes 1…15 (Hz).
    static let odrTable: [Double] = [32000, 16000, 8000, 4000, 2000, 1000, 200, 100, 50, 25, 12.5, 6.25, 3.125, 1.5625, 500]

    public init(truth: @escaping IMUTruthSource, clock: @escaping () -> Double, mounting: AxisMap = .identity) {
        super.init(registers: [:], truth: truth, clock: clock, mounting: mounting)
        powerOnReset()
    }

    /// Reset values: INTF_CONFIG0 0x30 (big-endian, count in bytes), GYRO/ACCEL_CONFIG0 0x06
    /// (±2000 dps, ±16 g, 1 kHz), GYRO_ACCEL_CONFIG0 0x11, sensors off, FIFO bypassed.
    public func powerOnReset() {
        for i in registers.indices { registers[i] = 0 }
        registers[Int(R.whoAmI)] = 0x47
        registers[Int(R.intfConfig0)] = 0x30
        registers[Int(R.gyroConfig0)] = 0x06
        registers[Int(R.accelConfig0)] = 0x06
        registers[Int(R.gyroAccelConfig0)] = 0x11
        for r in stride(from: Int(R.tempData1), through: 0x29, by: 2) { registers[r] = 0x80 }
        intStatus = R.resetDone
        bank = 0
        sensorsOnAt = nil
        fifo.stop()
        fifo.clear()
        forgetSamples()
    }

    var gyroOn: Bool { registers[Int(R.pwrMgmt0)] >> 2 & 3 != 0 }
    var sensorsOn: Bool { registers[Int(R.pwrMgmt0)] & 0x0C == 0x0C && registers[Int(R.pwrMgmt0)] & 0x03 != 0 }
    var settled: Bool { sensorsOnAt.map { clock() >= $0 + startupSeconds } ?? false }
    var bigEndianData: Bool { registers[Int(R.intfConfig0)] & R.dataBigEndian != 0 }

    /// The gyro's ODR (Hz); the driver sets the accel's alike.
    public var odr: Double {
        let code = Int(registers[Int(R.gyroConfig0)] & 0x0F)
        return code == 0 ? 0 : Self.odrTable[code - 1]
    }

    public var accelRange: AccelRange? { AccelRange.allCases.first { $0.icm42688Code == registers[Int(R.accelConfig0)] >> 5 } }
    public var gyroRange: GyroRange? { GyroRange.allCases.first { $0.icm42688Code == registers[Int(R.gyroConfig0)] >> 5 } }
    var accelPerCount: Double { IMUConvert.icm42688AccelScale(accelRange ?? .g16) }
    /// ±2000 dps halves with each code; 4…7 (±125 … ±15.6 dps) are outside the agent's ranges.
    var gyroPerCount: Double {
        if let g = gyroRange { return IMUConvert.icm42688GyroScale(g) }
        return IMUConvert.radiansPerDegree * 2000 / Double(1 << Int(registers[Int(R.gyroConfig0)] >> 5)) / 32768
    }

    public override func transfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws {
        let now = clock()
        if let r = resetAt, now < r + 0.001 { accessesDuringReset += 1 }
        if write.count > 1, let g = sensorsOnAt, now < g + 0.0002 { writesDuringGyroStart += 1 }
        if fifo.running { advanceFIFO() }
        if read.count > 0, bank == 0, let start = write.first, (R.tempData1...0x2A).contains(start) { latch() }
        try super.transfer(write: write, read: read)
    }

    public override func nextRegister(after register: UInt8) -> UInt8 {
        register == R.fifoData ? register : register &+ 1
    }

    public override func writeRegister(_ register: UInt8, _ value: UInt8) {
        if register == R.bankSel {
            bank = value & 0x07
            return
        }
        guard bank == 0 else { return }
        switch register {
        case R.deviceConfig where value & R.softReset != 0:
            resets += 1
            powerOnReset()
            resetAt = clock()
        case R.signalPathReset:
            if value & R.fifoFlush != 0 {
                fifo.clear()
                countReadsZero = true
            }
        case R.whoAmI, R.tempData1...R.fifoData:
            break  // read-only
        case R.pwrMgmt0:
            let wasOn = gyroOn
            super.writeRegister(register, value)
            if !wasOn && gyroOn { sensorsOnAt = clock() }
            if !gyroOn { sensorsOnAt = nil }
            forgetSamples()
            updateFIFO()
        case R.fifoConfig, R.fifoConfig1, R.gyroConfig0, R.accelConfig0:
            super.writeRegister(register, value)
            updateFIFO()
        default:
            super.writeRegister(register, value)
        }
    }

    public override func readRegister(_ register: UInt8) -> UInt8 {
        if register == R.bankSel { return bank }
        guard bank == 0 else { return 0 }
        switch register {
        case R.intStatus:
            let v = intStatus
            intStatus = 0
            return v
        case R.fifoCountH:
            // Reading COUNTH latches both bytes.
            let records = registers[Int(R.intfConfig0)] & R.fifoCountRecords != 0
            latchedCount = countReadsZero ? 0 : UInt16(records ? fifo.count / ICM42688Fifo.packetBytes : fifo.count)
            countReadsZero = false
            return countBigEndian ? UInt8(latchedCount >> 8) : UInt8(latchedCount & 0xFF)
        case R.fifoCountH + 1:
            return countBigEndian ? UInt8(latchedCount & 0xFF) : UInt8(latchedCount >> 8)
        case R.fifoData:
            return fifo.count > 0 ? fifo.pop() : ICM42688Fifo.headerEmpty
        default:
            return super.readRegister(register)
        }
    }

    var countBigEndian: Bool { registers[Int(R.intfConfig0)] & R.fifoCountBigEndian != 0 }

    /// Bypass stops and empties it; stream or stop-on-full with accel and gyro enabled and the
    /// sensors on runs it at the ODR.
    private func updateFIFO() {
        let mode = registers[Int(R.fifoConfig)] & 0xC0
        guard mode != R.fifoBypass else {
            fifo.stop()
            fifo.clear()
            return
        }
        fifo.whenFull = mode == R.fifoStream ? .overwriteWords(ICM42688Fifo.packetBytes) : .stop
        let enabled = registers[Int(R.fifoConfig1)] & (R.fifoAccel | R.fifoGyro) == R.fifoAccel | R.fifoGyro
        if enabled && sensorsOn { fifo.start(at: clock(), rate: odr) } else { fifo.stop() }
    }

    private func advanceFIFO() {
        fifo.advance(to: clock(), rate: odr) { [unowned self] t in self.packet(at: t) }
        if fifo.count + ICM42688Fifo.packetBytes > fifo.capacity { intStatus |= R.fifoFull }
    }

    /// Packet 3 made at `time`: header 0x68 (accel, gyro, ODR timestamp), accel, gyro, the
    /// 8-bit temperature, a 16-bit µs timestamp.
    func packet(at time: Double) -> [UInt8] {
        var out: [UInt8] = [ICM42688Fifo.headerAccel | ICM42688Fifo.headerGyro | 0x08]
        let be = bigEndianData
        if let on = sensorsOnAt, time >= on + startupSeconds {
            let t = chipTruth(at: time)
            SimulatedFIFO.append(t.accel, perCount: accelPerCount, to: &out, bigEndian: be)
            SimulatedFIFO.append(t.gyro, perCount: gyroPerCount, to: &out, bigEndian: be)
        } else {
            for _ in 0..<6 { SimulatedFIFO.append(ICM42688Fifo.invalid, to: &out, bigEndian: be) }
        }
        out.append(UInt8(bitPattern: Int8(max(-127, min(127, ((temperature - 25) * 2.07).rounded())))))
        SimulatedFIFO.append(Int16(truncatingIfNeeded: Int((time * 1e6).rounded())), to: &out, bigEndian: true)
        return out
    }

    /// A new sample in the data registers, when the ODR says one is due and the sensors have settled.
    func latch() {
        guard sensorsOn, settled, takeNewSample(rate: odr) else { return }
        let t = chipTruth()
        let be = bigEndianData
        store(Int16(max(-32767, min(32767, ((temperature - 25) * 132.48).rounded()))), at: Int(R.tempData1), bigEndian: be)
        store(t.accel, perCount: accelPerCount, at: Int(R.accelDataX1), bigEndian: be)
        store(t.gyro, perCount: gyroPerCount, at: Int(R.gyroDataX1), bigEndian: be)
        intStatus |= R.dataReady
    }

    /// What a test needs to leave the chip in another bank, as another program might.
    public func selectBank(_ b: UInt8) { bank = b & 0x07 }
}

extension ICM42688Driver: SimulatedIMUModel {
    /// With a LIS3MDL beside it at its default address, as the LSM6DSOX has.
    public func simulatedBoard(
        on bus: SimulatedI2CBus, address: UInt8, truth: @escaping IMUTruthSource, mounting: AxisMap,
        clock: @escaping () -> Double
    ) -> SimulatedIMUBoard {
        let icm = SimulatedICM42688(truth: truth, clock: clock, mounting: mounting)
        let lis = SimulatedLIS3MDL(truth: truth, clock: clock, mounting: mounting)
        bus.attach(lis, at: SeparateMagnetometer.lis3mdl.addresses[0])
        return SimulatedIMUBoard(chip: identity.name, address: address, imu: icm, magnetometer: lis)
    }
}
