import OSHCore
import OSHPlatform

/// The `[hygrometer]` settings.
public struct HygrometerSettings: Sendable, Equatable {
    public var bus: Int
    /// A name from `HygrometerDrivers.names` (or an alias), or "auto".
    public var chip: String
    public var address: UInt8?
    /// Readings per second (at most 10: a measurement takes up to 10 ms).
    public var rateHz: Double

    public init(bus: Int = 1, chip: String = "auto", address: UInt8? = nil, rateHz: Double = 1) {
        self.bus = bus
        self.chip = chip
        self.address = address
        self.rateHz = min(max(rateHz, 0.001), 10)
    }
}

/// One hygrometer feeding `temperature` and `humidity`: the driver and a `SensorPoller` that
/// paces it and reopens it with backoff. A chip named in the configuration that is not there at
/// start is looked for on the backoff (its outputs are registered); "auto" that finds nothing
/// throws, and the barometer feeds temperature instead.
public final class HygrometerInput {
    public typealias TemperatureSink = (_ monotonicTime: Double, _ sample: TemperatureSample) -> Void
    public typealias HumiditySink = (_ monotonicTime: Double, _ sample: HumiditySample) -> Void

    public private(set) var driver: HygrometerDriver
    public let poller: SensorPoller
    public let settings: HygrometerSettings
    public private(set) var lastReading: HygrometerReading?
    public private(set) var samples = 0
    public private(set) var absentAtStart: I2CError?
    /// The outputs' ports once the runtime starts (`Hardware.start`).
    public var temperatureSink: TemperatureSink?
    public var humiditySink: HumiditySink?
    /// When the previous read started the measurement the next read collects.
    private var measurementStarted: Double?

    public init(
        loop: EventLoop, bus: I2CBus, settings: HygrometerSettings,
        backoff: Backoff = Backoff(initial: 1, maximum: 30)
    ) throws {
        self.settings = settings
        do {
            driver = try HygrometerDrivers.open(bus: bus, chip: settings.chip, address: settings.address)
        } catch let e as I2CError where e.isAbsent && settings.chip != "auto" {
            guard let chip = HygrometerDrivers.chip(named: settings.chip) else { throw e }
            driver = chip.driver(bus: bus, address: settings.address ?? chip.identity.addresses[0])
            absentAtStart = e
        }
        var pollHandler: ((Double) throws -> Void)?
        var reopenHandler: (() throws -> Void)?
        poller = SensorPoller(
            loop: loop, name: "hygrometer \(driver.identity.name)", rate: settings.rateHz, backoff: backoff,
            reopen: { try reopenHandler?() }, poll: { t in try pollHandler?(t) })
        pollHandler = { [unowned self] t in try self.poll(at: t) }
        reopenHandler = { [unowned self] in
            self.measurementStarted = nil
            self.driver = try HygrometerDrivers.open(bus: bus, chip: self.driver.identity.name, address: settings.address)
        }
    }

    public func start() throws {
        if let e = absentAtStart { poller.startRetrying("\(e)") } else { try poller.start() }
    }

    public func stop() { poller.stop() }

    /// A reading describes the air when the previous read started its measurement: stamped so.
    func poll(at t: Double) throws {
        let started = measurementStarted
        measurementStarted = t
        guard let r = try driver.read() else { return }
        lastReading = r
        samples += 1
        let when = started ?? t
        temperatureSink?(when, TemperatureSample(celsius: r.celsius))
        humiditySink?(when, HumiditySample(percent: r.humidityPercent))
    }
}

extension HygrometerInput: ObservationSource {
    public var feeds: [OutputKind] { [.temperature, .humidity] }
    public var isFaulted: Bool { poller.state.isRetrying }

    public func connect(_ outputs: OutputConnections) throws {
        temperatureSink = try outputs.port(TemperatureSample.self)?.sink
        humiditySink = try outputs.port(HumiditySample.self)?.sink
    }
}
