#if canImport(Glibc)
import Glibc
#endif
import OSHCore
import OSHPlatform

/// An LPS22HB on the simulated bus, modelled from the datasheet's register map (§8–9):
/// WHO_AM_I 0x0F = 0xB1, CTRL_REG1 (ODR, low-pass, BDU), CTRL_REG2 (reset 0x10: IF_ADD_INC; BOOT
/// and SWRESET self-clear — they still read set once after being written; ONE_SHOT), RES_CONF,
/// STATUS (P_DA/T_DA, cleared by reading PRESS_OUT_H / TEMP_OUT_H) and the output registers.
/// The register pointer auto-increments only while IF_ADD_INC is set. Conversions run when an
/// ODR is selected, on ONE_SHOT, and (at a non-zero ODR) at each read of STATUS.
public final class SimulatedLPS22HB: RegisterMapDevice {
    public var fixedRaw: LPS22HBRaw?
    public var environment: BarometerEnvironment?
    public private(set) var conversions = 0
    public private(set) var resets = 0
    public private(set) var boots = 0
    /// Reads of CTRL_REG2 left that still show BOOT/SWRESET set.
    private var selfClearReads = 0

    public init() {
        super.init(registers: [LPS22HBDriver.regWhoAmI: 0xB1])
        softReset()
    }

    private func softReset() {
        for r in [0x0B, 0x0C, 0x10, 0x12, 0x1A, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C] { registers[r] = 0 }
        registers[Int(LPS22HBDriver.regCtrl2)] = LPS22HBDriver.ctrl2AutoIncrement
    }

    private var odr: UInt8 { (registers[Int(LPS22HBDriver.regCtrl1)] >> 4) & 0b111 }

    public override func nextRegister(after register: UInt8) -> UInt8 {
        registers[Int(LPS22HBDriver.regCtrl2)] & LPS22HBDriver.ctrl2AutoIncrement != 0 ? register &+ 1 : register
    }

    public override func writeRegister(_ register: UInt8, _ value: UInt8) {
        switch register {
        case LPS22HBDriver.regCtrl2:
            if value & LPS22HBDriver.ctrl2SoftReset != 0 {
                resets += 1
                softReset()
            }
            if value & LPS22HBDriver.ctrl2Boot != 0 { boots += 1 }
            registers[Int(register)] = value & ~0x01
            if value & (LPS22HBDriver.ctrl2SoftReset | LPS22HBDriver.ctrl2Boot) != 0 { selfClearReads = 1 }
            if value & 0x01 != 0 && odr == 0 { convert() }  // ONE_SHOT
        case LPS22HBDriver.regCtrl1:
            registers[Int(register)] = value
            if odr != 0 { convert() }
        case 0x0B, 0x0C, 0x12, 0x14, 0x15, 0x16, 0x17, LPS22HBDriver.regResConf:
            registers[Int(register)] = value
        default: return  // WHO_AM_I, status, outputs: read-only
        }
    }

    public override func readRegister(_ register: UInt8) -> UInt8 {
        switch register {
        case LPS22HBDriver.regCtrl2:
            if selfClearReads > 0 {
                selfClearReads -= 1
            } else {
                registers[Int(register)] &= ~(LPS22HBDriver.ctrl2SoftReset | LPS22HBDriver.ctrl2Boot)
            }
            return registers[Int(register)]
        case LPS22HBDriver.regStatus:
            if odr != 0 { convert() }
            return registers[Int(register)]
        case 0x2A:
            registers[Int(LPS22HBDriver.regStatus)] &= ~LPS22HBDriver.statusPressureAvailable
            return registers[Int(register)]
        case 0x2C:
            registers[Int(LPS22HBDriver.regStatus)] &= ~LPS22HBDriver.statusTemperatureAvailable
            return registers[Int(register)]
        default: return registers[Int(register)]
        }
    }

    public func convert() {
        var raw = LPS22HBRaw(pressure: 0, temperature: 0)
        if let f = fixedRaw {
            raw = f
        } else if let env = environment {
            let e = saneEnvironment(env())
            let p = (min(max(e.hPa, 260), 1260) * LPS22HBRaw.lsbPerHPa).rounded()
            let t = (min(max(e.celsius, -40), 85) * LPS22HBRaw.lsbPerCelsius).rounded()
            raw = LPS22HBRaw(pressure: Int32(p), temperature: Int16(t))
        }
        load(raw.burst, at: LPS22HBRaw.register)
        registers[Int(LPS22HBDriver.regStatus)] = LPS22HBDriver.statusPressureAvailable | LPS22HBDriver.statusTemperatureAvailable
        conversions += 1
    }
}

extension LPS22HBDriver: SimulatedBarometerModel {
    public func simulatedDevice(environment: BarometerEnvironment?) throws -> RegisterMapDevice {
        let d = SimulatedLPS22HB()
        d.environment = environment
        return d
    }
}
