#if canImport(Glibc)
import Glibc
#endif
import OSHCore

/// BMP388 and BMP390 (BST-BMP388-DS001, BST-BMP390-DS002): the same register map, IDs 0x50 / 0x60.
public final class BMP3Driver: BarometerDriver {
    public static let bmp388 = I2CChipIdentity(
        name: "BMP388", kind: .barometer, addresses: [0x77, 0x76], idRegister: 0x00, idValues: [0x50],
        note: "0x77 with SDO high (Adafruit default), 0x76 with SDO to GND", measures: [.pressure, .temperature])
    public static let bmp390 = I2CChipIdentity(
        name: "BMP390", kind: .barometer, addresses: [0x77, 0x76], idRegister: 0x00, idValues: [0x60],
        note: "0x77 with SDO high (Adafruit default), 0x76 with SDO to GND", measures: [.pressure, .temperature])

    /// The driver table's entries.
    public static let bmp388Chip = BarometerChip(
        identity: bmp388, layout: BMP3Decode.layout,
        make: { BMP3Driver(bus: $0, address: $1, identity: bmp388) },
        decode: { try BMP3Decode.decode(chip: "BMP388", calibration: $0, burst: $1) })
    public static let bmp390Chip = BarometerChip(
        identity: bmp390, layout: BMP3Decode.layout,
        make: { BMP3Driver(bus: $0, address: $1, identity: bmp390) },
        decode: { try BMP3Decode.decode(chip: "BMP390", calibration: $0, burst: $1) })

    // Registers (datasheet §4.3).
    public static let regID: UInt8 = 0x00, regErr: UInt8 = 0x02, regStatus: UInt8 = 0x03
    public static let regPwrCtrl: UInt8 = 0x1B, regOSR: UInt8 = 0x1C, regODR: UInt8 = 0x1D, regConfig: UInt8 = 0x1F
    public static let regCmd: UInt8 = 0x7E, softReset: UInt8 = 0xB6
    public static let statusCmdReady: UInt8 = 0x10, statusPressureReady: UInt8 = 0x20, statusTemperatureReady: UInt8 = 0x40
    public static let errFatal: UInt8 = 0x01, errCmd: UInt8 = 0x02, errConf: UInt8 = 0x04
    /// Data registers' reset value (24-bit), before the first conversion.
    public static let notMeasured: UInt32 = 0x800000

    public let identity: I2CChipIdentity
    public let bus: I2CBus
    public let address: UInt8
    public private(set) var calibration: BMP3Calibration?
    public private(set) var calibrationBytes: [UInt8] = []
    /// OSR, ODR, CONFIG, PWR_CTRL as last written.
    public private(set) var written: (osr: UInt8, odr: UInt8, config: UInt8, pwrCtrl: UInt8) = (0, 0, 0, 0)
    /// STATUS then the 6 data bytes, read in one burst.
    private let buffer: UnsafeMutableRawBufferPointer

    public init(bus: I2CBus, address: UInt8, identity: I2CChipIdentity = BMP3Driver.bmp388) {
        self.bus = bus
        self.address = address
        self.identity = identity
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 8)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
    }

    deinit { buffer.deallocate() }

    public func reset() throws {
        // A command is accepted only when cmd_rdy is set.
        guard try bus.readRegister(address, Self.regStatus) & Self.statusCmdReady != 0 else {
            throw I2CError(
                .unexpectedResponse, bus: bus.number, address: address, operation: "resetting: STATUS says the command decoder is busy")
        }
        try bus.writeRegister(address, Self.regCmd, Self.softReset)
        usleep(2000)  // start-up 2 ms
        if try bus.readRegister(address, Self.regErr) & Self.errCmd != 0 {
            throw I2CError(.unexpectedResponse, bus: bus.number, address: address, operation: "resetting: ERR_REG reports a command error")
        }
    }

    public func readCalibration() throws {
        let bytes = try bus.readBlock(address, BMP3Calibration.register, count: BMP3Calibration.byteCount)
        do {
            calibration = try BMP3Calibration(registers: bytes)
            calibrationBytes = bytes
        } catch {
            throw I2CError(.unexpectedResponse, bus: bus.number, address: address, operation: "reading the calibration: \(error)")
        }
    }

    /// osr_p, osr_t codes (0 ×1 … 5 ×32) and IIR code (0 bypass, 2 coefficient 3, 4 coefficient 15).
    static func settings(_ o: BarometerOversampling) -> (p: UInt8, t: UInt8, iir: UInt8) {
        switch o {
        case .lowPower: return (0, 0, 0)
        case .standard: return (2, 0, 2)
        case .highResolution: return (4, 1, 4)
        }
    }

    /// Conversion time (µs) with both sensors on (datasheet §3.9.2).
    public static func conversionMicroseconds(p: UInt8, t: UInt8) -> Double {
        234 + 392 + Double(1 << Int(p)) * 2020 + 163 + Double(1 << Int(t)) * 2020
    }

    /// odr_sel n gives 200/2ⁿ Hz. The slowest rate that is still at least the agent's, but never
    /// faster than a conversion takes (the chip would refuse it with conf_err).
    static func odrCode(rateHz: Double, p: UInt8, t: UInt8) -> UInt8 {
        var n = 17
        while n > 0 && 200 / Double(1 << n) < rateHz { n -= 1 }
        let conv = conversionMicroseconds(p: p, t: t)
        while n < 17 && 5000 * Double(1 << n) < conv { n += 1 }
        return UInt8(n)
    }

    public func configure(_ c: BarometerConfiguration) throws {
        let s = Self.settings(c.oversampling)
        let osr = s.t << 3 | s.p, odr = Self.odrCode(rateHz: c.rateHz, p: s.p, t: s.t), config = s.iir << 1
        let pwr: UInt8 = 0x30 | 0x03  // normal mode, pressure and temperature enabled
        try bus.writeRegister(address, Self.regPwrCtrl, 0)
        try bus.writeRegister(address, Self.regOSR, osr)
        try bus.writeRegister(address, Self.regODR, odr)
        try bus.writeRegister(address, Self.regConfig, config)
        try bus.writeRegister(address, Self.regPwrCtrl, pwr)
        written = (osr, odr, config, pwr)
        let err = try bus.readRegister(address, Self.regErr)
        guard err & (Self.errConf | Self.errFatal) == 0 else {
            throw I2CError(
                .unexpectedResponse, bus: bus.number, address: address,
                operation:
                    "configuring: ERR_REG = \(baroHex(err)) after OSR \(baroHex(osr)), ODR \(baroHex(odr)) (the chip refused the settings)")
        }
    }

    /// STATUS and the data registers in one burst from 0x03.
    public func read() throws -> BarometerReading? {
        guard let cal = calibration else { return nil }
        try bus.readRegisters(address, Self.regStatus, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<7]))
        guard let raw = BMP3Raw(burst: UnsafeRawBufferPointer(rebasing: buffer[1..<7])),
            !(raw.pressure == Self.notMeasured && raw.temperature == Self.notMeasured)
        else { return nil }
        let c = cal.compensate(uncompensatedT: raw.temperature, uncompensatedP: raw.pressure)
        guard c.pa.isFinite else { return nil }  // temperature out of range: Bosch computes no pressure
        return BarometerReading(pressurePa: c.pa, celsius: c.celsius)
    }

    /// The 6 data bytes from 0x04 (without STATUS), as `decode` takes them.
    public var lastBurst: [UInt8] { Array(buffer[1..<7]) }
    /// STATUS from the last burst.
    public var lastStatus: UInt8 { buffer[0] }
}
