#if canImport(Glibc)
import Glibc
#endif
import OSHCore

/// BMP581 and BMP585 (BST-BMP581-DS004; the BMP585 has the same register map): CHIP_ID 0x50 /
/// 0x51 at register 0x01. They compensate on chip, so there is no calibration to read; pressure
/// measurement is off after a reset and is turned on here (OSR_CONFIG.press_en).
public final class BMP58xDriver: BarometerDriver {
    public static let bmp581 = I2CChipIdentity(
        name: "BMP581", kind: .barometer, addresses: [0x47, 0x46], idRegister: 0x01, idValues: [0x50],
        note: "0x47 with SDO high (Adafruit and SparkFun default), 0x46 with SDO to GND", measures: [.pressure, .temperature])
    public static let bmp585 = I2CChipIdentity(
        name: "BMP585", kind: .barometer, addresses: [0x47, 0x46], idRegister: 0x01, idValues: [0x51],
        note: "0x47 with SDO high, 0x46 with SDO to GND", measures: [.pressure, .temperature])

    /// The driver table's entries.
    public static let bmp581Chip = BarometerChip(
        identity: bmp581, layout: BMP58xDecode.layout,
        make: { BMP58xDriver(bus: $0, address: $1, identity: bmp581) },
        decode: { try BMP58xDecode.decode(chip: "BMP581", calibration: $0, burst: $1) })
    public static let bmp585Chip = BarometerChip(
        identity: bmp585, layout: BMP58xDecode.layout,
        make: { BMP58xDriver(bus: $0, address: $1, identity: bmp585) },
        decode: { try BMP58xDecode.decode(chip: "BMP585", calibration: $0, burst: $1) })

    // Registers (datasheet §7, named as Bosch's BMP5 sensor API names them).
    public static let regChipID: UInt8 = 0x01, regRevID: UInt8 = 0x02, regIntSource: UInt8 = 0x15
    public static let regIntStatus: UInt8 = 0x27, regStatus: UInt8 = 0x28
    public static let regDSPConfig: UInt8 = 0x30, regDSPIIR: UInt8 = 0x31
    public static let regOSRConfig: UInt8 = 0x36, regODRConfig: UInt8 = 0x37, regOSREff: UInt8 = 0x38
    public static let regCmd: UInt8 = 0x7E, softReset: UInt8 = 0xB6
    /// INT_STATUS (clears on read) and INT_SOURCE: drdy_data_reg, por (reset complete).
    public static let intDataReady: UInt8 = 0x01, intResetComplete: UInt8 = 0x10
    /// STATUS: the trimming NVM was loaded, or failed to.
    public static let statusNVMReady: UInt8 = 0x02, statusNVMError: UInt8 = 0x04
    public static let osrPressureEnable: UInt8 = 0x40
    /// ODR_CONFIG: deep_dis (bit 7), odr (bits 6:2), pwr_mode (bits 1:0: standby, normal, forced, non-stop).
    public static let odrDeepStandbyOff: UInt8 = 0x80, modeStandby: UInt8 = 0x00, modeNormal: UInt8 = 0x01
    /// OSR_EFF.odr_is_valid: the chip found the oversampling fits one ODR period.
    public static let effODRValid: UInt8 = 0x80
    /// DSP_CONFIG: compensation of temperature and pressure on (comp_pt_en = 3, as after reset)
    /// and the data registers showing the IIR-filtered values (shdw_sel_iir_t, shdw_sel_iir_p).
    public static let dspConfig: UInt8 = 0x2B
    /// ODR_CONFIG.odr codes 0…31 and their nominal rates (Hz).
    public static let rates: [Double] = [
        240, 218.5, 199.1, 179.2, 160, 149.3, 140, 129.8, 120, 110.1, 100.2, 89.6, 80, 70, 60, 50,
        45, 40, 35, 30, 25, 20, 15, 10, 5, 4, 3, 2, 1, 0.5, 0.25, 0.125,
    ]
    /// An ODR period must be this many conversion times at least: `conversionMicroseconds` is a
    /// typical value, and the chip's own check has the last word (OSR_EFF, read in `configure`).
    public static let conversionMargin = 1.25

    public let identity: I2CChipIdentity
    public let bus: I2CBus
    public let address: UInt8
    public let calibrationBytes: [UInt8] = []
    /// OSR_CONFIG, ODR_CONFIG, DSP_IIR as last written.
    public private(set) var written: (osr: UInt8, odr: UInt8, iir: UInt8) = (0, 0, 0)
    /// TEMP_DATA then PRESS_DATA, one burst from 0x1D.
    private let buffer: UnsafeMutableRawBufferPointer
    /// A data-ready flag seen since configuration: the data registers hold a conversion.
    private var measured = false

    public init(bus: I2CBus, address: UInt8, identity: I2CChipIdentity = BMP58xDriver.bmp581) {
        self.bus = bus
        self.address = address
        self.identity = identity
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 8)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
    }

    deinit { buffer.deallocate() }

    /// CMD soft reset, then the checks of Bosch's power-up procedure: INT_STATUS.por set, STATUS
    /// nvm_rdy set and nvm_err clear.
    public func reset() throws {
        do {
            try bus.writeRegister(address, Self.regCmd, Self.softReset)
        } catch let e as I2CError where e.kind == .noAcknowledge {
            // The datasheet (CMD register) says the chip does not ACK this write over I²C: whether
            // the reset happened is what INT_STATUS says next (a chip that is gone NACKs that read too).
        }
        measured = false
        usleep(2000)  // t_soft_res 2 ms
        var interrupts: UInt8 = 0
        for i in 0..<5 {
            interrupts = try bus.readRegister(address, Self.regIntStatus)
            if interrupts & Self.intResetComplete != 0 { break }
            if i < 4 { usleep(1000) }
        }
        guard interrupts & Self.intResetComplete != 0 else {
            throw I2CError(
                .unexpectedResponse, bus: bus.number, address: address,
                operation:
                    "resetting: INT_STATUS = \(baroHex(interrupts)) never showed the reset complete (por) within 6 ms of CMD 0xB6; power-cycle the chip"
            )
        }
        let status = try bus.readRegister(address, Self.regStatus)
        guard status & Self.statusNVMReady != 0, status & Self.statusNVMError == 0 else {
            throw I2CError(
                .unexpectedResponse, bus: bus.number, address: address,
                operation: "resetting: STATUS = \(baroHex(status)): the trimming NVM is "
                    + (status & Self.statusNVMError != 0 ? "in error" : "not ready") + "; power-cycle the chip")
        }
    }

    public func readCalibration() throws {}

    /// osr_p, osr_t codes (0 ×1 … 7 ×128) and the IIR code (0 bypass, 2 coefficient 3, 4
    /// coefficient 15): the datasheet's recommended rows "lowest power" (P×1 T×1), "standard
    /// resolution" (P×4 T×1) and "high resolution" (P×16 T×1).
    static func settings(_ o: BarometerOversampling) -> (p: UInt8, t: UInt8, iir: UInt8) {
        switch o {
        case .lowPower: return (0, 0, 0)
        case .standard: return (2, 0, 2)
        case .highResolution: return (4, 0, 4)
        }
    }

    /// Time (µs) of one temperature + pressure conversion: 1100 + 620·P + 320·T, fitted to the
    /// datasheet's typical CONTINUOUS-mode rates (one conversion after another: 498 Hz at P×1 T×1,
    /// 255 Hz at P×4 T×1, 87 Hz at P×16 T×1, 12 Hz at P×128 T×8), within 0.5 ms of each.
    public static func conversionMicroseconds(p: UInt8, t: UInt8) -> Double {
        1100 + 620 * Double(1 << Int(p & 7)) + 320 * Double(1 << Int(t & 7))
    }

    /// The slowest ODR that is still at least the agent's rate, but never one whose period is
    /// shorter than `conversionMargin` conversions (the chip would flag it and fall back to
    /// other oversampling).
    static func odrCode(rateHz: Double, p: UInt8, t: UInt8) -> UInt8 {
        var n = rates.count - 1
        while n > 0 && rates[n] < rateHz { n -= 1 }
        let shortest = conversionMicroseconds(p: p, t: t) * conversionMargin
        while n < rates.count - 1 && 1_000_000 / rates[n] < shortest { n += 1 }
        return UInt8(n)
    }

    /// In standby: IIR, data-ready source, oversampling with pressure on, then the ODR in normal
    /// mode; then asserts OSR_EFF. deep_dis is set throughout, as Bosch's API sets it for every
    /// mode but deep standby (deep standby allows no ODR above 5 Hz).
    public func configure(_ c: BarometerConfiguration) throws {
        let s = Self.settings(c.oversampling)
        let osr = Self.osrPressureEnable | s.p << 3 | s.t
        let code = Self.odrCode(rateHz: c.rateHz, p: s.p, t: s.t)
        let odr = Self.odrDeepStandbyOff | code << 2 | Self.modeNormal
        let iir = s.iir << 3 | s.iir  // pressure bits 5:3, temperature bits 2:0
        // The IIR registers take writes only in standby (Bosch's API switches to it first).
        try bus.writeRegister(address, Self.regODRConfig, Self.odrDeepStandbyOff | Self.modeStandby)
        usleep(2500)  // t_standby
        try bus.writeRegister(address, Self.regDSPConfig, Self.dspConfig)
        try bus.writeRegister(address, Self.regDSPIIR, iir)
        try bus.writeRegister(address, Self.regIntSource, Self.intDataReady)
        _ = try bus.readRegister(address, Self.regIntStatus)  // clears a flag from before
        try bus.writeRegister(address, Self.regOSRConfig, osr)
        try bus.writeRegister(address, Self.regODRConfig, odr)
        written = (osr, odr, iir)
        measured = false
        usleep(3000)  // measuring starts within t_reconf; Linux's driver waits 3 ms before this check too
        let eff = try bus.readRegister(address, Self.regOSREff)
        guard eff & Self.effODRValid != 0 else {
            let x = { (code: UInt8) in "×\(1 << Int(code & 7))" }
            throw I2CError(
                .unexpectedResponse, bus: bus.number, address: address,
                operation: "configuring: OSR_EFF = \(baroHex(eff)) says P\(x(s.p)) T\(x(s.t)) does not fit \(Self.rates[Int(code)]) Hz "
                    + "(the chip measures with P\(x(eff >> 3)) T\(x(eff)) instead); lower the barometer rate or its oversampling")
        }
    }

    /// Until the first data-ready flag since configuration: INT_STATUS (one byte), no reading.
    /// Then the six data registers in one burst (the chip keeps a burst consistent, §4.5.1).
    public func read() throws -> BarometerReading? {
        if !measured {
            guard try bus.readRegister(address, Self.regIntStatus) & Self.intDataReady != 0 else { return nil }
            measured = true
        }
        try bus.readRegisters(address, BMP58xRaw.register, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<6]))
        // Registers back at their reset value: the chip was reset behind our back (a brown-out).
        guard let raw = BMP58xRaw(burst: UnsafeRawBufferPointer(rebasing: buffer[0..<6])), raw.isMeasured else { return nil }
        return BarometerReading(pressurePa: raw.pressurePa, celsius: raw.celsius)
    }

    /// The 6 data bytes from 0x1D, as `decode` takes them.
    public var lastBurst: [UInt8] { Array(buffer[0..<6]) }
}
