// A full card: the recording keeps room for the spool (the live backlog comes first), gives its
// oldest segments up when it must, and pauses when none is left (FullCardTests).
#if canImport(Glibc)
import Glibc
#endif
import OSHCore

extension RecordingStore {
    // MARK: Free space

    /// Before a new segment: the filesystem must keep `keepFreeBytes` free after `bytes` more. The
    /// oldest segments (of any output, never the one `appending` writes to) go until it does;
    /// false, and the recording pauses, when none is left to drop.
    func makeRoom(_ bytes: Int, appending: Output?) -> Bool {
        guard var free = freeBytes() else { return true }
        while free < bytes + options.keepFreeBytes {
            guard let o = oldestDroppable(appending: appending) else {
                pause(free: free)
                return false
            }
            problem(
                "space",
                "recording: the state filesystem is nearly full (\(Self.mib(free)) free): the oldest "
                    + "segments go to keep \(Self.mib(options.keepFreeBytes)) for the spool, below [record] max_mb "
                    + "(\(Self.mib(options.maxBytes))); lost records are counted")
            // Counted from the segment's size: statvfs may lag the unlink on a journalled filesystem.
            free += o.segments.first?.bytes ?? 0
            dropOldest(o, forSpace: true)
        }
        return true
    }

    /// Free space beyond the room kept for the spool that a new segment needs to open (a segment
    /// grows after that; the once-a-second check keeps the room while it does).
    static let openingMargin = 64 << 10

    /// What writing again after a pause needs beyond the room kept: some hysteresis, so that a card
    /// hovering at the limit does not pause and resume every second.
    var resumeMargin: Int { min(max(options.segmentBytes, 256 << 10), 1 << 20) }

    /// Once a second (a statvfs): while writing, the room kept for the spool is kept as segments
    /// grow (the oldest go, then a pause); while paused, writing starts again once there is room.
    func checkFreeSpace() {
        guard let free = freeBytes() else { return }
        switch writeState {
        case .paused:
            if free >= options.keepFreeBytes + resumeMargin { wroteAgain() }
        case .writing, .failing:
            if free < options.keepFreeBytes { _ = makeRoom(0, appending: nil) }
        }
    }

    /// "1.5 MiB".
    static func mib(_ bytes: Int) -> String {
        let tenths = (max(bytes, 0) * 10 + (1 << 19)) >> 20
        return "\(tenths / 10).\(tenths % 10) MiB"
    }

    /// The spool could not write (ENOSPC): the live backlog comes first. Drops the oldest segments,
    /// the ones being written to included, until `bytes` are freed, then pauses until the
    /// filesystem has room again. Returns the bytes freed.
    public func yieldSpace(_ bytes: Int) -> Int {
        guard !closed else { return 0 }
        var freed = 0
        while freed < bytes, let o = oldestDroppable(appending: nil) {
            freed += o.segments.first?.bytes ?? 0
            dropOldest(o, forSpace: true)
        }
        if freed > 0 {
            problem(
                "yield",
                "recording: the spool needed room on the full state filesystem; the recording's oldest "
                    + "segments went (\(freed >> 10) KiB), and it pauses until the card has room")
        }
        pause(free: freeBytes() ?? 0)
        return freed
    }

    func pause(free: Int) {
        guard writeState != .paused else { return }
        writeState = .paused
        for o in outputs { closeWriter(o); o.needsKeyFrame = true; o.resumable = false }
        problem(
            "paused",
            "recording: paused — the state filesystem has \(Self.mib(free)) free, less than the "
                + "\(Self.mib(options.keepFreeBytes + resumeMargin)) it needs while keeping room for the spool; "
                + "records are dropped and counted until space returns (free space, or lower [record] max_mb)")
    }

    func wroteAgain() {
        let missed = missedSinceWriting
        missedSinceWriting = 0
        writeState = .writing
        // A later episode is told again.
        reported = reported.filter { !$0.hasPrefix("write-") && $0 != "paused" && $0 != "yield" && !$0.hasPrefix("open-") }
        onProblem?("recording: writing again (\(missed) record\(missed == 1 ? "" : "s") not written meanwhile, counted)")
    }

    func oldestDroppable(appending: Output?) -> Output? {
        var oldest: Output?
        for o in outputs {
            guard let first = o.segments.first else { continue }
            if o === appending, o.writer != nil, o.segments.count == 1 { continue }
            if oldest.map({ first.start < ($0.segments.first?.start ?? .infinity) }) ?? true { oldest = o }
        }
        return oldest
    }
}
