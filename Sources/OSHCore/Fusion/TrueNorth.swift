// True-north heading: the magnetic orientation turned by the WMM declination at the
// current GPS fix. Declination changes slowly in space (~0.1° per 10 km at mid
// latitudes) and time (~0.1°/year), so it is recomputed only when the fix has moved
// more than `recomputeMeters` or `recomputeSeconds` have passed since the last time.
//
// Without a fix (decision, also in the report):
// - fix lost after we had one → HOLD the last declination (a board that loses its sky
//   rarely moved far; status `.held` says since when);
// - no fix ever → declination 0, i.e. the heading is magnetic (status `.noFixYet`). The
//   agent must say so in device_health/logs; if the datastream was registered with
//   TrueHeading, this is the one case where the values are magnetic. Seed it from a
//   stored last position (`seed`) to avoid that.
#if canImport(Glibc)
import Glibc
#endif

public final class TrueNorth {
    public enum Status: Sendable, Equatable {
        /// No fix has ever been seen: declination 0 (magnetic heading).
        case noFixYet
        /// Computed from a current fix.
        case current
        /// The fix was lost; holding the declination computed at that time (Unix seconds).
        case held(sinceUnixTime: Double)
    }

    public let model: WorldMagneticModel
    public let recomputeMeters: Double
    public let recomputeSeconds: Double
    /// Declination (degrees, east positive) in use; 0 before the first fix.
    public private(set) var declination = 0.0
    public private(set) var status = Status.noFixYet
    /// The full field at the last computation (nil before the first).
    public private(set) var lastField: GeomagneticField?
    /// How many times WMM has been evaluated (for tests and health).
    public private(set) var evaluations = 0
    private var lastLatitude = 0.0, lastLongitude = 0.0, lastTime = 0.0

    public init(model: WorldMagneticModel = WorldMagneticModel(), recomputeMeters: Double = 1000, recomputeSeconds: Double = 86_400) {
        self.model = model
        self.recomputeMeters = recomputeMeters
        self.recomputeSeconds = recomputeSeconds
    }

    /// Feed every GPS fix (cheap unless it moved > 1 km or a day passed). Height in metres
    /// above the ellipsoid (MSL is within ~100 m of it — irrelevant for declination).
    /// Returns true when the declination was recomputed.
    @discardableResult
    public func update(latitude: Double, longitude: Double, heightMeters: Double = 0, unixTime: Double) -> Bool {
        guard latitude.isFinite, longitude.isFinite, unixTime.isFinite, abs(latitude) <= 90, abs(longitude) <= 360 else { return false }
        let needed =
            lastField == nil
            || Self.distanceMeters(lastLatitude, lastLongitude, latitude, longitude) > recomputeMeters
            || abs(unixTime - lastTime) > recomputeSeconds
        status = .current
        guard needed else { return false }
        let f = model.field(
            latitude: latitude, longitude: longitude, heightKm: (heightMeters.isFinite ? heightMeters : 0) / 1000,
            decimalYear: DecimalYear.from(unixSeconds: unixTime))
        lastField = f
        declination = f.declination
        lastLatitude = latitude
        lastLongitude = longitude
        lastTime = unixTime
        evaluations += 1
        return true
    }

    /// Seed from a stored last position (e.g. the state directory) before any fix; the
    /// status is `.held` from `unixTime`.
    public func seed(latitude: Double, longitude: Double, heightMeters: Double = 0, unixTime: Double) {
        if update(latitude: latitude, longitude: longitude, heightMeters: heightMeters, unixTime: unixTime) || lastField != nil {
            status = .held(sinceUnixTime: unixTime)
        }
    }

    /// Tell it the fix is gone (no-fix sentence, GPS timeout): holds the last declination.
    public func fixLost(unixTime: Double) {
        if case .current = status { status = .held(sinceUnixTime: unixTime) }
    }

    /// Whether the model date was inside its validity window at the last computation.
    public var modelDateIsValid: Bool { lastField?.dateIsValid ?? true }

    /// A magnetic-north orientation turned to true north (heading + declination).
    public func apply(_ q: Quaternion) -> Quaternion { Self.rotate(q, declinationDegrees: declination) }

    /// q_true = R_z(−D) · q_magnetic: a device facing magnetic north faces D east of true north.
    public static func rotate(_ q: Quaternion, declinationDegrees d: Double) -> Quaternion {
        guard d != 0 else { return q }
        return Quaternion(axis: Vector3(0, 0, 1), angle: -d * .pi / 180) * q
    }

    /// Great-circle distance (haversine, mean Earth radius).
    public static func distanceMeters(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let r = 6_371_008.8, rad = Double.pi / 180
        let dLat = (lat2 - lat1) * rad, dLon = (lon2 - lon1) * rad
        let a = sin(dLat / 2) * sin(dLat / 2) + cos(lat1 * rad) * cos(lat2 * rad) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * r * asin(min(1, a.squareRoot()))
    }
}
