// Calendar dates from a GPS receiver, made trustworthy against a floor date.
//
// Two faults are common in the field:
//  * GPS week rollover. The GPS signal counts weeks in 10 bits, so a receiver whose firmware
//    assumes the wrong 1024-week era reports a date exactly k·1024 weeks (k·7168 days,
//    ≈19.6 years) *earlier* than the truth. The error is always backwards in time.
//  * Two-digit years. RMC carries `ddmmyy`, so the century has to be supplied.
//
// The rule here: the truth is never before `notBefore` (the build date of the software is a
// safe choice — no fix can be older than the code decoding it), and a rolled-over receiver is
// wrong by whole eras. So:
//  1. a two-digit year gets the century that puts it nearest the floor's year (ties go forward);
//  2. the date and time of day are then moved forward by the fewest whole 1024-week eras
//     (k ≥ 0) that put them at or after `notBefore`.
// A date already at or after the floor is returned unchanged. This assumes a rolled-over
// receiver is used within 1024 weeks of the floor, which is what any such rule must assume.
//
// gpsd 3.22 did the same with a fixed floor of 2017-01-01T00:00:00Z (the start of the
// 18-leap-second era it was built for), adding one era to anything earlier; the tests
// reproduce its "+1024 weeks" dates with that floor.

public struct GPSDate: Sendable, Equatable, Hashable, CustomStringConvertible {
    public var year: Int
    public var month: Int
    public var day: Int

    public init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// The civil date of a day count since 1970-01-01.
    public init(daysSinceEpoch days: Int64) {
        let (y, m, d) = ISOTime.civil(fromDays: days)
        self.init(year: Int(y), month: m, day: d)
    }

    public var daysSinceEpoch: Int64 { ISOTime.days(fromCivil: Int64(year), month, day) }

    public var description: String {
        func pad(_ v: Int, _ w: Int) -> String {
            let s = String(v)
            return s.count >= w ? s : String(repeating: "0", count: w - s.count) + s
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }
}

public enum GPSTime {
    /// 1024 GPS weeks.
    public static let rolloverDays: Int64 = 7168
    public static let rolloverSeconds: Double = 619_315_200

    /// gpsd 3.22's implicit floor: 2017-01-01T00:00:00Z.
    public static let gpsd322Floor: Double = 1_483_228_800

    /// Whether (year, month, day) is a real date of the proleptic Gregorian calendar.
    public static func isValidDate(year: Int, month: Int, day: Int) -> Bool {
        guard (1...12).contains(month), day >= 1 else { return false }
        return day <= daysInMonth(year: year, month: month)
    }

    public static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2:
            let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
            return leap ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// The Gregorian year of a Unix time (UTC).
    static func year(ofEpochSeconds t: Double) -> Int {
        let days = Int64((t / 86_400).rounded(.down))
        return Int(ISOTime.civil(fromDays: days).0)
    }

    /// The full year for a two-digit year: the century that puts it nearest `floorYear`
    /// (within ±50 years; a tie goes to the later year).
    public static func fullYear(twoDigit yy: Int, nearYear floorYear: Int) -> Int {
        let century = floorYear - ((floorYear % 100) + 100) % 100
        var best = century + yy
        if best - floorYear > 50 { best -= 100 } else if floorYear - best >= 50 { best += 100 }
        return best
    }

    /// Resolves a receiver's date and time of day to Unix seconds (UTC), or nil when the
    /// date is not a calendar date or the time of day is out of range.
    ///
    /// - Parameters:
    ///   - year: the full year, or 0...99 when `twoDigitYear` (RMC).
    ///   - secondsOfDay: 0 ..< 86 401 (a leap second is allowed).
    ///   - notBefore: the floor, Unix seconds. The result is the first of
    ///     `t, t + 1024 weeks, t + 2·1024 weeks, …` that is not before it.
    public static func resolve(
        year: Int, month: Int, day: Int, secondsOfDay: Double,
        twoDigitYear: Bool, notBefore: Double
    ) -> Double? {
        guard secondsOfDay >= 0, secondsOfDay < 86_401, notBefore.isFinite else { return nil }
        var y = year
        if twoDigitYear {
            guard (0...99).contains(year) else { return nil }
            y = fullYear(twoDigit: year, nearYear: Self.year(ofEpochSeconds: notBefore))
        } else {
            guard (1...9999).contains(year) else { return nil }
        }
        guard isValidDate(year: y, month: month, day: day) else { return nil }
        let t = Double(ISOTime.days(fromCivil: Int64(y), month, day)) * 86_400 + secondsOfDay
        guard t < notBefore else { return t }
        // Whole eras needed; a rolled-over date is short by an exact number of them.
        let eras = ((notBefore - t) / rolloverSeconds).rounded(.up)
        guard eras < 1000 else { return nil }
        var r = t + eras * rolloverSeconds
        if r < notBefore { r += rolloverSeconds }  // floating-point edge
        return r
    }

    /// The calendar date of `resolve(...)`'s result.
    public static func resolveDate(
        year: Int, month: Int, day: Int, secondsOfDay: Double,
        twoDigitYear: Bool, notBefore: Double
    ) -> GPSDate? {
        guard
            let t = resolve(
                year: year, month: month, day: day, secondsOfDay: secondsOfDay,
                twoDigitYear: twoDigitYear, notBefore: notBefore)
        else { return nil }
        return GPSDate(daysSinceEpoch: Int64((t / 86_400).rounded(.down)))
    }
}
