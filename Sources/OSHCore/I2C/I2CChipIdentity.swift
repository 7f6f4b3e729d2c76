// How a chip is recognised on an I²C bus: the addresses its address pins allow and the
// register that holds its fixed ID. `osh-edge probe` walks these; each driver declares its own.

public struct I2CChipIdentity: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case barometer, imu, magnetometer, servoDriver = "servo-driver"
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

    public init(name: String, kind: Kind, addresses: [UInt8], idRegister: UInt8?, idValues: [UInt8], note: String = "") {
        self.name = name
        self.kind = kind
        self.addresses = addresses
        self.idRegister = idRegister
        self.idValues = idValues
        self.note = note
    }

    /// True when `value`, read from `idRegister`, names this chip.
    public func matches(id value: UInt8) -> Bool { idValues.contains(value) }
}
