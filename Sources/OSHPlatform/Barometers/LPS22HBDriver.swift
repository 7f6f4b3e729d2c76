#if canImport(Glibc)
import Glibc
#endif
import OSHCore

/// ST LPS22HB (DocID027083): compensated on chip, no calibration to read.
public final class LPS22HBDriver: BarometerDriver {
    public static let lps22hb = I2CChipIdentity(
        name: "LPS22HB", kind: .barometer, addresses: [0x5D, 0x5C], idRegister: 0x0F, idValues: [0xB1],
        note: "0x5D with SA0 high (Adafruit default), 0x5C with SA0 low", measures: [.pressure, .temperature])

    /// The driver table's entry.
    public static let chip = BarometerChip(
        identity: lps22hb, layout: LPS22HBDecode.layout,
        make: { LPS22HBDriver(bus: $0, address: $1) },
        decode: { try LPS22HBDecode.decode(chip: "LPS22HB", calibration: $0, burst: $1) })

    // Registers (datasheet §8).
    public static let regWhoAmI: UInt8 = 0x0F, regCtrl1: UInt8 = 0x10, regCtrl2: UInt8 = 0x11, regResConf: UInt8 = 0x1A
    public static let regStatus: UInt8 = 0x27
    public static let ctrl2Boot: UInt8 = 0x80, ctrl2AutoIncrement: UInt8 = 0x10, ctrl2SoftReset: UInt8 = 0x04
    public static let statusPressureAvailable: UInt8 = 0x01, statusTemperatureAvailable: UInt8 = 0x02
    /// CTRL_REG1 ODR codes 1…5 and their rates.
    public static let rates: [Double] = [1, 10, 25, 50, 75]

    public let identity: I2CChipIdentity = LPS22HBDriver.lps22hb
    public let bus: I2CBus
    public let address: UInt8
    public let calibrationBytes: [UInt8] = []
    /// CTRL_REG1 and RES_CONF as last written.
    public private(set) var written: (ctrl1: UInt8, resConf: UInt8) = (0, 0)
    /// STATUS then PRESS_OUT_XL…TEMP_OUT_H, one burst from 0x27.
    private let buffer: UnsafeMutableRawBufferPointer
    /// A first P_DA seen since configuration: the output registers hold a measurement.
    private var measured = false

    public init(bus: I2CBus, address: UInt8) {
        self.bus = bus
        self.address = address
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 8)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
    }

    deinit { buffer.deallocate() }

    /// SWRESET (volatile registers to defaults), then BOOT (reload trimming); both self-clear.
    public func reset() throws {
        try bus.writeRegister(address, Self.regCtrl2, Self.ctrl2AutoIncrement | Self.ctrl2SoftReset)
        try waitUntilClear(Self.regCtrl2, mask: Self.ctrl2SoftReset, stepMicroseconds: 100, what: "waiting for the software reset")
        try bus.writeRegister(address, Self.regCtrl2, Self.ctrl2AutoIncrement | Self.ctrl2Boot)
        try waitUntilClear(Self.regCtrl2, mask: Self.ctrl2Boot, stepMicroseconds: 1000, what: "waiting for the trimming reload (BOOT)")
        measured = false
    }

    public func readCalibration() throws {}

    /// The lowest ODR at or above the agent's rate (75 Hz at most).
    static func odrCode(rateHz: Double) -> UInt8 {
        UInt8((rates.firstIndex { $0 >= rateHz } ?? rates.count - 1) + 1)
    }

    public func configure(_ c: BarometerConfiguration) throws {
        // CTRL_REG1: ODR[6:4] | EN_LPFP[3] | LPFP_CFG[2] | BDU[1]. BDU keeps the MSB/LSB of one
        // sample together across the burst.
        var ctrl1 = Self.odrCode(rateHz: c.rateHz) << 4 | 0x02
        var resConf: UInt8 = 0
        switch c.oversampling {
        case .lowPower: resConf = 0x01  // LC_EN: low-current mode
        case .standard: ctrl1 |= 0x08  // low-pass ODR/9
        case .highResolution: ctrl1 |= 0x0C  // low-pass ODR/20
        }
        try bus.writeRegister(address, Self.regResConf, resConf)
        try bus.writeRegister(address, Self.regCtrl1, ctrl1)
        written = (ctrl1, resConf)
        let back = try bus.readRegister(address, Self.regCtrl1)
        guard back == ctrl1 else {
            throw I2CError(
                .unexpectedResponse, bus: bus.number, address: address,
                operation: "configuring: CTRL_REG1 reads back \(baroHex(back)) after writing \(baroHex(ctrl1))")
        }
        measured = false
    }

    public func read() throws -> BarometerReading? {
        try bus.readRegisters(address, Self.regStatus, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<6]))
        if buffer[0] & Self.statusPressureAvailable != 0 { measured = true }
        guard measured, let raw = LPS22HBRaw(burst: UnsafeRawBufferPointer(rebasing: buffer[1..<6])) else { return nil }
        return BarometerReading(pressureHPa: raw.pressureHPa, celsius: raw.celsius)
    }

    public var lastBurst: [UInt8] { Array(buffer[1..<6]) }
}
