import OSHCore
import OSHPlatform

/// A DPS310 on the simulated bus, modelled from the datasheet's register map: results PRS_B2…TMP_B0
/// 0x00–0x05 (0 after reset), PRS_CFG / TMP_CFG (reserved bits read 0), MEAS_CFG 0x08 (COEF_RDY,
/// SENSOR_RDY after `readsUntilReady` reads following a reset; TMP_RDY / PRS_RDY set by a
/// measurement and cleared when its result registers are read; MEAS_CTRL, a command measurement
/// returning it to idle), CFG_REG, RESET 0x0C (0b1001 in bits 3:0: soft reset), Product ID 0x0D,
/// COEF 0x10–0x21 and COEF_SRCE 0x28 (read-only). In continuous mode a measurement completes at
/// each read of MEAS_CFG or PRS_B2 (once `readsBeforeFirstMeasurement` MEAS_CFG reads have passed).
/// Results are `fixedRaw`, or the codes that compensate to `environment()` at the configured
/// oversampling.
///
/// What a real part does wrong, and the model's stand-in for it (the datasheet and Infineon's code
/// say what must be done, not what the wrong result looks like):
/// - TMP_CFG TMP_EXT not equal to COEF_SRCE: temperature 28 °C low (Infineon issue #30 read
///   −2.6 °C at 25.7 °C that way);
/// - `needsTemperatureFix` and Infineon's fix-up not written since the last reset: 40 °C high
///   (the ~60 °C at room temperature that the fix-up is for);
/// - oversampling above ×8 without the CFG_REG result shift: the result saturates at 24 bits.
public final class SimulatedDPS310: RegisterMapDevice {
    /// A real DPS310's coefficients, quoted as values in Infineon/DPS310-Pressure-Sensor issue #23,
    /// as the register bytes they are read from (the `ifx_issue23_tmanaud` set of
    /// Tests/OSHCoreTests/Fixtures/baro/dps310_vectors.csv; Infineon's parser gives them back).
    public static let realPartCoefficients: [UInt8] = [
        0x0D, 0xFE, 0xDD, 0x13, 0x8C, 0xAF, 0x25, 0x1D, 0xF3,
        0xB7, 0x05, 0x98, 0xD9, 0x41, 0x00, 0x98, 0xFA, 0xD7,
    ]

    public let calibration: DPS310Calibration
    public var fixedRaw: (pressure: Int32, temperature: Int32)?
    public var environment: BarometerEnvironment?
    public var needsTemperatureFix: Bool
    /// MEAS_CFG reads after a reset that still show neither SENSOR_RDY nor COEF_RDY.
    public var readsUntilReady = 2
    /// MEAS_CFG reads in continuous mode before the first measurement completes.
    public var readsBeforeFirstMeasurement = 0
    public private(set) var conversions = 0
    public private(set) var resets = 0
    public private(set) var temperatureFixes = 0
    private var notReadyReads = 0
    private var waitingReads = 0
    private var ready: UInt8 = 0
    private var fixStep = 0
    private var fixed = false

    /// `externalSensor`: COEF_SRCE says the coefficients were made with the external (MEMS) sensor.
    public init(coefficients: [UInt8], productID: UInt8 = 0x10, externalSensor: Bool = true, needsTemperatureFix: Bool = false) throws {
        calibration = try DPS310Calibration(registers: coefficients)
        self.needsTemperatureFix = needsTemperatureFix
        super.init(registers: [
            DPS310Driver.regProductID: productID,
            DPS310Driver.regCoefSource: externalSensor ? DPS310Driver.externalSensor : 0,
        ])
        load(coefficients, at: DPS310Calibration.register)
        powerOnReset()
        notReadyReads = 0  // powered long enough before the agent starts
    }

    private func powerOnReset() {
        load([0, 0, 0, 0, 0, 0, 0, 0], at: 0x00)
        registers[Int(DPS310Driver.regMeasCfg)] = 0
        registers[Int(DPS310Driver.regCfg)] = 0
        ready = 0
        fixStep = 0
        fixed = false
        notReadyReads = readsUntilReady
    }

    private var mode: UInt8 { registers[Int(DPS310Driver.regMeasCfg)] & 0x07 }

    public override func writeRegister(_ register: UInt8, _ value: UInt8) {
        if [0x0E, 0x0F, 0x62].contains(register) { trackFixUp(register, value) }
        switch register {
        case DPS310Driver.regPrsCfg: registers[Int(register)] = value & 0x7F
        case DPS310Driver.regTmpCfg: registers[Int(register)] = value & 0xF7
        case DPS310Driver.regCfg: registers[Int(register)] = value
        case DPS310Driver.regMeasCfg:
            registers[Int(register)] = value & 0x07
            waitingReads = readsBeforeFirstMeasurement
            switch value & 0x07 {
            case 1, 2:  // command mode: one measurement, then idle
                measure(pressure: value & 0x07 == 1, temperature: value & 0x07 == 2)
                registers[Int(register)] = 0
            default: break
            }
        case DPS310Driver.regReset:
            if value & 0x0F == DPS310Driver.softReset {
                resets += 1
                powerOnReset()
            }
        case 0x0E, 0x0F, 0x62: registers[Int(register)] = value
        default: return  // results, ID, coefficients, COEF_SRCE: read-only
        }
    }

    /// Infineon's five writes, in order, complete the fix-up; anything else in between restarts it.
    private func trackFixUp(_ register: UInt8, _ value: UInt8) {
        let seq = DPS310Driver.temperatureFixUp
        if seq[fixStep] == (register, value) { fixStep += 1 } else { fixStep = seq[0] == (register, value) ? 1 : 0 }
        if fixStep == seq.count {
            fixed = true
            temperatureFixes += 1
            fixStep = 0
        }
    }

    public override func readRegister(_ register: UInt8) -> UInt8 {
        switch register {
        case DPS310Driver.regMeasCfg:
            if notReadyReads > 0 {
                notReadyReads -= 1
                return mode
            }
            if mode & 0x04 != 0 {
                if waitingReads > 0 { waitingReads -= 1 } else { measure(pressure: mode & 0x01 != 0, temperature: mode & 0x02 != 0) }
            }
            return DPS310Driver.coefReady | DPS310Driver.sensorReady | ready | mode
        case 0x00...0x02:
            if register == 0x00, mode & 0x04 != 0, waitingReads == 0, ready & DPS310Driver.pressureReady == 0 {
                measure(pressure: mode & 0x01 != 0, temperature: mode & 0x02 != 0)
            }
            ready &= ~DPS310Driver.pressureReady
            return registers[Int(register)]
        case 0x03...0x05:
            ready &= ~DPS310Driver.temperatureReady
            return registers[Int(register)]
        default: return registers[Int(register)]
        }
    }

    /// One measurement of what `mode` enables, into the result registers.
    public func measure(pressure: Bool, temperature: Bool) {
        let prc = registers[Int(DPS310Driver.regPrsCfg)] & 0x0F, tprc = registers[Int(DPS310Driver.regTmpCfg)] & 0x07
        let kP = DPS310Scale.factor(prc) ?? DPS310Scale.factors[0], kT = DPS310Scale.factor(tprc) ?? DPS310Scale.factors[0]
        var raw: (pressure: Int32, temperature: Int32) = (0, 0)
        if let f = fixedRaw {
            raw = f
        } else if let env = environment {
            let e = saneEnvironment(env())
            let trueC = min(max(e.celsius, -40), 85), hPa = min(max(e.hPa, 300), 1200)
            var celsius = trueC
            let tmp = registers[Int(DPS310Driver.regTmpCfg)], source = registers[Int(DPS310Driver.regCoefSource)]
            if tmp & DPS310Driver.externalSensor != source & DPS310Driver.externalSensor { celsius -= 28 }
            if needsTemperatureFix && !fixed { celsius += 40 }
            // The pressure code depends on the true conditions only: it is the one that, with the
            // right sensor's temperature code, compensates to the true pressure.
            let right = calibration.raw(celsius: trueC, hPa: hPa, kP: kP, kT: kT)
            let shown = celsius == trueC ? right : calibration.raw(celsius: celsius, hPa: hPa, kP: kP, kT: kT)
            raw = (right.pressure, shown.temperature)
        }
        let cfg = registers[Int(DPS310Driver.regCfg)]
        if prc > 3 && cfg & DPS310Driver.pressureShift == 0 { raw.pressure = Self.saturated(raw.pressure) }
        if tprc > 3 && cfg & DPS310Driver.temperatureShift == 0 { raw.temperature = Self.saturated(raw.temperature) }
        let bytes = DPS310Raw(pressure: raw.pressure, temperature: raw.temperature, pressureConfig: 0, temperatureConfig: 0).burst
        if pressure {
            load(Array(bytes[0..<3]), at: 0x00)
            ready |= DPS310Driver.pressureReady
        }
        if temperature {
            load(Array(bytes[3..<6]), at: 0x03)
            ready |= DPS310Driver.temperatureReady
        }
        conversions += 1
    }

    private static func saturated(_ v: Int32) -> Int32 { v >= 0 ? 0x7FFFFF : -0x800000 }
}

extension DPS310Driver: SimulatedBarometerModel {
    /// A real part's coefficients (Infineon issue #23), with the temperature fix-up needed, so the
    /// demo and tests exercise it.
    public func simulatedDevice(environment: BarometerEnvironment?) throws -> RegisterMapDevice {
        let d = try SimulatedDPS310(coefficients: SimulatedDPS310.realPartCoefficients, needsTemperatureFix: true)
        d.environment = environment
        return d
    }
}
