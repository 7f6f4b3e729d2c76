import OSHCore

/// What a linked simulation supplies for `source = "simulated"`: the demo's chips on a
/// simulated I²C bus and values for outputs no device feeds. The binary the .deb ships links no
/// simulator (`osh-edge`); `osh-edge-dev` registers OSHSimulation's provider at start.
public protocol SimulationProvider: AnyObject {
    /// A fresh simulated I²C bus; the attach calls below put chips on it.
    func makeI2CBus(number: Int) -> I2CBus
    /// The demo's barometer (`chip`) on `bus`, its weather following the monotonic clock.
    func attachBarometer(chip: String, to bus: I2CBus) throws
    /// The demo's IMU (`chip`, with its magnetometer) on `bus`.
    func attachIMU(chip: String, to bus: I2CBus) throws
    /// The demo's hygrometer (`chip`) on `bus`, its air following the monotonic clock.
    func attachHygrometer(chip: String, to bus: I2CBus) throws
    /// A pan-tilt unit's PCA9685 at `address` on `bus`.
    func attachPTZ(address: UInt8, to bus: I2CBus) throws
    /// Writes the values (time leaf excluded) of `outputName` at `t` s since the agent started
    /// into `out`; false when the simulation has nothing for that output.
    func fill(_ kind: OutputKind, at t: Double, into out: UnsafeMutableBufferPointer<Double>) -> Bool
}

public enum SimulationHooks {
    /// Set once at start, before any agent runs, by the executable that links a simulation.
    nonisolated(unsafe) public static var provider: SimulationProvider?

    /// Why `source = "simulated"` cannot run in this binary.
    public static let unavailable =
        "this binary has no simulation linked (osh-edge ships none); "
        + "use osh-edge-dev run --config FILE, or osh-edge-dev demo to try a node without hardware"

    /// The configured outputs with `source = "simulated"` must have a provider: refused at load
    /// (`run` and `config check`), not discovered when the devices open.
    /// `bytes`: the file's text, to name the line of each `source = "simulated"`.
    public static func check(_ settings: AgentSettings, path: String, bytes: [UInt8]? = nil) throws {
        guard provider == nil else { return }
        let simulated = settings.outputs.filter { $0.value.enabled && $0.value.source == .simulated }.map(\.key).sorted()
        guard !simulated.isEmpty else { return }
        let doc = bytes.map { ConfigParser.parseRecovering(bytes: $0, path: path).0 }
        let lines = simulated.map { name -> String in
            let line = doc?.sections.first { $0.name == ["outputs", name] }?.entry("source")?.line
            return "\(path):\(line.map { "\($0):" } ?? "") source = \"simulated\" for \(name): \(unavailable)"
        }
        throw SimulationUnavailable(description: lines.joined(separator: "\n"))
    }
}

public struct SimulationUnavailable: Error, CustomStringConvertible {
    public let description: String
}
