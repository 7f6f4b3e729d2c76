#if canImport(Glibc)
import Glibc
#endif
import OSHCore

/// BMP280 and BME280 (BST-BMP280-DS001, BST-BME280-DS002): one register map, the BME280 adds
/// humidity (ctrl_hum 0xF2, calibration 0xA1 and 0xE1–0xE7, data 0xFD–0xFE).
public final class BMx280Driver: BarometerDriver {
    public static let bmp280 = I2CChipIdentity(
        name: "BMP280", kind: .barometer, addresses: [0x76, 0x77], idRegister: 0xD0, idValues: [0x58, 0x56, 0x57],
        note: "0x76 with SDO to GND (most purple breakouts), 0x77 with SDO high (Adafruit)", measures: [.pressure, .temperature])
    public static let bme280 = I2CChipIdentity(
        name: "BME280", kind: .barometer, addresses: [0x76, 0x77], idRegister: 0xD0, idValues: [0x60],
        note: "BMP280 plus humidity; many boards sold as BME280 carry a BMP280 (ID 0x58)",
        measures: [.pressure, .temperature, .humidity])

    /// The driver table's entries.
    public static let bmp280Chip = BarometerChip(
        identity: bmp280, layout: BMx280Decode.bmp280Layout,
        make: { BMx280Driver(bus: $0, address: $1, identity: bmp280) },
        decode: { try BMx280Decode.decode(chip: "BMP280", humidity: false, calibration: $0, burst: $1) })
    public static let bme280Chip = BarometerChip(
        identity: bme280, layout: BMx280Decode.bme280Layout,
        make: { BMx280Driver(bus: $0, address: $1, identity: bme280) },
        decode: { try BMx280Decode.decode(chip: "BME280", humidity: true, calibration: $0, burst: $1) })

    // Registers (datasheet §5.3 / §5.4).
    public static let regID: UInt8 = 0xD0, regReset: UInt8 = 0xE0, regCtrlHum: UInt8 = 0xF2, regStatus: UInt8 = 0xF3
    public static let regCtrlMeas: UInt8 = 0xF4, regConfig: UInt8 = 0xF5
    public static let resetValue: UInt8 = 0xB6
    public static let statusMeasuring: UInt8 = 0x08, statusImUpdate: UInt8 = 0x01

    public let identity: I2CChipIdentity
    public let bus: I2CBus
    public let address: UInt8
    public let hasHumidity: Bool
    public private(set) var calibration: BMP280Calibration?
    public private(set) var humidityCalibration: BME280Calibration?
    public private(set) var calibrationBytes: [UInt8] = []
    /// ctrl_meas, config, ctrl_hum as last written.
    public private(set) var written: (ctrlMeas: UInt8, config: UInt8, ctrlHum: UInt8) = (0, 0, 0)
    private let buffer: UnsafeMutableRawBufferPointer
    private var burstCount: Int { hasHumidity ? 8 : 6 }

    public init(bus: I2CBus, address: UInt8, identity: I2CChipIdentity = BMx280Driver.bmp280) {
        self.bus = bus
        self.address = address
        self.identity = identity
        hasHumidity = identity.name == Self.bme280.name
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 8)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
    }

    deinit { buffer.deallocate() }

    public func reset() throws {
        try bus.writeRegister(address, Self.regReset, Self.resetValue)
        usleep(2000)  // start-up time 2 ms (datasheet table 2)
        try waitUntilClear(Self.regStatus, mask: Self.statusImUpdate, what: "waiting for the NVM copy after reset")
    }

    public func readCalibration() throws {
        do {
            if hasHumidity {
                let main = try bus.readBlock(address, BMP280Calibration.register, count: BME280Calibration.mainByteCount)
                let h = try bus.readBlock(address, BME280Calibration.humidityRegister, count: BME280Calibration.humidityByteCount)
                let c = try BME280Calibration(registers: main, humidity: h)
                (calibration, humidityCalibration, calibrationBytes) = (c.tp, c, main + h)
            } else {
                let main = try bus.readBlock(address, BMP280Calibration.register, count: BMP280Calibration.byteCount)
                (calibration, calibrationBytes) = (try BMP280Calibration(registers: main), main)
            }
        } catch let e as BarometerDataError {
            throw I2CError(.unexpectedResponse, bus: bus.number, address: address, operation: "reading the calibration: \(e)")
        }
    }

    /// Oversampling codes (000 skip, 001 ×1 … 101 ×16) and IIR codes (000 off … 100 16) per preset.
    static func settings(_ o: BarometerOversampling) -> (t: UInt8, p: UInt8, filter: UInt8) {
        switch o {
        case .lowPower: return (1, 1, 0)
        case .standard: return (1, 3, 2)
        case .highResolution: return (2, 5, 4)
        }
    }

    /// Standby times (ms) by t_sb code; codes 6 and 7 differ between the two chips.
    func standbyTable() -> [Double] {
        hasHumidity ? [0.5, 62.5, 125, 250, 500, 1000, 10, 20] : [0.5, 62.5, 125, 250, 500, 1000, 2000, 4000]
    }

    /// The longest standby for which a normal-mode cycle (maximum measurement time, datasheet
    /// §9.1 / appendix B, plus standby) still fits in the agent's period: every read sees a new sample.
    func standbyCode(rateHz: Double, t: UInt8, p: UInt8) -> UInt8 {
        let os = { (code: UInt8) in code == 0 ? 0.0 : Double(1 << (code - 1)) }
        var measureMs = 1.25 + 2.3 * os(t) + 2.3 * os(p) + 0.575
        if hasHumidity { measureMs += 2.3 + 0.575 }  // humidity ×1
        let periodMs = 1000 / rateHz
        var best: (code: UInt8, ms: Double) = (0, 0.5)
        for (code, ms) in standbyTable().enumerated() where measureMs + ms <= periodMs && ms > best.ms {
            best = (UInt8(code), ms)
        }
        return best.code
    }

    public func configure(_ c: BarometerConfiguration) throws {
        let s = Self.settings(c.oversampling)
        let config = standbyCode(rateHz: c.rateHz, t: s.t, p: s.p) << 5 | s.filter << 2
        let ctrlMeas = s.t << 5 | s.p << 2 | 0b11  // normal mode
        // In sleep mode first: config writes in normal mode may be ignored (§5.4.6), and ctrl_hum
        // takes effect only at the next ctrl_meas write (§5.4.3).
        try bus.writeRegister(address, Self.regCtrlMeas, 0)
        if hasHumidity { try bus.writeRegister(address, Self.regCtrlHum, 1) }
        try bus.writeRegister(address, Self.regConfig, config)
        try bus.writeRegister(address, Self.regCtrlMeas, ctrlMeas)
        written = (ctrlMeas, config, hasHumidity ? 1 : 0)
        let back = try bus.readRegister(address, Self.regCtrlMeas)
        guard back == ctrlMeas else {
            throw I2CError(
                .unexpectedResponse, bus: bus.number, address: address,
                operation: "configuring: ctrl_meas reads back \(baroHex(back)) after writing \(baroHex(ctrlMeas))")
        }
    }

    /// One burst of 0xF7…0xFC (…0xFE): shadowing keeps T, P (and H) from one conversion.
    public func read() throws -> BarometerReading? {
        guard let cal = calibration else { return nil }
        let burst = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<burstCount])
        try bus.readRegisters(address, BMx280Raw.register, into: burst)
        guard let raw = BMx280Raw(burst: UnsafeRawBufferPointer(burst)),
            raw.adcT != BMx280Raw.skipped, raw.adcP != BMx280Raw.skipped
        else { return nil }
        let t = cal.temperature(adcT: raw.adcT)
        let pa = cal.pressurePa(adcP: raw.adcP, tFine: t.tFine)
        var h: Double?
        if let hc = humidityCalibration, let adcH = raw.adcH, adcH != BMx280Raw.skippedHumidity {
            h = hc.humidityPercent(adcH: adcH, tFine: t.tFine)
        }
        return BarometerReading(pressurePa: pa, celsius: t.celsius, humidityPercent: h)
    }

    public var lastBurst: [UInt8] { Array(buffer[0..<burstCount]) }
}
