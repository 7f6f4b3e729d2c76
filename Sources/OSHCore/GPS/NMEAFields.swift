// Field access and number parsing over one framed sentence, without allocating.
// Every read is bounds-checked against the field's own range, so hostile input cannot read
// outside the line buffer.

struct NMEAFields {
    static let capacity = 40

    let base: UnsafePointer<UInt8>
    /// starts[i] ..< ends[i] is field i; field 0 is the address (`GPGGA`, without `$`).
    let starts: UnsafeMutablePointer<Int32>
    let ends: UnsafeMutablePointer<Int32>
    private(set) var count = 0

    init(base: UnsafePointer<UInt8>, starts: UnsafeMutablePointer<Int32>, ends: UnsafeMutablePointer<Int32>) {
        self.base = base
        self.starts = starts
        self.ends = ends
    }

    /// Splits `base[1 ..< length]` (after the `$`) at commas. Fields beyond `capacity` are ignored.
    mutating func split(length: Int) {
        var start = 1
        var i = 1
        count = 0
        while i < length {
            if base[i] == 0x2C {  // ','
                if count < NMEAFields.capacity {
                    starts[count] = Int32(start)
                    ends[count] = Int32(i)
                    count += 1
                }
                start = i + 1
            }
            i += 1
        }
        if count < NMEAFields.capacity {
            starts[count] = Int32(start)
            ends[count] = Int32(length)
            count += 1
        }
    }

    @inline(__always) func range(_ i: Int) -> (Int, Int) {
        guard i < count else { return (0, 0) }
        return (Int(starts[i]), Int(ends[i]))
    }

    @inline(__always) func isEmpty(_ i: Int) -> Bool {
        let (s, e) = range(i)
        return s >= e
    }

    /// The first character of field i, or 0 when empty.
    @inline(__always) func char(_ i: Int) -> UInt8 {
        let (s, e) = range(i)
        return s < e ? base[s] : 0
    }

    /// A non-negative integer field (digits only).
    func int(_ i: Int) -> Int? {
        let (s, e) = range(i)
        guard s < e, e - s <= 9 else { return nil }
        var v = 0
        for k in s..<e {
            let c = base[k]
            guard c >= 0x30, c <= 0x39 else { return nil }
            v = v * 10 + Int(c - 0x30)
        }
        return v
    }

    /// A decimal number `[+-]digits[.digits]` (no exponent); nil when empty or malformed.
    func decimal(_ i: Int) -> Double? {
        let (s, e) = range(i)
        return NMEAFields.decimal(base, s, e)
    }

    /// 10^n for 0 ≤ n ≤ 22 (every one exact in a Double, so one division rounds correctly).
    @inline(__always) static func pow10(_ n: Int) -> Double {
        switch n {
        case 0: return 1e0
        case 1: return 1e1
        case 2: return 1e2
        case 3: return 1e3
        case 4: return 1e4
        case 5: return 1e5
        case 6: return 1e6
        case 7: return 1e7
        case 8: return 1e8
        case 9: return 1e9
        case 10: return 1e10
        case 11: return 1e11
        case 12: return 1e12
        case 13: return 1e13
        case 14: return 1e14
        case 15: return 1e15
        case 16: return 1e16
        case 17: return 1e17
        case 18: return 1e18
        case 19: return 1e19
        case 20: return 1e20
        case 21: return 1e21
        default: return 1e22
        }
    }

    /// Mantissa and decimal scale of `digits[.digits]` in s..<e (unsigned), keeping at most 18
    /// significant digits; nil when there are no digits or another character appears.
    /// `fractionOnly`: s..<e holds only the digits after a decimal point (no `.` allowed).
    @inline(__always)
    static func mantissa(
        _ p: UnsafePointer<UInt8>, _ s: Int, _ e: Int, fractionOnly: Bool = false
    )
        -> (mantissa: Int64, fractionDigits: Int, extraIntegerDigits: Int)?
    {
        var mant: Int64 = 0
        var significant = 0
        var fraction = 0
        var extra = 0
        var seenDot = fractionOnly
        var any = false
        var i = s
        while i < e {
            let c = p[i]
            if c >= 0x30, c <= 0x39 {
                any = true
                if significant < 18, !(seenDot && fraction >= 22) {
                    mant = mant * 10 + Int64(c - 0x30)
                    if mant != 0 { significant += 1 }
                    if seenDot { fraction += 1 }
                } else if !seenDot {
                    extra += 1
                }
            } else if c == 0x2E, !seenDot {  // '.'
                seenDot = true
            } else {
                return nil
            }
            i += 1
        }
        return any ? (mant, fraction, extra) : nil
    }

    static func decimal(_ p: UnsafePointer<UInt8>, _ s0: Int, _ e: Int) -> Double? {
        var s = s0
        guard s < e else { return nil }
        var negative = false
        if p[s] == 0x2D { negative = true; s += 1 } else if p[s] == 0x2B { s += 1 }
        guard let (m, frac, extra) = mantissa(p, s, e), extra <= 22 else { return nil }
        var v = Double(m)
        if frac > 0 { v /= pow10(frac) }
        if extra > 0 { v *= pow10(extra) }
        return negative ? -v : v
    }

    @inline(__always) func twoDigits(_ k: Int) -> Int? {
        let a = base[k], b = base[k + 1]
        guard a >= 0x30, a <= 0x39, b >= 0x30, b <= 0x39 else { return nil }
        return Int(a - 0x30) * 10 + Int(b - 0x30)
    }

    /// `hhmmss[.s…]` → seconds since midnight (a leap second 60 is allowed).
    func timeOfDay(_ i: Int) -> Double? {
        let (s, e) = range(i)
        guard e - s >= 6 else { return nil }
        guard let hh = twoDigits(s), let mm = twoDigits(s + 2), let ss = twoDigits(s + 4) else { return nil }
        guard hh < 24, mm < 60, ss <= 60 else { return nil }
        var t = Double(hh * 3600 + mm * 60 + ss)
        if e - s > 6 {
            guard base[s + 6] == 0x2E else { return nil }
            if e - s > 7 {
                guard let (m, frac, extra) = NMEAFields.mantissa(base, s + 7, e, fractionOnly: true), extra == 0 else { return nil }
                t += Double(m) / NMEAFields.pow10(frac)
            }
        }
        return t
    }

    /// `ddmm.mmmm` / `dddmm.mmmm` with hemisphere field `hemi` → signed degrees, or nil.
    func coordinate(_ i: Int, hemi: Int, isLatitude: Bool) -> Double? {
        let (s, e) = range(i)
        guard s < e else { return nil }
        let h = char(hemi)
        let negative: Bool
        switch h {
        case UInt8(ascii: "N") where isLatitude, UInt8(ascii: "E") where !isLatitude: negative = false
        case UInt8(ascii: "S") where isLatitude, UInt8(ascii: "W") where !isLatitude: negative = true
        default: return nil
        }
        // Integer part (degrees and whole minutes) and fraction of minutes, read separately.
        var dot = e
        for k in s..<e where base[k] == 0x2E { dot = k; break }
        guard dot - s >= 3, dot - s <= (isLatitude ? 4 : 5) else { return nil }
        var whole = 0
        for k in s..<dot {
            let c = base[k]
            guard c >= 0x30, c <= 0x39 else { return nil }
            whole = whole * 10 + Int(c - 0x30)
        }
        let degrees = whole / 100
        var minutes = Double(whole % 100)
        if dot + 1 < e {
            guard let (m, frac, extra) = NMEAFields.mantissa(base, dot + 1, e, fractionOnly: true), extra == 0 else { return nil }
            minutes += Double(m) / NMEAFields.pow10(frac)
        }
        guard minutes < 60 else { return nil }
        let value = Double(degrees) + minutes / 60
        guard value <= (isLatitude ? 90 : 180) else { return nil }
        return negative ? -value : value
    }
}
