import OSHCore
import OSHPlatform

/// The composition root. CLI commands call into here; nothing below knows about the CLI.
public enum Agent {
    public static let version = "0.1.0"

    public static func now() -> Double { Clock.realtimeSeconds() }

    public static func peakRSSKiB() -> Int { ProcessStats.maxRSSKiB() }

    public static func linkedLibraries() -> [(name: String, version: String)] {
        LinkedLibraries.versions()
    }
}

extension Agent {
    /// This board's system identity (device tree, /proc, /etc), with CLI/config overrides.
    public static func localIdentity(uid: String?, uidExtension: String, label: String?) throws -> SystemIdentity {
        try SystemIdentity.resolve(board: BoardIdentity.read(), uid: uid, uidExtension: uidExtension, label: label)
    }
}
