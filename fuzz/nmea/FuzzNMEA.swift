// libFuzzer target for the NMEA framer, parser, cycle assembly, date resolution and JSON output.
// Built by fuzz/run-nmea.sh together with the OSHCore sources it needs (one module, no import).
//
// Each input is checked for:
//  * no crash, no out-of-bounds access (AddressSanitizer), no trap;
//  * chunking invariance: the same fixes and counters whether fed whole or in pieces whose sizes
//    come from the input itself (1–16 bytes);
//  * sane fixes: latitude/longitude in range, mode 2 or 3, time of day in a day, a date ⇔ a time;
//  * `osh-edge nmea` output: every line is valid JSON;
//  * GPSTime.resolve: a result is never before the floor, and dates already after it never move.

let floor2026: Double = 1_767_225_600

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNMEA(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)

    // Whole.
    let whole = NMEAParser(notBefore: floor2026, maxLineLength: 128)
    var a: [GPSFix] = []
    whole.feed(input) { a.append($0) }
    whole.finish { a.append($0) }

    // In pieces of 1–16 bytes.
    let pieces = NMEAParser(notBefore: floor2026, maxLineLength: 128)
    var b: [GPSFix] = []
    var i = 0, k = 0
    while i < size {
        let n = Swift.min(size - i, Int(data[k % size] & 15) + 1)
        pieces.feed(UnsafeRawBufferPointer(rebasing: input[i..<(i + n)])) { b.append($0) }
        i += n
        k += 1
    }
    pieces.finish { b.append($0) }
    precondition(a == b, "chunking changed the fixes")
    precondition(whole.counters == pieces.counters, "chunking changed the counters")
    precondition(whole.counters.fixes == a.count)

    for f in a {
        precondition(f.lat.isFinite && abs(f.lat) <= 90 && f.lon.isFinite && abs(f.lon) <= 180)
        precondition(f.mode == 2 || f.mode == 3)
        precondition(f.timeOfDay >= 0 && f.timeOfDay < 86_401)
        precondition((f.date != nil) == f.time.isFinite)
        if let h = f.altHAE { precondition(h.isFinite || f.altMSL?.isFinite == false || f.geoidSeparation?.isFinite == false) }
    }

    // The `osh-edge nmea` output: one JSON object per line.
    let out = ByteBuffer(capacity: 256)
    let decoder = NMEADecoder(notBefore: floor2026)
    decoder.decode(input, into: out)
    decoder.finish(into: out)
    var start = 0
    let bytes = out.bytes
    var lines = 0
    for j in 0..<bytes.count where bytes[j] == 0x0A {
        do {
            _ = try JSONValue.parse(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[start..<j]))
        } catch {
            preconditionFailure("invalid JSON line: \(error)")
        }
        start = j + 1
        lines += 1
    }
    precondition(lines == decoder.parser.counters.fixes + 1 && start == bytes.count)

    // Date resolution with values taken from the input.
    if size >= 9 {
        let year = Int(data[0]) | Int(data[1]) << 8
        let two = data[2] & 1 == 1
        let month = Int(data[3] % 14), day = Int(data[4] % 33)
        let sod = Double(Int(data[5]) | Int(data[6]) << 8) * 1.5
        let floor = Double(Int(data[7]) | Int(data[8]) << 8) * 86_400 * 3  // 1970 … ~2508
        if let t = GPSTime.resolve(
            year: two ? year % 128 : year, month: month, day: day, secondsOfDay: sod,
            twoDigitYear: two, notBefore: floor)
        {
            precondition(t >= floor)
            if !two, GPSTime.isValidDate(year: year, month: month, day: day) {
                let plain = Double(ISOTime.days(fromCivil: Int64(year), month, day)) * 86_400 + sod
                precondition(plain >= floor ? t == plain : t < floor + GPSTime.rolloverSeconds + 1)
            }
        }
    }
    return 0
}
