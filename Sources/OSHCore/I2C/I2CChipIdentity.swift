// How a chip is recognised on an I²C bus: the addresses its address pins allow and the
// register that holds its fixed ID, and what it measures. Each driver declares its chip's;
// the driver table (OSHPlatform's ChipTable) lists them for the config, probe and decode.

public struct I2CChipIdentity: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case barometer, imu, magnetometer, hygrometer, servoDriver = "servo-driver"
    }

    /// What a chip measures: which outputs it can feed.
    public struct Measures: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public static let pressure = Measures(rawValue: 1 << 0)
        public static let temperature = Measures(rawValue: 1 << 1)
        public static let humidity = Measures(rawValue: 1 << 2)
        public static let acceleration = Measures(rawValue: 1 << 3)
        public static let rotation = Measures(rawValue: 1 << 4)
        public static let magneticField = Measures(rawValue: 1 << 5)
        /// Fused on the chip (the BNO055's own quaternion).
        public static let orientation = Measures(rawValue: 1 << 6)
    }

    /// As the config names it, e.g. `BMP280`.
    public var name: String
    public var kind: Kind
    /// 7-bit addresses, the default strap first.
    public var addresses: [UInt8]
    /// nil for chips without an ID register (they are recognised by address only, weakly).
    public var idRegister: UInt8?
    /// Values the ID register may hold (engineering samples and revisions differ).
    public var idValues: [UInt8]
    /// Something a user must know to use the chip on a Pi (e.g. clock stretching).
    public var note: String
    public var measures: Measures
    /// The magnetometer inside the package, as the driver reports it (AK8963 in an MPU-9250); nil
    /// when it has none. Android names the magnetometer output after it.
    public var builtInMagnetometer: String?
    /// Other names users give the same part (the SHT40, SHT41 and SHT45 are one chip on the bus).
    public var aliases: [String]

    public init(
        name: String, kind: Kind, addresses: [UInt8], idRegister: UInt8?, idValues: [UInt8], note: String = "",
        measures: Measures = [], builtInMagnetometer: String? = nil, aliases: [String] = []
    ) {
        self.name = name
        self.kind = kind
        self.addresses = addresses
        self.idRegister = idRegister
        self.idValues = idValues
        self.note = note
        self.measures = measures
        self.builtInMagnetometer = builtInMagnetometer
        self.aliases = aliases
    }

    /// True when `name` is this chip's name or an alias, compared as `KnownChips.canonical` does.
    public func isNamed(_ name: String) -> Bool {
        let c = KnownChips.canonical(name)
        return KnownChips.canonical(self.name) == c || aliases.contains { KnownChips.canonical($0) == c }
    }

    /// True when `value`, read from `idRegister`, names this chip.
    public func matches(id value: UInt8) -> Bool { idValues.contains(value) }
}
