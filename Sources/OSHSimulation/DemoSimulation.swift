import OSHCore
import OSHPlatform

/// OSHSimulation behind the agent's `source = "simulated"` seam: the demo's chips on a simulated
/// I²C bus (read by the real drivers) and `SimulatedSensors` values for outputs no device feeds.
public final class DemoSimulation: SimulationProvider {
    private let sensors = SimulatedSensors()

    public init() {}

    /// Registers the simulation with the agent; osh-edge-dev, osh-edge-sim and the tests call it before any agent runs.
    public static func install() {
        if SimulationHooks.provider == nil { SimulationHooks.provider = DemoSimulation() }
    }

    /// `OSH_EDGE_SIM_FAULTS=FILE` lets another process fail and restore chips (the soak).
    public func makeI2CBus(number: Int) -> I2CBus {
        SimulatedI2CBus(number: number, recordsTrace: false, faultFile: SimulatedI2CBus.faultFileFromEnvironment())
    }

    public func attachBarometer(chip: String, to bus: I2CBus) throws {
        try SimulatedBarometerBoard.attach(to: simulatedBus(bus), chip: chip) {
            SimulatedBarometerBoard.demoWeather(Double(Clock.monotonicNanoseconds()) / 1e9)
        }
    }

    public func attachHygrometer(chip: String, to bus: I2CBus) throws {
        try SimulatedHygrometerBoard.attach(to: simulatedBus(bus), chip: chip) {
            SimulatedHygrometerBoard.demoAir(Double(Clock.monotonicNanoseconds()) / 1e9)
        }
    }

    public func attachIMU(chip: String, to bus: I2CBus) throws {
        _ = try SimulatedIMUBoard.attach(to: simulatedBus(bus), chip: chip)
    }

    public func attachPTZ(address: UInt8, to bus: I2CBus) throws {
        try simulatedBus(bus).attach(SimulatedPCA9685(), at: address)
    }

    public func fill(_ kind: OutputKind, at t: Double, into out: UnsafeMutableBufferPointer<Double>) -> Bool {
        sensors.fill(kind, at: t, into: out)
        return true
    }

    /// The hardware asks only for buses this provider made.
    private func simulatedBus(_ bus: I2CBus) throws -> SimulatedI2CBus {
        guard let b = bus as? SimulatedI2CBus else {
            throw I2CError(
                .unexpectedResponse, bus: bus.number, address: nil,
                operation: "attaching a simulated chip to bus \(bus.number), which is not a simulated bus")
        }
        return b
    }
}
