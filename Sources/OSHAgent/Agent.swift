import OSHCore
import OSHDevNode
import OSHPlatform

/// The composition root. CLI commands call into here; nothing below knows about the CLI.
public enum Agent {
    public static let version = "0.1.0"

    public static func now() -> Double { Clock.realtimeSeconds() }

    public static func peakRSSKiB() -> Int { ProcessStats.maxRSSKiB() }

    public static func linkedLibraries() -> [(name: String, version: String)] {
        LinkedLibraries.versions() + [("libmicrohttpd", DevNode.libraryVersion)]
    }
}

extension Agent {
    /// The running board's facts, read from the device tree, /proc and /etc.
    public static func boardFacts(root: String = "/") -> BoardFacts {
        let b = BoardIdentity.read(root: root)
        return BoardFacts(serial: b.serial, serialSource: b.serialSource.rawValue, model: b.model, hostname: b.hostname)
    }

    /// This board's system identity, with CLI/config overrides.
    public static func localIdentity(uid: String?, uidExtension: String, label: String?) throws -> SystemIdentity {
        try SystemIdentity.resolve(board: boardFacts(), uid: uid, uidExtension: uidExtension, label: label)
    }
}
