#if canImport(Glibc)
import Glibc
#endif
import OSHCore

// The fetch halves of the IMU drivers: bus transactions only. Each chip family has one
// driver class; `IMUDrivers` is the table `osh-edge probe` and the agent walk. Conversions
// live in OSHCore/IMU (IMUConvert), so they are testable without a bus.

/// What a driver is asked to configure.
public struct IMUDriverSettings: Sendable, Equatable {
    public var accelRange: AccelRange
    public var gyroRange: GyroRange
    /// Output data rate the chip is configured for (Hz); the low-pass filter follows it.
    public var rateHz: Double
    /// "auto" (the chip's own, or a known one found on the bus), "none", or a chip name
    /// ("AK8963", "AK09916", "LIS3MDL").
    public var magnetometer: String
    /// For a separate magnetometer chip; nil tries its known addresses.
    public var magnetometerAddress: UInt8?
    public var magnetometerRange: LIS3MDLRange
    /// Board mounting. Raw IMUs leave it to the caller (IMUInput applies it to every vector);
    /// the BNO055 programs it into AXIS_MAP_CONFIG/SIGN so its on-chip fusion runs in the
    /// device frame (`IMUDriver.appliesMountingOnChip`).
    public var mounting: AxisMap
    /// Sample into the chip's hardware FIFO (read in bursts with `readFIFO`) where it has one.
    public var fifo: Bool

    public init(
        accelRange: AccelRange = .g4, gyroRange: GyroRange = .dps500, rateHz: Double = 100,
        magnetometer: String = "auto", magnetometerAddress: UInt8? = nil,
        magnetometerRange: LIS3MDLRange = .gauss4, mounting: AxisMap = .identity, fifo: Bool = false
    ) {
        self.accelRange = accelRange
        self.gyroRange = gyroRange
        self.rateHz = rateHz
        self.magnetometer = magnetometer
        self.magnetometerAddress = magnetometerAddress
        self.magnetometerRange = magnetometerRange
        self.mounting = mounting
        self.fifo = fifo
    }

    var wantsMagnetometer: Bool { magnetometer.lowercased() != "none" }
    var magnetometerIsAuto: Bool { IMUDrivers.normalise(magnetometer) == "AUTO" || magnetometer.isEmpty }

    /// A magnetometer that does not answer: with "auto" the IMU runs without one (logged);
    /// when the config names it, opening fails — but not as "absent", since the IMU is there.
    func magnetometerMissing(_ chip: String, bus: I2CBus, address: UInt8?, _ error: I2CError) throws {
        let why = "\(chip) magnetometer not found (\(error.operation))"
        if magnetometerIsAuto {
            Log.warning("/dev/i2c-\(bus.number): \(why); running without a magnetometer (no heading, IMU-only fusion)")
            return
        }
        throw I2CError(
            .unexpectedResponse, bus: bus.number, address: address,
            operation: "opening the IMU: the configured \(why); check it, or set the magnetometer to auto or none")
    }
}

/// One IMU chip (plus its magnetometer) on an I²C bus.
public protocol IMUDriver: AnyObject {
    var identity: I2CChipIdentity { get }
    var address: UInt8 { get }
    var bus: I2CBus { get }
    /// The ID register's value read at open.
    var whoAmI: UInt8 { get }
    /// The magnetometer in use ("AK8963", "LIS3MDL"…), nil when there is none.
    var magnetometerName: String? { get }
    /// True when the chip applies `settings.mounting` itself (BNO055): do not apply it again.
    var appliesMountingOnChip: Bool { get }
    var settings: IMUDriverSettings { get }
    /// Reset, identify and configure again (what opening did): the poller's reopen.
    func reopen() throws
    /// Burst-reads one sample into `sample` (no allocation). Returns false when the chip's
    /// data-ready bit said nothing new was there (the values are then the previous ones).
    func read(into sample: inout IMUSample) throws -> Bool
    /// The FIFO as configured; nil when the driver polls registers (no FIFO, or `settings.fifo` off).
    var fifo: IMUFifoLayout? { get }
    /// Reads every whole sample waiting in the FIFO into `samples` (emptied first, its capacity
    /// kept), oldest first, `t` unset; the magnetometer, read once, goes on the last one.
    func readFIFO(into samples: inout [IMUSample]) throws -> IMUFifoRead
}

extension IMUDriver {
    public var fifo: IMUFifoLayout? { nil }
    public func readFIFO(into samples: inout [IMUSample]) throws -> IMUFifoRead {
        samples.removeAll(keepingCapacity: true)
        throw I2CError(
            .unsupported, bus: bus.number, address: address,
            operation: "\(identity.name): reading a FIFO this driver does not configure; use timer pacing")
    }
}

/// What one FIFO read found besides the samples.
public struct IMUFifoRead: Sendable, Equatable {
    /// The FIFO had overflowed: it was reset and its content dropped.
    public var overflowed = false
    /// Samples the overflow cost (at least those dropped with the reset).
    public var lost = 0
    public init(overflowed: Bool = false, lost: Int = 0) {
        self.overflowed = overflowed
        self.lost = lost
    }
}

/// Something a driver found on the bus while probing.
public struct IMUProbeHit: Sendable, Equatable {
    public var identity: I2CChipIdentity
    public var address: UInt8
    public var whoAmI: UInt8
}

/// One IMU in the driver table (`ChipTable.imus`): how it is recognised, how its ID is read and
/// how its driver is made once it answered. Declared by its driver.
public struct IMUChip: Sendable {
    public let identity: I2CChipIdentity
    private let readIDFunc: (@Sendable (I2CBus, UInt8) throws -> UInt8)?
    private let make: @Sendable (I2CBus, UInt8, UInt8, IMUDriverSettings, @escaping (Double) -> Void) -> IMUDriver

    /// `readID`: only for a chip whose ID register needs more than one read (a register bank).
    public init(
        identity: I2CChipIdentity, readID: (@Sendable (I2CBus, UInt8) throws -> UInt8)? = nil,
        make:
            @escaping @Sendable (
                _ bus: I2CBus, _ address: UInt8, _ whoAmI: UInt8, _ settings: IMUDriverSettings,
                _ sleep: @escaping (Double) -> Void
            ) -> IMUDriver
    ) {
        self.identity = identity
        readIDFunc = readID
        self.make = make
    }

    /// The ID register's value at `address`.
    public func readID(bus: I2CBus, address: UInt8) throws -> UInt8 {
        if let f = readIDFunc { return try f(bus, address) }
        return try bus.readRegister(address, identity.idRegister ?? 0)
    }

    /// The driver for a chip that answered `whoAmI`, not yet reset or configured (no bus traffic).
    public func driver(
        bus: I2CBus, address: UInt8, whoAmI: UInt8, settings: IMUDriverSettings,
        sleep: @escaping (Double) -> Void
    ) -> IMUDriver {
        make(bus, address, whoAmI, settings, sleep)
    }
}

public enum IMUDrivers {
    // The chips tests and tools name (the identities are their drivers').
    public static let mpu6050 = MPUDriver.mpu6050
    public static let mpu6500 = MPUDriver.mpu6500
    public static let mpu9250 = MPUDriver.mpu9250
    public static let icm20948 = ICM20948Driver.icm20948
    public static let icm42688p = ICM42688Driver.icm42688p
    public static let lsm6dsox = LSM6DSOXDriver.lsm6dsox
    public static let bno055 = BNO055Driver.bno055
    public static let ak8963 = MPUDriver.ak8963
    public static let lis3mdl = SeparateMagnetometer.lis3mdl

    public static var chips: [IMUChip] { ChipTable.imus }
    /// Every IMU this build can drive, in probing order.
    public static var identities: [I2CChipIdentity] { chips.map(\.identity) }
    /// Magnetometers on the bus (probe lists them; `open` pairs them).
    public static var magnetometers: [I2CChipIdentity] { ChipTable.magnetometers.filter { $0.name != ICM20948Driver.ak09916.name } }

    /// The identity a config name means (case and dashes ignored: "mpu-9250" = "MPU9250").
    public static func identity(named name: String) -> I2CChipIdentity? {
        let key = normalise(name)
        return (identities + ChipTable.magnetometers).first { normalise($0.name) == key }
    }

    /// The table's entry for an IMU called `name`.
    public static func chip(named name: String) -> IMUChip? {
        let key = normalise(name)
        return chips.first { normalise($0.identity.name) == key }
    }

    static func normalise(_ s: String) -> String { KnownChips.canonical(s) }

    /// The real sleep (reset and mode-change waits). Tests pass a no-op.
    public static let systemSleep: @Sendable (Double) -> Void = { seconds in
        if seconds > 0 { usleep(UInt32(min(seconds, 4) * 1e6)) }
    }

    /// Opens `chip` ("auto" or a name from `identities`) at `address` (nil: each of the chip's
    /// addresses), identifies it by its ID register, resets and configures it.
    /// Nothing answering is an `I2CError` that `isAbsent`, naming what was tried; a chip that
    /// answers with the wrong ID is `.unexpectedResponse` saying what it looks like instead.
    public static func open(
        bus: I2CBus, chip: String = "auto", address: UInt8? = nil,
        settings: IMUDriverSettings = IMUDriverSettings(),
        sleep: @escaping (Double) -> Void = IMUDrivers.systemSleep
    ) throws -> IMUDriver {
        let candidates: [I2CChipIdentity]
        if normalise(chip) == "AUTO" || chip.isEmpty {
            candidates = identities
        } else if let id = identity(named: chip), id.kind == .imu {
            candidates = [id]
        } else {
            throw I2CError(
                .unexpectedResponse, bus: bus.number, address: address,
                operation: "choosing an IMU driver: \"\(chip)\" is not a supported IMU (use auto or one of "
                    + identities.map(\.name).joined(separator: ", ") + ")")
        }
        var tried: [String] = []
        var wrongID: I2CError?
        for id in candidates {
            let addrs = address.map { [$0] } ?? id.addresses
            tried.append(id.name + " at " + addrs.map(hex).joined(separator: "/"))
            for a in addrs {
                let value: UInt8
                do { value = try readID(bus: bus, identity: id, address: a) } catch let e as I2CError where e.isAbsent {
                    continue
                }
                guard id.matches(id: value) else {
                    if candidates.count == 1 {
                        let other = identities.first { $0.idRegister == id.idRegister && $0.matches(id: value) }
                        wrongID = I2CError(
                            .unexpectedResponse, bus: bus.number, address: a,
                            operation: "identifying \(id.name): register \(hex(id.idRegister ?? 0)) reads \(hex(value)), expected "
                                + id.idValues.map(hex).joined(separator: " or ")
                                + (other.map { " — that is an \($0.name); set the chip to \($0.name) or auto" }
                                    ?? " — another chip owns this address"))
                    }
                    continue
                }
                guard let c = Self.chip(named: id.name) else { continue }
                return try make(c, bus: bus, address: a, whoAmI: value, settings: settings, sleep: sleep)
            }
        }
        if let e = wrongID { throw e }
        throw I2CError(
            .noAcknowledge, bus: bus.number, address: address,
            operation: "looking for an IMU (tried " + tried.joined(separator: ", ") + ")")
    }

    static func make(
        _ chip: IMUChip, bus: I2CBus, address: UInt8, whoAmI: UInt8,
        settings: IMUDriverSettings, sleep: @escaping (Double) -> Void
    ) throws -> IMUDriver {
        let d = chip.driver(bus: bus, address: address, whoAmI: whoAmI, settings: settings, sleep: sleep)
        try d.reopen()
        return d
    }

    /// Reads a chip's ID register (through its table entry when it is one: a register bank first).
    static func readID(bus: I2CBus, identity id: I2CChipIdentity, address: UInt8) throws -> UInt8 {
        if let c = chip(named: id.name) { return try c.readID(bus: bus, address: address) }
        return try bus.readRegister(address, id.idRegister ?? 0)
    }

    /// Every known IMU and magnetometer answering on `bus`, by address and ID register.
    /// Reads only, but for the bank resets of the ICM-20948 (0x7F) and the ICM-42688-P (0x76, put
    /// back when the chip turns out to be another), each to a register that chip owns.
    public static func probe(bus: I2CBus) -> [IMUProbeHit] {
        var hits: [IMUProbeHit] = []
        var seen: Set<UInt8> = []
        for id in identities + magnetometers {
            for a in id.addresses where !seen.contains(a) {
                guard let v = try? readID(bus: bus, identity: id, address: a), id.matches(id: v) else { continue }
                hits.append(IMUProbeHit(identity: id, address: a, whoAmI: v))
                seen.insert(a)
            }
        }
        return hits
    }

    static func hex(_ v: UInt8) -> String {
        let s = String(v, radix: 16, uppercase: true)
        return "0x" + (s.count == 1 ? "0" + s : s)
    }
}

/// Shared by the drivers: register writes with a useful error, and one reusable read buffer.
final class IMURegisterIO {
    let bus: I2CBus
    let address: UInt8
    let chip: String
    /// Allocated once; every burst reads into it.
    let buffer: UnsafeMutableRawBufferPointer

    init(bus: I2CBus, address: UInt8, chip: String, capacity: Int) {
        self.bus = bus
        self.address = address
        self.chip = chip
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 8)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
    }

    deinit { buffer.deallocate() }

    func write(_ reg: UInt8, _ value: UInt8, at addr: UInt8? = nil) throws { try bus.writeRegister(addr ?? address, reg, value) }
    func read(_ reg: UInt8, at addr: UInt8? = nil) throws -> UInt8 { try bus.readRegister(addr ?? address, reg) }

    /// Reads the FIFO's whole frames (`frames` of them) at `reg`, `perTransfer` frames per
    /// I²C read at most, calling `frame(view, offset)` for each. The register is not advanced
    /// by the chip (FIFO_R_W, FIFO_DATA_OUT), so each read starts at `reg` again.
    func drain(_ reg: UInt8, frames: Int, frameBytes: Int, perTransfer: Int, _ frame: (UnsafeRawBufferPointer, Int) -> Void) throws {
        var done = 0
        while done < frames {
            let k = min(perTransfer, frames - done)
            let p = try burst(reg, k * frameBytes)
            for i in 0..<k { frame(p, i * frameBytes) }
            done += k
        }
    }

    /// The InvenSense burst (MPU-6050/6500/9250, ICM-20948): FIFO_COUNTH/L at `countRegister`;
    /// a count at capacity is an overflow (`reset`, the frames counted as lost); else every
    /// whole frame from `dataRegister`, decoded into `samples`.
    func readInvensenseFIFO(
        _ layout: IMUFifoLayout, count countRegister: UInt8, data dataRegister: UInt8,
        accelScale: Double, gyroScale: Double, reset: () throws -> Void,
        into samples: inout [IMUSample]
    ) throws -> IMUFifoRead {
        let c = try burst(countRegister, 2)
        let count = Int(c[0] & 0x1F) << 8 | Int(c[1])
        if layout.overflowed(count: count) {
            try reset()
            return IMUFifoRead(overflowed: true, lost: max(1, layout.wholeFrames(count: count)))
        }
        var s = IMUSample()
        try drain(
            dataRegister, frames: layout.wholeFrames(count: count), frameBytes: layout.frameBytes,
            perTransfer: layout.framesPerTransfer
        ) { p, at in
            IMUFifoFrames.invensense(p, at: at, accelScale: accelScale, gyroScale: gyroScale, into: &s)
            samples.append(s)
        }
        return IMUFifoRead()
    }

    /// Reads `count` bytes at `reg` into the buffer and returns a view of them.
    func burst(_ reg: UInt8, _ count: Int, at addr: UInt8? = nil) throws -> UnsafeRawBufferPointer {
        let view = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
        try bus.readRegisters(addr ?? address, reg, into: view)
        return UnsafeRawBufferPointer(view)
    }

    /// `readFIFO` on a driver opened without `settings.fifo`.
    func noFIFO() -> I2CError {
        I2CError(
            .unsupported, bus: bus.number, address: address,
            operation: "\(chip): reading the FIFO, which was not configured (open with fifo, or use timer pacing)")
    }

    func unexpected(_ what: String, at addr: UInt8? = nil) -> I2CError {
        I2CError(.unexpectedResponse, bus: bus.number, address: addr ?? address, operation: "\(chip): \(what)")
    }
}

/// Picks the widest filter bandwidth not above half the output rate (Nyquist), from a table
/// of (code, bandwidth Hz); the narrowest when none fits.
func lowPassCode(for rate: Double, _ table: [(code: UInt8, hz: Double)]) -> UInt8 {
    let fitting = table.filter { $0.hz <= rate / 2 }
    if let best = fitting.max(by: { $0.hz < $1.hz }) { return best.code }
    return table.min(by: { $0.hz < $1.hz })?.code ?? 0
}

/// Puts a burst's one magnetometer reading on its samples: every sample carries the latest
/// field, only the last marks it new — and the first too when no reading came before it
/// (`firstEver`), so a filter that initialises from its first sample starts with a heading.
func attachMagnetometer(_ mag: IMUVector?, new: Bool, firstEver: Bool, to samples: inout [IMUSample]) {
    guard !samples.isEmpty else { return }
    for i in samples.indices { samples[i].mag = mag }
    samples[samples.count - 1].magIsNew = new
    if firstEver && new { samples[0].magIsNew = true }
}
