#if canImport(Glibc)
import Glibc
#endif

// The I²C seam. Drivers talk to an `I2CBus`; on a board it is `LinuxI2CBus` (/dev/i2c-N,
// I2C_RDWR), in tests and the demo it is OSHSimulation's `SimulatedI2CBus` with datasheet-modelled chips.
// A driver's fetch half issues transactions; its convert half (in OSHCore) never sees the bus.

/// What went wrong on the bus, classified the way a driver must react to it.
public struct I2CError: Error, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// No ACK (ENXIO/EREMOTEIO): nothing answers at this address — the chip is absent,
        /// unpowered, or strapped to the other address.
        case noAcknowledge
        /// EIO/ETIMEDOUT/EAGAIN…: the bus misbehaved (noise, a stuck SDA, clock stretching on a Pi).
        /// Retry with backoff.
        case busFault
        /// /dev/i2c-N does not exist: the adapter is not enabled.
        case adapterMissing
        case permissionDenied
        /// The adapter cannot do combined transactions (I2C_FUNC_I2C missing).
        case unsupported
        /// A chip answered with something its datasheet does not allow (wrong ID, bad calibration).
        case unexpectedResponse
    }

    public let kind: Kind
    public let bus: Int
    public let address: UInt8?
    public let errno: Int32
    /// What was being done, e.g. "reading 6 bytes at 0xF7".
    public let operation: String

    public init(_ kind: Kind, bus: Int, address: UInt8?, errno: Int32 = 0, operation: String) {
        self.kind = kind
        self.bus = bus
        self.address = address
        self.errno = errno
        self.operation = operation
    }

    /// The chip is not there (as opposed to there but failing).
    public var isAbsent: Bool { kind == .noAcknowledge }

    /// Maps an errno from I2C_RDWR to a kind (adapter drivers differ: bcm2835 says EREMOTEIO
    /// for a NACK, designware ENXIO, some EIO for both — EIO is treated as bus trouble).
    public static func kind(forErrno e: Int32) -> Kind {
        switch e {
        case ENXIO, EREMOTEIO: return .noAcknowledge
        case ENOENT, ENODEV: return .adapterMissing
        case EACCES, EPERM: return .permissionDenied
        case EOPNOTSUPP: return .unsupported
        default: return .busFault
        }
    }

    public var description: String {
        let at = address.map { " at 0x" + String($0, radix: 16, uppercase: true) } ?? ""
        let dev = "/dev/i2c-\(bus)"
        let why = errno != 0 ? ": " + Errno(errno).text : ""
        switch kind {
        case .noAcknowledge:
            return "\(dev)\(at): no chip answered while \(operation)\(why); check wiring, power and the address strap"
        case .busFault:
            return "\(dev)\(at): bus error while \(operation)\(why); check wiring and pull-ups (will retry)"
        case .adapterMissing:
            return "\(dev) does not exist\(why); enable I²C with dtparam=i2c_arm=on in /boot/firmware/config.txt "
                + "(or raspi-config → Interface Options → I2C) and reboot, or load i2c-dev"
        case .permissionDenied:
            return "\(dev)\(why) while \(operation); run as a member of group i2c (the service unit does)"
        case .unsupported:
            return "\(dev): the adapter cannot do combined write-read transfers (I2C_FUNC_I2C); use another bus"
        case .unexpectedResponse:
            return "\(dev)\(at): unexpected response while \(operation)"
        }
    }
}

/// One I²C adapter. Transactions are synchronous: at 400 kHz a 14-byte burst takes ~0.4 ms,
/// less than a loop wake-up, so the event loop calls them directly.
public protocol I2CBus: AnyObject {
    /// N of /dev/i2c-N (for messages and config).
    var number: Int { get }
    /// Writes `write` then, after a repeated start (no stop), reads `read.count` bytes — one
    /// combined transaction, so no other master can move the chip's register pointer between.
    /// Either side may be empty. Throws `I2CError`.
    func transfer(address: UInt8, write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws
}

extension I2CBus {
    /// Reads `into.count` bytes starting at `register` (chips auto-increment the pointer).
    public func readRegisters(_ address: UInt8, _ register: UInt8, into: UnsafeMutableRawBufferPointer) throws {
        var reg = register
        try withUnsafeBytes(of: &reg) { try transfer(address: address, write: $0, read: into) }
    }

    public func readRegister(_ address: UInt8, _ register: UInt8) throws -> UInt8 {
        var reg = register
        var value: UInt8 = 0
        try withUnsafeBytes(of: &reg) { w in
            try withUnsafeMutableBytes(of: &value) { r in try transfer(address: address, write: w, read: r) }
        }
        return value
    }

    public func writeRegister(_ address: UInt8, _ register: UInt8, _ value: UInt8) throws {
        var pair = (register, value)
        try withUnsafeBytes(of: &pair) {
            try transfer(address: address, write: $0, read: UnsafeMutableRawBufferPointer(start: nil, count: 0))
        }
    }

    /// Reads a register region into a new array (configuration time only: it allocates).
    public func readBlock(_ address: UInt8, _ register: UInt8, count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        try out.withUnsafeMutableBytes { try readRegisters(address, register, into: $0) }
        return out
    }
}
