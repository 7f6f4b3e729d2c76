import OSHCore
import OSHPlatform

/// The `[barometer]` settings: which chip, where, how often, how smooth.
public struct BarometerSettings: Sendable, Equatable {
    /// N of /dev/i2c-N (1 on a Pi's header pins 3/5).
    public var bus: Int
    /// A name from `BarometerDrivers.names` (BMP280, BME280, BMP388, BMP390, LPS22HB) or "auto".
    public var chip: String
    /// nil: the chip's addresses in order (0x76/0x77, or 0x5D/0x5C).
    public var address: UInt8?
    /// Output rate (samples/s); the chip is configured to produce at least this many.
    public var rateHz: Double
    public var oversampling: BarometerOversampling

    public init(bus: Int = 1, chip: String = "auto", address: UInt8? = nil, rateHz: Double = 1,
                oversampling: BarometerOversampling = .standard) {
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

    public let driver: BarometerDriver
    public let poller: SensorPoller
    public let settings: BarometerSettings
    public private(set) var series = BarometerSeries()
    public private(set) var lastReading: BarometerReading?
    /// Samples handed to the sink, and reads that gave nothing usable (no conversion yet, implausible).
    public private(set) var samples = 0
    public private(set) var skipped = 0
    /// Where samples go: the `barometer` output's port once the runtime starts (`Hardware.start`).
    public var sink: Sink
    /// The chip's temperature and (BME280) humidity with each sample, when those outputs are published.
    public var temperatureSink: ((_ monotonicTime: Double, _ sample: TemperatureSample) -> Void)?
    public var humiditySink: ((_ monotonicTime: Double, _ sample: HumiditySample) -> Void)?

    /// Opens the chip on `bus` (identify, reset, calibration, configuration). Throws an `I2CError`
    /// when it is absent (`isAbsent`: do not register the output) or answers wrongly, or a
    /// `BarometerDataError` for an unknown chip name.
    public init(loop: EventLoop, bus: I2CBus, settings: BarometerSettings,
                backoff: Backoff = Backoff(initial: 1, maximum: 30), sink: @escaping Sink = { _, _ in }) throws {
        self.settings = settings
        self.sink = sink
        let driver = try BarometerDrivers.open(bus: bus, chip: settings.chip, address: settings.address,
                                               configuration: settings.configuration)
        self.driver = driver
        let configuration = settings.configuration
        // The poller exists before `self` is complete; its poll closure reaches `poll` through this box.
        var pollHandler: ((Double) throws -> Void)?
        poller = SensorPoller(loop: loop, name: "barometer \(driver.identity.name)", rate: settings.rateHz, backoff: backoff,
                              reopen: { try driver.start(configuration) },
                              poll: { t in try pollHandler?(t) })
        pollHandler = { [unowned self] t in try self.poll(at: t) }
    }

    /// Opens /dev/i2c-N for `settings` (Linux).
    public static func openBus(_ settings: BarometerSettings) throws -> I2CBus { try LinuxI2CBus(number: settings.bus) }

    public func start() throws { try poller.start() }
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
        case .failure(let emptyReads):
            skipped += 1
            throw I2CError(.unexpectedResponse, bus: driver.bus.number, address: driver.address,
                           operation: "reading: no conversion in \(emptyReads) reads (the chip left normal mode?)")
        }
    }
}
