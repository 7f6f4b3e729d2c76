import OSHCore
import OSHPlatform

/// ICM-20948: four 128-register banks behind REG_BANK_SEL (0x7F, present in every bank), and
/// an AK09916 on the auxiliary bus that the host reaches only through the chip's I²C master
/// (I2C_SLV4 one-off transactions, I2C_SLV0 copying into EXT_SLV_SENS_DATA at each sample) —
/// or, in bypass mode, at 0x0C on the host bus (`ak09916.reachable`).
public final class SimulatedICM20948: SimulatedIMUChip {
    typealias R = ICM20948Driver.Reg
    public private(set) var banks: [[UInt8]] = Array(repeating: Array(repeating: 0, count: 128), count: 4)
    public private(set) var bank = 0
    public let ak09916: SimulatedAKMagnetometer
    /// Writes with their bank (the base class's `writes` has no bank).
    public private(set) var bankedWrites: [(bank: Int, register: UInt8, value: UInt8)] = []
    public private(set) var resets = 0
    /// False models a dead AK09916: the master's transactions to it NACK.
    public var auxiliaryBusAnswers = true
    private var dataReadyLatched = false
    /// The 512-byte FIFO (FIFO_MODE 1 = snapshot: stop when full; 0 = stream: overwrite).
    public let fifo = SimulatedFIFO(capacity: 512, whenFull: .overwriteBytes)

    public init(truth: @escaping IMUTruthSource, clock: @escaping () -> Double, mounting: AxisMap = .identity) {
        ak09916 = SimulatedAKMagnetometer(model: .ak09916, truth: truth, clock: clock, mounting: mounting)
        super.init(registers: [:], truth: truth, clock: clock, mounting: mounting)
        ak09916.reachable = { [unowned self] in
            self.banks[0][Int(R.intPinCfg)] & 0x02 != 0 && self.banks[0][Int(R.userCtrl)] & R.i2cMstEn == 0
        }
        powerOnReset()
    }

    public func powerOnReset() {
        banks = Array(repeating: Array(repeating: 0, count: 128), count: 4)
        banks[0][Int(R.whoAmI)] = 0xEA
        banks[0][Int(R.pwrMgmt1)] = 0x41  // asleep
        banks[2][Int(R.gyroConfig1)] = 0x01
        banks[2][Int(R.accelConfig)] = 0x01
        bank = 0
        dataReadyLatched = false
        fifo.stop()
        fifo.clear()
        forgetSamples()
    }

    var asleep: Bool { banks[0][Int(R.pwrMgmt1)] & 0x40 != 0 }
    var masterOn: Bool { banks[0][Int(R.userCtrl)] & R.i2cMstEn != 0 }

    /// Gyro ODR = 1100 / (1 + GYRO_SMPLRT_DIV) (the accel runs beside it at its own divider).
    public var sampleRate: Double { 1100 / (1 + Double(banks[2][Int(R.gyroSmplrtDiv)])) }
    public var accelRange: AccelRange { AccelRange.allCases[Int(banks[2][Int(R.accelConfig)] >> 1 & 3)] }
    public var gyroRange: GyroRange { GyroRange.allCases[Int(banks[2][Int(R.gyroConfig1)] >> 1 & 3)] }

    public override func readRegister(_ register: UInt8) -> UInt8 {
        if register == R.bankSel { return UInt8(bank << 4) }
        guard register < 0x7F else { return 0 }
        if bank == 0 && register == R.intStatus1 {
            let v: UInt8 = dataReadyLatched ? 1 : 0
            dataReadyLatched = false
            return v
        }
        if bank == 0 && register == R.fifoRW { return fifo.pop() }
        if bank == 0 && register == 0x1B {  // INT_STATUS_2: FIFO_OVERFLOW_INT, cleared by reading
            let v: UInt8 = fifo.overflowed ? 0x1F : 0
            fifo.clearOverflow()
            return v
        }
        if bank == 0 && register == R.i2cMstStatus {
            let v = banks[0][Int(register)]
            banks[0][Int(register)] = 0  // cleared by reading
            return v
        }
        return banks[bank][Int(register)]
    }

    public override func writeRegister(_ register: UInt8, _ value: UInt8) {
        if register == R.bankSel { bank = Int(value >> 4 & 3); return }
        guard register < 0x7F else { return }
        bankedWrites.append((bank, register, value))
        if bank == 0 && register == R.pwrMgmt1 && value & R.deviceReset != 0 {
            resets += 1
            powerOnReset()
            return
        }
        // Read-only registers.
        if bank == 0 && (register == R.whoAmI || (0x2D...0x52).contains(register) || (0x70...0x72).contains(register)) { return }
        banks[bank][Int(register)] = value
        if bank == 0 && register == R.fifoRst && value & 0x1F != 0 { fifo.clear() }
        if bank == 0 && register == R.userCtrl {
            if value & R.fifoEnable != 0 { fifo.start(at: clock(), rate: sampleRate) } else { fifo.stop() }
        }
        if bank == 3 && register == R.i2cSlv4Ctrl && value & R.slvEnable != 0 { runSlave4() }
    }

    /// I2C_SLV4: one transaction on the aux bus, then SLV4_DONE (or SLV4_NACK) in I2C_MST_STATUS.
    private func runSlave4() {
        banks[3][Int(R.i2cSlv4Ctrl)] &= ~R.slvEnable
        let addr = banks[3][Int(R.i2cSlv4Addr)]
        guard masterOn, auxiliaryBusAnswers, addr & 0x7F == ICM20948Driver.AK09916.address else {
            banks[0][Int(R.i2cMstStatus)] |= R.slv4Nack | R.slv4Done
            return
        }
        let reg = banks[3][Int(R.i2cSlv4Reg)]
        if addr & R.slvRead != 0 {
            banks[3][Int(R.i2cSlv4DI)] = auxRead(reg)
        } else {
            ak09916.writeRegister(reg, banks[3][Int(R.i2cSlv4DO)])
        }
        banks[0][Int(R.i2cMstStatus)] |= R.slv4Done
    }

    private func auxRead(_ reg: UInt8) -> UInt8 {
        if Int(reg) >= 0x10 && reg <= 0x18 { ak09916.latch() }
        return ak09916.readRegister(reg)
    }

    /// FIFO_R_W does not advance: a burst there keeps draining the FIFO.
    public override func nextRegister(after register: UInt8) -> UInt8 {
        bank == 0 && register == R.fifoRW ? register : register &+ 1
    }

    private func advanceFIFO() {
        fifo.whenFull = banks[0][Int(R.fifoMode)] & 1 != 0 ? .stop : .overwriteBytes
        fifo.advance(to: clock(), rate: sampleRate) { [unowned self] t in self.fifoFrame(at: t) }
        banks[0][Int(R.fifoCountH)] = UInt8(fifo.count >> 8 & 0x1F)
        banks[0][Int(R.fifoCountH) + 1] = UInt8(fifo.count & 0xFF)
    }

    /// One sample as FIFO_EN_2 selects it, in register order: accel, gyro X/Y/Z, temp.
    func fifoFrame(at time: Double) -> [UInt8] {
        let en = banks[0][Int(R.fifoEn2)]
        let t = chipTruth(at: time)
        var out: [UInt8] = []
        if en & 0x10 != 0 {
            SimulatedFIFO.append(t.accel, perCount: IMUConvert.invensenseAccelScale(accelRange), to: &out, bigEndian: true)
        }
        let g = IMUConvert.invensenseGyroScale(gyroRange)
        for (bit, v) in [(UInt8(0x02), t.gyro.x), (0x04, t.gyro.y), (0x08, t.gyro.z)] where en & bit != 0 {
            SimulatedFIFO.append(IMUConvert.counts(v, perCount: g), to: &out, bigEndian: true)
        }
        if en & 0x01 != 0 { SimulatedFIFO.append(Int16(((temperature - 21) * 333.87).rounded()), to: &out, bigEndian: true) }
        return out
    }

    public override func transfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws {
        if fifo.running { advanceFIFO() }
        if read.count > 0, bank == 0, let start = write.first,
            start == R.intStatus1 || (R.accelXoutH...0x52).contains(start)
        {
            latch()
        }
        try super.transfer(write: write, read: read)
    }

    func latch() {
        guard !asleep, takeNewSample(rate: sampleRate) else { return }
        let t = chipTruth()
        let accelAt = Int(R.accelXoutH)
        let perA = IMUConvert.invensenseAccelScale(accelRange), perG = IMUConvert.invensenseGyroScale(gyroRange)
        for (i, v) in [t.accel.x, t.accel.y, t.accel.z].enumerated() {
            storeBank0(IMUConvert.counts(v, perCount: perA), at: accelAt + 2 * i)
        }
        for (i, v) in [t.gyro.x, t.gyro.y, t.gyro.z].enumerated() {
            storeBank0(IMUConvert.counts(v, perCount: perG), at: accelAt + 6 + 2 * i)
        }
        storeBank0(Int16(((temperature - 21) * 333.87).rounded()), at: accelAt + 12)
        // The master's SLV0 read, in step with the sample.
        let ctrl = banks[3][Int(R.i2cSlv0Ctrl)]
        let addr = banks[3][Int(R.i2cSlv0Addr)]
        if masterOn, ctrl & R.slvEnable != 0, addr == R.slvRead | ICM20948Driver.AK09916.address {
            let reg = banks[3][Int(R.i2cSlv0Reg)]
            for i in 0..<Int(ctrl & 0x0F) { banks[0][Int(R.extSlvSensData00) + i] = auxRead(reg &+ UInt8(i)) }
        }
        dataReadyLatched = true
    }

    private func storeBank0(_ v: Int16, at reg: Int) {
        let u = UInt16(bitPattern: v)
        banks[0][reg] = UInt8(u >> 8)
        banks[0][reg + 1] = UInt8(u & 0xFF)
    }
}

extension ICM20948Driver: SimulatedIMUModel {
    /// The AK09916 sits on the chip's auxiliary bus: visible at 0x0C only in bypass.
    public func simulatedBoard(
        on bus: SimulatedI2CBus, address: UInt8, truth: @escaping IMUTruthSource, mounting: AxisMap,
        clock: @escaping () -> Double
    ) -> SimulatedIMUBoard {
        let icm = SimulatedICM20948(truth: truth, clock: clock, mounting: mounting)
        bus.attach(icm.ak09916, at: ICM20948Driver.AK09916.address)
        return SimulatedIMUBoard(chip: identity.name, address: address, imu: icm, magnetometer: icm.ak09916)
    }
}
