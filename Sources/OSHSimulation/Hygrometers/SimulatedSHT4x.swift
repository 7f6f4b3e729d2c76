#if canImport(Glibc)
import Glibc
#endif
import OSHCore
import OSHPlatform

/// The air a simulated hygrometer measures: called at each measurement.
public typealias HygrometerEnvironment = () -> (celsius: Double, percent: Double)

/// What a hygrometer driver's chip is, simulated. Each simulated chip's file conforms its driver,
/// so the driver table reaches the model through the driver.
public protocol SimulatedHygrometerModel {
    func simulatedDevice(environment: @escaping HygrometerEnvironment) -> SimulatedI2CDevice
}

/// An SHT4x on the simulated bus, as its datasheet describes the protocol: one-byte commands
/// (measure at three precisions, serial number, soft reset), each answer read afterwards as six
/// bytes with a CRC per word; a read before the measurement is done is NACKed, as is a read with
/// no command before it. Unknown commands are NACKed.
public final class SimulatedSHT4x: SimulatedI2CDevice {
    public var environment: HygrometerEnvironment
    public var serialNumber: UInt32 = 0x1234_5678
    /// Corrupts the next answer's CRC (noise on the wire).
    public var corruptNextCRC = false
    public private(set) var measurements = 0
    public private(set) var resets = 0
    /// The pending answer and when it is ready (monotonic ns).
    private var pending: (bytes: [UInt8], readyAt: UInt64)?
    private let now: () -> UInt64

    public init(environment: @escaping HygrometerEnvironment, now: @escaping () -> UInt64 = { Clock.monotonicNanoseconds() }) {
        self.environment = environment
        self.now = now
    }

    private static func words(_ a: UInt16, _ b: UInt16) -> [UInt8] {
        let w = [UInt8(a >> 8), UInt8(a & 0xFF), UInt8(b >> 8), UInt8(b & 0xFF)]
        return [w[0], w[1], SHT4x.crc8(w[0], w[1]), w[2], w[3], SHT4x.crc8(w[2], w[3])]
    }

    public func transfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws {
        if write.count == 1 {
            let t = now()
            switch write[0] {
            case SHT4x.measureHighPrecision, SHT4x.measureMediumPrecision, SHT4x.measureLowPrecision:
                let e = environment()
                let ticks = SHT4x.ticks(celsius: e.celsius, percent: e.percent)
                let seconds = write[0] == SHT4x.measureHighPrecision ? 0.0083 : write[0] == SHT4x.measureMediumPrecision ? 0.0045 : 0.0016
                pending = (Self.words(ticks.temperature, ticks.humidity), t + UInt64(seconds * 1e9))
                measurements += 1
            case SHT4x.readSerialNumber:
                pending = (Self.words(UInt16(serialNumber >> 16), UInt16(serialNumber & 0xFFFF)), t)
            case SHT4x.softReset:
                pending = nil
                resets += 1
            default:
                throw SimulatedI2CFault.nack
            }
        } else if !write.isEmpty {
            throw SimulatedI2CFault.nack
        }
        guard read.count > 0 else { return }
        guard let p = pending, now() >= p.readyAt else { throw SimulatedI2CFault.nack }
        pending = nil
        var bytes = p.bytes
        if corruptNextCRC { bytes[2] ^= 0xFF; corruptNextCRC = false }
        for i in 0..<min(read.count, bytes.count) { read[i] = bytes[i] }
    }
}

extension SHT4xDriver: SimulatedHygrometerModel {
    public func simulatedDevice(environment: @escaping HygrometerEnvironment) -> SimulatedI2CDevice {
        SimulatedSHT4x(environment: environment)
    }
}

/// Builds a simulated hygrometer from the driver table's name for it.
public enum SimulatedHygrometerBoard {
    @discardableResult
    public static func attach(
        to bus: SimulatedI2CBus, chip: String, address: UInt8? = nil,
        environment: @escaping HygrometerEnvironment
    ) throws -> SimulatedI2CDevice {
        guard let entry = HygrometerDrivers.chip(named: chip) else {
            throw HygrometerDataError(
                "cannot simulate hygrometer '\(chip)': not a known chip; use one of "
                    + HygrometerDrivers.names.joined(separator: ", "))
        }
        let a = address ?? entry.identity.addresses[0]
        guard let model = entry.driver(bus: bus, address: a) as? SimulatedHygrometerModel else {
            throw HygrometerDataError("cannot simulate hygrometer '\(entry.identity.name)': no model for its driver")
        }
        let device = model.simulatedDevice(environment: environment)
        bus.attach(device, at: a)
        return device
    }

    /// The demo's air: 21.5 ± 0.5 °C (as its barometer's), 45 ± 5 %RH over a quarter of an hour.
    public static func demoAir(_ t: Double) -> (celsius: Double, percent: Double) {
        (21.5 + 0.5 * sin(2 * Double.pi * t / 600), 45 + 5 * sin(2 * Double.pi * t / 900))
    }
}
