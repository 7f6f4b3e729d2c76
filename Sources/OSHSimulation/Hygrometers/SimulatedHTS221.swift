#if canImport(Glibc)
import Glibc
#endif
import OSHCore
import OSHPlatform

/// An HTS221 on the simulated bus, modelled from its datasheet's register map: WHO_AM_I 0x0F =
/// 0xBC; AV_CONF (reset 0x1B); CTRL_REG1 (PD, BDU, ODR); CTRL_REG2 (BOOT self-clears — it still
/// reads set once after being written, and the calibration reads 0x00 until then; ONE_SHOT);
/// STATUS (H_DA, T_DA, cleared by reading H_OUT_H / T_OUT_H); the outputs; and one part's
/// calibration at 0x30–0x3F. The register address advances only when its MSB is set (0x80|reg).
/// Conversions run while powered with an ODR, at each read of STATUS (`autoConvert`), and on
/// ONE_SHOT; the environment goes in through the inverse of the part's calibration.
public final class SimulatedHTS221: RegisterMapDevice {
    /// A part's 16 calibration bytes: mattludwigs/hts221's test set (see
    /// Tests/OSHCoreTests/Fixtures/hygro/README.md).
    public static let partCalibration: [UInt8] = [
        0x40, 0x90, 0x9F, 0x0A, 0x00, 0xC4, 0xEE, 0xFF,
        0x04, 0x04, 0xC5, 0xC9, 0xFE, 0xFF, 0xB3, 0x02,
    ]

    public var environment: HygrometerEnvironment
    /// Off: a conversion happens only when `convert()` is called (tests of the first sample).
    public var autoConvert = true
    public private(set) var conversions = 0
    public private(set) var boots = 0
    /// The bytes the part holds at 0x30–0x3F (what BOOT reloads).
    public let calibrationBytes: [UInt8]
    private let calibration: HTS221Calibration?
    private var selfClearReads = 0
    private var advancing = false

    /// `calibration`: 16 bytes as the part holds them (default: a real part's). Bytes that are
    /// not a calibration (equal counts) are held as they are and give zero counts.
    public init(
        calibration bytes: [UInt8] = SimulatedHTS221.partCalibration,
        environment: @escaping HygrometerEnvironment = { (21.5, 45) }
    ) {
        calibrationBytes = bytes
        calibration = try? HTS221Calibration(registers: bytes)
        self.environment = environment
        super.init(registers: [HTS221Driver.regWhoAmI: 0xBC, HTS221Driver.regAvConf: HTS221Driver.avConf])
        load(bytes, at: HTS221Calibration.register)
    }

    private var ctrl1: UInt8 { registers[Int(HTS221Driver.regCtrl1)] }
    private var running: Bool { ctrl1 & HTS221Driver.ctrl1PowerOn != 0 && ctrl1 & 0x03 != 0 }

    public override func transfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws {
        guard let first = write.first else { return try super.transfer(write: write, read: read) }
        advancing = first & HTS221Driver.autoIncrement != 0
        try withUnsafeTemporaryAllocation(byteCount: write.count, alignment: 1) { w in
            w.copyMemory(from: write)
            w[0] = first & 0x7F
            try super.transfer(write: UnsafeRawBufferPointer(w), read: read)
        }
    }

    public override func nextRegister(after register: UInt8) -> UInt8 { advancing ? (register &+ 1) & 0x7F : register }

    public override func writeRegister(_ register: UInt8, _ value: UInt8) {
        switch register {
        case HTS221Driver.regCtrl2:
            if value & HTS221Driver.ctrl2Boot != 0 {
                boots += 1
                selfClearReads = 1
            }
            registers[Int(register)] = value & ~0x01
            if value & 0x01 != 0 && ctrl1 & HTS221Driver.ctrl1PowerOn != 0 { convert() }  // ONE_SHOT
        case HTS221Driver.regCtrl1:
            registers[Int(register)] = value
            if running && autoConvert { convert() }
        case HTS221Driver.regAvConf, 0x22:
            registers[Int(register)] = value
        default: return  // WHO_AM_I, status, outputs, calibration: read-only
        }
    }

    public override func readRegister(_ register: UInt8) -> UInt8 {
        switch register {
        case HTS221Driver.regCtrl2:
            if selfClearReads > 0 {
                selfClearReads -= 1
            } else {
                registers[Int(register)] &= ~HTS221Driver.ctrl2Boot
            }
            return registers[Int(register)]
        case HTS221Output.register:
            if running && autoConvert { convert() }
            return registers[Int(register)]
        case 0x29:
            registers[Int(HTS221Output.register)] &= ~HTS221Output.humidityAvailable
            return registers[Int(register)]
        case 0x2B:
            registers[Int(HTS221Output.register)] &= ~HTS221Output.temperatureAvailable
            return registers[Int(register)]
        case 0x30...0x3F:
            // Still loading from the chip's memory while BOOT reads set.
            return registers[Int(HTS221Driver.regCtrl2)] & HTS221Driver.ctrl2Boot != 0 ? 0 : registers[Int(register)]
        default: return registers[Int(register)]
        }
    }

    public func convert() {
        let e = environment()
        let counts =
            calibration?.counts(celsius: e.celsius.isFinite ? e.celsius : 20, percent: e.percent.isFinite ? e.percent : 50)
            ?? (humidity: 0, temperature: 0)
        for (i, v) in [counts.humidity, counts.temperature].enumerated() {
            let u = UInt16(bitPattern: v)
            registers[0x28 + 2 * i] = UInt8(truncatingIfNeeded: u)
            registers[0x29 + 2 * i] = UInt8(truncatingIfNeeded: u >> 8)
        }
        registers[Int(HTS221Output.register)] = HTS221Output.humidityAvailable | HTS221Output.temperatureAvailable
        conversions += 1
    }
}

extension HTS221Driver: SimulatedHygrometerModel {
    public func simulatedDevice(environment: @escaping HygrometerEnvironment) -> SimulatedI2CDevice {
        SimulatedHTS221(environment: environment)
    }
}
