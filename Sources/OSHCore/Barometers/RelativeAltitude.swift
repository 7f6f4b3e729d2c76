#if canImport(Glibc)
import Glibc
#endif

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
