#if canImport(Glibc)
import Glibc
#endif
import OSHCore

/// Logs to stderr with syslog priority prefixes (`<3>` error … `<7>` debug), which
/// journald turns into levels. Secrets never reach here: callers log
/// requests through `CSRequest.description`, which redacts Authorization.
public enum Log {
    public enum Level: Int32, Sendable, Comparable {
        case error = 3, warning = 4, notice = 5, info = 6, debug = 7
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }

        public var word: String {
            switch self {
            case .error: return "error"
            case .warning: return "warning"
            case .notice: return "notice"
            case .info: return "info"
            case .debug: return "debug"
            }
        }
    }

    nonisolated(unsafe) public static var threshold: Level = .info
    /// Tests and the demo's table may silence logging.
    nonisolated(unsafe) public static var muted = false
    /// A test seam: when set, every line that passes `threshold` goes here instead of stderr, also
    /// while `muted` (tests mute stderr and still read what would have been logged). Set it and read
    /// what it collects on one thread; nil in production.
    nonisolated(unsafe) public static var sink: ((Level, String) -> Void)?

    public static func write(_ level: Level, _ message: String) {
        guard level <= threshold else { return }
        if let sink { return sink(level, message) }
        guard !muted else { return }
        var line = format(level, message, journal: toJournal, now: Clock.realtimeSeconds())
        line.withUTF8 { _ = Glibc.write(2, $0.baseAddress, $0.count) }
    }

    /// systemd sets JOURNAL_STREAM when a unit's stderr is the journal, which reads the `<N>`
    /// priority and stamps its own time. Anywhere else (a terminal, a file, a pipe) a line
    /// carries its UTC time and its level in words.
    static let toJournal: Bool = getenv("JOURNAL_STREAM") != nil

    public static func format(_ level: Level, _ message: String, journal: Bool, now: Double) -> String {
        if journal { return "<\(level.rawValue)>" + message + "\n" }
        return ISOTime.string(epochSeconds: now) + " " + level.word + ": " + message + "\n"
    }

    /// Debug lines are built only when they are written (`[log] level = "debug"`).
    public static var isDebug: Bool { threshold >= .debug && (sink != nil || !muted) }

    public static func error(_ m: String) { write(.error, m) }
    public static func warning(_ m: String) { write(.warning, m) }
    public static func notice(_ m: String) { write(.notice, m) }
    public static func info(_ m: String) { write(.info, m) }
    public static func debug(_ m: @autoclosure () -> String) {
        guard isDebug else { return }
        write(.debug, m())
    }
}
