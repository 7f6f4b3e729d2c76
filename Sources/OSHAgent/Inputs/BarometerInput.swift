import OSHCore
import OSHPlatform

/// The `[barometer]` settings: which chip, where, how often, how smooth.
public struct BarometerSettings: Sendable, Equatable {
    /// N of /dev/i2c-N (1 on a Pi's header pins 3/5).
    public var bus: Int
    /// A name from `BarometerDrivers.names` (the driver table's) or "auto".
    public var chip: String
    /// nil: the chip's addresses in order (0x76/0x77, or 0x5D/0x5C).
    public var address: UInt8?
    /// Output rate (samples/s); the chip is configured to produce at least this many.
    public var rateHz: Double
    public var oversampling: BarometerOversampling

    public init(
        bus: Int = 1, chip: String = "auto", address: UInt8? = nil, rateHz: Double = 1,
        oversampling: BarometerOversampling = .standard
    ) {
        self.bus = bus
        self.chip = chip
        self.address = address
        self.rateHz = rateHz
        self.oversampling = oversampling
    }

    public var configuration: BarometerConfiguration { BarometerConfiguration(rateHz: rateHz, oversampling: oversampling) }
}

/// One barometer feeding the `barometer` output: owns the driver and a `SensorPoller` that paces
/// it on the loop and reopens it with backoff when it fails; each read goes through the session's
/// `BarometerSeries` (kept across reopens: the session is the agent's run), which decides what
/// becomes a sample.
public final class BarometerInput {
    /// (monotonic time of the read in s, the `barometer` output's values).
    public typealias Sink = (_ monotonicTime: Double, _ sample: BarometerSample) -> Void

    /// The chip's driver: replaced when the chip is found again after it was absent.
    public private(set) var driver: BarometerDriver
    public let poller: SensorPoller
    public let settings: BarometerSettings
    public private(set) var series = BarometerSeries()
    public private(set) var lastReading: BarometerReading?
    /// Samples handed to the sink, and reads that gave nothing usable (no conversion yet, implausible).
    public private(set) var samples = 0
    public private(set) var skipped = 0
    /// Pressures outside what a barometer on Earth reads: counted, the first said with its value.
    public private(set) var implausible = 0
    /// Not answering when the agent started: the poller looks for it on its backoff.
    public private(set) var absentAtStart: I2CError?
    /// Where samples go: the `barometer` output's port once the runtime starts (`Hardware.start`).
    public var sink: Sink
    /// The chip's temperature and (BME280) humidity with each sample, when those outputs are published.
    public var temperatureSink: ((_ monotonicTime: Double, _ sample: TemperatureSample) -> Void)?
    public var humiditySink: ((_ monotonicTime: Double, _ sample: HumiditySample) -> Void)?

    /// Opens the chip on `bus` (identify, reset, calibration, configuration). Throws an `I2CError`
    /// when it answers wrongly, or when it is absent and `chip` is "auto" (`isAbsent`: nothing is
    /// known to register); a `BarometerDataError` for an unknown chip name. A chip named in the
    /// configuration that does not answer yet (powered late, a loose jumper) is looked for on the
    /// poller's backoff: its outputs are registered and resume when it answers.
    public init(
        loop: EventLoop, bus: I2CBus, settings: BarometerSettings,
        backoff: Backoff = Backoff(initial: 1, maximum: 30), sink: @escaping Sink = { _, _ in }
    ) throws {
        self.settings = settings
        self.sink = sink
        let configuration = settings.configuration
        do {
            driver = try BarometerDrivers.open(bus: bus, chip: settings.chip, address: settings.address, configuration: configuration)
        } catch let e as I2CError where e.isAbsent && settings.chip != "auto" {
            guard let chip = BarometerDrivers.chip(named: settings.chip) else { throw e }
            driver = chip.driver(bus: bus, address: settings.address ?? chip.identity.addresses[0])
            absentAtStart = e
        }
        // The poller exists before `self` is complete; its closures reach `self` through these boxes.
        var pollHandler: ((Double) throws -> Void)?
        var reopenHandler: (() throws -> Void)?
        poller = SensorPoller(
            loop: loop, name: "barometer \(driver.identity.name)", rate: settings.rateHz, backoff: backoff,
            reopen: { try reopenHandler?() }, poll: { t in try pollHandler?(t) })
        pollHandler = { [unowned self] t in try self.poll(at: t) }
        reopenHandler = { [unowned self] in
            // Opened as at start: a chip that was absent may answer at its other address now.
            self.driver = try BarometerDrivers.open(
                bus: bus, chip: self.driver.identity.name, address: settings.address,
                configuration: configuration)
        }
    }

    /// Opens /dev/i2c-N for `settings` (Linux).
    public static func openBus(_ settings: BarometerSettings) throws -> I2CBus { try LinuxI2CBus(number: settings.bus) }

    public func start() throws {
        if let e = absentAtStart {
            poller.startRetrying("\(e)")
        } else {
            try poller.start()
        }
    }
    public func stop() { poller.stop() }

    /// One read: a bus error propagates to the poller (it counts failures and reopens), and so
    /// does a chip that stopped converting.
    func poll(at t: Double) throws {
        let reading = try driver.read()
        switch series.take(reading) {
        case .sample(let sample):
            lastReading = reading
            samples += 1
            sink(t, sample)
            if let r = reading {
                temperatureSink?(t, TemperatureSample(celsius: r.celsius))
                if let h = r.humidityPercent { humiditySink?(t, HumiditySample(percent: h)) }
            }
        case .skip:
            skipped += 1
        case .implausible(let hPa):
            skipped += 1
            implausible += 1
            if implausible == 1 {
                Log.warning(
                    "\(driver.label): read \(hPa) hPa, which no barometer on Earth reads "
                        + "(\(Int(RelativeAltitude.plausibleHPa.lowerBound))–\(Int(RelativeAltitude.plausibleHPa.upperBound)) hPa); "
                        + "such readings are dropped and counted (a failing chip, or noise on the bus)")
            }
        case .failure(let emptyReads):
            skipped += 1
            throw I2CError(
                .unexpectedResponse, bus: driver.bus.number, address: driver.address,
                operation: "reading: no conversion in \(emptyReads) reads (the chip left normal mode?)")
        }
    }
}

extension BarometerInput: ObservationSource {
    /// The pressure, and the air's temperature (and humidity, if the chip measures it).
    public var feeds: [OutputKind] {
        [.barometer, .temperature] + (driver.identity.measures.contains(.humidity) ? [.humidity] : [])
    }
    public var isFaulted: Bool { poller.state.isRetrying }

    public func connect(_ outputs: OutputConnections) throws {
        if let p = try outputs.port(BarometerSample.self) { sink = p.sink }
        temperatureSink = try outputs.port(TemperatureSample.self)?.sink
        if feeds.contains(.humidity) { humiditySink = try outputs.port(HumiditySample.self)?.sink }
    }
}
