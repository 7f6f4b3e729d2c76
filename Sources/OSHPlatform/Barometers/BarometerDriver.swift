#if canImport(Glibc)
import Glibc
#endif
import OSHCore

// The fetch half of the barometers: bus transactions only. Each driver identifies its chip by
// the ID register, resets it, reads its calibration once, configures oversampling / IIR /
// normal mode at an output rate that fits the agent's, then burst-reads the data registers into a
// buffer allocated once. Conversion is the pure code in OSHCore/Barometers (the readings' type
// and the session's rules in BarometerSeries.swift).

/// What the agent asks of a barometer.
public struct BarometerConfiguration: Sendable, Equatable {
    /// Samples per second the agent will read; the chip is set to produce at least this many.
    public var rateHz: Double
    public var oversampling: BarometerOversampling

    public init(rateHz: Double = 1, oversampling: BarometerOversampling = .standard) {
        self.rateHz = rateHz.isFinite && rateHz > 0 ? rateHz : 1
        self.oversampling = oversampling
    }
}

/// A barometer on an I²C bus. Steps are separate so tests can assert each; `start` does them in order.
public protocol BarometerDriver: AnyObject {
    var identity: I2CChipIdentity { get }
    var bus: I2CBus { get }
    var address: UInt8 { get }
    /// Reads the ID register; throws `.unexpectedResponse` (naming what the value is, if known)
    /// when it is not this chip, `.noAcknowledge` when nothing answers.
    @discardableResult func identify() throws -> UInt8
    /// Soft reset, then waits (bounded) until the chip has reloaded its trimming values.
    func reset() throws
    /// Reads and checks the calibration region.
    func readCalibration() throws
    /// Oversampling, IIR, output rate, then normal mode. Asserts the chip accepted it where it says.
    func configure(_ configuration: BarometerConfiguration) throws
    /// One data burst into the driver's buffer, compensated. nil while the chip has not finished
    /// its first conversion since configuration. No allocation.
    func read() throws -> BarometerReading?
    /// The calibration bytes as read, in register order (empty for the LPS22HB), for dumps.
    var calibrationBytes: [UInt8] { get }
    /// A copy of the last data burst, for dumps.
    var lastBurst: [UInt8] { get }
}

extension BarometerDriver {
    /// Reads the ID register the chip's identity names and checks it (every barometer has one).
    @discardableResult public func identify() throws -> UInt8 {
        guard let register = identity.idRegister else {
            throw I2CError(
                .unexpectedResponse, bus: bus.number, address: address, operation: "identifying a \(identity.name): no ID register known")
        }
        let id = try bus.readRegister(address, register)
        try checkID(id)
        return id
    }

    /// identify → reset → calibration → configure: what opening and reopening a chip do.
    public func start(_ configuration: BarometerConfiguration) throws {
        try identify()
        try reset()
        try readCalibration()
        try configure(configuration)
    }

    /// "BMP280 at 0x76 on /dev/i2c-1", for logs.
    public var label: String { "\(identity.name) at \(baroHex(address)) on /dev/i2c-\(bus.number)" }

    /// Polls `register` until `(value & mask) == 0`, sleeping `stepMicroseconds` between reads.
    func waitUntilClear(_ register: UInt8, mask: UInt8, tries: Int = 50, stepMicroseconds: UInt32 = 1000, what: String) throws {
        for i in 0..<tries {
            if try bus.readRegister(address, register) & mask == 0 { return }
            if i + 1 < tries { usleep(stepMicroseconds) }
        }
        throw I2CError(
            .unexpectedResponse, bus: bus.number, address: address,
            operation: "\(what): register \(baroHex(register)) bit mask \(baroHex(mask)) still set after \(tries) ms; power-cycle the chip")
    }

    func checkID(_ value: UInt8) throws {
        guard identity.matches(id: value) else {
            var why =
                "reading the chip ID: register \(baroHex(identity.idRegister ?? 0)) holds \(baroHex(value)), not a \(identity.name) ("
                + identity.idValues.map(baroHex).joined(separator: "/") + ")"
            if let other = BarometerDrivers.identities.first(where: { $0.idRegister == identity.idRegister && $0.matches(id: value) }) {
                why += "; that ID is a \(other.name): set the chip to \(other.name) or auto"
            }
            throw I2CError(.unexpectedResponse, bus: bus.number, address: address, operation: why)
        }
    }
}

/// 0x76 style (named for this folder: other drivers may have their own helper).
func baroHex(_ v: UInt8) -> String {
    let s = String(v, radix: 16, uppercase: true)
    return "0x" + (s.count == 1 ? "0" + s : s)
}

func baroSameName(_ a: String, _ b: String) -> Bool { KnownChips.canonical(a) == KnownChips.canonical(b) }

/// One barometer in the driver table (`ChipTable.barometers`): how it is recognised, how its
/// driver is made, and what `osh-edge decode` takes and gives for it. Declared by its driver.
public struct BarometerChip: Sendable {
    public let identity: I2CChipIdentity
    public let layout: BarometerByteLayout
    private let make: @Sendable (I2CBus, UInt8) -> BarometerDriver
    private let decodeBytes: @Sendable ([UInt8], [UInt8]) throws -> BarometerDecodeResult

    public init(
        identity: I2CChipIdentity, layout: BarometerByteLayout,
        make: @escaping @Sendable (I2CBus, UInt8) -> BarometerDriver,
        decode: @escaping @Sendable ([UInt8], [UInt8]) throws -> BarometerDecodeResult
    ) {
        self.identity = identity
        self.layout = layout
        self.make = make
        self.decodeBytes = decode
    }

    /// The driver at `address`, without touching the bus.
    public func driver(bus: I2CBus, address: UInt8) -> BarometerDriver { make(bus, address) }

    /// Compensated values from the calibration bytes and one data burst, as the driver computes them.
    public func decode(calibration: [UInt8], burst: [UInt8]) throws -> BarometerDecodeResult { try decodeBytes(calibration, burst) }
}

/// Opening a barometer by name or by looking, from the driver table.
public enum BarometerDrivers {
    public static var chips: [BarometerChip] { ChipTable.barometers }
    public static var identities: [I2CChipIdentity] { chips.map(\.identity) }

    public static var names: [String] { identities.map(\.name) }

    /// The table's entry called `name` (case-insensitive, as the config spells it).
    public static func chip(named name: String) -> BarometerChip? {
        chips.first { baroSameName($0.identity.name, name) }
    }

    /// The identity called `name` (case-insensitive).
    public static func identity(named name: String) -> I2CChipIdentity? { chip(named: name)?.identity }

    /// A driver object for `identity` at `address`, without touching the bus.
    public static func driver(for identity: I2CChipIdentity, bus: I2CBus, address: UInt8) -> BarometerDriver? {
        chip(named: identity.name)?.driver(bus: bus, address: address)
    }

    /// Finds and starts a barometer. `chip` is a name from `names` or "auto" (every known chip at
    /// each of its addresses, by ID register); `address` nil tries the chip's addresses in order.
    /// Nothing answering anywhere throws an `I2CError` that `isAbsent`, naming what was tried; a
    /// chip that answers with another ID throws `.unexpectedResponse` naming the ID; an unknown
    /// `chip` name throws `BarometerDataError`.
    public static func open(
        bus: I2CBus, chip: String, address: UInt8?,
        configuration: BarometerConfiguration = BarometerConfiguration()
    ) throws -> BarometerDriver {
        let candidates: [I2CChipIdentity]
        if baroSameName(chip, "auto") {
            candidates = identities
        } else if let id = identity(named: chip) {
            candidates = [id]
        } else {
            throw BarometerDataError("barometer '\(chip)' is not a known chip; use one of \(names.joined(separator: ", ")) or auto")
        }
        // Addresses in the order the candidates list them (default straps first), each once.
        var addresses: [UInt8] = []
        if let a = address {
            addresses = [a]
        } else {
            for c in candidates { for a in c.addresses where !addresses.contains(a) { addresses.append(a) } }
        }
        var lastError: I2CError?
        var answered = false
        for a in addresses {
            for c in candidates where address != nil || c.addresses.contains(a) {
                guard let driver = driver(for: c, bus: bus, address: a) else { continue }
                do {
                    try driver.identify()
                } catch let e as I2CError {
                    if e.isAbsent { break }  // nothing at this address: skip its other candidates
                    answered = true
                    lastError = e
                    continue
                }
                try driver.reset()
                try driver.readCalibration()
                try driver.configure(configuration)
                return driver
            }
        }
        if !answered {
            let tried = candidates.map { c in
                "\(c.name) at " + c.addresses.filter { addresses.contains($0) }.map(baroHex).joined(separator: "/")
            }
            .joined(separator: ", ")
            throw I2CError(
                .noAcknowledge, bus: bus.number, address: nil, errno: EREMOTEIO,
                operation: "looking for a barometer (\(tried))")
        }
        if candidates.count > 1, let e = lastError, e.kind == .unexpectedResponse {
            throw I2CError(
                .unexpectedResponse, bus: bus.number, address: e.address,
                operation: "looking for a barometer: a chip answered but its ID is none of "
                    + names.joined(separator: ", ") + " (last: \(e.operation))")
        }
        throw lastError ?? I2CError(.noAcknowledge, bus: bus.number, address: address, operation: "looking for a barometer")
    }
}
