import OSHCore
import OSHPlatform

/// A BMP388 or BMP390 on the simulated bus, modelled from the datasheet's register map (§4.3):
/// CHIP_ID 0x00, ERR_REG 0x02 (clear on read), STATUS 0x03 (cmd_rdy, drdy_press/drdy_temp, which
/// clear when a pressure / temperature data register is read), DATA 0x04–0x09 (0x800000 until the
/// first conversion), PWR_CTRL, OSR (reset 0x02), ODR, CONFIG, calibration 0x31–0x45 (read-only),
/// CMD 0x7E (0xB6 soft reset; an unknown command sets cmd_err). Normal mode with an ODR period
/// shorter than the conversion time is refused with conf_err, as the chip does. Conversions
/// produce `fixedRaw` or the codes that compensate to `environment()`.
public final class SimulatedBMP3: RegisterMapDevice {
    public let chipID: UInt8
    public let calibration: BMP3Calibration
    public var fixedRaw: BMP3Raw?
    public var environment: BarometerEnvironment?
    public private(set) var conversions = 0
    public private(set) var resets = 0
    private var drdy: UInt8 = 0

    public init(chipID: UInt8, calibration: [UInt8]) throws {
        self.chipID = chipID
        self.calibration = try BMP3Calibration(registers: calibration)
        super.init(registers: [BMP3Driver.regID: chipID, 0x01: 0x01])
        load(calibration, at: BMP3Calibration.register)
        powerOnReset()
    }

    private func powerOnReset() {
        registers[Int(BMP3Driver.regErr)] = 0
        registers[Int(BMP3Driver.regPwrCtrl)] = 0
        registers[Int(BMP3Driver.regOSR)] = 0x02
        registers[Int(BMP3Driver.regODR)] = 0
        registers[Int(BMP3Driver.regConfig)] = 0
        load([0, 0, 0x80, 0, 0, 0x80], at: BMP3Raw.register)
        drdy = 0
    }

    private var normalMode: Bool { registers[Int(BMP3Driver.regPwrCtrl)] & 0x30 == 0x30 }

    public override func writeRegister(_ register: UInt8, _ value: UInt8) {
        switch register {
        case BMP3Driver.regCmd:
            switch value {
            case BMP3Driver.softReset:
                resets += 1
                powerOnReset()
            case 0x00, 0xB0: break  // nop, fifo_flush
            default: registers[Int(BMP3Driver.regErr)] |= BMP3Driver.errCmd
            }
        case BMP3Driver.regPwrCtrl:
            let mode = value & 0x30
            if mode == 0x30 {
                let osr = registers[Int(BMP3Driver.regOSR)]
                let conv = BMP3Driver.conversionMicroseconds(p: osr & 0b111, t: (osr >> 3) & 0b111)
                let periodMicroseconds = 5000 * Double(1 << Int(registers[Int(BMP3Driver.regODR)] & 0x1F))
                if conv > periodMicroseconds {
                    registers[Int(BMP3Driver.regErr)] |= BMP3Driver.errConf
                    registers[Int(register)] = value & 0x03  // stays in sleep
                    return
                }
                registers[Int(register)] = value
                convert()
            } else if mode != 0 {
                registers[Int(register)] = value & 0x03
                convert()  // forced: one conversion, then sleep
            } else {
                registers[Int(register)] = value
            }
        case BMP3Driver.regOSR, BMP3Driver.regODR, BMP3Driver.regConfig, 0x15...0x1A:
            registers[Int(register)] = value
        default: return  // ID, status, data, calibration and reserved registers are read-only
        }
    }

    public override func readRegister(_ register: UInt8) -> UInt8 {
        switch register {
        case BMP3Driver.regErr:
            let v = registers[Int(register)]
            registers[Int(register)] = 0
            return v
        case BMP3Driver.regStatus:
            if normalMode { convert() }
            return BMP3Driver.statusCmdReady | drdy
        case 0x04...0x06:
            drdy &= ~BMP3Driver.statusPressureReady
            return registers[Int(register)]
        case 0x07...0x09:
            drdy &= ~BMP3Driver.statusTemperatureReady
            return registers[Int(register)]
        default: return registers[Int(register)]
        }
    }

    public func convert() {
        var raw = BMP3Raw(pressure: BMP3Driver.notMeasured, temperature: BMP3Driver.notMeasured)
        if let f = fixedRaw {
            raw = f
        } else if let env = environment {
            let e = saneEnvironment(env())
            let r = calibration.raw(celsius: min(max(e.celsius, -40), 85), hPa: min(max(e.hPa, 300), 1250))
            raw = BMP3Raw(pressure: r.pressure, temperature: r.temperature)
        }
        let pwr = registers[Int(BMP3Driver.regPwrCtrl)]
        if pwr & 0x01 == 0 { raw.pressure = BMP3Driver.notMeasured }
        if pwr & 0x02 == 0 { raw.temperature = BMP3Driver.notMeasured }
        load(raw.burst, at: BMP3Raw.register)
        drdy = (pwr & 0x01 != 0 ? BMP3Driver.statusPressureReady : 0) | (pwr & 0x02 != 0 ? BMP3Driver.statusTemperatureReady : 0)
        conversions += 1
    }
}

extension BMP3Driver: SimulatedBarometerModel {
    /// elixir-sensors' BMP388 calibration, with this chip's ID.
    public func simulatedDevice(environment: BarometerEnvironment?) throws -> RegisterMapDevice {
        let d = try SimulatedBMP3(chipID: identity.idValues[0], calibration: SimulatedBarometerBoard.bmp3Calibration)
        d.environment = environment
        return d
    }
}
