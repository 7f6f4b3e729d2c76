// Is a system on the node still sending? One classification used by every read-side
// command (and, later, anything else that draws a status), from the newest observation
// time the node reports. The thresholds live here and nowhere else.

/// live: newest observation ≤ `live` seconds old; stale: ≤ `stale`; offline: older, or nothing observed.
public enum SystemActivity: String, Sendable, CaseIterable, Comparable {
    case live, stale, offline

    /// live < stale < offline: sorting by activity puts live systems first.
    public static func < (a: SystemActivity, b: SystemActivity) -> Bool { a.rank < b.rank }

    private var rank: Int {
        switch self {
        case .live: return 0
        case .stale: return 1
        case .offline: return 2
        }
    }
}

public struct ActivityThresholds: Sendable, Equatable {
    /// Seconds: at most this old is live.
    public var live: Double
    /// Seconds: at most this old (and older than `live`) is stale.
    public var stale: Double

    public init(live: Double = 300, stale: Double = 1800) {
        self.live = live
        self.stale = stale
    }

    /// 5 min / 30 min.
    public static let standard = ActivityThresholds()
}

/// The end of a reported time range: an instant, or "now" (a range the node keeps open
/// because data is flowing, which counts as live).
public enum ObservedTime: Sendable, Equatable {
    case now
    case at(Double)

    /// `"now"` / `"latest"` → `.now`; an ISO-8601 time → `.at`; anything else nil.
    public static func parse(_ s: String) -> ObservedTime? {
        switch s {
        case "now", "latest": return .now
        default: return ISOTime.parse(s).map { .at($0) }
        }
    }

    /// The newer of two (`.now` beats every instant); nil when both are nil.
    public static func newest(_ a: ObservedTime?, _ b: ObservedTime?) -> ObservedTime? {
        switch (a, b) {
        case (nil, let x), (let x, nil): return x
        case (.now?, _), (_, .now?): return .now
        case (.at(let x)?, .at(let y)?): return .at(Swift.max(x, y))
        }
    }

    /// The instant, with `.now` read as `now`.
    public func seconds(now: Double) -> Double {
        switch self {
        case .now: return now
        case .at(let t): return t
        }
    }
}

public enum Activity {
    /// Classifies from the newest observation time. A time in the future (a board whose clock
    /// runs ahead of ours) is age 0: it is sending, whatever its clock says. NaN is "never".
    public static func classify(
        newest: ObservedTime?, now: Double,
        thresholds: ActivityThresholds = .standard
    ) -> SystemActivity {
        guard let newest else { return .offline }
        let t = newest.seconds(now: now)
        guard t.isFinite, now.isFinite else { return .offline }
        let age = Swift.max(0, now - t)
        if age <= thresholds.live { return .live }
        if age <= thresholds.stale { return .stale }
        return .offline
    }

    /// A system's newest time over its datastreams' reported ranges.
    public static func newest(_ times: [ObservedTime?]) -> ObservedTime? {
        times.reduce(nil) { ObservedTime.newest($0, $1) }
    }

    /// Age as a person reads it: `12 s`, `4 min`, `3 h`, `2 d`; `-` when never observed.
    public static func ageText(_ newest: ObservedTime?, now: Double) -> String {
        guard let newest else { return "-" }
        let age = Swift.max(0, now - newest.seconds(now: now))
        guard age.isFinite else { return "-" }
        if age < 120 { return "\(Int(age)) s" }
        if age < 7200 { return "\(Int(age / 60)) min" }
        if age < 172_800 { return "\(Int(age / 3600)) h" }
        return "\(Int(age / 86_400)) d"
    }
}
