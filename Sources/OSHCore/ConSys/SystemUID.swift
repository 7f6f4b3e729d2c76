// The board's system UID: `urn:osh:rpi:<board id>[:<extension>]`, the Pi
// counterpart of Android's `urn:osh:android:<ANDROID_ID>[:<uid_extension>]`
// (osh-android's driver). The whole UID may be overridden by config.

public enum SystemUIDError: Error, Equatable, CustomStringConvertible {
    /// Nothing to build a UID from (no board id and no override).
    case empty
    /// A space, tab, control character or other character that cannot appear in a URN.
    case invalidCharacter(String)
    /// The node refuses feature UIDs shorter than 12 characters (AbstractFeatureHandler.validate).
    case tooShort(String)

    public var description: String {
        switch self {
        case .empty: return "no board id and no UID override"
        case .invalidCharacter(let s): return "UID part '\(s)' contains whitespace or a character not allowed in a URN"
        case .tooShort(let s): return "UID '\(s)' is shorter than the \(SystemUID.minimumLength) characters the node requires"
        }
    }
}

public enum SystemUID {
    public static let prefix = "urn:osh:rpi:"
    /// osh-core rejects a feature uid shorter than this with 400 "Missing feature UID/name" / invalid uid.
    public static let minimumLength = 12

    /// The board id as it goes into the UID: the serial as the board reports it, trimmed of
    /// whitespace and NULs, lowercased, leading zeros kept (`00000000a1b2c3d4` stays as is).
    public static func boardID(fromSerial serial: String) -> String {
        trim(serial).lowercased()
    }

    /// Builds the UID. `override`, when non-empty after trimming, replaces the whole UID.
    /// An empty extension (after trimming) means no suffix, as in Android.
    public static func make(boardID: String, extension ext: String = "", override: String? = nil) throws -> String {
        if let o = override.map(trim), !o.isEmpty {
            try check(o, part: o)
            guard o.utf8.count >= minimumLength else { throw SystemUIDError.tooShort(o) }
            return o
        }
        let id = Self.boardID(fromSerial: boardID)
        guard !id.isEmpty else { throw SystemUIDError.empty }
        try check(id, part: id)
        var uid = prefix + id
        let e = trim(ext)
        if !e.isEmpty {
            try check(e, part: e)
            uid += ":" + e
        }
        guard uid.utf8.count >= minimumLength else { throw SystemUIDError.tooShort(uid) }
        return uid
    }

    /// True when `s` can be used as a UID as is (no whitespace, URN-safe characters, ≥ 12 characters).
    public static func isValid(_ s: String) -> Bool {
        guard s.utf8.count >= minimumLength, s == trim(s) else { return false }
        return s.utf8.allSatisfy(isAllowed)
    }

    /// Strips leading/trailing whitespace and NULs (device-tree strings end in a NUL).
    public static func trim(_ s: String) -> String {
        let u = Array(s.utf8)
        var lo = 0, hi = u.count
        while lo < hi, isTrimmable(u[lo]) { lo += 1 }
        while hi > lo, isTrimmable(u[hi - 1]) { hi -= 1 }
        return String(decoding: u[lo..<hi], as: UTF8.self)
    }

    @inline(__always) static func isTrimmable(_ b: UInt8) -> Bool {
        b == 0 || b == 0x20 || (b >= 0x09 && b <= 0x0D)
    }

    /// RFC 8141 URN characters (unreserved, sub-delims, `:`, `@`, `/`, `#`, `%`), ASCII only.
    /// `|` and `'` are excluded too: Android strips them from FOI uids.
    @inline(__always) static func isAllowed(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "-._~!$&()*+,;=:@/#%".utf8.contains(b)
        }
    }

    private static func check(_ s: String, part: String) throws {
        guard s.utf8.allSatisfy(isAllowed) else { throw SystemUIDError.invalidCharacter(part) }
    }
}
