#if canImport(Glibc)
import Glibc
#endif
import OSHCore

/// A recording that cannot be read as asked; says what to do.
public struct RecordingError: Error, CustomStringConvertible, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// One output's recording as it is on the card.
public struct RecordedOutput: Sendable {
    public struct SegmentFile: Sendable, Equatable {
        public var start: Double
        public var bytes: Int
        public var path: String
    }
    public var name: String
    public var segments: [SegmentFile]
    /// The first and last record's times (nil: nothing recorded).
    public var first: Double?
    public var last: Double?
    public var records: Int
    public var bytes: Int
    /// Whether its records are video access units.
    public var isVideo: Bool
    /// Damaged stretches found by the header walk.
    public var damaged: Int
}

/// What is recorded, read without changing anything (safe while the service writes).
public enum RecordingCatalog {
    /// The file the store writes its bounds to, for the status tool.
    public static let boundsFile = "bounds"

    /// Every output directory under `directory` (STATE/record), names sorted; the records are
    /// counted by a header walk (no payloads read).
    public static func inspect(directory: String) throws -> [RecordedOutput] {
        try requireDirectory(directory)
        let scanner = SegmentScanner()
        var out: [RecordedOutput] = []
        for name in try RecordingStore.subdirectories(directory).sorted() {
            let segs = try RecordingStore.segments(directory + "/" + name)
            var r = RecordedOutput(
                name: name, segments: segs.map { .init(start: $0.start, bytes: $0.bytes, path: $0.path) },
                first: nil, last: nil, records: 0, bytes: segs.reduce(0) { $0 + $1.bytes },
                isVideo: false, damaged: 0)
            for s in segs {
                guard try scanner.open(s.path, limit: s.bytes) else { continue }
                while let item = try scanner.next(payloads: false) {
                    switch item {
                    case .record(_, let h, _):
                        r.records += 1
                        if r.first == nil { r.first = h.time }
                        r.last = h.time
                        if h.kind.isVideo { r.isVideo = true }
                    case .damage:
                        r.damaged += 1
                    }
                }
            }
            out.append(r)
        }
        return out
    }

    /// The bounds the writing store was opened with: (bytes, seconds), nil when unknown.
    public static func bounds(directory: String) -> (maxBytes: Int, maxAge: Double)? {
        guard let text = StateFiles.readText(directory + "/" + boundsFile, limit: 256) else { return nil }
        var bytes: Int?, age: Double?
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2 else { continue }
            if parts[0] == "max_bytes" { bytes = Int(parts[1]) }
            if parts[0] == "max_age" { age = Double(parts[1]) }
        }
        guard let b = bytes, let a = age else { return nil }
        return (b, a)
    }

    static func requireDirectory(_ directory: String) throws {
        var st = stat()
        guard stat(directory, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else {
            throw RecordingError(
                "no recording in \(directory) (\(String(cString: strerror(errno)))): is [record] enabled "
                    + "in the configuration, and is this its state directory's record/ folder?")
        }
    }
}

/// One record of a window; its values or bytes are valid until the window's next `next()`.
public struct RecordingItem {
    public var time: Double
    public var kind: RecordingRecord.Kind
    public var keyFrame: Bool { kind == .keyFrame }
    /// The live stream took it too.
    public var live: Bool
    /// Scalars: the values (empty for video).
    public var values: UnsafeBufferPointer<Double>
    /// Video: the Annex-B access unit as encoded (empty for scalars).
    public var accessUnit: UnsafeRawBufferPointer
}

/// The records of one output in a time window, oldest first, read from the segment files
/// (another process may be writing them: what it appends after the window opened is not read).
/// Damage is skipped and counted. Nothing is allocated per record.
public final class RecordingWindow {
    public let outputName: String
    public let from: Double
    public let to: Double
    /// Records `next()` will return, counted when opened (header walk, no payload reads).
    public let total: Int
    public private(set) var done = 0
    /// Whether the window's start is older than what is still recorded (dropped by the bound,
    /// or before the recording began).
    public let startsBeforeRecording: Bool
    /// Whether the output's records are video access units.
    public let isVideo: Bool
    /// Damaged stretches skipped by `next()`, and their bytes.
    public private(set) var damaged = 0, damagedBytes = 0
    /// The output's recorded range when opened (nil: nothing recorded).
    public let recordedRange: (first: Double, last: Double)?

    private let segments: [RecordingStore.Segment]
    private let startOffset: Int
    private var index = 0
    private var opened = false
    private let scanner = SegmentScanner()
    private var values: UnsafeMutableBufferPointer<Double>

    /// The records of `outputName` with from <= time <= to, oldest first; for video, from the
    /// last key frame at or before `from`. Throws a clear error when the directory or output is missing.
    public init(directory: String, outputName: String, from: Double, to: Double) throws {
        try RecordingCatalog.requireDirectory(directory)
        let dir = directory + "/" + outputName
        var st = stat()
        guard !outputName.isEmpty, !outputName.contains("/"), stat(dir, &st) == 0 else {
            let names = (try? RecordingStore.subdirectories(directory).sorted()) ?? []
            throw RecordingError(
                "no recording of '\(outputName)' in \(directory); recorded: "
                    + (names.isEmpty ? "nothing" : names.joined(separator: ", ")))
        }
        guard from <= to else { throw RecordingError("the window ends before it starts") }
        self.outputName = outputName
        self.from = from
        self.to = to
        values = .allocate(capacity: 64)
        let all = try RecordingStore.segments(dir)
        // The segment holding `from` starts at or before it (names are first-record times); a video
        // segment starts at a key frame, so no earlier one is needed.
        let first = all.lastIndex { $0.start <= from }
        let last = all.lastIndex { $0.start <= to }
        segments = last.map { Array(all[(first ?? 0)...$0]) } ?? []
        startsBeforeRecording = first == nil && !all.isEmpty

        // The recorded range and the kind: the first segment's first header, the newest's last.
        var video = false, firstTime: Double?, lastTime: Double?
        if let s = all.first, try scanner.open(s.path, limit: s.bytes) {
            while let item = try scanner.next(payloads: false) {
                if case .record(_, let h, _) = item { firstTime = h.time; video = h.kind.isVideo; break }
            }
        }
        if let s = all.last, try scanner.open(s.path, limit: s.bytes) {
            while let item = try scanner.next(payloads: false) {
                if case .record(_, let h, _) = item { lastTime = h.time }
            }
        }
        isVideo = video
        recordedRange = firstTime.flatMap { f in lastTime.map { (f, $0) } }

        // Video: the last key frame at or before `from` in the first segment.
        var offset = 0
        if video, !startsBeforeRecording, let s = segments.first, try scanner.open(s.path, limit: s.bytes) {
            while let item = try scanner.next(payloads: false) {
                guard case .record(let off, let h, _) = item else { continue }
                if h.time > from { break }
                if h.kind == .keyFrame { offset = off }
            }
        }
        startOffset = offset
        var count = 0
        for (k, s) in segments.enumerated() {
            guard try scanner.open(s.path, at: k == 0 ? offset : 0, limit: s.bytes) else { continue }
            while let item = try scanner.next(payloads: false) {
                if case .record(_, let h, _) = item, Self.includes(h.time, from: from, to: to, video: video) { count += 1 }
            }
        }
        scanner.close()
        total = count
    }

    deinit { values.deallocate() }

    /// Video keeps the lead-in from its key frame; scalars only what is inside.
    @inline(__always)
    private static func includes(_ t: Double, from: Double, to: Double, video: Bool) -> Bool {
        t <= to && (video || t >= from)
    }

    /// The next record; nil at the end.
    public func next() throws -> RecordingItem? {
        while index < segments.count {
            if !opened {
                let s = segments[index]
                guard try scanner.open(s.path, at: index == 0 ? startOffset : 0, limit: s.bytes) else {
                    index += 1  // dropped by the bound since the window opened
                    continue
                }
                opened = true
            }
            while let item = try scanner.next(payloads: true) {
                switch item {
                case .damage(_, let length):
                    damaged += 1
                    damagedBytes += length
                case .record(_, let h, let payload):
                    guard Self.includes(h.time, from: from, to: to, video: isVideo) else { continue }
                    done += 1
                    if h.kind.isVideo {
                        return RecordingItem(
                            time: h.time, kind: h.kind, live: h.live, values: UnsafeBufferPointer(start: nil, count: 0),
                            accessUnit: payload)
                    }
                    let n = payload.count / 8
                    if n > values.count {
                        values.deallocate()
                        values = .allocate(capacity: n)
                    }
                    for i in 0..<n {
                        values[i] = Double(bitPattern: UInt64(littleEndian: payload.loadUnaligned(fromByteOffset: 8 * i, as: UInt64.self)))
                    }
                    return RecordingItem(
                        time: h.time, kind: h.kind, live: h.live, values: UnsafeBufferPointer(rebasing: values[0..<n]),
                        accessUnit: UnsafeRawBufferPointer(start: nil, count: 0))
                }
            }
            scanner.close()
            opened = false
            index += 1
        }
        return nil
    }
}
