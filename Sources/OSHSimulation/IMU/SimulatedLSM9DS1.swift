import OSHCore
import OSHPlatform

/// LSM9DS1 accelerometer/gyroscope: WHO_AM_I 0x68 at 0x0F, CTRL_REG8.SW_RESET (clears itself),
/// auto-increment while CTRL_REG8.IF_ADD_INC is set (the default) with the burst rollover of
/// the two sensors (OUT_Z_H_G 1Dh → OUT_X_L_XL 28h, OUT_Z_H_XL 2Dh → OUT_X_L_G 18h), little-endian
/// data, STATUS_REG data-ready bits, and the 32-slot FIFO whose oldest slot the output
/// registers show in FIFO mode (reading OUT_Z_H_XL moves the next one in).
public final class SimulatedLSM9DS1: SimulatedIMUChip {
    typealias R = LSM9DS1Driver.Reg
    public private(set) var resets = 0
    /// Slots of 12 bytes (gyro then accel); continuous mode drops the oldest whole slot.
    public let fifo = SimulatedFIFO(capacity: R.fifoDepth * R.fifoSlotBytes, whenFull: .overwriteWords(R.fifoSlotBytes))
    /// Slots read out whole (OUT_Z_H_XL reached) since the model was made.
    public private(set) var slotsRead = 0
    private var slot = [UInt8](repeating: 0, count: R.fifoSlotBytes)
    private var slotLoaded = false
    /// The first slot after the FIFO starts is no valid sample (modelled as zeros): the
    /// datasheets ask the first sample after switching into FIFO mode to be discarded.
    private var firstSlotPending = false
    private var statusLatched: UInt8 = 0

    public init(truth: @escaping IMUTruthSource, clock: @escaping () -> Double, mounting: AxisMap = .identity) {
        super.init(registers: [:], truth: truth, clock: clock, mounting: mounting)
        powerOnReset()
    }

    public func powerOnReset() {
        for i in registers.indices { registers[i] = 0 }
        registers[Int(R.whoAmI)] = R.whoAmIValue
        registers[Int(R.ctrlReg8)] = R.ifAddInc
        statusLatched = 0
        fifo.stop()
        fifo.clear()
        slotLoaded = false
        forgetSamples()
    }

    public var gyroOn: Bool { registers[Int(R.ctrlReg1G)] >> 5 != 0 }

    /// The output rate: the gyro's ODR while it runs (the accelerometer follows it), else the accelerometer's own.
    public var rate: Double {
        if gyroOn {
            let code = registers[Int(R.ctrlReg1G)] >> 5
            return LSM9DS1Driver.odr.first { $0.code == code }?.hz ?? 0
        }
        let rates = [0, 10, 50, 119, 238, 476, 952, 0.0]
        return rates[Int(registers[Int(R.ctrlReg6XL)] >> 5)]
    }

    public var accelRange: AccelRange {
        let code = registers[Int(R.ctrlReg6XL)] >> 3 & 3
        return AccelRange.allCases.first { $0.lsm9ds1Code == code } ?? .g2
    }

    /// nil for FS_G 10, which the chip does not have.
    public var gyroRange: GyroRange? {
        let code = registers[Int(R.ctrlReg1G)] >> 3 & 3
        return GyroRange.allCases.first { $0.lsm9ds1Code == code }
    }

    /// The accelerometer's anti-aliasing bandwidth (Hz) that BW_XL selects; nil while BW_SCAL_ODR
    /// is clear (then the ODR sets it, which the driver never leaves it to).
    public var accelBandwidth: Double? {
        let r = registers[Int(R.ctrlReg6XL)]
        guard r & R.bwScalODR != 0 else { return nil }
        return LSM9DS1Driver.accelBandwidth.first { $0.code == r & 3 }?.hz
    }

    /// FIFO_EN with a mode other than bypass.
    public var fifoMode: UInt8? {
        let mode = registers[Int(R.fifoCtrl)] >> 5
        return registers[Int(R.ctrlReg9)] & R.fifoEnable != 0 && mode != 0 ? mode : nil
    }

    public override func nextRegister(after register: UInt8) -> UInt8 {
        guard registers[Int(R.ctrlReg8)] & R.ifAddInc != 0 else { return register }
        if register == R.outXLG + 5, gyroOn { return R.outXLXL }
        if register == R.outXLXL + 5 { return gyroOn ? R.outXLG : R.outXLXL }
        return register &+ 1
    }

    public override func writeRegister(_ register: UInt8, _ value: UInt8) {
        if register == R.ctrlReg8 && value & R.swReset != 0 {
            resets += 1
            powerOnReset()
            return
        }
        // WHO_AM_I, temperature, status, data and FIFO_SRC are read-only.
        if register == R.whoAmI || (0x15...0x1D).contains(register) || (0x26...0x2D).contains(register) || register == R.fifoSrc { return }
        super.writeRegister(register, value)
        if register == R.fifoCtrl || register == R.ctrlReg9 {
            if fifoMode == nil {
                // Bypass (or FIFO_EN off) empties it.
                fifo.stop()
                fifo.clear()
                slotLoaded = false
            } else if !fifo.running {
                fifo.start(at: clock(), rate: rate)
                firstSlotPending = true
            }
        }
    }

    public override func readRegister(_ register: UInt8) -> UInt8 {
        switch register {
        case R.statusReg, 0x27:
            let v = statusLatched
            statusLatched = 0
            return v
        case R.fifoSrc:
            let unread = fifo.count / R.fifoSlotBytes + (slotLoaded ? 1 : 0)
            return UInt8(min(unread, R.fifoDepth)) | (fifo.overflowed ? R.fifoOverrun : 0)
        case R.outXLG...(R.outXLG + 5), R.outXLXL...(R.outXLXL + 5):
            guard fifoMode != nil else { return super.readRegister(register) }
            if !slotLoaded, fifo.count >= R.fifoSlotBytes {
                for i in slot.indices { slot[i] = fifo.pop() }
                slotLoaded = true
            }
            let i = register >= R.outXLXL ? Int(register - R.outXLXL) + 6 : Int(register - R.outXLG)
            if register == R.outXLXL + 5, slotLoaded {
                slotLoaded = false
                slotsRead += 1
            }
            return slot[i]
        default:
            return super.readRegister(register)
        }
    }

    public override func transfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws {
        if let mode = fifoMode {
            fifo.whenFull = mode == 0x01 ? .stop : .overwriteWords(R.fifoSlotBytes)
            fifo.advance(to: clock(), rate: rate) { [unowned self] t in self.fifoSlot(at: t) }
        } else if read.count > 0, let start = write.first, (0x15...0x2D).contains(start) {
            latch()
        }
        try super.transfer(write: write, read: read)
    }

    func fifoSlot(at time: Double) -> [UInt8] {
        if firstSlotPending {
            firstSlotPending = false
            return [UInt8](repeating: 0, count: R.fifoSlotBytes)
        }
        let t = chipTruth(at: time)
        var out: [UInt8] = []
        out.reserveCapacity(R.fifoSlotBytes)
        SimulatedFIFO.append(t.gyro, perCount: IMUConvert.lsm9ds1GyroScale(gyroRange ?? .dps250), to: &out, bigEndian: false)
        SimulatedFIFO.append(t.accel, perCount: IMUConvert.lsm9ds1AccelScale(accelRange), to: &out, bigEndian: false)
        return out
    }

    func latch() {
        guard takeNewSample(rate: rate) else { return }
        let t = chipTruth()
        store(Int16(((temperature - 25) * 16).rounded()), at: Int(R.outTempL), bigEndian: false)
        store(t.gyro, perCount: IMUConvert.lsm9ds1GyroScale(gyroRange ?? .dps250), at: Int(R.outXLG), bigEndian: false)
        store(t.accel, perCount: IMUConvert.lsm9ds1AccelScale(accelRange), at: Int(R.outXLXL), bigEndian: false)
        statusLatched = R.xlda | R.gda | 0x04
    }
}

extension LSM9DS1Driver: SimulatedIMUModel {
    /// As on the Sense HAT: the accel/gyro at 0x6A and the magnetometer die at 0x1C; at 0x6B
    /// (SDO_A/G high) the die goes to 0x1E, as on the breakouts that pull both SDO pins high.
    public func simulatedBoard(
        on bus: SimulatedI2CBus, address: UInt8, truth: @escaping IMUTruthSource, mounting: AxisMap,
        clock: @escaping () -> Double
    ) -> SimulatedIMUBoard {
        let ag = SimulatedLSM9DS1(truth: truth, clock: clock, mounting: mounting)
        let m = SimulatedLIS3MDL(truth: truth, clock: clock, mounting: mounting, model: .lsm9ds1)
        let lis = SeparateMagnetometer.lis3mdl.addresses
        bus.attach(m, at: address == identity.addresses[1] ? lis[1] : lis[0])
        return SimulatedIMUBoard(chip: identity.name, address: address, imu: ag, magnetometer: m)
    }
}
