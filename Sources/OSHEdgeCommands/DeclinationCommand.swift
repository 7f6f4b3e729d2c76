// `osh-edge declination LAT LON [ALT_KM] [DATE] [--json]`: the WMM field at a place and date.
#if canImport(Glibc)
import Glibc
#endif
import OSHAgent
import OSHCore
import OSHPlatform

func runDeclinationCommand(_ args: [String]) {
    var a = Arguments(rest: args)
    let json = a.flag("--json")
    // Negative coordinates ("-80") look like options to Arguments.positional, so take them in order here.
    let values = a.rest
    a.rest = []
    guard values.count >= 2, values.count <= 4 else {
        fail("usage: osh-edge declination LAT LON [ALT_KM] [DATE] [--json]   (DATE: decimal year or YYYY-MM-DD, default today)")
    }
    guard let lat = Double(values[0]), lat.isFinite, (-90...90).contains(lat) else {
        fail("latitude must be decimal degrees in −90…90 (south negative), not '\(values[0])'")
    }
    guard let lon = Double(values[1]), lon.isFinite, (-180...360).contains(lon) else {
        fail("longitude must be decimal degrees in −180…180 (west negative), not '\(values[1])'")
    }
    var alt = 0.0
    var date = DecimalYear.from(unixSeconds: Clock.realtimeSeconds())
    for extra in values.dropFirst(2) {
        if extra.contains("-") && extra.count == 10 || (Double(extra).map { $0 > 1900 } ?? false) {
            guard let d = DecimalYear.parse(extra) else { fail("DATE must be a decimal year (2027.5) or YYYY-MM-DD, not '\(extra)'") }
            date = d
        } else {
            guard let h = Double(extra), h.isFinite, (-10...1000).contains(h) else {
                fail("ALT_KM must be kilometres above the WGS84 ellipsoid (−10…1000), not '\(extra)'")
            }
            alt = h
        }
    }
    let r = DeclinationTool.report(latitude: lat, longitude: lon, altitudeKm: alt, decimalYear: date, json: json)
    if let w = r.warning { printError("osh-edge: warning: \(w)") }
    print(r.text)
}
