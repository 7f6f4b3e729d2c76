// The store-and-forward spool's on-disk form: pure encoding and parsing,
// so every damage case is testable without files. The file side is OSHPlatform's FileSpool.
//
// A segment file is a plain sequence of records, little-endian:
//
//   0  u8   0xA5            magic, twice, so a reader can find the next record after damage
//   1  u8   0x5A
//   2  u8   1               format version
//   3  u8   n               value count (leaf order of the output's schema)
//   4  u32  key             FNV-1a of the output name: stable across restarts and config edits
//   8  f64  time            epoch seconds (the ring's monotonic time is meaningless after a reboot)
//  16  f64 × n              values
//  16+8n u32 CRC-32         IEEE 802.3 over bytes 0 ..< 16+8n
//
// A record sampled while no wall clock could be trusted (`[time] require_sync`, no NTP yet) is
// format version 2: `time` is CLOCK_MONOTONIC seconds, and a u64 boot tag (the first 8 bytes of
// the kernel's boot_id) follows it at 16, the values at 24. Within that boot the monotonic time
// becomes an epoch one once the clock is trusted; after a reboot it means nothing, and the record
// is dropped and counted rather than sent with a made-up time.
//
// A record is written with one write(2), so a killed process never leaves half of one; a power
// cut can, and the CRC finds it.

public enum SpoolRecord {
    public static let magic0: UInt8 = 0xA5
    public static let magic1: UInt8 = 0x5A
    public static let version: UInt8 = 1
    /// The version of a record whose time is monotonic, waiting for a trusted clock.
    public static let heldVersion: UInt8 = 2
    public static let headerBytes = 16
    public static let heldHeaderBytes = 24
    public static let maxValues = 255

    /// Bytes of a record holding `n` values (`held`: a version 2 record, with its boot tag).
    public static func size(values n: Int, held: Bool = false) -> Int { (held ? heldHeaderBytes : headerBytes) + 8 * n + 4 }

    /// The key stored for an output (FNV-1a, 32 bit).
    public static func key(outputName: String) -> UInt32 {
        var h: UInt32 = 2_166_136_261
        for b in outputName.utf8 { h = (h ^ UInt32(b)) &* 16_777_619 }
        return h
    }

    /// Writes one record at `out` (room for `size(values:)` bytes) and returns its length.
    /// `heldBoot`: the record is held for the clock, `time` is monotonic in that boot (version 2).
    public static func encode(
        key: UInt32, time: Double, values: UnsafeBufferPointer<Double>,
        into out: UnsafeMutableRawPointer, heldBoot: UInt64? = nil
    ) -> Int {
        let n = min(values.count, maxValues)
        let header = heldBoot == nil ? headerBytes : heldHeaderBytes
        out.storeBytes(of: magic0, toByteOffset: 0, as: UInt8.self)
        out.storeBytes(of: magic1, toByteOffset: 1, as: UInt8.self)
        out.storeBytes(of: heldBoot == nil ? version : heldVersion, toByteOffset: 2, as: UInt8.self)
        out.storeBytes(of: UInt8(n), toByteOffset: 3, as: UInt8.self)
        out.storeBytes(of: key.littleEndian, toByteOffset: 4, as: UInt32.self)
        out.storeBytes(of: time.bitPattern.littleEndian, toByteOffset: 8, as: UInt64.self)
        if let heldBoot { out.storeBytes(of: heldBoot.littleEndian, toByteOffset: 16, as: UInt64.self) }
        for i in 0..<n {
            out.storeBytes(of: values[i].bitPattern.littleEndian, toByteOffset: header + 8 * i, as: UInt64.self)
        }
        let body = header + 8 * n
        let crc = CRC32.checksum(UnsafeRawBufferPointer(start: out, count: body))
        out.storeBytes(of: crc.littleEndian, toByteOffset: body, as: UInt32.self)
        return body + 4
    }

    public enum Parsed: Equatable {
        /// A whole record with a good CRC: `length` bytes from the offset.
        case record(key: UInt32, time: Double, count: Int, length: Int)
        /// The bytes end inside what may be a record (a torn tail, or read more).
        case incomplete
        /// No record starts here.
        case invalid
    }

    /// Parses the record starting at `offset`, if any. Records with more than `maxValues`
    /// values are invalid (no output has that many leaves), which also bounds what damage can claim.
    public static func parse(_ bytes: UnsafeRawBufferPointer, at offset: Int, maxValues limit: Int) -> Parsed {
        let avail = bytes.count - offset
        guard avail > 0, let base = bytes.baseAddress else { return .incomplete }
        let p = base + offset
        if p.load(as: UInt8.self) != magic0 { return .invalid }
        guard avail >= 4 else { return .incomplete }
        let v = p.load(fromByteOffset: 2, as: UInt8.self)
        guard p.load(fromByteOffset: 1, as: UInt8.self) == magic1, v == version || v == heldVersion else { return .invalid }
        let n = Int(p.load(fromByteOffset: 3, as: UInt8.self))
        guard n <= limit else { return .invalid }
        let length = size(values: n, held: v == heldVersion)
        guard avail >= length else { return .incomplete }
        let body = length - 4
        let stored = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: body, as: UInt32.self))
        guard CRC32.checksum(UnsafeRawBufferPointer(start: p, count: body)) == stored else { return .invalid }
        let key = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        let time = Double(bitPattern: UInt64(littleEndian: p.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        return .record(key: key, time: time, count: n, length: length)
    }

    /// Value `i` of the record at `offset` (after `parse` said it is whole).
    public static func value(_ bytes: UnsafeRawBufferPointer, recordAt offset: Int, _ i: Int) -> Double {
        guard let base = bytes.baseAddress else { return .nan }
        let header = base.load(fromByteOffset: offset + 2, as: UInt8.self) == heldVersion ? heldHeaderBytes : headerBytes
        return Double(bitPattern: UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset + header + 8 * i, as: UInt64.self)))
    }

    /// The boot tag of a record held for the clock (its time is monotonic in that boot); nil for an
    /// ordinary record, whose time is epoch seconds. Only after `parse` said the record is whole.
    public static func heldBoot(_ bytes: UnsafeRawBufferPointer, recordAt offset: Int) -> UInt64? {
        guard let base = bytes.baseAddress, base.load(fromByteOffset: offset + 2, as: UInt8.self) == heldVersion else { return nil }
        return UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self))
    }

    /// Where the next record may start after damage at `offset`: the next 0xA5 0x5A pair (or the end).
    public static func resync(_ bytes: UnsafeRawBufferPointer, after offset: Int) -> Int {
        var i = offset + 1
        while i < bytes.count {
            if bytes[i] == magic0, i + 1 >= bytes.count || bytes[i + 1] == magic1 { return i }
            i += 1
        }
        return bytes.count
    }
}

/// The spool's read position: what the node has acknowledged. Stored twice (slot seq % 2) so a
/// write torn by a power cut leaves the other, older slot valid.
public struct SpoolCursor: Equatable, Sendable {
    public static let slotBytes = 32
    static let magic: UInt32 = 0x5243_534F  // "OSCR"

    public var sequence: UInt64
    public var segment: UInt64
    public var offset: UInt64

    public init(sequence: UInt64, segment: UInt64, offset: UInt64) {
        self.sequence = sequence
        self.segment = segment
        self.offset = offset
    }

    public func encode(into out: UnsafeMutableRawPointer) {
        out.storeBytes(of: Self.magic.littleEndian, toByteOffset: 0, as: UInt32.self)
        // Segments are at most 64 MiB, so the offset fits 32 bits.
        out.storeBytes(of: UInt32(truncatingIfNeeded: offset).littleEndian, toByteOffset: 4, as: UInt32.self)
        out.storeBytes(of: sequence.littleEndian, toByteOffset: 8, as: UInt64.self)
        out.storeBytes(of: segment.littleEndian, toByteOffset: 16, as: UInt64.self)
        out.storeBytes(of: UInt32(0), toByteOffset: 24, as: UInt32.self)
        let crc = CRC32.checksum(UnsafeRawBufferPointer(start: out, count: 28))
        out.storeBytes(of: crc.littleEndian, toByteOffset: 28, as: UInt32.self)
    }

    /// The slot's cursor, or nil when it is empty or torn.
    public static func decode(_ slot: UnsafeRawBufferPointer) -> SpoolCursor? {
        guard slot.count >= slotBytes, let p = slot.baseAddress,
            UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 0, as: UInt32.self)) == magic,
            CRC32.checksum(UnsafeRawBufferPointer(start: p, count: 28))
                == UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 28, as: UInt32.self))
        else { return nil }
        return SpoolCursor(
            sequence: UInt64(littleEndian: p.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
            segment: UInt64(littleEndian: p.loadUnaligned(fromByteOffset: 16, as: UInt64.self)),
            offset: UInt64(UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 4, as: UInt32.self))))
    }

    /// The newer of the two slots that are intact.
    public static func newest(_ a: SpoolCursor?, _ b: SpoolCursor?) -> SpoolCursor? {
        switch (a, b) {
        case let (x?, y?): return x.sequence >= y.sequence ? x : y
        case let (x?, nil): return x
        case let (nil, y?): return y
        default: return nil
        }
    }
}

/// CRC-32 (IEEE 802.3, reflected, the one zlib and PNG use).
public enum CRC32 {
    static let table: [UInt32] = (0..<256).map { i -> UInt32 in
        var c = UInt32(i)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// The CRC of `bytes`; `previous` (the CRC of what came before them) continues one over
    /// bytes that are not contiguous: checksum(b, previous: checksum(a)) == checksum(a + b).
    public static func checksum(_ bytes: UnsafeRawBufferPointer, previous: UInt32 = 0) -> UInt32 {
        var c: UInt32 = previous ^ 0xFFFF_FFFF
        table.withUnsafeBufferPointer { t in
            for b in bytes { c = t[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        }
        return c ^ 0xFFFF_FFFF
    }
}

/// How often the spool's writes reach the disk (`[publisher] spool_fsync`). A killed process loses
/// nothing in any mode (the page cache outlives it); these decide what a power cut may take.
public enum SpoolSync: String, CaseIterable, Sendable {
    /// fdatasync after every record: a power cut loses nothing written; the most SD-card wear.
    case record
    /// fdatasync at most once a second: a power cut loses up to a second of spooled observations.
    case second
    /// Never: the kernel writes back within about 30 s.
    case never
}

/// `[publisher] spool`, `spool_max_mb`, `spool_fsync`.
public struct SpoolSettings: Sendable, Equatable {
    public var enabled = false
    public var maxMegabytes = 64
    public var sync = SpoolSync.second
    public init() {}
}

/// The spool as the publisher sees it. Records are taken oldest first, in batches of one
/// datastream; a batch stays until `commitBatch` (delivered, or refused for good).
public protocol ObservationSpool: AnyObject {
    /// Stores one observation. False when it could not be stored (disk error, full and nothing
    /// can be dropped): the caller counts it lost.
    func append(datastream: Int, epochTime: Double, values: UnsafeBufferPointer<Double>) -> Bool
    /// Stores one observation sampled before any wall clock could be trusted: its monotonic time,
    /// tied to this boot. It is sent once `heldTimeOffset` is known; after a reboot it cannot be.
    func appendHeld(datastream: Int, monotonicTime: Double, values: UnsafeBufferPointer<Double>) -> Bool
    /// Epoch = monotonic + this, for the records this boot held (nil: the clock is not trusted yet,
    /// and a batch stops before the first of them). The publisher keeps it equal to its clock offset.
    var heldTimeOffset: Double? { get set }
    /// Bytes waiting to be sent (0 = nothing spooled).
    var pendingBytes: Int { get }
    /// Loads the oldest waiting records (up to `max`, all of one datastream) and returns the datastream
    /// index, or nil when nothing is waiting. Calling it again without `commitBatch` reloads the same batch.
    func loadBatch(max: Int) -> Int?
    /// Records in the loaded batch.
    var batchCount: Int { get }
    func batchTime(_ k: Int) -> Double
    func batchValues(_ k: Int) -> UnsafeBufferPointer<Double>
    /// The loaded batch is done with: advance past it durably (per the sync policy).
    func commitBatch()
    /// Called on the publisher's tick: the periodic sync.
    func tick(now: Double)
    /// Called when the size bound drops unsent records: (datastream index, how many). The publisher
    /// sets it, to count them against their datastreams.
    var onBoundDrop: ((_ datastream: Int, _ count: Int) -> Void)? { get set }
    /// Called when records held for the clock in an earlier boot are dropped (their times are lost
    /// with that boot): (datastream index, how many).
    var onUntimedDrop: ((_ datastream: Int, _ count: Int) -> Void)? { get set }
}
