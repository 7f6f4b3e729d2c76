import OSHCore
import OSHPlatform

/// MPU-6050 / MPU-6500 / MPU-9250 register map. The MPU-9250's AK8963 is a separate simulated
/// chip at 0x0C that answers only while this chip is in bypass mode (INT_PIN_CFG.BYPASS_EN = 1
/// and the I²C master off), as on the real part.
public final class SimulatedMPU: SimulatedIMUChip {
    public let variant: MPUDriver.Variant
    public private(set) var ak8963: SimulatedAKMagnetometer?
    /// DEVICE_RESET pulses seen (a test asserts the driver resets the chip).
    public private(set) var resets = 0
    private var dataReadyLatched = false
    /// The hardware FIFO (1024 bytes on the 6050, 512 on the 6500/9250).
    public let fifo: SimulatedFIFO

    public init(variant: MPUDriver.Variant, truth: @escaping IMUTruthSource, clock: @escaping () -> Double, mounting: AxisMap = .identity) {
        self.variant = variant
        fifo = SimulatedFIFO(capacity: variant == .mpu6050 ? 1024 : 512, whenFull: .overwriteBytes)
        super.init(registers: [:], truth: truth, clock: clock, mounting: mounting)
        if variant == .mpu9250 {
            let ak = SimulatedAKMagnetometer(model: .ak8963, truth: truth, clock: clock, mounting: mounting)
            ak.reachable = { [unowned self] in
                self.registers[Int(MPUDriver.Reg.intPinCfg)] & MPUDriver.Reg.bypassEnable != 0
                    && self.registers[Int(MPUDriver.Reg.userCtrl)] & MPUDriver.Reg.i2cMasterEnable == 0
            }
            ak8963 = ak
        }
        powerOnReset()
    }

    public var whoAmI: UInt8 {
        switch variant {
        case .mpu6050: return 0x68;
        case .mpu6500: return 0x70;
        case .mpu9250: return 0x71
        }
    }

    /// Register defaults: all zero but PWR_MGMT_1 (0x40 asleep on the 6050; 0x01 on the 6500/9250) and WHO_AM_I.
    public func powerOnReset() {
        for i in registers.indices { registers[i] = 0 }
        registers[Int(MPUDriver.Reg.pwrMgmt1)] = variant == .mpu6050 ? 0x40 : 0x01
        registers[Int(MPUDriver.Reg.whoAmI)] = whoAmI
        dataReadyLatched = false
        fifo.stop()
        fifo.clear()
        forgetSamples()
    }

    var asleep: Bool { registers[Int(MPUDriver.Reg.pwrMgmt1)] & MPUDriver.Reg.sleep != 0 }

    /// The sample rate the configuration gives: 1 kHz (DLPF on) or 8 kHz, over 1 + SMPLRT_DIV.
    public var sampleRate: Double {
        let dlpf = registers[Int(MPUDriver.Reg.config)] & 0x07
        let base = (dlpf == 0 || dlpf == 7) ? 8000.0 : 1000.0
        return base / (1 + Double(registers[Int(MPUDriver.Reg.smplrtDiv)]))
    }

    public var accelRange: AccelRange {
        AccelRange.allCases[Int(registers[Int(MPUDriver.Reg.accelConfig)] >> 3 & 3)]
    }

    public var gyroRange: GyroRange {
        GyroRange.allCases[Int(registers[Int(MPUDriver.Reg.gyroConfig)] >> 3 & 3)]
    }

    public override func writeRegister(_ register: UInt8, _ value: UInt8) {
        if register == MPUDriver.Reg.pwrMgmt1, value & MPUDriver.Reg.deviceReset != 0 {
            resets += 1
            powerOnReset()  // the reset bit clears itself
            return
        }
        if register == MPUDriver.Reg.userCtrl {
            if value & MPUDriver.Reg.fifoReset != 0 { fifo.clear() }
            if value & MPUDriver.Reg.fifoEnable != 0 { fifo.start(at: clock(), rate: sampleRate) } else { fifo.stop() }
            super.writeRegister(register, value & ~MPUDriver.Reg.fifoReset)  // the reset bit clears itself
            return
        }
        switch register {
        case MPUDriver.Reg.whoAmI, MPUDriver.Reg.intStatus, 0x3B...0x48, 0x72...0x74: return  // read-only
        case MPUDriver.Reg.accelConfig2 where variant == .mpu6050: return  // not on the 6050
        default: super.writeRegister(register, value)
        }
    }

    public override func readRegister(_ register: UInt8) -> UInt8 {
        if register == MPUDriver.Reg.intStatus {
            // Cleared by reading.
            let v: UInt8 = (dataReadyLatched ? MPUDriver.Reg.dataReady : 0) | (fifo.overflowed ? MPUDriver.Reg.fifoOverflow : 0)
            dataReadyLatched = false
            fifo.clearOverflow()
            return v
        }
        if register == MPUDriver.Reg.fifoRW { return fifo.pop() }
        return super.readRegister(register)
    }

    /// FIFO_R_W does not advance: a burst there keeps draining the FIFO.
    public override func nextRegister(after register: UInt8) -> UInt8 {
        register == MPUDriver.Reg.fifoRW ? register : register &+ 1
    }

    /// FIFO_MODE (6500/9250) picks stop-when-full; otherwise the oldest bytes are overwritten.
    private func advanceFIFO() {
        let stop = variant != .mpu6050 && registers[Int(MPUDriver.Reg.config)] & MPUDriver.Reg.fifoMode != 0
        fifo.whenFull = stop ? .stop : .overwriteBytes
        fifo.advance(to: clock(), rate: sampleRate) { [unowned self] t in self.fifoFrame(at: t) }
        let n = UInt16(fifo.count)
        registers[0x72] = UInt8(n >> 8)
        registers[0x73] = UInt8(n & 0xFF)
    }

    /// One sample as the FIFO_EN bits select it, in register order: accel, temp, gyro X/Y/Z.
    func fifoFrame(at time: Double) -> [UInt8] {
        let en = registers[Int(MPUDriver.Reg.fifoEn)]
        let t = chipTruth(at: time)
        var out: [UInt8] = []
        if en & MPUDriver.Reg.fifoAccel != 0 {
            SimulatedFIFO.append(t.accel, perCount: IMUConvert.invensenseAccelScale(accelRange), to: &out, bigEndian: true)
        }
        if en & MPUDriver.Reg.fifoTemp != 0 { SimulatedFIFO.append(temperatureCounts, to: &out, bigEndian: true) }
        let g = IMUConvert.invensenseGyroScale(gyroRange)
        for (bit, v) in [(UInt8(0x40), t.gyro.x), (0x20, t.gyro.y), (0x10, t.gyro.z)] where en & bit != 0 {
            SimulatedFIFO.append(IMUConvert.counts(v, perCount: g), to: &out, bigEndian: true)
        }
        return out
    }

    var temperatureCounts: Int16 {
        let tempRaw = variant == .mpu6050 ? (temperature - 36.53) * 340 : (temperature - 21) * 333.87
        return Int16(max(-32768, min(32767, tempRaw.rounded())))
    }

    public override func transfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws {
        if fifo.running { advanceFIFO() }
        if read.count > 0, let start = write.first, (MPUDriver.Reg.intStatus...0x48).contains(start) { latch() }
        try super.transfer(write: write, read: read)
    }

    /// A new sample, if the configured rate says one is due and the chip is awake.
    func latch() {
        guard !asleep, takeNewSample(rate: sampleRate) else { return }
        let t = chipTruth()
        store(t.accel, perCount: IMUConvert.invensenseAccelScale(accelRange), at: 0x3B, bigEndian: true)
        store(temperatureCounts, at: 0x41, bigEndian: true)
        store(t.gyro, perCount: IMUConvert.invensenseGyroScale(gyroRange), at: 0x43, bigEndian: true)
        dataReadyLatched = true
    }
}

extension MPUDriver: SimulatedIMUModel {
    /// The MPU-9250's AK8963 answers at 0x0C (in bypass mode, as on the real part).
    public func simulatedBoard(
        on bus: SimulatedI2CBus, address: UInt8, truth: @escaping IMUTruthSource, mounting: AxisMap,
        clock: @escaping () -> Double
    ) -> SimulatedIMUBoard {
        let mpu = SimulatedMPU(variant: variant, truth: truth, clock: clock, mounting: mounting)
        if let ak = mpu.ak8963 { bus.attach(ak, at: MPUDriver.AK8963.address) }
        return SimulatedIMUBoard(chip: identity.name, address: address, imu: mpu, magnetometer: mpu.ak8963)
    }
}
