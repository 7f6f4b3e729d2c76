import OSHCore
import OSHPlatform

/// A BMP581 or BMP585 on the simulated bus, modelled from the datasheet's register map (§7) as
/// Bosch's BMP5 API and Linux's driver use it: CHIP_ID 0x01; INT_STATUS 0x27 (clears on read:
/// por after a reset; drdy_data_reg after a conversion, only while INT_SOURCE enables it); STATUS
/// 0x28 (nvm_rdy, or nvm_err with `nvmError`); DSP_CONFIG / DSP_IIR (writable in standby only);
/// OSR_CONFIG (press_en clear after a reset); ODR_CONFIG (odr, pwr_mode; standby after a reset);
/// OSR_EFF (odr_is_valid, effective OSRs); data 0x1D–0x22 (0x7F7F7F until measured, and pressure
/// while press_en is clear); CMD 0x7E (0xB6 soft reset, NACKed when `nacksReset`, as the
/// datasheet says the real chip may). In normal mode an ODR period shorter than a conversion is
/// flagged in OSR_EFF, which then names the datasheet's fallback oversampling. With `autoConvert`
/// a conversion runs when normal or non-stop mode starts, at each read of INT_STATUS and at the
/// start of each burst from 0x1D; without it only `convert()` (or forced mode) measures.
public final class SimulatedBMP58x: RegisterMapDevice {
    public let chipID: UInt8
    public var fixedRaw: BMP58xRaw?
    public var environment: BarometerEnvironment?
    public var autoConvert = true
    /// The chip does not ACK the reset command's data byte (it resets all the same).
    public var nacksReset = false
    /// STATUS shows nvm_err (and not nvm_rdy) after a reset: a chip whose trimming did not load.
    public var nvmError = false
    /// This part's conversion time over the typical one the driver plans with (a slow part: > 1).
    public var conversionScale = 1.0
    public private(set) var conversions = 0
    public private(set) var resets = 0

    typealias D = BMP58xDriver
    private var resetInThisTransfer = false

    public init(chipID: UInt8) {
        self.chipID = chipID
        super.init(registers: [D.regChipID: chipID])
        powerOnReset()
    }

    private func powerOnReset() {
        for r in [D.regIntSource, 0x13, 0x14, 0x16, 0x18, D.regDSPIIR, D.regOSRConfig, D.regOSREff] { registers[Int(r)] = 0 }
        registers[Int(D.regDSPConfig)] = 0x03  // comp_pt_en: compensation on
        registers[Int(D.regODRConfig)] = 0x1C << 2  // standby, deep standby allowed (the ODR is not relied on)
        load([UInt8](repeating: 0x7F, count: BMP58xRaw.byteCount), at: BMP58xRaw.register)
        registers[Int(D.regIntStatus)] = D.intResetComplete
        registers[Int(D.regStatus)] = nvmError ? D.statusNVMError : D.statusNVMReady
    }

    private var mode: UInt8 { registers[Int(D.regODRConfig)] & 0b11 }
    private var measuring: Bool { mode == D.modeNormal || mode == 0b11 }

    public override func transfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws {
        resetInThisTransfer = false
        try super.transfer(write: write, read: read)
        if resetInThisTransfer && nacksReset { throw SimulatedI2CFault.nack }
    }

    public override func writeRegister(_ register: UInt8, _ value: UInt8) {
        switch register {
        case D.regCmd:
            guard value == D.softReset else { return }  // the NVM sequences are not modelled
            resets += 1
            resetInThisTransfer = true
            powerOnReset()
        case D.regDSPConfig, D.regDSPIIR:
            if mode == D.modeStandby { registers[Int(register)] = value }  // "writable only in standby"
        case D.regOSRConfig:
            registers[Int(register)] = value & 0x7F
            if mode == D.modeNormal { checkConfiguration() }
        case D.regODRConfig:
            registers[Int(register)] = value
            switch value & 0b11 {
            case D.modeNormal:
                checkConfiguration()
                if autoConvert { convert() }
            case 0b11:
                if autoConvert { convert() }
            case 0b10:  // forced: one conversion, then standby
                convert()
                registers[Int(register)] = value & ~0b11
            default: break
            }
        case D.regIntSource, 0x13, 0x14, 0x16, 0x18, 0x32...0x35:
            registers[Int(register)] = value
        default: return  // IDs, status, data, OSR_EFF and reserved registers are read-only
        }
    }

    public override func readRegister(_ register: UInt8) -> UInt8 {
        switch register {
        case D.regIntStatus:
            if measuring && autoConvert { convert() }
            let v = registers[Int(register)]
            registers[Int(register)] = 0
            return v
        case BMP58xRaw.register:
            if measuring && autoConvert { convert() }
            return registers[Int(register)]
        default: return registers[Int(register)]
        }
    }

    /// OSR_EFF as the datasheet's configuration check sets it in normal mode: the requested OSRs
    /// with odr_is_valid when a conversion fits the ODR period; otherwise ×1 (ODR ≥ 160 Hz) or ×2.
    private func checkConfiguration() {
        let osr = registers[Int(D.regOSRConfig)]
        let odr = Int((registers[Int(D.regODRConfig)] >> 2) & 0x1F)
        let fits = D.conversionMicroseconds(p: (osr >> 3) & 7, t: osr & 7) * conversionScale <= 1_000_000 / D.rates[odr]
        registers[Int(D.regOSREff)] = fits ? D.effODRValid | osr & 0x3F : (D.rates[odr] >= 160 ? 0x00 : 1 << 3 | 1)
    }

    /// One conversion into the data registers: `fixedRaw`, or `environment()` in the registers'
    /// units, or the reset value; pressure stays at its reset value while press_en is clear.
    public func convert() {
        var raw = BMP58xRaw(temperature: Int32(BMP58xRaw.notMeasured), pressure: BMP58xRaw.notMeasured)
        if let f = fixedRaw {
            raw = f
        } else if let env = environment {
            let e = saneEnvironment(env())
            let t = (min(max(e.celsius, -40), 85) * BMP58xRaw.lsbPerCelsius).rounded()
            let p = (min(max(e.hPa * 100, 30000), 125000) * BMP58xRaw.lsbPerPa).rounded()
            raw = BMP58xRaw(temperature: Int32(t), pressure: UInt32(p))
        }
        if registers[Int(D.regOSRConfig)] & D.osrPressureEnable == 0 { raw.pressure = BMP58xRaw.notMeasured }
        load(raw.burst, at: BMP58xRaw.register)
        if registers[Int(D.regIntSource)] & D.intDataReady != 0 { registers[Int(D.regIntStatus)] |= D.intDataReady }
        conversions += 1
    }
}

extension BMP58xDriver: SimulatedBarometerModel {
    /// The chip this driver's identity names (BMP581 or BMP585, by its CHIP_ID).
    public func simulatedDevice(environment: BarometerEnvironment?) throws -> RegisterMapDevice {
        let d = SimulatedBMP58x(chipID: identity.idValues.first ?? 0x50)
        d.environment = environment
        return d
    }
}
