// Size (~490 lines): segments, rotation, the bound and recovery share one set of on-disk rules,
// tested together (RecordingStoreTests).
#if canImport(Glibc)
import Glibc
#endif
import OSHCore

/// `[record]`: where and how much.
public struct RecordingOptions: Sendable, Equatable {
    /// STATE/record; one sub-directory per output name.
    public var directory: String
    /// The bound on all outputs together.
    public var maxBytes: Int
    /// Seconds; whole segments older than this go.
    public var maxAge: Double
    public var sync: SpoolSync
    /// A segment's size: a 32nd of the bound, 256 KiB to 16 MiB (the bound drops a whole segment).
    public var segmentBytes: Int
    public var segmentSeconds: Double
    /// Free space the recording leaves on its filesystem for the spool and the state files: the
    /// live backlog comes first. Below it the oldest segments go, then the recording pauses.
    public var keepFreeBytes: Int

    public init(directory: String, maxBytes: Int, maxAge: Double, sync: SpoolSync = .second, keepFreeBytes: Int = 1 << 20) {
        self.directory = directory
        self.maxBytes = max(maxBytes, 1 << 20)
        self.maxAge = maxAge
        self.sync = sync
        self.keepFreeBytes = max(keepFreeBytes, 0)
        segmentBytes = min(max(self.maxBytes / 32, 256 << 10), 16 << 20)
        segmentSeconds = 600
    }
}

/// Whether the recording writes (the counters file's `recording=`, `osh-edge record status`).
public enum RecordingWriteState: String, Sendable, Equatable {
    case writing
    /// The filesystem has less free than `keepFreeBytes` and nothing of the recording is left to drop.
    case paused
    /// Writes fail for another reason (EIO, a read-only remount, permissions).
    case failing
}

/// What the recording did for one output (device_health, the status line).
public struct RecordingCounters: Sendable, Equatable {
    /// Records and bytes written by this process.
    public var recorded = 0, bytes = 0
    /// Records lost when segments went for maxBytes/maxAge.
    public var droppedBound = 0
    /// Video access units before a segment's first key frame.
    public var droppedNoKeyFrame = 0
    public var writeErrors = 0, damaged = 0, damagedBytes = 0
    /// Records not written because the filesystem was full, or lost with segments dropped to give
    /// the spool room.
    public var droppedNoSpace = 0
    /// Every record the recording did not keep, whatever the reason.
    public var dropped: Int { droppedBound + droppedNoKeyFrame + writeErrors + droppedNoSpace }
    public init() {}
}

/// The continuous on-board recording: per output, time-named append-only segment files
/// `<directory>/<output>/<UTC start>.rec` of CRC'd records (RecordingRecord), bounded in bytes (the
/// oldest segment of any output goes first) and in age. Never drained: RecordingWindow and
/// RecordingCatalog read it, from any process. Opening recovers: the newest segment of each output
/// has a torn tail cut, and appends continue after it.
///
/// One write(2)/writev(2) per record and no allocation per record: the buffers are made once.
public final class RecordingStore {
    public let options: RecordingOptions
    /// A problem worth a log line (each kind once per process), saying what to do.
    public var onProblem: ((String) -> Void)?

    struct Segment {
        var start: Double
        var bytes: Int
        var path: String
    }

    final class Output {
        let name: String
        let key: UInt32
        let directory: String
        var segments: [Segment] = []
        /// The newest segment, open for appending (nil until an append needs it).
        var writer: FileDescriptor?
        var lastTime = -Double.infinity
        /// Video: the next access unit must be a key frame (a segment never starts without one).
        var needsKeyFrame = true
        var isVideo = false
        /// The newest segment, recovered at opening, takes the next appends (opened by the first).
        var resumable = false
        var dirty = false
        var counters = RecordingCounters()
        init(name: String, directory: String) {
            self.name = name
            self.directory = directory
            key = SpoolRecord.key(outputName: name)
        }
    }

    let outputs: [Output]
    private var totalBytes = 0
    private var lastSync = -Double.infinity
    var reported: Set<String> = []
    private let scanner = SegmentScanner()
    /// Values records are built here; video headers and CRCs too, the access unit written from the caller's buffer.
    private let recordBuf: UnsafeMutableRawPointer
    private static let recordBufBytes = 64 << 10
    private let crcBuf: UnsafeMutableRawPointer
    private let iov: UnsafeMutablePointer<iovec>
    var closed = false
    /// Free bytes for the service's user on the recording's filesystem (statvfs); a seam for tests.
    public var freeBytes: () -> Int?
    public internal(set) var writeState = RecordingWriteState.writing
    /// Records not written since writing last worked (for the "writing again" line).
    var missedSinceWriting = 0

    /// Opens (creating) the recording for `outputNames` (index = output index). Recordings of
    /// outputs no longer configured stay readable and count against the bound until they age out.
    public init(options: RecordingOptions, outputNames: [String]) throws {
        self.options = options
        let dir = options.directory
        freeBytes = { Self.freeBytes(on: dir) }
        try StateFiles.makeDirectories(options.directory)
        var list = outputNames.map { Output(name: $0, directory: options.directory + "/" + $0) }
        for name in try Self.subdirectories(options.directory) where !outputNames.contains(name) {
            list.append(Output(name: name, directory: options.directory + "/" + name))
        }
        outputs = list
        recordBuf = .allocate(byteCount: Self.recordBufBytes, alignment: 8)
        crcBuf = .allocate(byteCount: 8, alignment: 8)
        iov = .allocate(capacity: 3)
        do {
            for o in outputs {
                try StateFiles.makeDirectories(o.directory)
                try recover(o)
            }
            // The bounds, for `osh-edge record status` (which has no configuration to read them from).
            try? StateFiles.write(
                Array("max_bytes \(options.maxBytes)\nmax_age \(options.maxAge)\n".utf8),
                to: options.directory + "/" + RecordingCatalog.boundsFile, durable: false)
        } catch {
            release()
            throw error
        }
        enforceBound(reserve: 0, appending: nil)
    }

    deinit { close() }

    private func release() {
        recordBuf.deallocate(); crcBuf.deallocate(); iov.deallocate()
    }

    /// Syncs and closes every segment; appends after this fail.
    public func close() {
        guard !closed else { return }
        closed = true
        for o in outputs {
            if let w = o.writer, o.dirty, options.sync != .never { try? w.sync(dataOnly: true) }
            o.writer?.close()
            o.writer = nil
        }
        scanner.close()
        release()
    }

    public func counters(_ output: Int) -> RecordingCounters {
        output >= 0 && output < outputs.count ? outputs[output].counters : RecordingCounters()
    }

    /// Bytes on the card, all outputs.
    public var storedBytes: Int { totalBytes }

    /// statvfs: the bytes an unprivileged writer may still use on `path`'s filesystem.
    public static func freeBytes(on path: String) -> Int? {
        var st = statvfs()
        guard statvfs(path, &st) == 0 else { return nil }
        return Int(st.f_bavail) * Int(st.f_frsize)
    }

    /// Said once at start when the bound cannot be reached: the recording takes what is free and
    /// keeps `keepFreeBytes` of it for the spool.
    public var boundWarning: String? {
        guard let free = freeBytes() else { return nil }
        let usable = free + totalBytes - options.keepFreeBytes
        guard options.maxBytes > usable else { return nil }
        return "recording: [record] max_mb is \(options.maxBytes >> 20) MiB but the state filesystem has \(Self.mib(free)) free "
            + "(and \(Self.mib(totalBytes)) recorded): the recording keeps \(Self.mib(options.keepFreeBytes)) free for the spool, "
            + "drops its oldest segments when the card fills, and pauses if it must; lower max_mb to about "
            + "\(max(usable, 0) >> 20) or free space"
    }

    // MARK: Opening

    static func subdirectories(_ dir: String) throws -> [String] {
        try StateFiles.entries(dir).filter { name in
            var st = stat()
            return !name.hasPrefix(".") && stat(dir + "/" + name, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
        }
    }

    /// An output directory's segments, oldest first (other files are not ours and stay).
    static func segments(_ dir: String) throws -> [Segment] {
        var out: [Segment] = []
        for name in try StateFiles.entries(dir) {
            guard let start = RecordingRecord.segmentStart(name: name) else { continue }
            let p = dir + "/" + name
            var st = stat()
            guard stat(p, &st) == 0 else {
                if errno == ENOENT { continue }  // dropped by the writer meanwhile
                throw SystemError.last("stat", subject: p)
            }
            out.append(Segment(start: start, bytes: Int(st.st_size), path: p))
        }
        return out.sorted { $0.path < $1.path }
    }

    /// Lists an output's segments and cuts a torn tail off the newest (a power cut, or a kill in
    /// the middle of a large write).
    private func recover(_ o: Output) throws {
        o.segments = try Self.segments(o.directory)
        totalBytes += o.segments.reduce(0) { $0 + $1.bytes }
        guard let last = o.segments.last else { return }
        guard try scanner.open(last.path) else { return }
        var end = 0
        while let item = try scanner.next(payloads: true) {
            if case .record(let off, let h, _) = item {
                end = off + h.length
                o.lastTime = h.time
                o.isVideo = h.kind.isVideo
            }
        }
        scanner.close()
        if end < last.bytes {
            o.counters.damaged += 1
            o.counters.damagedBytes += last.bytes - end
            problem("torn", "recording: \(last.path) ended in \(last.bytes - end) damaged bytes (a power cut or a kill?); cut off")
            guard truncate(last.path, off_t(end)) == 0 else { throw SystemError.last("truncate", subject: last.path) }
            totalBytes -= last.bytes - end
            o.segments[o.segments.count - 1].bytes = end
        }
        if end == 0 {
            // Nothing whole in it: it goes, so the next segment's name is its first record's time.
            unlink(last.path)
            o.segments.removeLast()
        } else {
            o.resumable = true
        }
    }

    // MARK: Writing

    /// Records `values` for `output`; `live`: the live stream took it too. False when not written (a disk error: counted).
    public func append(output: Int, epochTime: Double, values: UnsafeBufferPointer<Double>, live: Bool = false) -> Bool {
        guard !closed, output >= 0, output < outputs.count else { return false }
        let o = outputs[output]
        let n = min(values.count, (Self.recordBufBytes - RecordingRecord.size(payload: 0)) / 8)
        let len = RecordingRecord.encode(
            key: o.key, time: epochTime, values: UnsafeBufferPointer(rebasing: values.prefix(n)),
            live: live, into: recordBuf)
        guard prepare(o, time: epochTime, length: len, keyFrame: true) else { return false }
        iov[0] = iovec(iov_base: recordBuf, iov_len: len)
        return write(o, time: epochTime, length: len, vectors: 1)
    }

    /// Records one encoded access unit for `output`, as encoded. An access unit that would begin a
    /// segment without being a key frame is dropped (counted droppedNoKeyFrame), so every segment
    /// decodes on its own.
    public func append(output: Int, epochTime: Double, accessUnit: UnsafeRawBufferPointer, keyFrame: Bool, live: Bool = false) -> Bool {
        guard !closed, output >= 0, output < outputs.count else { return false }
        let o = outputs[output]
        o.isVideo = true
        guard accessUnit.count <= RecordingRecord.maxPayload, let base = accessUnit.baseAddress else {
            o.counters.writeErrors += 1
            problem(
                "au-size",
                "recording: an access unit of \(accessUnit.count) bytes for \(o.name) is not recorded "
                    + "(at most \(RecordingRecord.maxPayload)); lower the video bitrate or size")
            return false
        }
        let len = RecordingRecord.size(payload: accessUnit.count)
        guard prepare(o, time: epochTime, length: len, keyFrame: keyFrame) else { return false }
        RecordingRecord.encodeHeader(
            kind: keyFrame ? .keyFrame : .accessUnit, live: live, key: o.key, time: epochTime,
            payloadLength: accessUnit.count, into: recordBuf)
        crcBuf.storeBytes(of: RecordingRecord.crc(header: recordBuf, payload: accessUnit).littleEndian, as: UInt32.self)
        iov[0] = iovec(iov_base: recordBuf, iov_len: RecordingRecord.headerBytes)
        iov[1] = iovec(iov_base: UnsafeMutableRawPointer(mutating: base), iov_len: accessUnit.count)
        iov[2] = iovec(iov_base: crcBuf, iov_len: RecordingRecord.crcBytes)
        return write(o, time: epochTime, length: len, vectors: 3)
    }

    /// Opens a new segment when there is none or the current one is full (video: only at a key
    /// frame; the current one grows until then, up to four times its size). False: not to be written.
    private func prepare(_ o: Output, time: Double, length: Int, keyFrame: Bool) -> Bool {
        if writeState == .paused {
            o.counters.droppedNoSpace += 1
            missedSinceWriting += 1
            return false
        }
        if o.isVideo, o.needsKeyFrame, !keyFrame {
            o.counters.droppedNoKeyFrame += 1
            return false
        }
        let current = o.writer != nil || o.resumable ? o.segments.last : nil
        var rotate = current == nil
        if let c = current {
            let full = c.bytes + length > options.segmentBytes || time - c.start >= options.segmentSeconds
            if full && (keyFrame || !o.isVideo) {
                rotate = true
            } else if c.bytes + length > 4 * options.segmentBytes {
                // A key frame is overdue: this segment ends here; the next starts at a key frame.
                closeWriter(o)
                o.needsKeyFrame = true
                o.counters.droppedNoKeyFrame += 1
                problem(
                    "no-key-\(o.name)",
                    "recording: \(o.name) had no key frame for \(4 * options.segmentBytes >> 10) KiB; "
                        + "access units are dropped until the next one (shorten the encoder's key frame interval)")
                return false
            }
        }
        if rotate {
            guard makeRoom(RecordingStore.openingMargin, appending: o) else {
                o.counters.droppedNoSpace += 1
                missedSinceWriting += 1
                return false
            }
            guard openSegment(o, start: time) else { o.counters.writeErrors += 1; missedSinceWriting += 1; return false }
        } else if o.writer == nil, let c = current {
            do {
                o.writer = try FileDescriptor.open(c.path, O_WRONLY | O_APPEND)
            } catch {
                o.resumable = false
                return prepare(o, time: time, length: length, keyFrame: keyFrame)
            }
        }
        o.resumable = false
        return true
    }

    private func write(_ o: Output, time: Double, length: Int, vectors: Int32) -> Bool {
        guard let w = o.writer else { o.counters.writeErrors += 1; return false }
        var done = 0
        var failure: Int32 = 0
        // One writev for the record; a short write (a full disk) is continued, then undone below.
        while done < length {
            let r: Int
            if done == 0 {
                r = Glibc.writev(w.rawValue, iov, vectors)
            } else {
                r = rest(w, from: done, vectors: vectors)
            }
            if r < 0 {
                if errno == EINTR { continue }
                failure = errno
                break
            }
            if r == 0 { failure = EIO; break }
            done += r
        }
        let k = o.segments.count - 1
        if failure != 0 {
            // Never leave half a record: cut back to the last whole one.
            try? w.truncate(to: o.segments[k].bytes)
            missedSinceWriting += 1
            if failure == ENOSPC {
                // Something else filled the card: the oldest segments go first; with none left, pause.
                o.counters.droppedNoSpace += 1
                if !makeRoom(RecordingStore.openingMargin, appending: o) { return false }
                problem(
                    "write-\(failure)",
                    "recording: the state filesystem is full (\(o.segments[k].path)); "
                        + "the oldest segments go to make room")
                return false
            }
            o.counters.writeErrors += 1
            writeState = .failing
            let e = SystemError("write", errno: failure, subject: o.segments[k].path)
            problem("write-\(failure)", "recording: \(e); records are dropped and counted until it can write again")
            return false
        }
        if missedSinceWriting > 0 { wroteAgain() }
        o.segments[k].bytes += length
        totalBytes += length
        o.lastTime = max(o.lastTime, time)
        o.needsKeyFrame = false
        o.counters.recorded += 1
        o.counters.bytes += length
        if options.sync == .record { try? w.sync(dataOnly: true) } else { o.dirty = true }
        if totalBytes > options.maxBytes { enforceBound(reserve: 0, appending: o) }
        return true
    }

    /// The rest of a record after a short writev (rare: a full disk, a signal).
    private func rest(_ w: FileDescriptor, from done: Int, vectors: Int32) -> Int {
        var skip = done
        for i in 0..<Int(vectors) {
            let len = iov[i].iov_len
            if skip >= len { skip -= len; continue }
            guard let base = iov[i].iov_base else { return -1 }
            return Glibc.write(w.rawValue, base + skip, len - skip)
        }
        return 0
    }

    private func openSegment(_ o: Output, start: Double) -> Bool {
        closeWriter(o)
        enforceBound(reserve: options.segmentBytes, appending: o)
        var t = start
        // Names are to the millisecond: a second segment in the same one is named a millisecond later.
        if let last = o.segments.last, t < last.start + 0.001 { t = last.start + 0.001 }
        let p = o.directory + "/" + RecordingRecord.segmentName(start: t)
        do {
            o.writer = try FileDescriptor.open(p, O_WRONLY | O_CREAT | O_APPEND, mode: 0o600)
        } catch {
            if error.errno == ENOENT, (try? StateFiles.makeDirectories(o.directory)) != nil,
                let w = try? FileDescriptor.open(p, O_WRONLY | O_CREAT | O_APPEND, mode: 0o600)
            {
                o.writer = w  // the directory was removed under us (a user cleaning up): made again
            } else {
                writeState = .failing
                problem("open-\(error.errno)", "recording: \(error); records are dropped and counted (is the state directory writable?)")
                return false
            }
        }
        o.segments.append(
            Segment(
                start: RecordingRecord.segmentStart(name: String(p.suffix(RecordingRecord.nameStemBytes + 4))) ?? t,
                bytes: 0, path: p))
        if options.sync != .never { FileDescriptor.syncDirectory(o.directory) }
        return true
    }

    func closeWriter(_ o: Output) {
        guard let w = o.writer else { return }
        if o.dirty, options.sync != .never { try? w.sync(dataOnly: true) }
        o.dirty = false
        w.close()
        o.writer = nil
    }

    // MARK: The bounds

    /// Drops the oldest segments (of any output) while the bound would be passed with `reserve`
    /// more bytes; never the segment `appending` writes to.
    private func enforceBound(reserve: Int, appending: Output?) {
        while totalBytes + reserve > options.maxBytes {
            guard let o = oldestDroppable(appending: appending) else { return }
            dropOldest(o)
            problem(
                "bound",
                "recording: at its bound (\(options.maxBytes >> 20) MiB): the oldest segments go; "
                    + "raise [record] max_mb to keep more")
        }
    }

    /// Removes `o`'s oldest segment, counting its records (a header walk, no payloads read).
    func dropOldest(_ o: Output, forSpace: Bool = false) {
        let s = o.segments.removeFirst()
        if o.segments.isEmpty { closeWriter(o); o.needsKeyFrame = true; o.resumable = false }
        var lost = 0
        if (try? scanner.open(s.path)) == true {
            while let item = try? scanner.next(payloads: false) {
                if case .record = item { lost += 1 }
            }
            scanner.close()
        }
        unlink(s.path)
        totalBytes -= s.bytes
        if forSpace { o.counters.droppedNoSpace += lost } else { o.counters.droppedBound += lost }
    }

    /// The once-a-second fsync (policy `second`) and the maxAge pruning.
    public func tick(now epochNow: Double) {
        guard !closed else { return }
        // Paused for space: once a second, see whether it came back (a statvfs).
        checkFreeSpace()
        if options.sync == .second, epochNow - lastSync >= 1 {
            lastSync = epochNow
            for o in outputs where o.dirty {
                o.dirty = false
                try? o.writer?.sync(dataOnly: true)
            }
        }
        guard options.maxAge > 0 else { return }
        let limit = epochNow - options.maxAge
        for o in outputs {
            // A segment's records are older than the next one's start; the newest ends at its last record.
            while !o.segments.isEmpty, o.segments.count > 1 ? o.segments[1].start <= limit : o.lastTime < limit {
                dropOldest(o)
            }
        }
    }

    func problem(_ kind: String, _ message: String) {
        guard !reported.contains(kind) else { return }
        reported.insert(kind)
        onProblem?(message)
    }
}
