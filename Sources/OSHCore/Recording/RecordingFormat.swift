// The on-board recording's on-disk form: pure encoding and parsing, so every damage
// case is testable without files. The file side is OSHPlatform's RecordingStore.
//
// A segment file is a plain sequence of records, little-endian:
//
//   0  u8   0xA5            magic, the spool's, so damage is skipped the same way (SpoolRecord.resync)
//   1  u8   0x5A
//   2  u8   2               format version (the spool's records are 1)
//   3  u8   kind            0 values, 1 access unit, 2 key-frame access unit; bit 7: the live
//                           stream took it too (an upload leaves it out: the node has it)
//   4  u32  key             SpoolRecord.key of the output name
//   8  f64  time            epoch seconds
//  16  u32  length          payload bytes
//  20  payload              values: n × f64; video: the Annex-B access unit as encoded
//  20+length u32 CRC-32     over bytes 0 ..< 20+length
//
// The header leads, so a reader can walk a segment header to header without reading payloads.

public enum RecordingRecord {
    public static let version: UInt8 = 2
    public static let headerBytes = 20
    public static let crcBytes = 4
    /// No access unit is this large (a 1080p key frame is well under 1 MiB); it bounds what a
    /// damaged length can claim.
    public static let maxPayload = 8 << 20

    public enum Kind: UInt8, Sendable {
        case values = 0
        case accessUnit = 1
        case keyFrame = 2
        public var isVideo: Bool { self != .values }
    }

    /// Bit 7 of the kind byte.
    static let liveBit: UInt8 = 0x80

    public struct Header: Equatable, Sendable {
        public var kind: Kind
        /// The live stream took this observation too.
        public var live: Bool
        public var key: UInt32
        public var time: Double
        public var payloadLength: Int
        public init(kind: Kind, live: Bool = false, key: UInt32, time: Double, payloadLength: Int) {
            self.kind = kind
            self.live = live
            self.key = key
            self.time = time
            self.payloadLength = payloadLength
        }
        /// The whole record's bytes.
        public var length: Int { RecordingRecord.size(payload: payloadLength) }
    }

    public enum Parsed: Equatable {
        case record(Header)
        /// The bytes end inside what may be a record (a torn tail, or read more).
        case incomplete
        /// No record starts here.
        case invalid
    }

    /// Bytes of a record with `payload` payload bytes.
    @inline(__always)
    public static func size(payload: Int) -> Int { headerBytes + payload + crcBytes }

    /// Writes the 20-byte header at `out`.
    public static func encodeHeader(
        kind: Kind, live: Bool = false, key: UInt32, time: Double, payloadLength: Int,
        into out: UnsafeMutableRawPointer
    ) {
        out.storeBytes(of: SpoolRecord.magic0, toByteOffset: 0, as: UInt8.self)
        out.storeBytes(of: SpoolRecord.magic1, toByteOffset: 1, as: UInt8.self)
        out.storeBytes(of: version, toByteOffset: 2, as: UInt8.self)
        out.storeBytes(of: kind.rawValue | (live ? liveBit : 0), toByteOffset: 3, as: UInt8.self)
        out.storeBytes(of: key.littleEndian, toByteOffset: 4, as: UInt32.self)
        out.storeBytes(of: time.bitPattern.littleEndian, toByteOffset: 8, as: UInt64.self)
        out.storeBytes(of: UInt32(truncatingIfNeeded: payloadLength).littleEndian, toByteOffset: 16, as: UInt32.self)
    }

    /// The CRC a record ends with, over its header (at `header`) and its payload, which need not
    /// follow it in memory (video: the encoder's buffer, written with writev).
    public static func crc(header: UnsafeRawPointer, payload: UnsafeRawBufferPointer) -> UInt32 {
        CRC32.checksum(payload, previous: CRC32.checksum(UnsafeRawBufferPointer(start: header, count: headerBytes)))
    }

    /// Writes a whole values record at `out` (room for `size(payload: 8 * values.count)`) and returns its length.
    public static func encode(
        key: UInt32, time: Double, values: UnsafeBufferPointer<Double>, live: Bool = false,
        into out: UnsafeMutableRawPointer
    ) -> Int {
        let n = values.count
        encodeHeader(kind: .values, live: live, key: key, time: time, payloadLength: 8 * n, into: out)
        for i in 0..<n {
            out.storeBytes(of: values[i].bitPattern.littleEndian, toByteOffset: headerBytes + 8 * i, as: UInt64.self)
        }
        let body = headerBytes + 8 * n
        let sum = CRC32.checksum(UnsafeRawBufferPointer(start: out, count: body))
        out.storeBytes(of: sum.littleEndian, toByteOffset: body, as: UInt32.self)
        return body + crcBytes
    }

    /// The header at `offset`, checked for sense but not against the CRC (a header walk:
    /// counting records without reading payloads). `.incomplete`: fewer than 20 bytes.
    public static func header(_ bytes: UnsafeRawBufferPointer, at offset: Int, maxPayload limit: Int = maxPayload) -> Parsed {
        let avail = bytes.count - offset
        guard avail > 0, let base = bytes.baseAddress else { return .incomplete }
        let p = base + offset
        // Each byte is judged as soon as it is there, so a torn tail is `incomplete` only while it
        // could still be the start of a record.
        if p.load(as: UInt8.self) != SpoolRecord.magic0 { return .invalid }
        if avail >= 2, p.load(fromByteOffset: 1, as: UInt8.self) != SpoolRecord.magic1 { return .invalid }
        if avail >= 3, p.load(fromByteOffset: 2, as: UInt8.self) != version { return .invalid }
        var kind = Kind.values
        var live = false
        if avail >= 4 {
            let byte = p.load(fromByteOffset: 3, as: UInt8.self)
            guard let k = Kind(rawValue: byte & ~liveBit) else { return .invalid }
            kind = k
            live = byte & liveBit != 0
        }
        guard avail >= headerBytes else { return .incomplete }
        let length = Int(UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 16, as: UInt32.self)))
        guard length <= limit, kind.isVideo || length % 8 == 0 else { return .invalid }
        let key = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        let time = Double(bitPattern: UInt64(littleEndian: p.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        return .record(Header(kind: kind, live: live, key: key, time: time, payloadLength: length))
    }

    /// The whole record at `offset`, CRC checked.
    public static func parse(_ bytes: UnsafeRawBufferPointer, at offset: Int, maxPayload limit: Int = maxPayload) -> Parsed {
        let h = header(bytes, at: offset, maxPayload: limit)
        guard case .record(let r) = h, let base = bytes.baseAddress else { return h }
        guard bytes.count - offset >= r.length else { return .incomplete }
        let body = headerBytes + r.payloadLength
        let stored = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset + body, as: UInt32.self))
        guard CRC32.checksum(UnsafeRawBufferPointer(start: base + offset, count: body)) == stored else { return .invalid }
        return h
    }

    /// The payload of the record at `offset` (after `parse` or `header` found one there).
    public static func payload(_ bytes: UnsafeRawBufferPointer, recordAt offset: Int, _ h: Header) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: bytes[(offset + headerBytes)..<(offset + headerBytes + h.payloadLength)])
    }

    /// Where the next record may start after damage at `offset` (the spool's magic, so its rule).
    public static func resync(_ bytes: UnsafeRawBufferPointer, after offset: Int) -> Int {
        SpoolRecord.resync(bytes, after: offset)
    }

    // MARK: Segment names

    /// Bytes of a segment's name without `.rec`: `20261202T031500.123Z`.
    public static let nameStemBytes = 20

    /// A segment's file name for its first record's time: UTC to the millisecond, fixed width,
    /// so names sort as times do (years 1000–9999).
    public static func segmentName(start t: Double) -> String {
        let ms = Int64((t * 1000).rounded(.down))
        let days = ISOTime.floorDiv(ms, 86_400_000)
        var rem = ms - days * 86_400_000
        let (y, m, d) = ISOTime.civil(fromDays: days)
        let hh = rem / 3_600_000; rem -= hh * 3_600_000
        let mm = rem / 60_000; rem -= mm * 60_000
        let ss = rem / 1000
        let out = ByteBuffer(capacity: 32)
        ISOTime.digits(min(max(y, 0), 9999), width: 4, out)
        ISOTime.digits(Int64(m), width: 2, out)
        ISOTime.digits(Int64(d), width: 2, out)
        out.append(UInt8(ascii: "T"))
        ISOTime.digits(hh, width: 2, out)
        ISOTime.digits(mm, width: 2, out)
        ISOTime.digits(ss, width: 2, out)
        out.append(UInt8(ascii: "."))
        ISOTime.digits(rem - ss * 1000, width: 3, out)
        out.append(StaticString("Z.rec"))
        return out.string
    }

    /// The start time a segment's file name says, or nil when the name is not a segment's.
    public static func segmentStart(name: String) -> Double? {
        let b = Array(name.utf8)
        guard b.count == nameStemBytes + 4, name.hasSuffix("Z.rec"), b[8] == UInt8(ascii: "T"), b[15] == UInt8(ascii: ".") else {
            return nil
        }
        func number(_ from: Int, _ count: Int) -> Int64? {
            var v: Int64 = 0
            for i in from..<(from + count) {
                guard b[i] >= 48, b[i] <= 57 else { return nil }
                v = v * 10 + Int64(b[i] - 48)
            }
            return v
        }
        guard let y = number(0, 4), let mo = number(4, 2), let d = number(6, 2), let h = number(9, 2),
            let mi = number(11, 2), let s = number(13, 2), let ms = number(16, 3),
            (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, s < 61
        else { return nil }
        let days = ISOTime.days(fromCivil: y, Int(mo), Int(d))
        return Double(days * 86_400_000 + h * 3_600_000 + mi * 60_000 + s * 1000 + ms) / 1000
    }
}
