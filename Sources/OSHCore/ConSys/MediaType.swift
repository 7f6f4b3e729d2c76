// Media types exactly as the node compares them: bare strings, no parameters
// (a `; charset=utf-8` is refused with 400 "Unsupported format").
public enum MediaType {
    public static let json = "application/json"
    public static let omJSON = "application/om+json"
    public static let sweJSON = "application/swe+json"
    public static let sweBinary = "application/swe+binary"
    public static let sweCSV = "application/swe+csv"
    public static let smlJSON = "application/sml+json"
    public static let geoJSON = "application/geo+json"
}
