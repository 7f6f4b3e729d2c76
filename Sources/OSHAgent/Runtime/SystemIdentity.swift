import OSHCore
import OSHPlatform

/// Who this board is to the node: UID, label, serial — from the board, overridable by the user.
public struct SystemIdentity: Sendable, Equatable {
    public var uid: String
    public var label: String
    public var serial: String

    public init(uid: String, label: String, serial: String) {
        self.uid = uid
        self.label = label
        self.serial = serial
    }

    /// The default label, Android style (`Android Sensors [<device name>]`): the board family and its host name.
    public static func defaultLabel(model: String?, hostname: String?, serial: String) -> String {
        let family = (model ?? "").hasPrefix("Raspberry Pi") ? "Raspberry Pi Sensors" : "Linux Sensors"
        let name = (hostname?.isEmpty == false ? hostname : nil) ?? serial
        return "\(family) [\(name)]"
    }
}

public enum IdentityError: Error, CustomStringConvertible {
    case uid(SystemUIDError, serialSource: String)

    public var description: String {
        switch self {
        case .uid(.empty, _):
            return "this board has no serial number (no device-tree serial, no cpuinfo Serial, no /etc/machine-id); "
                + "set the system UID explicitly (--uid urn:osh:rpi:NAME)"
        case .uid(let e, let source):
            return "cannot build the system UID (board id from \(source)): \(e)"
        }
    }
}

extension SystemIdentity {
    /// This board's identity from `board`, with the user's overrides applied.
    public static func resolve(board: BoardIdentity, uid: String?, uidExtension: String, label: String?) throws -> SystemIdentity {
        let resolved: String
        do {
            resolved = try SystemUID.make(boardID: board.serial, extension: uidExtension, override: uid)
        } catch let e as SystemUIDError {
            throw IdentityError.uid(e, serialSource: board.serialSource.rawValue)
        }
        let serial = board.serial.isEmpty ? "unknown" : board.serial
        let l =
            label.flatMap { $0.isEmpty ? nil : $0 }
            ?? defaultLabel(model: board.model, hostname: board.hostname, serial: serial)
        return SystemIdentity(uid: resolved, label: l, serial: board.serial)
    }
}
