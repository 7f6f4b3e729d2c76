// The board's sampling feature (feature of interest), registered as Android
// registers its own: GeoJSON, no geometry, no
// featureType, `uid` and `name` in `properties`. The node's id for it goes into
// every O&M observation as `foi@id`. GeoJSON bodies are parsed with buffered keys,
// so only `type` first is a convention here, not a requirement.

public enum SamplingFeature {
    public static let defaultName = "Raspberry Pi Sensors"
    static let foiPrefix = "urn:rpi:foi:"

    /// The FOI uid for a system uid: `urn:osh:rpi:<id>[:ext]` → `urn:rpi:foi:<id>[:ext]` (as Android maps
    /// `urn:osh:android:X` → `urn:android:foi:X`); any other uid → `<uid>:foi`. Spaces, `|` and `'` are
    /// dropped, as Android drops them.
    public static func foiUID(forSystemUID uid: String) -> String {
        let u = SystemUID.trim(uid)
        let raw = u.hasPrefix(SystemUID.prefix) ? foiPrefix + String(u.dropFirst(SystemUID.prefix.count)) : u + ":foi"
        return String(String.UnicodeScalarView(raw.unicodeScalars.filter { $0 != " " && $0 != "|" && $0 != "'" }))
    }

    /// `{"type":"Feature","geometry":null,"properties":{"uid":…,"name":…[,"description":…]}}`.
    /// No local `id`: the node mints it on create.
    public static func write(uid: String, name: String = defaultName, description: String? = nil, to out: ByteBuffer) {
        var w = JSONWriter(out)
        w.beginObject()
        w.key("type"); w.string("Feature")
        w.key("geometry"); w.null()
        w.key("properties"); w.beginObject()
        w.key("uid"); w.string(uid)
        w.key("name"); w.string(name)
        if let d = description, !d.isEmpty { w.key("description"); w.string(d) }
        w.endObject()
        w.endObject()
    }

    /// The body for the board whose system uid is `systemUID`.
    public static func bytes(systemUID: String, name: String = defaultName, description: String? = nil) -> [UInt8] {
        let b = ByteBuffer(capacity: 256)
        write(uid: foiUID(forSystemUID: systemUID), name: name, description: description, to: b)
        return b.array
    }

    public static func string(systemUID: String, name: String = defaultName, description: String? = nil) -> String {
        String(decoding: bytes(systemUID: systemUID, name: name, description: description), as: UTF8.self)
    }
}
