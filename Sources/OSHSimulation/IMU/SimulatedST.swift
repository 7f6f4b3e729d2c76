import OSHCore
import OSHPlatform

/// LSM6DSOX: WHO_AM_I 0x6C, software reset in CTRL3_C, register auto-increment only while
/// CTRL3_C.IF_INC is set (the default), data registers little-endian, STATUS_REG data-ready bits.
public final class SimulatedLSM6DSOX: SimulatedIMUChip {
    typealias R = LSM6DSOXDriver.Reg
    public private(set) var resets = 0
    private var statusLatched: UInt8 = 0
    /// The FIFO in 7-byte words (tag + data); a batch is a gyro word then an accel word.
    /// Capacity 9 KB ("up to 9 kbytes"); continuous mode drops the oldest whole words.
    public let fifo = SimulatedFIFO(capacity: 9 * 1024, whenFull: .overwriteWords(7))
    private var batch: UInt8 = 0
    private var word: [UInt8] = Array(repeating: 0, count: 7)

    public init(truth: @escaping IMUTruthSource, clock: @escaping () -> Double, mounting: AxisMap = .identity) {
        super.init(registers: [:], truth: truth, clock: clock, mounting: mounting)
        powerOnReset()
    }

    public func powerOnReset() {
        for i in registers.indices { registers[i] = 0 }
        registers[Int(R.whoAmI)] = 0x6C
        registers[Int(R.ctrl3C)] = R.ifInc
        statusLatched = 0
        fifo.stop()
        fifo.clear()
        forgetSamples()
    }

    /// Batch rate of the accelerometer (FIFO_CTRL3 BDR_XL, codes as the ODR's).
    public var batchRate: Double {
        let code = registers[Int(R.fifoCtrl3)] & 0x0F
        return LSM6DSOXDriver.odr.first { $0.code == code }?.hz ?? 0
    }

    private func advanceFIFO() {
        let mode = registers[Int(R.fifoCtrl4)] & 0x07
        fifo.whenFull = mode == 0x01 ? .stop : .overwriteWords(R.fifoWordBytes)
        fifo.advance(to: clock(), rate: batchRate) { [unowned self] t in self.fifoBatch(at: t) }
        let words = fifo.count / R.fifoWordBytes
        registers[Int(R.fifoStatus1)] = UInt8(words & 0xFF)
        registers[Int(R.fifoStatus1) + 1] = UInt8(words >> 8 & 0x03) | (fifo.overflowed ? R.fifoOverrun : 0)
    }

    /// A gyro word and an accel word with the batch's TAG_CNT (parity bit left 0).
    func fifoBatch(at time: Double) -> [UInt8] {
        let t = chipTruth(at: time)
        let cnt = batch << 1
        batch = (batch + 1) & 3
        var out: [UInt8] = [IMUFifoFrames.stGyroTag << 3 | cnt]
        SimulatedFIFO.append(t.gyro, perCount: IMUConvert.lsm6dsoxGyroScale(gyroRange), to: &out, bigEndian: false)
        out.append(IMUFifoFrames.stAccelTag << 3 | cnt)
        SimulatedFIFO.append(t.accel, perCount: IMUConvert.lsm6dsoxAccelScale(accelRange), to: &out, bigEndian: false)
        return out
    }

    public var accelODR: Double {
        let code = registers[Int(R.ctrl1XL)] >> 4
        return LSM6DSOXDriver.odr.first { $0.code == code }?.hz ?? 0
    }

    public var accelRange: AccelRange {
        let code = registers[Int(R.ctrl1XL)] >> 2 & 3
        return AccelRange.allCases.first { $0.lsm6dsoxCode == code } ?? .g2
    }

    public var gyroRange: GyroRange { GyroRange.allCases[Int(registers[Int(R.ctrl2G)] >> 2 & 3)] }

    /// After FIFO_DATA_OUT_Z_H (7Eh) the pointer rolls back to the tag (78h): one burst reads words.
    public override func nextRegister(after register: UInt8) -> UInt8 {
        if register == R.fifoDataOutTag + 6 { return R.fifoDataOutTag }
        return registers[Int(R.ctrl3C)] & R.ifInc != 0 ? register &+ 1 : register
    }

    public override func writeRegister(_ register: UInt8, _ value: UInt8) {
        if register == R.ctrl3C && value & R.swReset != 0 {
            resets += 1
            powerOnReset()
            return
        }
        if register == R.whoAmI || (R.statusReg...0x2D).contains(register) || (0x3A...0x3B).contains(register) || register >= 0x78 {
            return
        }
        super.writeRegister(register, value)
        if register == R.fifoCtrl4 {
            // Bypass empties it; any other mode with a batch rate runs it.
            if value & 0x07 == 0 { fifo.stop(); fifo.clear() } else { fifo.start(at: clock(), rate: batchRate) }
        }
    }

    public override func readRegister(_ register: UInt8) -> UInt8 {
        if register == R.statusReg {
            let v = statusLatched
            statusLatched = 0
            return v
        }
        if register == R.fifoDataOutTag {
            for i in 0..<R.fifoWordBytes { word[i] = fifo.pop() }
            return word[0]
        }
        if register > R.fifoDataOutTag, register <= R.fifoDataOutTag + 6 { return word[Int(register - R.fifoDataOutTag)] }
        return super.readRegister(register)
    }

    public override func transfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws {
        if fifo.running { advanceFIFO() }
        if read.count > 0, let start = write.first, (R.statusReg...0x2D).contains(start) { latch() }
        try super.transfer(write: write, read: read)
    }

    func latch() {
        guard takeNewSample(rate: accelODR) else { return }
        let t = chipTruth()
        store(Int16(((temperature - 25) * 256).rounded()), at: 0x20, bigEndian: false)
        store(t.gyro, perCount: IMUConvert.lsm6dsoxGyroScale(gyroRange), at: 0x22, bigEndian: false)
        store(t.accel, perCount: IMUConvert.lsm6dsoxAccelScale(accelRange), at: 0x28, bigEndian: false)
        statusLatched = R.xlda | R.gda | 0x04
    }
}

/// LIS3MDL: WHO_AM_I 0x3D, power-down until CTRL_REG3 selects continuous mode, full scale in
/// CTRL_REG2, soft reset, and the ST rule that a multi-byte access needs SUB(7) = 1. With
/// `model: .lsm9ds1` it is the LSM9DS1's magnetometer die: the same register map with the
/// LSM9DS1's sensitivities, its X axis reversed against the accel/gyro's, and no TEMP_OUT.
public final class SimulatedLIS3MDL: SimulatedIMUChip {
    typealias R = SeparateMagnetometer.LIS3MDL
    public let model: SeparateMagnetometer.Model
    public private(set) var resets = 0
    private var autoIncrement = false
    private var ready = false
    /// The last read-only register: OUT_Z_H (0x2D), or TEMP_OUT_H (0x2F) on the LIS3MDL.
    private let lastReadOnly: UInt8

    public init(
        truth: @escaping IMUTruthSource, clock: @escaping () -> Double, mounting: AxisMap = .identity,
        model: SeparateMagnetometer.Model = .lis3mdl
    ) {
        self.model = model
        lastReadOnly = model == .lis3mdl ? 0x2F : 0x2D
        super.init(registers: [:], truth: truth, clock: clock, mounting: mounting)
        powerOnReset()
    }

    public func powerOnReset() {
        for i in registers.indices { registers[i] = 0 }
        registers[Int(R.whoAmI)] = R.whoAmIValue
        registers[Int(R.ctrlReg1)] = 0x10
        registers[Int(R.ctrlReg3)] = 0x03  // power-down
        ready = false
        forgetSamples()
    }

    public var range: LIS3MDLRange { LIS3MDLRange.allCases[Int(registers[Int(R.ctrlReg2)] >> 5 & 3)] }

    /// Output data rate from CTRL_REG1.DO; 0 unless CTRL_REG3 selects continuous conversion.
    public var rate: Double {
        guard registers[Int(R.ctrlReg3)] & 0x03 == 0 else { return 0 }
        let rates = [0.625, 1.25, 2.5, 5, 10, 20, 40, 80]
        return rates[Int(registers[Int(R.ctrlReg1)] >> 2 & 7)]
    }

    public override func nextRegister(after register: UInt8) -> UInt8 { autoIncrement ? register &+ 1 : register }

    public override func writeRegister(_ register: UInt8, _ value: UInt8) {
        if register == R.ctrlReg2 && value & R.softReset != 0 {
            resets += 1
            powerOnReset()
            registers[Int(R.ctrlReg2)] = value & ~R.softReset
            return
        }
        if register == R.whoAmI || (R.statusReg...lastReadOnly).contains(register) { return }
        super.writeRegister(register, value)
    }

    public override func readRegister(_ register: UInt8) -> UInt8 {
        if register == R.statusReg {
            let v: UInt8 = ready ? R.zyxda : 0
            ready = false
            return v
        }
        return super.readRegister(register)
    }

    public override func transfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws {
        guard let first = write.first else { return try super.transfer(write: write, read: read) }
        // SUB(7) selects auto-increment; the register address is SUB(6:0).
        autoIncrement = first & 0x80 != 0
        let reg = first & 0x7F
        if read.count > 0, (R.statusReg...0x2D).contains(reg) { latch() }
        try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: write.count) { tmp in
            for i in 0..<write.count { tmp[i] = write[i] }
            tmp[0] = reg
            try super.transfer(write: UnsafeRawBufferPointer(tmp), read: read)
        }
    }

    func latch() {
        guard takeNewSample(rate: rate) else { return }
        store(model.fromHost(chipTruth().mag), perCount: model.scale(range), at: 0x28, bigEndian: false)
        ready = true
    }
}

extension LSM6DSOXDriver: SimulatedIMUModel {
    /// With a LIS3MDL beside it at its default address, as on Adafruit's 9-DoF pairing.
    public func simulatedBoard(
        on bus: SimulatedI2CBus, address: UInt8, truth: @escaping IMUTruthSource, mounting: AxisMap,
        clock: @escaping () -> Double
    ) -> SimulatedIMUBoard {
        let lsm = SimulatedLSM6DSOX(truth: truth, clock: clock, mounting: mounting)
        let lis = SimulatedLIS3MDL(truth: truth, clock: clock, mounting: mounting)
        bus.attach(lis, at: SeparateMagnetometer.lis3mdl.addresses[0])
        return SimulatedIMUBoard(chip: identity.name, address: address, imu: lsm, magnetometer: lis)
    }
}
