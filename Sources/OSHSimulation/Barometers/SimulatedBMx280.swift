import OSHCore
import OSHPlatform

/// The weather a simulated barometer measures: called at each conversion.
public typealias BarometerEnvironment = () -> (hPa: Double, celsius: Double)

/// A BMP280 or BME280 on the simulated bus, modelled from the datasheet's register map (§5):
/// chip ID 0xD0, soft reset 0xE0 = 0xB6 (other values ignored), calibration in 0x88–0xA1 and
/// 0xE1–0xE7 (read-only), ctrl_hum / ctrl_meas / config, status (im_update while the NVM is
/// copied after a reset), and data registers that read 0x80000 until a conversion ran.
/// Conversions happen when ctrl_meas selects forced or normal mode and, in normal mode, at the
/// start of every burst from 0xF7; they produce `fixedRaw` (tests from register bytes) or the
/// raw codes that compensate to `environment()` (the compensation inverted), or nothing.
public final class SimulatedBMx280: RegisterMapDevice {
    public let chipID: UInt8
    public let hasHumidity: Bool
    public let calibration: BMP280Calibration
    public let humidityCalibration: BME280Calibration?
    /// Raw ADC values every conversion produces (takes precedence over `environment`).
    public var fixedRaw: BMx280Raw?
    public var environment: BarometerEnvironment?
    /// The humidity a BME280 reports when driven by `environment`.
    public var humidityPercent = 45.0
    public private(set) var conversions = 0
    public private(set) var resets = 0
    /// Status reads left that still show im_update after a reset.
    private var nvmCopyReads = 0
    /// ctrl_hum as latched by the last ctrl_meas write.
    private var latchedCtrlHum: UInt8 = 0

    /// `calibration`: 24 bytes of 0x88–0x9F (BMP280) or 26 of 0x88–0xA1 plus `humidity`, 7 of
    /// 0xE1–0xE7 (BME280). Throws when the bytes are not a valid calibration.
    public init(chipID: UInt8, calibration: [UInt8], humidity: [UInt8]? = nil) throws {
        self.chipID = chipID
        if let h = humidity {
            let c = try BME280Calibration(registers: calibration, humidity: h)
            (self.calibration, humidityCalibration, hasHumidity) = (c.tp, c, true)
        } else {
            self.calibration = try BMP280Calibration(registers: Array(calibration.prefix(BMP280Calibration.byteCount)))
            (humidityCalibration, hasHumidity) = (nil, false)
        }
        super.init(registers: [BMx280Driver.regID: chipID])
        load(calibration, at: BMP280Calibration.register)
        if let h = humidity { load(h, at: BME280Calibration.humidityRegister) }
        powerOnReset()
    }

    private func powerOnReset() {
        for r in [BMx280Driver.regCtrlHum, BMx280Driver.regStatus, BMx280Driver.regCtrlMeas, BMx280Driver.regConfig] {
            registers[Int(r)] = 0
        }
        load([0x80, 0, 0, 0x80, 0, 0, 0x80, 0], at: BMx280Raw.register)
        latchedCtrlHum = 0
    }

    private var mode: UInt8 { registers[Int(BMx280Driver.regCtrlMeas)] & 0b11 }

    private func isReadOnly(_ r: UInt8) -> Bool {
        (0x88...0xA1).contains(r) || (0xE1...0xF0).contains(r) || r == BMx280Driver.regID || r == BMx280Driver.regStatus || r >= 0xF7
    }

    public override func writeRegister(_ register: UInt8, _ value: UInt8) {
        switch register {
        case BMx280Driver.regReset:
            guard value == BMx280Driver.resetValue else { return }
            resets += 1
            powerOnReset()
            nvmCopyReads = 1
        case BMx280Driver.regCtrlMeas:
            registers[Int(register)] = value
            latchedCtrlHum = registers[Int(BMx280Driver.regCtrlHum)] & 0b111
            switch value & 0b11 {
            case 0b11: convert()
            case 0b01, 0b10:  // forced: one conversion, then back to sleep
                convert()
                registers[Int(register)] = value & ~0b11
            default: break
            }
        case BMx280Driver.regConfig:
            // "Writes to the config register in normal mode may be ignored" (§5.4.6): they are, here.
            if mode != 0b11 { registers[Int(register)] = value }
        case let r where isReadOnly(r): return
        default: registers[Int(register)] = value
        }
    }

    public override func readRegister(_ register: UInt8) -> UInt8 {
        switch register {
        case BMx280Driver.regReset: return 0
        case BMx280Driver.regStatus:
            if nvmCopyReads > 0 {
                nvmCopyReads -= 1
                return BMx280Driver.statusImUpdate
            }
            return 0
        case BMx280Raw.register:
            if mode == 0b11 { convert() }
            return registers[Int(register)]
        default: return registers[Int(register)]
        }
    }

    /// One conversion into the data registers, honouring skipped channels (oversampling 0).
    public func convert() {
        let ctrl = registers[Int(BMx280Driver.regCtrlMeas)]
        var raw = BMx280Raw(adcT: BMx280Raw.skipped, adcP: BMx280Raw.skipped, adcH: hasHumidity ? BMx280Raw.skippedHumidity : nil)
        if let f = fixedRaw {
            raw = f
            if hasHumidity && f.adcH == nil { raw.adcH = BMx280Raw.skippedHumidity }
        } else if let env = environment {
            let e = saneEnvironment(env())
            let r = calibration.raw(celsius: min(max(e.celsius, -40), 85), hPa: min(max(e.hPa, 300), 1100))
            raw = BMx280Raw(adcT: r.adcT, adcP: r.adcP)
            if let hc = humidityCalibration {
                raw.adcH = hc.rawHumidity(percent: min(max(humidityPercent, 0), 100), tFine: calibration.temperature(adcT: r.adcT).tFine)
            }
        }
        if (ctrl >> 5) & 0b111 == 0 { raw.adcT = BMx280Raw.skipped }
        if (ctrl >> 2) & 0b111 == 0 { raw.adcP = BMx280Raw.skipped }
        if hasHumidity && latchedCtrlHum == 0 { raw.adcH = BMx280Raw.skippedHumidity }
        if !hasHumidity { raw.adcH = nil }
        load(raw.burst, at: BMx280Raw.register)
        conversions += 1
    }
}

extension BMx280Driver: SimulatedBarometerModel {
    /// A real part's calibration: the datasheet's worked example (BMP280), pimoroni's (BME280).
    public func simulatedDevice(environment: BarometerEnvironment?) throws -> RegisterMapDevice {
        let d =
            hasHumidity
            ? try SimulatedBMx280(
                chipID: 0x60, calibration: SimulatedBarometerBoard.bme280Calibration,
                humidity: SimulatedBarometerBoard.bme280HumidityCalibration)
            : try SimulatedBMx280(chipID: 0x58, calibration: SimulatedBarometerBoard.bmp280Calibration)
        d.environment = environment
        return d
    }
}
