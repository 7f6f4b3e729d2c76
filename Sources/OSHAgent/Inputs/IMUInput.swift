import OSHCore
import OSHPlatform

/// The `[imu]` part of the config, as the agent needs it.
public struct IMUSettings: Sendable, Equatable {
    public enum Pacing: String, Sendable {
        /// Read at `rateHz` on the loop's timer (the chip runs at the same rate): one burst per sample.
        case timer
        /// Poll twice as often and hand over only samples the chip's data-ready bit marks new.
        case dataReady = "data-ready"
        /// The chip samples into its hardware FIFO; every `burstInterval` one burst reads all
        /// whole samples (IIO buffered mode). A chip without a FIFO (BNO055) runs as `timer`.
        case fifo
    }

    /// N of /dev/i2c-N.
    public var bus: Int
    /// "auto" or a name from `IMUDrivers.identities` (the driver table's).
    public var chip: String
    /// nil: each of the chip's addresses.
    public var address: UInt8?
    /// "auto", "none", or a chip (the MPU-9250's AK8963 and the ICM-20948's AK09916 are
    /// built in; a LIS3MDL pairs with the LSM6DSOX or the ICM-42688-P).
    public var magnetometer: String
    public var magnetometerAddress: UInt8?
    public var accelRange: AccelRange
    public var gyroRange: GyroRange
    public var magnetometerRange: LIS3MDLRange
    public var rateHz: Double
    /// Board mounting, chip → device frame, applied to gyro, accel and magnetometer alike.
    public var mounting: AxisMap
    /// A separate magnetometer chip's axes relative to the IMU chip's (applied before `mounting`).
    public var magnetometerMounting: AxisMap
    public var pacing: Pacing
    /// Seconds between FIFO bursts as asked: the publisher's flush interval (observations
    /// leave only then). The input divides it so the chip's FIFO is at most two-thirds full between reads.
    public var burstInterval: Double
    /// The magnetometer output's period when it is published (nil when not). The magnetometer
    /// has no FIFO: it is read once per burst, so its observations come no faster than the
    /// bursts, and a burst comes at least this often.
    public var magnetometerInterval: Double?

    public init(
        bus: Int = 1, chip: String = "auto", address: UInt8? = nil, magnetometer: String = "auto",
        magnetometerAddress: UInt8? = nil, accelRange: AccelRange = .g4, gyroRange: GyroRange = .dps500,
        magnetometerRange: LIS3MDLRange = .gauss4, rateHz: Double = 100, mounting: AxisMap = .identity,
        magnetometerMounting: AxisMap = .identity, pacing: Pacing = .timer, burstInterval: Double = 0.25
    ) {
        self.bus = bus
        self.chip = chip
        self.address = address
        self.magnetometer = magnetometer
        self.magnetometerAddress = magnetometerAddress
        self.accelRange = accelRange
        self.gyroRange = gyroRange
        self.magnetometerRange = magnetometerRange
        self.rateHz = rateHz
        self.mounting = mounting
        self.magnetometerMounting = magnetometerMounting
        self.pacing = pacing
        self.burstInterval = burstInterval
    }

    /// From the validated `[i2c]`/`[imu]` config (its ranges and mounting are parsed values).
    public init(config: IMUConfig, bus: Int, rateHz: Double = 100, flushInterval: Double = 0.25) {
        self.init(
            bus: bus, chip: config.chip, address: config.address, magnetometer: config.magnetometer,
            magnetometerAddress: config.magnetometerAddress,
            accelRange: config.accelRange, gyroRange: config.gyroRange, rateHz: rateHz, mounting: config.mounting,
            pacing: config.fifo ? .fifo : .timer, burstInterval: flushInterval)
    }

    /// A 7-bit I²C address as config writes it: "0x68" or "104"; nil when it is not one.
    public static func parseAddress(_ text: String) -> UInt8? {
        let t = text.lowercased()
        let v = t.hasPrefix("0x") ? Int(t.dropFirst(2), radix: 16) : Int(t)
        guard let a = v, (0x03...0x77).contains(a) else { return nil }
        return UInt8(a)
    }

    public var driverSettings: IMUDriverSettings {
        IMUDriverSettings(
            accelRange: accelRange, gyroRange: gyroRange, rateHz: rateHz, magnetometer: magnetometer,
            magnetometerAddress: magnetometerAddress, magnetometerRange: magnetometerRange, mounting: mounting,
            fifo: pacing == .fifo)
    }
}

/// One IMU on the loop: its driver, a SensorPoller pacing it (pause + reopen with backoff
/// when the bus fails), and the mounting map; hands every sample to `onSample`.
public final class IMUInput {
    public let settings: IMUSettings
    /// Replaced once when a chip absent at start answers (it may sit at another of its addresses).
    public private(set) var driver: IMUDriver
    public let poller: SensorPoller
    /// Samples handed over.
    public private(set) var samples = 0
    /// Polls whose data-ready bit said "nothing new" (data-ready pacing only).
    public private(set) var notReady = 0
    /// FIFO pacing: overflows seen and the samples they cost.
    public private(set) var fifoOverflows = 0
    public private(set) var lostSamples = 0
    /// The chip's FIFO when this input reads it in bursts; nil when it polls registers.
    public var fifo: IMUFifoLayout? { settings.pacing == .fifo ? driver.fifo : nil }
    /// Seconds between polls (FIFO bursts or register reads).
    public let pollInterval: Double

    private let onSample: (IMUSample) -> Void
    private var sample = IMUSample()
    private var burst: [IMUSample] = []
    private var lastSampleTime: Double?

    /// Why a chip named in the configuration did not answer at start (nil: it did). Its outputs
    /// are registered under the table's names and it is looked for on the backoff.
    public private(set) var absentAtStart: I2CError?

    /// Opens the chip now. With "auto", nothing answering throws an `I2CError` that `isAbsent`
    /// (do not register its outputs); a chip named in the configuration that does not answer is
    /// kept as `absentAtStart` and opened by the poller when it answers. `start()` begins polling.
    public init(
        loop: EventLoop, bus: I2CBus, settings: IMUSettings, backoff: Backoff = Backoff(initial: 1, maximum: 30),
        sleep: @escaping (Double) -> Void = IMUDrivers.systemSleep,
        onSample: @escaping (IMUSample) -> Void
    ) throws {
        self.settings = settings
        self.onSample = onSample
        let d: IMUDriver
        do {
            d = try IMUDrivers.open(
                bus: bus, chip: settings.chip, address: settings.address,
                settings: settings.driverSettings, sleep: sleep)
        } catch let e as I2CError where e.isAbsent {
            // Not configured yet: the driver's reopen (identify, reset, configure) runs on the backoff.
            guard let chip = IMUDrivers.chip(named: settings.chip), let id = chip.identity.idValues.first else { throw e }
            d = chip.driver(
                bus: bus, address: settings.address ?? chip.identity.addresses[0], whoAmI: id,
                settings: settings.driverSettings, sleep: sleep)
            absentAtStart = e
        }
        driver = d
        if d.identity.name == IMUDrivers.bno055.name && settings.rateHz > 25 {
            // Usually on a 10 kHz bus (clock stretching): one 32-byte read then takes ≈30 ms.
            Log.notice(
                "BNO055: if the Pi's bus runs at 10 kHz (dtparam=i2c_arm_baudrate=10000), reads take ≈30 ms; "
                    + "set the IMU rate to 25 Hz or less")
        }
        let rate: Double
        if settings.pacing == .fifo, let f = d.fifo {
            var asked = settings.burstInterval
            if d.magnetometerName != nil || absentAtStart != nil, let m = settings.magnetometerInterval, m > 0, m < asked { asked = m }
            rate = 1 / f.burstInterval(asked: asked)
            burst.reserveCapacity(4 * f.readFrames)
        } else {
            rate = settings.pacing == .dataReady ? 2 * settings.rateHz : settings.rateHz
        }
        pollInterval = 1 / rate
        var poll: ((Double) throws -> Void)?
        var reopen: (() throws -> Void)?
        let name =
            absentAtStart == nil || settings.address != nil
            ? "\(d.identity.name) at 0x\(String(d.address, radix: 16, uppercase: true))" : d.identity.name
        poller = SensorPoller(
            loop: loop, name: name, rate: rate, backoff: backoff, reopen: { try reopen?() }, poll: { t in try poll?(t) })
        poll = { [unowned self] t in try self.tick(t) }
        reopen = { [unowned self] in
            guard self.absentAtStart != nil, self.samples == 0 else { return try self.driver.reopen() }
            // Never opened: looked for at each of its addresses, as at start.
            self.driver = try IMUDrivers.open(
                bus: bus, chip: settings.chip, address: settings.address, settings: settings.driverSettings, sleep: sleep)
        }
    }

    /// /dev/i2c-N for `settings` (the barometer may share it: each input may open its own fd).
    public static func openBus(_ settings: IMUSettings) throws -> I2CBus { try LinuxI2CBus(number: settings.bus) }

    /// The chip's name ("MPU9250"…) for output names and logs.
    public var chipName: String { driver.identity.name }
    /// The magnetometer in use, nil without one (then only IMU-mode fusion is possible).
    public var magnetometerName: String? { driver.magnetometerName }
    /// A chip not seen yet counts as having one when its package carries one (the MPU-9250's
    /// AK8963) or the configuration names one, so that output is registered too.
    public var hasMagnetometer: Bool {
        if driver.magnetometerName != nil { return true }
        guard absentAtStart != nil, samples == 0 else { return false }
        let named = settings.magnetometer.lowercased()
        return driver.identity.builtInMagnetometer != nil ? named != "none" : !(named == "none" || named == "auto" || named.isEmpty)
    }
    public var state: SensorPoller.State { poller.state }

    public func start() throws {
        if let e = absentAtStart { poller.startRetrying("\(e)") } else { try poller.start() }
    }
    public func stop() { poller.stop() }

    private func tick(_ t: Double) throws {
        if let f = fifo { return try burstTick(t, f) }
        let fresh = try driver.read(into: &sample)
        if settings.pacing == .dataReady && !fresh {
            notReady += 1
            return
        }
        sample.t = t
        Self.applyMounting(&sample, settings: settings, onChip: driver.appliesMountingOnChip)
        samples += 1
        onSample(sample)
    }

    /// One FIFO burst: every whole sample, each with its reconstructed time (IMUFifoTiming).
    private func burstTick(_ now: Double, _ f: IMUFifoLayout) throws {
        let r = try driver.readFIFO(into: &burst)
        if r.overflowed {
            // Everything since the last sample handed over is gone, not only what the FIFO held.
            let lost = max(r.lost, lastSampleTime.map { Int(((now - $0) * f.rateHz).rounded()) } ?? 0)
            fifoOverflows += 1
            lostSamples += lost
            lastSampleTime = now
            if fifoOverflows == 1 {
                Log.warning(
                    "\(chipName): FIFO overflowed (reads came too late), \(lost) samples lost; it was reset and "
                        + "reading goes on (logged once; `lostSamples` counts them)")
            }
            return
        }
        let n = burst.count
        var lastT: Double?
        for i in 0..<n {
            var s = burst[i]
            s.t = IMUFifoTiming.time(ofSample: i, count: n, readAt: now, rateHz: f.rateHz, previous: lastSampleTime)
            lastT = s.t
            Self.applyMounting(&s, settings: settings, onChip: driver.appliesMountingOnChip)
            samples += 1
            onSample(s)
        }
        if let lastT { lastSampleTime = lastT }
    }

    /// Chip frame → device frame for every vector (the BNO055 did it on the chip already).
    public static func applyMounting(_ s: inout IMUSample, settings: IMUSettings, onChip: Bool) {
        if !settings.magnetometerMounting.isIdentity, !onChip, let m = s.mag {
            s.mag = settings.magnetometerMounting.apply(m)
        }
        guard !onChip, !settings.mounting.isIdentity else { return }
        s.gyro = settings.mounting.apply(s.gyro)
        s.accel = settings.mounting.apply(s.accel)
        if let m = s.mag { s.mag = settings.mounting.apply(m) }
    }
}

/// Every known IMU and magnetometer answering on `bus` (address + ID register), for `osh-edge probe`.
public func probeIMUs(bus: I2CBus) -> [IMUProbeHit] { IMUDrivers.probe(bus: bus) }

extension IMUInput: ObservationSource {
    public var feeds: [OutputKind] { hasMagnetometer ? OutputKind.inertial : OutputKind.inertial.filter { $0 != .magnetometer } }
    public var isFaulted: Bool { poller.state.isRetrying }
    /// Its samples go through the orientation stage, which `Hardware` connects.
    public func connect(_ outputs: OutputConnections) throws {}
}
