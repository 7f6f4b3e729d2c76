// Size (~520 lines): cycle assembly and the sentence decoders share the per-cycle state.
//
// NMEA 0183 → one fix per receiver cycle, fed bytes as they arrive, allocation-free.
//
// Sentences: GGA, RMC, GNS, GLL, ZDA (timestamped) and GSA, VTG (not); talkers GP GN GL GA GB
// BD GQ GI. Everything else that frames and checksums correctly is counted as skipped after a
// look at its six-byte address.
//
// Cycles. A receiver sends a burst of sentences per fix, all stamped with the same time of day.
// A cycle starts with the first timestamped sentence whose time of day differs (by ≥ 1 ms)
// from the current cycle's; untimestamped sentences (GSA, VTG) belong to the cycle in progress.
// A cycle is reported
//  * early, as soon as it holds every timestamped sentence type that the last two complete
//    cycles held (so a damaged cycle does not teach a short one), or
//  * when the next cycle starts, or at `finish` (end of input).
// This matches what gpsd reports per cycle: it also learns the last timestamped sentence of a
// cycle as its "cycle ender" and reports there. After an early report, timestamped sentences
// still carrying the same time are ignored (counted `late`), and untimestamped ones go to the
// next cycle — as in gpsd, whose next report is the first to include them.
//
// Fix validity, per cycle (no fix → nothing is reported):
//  * GGA present: its quality > 0 (the latest GGA of the cycle); else GNS present: a mode
//    indicator other than N; else RMC: status A and mode indicator not N; else GLL likewise.
//  * and a position from a sentence that itself claims validity (GGA quality > 0, GNS not N,
//    RMC/GLL status A); the latest one in the cycle wins.
//  GGA/GNS take precedence because NMEA 2.3 sets the RMC/GLL status to V for every mode but
//  A and D: a dead-reckoning, manual or simulator fix (GGA quality 6/7/8) comes with status V.
//  `GPSFix.quality` tells those apart; callers that want only measured fixes filter on it.
// Mode: the latest GSA fix type when it is 2 or 3 (GSA may precede the timestamped sentences
// or come from an earlier cycle), else 3 with an altitude and at least four satellites (when
// GGA/GNS gives the count), 2 otherwise.
// Altitude: GGA/GNS give height above mean sea level and the geoid separation; the height above
// the WGS84 ellipsoid is their sum, and is unknown when the receiver omits the separation
// (gpsd then substitutes its own geoid model; we do not).
// Date: RMC (two-digit year) or ZDA, resolved by `GPSTime` against `notBefore`; a cycle with
// neither takes the date of the previous dated cycle, plus one day if its time of day wrapped
// past midnight.

/// One position fix, as reported for one receiver cycle.
public struct GPSFix: Sendable, Equatable {
    /// Unix seconds (UTC) of the fix; NaN while no date is known.
    public var time: Double
    /// Seconds since midnight UTC, as the receiver stamped the cycle.
    public var timeOfDay: Double
    /// The calendar date (after rollover resolution), when known.
    public var date: GPSDate?
    /// Degrees, WGS84.
    public var lat: Double
    public var lon: Double
    /// Metres above mean sea level (the geoid), as the receiver reports it.
    public var altMSL: Double?
    /// Geoid height above the WGS84 ellipsoid, metres.
    public var geoidSeparation: Double?
    /// Metres above the WGS84 ellipsoid: altMSL + geoidSeparation, when both are known.
    public var altHAE: Double?
    /// 2 = 2D, 3 = 3D.
    public var mode: Int
    /// GGA fix quality: 1 GPS, 2 DGPS, 3 PPS, 4 RTK fixed, 5 RTK float, 6 dead reckoning,
    /// 7 manual, 8 simulator. Without GGA, derived from the GNS/RMC/GLL mode indicator
    /// (A 1, D 2, P 3, R 4, F 5, E 6, M 7, S 8), else 1.
    public var quality: Int
    public var satellites: Int?
    public var hdop: Double?
    /// Speed over ground, m/s.
    public var speed: Double?
    /// Course over ground, degrees true.
    public var course: Double?

    public init(
        time: Double, timeOfDay: Double, date: GPSDate?, lat: Double, lon: Double,
        altMSL: Double? = nil, geoidSeparation: Double? = nil, altHAE: Double? = nil,
        mode: Int, quality: Int, satellites: Int? = nil, hdop: Double? = nil,
        speed: Double? = nil, course: Double? = nil
    ) {
        self.time = time
        self.timeOfDay = timeOfDay
        self.date = date
        self.lat = lat
        self.lon = lon
        self.altMSL = altMSL
        self.geoidSeparation = geoidSeparation
        self.altHAE = altHAE
        self.mode = mode
        self.quality = quality
        self.satellites = satellites
        self.hdop = hdop
        self.speed = speed
        self.course = course
    }

    /// Field-by-field equality where an unknown time (NaN) equals an unknown time.
    public static func == (a: GPSFix, b: GPSFix) -> Bool {
        (a.time == b.time || (a.time.isNaN && b.time.isNaN)) && a.timeOfDay == b.timeOfDay
            && a.date == b.date && a.lat == b.lat && a.lon == b.lon && a.altMSL == b.altMSL
            && a.geoidSeparation == b.geoidSeparation && a.altHAE == b.altHAE && a.mode == b.mode
            && a.quality == b.quality && a.satellites == b.satellites && a.hdop == b.hdop
            && a.speed == b.speed && a.course == b.course
    }
}

/// What the parser has seen so far (all monotonic).
public struct NMEACounters: Sendable, Equatable {
    /// Lines that framed and passed the checksum (or had none).
    public var sentences = 0
    /// Lines rejected for their checksum.
    public var badChecksum = 0
    /// Accepted lines without a checksum.
    public var noChecksum = 0
    /// Lines longer than the line buffer.
    public var tooLong = 0
    /// Lines abandoned mid-way (a new `$` before the end, a control byte, too short).
    public var malformed = 0
    /// Bytes outside sentences.
    public var noiseBytes = 0
    /// Accepted sentences of the types decoded here.
    public var decoded = 0
    /// Accepted sentences of other types or talkers (GSV, proprietary, …).
    public var skipped = 0
    /// Decoded types whose time, date or position field was unreadable (the sentence is ignored).
    public var badFields = 0
    /// Timestamped sentences that arrived after their cycle had been reported.
    public var late = 0
    /// Receiver cycles seen (by distinct time of day).
    public var cycles = 0
    /// Fixes reported.
    public var fixes = 0

    public init() {}
}

public final class NMEAParser {
    /// The floor for date resolution (Unix seconds), see `GPSTime.resolve`.
    public let notBefore: Double
    public let framer: NMEAFramer

    private let fieldStarts: UnsafeMutablePointer<Int32>
    private let fieldEnds: UnsafeMutablePointer<Int32>
    private var parsed = NMEACounters()

    private var cycle = Cycle()
    /// Set after an early report: the time of day of the cycle already reported.
    private var closedTOD = 0.0
    private var isClosed = false
    private var closedMask: UInt8 = 0
    /// Timestamped sentence types a complete cycle holds (0 until learnt).
    private var learnedMask: UInt8 = 0
    private var previousMask: UInt8 = 0
    /// The latest GSA fix type, kept across cycles.
    private var lastGSAMode = 0
    /// Date carried to cycles that have none.
    private var lastDays: Int64 = 0
    private var lastDaysTOD = 0.0
    private var hasLastDays = false

    public init(notBefore: Double, maxLineLength: Int = 256, requireChecksum: Bool = false) {
        self.notBefore = notBefore
        framer = NMEAFramer(maxLineLength: maxLineLength, requireChecksum: requireChecksum)
        fieldStarts = UnsafeMutablePointer<Int32>.allocate(capacity: NMEAFields.capacity)
        fieldEnds = UnsafeMutablePointer<Int32>.allocate(capacity: NMEAFields.capacity)
    }

    deinit {
        fieldStarts.deallocate()
        fieldEnds.deallocate()
    }

    public var counters: NMEACounters {
        var c = parsed
        let f = framer.counters
        c.sentences = f.accepted
        c.badChecksum = f.badChecksum
        c.noChecksum = f.noChecksum
        c.tooLong = f.tooLong
        c.malformed = f.malformed
        c.noiseBytes = f.noiseBytes
        return c
    }

    /// Feeds bytes in any chunking; `onFix` is called for each cycle that completes with a fix.
    public func feed(_ bytes: UnsafeRawBufferPointer, _ onFix: (GPSFix) -> Void) {
        framer.feed(bytes) { body in
            self.sentence(body, onFix)
        }
    }

    /// End of input: reports the cycle in progress (if it has a fix).
    public func finish(_ onFix: (GPSFix) -> Void) {
        if !isClosed, cycle.hasTOD { finishCycle(onFix) }
        cycle = Cycle()
        isClosed = false
    }

    // MARK: - Sentences

    private enum Tag {
        static let gga: UInt8 = 1, rmc: UInt8 = 2, gns: UInt8 = 4, gll: UInt8 = 8, zda: UInt8 = 16
    }

    @inline(__always)
    private static func knownTalker(_ a: UInt8, _ b: UInt8) -> Bool {
        switch (a, b) {
        case (0x47, 0x50), (0x47, 0x4E), (0x47, 0x4C), (0x47, 0x41), (0x47, 0x42), (0x47, 0x51), (0x47, 0x49):
            return true  // GP GN GL GA GB GQ GI
        case (0x42, 0x44): return true  // BD
        default: return false
        }
    }

    private func sentence(_ body: UnsafeRawBufferPointer, _ onFix: (GPSFix) -> Void) {
        guard body.count >= 6, body[0] == 0x24, body.count == 6 || body[6] == 0x2C,
            NMEAParser.knownTalker(body[1], body[2]), let raw = body.baseAddress
        else {
            parsed.skipped &+= 1
            return
        }
        let t0 = body[3], t1 = body[4], t2 = body[5]
        let kind: Int
        switch (t0, t1, t2) {
        case (0x47, 0x47, 0x41): kind = 0  // GGA
        case (0x52, 0x4D, 0x43): kind = 1  // RMC
        case (0x47, 0x4E, 0x53): kind = 2  // GNS
        case (0x47, 0x4C, 0x4C): kind = 3  // GLL
        case (0x5A, 0x44, 0x41): kind = 4  // ZDA
        case (0x47, 0x53, 0x41): kind = 5  // GSA
        case (0x56, 0x54, 0x47): kind = 6  // VTG
        default:
            parsed.skipped &+= 1
            return
        }
        parsed.decoded &+= 1
        var f = NMEAFields(base: raw.assumingMemoryBound(to: UInt8.self), starts: fieldStarts, ends: fieldEnds)
        f.split(length: body.count)
        switch kind {
        case 0: gga(f, onFix)
        case 1: rmc(f, onFix)
        case 2: gns(f, onFix)
        case 3: gll(f, onFix)
        case 4: zda(f, onFix)
        case 5: gsa(f)
        default: vtg(f)
        }
    }

    /// Reads the time field. Returns false when the sentence must be ignored (unreadable time,
    /// or a late member of a cycle already reported); a missing time leaves `tod` nil.
    @inline(__always)
    private func timeField(_ f: NMEAFields, _ i: Int, _ tod: inout Double?) -> Bool {
        if f.isEmpty(i) { tod = nil; return true }
        guard let t = f.timeOfDay(i) else {
            parsed.badFields &+= 1
            return false
        }
        tod = t
        return true
    }

    /// Puts a timestamped sentence into its cycle; false when it arrived after its cycle was reported.
    private func enter(_ tod: Double?, _ onFix: (GPSFix) -> Void) -> Bool {
        guard let tod else { return true }  // untimestamped: the cycle in progress
        if isClosed {
            if NMEAParser.sameTime(tod, closedTOD) {
                parsed.late &+= 1
                return false
            }
            isClosed = false
            learn(closedMask)
        } else if cycle.hasTOD {
            if NMEAParser.sameTime(tod, cycle.tod) { return true }
            let mask = cycle.mask
            finishCycle(onFix)
            learn(mask)
        }
        cycle.hasTOD = true
        cycle.tod = tod
        parsed.cycles &+= 1
        return true
    }

    /// After a timestamped sentence was applied: report early when the cycle is complete.
    private func leave(_ tag: UInt8, _ tod: Double?, _ onFix: (GPSFix) -> Void) {
        guard tod != nil else { return }
        cycle.mask |= tag
        if learnedMask != 0, cycle.mask & learnedMask == learnedMask {
            let tod = cycle.tod, mask = cycle.mask
            finishCycle(onFix)
            isClosed = true
            closedTOD = tod
            closedMask = mask
        }
    }

    /// The expected set is the union of the last two complete cycles, so one damaged cycle
    /// (a sentence lost to a bad checksum) cannot make the next one report before its end.
    /// A first cycle that began mid-burst holds only the last sentences of a burst, which is safe.
    private func learn(_ mask: UInt8) {
        learnedMask = mask | previousMask
        previousMask = mask
    }

    @inline(__always)
    private static func sameTime(_ a: Double, _ b: Double) -> Bool { abs(a - b) < 0.001 }

    // GGA: 1 time, 2-3 lat, 4-5 lon, 6 quality, 7 satellites, 8 HDOP, 9-10 altitude MSL, 11-12 geoid separation
    private func gga(_ f: NMEAFields, _ onFix: (GPSFix) -> Void) {
        var tod: Double?
        guard timeField(f, 1, &tod), enter(tod, onFix) else { return }
        let quality = f.int(6) ?? 0
        cycle.ggaQuality = quality
        if quality > 0 {
            fixDetail(f, geoidSeparation: 11)
        }
        leave(Tag.gga, tod, onFix)
    }

    /// GGA's and GNS's shared fields: position at 2-5, satellites 7, HDOP 8, altitude MSL 9; only
    /// the geoid separation's field differs.
    private func fixDetail(_ f: NMEAFields, geoidSeparation: Int) {
        position(f, 2, 4)
        if let v = f.decimal(9) { cycle.altMSL = v }
        if let v = f.decimal(geoidSeparation) { cycle.geoidSep = v }
        if let v = f.int(7) { cycle.satellites = v }
        if let v = f.decimal(8) { cycle.hdop = v }
    }

    /// RMC's and GLL's validity: status 'A' and a mode indicator other than 'N' (no fix); the
    /// indicator is returned too, for the fix quality.
    private func statusValid(_ f: NMEAFields, status: Int, mode: Int) -> (valid: Bool, mode: UInt8) {
        let m = f.char(mode)
        return (f.char(status) == UInt8(ascii: "A") && m != UInt8(ascii: "N"), m)
    }

    // RMC: 1 time, 2 status, 3-4 lat, 5-6 lon, 7 speed (knots), 8 course, 9 ddmmyy, 10-11 magvar, 12 mode
    private func rmc(_ f: NMEAFields, _ onFix: (GPSFix) -> Void) {
        var tod: Double?
        guard timeField(f, 1, &tod), enter(tod, onFix) else { return }
        let (valid, modeChar) = statusValid(f, status: 2, mode: 12)
        cycle.rmcValid = valid ? 1 : 0
        if valid {
            position(f, 3, 5)
            if let v = f.decimal(7) { cycle.speed = v * (1852.0 / 3600.0) }
            if let v = f.decimal(8) { cycle.course = v }
            if let q = NMEAParser.quality(fromModeIndicator: modeChar) { cycle.indicatorQuality = q }
        }
        if let tod, !f.isEmpty(9) {
            let (s, e) = f.range(9)
            if e - s == 6, let dd = f.twoDigits(s), let mm = f.twoDigits(s + 2), let yy = f.twoDigits(s + 4),
                let t = GPSTime.resolve(
                    year: yy, month: mm, day: dd, secondsOfDay: tod, twoDigitYear: true,
                    notBefore: notBefore)
            {
                cycle.setDays(t)
            } else {
                parsed.badFields &+= 1
            }
        }
        leave(Tag.rmc, tod, onFix)
    }

    // GNS: 1 time, 2-3 lat, 4-5 lon, 6 mode indicators, 7 satellites, 8 HDOP, 9 altitude MSL, 10 geoid separation
    private func gns(_ f: NMEAFields, _ onFix: (GPSFix) -> Void) {
        var tod: Double?
        guard timeField(f, 1, &tod), enter(tod, onFix) else { return }
        var indicator: UInt8 = 0
        let (s, e) = f.range(6)
        var k = s
        while k < e {
            let c = f.base[k]
            if c != UInt8(ascii: "N"), NMEAParser.quality(fromModeIndicator: c) != nil {
                indicator = c
                break
            }
            k += 1
        }
        let valid = indicator != 0
        cycle.gnsValid = valid ? 1 : 0
        if valid {
            if let q = NMEAParser.quality(fromModeIndicator: indicator) { cycle.gnsQuality = q }
            fixDetail(f, geoidSeparation: 10)
        }
        leave(Tag.gns, tod, onFix)
    }

    // GLL: 1-2 lat, 3-4 lon, 5 time, 6 status, 7 mode
    private func gll(_ f: NMEAFields, _ onFix: (GPSFix) -> Void) {
        var tod: Double?
        guard timeField(f, 5, &tod), enter(tod, onFix) else { return }
        let (valid, modeChar) = statusValid(f, status: 6, mode: 7)
        cycle.gllValid = valid ? 1 : 0
        if valid {
            position(f, 1, 3)
            if let q = NMEAParser.quality(fromModeIndicator: modeChar) { cycle.indicatorQuality = q }
        }
        leave(Tag.gll, tod, onFix)
    }

    // ZDA: 1 time, 2 day, 3 month, 4 year (four digits), 5-6 local zone
    private func zda(_ f: NMEAFields, _ onFix: (GPSFix) -> Void) {
        var tod: Double?
        guard timeField(f, 1, &tod), enter(tod, onFix) else { return }
        if let tod, !f.isEmpty(2) || !f.isEmpty(3) || !f.isEmpty(4) {
            if let d = f.int(2), let m = f.int(3), let y = f.int(4), f.range(4).1 - f.range(4).0 == 4,
                let t = GPSTime.resolve(
                    year: y, month: m, day: d, secondsOfDay: tod, twoDigitYear: false,
                    notBefore: notBefore)
            {
                cycle.setDays(t)
            } else {
                parsed.badFields &+= 1
            }
        }
        leave(Tag.zda, tod, onFix)
    }

    // GSA: 1 selection, 2 fix type (1 none, 2 2D, 3 3D), 3-14 satellites, 15 PDOP, 16 HDOP, 17 VDOP
    private func gsa(_ f: NMEAFields) {
        guard let type = f.int(2), (1...3).contains(type) else { return }
        cycle.gsaMode = type
        lastGSAMode = type
        if type >= 2, let v = f.decimal(16) { cycle.hdop = v }
    }

    // VTG: 1 course true, 2 T, 3 course magnetic, 4 M, 5 speed knots, 6 N, 7 speed km/h, 8 K, 9 mode
    private func vtg(_ f: NMEAFields) {
        guard f.char(9) != UInt8(ascii: "N") else { return }
        if f.count >= 8 {
            if let v = f.decimal(1) { cycle.course = v }
            if let kn = f.decimal(5) { cycle.speed = kn * (1852.0 / 3600.0) } else if let kmh = f.decimal(7) { cycle.speed = kmh / 3.6 }
        } else {
            // NMEA 2.0 and earlier: course true, course magnetic, knots, km/h, without unit letters.
            if let v = f.decimal(1) { cycle.course = v }
            if let kn = f.decimal(3) { cycle.speed = kn * (1852.0 / 3600.0) }
        }
    }

    @inline(__always)
    private func position(_ f: NMEAFields, _ latField: Int, _ lonField: Int) {
        guard let lat = f.coordinate(latField, hemi: latField + 1, isLatitude: true),
            let lon = f.coordinate(lonField, hemi: lonField + 1, isLatitude: false)
        else {
            if !f.isEmpty(latField) || !f.isEmpty(lonField) { parsed.badFields &+= 1 }
            return
        }
        cycle.lat = lat
        cycle.lon = lon
        cycle.hasPosition = true
    }

    /// FAA mode indicator (NMEA 2.3+) → the GGA quality it corresponds to; nil for N and unknowns.
    static func quality(fromModeIndicator c: UInt8) -> Int? {
        switch c {
        case UInt8(ascii: "A"): return 1
        case UInt8(ascii: "D"): return 2
        case UInt8(ascii: "P"): return 3
        case UInt8(ascii: "R"): return 4
        case UInt8(ascii: "F"): return 5
        case UInt8(ascii: "E"): return 6
        case UInt8(ascii: "M"): return 7
        case UInt8(ascii: "S"): return 8
        default: return nil
        }
    }

    // MARK: - Cycles

    private struct Cycle {
        var hasTOD = false
        var tod = 0.0
        var mask: UInt8 = 0
        var hasDays = false
        var days: Int64 = 0
        var hasPosition = false
        var lat = 0.0, lon = 0.0
        var altMSL: Double?
        var geoidSep: Double?
        /// -1 absent, else the latest value.
        var ggaQuality = -1
        var gnsValid = -1, rmcValid = -1, gllValid = -1
        var gnsQuality = 0, indicatorQuality = 0
        var gsaMode = 0
        var satellites: Int?
        var hdop: Double?
        var speed: Double?
        var course: Double?

        mutating func setDays(_ t: Double) {
            hasDays = true
            days = Int64((t / 86_400).rounded(.down))
        }
    }

    private func finishCycle(_ onFix: (GPSFix) -> Void) {
        defer { cycle = Cycle() }
        let c = cycle
        let valid: Bool
        if c.ggaQuality >= 0 {
            valid = c.ggaQuality > 0
        } else if c.gnsValid >= 0 {
            valid = c.gnsValid == 1
        } else if c.rmcValid >= 0 {
            valid = c.rmcValid == 1
        } else if c.gllValid >= 0 {
            valid = c.gllValid == 1
        } else {
            valid = false
        }

        // The date, own or carried (one day on when the time of day went back past midnight).
        var days: Int64 = 0
        var hasDays = false
        if c.hasDays {
            days = c.days
            hasDays = true
        } else if hasLastDays, c.hasTOD {
            days = lastDays + (c.tod < lastDaysTOD - 43_200 ? 1 : 0)
            hasDays = true
        }
        if hasDays, c.hasTOD {
            lastDays = days
            lastDaysTOD = c.tod
            hasLastDays = true
        }

        guard valid, c.hasPosition, c.hasTOD else { return }
        let gsa = c.gsaMode != 0 ? c.gsaMode : lastGSAMode
        let mode = gsa >= 2 ? gsa : (c.altMSL != nil && (c.satellites ?? 4) >= 4 ? 3 : 2)
        var quality = 1
        if c.ggaQuality > 0 {
            quality = c.ggaQuality
        } else if c.gnsQuality > 0 {
            quality = c.gnsQuality
        } else if c.indicatorQuality > 0 {
            quality = c.indicatorQuality
        }
        var hae: Double?
        if let msl = c.altMSL, let sep = c.geoidSep { hae = msl + sep }
        let fix = GPSFix(
            time: hasDays ? Double(days) * 86_400 + c.tod : .nan,
            timeOfDay: c.tod,
            date: hasDays ? GPSDate(daysSinceEpoch: days) : nil,
            lat: c.lat, lon: c.lon,
            altMSL: c.altMSL, geoidSeparation: c.geoidSep, altHAE: hae,
            mode: mode, quality: quality, satellites: c.satellites, hdop: c.hdop,
            speed: c.speed, course: c.course)
        parsed.fixes &+= 1
        onFix(fix)
    }
}
