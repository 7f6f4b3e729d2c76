#if canImport(Glibc)
import Glibc
#endif
import OSHCore
import OSHPlatform

/// An LPS25H on the simulated bus, modelled from its datasheet's register map and AN4450:
/// WHO_AM_I 0x0F = 0xBD; RES_CONF (reset 0x05); CTRL_REG1 (PD, ODR, BDU); CTRL_REG2 (BOOT and
/// SWRESET self-clear — they still read set once after being written; FIFO_EN; ONE_SHOT);
/// FIFO_CTRL; STATUS (P_DA, T_DA, cleared by reading PRESS_OUT_H / TEMP_OUT_H) and the outputs.
/// The register address advances only when its MSB is set (0x80|reg), as the datasheet's I²C
/// section says; with the FIFO on, an advancing read wraps from PRESS_OUT_H back to PRESS_OUT_XL
/// (AN4450 §5.1: temperature is read apart from pressure then). Conversions run while powered
/// with an ODR, at each read of STATUS, and on ONE_SHOT. The FIFO's moving average is not
/// modelled (the other simulated chips leave out their filters too): a steady environment reads
/// the same either way.
public final class SimulatedLPS25H: RegisterMapDevice {
    public var fixedRaw: LPS25HRaw?
    public var environment: BarometerEnvironment?
    /// Off: a conversion happens only when `convert()` is called (tests of the first sample).
    public var autoConvert = true
    public private(set) var conversions = 0
    public private(set) var resets = 0
    public private(set) var boots = 0
    /// Reads of CTRL_REG2 left that still show BOOT/SWRESET set.
    private var selfClearReads = 0
    /// Whether the transaction's address had the auto-increment bit.
    private var advancing = false

    public init() {
        super.init(registers: [LPS25HDriver.regWhoAmI: 0xBD])
        softReset()
    }

    private func softReset() {
        for r in [0x08, 0x09, 0x0A, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x2E, 0x2F] { registers[r] = 0 }
        registers[Int(LPS25HDriver.regResConf)] = LPS25HDriver.resConfStandard
    }

    private var ctrl1: UInt8 { registers[Int(LPS25HDriver.regCtrl1)] }
    private var running: Bool { ctrl1 & LPS25HDriver.ctrl1PowerOn != 0 && (ctrl1 >> 4) & 0b111 != 0 }
    private var fifoOn: Bool { registers[Int(LPS25HDriver.regCtrl2)] & LPS25HDriver.ctrl2FifoEnable != 0 }

    public override func transfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws {
        guard let first = write.first else { return try super.transfer(write: write, read: read) }
        advancing = first & LPS25HDriver.autoIncrement != 0
        // The register map sees the 7-bit address; the bit only says whether it advances.
        try withUnsafeTemporaryAllocation(byteCount: write.count, alignment: 1) { w in
            w.copyMemory(from: write)
            w[0] = first & 0x7F
            try super.transfer(write: UnsafeRawBufferPointer(w), read: read)
        }
    }

    public override func nextRegister(after register: UInt8) -> UInt8 {
        guard advancing else { return register }
        if fifoOn && register == 0x2A { return LPS25HDriver.regPressOut }
        return (register &+ 1) & 0x7F
    }

    public override func writeRegister(_ register: UInt8, _ value: UInt8) {
        switch register {
        case LPS25HDriver.regCtrl2:
            if value & LPS25HDriver.ctrl2SoftReset != 0 {
                resets += 1
                softReset()
            }
            if value & LPS25HDriver.ctrl2Boot != 0 { boots += 1 }
            registers[Int(register)] = value & ~0x01
            if value & (LPS25HDriver.ctrl2SoftReset | LPS25HDriver.ctrl2Boot) != 0 { selfClearReads = 1 }
            if value & 0x01 != 0 && ctrl1 & LPS25HDriver.ctrl1PowerOn != 0 { convert() }  // ONE_SHOT
        case LPS25HDriver.regCtrl1:
            registers[Int(register)] = value
            if running && autoConvert { convert() }
        case 0x08, 0x09, 0x0A, LPS25HDriver.regResConf, 0x22, 0x23, 0x24, LPS25HDriver.regFifoCtrl, 0x30, 0x31, 0x39, 0x3A:
            registers[Int(register)] = value
        default: return  // WHO_AM_I, status, outputs: read-only
        }
    }

    public override func readRegister(_ register: UInt8) -> UInt8 {
        switch register {
        case LPS25HDriver.regCtrl2:
            if selfClearReads > 0 {
                selfClearReads -= 1
            } else {
                registers[Int(register)] &= ~(LPS25HDriver.ctrl2SoftReset | LPS25HDriver.ctrl2Boot)
            }
            return registers[Int(register)]
        case LPS25HDriver.regStatus:
            if running && autoConvert { convert() }
            return registers[Int(register)]
        case 0x2A:
            registers[Int(LPS25HDriver.regStatus)] &= ~LPS25HDriver.statusPressureAvailable
            return registers[Int(register)]
        case 0x2C:
            registers[Int(LPS25HDriver.regStatus)] &= ~LPS25HDriver.statusTemperatureAvailable
            return registers[Int(register)]
        default: return registers[Int(register)]
        }
    }

    public func convert() {
        var raw = LPS25HRaw(pressure: 0, temperature: 0)
        if let f = fixedRaw {
            raw = f
        } else if let env = environment {
            let e = saneEnvironment(env())
            raw = LPS25HRaw.registers(hPa: min(max(e.hPa, 260), 1260), celsius: e.celsius)
        }
        load(raw.burst, at: LPS25HRaw.register)
        registers[Int(LPS25HDriver.regStatus)] = LPS25HDriver.statusPressureAvailable | LPS25HDriver.statusTemperatureAvailable
        conversions += 1
    }
}

extension LPS25HDriver: SimulatedBarometerModel {
    public func simulatedDevice(environment: BarometerEnvironment?) throws -> RegisterMapDevice {
        let d = SimulatedLPS25H()
        d.environment = environment
        return d
    }
}
