import OSHCore
import OSHPlatform

/// LSM6DSOX: WHO_AM_I 0x6C, software reset in CTRL3_C, register auto-increment only while
/// CTRL3_C.IF_INC is set (the default), data registers little-endian, STATUS_REG data-ready bits.
public final class SimulatedLSM6DSOX: SimulatedIMUChip {
    typealias R = LSM6DSOXDriver.Reg
    public private(set) var resets = 0
    private var statusLatched: UInt8 = 0

    public init(truth: @escaping IMUTruthSource, clock: @escaping () -> Double, mounting: AxisMap = .identity) {
        super.init(registers: [:], truth: truth, clock: clock, mounting: mounting)
        powerOnReset()
    }

    public func powerOnReset() {
        for i in registers.indices { registers[i] = 0 }
        registers[Int(R.whoAmI)] = 0x6C
        registers[Int(R.ctrl3C)] = R.ifInc
        statusLatched = 0
        forgetSamples()
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

    public override func nextRegister(after register: UInt8) -> UInt8 {
        registers[Int(R.ctrl3C)] & R.ifInc != 0 ? register &+ 1 : register
    }

    public override func writeRegister(_ register: UInt8, _ value: UInt8) {
        if register == R.ctrl3C && value & R.swReset != 0 {
            resets += 1
            powerOnReset()
            return
        }
        if register == R.whoAmI || (R.statusReg...0x2D).contains(register) { return }
        super.writeRegister(register, value)
    }

    public override func readRegister(_ register: UInt8) -> UInt8 {
        if register == R.statusReg {
            let v = statusLatched
            statusLatched = 0
            return v
        }
        return super.readRegister(register)
    }

    public override func transfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws {
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
/// CTRL_REG2, soft reset, and the ST rule that a multi-byte access needs SUB(7) = 1.
public final class SimulatedLIS3MDL: SimulatedIMUChip {
    typealias R = LSM6DSOXDriver.LIS3MDL
    public private(set) var resets = 0
    private var autoIncrement = false
    private var ready = false

    public init(truth: @escaping IMUTruthSource, clock: @escaping () -> Double, mounting: AxisMap = .identity) {
        super.init(registers: [:], truth: truth, clock: clock, mounting: mounting)
        powerOnReset()
    }

    public func powerOnReset() {
        for i in registers.indices { registers[i] = 0 }
        registers[Int(R.whoAmI)] = R.whoAmIValue
        registers[Int(R.ctrlReg1)] = 0x10
        registers[Int(R.ctrlReg3)] = 0x03 // power-down
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
        if register == R.whoAmI || (R.statusReg...0x2F).contains(register) { return }
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
        store(chipTruth().mag, perCount: IMUConvert.lis3mdlScale(range), at: 0x28, bigEndian: false)
        ready = true
    }
}
