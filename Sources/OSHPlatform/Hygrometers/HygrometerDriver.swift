import OSHCore

// The fetch half of the humidity chips: bus transactions only; conversion is in OSHCore/Hygrometers.

/// A humidity and temperature chip on an I²C bus.
public protocol HygrometerDriver: AnyObject {
    var identity: I2CChipIdentity { get }
    var bus: I2CBus { get }
    var address: UInt8 { get }
    /// Checks that the chip at `address` is this one (an ID register, or a serial number whose CRC
    /// holds for chips without one); throws `.noAcknowledge` when nothing answers.
    func identify() throws
    /// Soft reset, then the first measurement is started.
    func start() throws
    /// The measurement started at the previous call (or at `start`), and starts the next one: nil
    /// when none is ready yet. So a reading describes the air at the previous read. No allocation.
    func read() throws -> HygrometerReading?
}

extension HygrometerDriver {
    /// "SHT4x at 0x44 on /dev/i2c-1", for logs.
    public var label: String {
        let a = String(address, radix: 16, uppercase: true)
        return "\(identity.name) at 0x\(a.count == 1 ? "0" + a : a) on /dev/i2c-\(bus.number)"
    }
}

/// One hygrometer in the driver table (`ChipTable.hygrometers`). Declared by its driver.
public struct HygrometerChip: Sendable {
    public let identity: I2CChipIdentity
    private let make: @Sendable (I2CBus, UInt8) -> HygrometerDriver

    public init(identity: I2CChipIdentity, make: @escaping @Sendable (I2CBus, UInt8) -> HygrometerDriver) {
        self.identity = identity
        self.make = make
    }

    /// The driver at `address`, without touching the bus.
    public func driver(bus: I2CBus, address: UInt8) -> HygrometerDriver { make(bus, address) }
}

/// Opening a hygrometer by name or by looking, from the driver table.
public enum HygrometerDrivers {
    public static var chips: [HygrometerChip] { ChipTable.hygrometers }
    public static var names: [String] { chips.map(\.identity.name) }

    /// The table's entry called `name` (or one of its aliases), case and dashes ignored.
    public static func chip(named name: String) -> HygrometerChip? { chips.first { $0.identity.isNamed(name) } }

    /// Finds and starts a hygrometer: `chip` a name or "auto" (every known chip at each of its
    /// addresses); `address` nil tries the chip's addresses in order. Nothing answering throws an
    /// `I2CError` that `isAbsent`; a chip that is not what it was asked for throws
    /// `.unexpectedResponse`.
    public static func open(bus: I2CBus, chip: String, address: UInt8?) throws -> HygrometerDriver {
        let candidates: [HygrometerChip]
        if KnownChips.canonical(chip) == "AUTO" {
            candidates = chips
        } else if let c = Self.chip(named: chip) {
            candidates = [c]
        } else {
            throw HygrometerDataError("hygrometer '\(chip)' is not a known chip; use one of \(names.joined(separator: ", ")) or auto")
        }
        var lastError: I2CError?
        var tried: [String] = []
        for c in candidates {
            let addresses = address.map { [$0] } ?? c.identity.addresses
            tried.append(c.identity.name + " at " + addresses.map { "0x" + String($0, radix: 16, uppercase: true) }.joined(separator: "/"))
            for a in addresses {
                let d = c.driver(bus: bus, address: a)
                do {
                    try d.identify()
                } catch let e as I2CError {
                    if !e.isAbsent { lastError = e }
                    continue
                }
                try d.start()
                return d
            }
        }
        throw lastError
            ?? I2CError(
                .noAcknowledge, bus: bus.number, address: address,
                operation: "looking for a hygrometer (" + tried.joined(separator: ", ") + ")")
    }
}
