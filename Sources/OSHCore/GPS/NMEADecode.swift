// The core of `osh-edge nmea`: NMEA bytes in, one JSON object per fix out, then the counts.
// No I/O here: the caller supplies `read` and `write` (stdin/file and stdout in the CLI).
//
//   {"time":"2015-04-13T20:26:40.000Z","lat":44.068843333333334,"lon":-121.31419166666667,"alt":1108.1,"mode":3}
//   …
//   {"counts":{"sentences":145,"decoded":…,"skipped":…,"badChecksum":0,…,"fixes":30}}
//
// `time` is null until a date is known (RMC/ZDA); `alt` is the height above the WGS84 ellipsoid
// (gps_data's HeightAboveEllipsoid), null when the receiver gives no geoid separation.
// Buffers are allocated once; decoding and writing allocate nothing per sentence.

public final class NMEADecoder {
    public let parser: NMEAParser

    public init(notBefore: Double, maxLineLength: Int = 256) {
        parser = NMEAParser(notBefore: notBefore, maxLineLength: maxLineLength)
    }

    /// Decodes `bytes`, appending a JSON line per completed fix to `out`.
    public func decode(_ bytes: UnsafeRawBufferPointer, into out: ByteBuffer) {
        parser.feed(bytes) { fix in NMEADecoder.writeFix(fix, to: out) }
    }

    /// End of input: the fix of the cycle in progress, if any, then the counts line.
    public func finish(into out: ByteBuffer) {
        parser.finish { fix in NMEADecoder.writeFix(fix, to: out) }
        NMEADecoder.writeCounts(parser.counters, to: out)
    }

    public static func writeFix(_ fix: GPSFix, to out: ByteBuffer) {
        var w = JSONWriter(out)
        w.beginObject()
        w.key("time")
        if fix.time.isFinite {
            w.raw("\"")
            ISOTime.write(epochSeconds: fix.time, to: out)
            out.append(UInt8(ascii: "\""))
        } else {
            w.null()
        }
        w.key("lat"); w.number(fix.lat)
        w.key("lon"); w.number(fix.lon)
        w.key("alt")
        if let h = fix.altHAE, h.isFinite { w.number(h) } else { w.null() }
        w.key("mode"); w.int(fix.mode)
        w.endObject()
        out.append(UInt8(ascii: "\n"))
    }

    public static func writeCounts(_ c: NMEACounters, to out: ByteBuffer) {
        var w = JSONWriter(out)
        w.beginObject()
        w.key("counts")
        w.beginObject()
        w.key("sentences"); w.int(c.sentences)
        w.key("decoded"); w.int(c.decoded)
        w.key("skipped"); w.int(c.skipped)
        w.key("badChecksum"); w.int(c.badChecksum)
        w.key("noChecksum"); w.int(c.noChecksum)
        w.key("tooLong"); w.int(c.tooLong)
        w.key("malformed"); w.int(c.malformed)
        w.key("badFields"); w.int(c.badFields)
        w.key("late"); w.int(c.late)
        w.key("cycles"); w.int(c.cycles)
        w.key("fixes"); w.int(c.fixes)
        w.endObject()
        w.endObject()
        out.append(UInt8(ascii: "\n"))
    }
}

public enum NMEADecode {
    /// Reads with `read` until it returns 0 or less (end of input or error), writing the JSON
    /// lines with `write` after each read. Returns the final counters.
    ///
    /// - Parameters:
    ///   - notBefore: the date floor (Unix seconds), e.g. `AgentSettings.defaultNotBefore`.
    ///   - read: fills a prefix of the buffer, returns the byte count.
    ///   - write: receives output bytes, valid only during the call.
    @discardableResult
    public static func run(
        notBefore: Double, chunkSize: Int = 65_536,
        read: (UnsafeMutableRawBufferPointer) -> Int,
        write: (UnsafeRawBufferPointer) -> Void
    ) -> NMEACounters {
        let decoder = NMEADecoder(notBefore: notBefore)
        let out = ByteBuffer(capacity: 65_536)
        let size = Swift.max(1, chunkSize)
        let input = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
        defer { input.deallocate() }
        while true {
            let n = read(input)
            guard n > 0 else { break }
            decoder.decode(UnsafeRawBufferPointer(rebasing: input[0..<Swift.min(n, size)]), into: out)
            if out.count > 0 {
                write(UnsafeRawBufferPointer(out.bytes))
                out.reset()
            }
        }
        decoder.finish(into: out)
        write(UnsafeRawBufferPointer(out.bytes))
        return decoder.parser.counters
    }
}
