#if canImport(Glibc)
import Glibc
#endif

// The barometer's convert side after the chip's compensation (Zephyr-style: the fetch, bus
// transactions, is in OSHPlatform's drivers): what one read gives (`BarometerReading`), what the
// `barometer` output carries (`BarometerSample`) and the rules that turn a session of reads into
// samples (`BarometerSeries`). Pure: `BarometerInput` feeds the reads in and acts on the verdicts.

/// One compensated measurement.
public struct BarometerReading: Sendable, Equatable {
    /// Pressure in hPa, what the `barometer` output carries.
    public var pressureHPa: Double
    /// The same in Pa, as the chip's formula produced it (Bosch compensates in Pa, ST in hPa:
    /// each unit is the exact result and the other one the converted value).
    public var pressurePa: Double
    public var celsius: Double
    /// Relative humidity (%), BME280 only.
    public var humidityPercent: Double?

    public init(pressurePa: Double, celsius: Double, humidityPercent: Double? = nil) {
        (self.pressurePa, self.pressureHPa, self.celsius, self.humidityPercent) = (pressurePa, pressurePa / 100, celsius, humidityPercent)
    }

    public init(pressureHPa: Double, celsius: Double, humidityPercent: Double? = nil) {
        (self.pressureHPa, self.pressurePa, self.celsius, self.humidityPercent) = (pressureHPa, pressureHPa * 100, celsius, humidityPercent)
    }
}

/// The `barometer` output's values (field names: OutputCatalogue's leaf names).
public struct BarometerSample: OutputSample, Equatable {
    public static let kind = OutputKind.barometer
    /// hPa.
    public var pressure = 0.0
    /// Metres above the session's first sample.
    public var relativeAltitude = 0.0
    public init() {}
    public init(pressure: Double, relativeAltitude: Double) {
        self.pressure = pressure
        self.relativeAltitude = relativeAltitude
    }
    public func write(to s: inout SlotWriter) {
        s.set("pressure", pressure)
        s.set("relativeAltitude", relativeAltitude)
    }
}

/// The reads of one session (the agent's run: it outlives the chip's reopens) turned into
/// samples: `relativeAltitude` from the first good sample, implausible pressures skipped, and
/// a chip that answers but stops converting reported as failing.
public struct BarometerSeries: Sendable, Equatable {
    public enum Verdict: Equatable {
        case sample(BarometerSample)
        /// Nothing usable this time: no conversion yet.
        case skip
        /// A pressure no barometer on Earth reads (outside `RelativeAltitude.plausibleHPa`, or not
        /// a number): a glitch or a chip gone wrong; counted and said, never sent.
        case implausible(hPa: Double)
        /// `emptyReads` reads in a row without a conversion; until a conversion arrives each
        /// further empty read fails too.
        case failure(emptyReads: Int)
    }

    /// Reads without a conversion tolerated before they count as failures (start-up takes one or two).
    public static let emptyReadsTolerated = 10

    public private(set) var altitude = RelativeAltitude()
    private var consecutiveEmpty = 0

    public init() {}

    /// The verdict on one read; nil is a read without a conversion.
    public mutating func take(_ reading: BarometerReading?) -> Verdict {
        guard let r = reading else {
            consecutiveEmpty += 1
            // A chip that was reset behind our back (a brown-out: sleep mode, data at the reset value)
            // answers but never delivers: after a while that is a failure, so the poller reconfigures it.
            return consecutiveEmpty > Self.emptyReadsTolerated ? .failure(emptyReads: consecutiveEmpty) : .skip
        }
        consecutiveEmpty = 0
        let rel = altitude.update(pressureHPa: r.pressureHPa)
        guard rel.isFinite else { return .implausible(hPa: r.pressureHPa) }
        return .sample(BarometerSample(pressure: r.pressureHPa, relativeAltitude: rel))
    }
}

/// Altitude change since the first good pressure sample of a session, as CMAltimeter's
/// `relativeAltitude` reports it: 0 at the first sample, positive going up.
///
/// Each pressure is turned into an ISA pressure altitude, h(p) = T0/L · (1 − (p/p0)^(R·L/(g·M)))
/// with T0 = 288.15 K, L = 0.0065 K/m, p0 = 1013.25 hPa (exponent 0.190263, T0/L = 44330.77 m),
/// and the result is h(p) − h(p_first). Taking the difference of two ISA altitudes, rather than
/// putting p_first in the place of p0, scales the lapse with the starting altitude as the
/// standard atmosphere does (the two differ by ≈ 2 % at 700 m). Weather moves it by ~8 m/hPa: it
/// is a relative measure for minutes, not a survey altitude. Pure and allocation-free.
public struct RelativeAltitude: Sendable, Equatable {
    public static let seaLevelHPa = 1013.25
    public static let exponent = 0.190263
    public static let scaleMetres = 44330.77
    /// A sample outside this range is not "good" (a skipped measurement, a glitch): it is not
    /// taken as the reference and gives NaN.
    public static let plausibleHPa: ClosedRange<Double> = 250...1300

    /// The first good sample's pressure altitude (m), nil before one arrived.
    public private(set) var referenceAltitude: Double?

    public init() {}

    /// ISA pressure altitude of `hPa` (m).
    @inlinable public static func pressureAltitude(hPa: Double) -> Double {
        scaleMetres * (1 - pow(hPa / seaLevelHPa, exponent))
    }

    /// The altitude relative to the session's first good sample; the first good sample sets the
    /// reference and gives 0. NaN for an implausible sample.
    public mutating func update(pressureHPa: Double) -> Double {
        guard pressureHPa.isFinite, Self.plausibleHPa.contains(pressureHPa) else { return .nan }
        let h = Self.pressureAltitude(hPa: pressureHPa)
        guard let ref = referenceAltitude else {
            referenceAltitude = h
            return 0
        }
        return h - ref
    }

    /// Forgets the reference: the next good sample is 0 again (a new session).
    public mutating func reset() { referenceAltitude = nil }
}
