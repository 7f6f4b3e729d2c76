#if canImport(Glibc)
import Glibc
#endif
import OSHCore
import OSHPlatform

/// A made-up value that is not a number becomes standard conditions (a simulated chip never traps).
func saneEnvironment(_ e: (hPa: Double, celsius: Double)) -> (hPa: Double, celsius: Double) {
    (e.hPa.isFinite ? e.hPa : 1013.25, e.celsius.isFinite ? e.celsius : 15)
}

/// What a barometer driver's chip is, simulated: its register map, measuring `environment`. Each
/// simulated chip's file conforms its driver, so the driver table reaches the model through the
/// driver and no list of simulated chips exists apart from the table.
public protocol SimulatedBarometerModel {
    func simulatedDevice(environment: BarometerEnvironment?) throws -> RegisterMapDevice
}

/// Builds a simulated barometer for the demo and tests: the chip `chip` (a name from
/// `BarometerDrivers.names`) with a real part's calibration, attached to `bus` at `address`
/// (nil: the chip's default strap), measuring `environment`. The agent then reads it through the
/// real driver and the real compensation.
public enum SimulatedBarometerBoard {
    /// Real parts' calibration bytes (the reference vectors' sets, see Tests/OSHCoreTests/Fixtures/baro):
    /// the BMP280 datasheet's worked example, pimoroni's BME280, elixir-sensors' BMP388.
    public static let bmp280Calibration: [UInt8] = [
        0x70, 0x6B, 0x43, 0x67, 0x18, 0xFC, 0x7D, 0x8E, 0x43, 0xD6, 0xD0, 0x0B,
        0x27, 0x0B, 0x8C, 0x00, 0xF9, 0xFF, 0x8C, 0x3C, 0xF8, 0xC6, 0x70, 0x17,
    ]
    public static let bme280Calibration: [UInt8] = [
        0x69, 0x6D, 0x36, 0x64, 0x32, 0x00, 0xE9, 0x98, 0x02, 0xD6, 0xD0, 0x0B, 0x23,
        0x16, 0x88, 0xFF, 0xF9, 0xFF, 0x8C, 0x3C, 0xF8, 0xC6, 0x70, 0x17, 0x00, 0x4B,
    ]
    public static let bme280HumidityCalibration: [UInt8] = [0x78, 0x01, 0x00, 0x11, 0x2E, 0x03, 0x1E]
    public static let bmp3Calibration: [UInt8] = [
        0x23, 0x6B, 0x58, 0x49, 0xF6, 0x5C, 0xFF, 0xCE, 0xF4, 0x23, 0x00, 0xEA, 0x63, 0x6E,
        0x79, 0xF3, 0xF6, 0xAA, 0x43, 0x12, 0xC4,
    ]

    /// The simulated chip for `chip` (not attached), as its driver's simulation extension models
    /// it. Throws for a name the driver table does not know, or a chip nothing simulates.
    public static func makeDevice(chip: String, environment: BarometerEnvironment?) throws -> RegisterMapDevice {
        guard let entry = BarometerDrivers.chip(named: chip) else {
            throw BarometerDataError(
                "cannot simulate barometer '\(chip)': not a known chip; use one of \(BarometerDrivers.names.joined(separator: ", "))")
        }
        // The driver's type carries its chip's model (SimulatedBarometerModel, in its chip's file).
        guard let model = entry.driver(bus: SimulatedI2CBus(), address: 0) as? SimulatedBarometerModel else {
            throw BarometerDataError("cannot simulate barometer '\(entry.identity.name)': no register model for its driver")
        }
        return try model.simulatedDevice(environment: environment)
    }

    /// Attaches a simulated `chip` at `address` (default: the chip's first address) and returns it.
    @discardableResult
    public static func attach(
        to bus: SimulatedI2CBus, chip: String, address: UInt8? = nil,
        environment: @escaping BarometerEnvironment
    ) throws -> RegisterMapDevice {
        let device = try makeDevice(chip: chip, environment: environment)
        let a = address ?? BarometerDrivers.identity(named: chip)?.addresses.first ?? 0x76
        bus.attach(device, at: a)
        return device
    }

    /// Plausible weather for the demo as a function of time `t` (s): 1008 hPa drifting slowly, a
    /// walk up and down a flight of stairs (±3 m, 0.36 hPa) every two minutes, 21.5 ± 0.5 °C.
    public static func demoWeather(_ t: Double) -> (hPa: Double, celsius: Double) {
        let stairs = 3.0 * sin(2 * Double.pi * t / 120)
        return (1008 - 0.2 * sin(2 * Double.pi * t / 3600) - stairs * 0.12, 21.5 + 0.5 * sin(2 * Double.pi * t / 600))
    }
}
