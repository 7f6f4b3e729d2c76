// Size (~550 lines): writing segments, the cursor, recovery and the reader share one on-disk
// invariant set, tested together by the torn-tail and kill tests.
#if canImport(Glibc)
import Glibc
#endif
import OSHCore

/// `[publisher] spool*`: where and how much.
public struct FileSpoolOptions: Sendable, Equatable {
    public var directory: String
    /// The whole spool's size bound; when a new segment would pass it, the oldest segment goes.
    public var maxBytes: Int
    public var sync: SpoolSync
    /// One segment file's size: an eighth of the bound, 64 KiB to 4 MiB (recovery reads one segment
    /// at start, and dropping the oldest loses at most an eighth of the spool).
    public var segmentBytes: Int
    /// This boot's tag, written into records held for the clock (`BootID.tag`; tests choose their own).
    public var bootTag: UInt64

    public init(directory: String, maxBytes: Int = 64 << 20, sync: SpoolSync = .second, bootTag: UInt64 = BootID.tag) {
        self.directory = directory
        self.bootTag = bootTag
        self.maxBytes = max(maxBytes, 128 << 10)
        self.sync = sync
        segmentBytes = min(max(self.maxBytes / 8, 64 << 10), 4 << 20)
    }
}

/// What the spool did (device_health, the status line, `osh-edge spool status`).
public struct SpoolStats: Sendable, Equatable {
    /// Records written by this process.
    public var appended = 0
    /// Records lost because the spool was full and its oldest segment was dropped.
    public var droppedFull = 0
    /// Damaged stretches skipped (a torn tail after a power cut, a bad CRC) and their bytes.
    public var damaged = 0
    public var damagedBytes = 0
    /// Records of an output no longer configured, skipped.
    public var unknownOutput = 0
    /// Records held for the clock in an earlier boot: no true time can be given to them, so dropped.
    public var untimed = 0
    public var writeErrors = 0
    public var segmentsDropped = 0
}

/// The store-and-forward spool on files: bounded, append-only segment files
/// `NNNN….seg` in one directory, one CRC'd record per observation (SpoolRecord), and a
/// two-slot cursor file holding what the node has acknowledged. Opening it recovers: segments
/// before the cursor are deleted, a torn tail of the newest is cut off.
///
/// Nothing here allocates per observation: the record, read and batch buffers are made once.
public final class FileSpool: ObservationSpool {
    public let options: FileSpoolOptions
    public private(set) var stats = SpoolStats()
    /// A problem worth a log line (each kind once per process).
    public var onProblem: ((String) -> Void)?
    public var onBoundDrop: ((_ datastream: Int, _ count: Int) -> Void)?
    public var onUntimedDrop: ((_ datastream: Int, _ count: Int) -> Void)?
    public var heldTimeOffset: Double?
    /// The filesystem is full: asked to free at least this many bytes (the recording yields to
    /// the spool); true when something was freed, and the write is tried once more.
    public var onNoSpace: ((Int) -> Bool)?
    /// Observations not written since writing last worked (for the "writing again" line).
    private var missedSinceWriting = 0
    /// Per datastream, records of the segment `dropOldest` is dropping (made once).
    private var lostPerDatastream: [Int]

    private let keys: [UInt32]
    private let keyIndex: [UInt32: Int]
    private let maxValues: Int
    private var ids: [UInt64] = []
    private var sizes: [Int] = []
    /// The newest segment, open for appending (nil until the first append after opening).
    private var writer: FileDescriptor?
    private let cursorFile: FileDescriptor
    private var cursor: SpoolCursor
    private var dirty = false
    private var lastSync = 0.0
    private var reported: Set<String> = []

    private let recordBuf: UnsafeMutableRawPointer
    private let cursorBuf: UnsafeMutableRawPointer
    private let readBuf: UnsafeMutableRawBufferPointer
    private static let batchLimit = 500
    private let times: UnsafeMutablePointer<Double>
    private let values: UnsafeMutablePointer<Double>
    private let counts: UnsafeMutablePointer<Int>
    public private(set) var batchCount = 0
    private var batchEnd: (segment: UInt64, offset: Int)?
    private var loadedDatastream = -1
    private var loadedLimit = 0
    private var batchDamaged = 0, batchDamagedBytes = 0, batchUnknown = 0, batchUntimed = 0
    /// Per datastream, the batch's untimed records (made once).
    private var untimedPerDatastream: [Int]

    /// Opens (creating) the spool for outputs `outputNames` (index = the publisher's datastream index).
    public init(options: FileSpoolOptions, outputNames: [String], maxValues: Int) throws {
        self.options = options
        self.maxValues = min(max(1, maxValues), SpoolRecord.maxValues)
        keys = outputNames.map { SpoolRecord.key(outputName: $0) }
        var index: [UInt32: Int] = [:]
        for (i, k) in keys.enumerated() where index[k] == nil { index[k] = i }
        keyIndex = index
        lostPerDatastream = [Int](repeating: 0, count: keys.count)
        untimedPerDatastream = [Int](repeating: 0, count: keys.count)
        try StateFiles.makeDirectories(options.directory)
        let cursorPath = options.directory + "/cursor"
        cursorFile = try FileDescriptor.open(cursorPath, O_RDWR | O_CREAT, mode: 0o600)
        recordBuf = .allocate(byteCount: SpoolRecord.size(values: SpoolRecord.maxValues), alignment: 8)
        cursorBuf = .allocate(byteCount: SpoolCursor.slotBytes, alignment: 8)
        readBuf = .allocate(byteCount: 256 << 10, alignment: 8)
        times = .allocate(capacity: Self.batchLimit)
        values = .allocate(capacity: Self.batchLimit * self.maxValues)
        counts = .allocate(capacity: Self.batchLimit)
        cursor = SpoolCursor(sequence: 0, segment: 1, offset: 0)
        do {
            try recover()
        } catch {
            cursorFile.close()
            writer?.close()
            release()
            throw error
        }
    }

    deinit {
        if dirty { sync(force: true) }
        closeReader()
        writer?.close()
        cursorFile.close()
        release()
    }

    private func release() {
        recordBuf.deallocate(); cursorBuf.deallocate(); readBuf.deallocate(); times.deallocate(); values.deallocate(); counts.deallocate()
    }

    private func path(_ id: UInt64) -> String { Self.segmentPath(options.directory, id) }

    static func segmentPath(_ dir: String, _ id: UInt64) -> String {
        let digits = String(id)
        return dir + "/" + String(repeating: "0", count: max(0, 20 - digits.count)) + digits + ".seg"
    }

    // MARK: Opening

    private func recover() throws {
        ids = try Self.segmentIDs(options.directory)
        sizes = []
        for id in ids {
            var st = stat()
            guard stat(path(id), &st) == 0 else { throw SystemError.last("stat", subject: path(id)) }
            sizes.append(Int(st.st_size))
        }
        cursor = Self.readCursor(cursorFile) ?? SpoolCursor(sequence: 0, segment: ids.first ?? 1, offset: 0)
        // Segments wholly before the cursor were delivered; an unlink lost in a power cut comes back here.
        deleteBeforeCursor()
        if let first = ids.first, first > cursor.segment {
            cursor = SpoolCursor(sequence: cursor.sequence, segment: first, offset: 0)
        }
        if let last = ids.last {
            // A power cut may have left half a record at the end of the newest segment: cut it off,
            // so appends continue after the last whole record.
            let end = try validEnd(of: last, size: sizes[sizes.count - 1])
            if end < sizes[sizes.count - 1] {
                let p = path(last)
                stats.damaged += 1
                stats.damagedBytes += sizes[sizes.count - 1] - end
                problem("torn", "spool: \(p) ended in a torn record (\(sizes[sizes.count - 1] - end) bytes, from a power cut?); cut off")
                guard truncate(p, off_t(end)) == 0 else { throw SystemError.last("truncate", subject: p) }
                sizes[sizes.count - 1] = end
            }
            if Int(cursor.offset) > sizes[0] { cursor.offset = UInt64(sizes[0]) }
        }
    }

    /// The newer intact slot of a cursor file (nil: none written yet, or both torn).
    static func readCursor(_ file: FileDescriptor) -> SpoolCursor? {
        var slots = [UInt8](repeating: 0, count: 2 * SpoolCursor.slotBytes)
        let n = try? slots.withUnsafeMutableBytes { try file.read(into: $0, at: 0) }
        guard n == slots.count else { return nil }
        return slots.withUnsafeBytes { b in
            SpoolCursor.newest(
                SpoolCursor.decode(UnsafeRawBufferPointer(rebasing: b[0..<SpoolCursor.slotBytes])),
                SpoolCursor.decode(UnsafeRawBufferPointer(rebasing: b[SpoolCursor.slotBytes...])))
        }
    }

    /// Directory entries named like segments, oldest first.
    static func segmentIDs(_ dir: String) throws -> [UInt64] {
        try StateFiles.entries(dir).compactMap { $0.hasSuffix(".seg") ? UInt64($0.dropLast(4)) : nil }.sorted()
    }

    /// End of the last whole record in a segment (scanning across damage).
    private func validEnd(of id: UInt64, size: Int) throws -> Int {
        var end = 0
        try scan(id, from: 0, size: size) { item in
            if case .record(let off, _, _, _, let length, _, _) = item { end = off + length }
            return true
        }
        return end
    }

    /// What `scan` finds: a whole record (its bytes are `chunk` from `rel`, valid during the call),
    /// or a damaged stretch (a bad CRC, garbage, or a torn tail).
    enum ScanItem {
        case record(offset: Int, key: UInt32, time: Double, count: Int, length: Int, chunk: UnsafeRawBufferPointer, rel: Int)
        case damage(offset: Int, length: Int)
    }

    @discardableResult
    private func scan(
        _ id: UInt64, from start: Int, size: Int, readAtMost: Int = Int.max,
        _ body: (ScanItem) -> Bool
    ) throws -> Int {
        let file: FileDescriptor
        if let r = reader, readSegment == id {
            file = r
        } else {
            closeReader()
            file = try FileDescriptor.open(path(id), O_RDONLY)
            reader = file
            readSegment = id
        }
        // `readAtMost` keeps a batch's read to what the batch can hold (never less than one record).
        let window = UnsafeMutableRawBufferPointer(
            rebasing: readBuf[0..<min(readBuf.count, max(readAtMost, SpoolRecord.size(values: SpoolRecord.maxValues)))])
        return try Self.scan(file, name: path(id), from: start, size: size, buffer: window, body)
    }

    /// The segment being read stays open between batches (opening it per batch would build its
    /// path, an allocation, every time).
    private var reader: FileDescriptor?
    private var readSegment: UInt64 = 0

    private func closeReader() {
        reader?.close()
        reader = nil
    }

    /// Removes a segment file (the reader's descriptor on it first).
    private func remove(_ id: UInt64) {
        if readSegment == id { closeReader() }
        unlink(path(id))
    }

    /// Reads a segment file from `start` in chunks through `buffer` and calls `body` for each record and
    /// each damaged stretch, in file order. `body` returns false to stop; the result is where reading stopped.
    @discardableResult
    static func scan(
        path p: String, from start: Int, size: Int, buffer: UnsafeMutableRawBufferPointer,
        _ body: (ScanItem) -> Bool
    ) throws -> Int {
        let file = try FileDescriptor.open(p, O_RDONLY)
        defer { file.close() }
        return try scan(file, name: p, from: start, size: size, buffer: buffer, body)
    }

    static func scan(
        _ file: FileDescriptor, name: @autoclosure () -> String, from start: Int, size: Int,
        buffer: UnsafeMutableRawBufferPointer, _ body: (ScanItem) -> Bool
    ) throws -> Int {
        var off = start
        while off < size {
            let got: Int
            do {
                got = try file.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<min(buffer.count, size - off)]), at: off)
            } catch {
                throw error.on(name())
            }
            if got == 0 { break }  // the file is shorter than we knew: nothing more to read
            let chunk = UnsafeRawBufferPointer(start: buffer.baseAddress, count: got)
            let atEnd = off + got >= size
            var pos = 0
            chunkLoop: while pos < chunk.count {
                switch SpoolRecord.parse(chunk, at: pos, maxValues: SpoolRecord.maxValues) {
                case .record(let key, let time, let n, let len):
                    guard body(.record(offset: off + pos, key: key, time: time, count: n, length: len, chunk: chunk, rel: pos)) else {
                        return off + pos
                    }
                    pos += len
                case .invalid:
                    let next = SpoolRecord.resync(chunk, after: pos)
                    guard body(.damage(offset: off + pos, length: next - pos)) else { return off + pos }
                    pos = next
                case .incomplete:
                    // At the end of the file this is half a record: the torn tail. Otherwise read on from here.
                    guard atEnd else { break chunkLoop }
                    guard body(.damage(offset: off + pos, length: chunk.count - pos)) else { return off + pos }
                    pos = chunk.count
                }
            }
            if pos == 0 { break }  // cannot happen (a chunk holds many whole records); never loop forever
            off += pos
        }
        return off
    }

    // MARK: Writing

    public var pendingBytes: Int {
        guard !sizes.isEmpty else { return 0 }
        return sizes.reduce(0, +) - Int(cursor.offset)
    }

    public func append(datastream: Int, epochTime: Double, values v: UnsafeBufferPointer<Double>) -> Bool {
        write(datastream: datastream, time: epochTime, values: v, heldBoot: nil)
    }

    public func appendHeld(datastream: Int, monotonicTime: Double, values v: UnsafeBufferPointer<Double>) -> Bool {
        write(datastream: datastream, time: monotonicTime, values: v, heldBoot: options.bootTag)
    }

    private func write(datastream: Int, time: Double, values v: UnsafeBufferPointer<Double>, heldBoot: UInt64?) -> Bool {
        guard datastream >= 0, datastream < keys.count else { return false }
        let len = SpoolRecord.encode(
            key: keys[datastream], time: time,
            values: UnsafeBufferPointer(rebasing: v.prefix(maxValues)), into: recordBuf, heldBoot: heldBoot)
        var retried = false
        while true {
            if writer == nil || sizes[sizes.count - 1] + len > options.segmentBytes {
                guard openNextSegment() else {
                    if !retried, lastOpenErrno == ENOSPC, onNoSpace?(options.segmentBytes) == true { retried = true; continue }
                    return failed()
                }
            }
            guard let w = writer else { return failed() }
            do {
                try w.writeAll(UnsafeRawBufferPointer(start: recordBuf, count: len))
                break
            } catch {
                let e = error.on(path(ids[ids.count - 1]))
                // Never leave half a record: cut back to the last whole one.
                try? w.truncate(to: sizes[sizes.count - 1])
                // A full card: the recording gives back room (the live backlog comes first), once.
                if e.errno == ENOSPC, !retried, onNoSpace?(max(len, 64 << 10)) == true { retried = true; continue }
                problem(
                    "write-\(e.errno)",
                    "spool: \(e); observations are dropped and counted until it can write again"
                        + (e.errno == ENOSPC ? " (the state filesystem is full: lower spool_max_mb or free space)" : ""))
                return failed()
            }
        }
        if missedSinceWriting > 0 {
            onProblem?(
                "spool: writing again (\(missedSinceWriting) observation\(missedSinceWriting == 1 ? "" : "s") not written meanwhile, counted)"
            )
            missedSinceWriting = 0
            reported = reported.filter { !$0.hasPrefix("write-") && !$0.hasPrefix("open-") }
        }
        sizes[sizes.count - 1] += len
        stats.appended += 1
        if options.sync == .record { try? writer?.sync(dataOnly: true) } else { dirty = true }
        return true
    }

    private func failed() -> Bool {
        stats.writeErrors += 1
        missedSinceWriting += 1
        return false
    }

    /// The errno of the last segment that could not be created (0: it was).
    private var lastOpenErrno: Int32 = 0

    /// Closes the current segment and starts the next, first dropping the oldest ones while the
    /// bound would be passed.
    private func openNextSegment() -> Bool {
        lastOpenErrno = 0
        if let w = writer {
            if options.sync != .never { try? w.sync(dataOnly: true) }
            w.close()
            writer = nil
        }
        while !ids.isEmpty, sizes.reduce(0, +) + options.segmentBytes > options.maxBytes {
            dropOldest()
        }
        let id = (ids.last.map { $0 + 1 }) ?? max(cursor.segment, 1)
        let p = path(id)
        do {
            writer = try FileDescriptor.open(p, O_WRONLY | O_CREAT | O_APPEND, mode: 0o600)
        } catch {
            lastOpenErrno = error.errno
            problem("open-\(error.errno)", "spool: \(error); observations are dropped and counted")
            return false
        }
        if ids.isEmpty {
            cursor = SpoolCursor(sequence: cursor.sequence, segment: id, offset: 0)
        }
        ids.append(id)
        sizes.append(0)
        if options.sync != .never { FileDescriptor.syncDirectory(options.directory) }
        return true
    }

    /// The spool is full: the oldest segment goes, and its records not yet sent are counted.
    private func dropOldest() {
        let id = ids[0]
        let from = id == cursor.segment ? Int(cursor.offset) : 0
        var lost = 0
        for d in lostPerDatastream.indices { lostPerDatastream[d] = 0 }
        _ = try? scan(id, from: from, size: sizes[0]) { item in
            guard case .record(_, let key, _, _, _, _, _) = item else { return true }
            lost += 1
            // Records of an output no longer configured count only in the spool's own stats.
            if let d = keyIndex[key] { lostPerDatastream[d] += 1 }
            return true
        }
        remove(id)
        ids.removeFirst()
        sizes.removeFirst()
        stats.droppedFull += lost
        for (d, n) in lostPerDatastream.enumerated() where n > 0 { onBoundDrop?(d, n) }
        stats.segmentsDropped += 1
        problem("full", "spool: full (\(options.maxBytes / 1024) KiB): dropping the oldest segment; lost observations are counted")
        if batchEnd?.segment == id { batchEnd = nil }  // the loaded batch went with it
        if cursor.segment <= id {
            moveCursor(to: ids.first ?? id + 1, offset: 0)
        }
    }

    // MARK: Reading

    public func loadBatch(max limit: Int) -> Int? {
        let limit = min(max(1, limit), Self.batchLimit)
        // Loaded and not committed (a retry after a failure, or the datastream is registering):
        // the same records, without reading them again.
        if batchEnd != nil, batchCount > 0, loadedLimit == limit { return loadedDatastream }
        while true {
            batchCount = 0
            batchEnd = nil
            batchDamaged = 0; batchDamagedBytes = 0; batchUnknown = 0; batchUntimed = 0
            for d in untimedPerDatastream.indices { untimedPerDatastream[d] = 0 }
            guard let k = ids.firstIndex(of: cursor.segment) else { return nil }
            let size = sizes[k]
            if Int(cursor.offset) >= size {
                if k == ids.count - 1 { return nil }  // caught up with the writer
                moveCursor(to: ids[k + 1], offset: 0)
                deleteBeforeCursor()
                continue
            }
            var ds = -1
            // A record this boot held for the clock, while the clock is still not trusted: the batch
            // ends before it, and nothing after it is sent yet (the spool keeps its order).
            var waitsForClock = false
            let end: Int
            do {
                end = try scan(
                    cursor.segment, from: Int(cursor.offset), size: size,
                    readAtMost: limit * SpoolRecord.size(values: maxValues)
                ) { item in
                    switch item {
                    case .record(_, let key, let time, let n, _, let chunk, let rel):
                        guard let d = keyIndex[key] else { batchUnknown += 1; return true }
                        var epoch = time
                        if let boot = SpoolRecord.heldBoot(chunk, recordAt: rel) {
                            guard boot == options.bootTag else {
                                batchUntimed += 1
                                untimedPerDatastream[d] += 1
                                return true
                            }
                            guard let offset = heldTimeOffset else { waitsForClock = true; return false }
                            epoch = time + offset
                        }
                        if ds < 0 { ds = d }
                        guard d == ds, batchCount < limit else { return false }
                        let count = min(n, maxValues)
                        times[batchCount] = epoch
                        counts[batchCount] = count
                        for i in 0..<count {
                            values[batchCount * maxValues + i] = SpoolRecord.value(chunk, recordAt: rel, i)
                        }
                        batchCount += 1
                        return true
                    case .damage(_, let length):
                        batchDamaged += 1
                        batchDamagedBytes += length
                        return true
                    }
                }
            } catch {
                problem("read", "spool: \(error); skipping segment \(cursor.segment)")
                batchEnd = (cursor.segment, size)
                commitBatch()
                continue
            }
            // No progress (the file is shorter than it was): the rest of the segment is lost, not looped on.
            batchEnd = (cursor.segment, end > Int(cursor.offset) || batchCount > 0 ? end : size)
            if batchCount > 0 {
                loadedDatastream = ds
                loadedLimit = limit
                return ds
            }
            if waitsForClock {
                // Skipped damage, unknown and untimed records before the held one are stepped over.
                if end > Int(cursor.offset) { commitBatch() } else { batchEnd = nil }
                return nil
            }
            // Only unknown outputs or damage: step over them durably and look further.
            commitBatch()
        }
    }

    public func batchTime(_ k: Int) -> Double { times[k] }
    public func batchValues(_ k: Int) -> UnsafeBufferPointer<Double> {
        UnsafeBufferPointer(start: values + k * maxValues, count: counts[k])
    }

    public func commitBatch() {
        guard let end = batchEnd else { batchCount = 0; return }
        batchEnd = nil
        stats.damaged += batchDamaged
        stats.damagedBytes += batchDamagedBytes
        stats.unknownOutput += batchUnknown
        if batchUntimed > 0 {
            stats.untimed += batchUntimed
            for (d, n) in untimedPerDatastream.enumerated() where n > 0 { onUntimedDrop?(d, n) }
            for d in untimedPerDatastream.indices { untimedPerDatastream[d] = 0 }
            problem(
                "untimed",
                "spool: dropped \(batchUntimed) observation(s) held for the clock before a reboot: "
                    + "their times were lost with that boot (a board that must keep them needs a trusted clock at boot: "
                    + "NTP, GPS time, an RTC, or [time] require_sync = false)")
        }
        if batchDamaged > 0 {
            problem("damaged", "spool: skipped \(batchDamaged) damaged stretch(es) in segment \(end.segment) (bad CRC)")
        }
        batchCount = 0
        moveCursor(to: end.segment, offset: end.offset)
        // Everything sent: remove the files, so an idle spool holds nothing on the card.
        if let k = ids.firstIndex(of: cursor.segment), k == ids.count - 1, Int(cursor.offset) >= sizes[k] {
            writer?.close()
            writer = nil
            remove(cursor.segment)
            ids.removeAll(); sizes.removeAll()
            moveCursor(to: cursor.segment + 1, offset: 0)
        }
        deleteBeforeCursor()
    }

    private func deleteBeforeCursor() {
        while let first = ids.first, first < cursor.segment {
            remove(first)
            ids.removeFirst()
            sizes.removeFirst()
        }
    }

    private func moveCursor(to segment: UInt64, offset: Int) {
        cursor = SpoolCursor(sequence: cursor.sequence + 1, segment: segment, offset: UInt64(offset))
        // Its own buffer: an append may move the cursor (dropping the oldest segment) while its
        // record waits in `recordBuf`.
        cursor.encode(into: cursorBuf)
        // Alternate slots: a write torn by a power cut leaves the previous cursor intact.
        _ = try? cursorFile.write(
            UnsafeRawBufferPointer(start: cursorBuf, count: SpoolCursor.slotBytes),
            at: Int(cursor.sequence % 2) * SpoolCursor.slotBytes)
        if options.sync == .record { try? cursorFile.sync(dataOnly: true) } else { dirty = true }
    }

    // MARK: Syncing

    public func tick(now: Double) {
        guard dirty, options.sync == .second, now - lastSync >= 1 else { return }
        lastSync = now
        sync(force: false)
    }

    /// Flushes pending writes (shutdown; `second` policy on the tick).
    public func sync(force: Bool) {
        guard dirty, force || options.sync != .never else { return }
        dirty = false
        try? writer?.sync(dataOnly: true)
        try? cursorFile.sync(dataOnly: true)
    }

    private func problem(_ kind: String, _ message: String) {
        guard !reported.contains(kind) else { return }
        reported.insert(kind)
        onProblem?(message)
    }

    // MARK: Looking in without touching (`osh-edge spool`, tests)

    public struct Entry: Sendable, Equatable {
        public var segment: UInt64
        public var offset: Int
        public var key: UInt32
        public var time: Double
        public var values: [Double]
        /// Held for the clock: `time` is monotonic seconds in the boot of this tag, not epoch.
        public var heldBoot: UInt64? = nil
    }

    public struct Inspection: Sendable {
        /// The acknowledged position (nil: no cursor written yet).
        public var cursor: SpoolCursor?
        public var segments: [(id: UInt64, bytes: Int)] = []
        /// Records not yet acknowledged, oldest first.
        public var entries: [Entry] = []
        /// Damaged stretches after the cursor: (segment, offset, length).
        public var damage: [(segment: UInt64, offset: Int, length: Int)] = []
        public var pendingBytes: Int {
            segments.reduce(0) { $0 + $1.bytes } - (segments.first.map { $0.id == cursor?.segment ? Int(cursor?.offset ?? 0) : 0 } ?? 0)
        }
    }

    /// Reads a spool directory without changing anything (no recovery, no truncation): what a
    /// restart would send, in order. A directory that does not exist is an empty spool.
    public static func inspect(directory: String) throws -> Inspection {
        var r = Inspection()
        var st = stat()
        guard stat(directory, &st) == 0 else {
            if errno == ENOENT { return r }
            throw SystemError.last("stat", subject: directory)
        }
        var ids = try segmentIDs(directory)
        if let c = try? FileDescriptor.open(directory + "/cursor", O_RDONLY) {
            r.cursor = readCursor(c)
            c.close()
        }
        if let c = r.cursor { ids.removeAll { $0 < c.segment } }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 8)
        defer { buffer.deallocate() }
        for id in ids {
            let p = segmentPath(directory, id)
            guard stat(p, &st) == 0 else { throw SystemError.last("stat", subject: p) }
            let size = Int(st.st_size)
            r.segments.append((id, size))
            let from = id == r.cursor?.segment ? Int(r.cursor?.offset ?? 0) : 0
            try scan(path: p, from: from, size: size, buffer: buffer) { item in
                switch item {
                case .record(let off, let key, let time, let n, _, let chunk, let rel):
                    r.entries.append(
                        Entry(
                            segment: id, offset: off, key: key, time: time,
                            values: (0..<n).map { SpoolRecord.value(chunk, recordAt: rel, $0) },
                            heldBoot: SpoolRecord.heldBoot(chunk, recordAt: rel)))
                case .damage(let off, let length):
                    r.damage.append((id, off, length))
                }
                return true
            }
        }
        return r
    }
}
