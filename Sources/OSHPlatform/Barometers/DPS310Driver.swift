#if canImport(Glibc)
import Glibc
#endif
import OSHCore

/// Infineon DPS310 (datasheet register map: PRS_B2…TMP_B0 0x00–0x05, PRS_CFG 0x06, TMP_CFG 0x07,
/// MEAS_CFG 0x08, CFG_REG 0x09, RESET 0x0C, Product ID 0x0D, COEF 0x10–0x21, COEF_SRCE 0x28).
/// Runs in continuous ("background") mode measuring pressure and temperature; no FIFO, no interrupts.
public final class DPS310Driver: BarometerDriver {
    /// Product ID register 0x0D: PROD_ID (bits 3:0) is 0 on a DPS310, REV_ID (bits 7:4) is the
    /// silicon revision, 1 on the parts in circulation (0x10). Any revision 1…15 is accepted;
    /// 0x00 is not, as a register that reads 0 more likely belongs to a chip without one.
    public static let dps310 = I2CChipIdentity(
        name: "DPS310", kind: .barometer, addresses: [0x77, 0x76], idRegister: 0x0D,
        idValues: (1...15).map { UInt8($0) << 4 },
        note: "0x77 by default (Adafruit's board, Infineon's drivers), 0x76 with SDO to GND", measures: [.pressure, .temperature])

    /// The driver table's entry.
    public static let chip = BarometerChip(
        identity: dps310, layout: DPS310Decode.layout,
        make: { DPS310Driver(bus: $0, address: $1) },
        decode: { try DPS310Decode.decode(chip: "DPS310", calibration: $0, burst: $1) })

    // Registers and bits (datasheet register description).
    public static let regPrsCfg: UInt8 = 0x06, regTmpCfg: UInt8 = 0x07, regMeasCfg: UInt8 = 0x08, regCfg: UInt8 = 0x09
    public static let regReset: UInt8 = 0x0C, regProductID: UInt8 = 0x0D, regCoefSource: UInt8 = 0x28
    /// RESET: SOFT_RST = 0b1001 in bits 3:0.
    public static let softReset: UInt8 = 0x09
    /// MEAS_CFG: COEF_RDY, SENSOR_RDY, TMP_RDY, PRS_RDY; MEAS_CTRL 0b111 = continuous pressure and temperature.
    public static let coefReady: UInt8 = 0x80, sensorReady: UInt8 = 0x40, temperatureReady: UInt8 = 0x20, pressureReady: UInt8 = 0x10
    public static let continuousBoth: UInt8 = 0x07
    /// TMP_CFG TMP_EXT and COEF_SRCE TMP_COEF_SRCE: 1 = the external (MEMS element) sensor.
    public static let externalSensor: UInt8 = 0x80
    /// CFG_REG T_SHIFT / P_SHIFT: required above ×8 oversampling (the result no longer fits 24 bits).
    public static let temperatureShift: UInt8 = 0x08, pressureShift: UInt8 = 0x04
    /// Infineon's fix for parts that read ~60 °C at room temperature ("Fix IC with a fuse bit
    /// problem, which lead to a wrong temperature / Should not affect ICs without this problem"):
    /// arduino-xensiv-dps3xx src/DpsClass.cpp `correctTemp()` (commit d8c32de) and
    /// sensor-xensiv-dps3xx xensiv_dps3xx.c `_xensiv_dps3xx_correct_temperature()` (commit 86b3370)
    /// write these, in this order, on every part. The registers are not in the datasheet.
    public static let temperatureFixUp: [(register: UInt8, value: UInt8)] = [
        (0x0E, 0xA5), (0x0F, 0x96), (0x62, 0x02), (0x0E, 0x00), (0x0F, 0x00),
    ]
    /// Infineon keeps 10 ms of every second spare (dps_config.h DPS3xx__BUSYTIME_FAILSAFE): the
    /// measurements of one second must take less than this.
    public static let busyBudgetMilliseconds = 990.0

    public let identity: I2CChipIdentity = DPS310Driver.dps310
    public let bus: I2CBus
    public let address: UInt8
    public private(set) var calibration: DPS310Calibration?
    public private(set) var calibrationBytes: [UInt8] = []
    /// COEF_SRCE: the coefficients were made with the external sensor; TMP_CFG must select the same.
    public private(set) var externalTemperatureSensor = true
    /// PRS_CFG, TMP_CFG, CFG_REG, MEAS_CFG as last written; nil before `configure`.
    public private(set) var written: (prsCfg: UInt8, tmpCfg: UInt8, cfg: UInt8, measCfg: UInt8)?
    /// The data burst 0x00–0x07 (results, PRS_CFG, TMP_CFG).
    private let buffer: UnsafeMutableRawBufferPointer
    /// TMP_RDY / PRS_RDY seen since configuration; both: the result registers hold a measurement.
    private var readySeen: UInt8 = 0

    public init(bus: I2CBus, address: UInt8) {
        self.bus = bus
        self.address = address
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 8)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
    }

    deinit { buffer.deallocate() }

    /// Soft reset, wait until MEAS_CFG shows SENSOR_RDY and COEF_RDY (as Infineon's
    /// sensor-xensiv-dps3xx polls for 0xC0; their Arduino driver allows 50 ms of start-up, we
    /// allow 100 ms), then Infineon's temperature fix-up — after every reset, as nothing says
    /// whether a soft reset keeps it (Infineon's drivers never soft-reset).
    public func reset() throws {
        try bus.writeRegister(address, Self.regReset, Self.softReset)
        written = nil
        readySeen = 0
        usleep(3000)
        let want = Self.sensorReady | Self.coefReady
        var last: UInt8 = 0
        poll: for i in 0..<50 {
            do {
                last = try bus.readRegister(address, Self.regMeasCfg)
                if last & want == want { break poll }
            } catch let e as I2CError where e.isAbsent && i < 49 {
                // Restarting after the reset, it may not acknowledge for a moment.
            }
            if i == 49 {
                throw I2CError(
                    .unexpectedResponse, bus: bus.number, address: address,
                    operation:
                        "resetting: MEAS_CFG is \(baroHex(last)) after 100 ms, SENSOR_RDY and COEF_RDY not both set; power-cycle the chip")
            }
            usleep(2000)
        }
        for w in Self.temperatureFixUp { try bus.writeRegister(address, w.register, w.value) }
    }

    public func readCalibration() throws {
        let meas = try bus.readRegister(address, Self.regMeasCfg)
        guard meas & Self.coefReady != 0 else {
            throw I2CError(
                .unexpectedResponse, bus: bus.number, address: address,
                operation:
                    "reading the coefficients: MEAS_CFG \(baroHex(meas)) says they are not loaded (COEF_RDY clear); reset or power-cycle the chip"
            )
        }
        let bytes = try bus.readBlock(address, DPS310Calibration.register, count: DPS310Calibration.byteCount)
        let source = try bus.readRegister(address, Self.regCoefSource)
        do {
            calibration = try DPS310Calibration(registers: bytes)
            calibrationBytes = bytes
            externalTemperatureSensor = source & Self.externalSensor != 0
        } catch {
            throw I2CError(.unexpectedResponse, bus: bus.number, address: address, operation: "reading the coefficients: \(error)")
        }
    }

    /// PM_PRC and TMP_PRC codes (n: ×2ⁿ), Infineon's named modes: low precision ×1, standard
    /// precision ×16, high precision ×64. Temperature ×1, except ×2 at high precision, where its
    /// noise shows through c01 (≈ 10 Pa/°C on real parts, c01/c1). These keep kP ≤ 1 040 384 <
    /// 2²⁰, so |Praw| < 0x100000 in range and PRS_B2 (register 0x00, where `auto` first looks for
    /// a BMP388/390's ID 0x50/0x60) reads 0x00–0x0F or 0xF0–0xFF; ×2…×8 (kP up to 7 864 320) would not.
    static func settings(_ o: BarometerOversampling) -> (p: UInt8, t: UInt8) {
        switch o {
        case .lowPower: return (0, 0)
        case .standard: return (4, 0)
        case .highResolution: return (6, 1)
        }
    }

    /// PM_RATE and TMP_RATE codes (n: 2ⁿ measurements/s, 1…128): the slowest pressure rate that
    /// is at least the agent's, lowered until one second's measurements fit the busy budget;
    /// temperature as fast as the pressure where that fits too, else slower.
    static func rateCodes(rateHz: Double, p: UInt8, t: UInt8) -> (p: UInt8, t: UInt8) {
        let tp = DPS310Scale.measurementMilliseconds(p), tt = DPS310Scale.measurementMilliseconds(t)
        let busy = { (np: UInt8, nt: UInt8) in Double(1 << Int(np)) * tp + Double(1 << Int(nt)) * tt }
        var np: UInt8 = 0
        while np < 7 && Double(1 << Int(np)) < rateHz { np += 1 }
        while np > 0 && busy(np, 0) >= busyBudgetMilliseconds { np -= 1 }
        var nt = np
        while nt > 0 && busy(np, nt) >= busyBudgetMilliseconds { nt -= 1 }
        return (np, nt)
    }

    public func configure(_ c: BarometerConfiguration) throws {
        let s = Self.settings(c.oversampling), r = Self.rateCodes(rateHz: c.rateHz, p: s.p, t: s.t)
        let prs = r.p << 4 | s.p
        let tmp = (externalTemperatureSensor ? Self.externalSensor : 0) | r.t << 4 | s.t
        let cfg = (s.t > 3 ? Self.temperatureShift : 0) | (s.p > 3 ? Self.pressureShift : 0)
        // Idle while the settings change, as Infineon's drivers do (standby() before configTemp/Pressure).
        try bus.writeRegister(address, Self.regMeasCfg, 0)
        try bus.writeRegister(address, Self.regPrsCfg, prs)
        try bus.writeRegister(address, Self.regTmpCfg, tmp)
        try bus.writeRegister(address, Self.regCfg, cfg)
        try bus.writeRegister(address, Self.regMeasCfg, Self.continuousBoth)
        readySeen = 0
        let back = try bus.readBlock(address, Self.regPrsCfg, count: 4)
        // Bit 7 of PRS_CFG and bit 3 of TMP_CFG are reserved; MEAS_CFG's top bits are status.
        guard back[0] & 0x7F == prs, back[1] & 0xF7 == tmp, back[3] == cfg, back[2] & 0x07 == Self.continuousBoth else {
            written = nil
            throw I2CError(
                .unexpectedResponse, bus: bus.number, address: address,
                operation: "configuring: PRS_CFG, TMP_CFG, MEAS_CFG, CFG_REG read back "
                    + back.map(baroHex).joined(separator: " ") + " after writing \(baroHex(prs)) \(baroHex(tmp)) "
                    + "\(baroHex(Self.continuousBoth)) \(baroHex(cfg)); check the wiring, then power-cycle the chip")
        }
        written = (prs, tmp, cfg, Self.continuousBoth)
    }

    /// Until both a temperature and a pressure result have been reported (MEAS_CFG TMP_RDY,
    /// PRS_RDY), nil; then one 8-byte burst from 0x00 per read. The burst's PRS_CFG / TMP_CFG must
    /// still be what was written: after a reset behind our back they read 0 and the results are
    /// stale, so the read gives nil and the series counts it as a chip that stopped converting.
    public func read() throws -> BarometerReading? {
        guard let cal = calibration, let w = written else { return nil }
        let both = Self.pressureReady | Self.temperatureReady
        if readySeen != both {
            readySeen |= try bus.readRegister(address, Self.regMeasCfg) & both
            guard readySeen == both else { return nil }
        }
        try bus.readRegisters(address, DPS310Raw.register, into: buffer)
        guard let raw = DPS310Raw(burst: UnsafeRawBufferPointer(buffer)),
            raw.pressureConfig & 0x7F == w.prsCfg, raw.temperatureConfig & 0xF7 == w.tmpCfg,
            let kP = DPS310Scale.factor(raw.pressureOversampling), let kT = DPS310Scale.factor(raw.temperatureOversampling)
        else {
            readySeen = 0
            return nil
        }
        let v = cal.compensate(rawP: raw.pressure, rawT: raw.temperature, kP: kP, kT: kT)
        return BarometerReading(pressurePa: v.pa, celsius: v.celsius)
    }

    /// The 8 bytes from 0x00, as `decode` takes them.
    public var lastBurst: [UInt8] { Array(buffer) }
}
