#if canImport(Glibc)
import Glibc
#endif
import OSHCore

/// ST HTS221 (DocID026333), the Raspberry Pi Sense HAT's humidity and temperature chip: a
/// register map with an ID (WHO_AM_I 0x0F = 0xBC) and its own two-point calibration at 0x30–0x3F.
/// It runs in continuous mode, so `read` only collects the newest output registers and never
/// waits: nil until the chip has produced a sample since the previous read. Multi-byte reads
/// set the register address's MSB (0x80|reg): without it the chip does not advance the address.
public final class HTS221Driver: HygrometerDriver {
    public static let hts221 = I2CChipIdentity(
        name: "HTS221", kind: .hygrometer, addresses: [0x5F], idRegister: 0x0F, idValues: [0xBC],
        note: "on the Raspberry Pi Sense HAT (0x5F, fixed); its temperature reads warm on a HAT stacked on the Pi",
        measures: [.temperature, .humidity])

    /// The driver table's entry.
    public static let chip = HygrometerChip(identity: hts221) { HTS221Driver(bus: $0, address: $1) }

    // Registers, as the datasheet names them.
    public static let regWhoAmI: UInt8 = 0x0F, regAvConf: UInt8 = 0x10, regCtrl1: UInt8 = 0x20, regCtrl2: UInt8 = 0x21
    public static let autoIncrement: UInt8 = 0x80
    /// CTRL_REG1: PD (active), BDU (H_OUT and T_OUT bytes stay together until both are read).
    public static let ctrl1PowerOn: UInt8 = 0x80, ctrl1BlockDataUpdate: UInt8 = 0x04
    /// CTRL_REG2: BOOT (reload the calibration from the chip's memory; self-clearing).
    public static let ctrl2Boot: UInt8 = 0x80
    /// AV_CONF: 16 temperature and 32 humidity samples averaged per output, the reset value.
    public static let avConf: UInt8 = 0x1B
    /// CTRL_REG1 ODR codes 1…3 and their rates.
    public static let rates: [Double] = [1, 7, 12.5]

    public let identity = HTS221Driver.hts221
    public let bus: I2CBus
    public let address: UInt8
    /// Samples per second the agent reads; the chip runs at the lowest ODR at or above it. The
    /// agent polls a hygrometer at 10 Hz at most (HygrometerSettings), hence 12.5 Hz by default.
    public var rateHz: Double = 10
    /// The part's calibration, read by `start`.
    public private(set) var calibration: HTS221Calibration?
    /// The calibration bytes as read, for dumps.
    public private(set) var calibrationBytes: [UInt8] = []
    /// CTRL_REG1 as last written.
    public private(set) var ctrl1: UInt8 = 0
    /// STATUS, H_OUT_L H, T_OUT_L H: one burst from 0x27 a read.
    private let buffer: UnsafeMutableRawBufferPointer
    /// Whether each output has held a sample since `start` (the other is read with it).
    private var seen: (humidity: Bool, temperature: Bool) = (false, false)

    public init(bus: I2CBus, address: UInt8) {
        self.bus = bus
        self.address = address
        buffer = .allocate(byteCount: HTS221Output.byteCount, alignment: 1)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
    }

    deinit { buffer.deallocate() }

    private func error(_ what: String) -> I2CError {
        I2CError(.unexpectedResponse, bus: bus.number, address: address, operation: what)
    }

    private static func hex(_ v: UInt8) -> String {
        let s = String(v, radix: 16, uppercase: true)
        return "0x" + (s.count == 1 ? "0" + s : s)
    }

    public func identify() throws {
        let id = try bus.readRegister(address, Self.regWhoAmI)
        guard identity.matches(id: id) else {
            throw error("identifying an HTS221: WHO_AM_I (0x0F) holds \(Self.hex(id)), not 0xBC — another chip at this address?")
        }
    }

    /// The lowest ODR at or above `rateHz` (12.5 Hz at most).
    static func odrCode(rateHz: Double) -> UInt8 {
        UInt8((rates.firstIndex { $0 >= rateHz } ?? rates.count - 1) + 1)
    }

    /// Power down, BOOT (the calibration reloaded), the calibration read and checked, averaging,
    /// then continuous mode.
    public func start() throws {
        seen = (false, false)
        calibration = nil
        try bus.writeRegister(address, Self.regCtrl1, 0)
        try bus.writeRegister(address, Self.regCtrl2, Self.ctrl2Boot)
        var booted = false
        for i in 0..<50 {
            if try bus.readRegister(address, Self.regCtrl2) & Self.ctrl2Boot == 0 { booted = true; break }
            if i < 49 { usleep(1000) }
        }
        guard booted else {
            throw error("waiting for the calibration reload (BOOT): CTRL_REG2 still 0x80 after 50 ms; power-cycle the chip")
        }
        var bytes = [UInt8](repeating: 0, count: HTS221Calibration.byteCount)
        try bytes.withUnsafeMutableBytes { try bus.readRegisters(address, Self.autoIncrement | HTS221Calibration.register, into: $0) }
        calibrationBytes = bytes
        do {
            calibration = try HTS221Calibration(registers: bytes)
        } catch {
            throw self.error("reading the calibration (0x30–0x3F): \(error)")
        }
        try bus.writeRegister(address, Self.regAvConf, Self.avConf)
        ctrl1 = Self.ctrl1PowerOn | Self.ctrl1BlockDataUpdate | Self.odrCode(rateHz: rateHz)
        try bus.writeRegister(address, Self.regCtrl1, ctrl1)
        let back = try bus.readRegister(address, Self.regCtrl1)
        guard back == ctrl1 else {
            throw error(
                "configuring: CTRL_REG1 reads back \(Self.hex(back)) after writing \(Self.hex(ctrl1)); "
                    + "another program may be configuring the chip")
        }
    }

    /// STATUS and both outputs in one transaction: a reading when the chip has made a sample
    /// since the previous read, nil otherwise (and until both outputs have held one).
    public func read() throws -> HygrometerReading? {
        guard let cal = calibration else {
            throw error("reading before the chip was started (no calibration read); it is started again on reopen")
        }
        try bus.readRegisters(address, Self.autoIncrement | HTS221Output.register, into: buffer)
        guard let out = HTS221Output.parse(UnsafeRawBufferPointer(buffer)) else { return nil }
        let newHumidity = out.status & HTS221Output.humidityAvailable != 0
        let newTemperature = out.status & HTS221Output.temperatureAvailable != 0
        seen = (seen.humidity || newHumidity, seen.temperature || newTemperature)
        guard newHumidity || newTemperature, seen.humidity, seen.temperature else { return nil }
        return cal.reading(humidityRaw: out.humidity, temperatureRaw: out.temperature)
    }

    /// The last output burst (STATUS, H_OUT, T_OUT), for dumps.
    public var lastBurst: [UInt8] { Array(buffer) }
}
