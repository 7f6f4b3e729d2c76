#if canImport(Glibc)
import Glibc
#endif
import OSHCore

/// ST LPS25H (DocID023722; application note AN4450), the Raspberry Pi Sense HAT's barometer:
/// compensated on chip, no calibration to read. The LPS25HB answers the same WHO_AM_I and has
/// the same registers this driver uses.
///
/// Multi-byte reads set the register address's MSB (0x80|reg): without it the chip does not
/// advance the address. Standard and high resolution lower the noise as AN4450 §3 suggests —
/// the FIFO "configured as moving average to reduce the noise figure" — over 8 or 32 samples at
/// 25 Hz (0.32 s or 1.28 s of data), with the internal averaging at RES_CONF 0x05 (16
/// temperature, 32 pressure samples; what the Sense HAT's RTIMULib writes). With the FIFO on,
/// AN4450 §5.1 says temperature must be read apart from pressure, so a read is two
/// transactions: STATUS and PRESS_OUT, then TEMP_OUT.
public final class LPS25HDriver: BarometerDriver {
    public static let lps25h = I2CChipIdentity(
        name: "LPS25H", kind: .barometer, addresses: [0x5C, 0x5D], idRegister: 0x0F, idValues: [0xBD],
        note: "on the Raspberry Pi Sense HAT at 0x5C (SA0 low); 0x5D with SA0 high on other boards; "
            + "its temperature reads warm on a HAT stacked on the Pi",
        measures: [.pressure, .temperature])

    /// The driver table's entry.
    public static let chip = BarometerChip(
        identity: lps25h, layout: LPS25HDecode.layout,
        make: { LPS25HDriver(bus: $0, address: $1) },
        decode: { try LPS25HDecode.decode(chip: "LPS25H", calibration: $0, burst: $1) })

    // Registers, as the datasheet names them.
    public static let regWhoAmI: UInt8 = 0x0F, regResConf: UInt8 = 0x10, regCtrl1: UInt8 = 0x20, regCtrl2: UInt8 = 0x21
    public static let regStatus: UInt8 = 0x27, regPressOut: UInt8 = 0x28, regTempOut: UInt8 = 0x2B, regFifoCtrl: UInt8 = 0x2E
    /// The address bit that makes the chip advance through consecutive registers.
    public static let autoIncrement: UInt8 = 0x80
    /// CTRL_REG1: PD (active), BDU (a sample's bytes stay together until all are read).
    public static let ctrl1PowerOn: UInt8 = 0x80, ctrl1BlockDataUpdate: UInt8 = 0x04
    /// CTRL_REG2: BOOT (reload trimming), FIFO_EN, SWRESET; AUTO_ZERO, I2C_DIS and FIFO_MEAN_DEC stay 0.
    public static let ctrl2Boot: UInt8 = 0x80, ctrl2FifoEnable: UInt8 = 0x40, ctrl2SoftReset: UInt8 = 0x04
    /// STATUS: T_DA, P_DA.
    public static let statusTemperatureAvailable: UInt8 = 0x01, statusPressureAvailable: UInt8 = 0x02
    /// FIFO_CTRL: bypass; mean mode (F_MODE 110) with WTM_POINT 00111 (8 samples) or 11111 (32).
    public static let fifoBypass: UInt8 = 0x00, fifoMean8: UInt8 = 0xC7, fifoMean32: UInt8 = 0xDF
    /// RES_CONF: AVGT 8 / AVGP 8 (0x00); AVGT 16 / AVGP 32 (0x05, the reset value in ST's LPS25H driver).
    public static let resConfLow: UInt8 = 0x00, resConfStandard: UInt8 = 0x05
    /// CTRL_REG1 ODR codes 1…4 and their rates.
    public static let rates: [Double] = [1, 7, 12.5, 25]

    public let identity: I2CChipIdentity = LPS25HDriver.lps25h
    public let bus: I2CBus
    public let address: UInt8
    public let calibrationBytes: [UInt8] = []
    /// RES_CONF, FIFO_CTRL, CTRL_REG2 and CTRL_REG1 as last written.
    public private(set) var written: (resConf: UInt8, fifoCtrl: UInt8, ctrl2: UInt8, ctrl1: UInt8) = (0, 0, 0, 0)
    /// [0] STATUS, [1…3] PRESS_OUT_XL L H, [4…5] TEMP_OUT_L H: the first two reads fill it in place.
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

    /// SWRESET (registers to defaults, FIFO off), then BOOT (reload trimming); both self-clear.
    public func reset() throws {
        measured = false
        try bus.writeRegister(address, Self.regCtrl2, Self.ctrl2SoftReset)
        try waitUntilClear(Self.regCtrl2, mask: Self.ctrl2SoftReset, stepMicroseconds: 100, what: "waiting for the software reset")
        try bus.writeRegister(address, Self.regCtrl2, Self.ctrl2Boot)
        try waitUntilClear(Self.regCtrl2, mask: Self.ctrl2Boot, stepMicroseconds: 1000, what: "waiting for the trimming reload (BOOT)")
    }

    public func readCalibration() throws {}

    /// The lowest ODR at or above the agent's rate (25 Hz at most).
    static func odrCode(rateHz: Double) -> UInt8 {
        UInt8((rates.firstIndex { $0 >= rateHz } ?? rates.count - 1) + 1)
    }

    /// What `configure` writes for `c`: RES_CONF, FIFO_CTRL, CTRL_REG2, CTRL_REG1.
    static func settings(_ c: BarometerConfiguration) -> (resConf: UInt8, fifoCtrl: UInt8, ctrl2: UInt8, ctrl1: UInt8) {
        let on = ctrl1PowerOn | ctrl1BlockDataUpdate
        switch c.oversampling {
        case .lowPower:
            return (resConfLow, fifoBypass, 0, on | odrCode(rateHz: c.rateHz) << 4)
        case .standard:
            // 25 Hz whatever the agent's rate: the moving average spans 8 samples, 0.32 s.
            return (resConfStandard, fifoMean8, ctrl2FifoEnable, on | odrCode(rateHz: 25) << 4)
        case .highResolution:
            return (resConfStandard, fifoMean32, ctrl2FifoEnable, on | odrCode(rateHz: 25) << 4)
        }
    }

    public func configure(_ c: BarometerConfiguration) throws {
        measured = false
        let s = Self.settings(c)
        // Powered down while the averaging and the FIFO change (AN4450 starts from CTRL_REG1 0).
        // The FIFO is switched on or off only from bypass mode: AN4450 §5.1 says switching FIFO_EN
        // alone leaves the FIFO misbehaving.
        try bus.writeRegister(address, Self.regCtrl1, 0)
        try bus.writeRegister(address, Self.regResConf, s.resConf)
        try bus.writeRegister(address, Self.regFifoCtrl, Self.fifoBypass)
        try bus.writeRegister(address, Self.regCtrl2, s.ctrl2)
        if s.fifoCtrl != Self.fifoBypass { try bus.writeRegister(address, Self.regFifoCtrl, s.fifoCtrl) }
        try bus.writeRegister(address, Self.regCtrl1, s.ctrl1)
        written = s
        for (register, name, value) in [(Self.regCtrl1, "CTRL_REG1", s.ctrl1), (Self.regFifoCtrl, "FIFO_CTRL", s.fifoCtrl)] {
            let back = try bus.readRegister(address, register)
            guard back == value else {
                throw I2CError(
                    .unexpectedResponse, bus: bus.number, address: address,
                    operation: "configuring: \(name) reads back \(baroHex(back)) after writing \(baroHex(value)); "
                        + "another program may be configuring the chip, or it is not an LPS25H")
            }
        }
    }

    public func read() throws -> BarometerReading? {
        // STATUS and PRESS_OUT_XL…H: 0x27…0x2A, within the pressure block the FIFO keeps apart.
        try bus.readRegisters(address, Self.autoIncrement | Self.regStatus, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<4]))
        if buffer[0] & Self.statusPressureAvailable != 0 { measured = true }
        guard measured else { return nil }
        try bus.readRegisters(address, Self.autoIncrement | Self.regTempOut, into: UnsafeMutableRawBufferPointer(rebasing: buffer[4..<6]))
        guard let raw = LPS25HRaw(burst: UnsafeRawBufferPointer(rebasing: buffer[1..<6])) else { return nil }
        return BarometerReading(pressureHPa: raw.pressureHPa, celsius: raw.celsius)
    }

    public var lastBurst: [UInt8] { Array(buffer[1..<6]) }
}
