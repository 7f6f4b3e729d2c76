/// Fixed-point decimal text without Foundation: `fixed(1006.53261, 4)` is "1006.5326"; "-0.00" is
/// printed as "0.00"; not finite: "nan", "inf", "-inf".
public func fixed(_ v: Double, _ decimals: Int) -> String {
    guard v.isFinite else { return v.isNaN ? "nan" : (v < 0 ? "-inf" : "inf") }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let scaled = (abs(v) * scale).rounded()
    guard scaled < 9e15 else { return "\(v)" }
    let n = Int64(scaled), unit = Int64(scale)
    var s = (v < 0 && n != 0 ? "-" : "") + String(n / unit)
    if decimals > 0 {
        let frac = String(n % unit)
        s += "." + String(repeating: "0", count: decimals - frac.count) + frac
    }
    return s
}
