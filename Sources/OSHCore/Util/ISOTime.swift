// ISO-8601 UTC timestamps with milliseconds, written and read without Foundation
// and without allocating (days↔civil date after Howard Hinnant's public-domain algorithms).

public enum ISOTime {
    /// Writes `YYYY-MM-DDTHH:MM:SS.mmmZ` for Unix epoch seconds, rounded to the millisecond.
    /// Non-finite input writes nothing and returns false (the caller decides what to send instead).
    @discardableResult
    public static func write(epochSeconds t: Double, to out: ByteBuffer) -> Bool {
        guard t.isFinite, abs(t) < 2.5e11 else { return false }  // beyond year ±9999 is not a sensor time
        let ms = Int64((t * 1000).rounded())
        let days = floorDiv(ms, 86_400_000)
        var rem = ms - days * 86_400_000
        let (y, m, d) = civil(fromDays: days)
        let hh = rem / 3_600_000; rem -= hh * 3_600_000
        let mm = rem / 60_000; rem -= mm * 60_000
        let ss = rem / 1000
        let mmm = rem - ss * 1000
        out.reserve(24)
        if y < 0 { out.append(UInt8(ascii: "-")) }
        digits(Int64(abs(y)), width: 4, out)
        out.append(UInt8(ascii: "-")); digits(Int64(m), width: 2, out)
        out.append(UInt8(ascii: "-")); digits(Int64(d), width: 2, out)
        out.append(UInt8(ascii: "T")); digits(hh, width: 2, out)
        out.append(UInt8(ascii: ":")); digits(mm, width: 2, out)
        out.append(UInt8(ascii: ":")); digits(ss, width: 2, out)
        out.append(UInt8(ascii: ".")); digits(mmm, width: 3, out)
        out.append(UInt8(ascii: "Z"))
        return true
    }

    /// The same as a String (CLI, tests, request bodies built once).
    public static func string(epochSeconds t: Double) -> String {
        let b = ByteBuffer(capacity: 32)
        write(epochSeconds: t, to: b)
        return b.string
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM|±HHMM)` into Unix epoch seconds.
    /// A zone is required, as the node requires it (OffsetDateTime.parse).
    public static func parse<C: Collection>(_ s: C) -> Double? where C.Element == UInt8 {
        var p = Parser(bytes: Array(s))
        return p.parse()
    }

    public static func parse(_ s: String) -> Double? { parse(s.utf8) }

    /// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian calendar.
    public static func civil(fromDays z0: Int64) -> (Int64, Int, Int) {
        let z = z0 + 719_468
        let era = floorDiv(z, 146_097)
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = Int(doy - (153 * mp + 2) / 5 + 1)
        let m = Int(mp < 10 ? mp + 3 : mp - 9)
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    /// (year, month, day) → days since 1970-01-01.
    public static func days(fromCivil y0: Int64, _ m: Int, _ d: Int) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = floorDiv(y, 400)
        let yoe = y - era * 400
        let mp = Int64(m > 2 ? m - 3 : m + 9)
        let doy = (153 * mp + 2) / 5 + Int64(d) - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    @inline(__always) static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    @inline(__always) static func digits(_ v: Int64, width: Int, _ out: ByteBuffer) {
        var div: Int64 = 1
        for _ in 1..<width { div *= 10 }
        var v = v
        // Years past 9999 get their extra digits rather than being cut.
        while v / div >= 10 { div *= 10 }
        while div > 0 {
            out.append(UInt8(truncatingIfNeeded: (v / div) % 10) &+ 48)
            v %= div
            div /= 10
        }
    }

    private struct Parser {
        let bytes: [UInt8]
        var i = 0

        mutating func num(_ n: Int) -> Int64? {
            guard i + n <= bytes.count else { return nil }
            var v: Int64 = 0
            for k in 0..<n {
                let c = bytes[i + k]
                guard c >= 48, c <= 57 else { return nil }
                v = v * 10 + Int64(c - 48)
            }
            i += n
            return v
        }

        mutating func expect(_ c: Character) -> Bool {
            guard i < bytes.count, bytes[i] == c.asciiValue else { return false }
            i += 1
            return true
        }

        mutating func parse() -> Double? {
            guard let y = num(4), expect("-"), let mo = num(2), expect("-"), let d = num(2) else { return nil }
            guard i < bytes.count, bytes[i] == UInt8(ascii: "T") || bytes[i] == UInt8(ascii: "t") else { return nil }
            i += 1
            guard let h = num(2), expect(":"), let mi = num(2), expect(":"), let s = num(2) else { return nil }
            guard (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, s < 61 else { return nil }
            var frac = 0.0
            if i < bytes.count, bytes[i] == UInt8(ascii: ".") || bytes[i] == UInt8(ascii: ",") {
                i += 1
                var scale = 0.1
                var any = false
                while i < bytes.count, bytes[i] >= 48, bytes[i] <= 57 {
                    frac += Double(bytes[i] - 48) * scale
                    scale /= 10
                    i += 1
                    any = true
                }
                guard any else { return nil }
            }
            guard i < bytes.count else { return nil }
            var offset: Int64 = 0
            switch bytes[i] {
            case UInt8(ascii: "Z"), UInt8(ascii: "z"): i += 1
            case UInt8(ascii: "+"), UInt8(ascii: "-"):
                let sign: Int64 = bytes[i] == UInt8(ascii: "-") ? -1 : 1
                i += 1
                guard let oh = num(2) else { return nil }
                _ = expect(":")
                guard let om = num(2) else { return nil }
                offset = sign * (oh * 3600 + om * 60)
            default: return nil
            }
            guard i == bytes.count else { return nil }
            let days = ISOTime.days(fromCivil: y, Int(mo), Int(d))
            let secs = days * 86_400 + h * 3600 + mi * 60 + s - offset
            // Millisecond rounding keeps `parse(write(t)) == round(t, ms)` exact in binary.
            return (Double(secs * 1000) + (frac * 1000).rounded()) / 1000
        }
    }
}
