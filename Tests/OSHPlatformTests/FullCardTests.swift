import Foundation
import Glibc
import OSHCore
@testable import OSHPlatform
import XCTest

/// A full card: the recording yields to the spool (the live backlog comes first), keeps room for
/// it, pauses when nothing of it is left to drop, and says when it writes again. With a stand-in
/// for statvfs, and on a real 4 MiB tmpfs when the tests run as root (CI does).
final class FullCardTests: XCTestCase {
    private var dir = ""
    private var mounted = false
    private let t0 = 1_796_181_300.0

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "osh-fullcard-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if mounted { umount2(dir, Int32(MNT_DETACH)) }
        try? FileManager.default.removeItem(atPath: dir)
    }

    private func record(_ s: RecordingStore, _ out: Int, _ t: Double) -> Bool {
        [t, 1, 2, 3].withUnsafeBufferPointer { s.append(output: out, epochTime: t, values: $0) }
    }

    private func store(keepFree: Int, free: @escaping () -> Int?) throws -> (RecordingStore, Box) {
        var o = RecordingOptions(directory: dir + "/record", maxBytes: 64 << 20, maxAge: 86_400, sync: .never, keepFreeBytes: keepFree)
        o.segmentBytes = 4096
        let s = try RecordingStore(options: o, outputNames: ["imu", "baro"])
        let log = Box()
        s.onProblem = { log.lines.append($0) }
        s.freeBytes = free
        return (s, log)
    }

    final class Box { var lines: [String] = [] }

    func testBelowTheRoomKeptForTheSpoolTheOldestSegmentsGoThenTheRecordingPausesAndResumes() throws {
        var free = 1 << 30
        let (s, log) = try store(keepFree: 1 << 20) { free }
        var t = t0
        for _ in 0..<400 { XCTAssertTrue(record(s, 0, t)); t += 0.01 }  // several 4 KiB segments
        let segmentsBefore = try FileManager.default.contentsOfDirectory(atPath: dir + "/record/imu").count
        XCTAssertGreaterThan(segmentsBefore, 3)
        // The card fills (another program, or the spool): a new segment would leave less than the room kept.
        free = (1 << 20) + 2000
        var kept = 0
        for _ in 0..<400 where record(s, 0, t) { kept += 1; t += 0.01 }
        XCTAssertGreaterThan(s.counters(0).droppedNoSpace, 0)
        XCTAssertTrue(log.lines.contains { $0.hasPrefix("recording: the state filesystem is nearly full (") }, "\(log.lines)")
        let lostOld = s.counters(0).droppedNoSpace
        // Nothing is left to drop but the segment it writes: paused, every further record counted.
        free = 1000
        for _ in 0..<800 { _ = record(s, 0, t); t += 0.01 }
        XCTAssertEqual(s.writeState, .paused)
        XCTAssertGreaterThan(s.counters(0).droppedNoSpace, lostOld)
        XCTAssertTrue(log.lines.contains { $0.contains("recording: paused") && $0.contains("lower [record] max_mb") }, "\(log.lines)")
        XCTAssertFalse(record(s, 1, t))
        XCTAssertEqual(s.counters(1).droppedNoSpace, 1)
        // Space comes back: the next tick says so, and writing starts in a new segment.
        free = 1 << 30
        s.tick(now: t)
        XCTAssertEqual(s.writeState, .writing)
        XCTAssertTrue(log.lines.last?.hasPrefix("recording: writing again (") ?? false, "\(log.lines)")
        XCTAssertTrue(record(s, 0, t + 1))
        XCTAssertEqual(s.counters(0).dropped, s.counters(0).droppedNoSpace)
        s.close()
    }

    /// A segment grows after it opened: the once-a-second check keeps the room for the spool as
    /// the card fills, the oldest segments first, then a pause; writing starts again with room.
    func testTheTickKeepsTheRoomWhileASegmentGrows() throws {
        var free = 1 << 30
        let (s, log) = try store(keepFree: 1 << 20) { free }
        var t = t0
        for _ in 0..<400 { XCTAssertTrue(record(s, 0, t)); t += 0.01 }
        let before = s.storedBytes
        free = (1 << 20) - 5000  // something else wrote; no new segment opened since
        s.tick(now: t)
        XCTAssertLessThan(s.storedBytes, before, "the oldest segments went")
        XCTAssertEqual(s.writeState, .writing, "the room came back from old segments: \(log.lines)")
        free = 100  // nothing left to give but the newest
        for _ in 0..<10 { s.tick(now: t); t += 1 }
        XCTAssertEqual(s.writeState, .paused)
        free = (1 << 20) + 10_000  // above the room, not above it by the margin: stays paused
        s.tick(now: t)
        XCTAssertEqual(s.writeState, .paused)
        free = 8 << 20
        s.tick(now: t)
        XCTAssertEqual(s.writeState, .writing)
        s.close()
    }

    func testYieldingDropsTheOldestSegmentsEvenTheOneBeingWrittenAndPauses() throws {
        var free = 1 << 30
        let (s, log) = try store(keepFree: 0) { free }
        var t = t0
        for _ in 0..<300 { XCTAssertTrue(record(s, 0, t)); XCTAssertTrue(record(s, 1, t)); t += 0.01 }
        let stored = s.storedBytes
        free = 0
        let freed = s.yieldSpace(stored)
        XCTAssertEqual(freed, stored, "everything the recording held went for the spool")
        XCTAssertEqual(s.storedBytes, 0)
        XCTAssertEqual(s.writeState, .paused)
        XCTAssertEqual(s.counters(0).droppedNoSpace + s.counters(1).droppedNoSpace, 600)
        XCTAssertTrue(log.lines.contains { $0.contains("the spool needed room") }, "\(log.lines)")
        XCTAssertFalse(record(s, 0, t))
        s.close()
    }

    func testMaxMBAboveWhatIsFreeIsWarnedAtStart() throws {
        let (s, _) = try store(keepFree: 4 << 20) { 20 << 20 }
        let w = try XCTUnwrap(s.boundWarning)
        XCTAssertTrue(w.contains("max_mb is 64 MiB but the state filesystem has 20.0 MiB free"), w)
        XCTAssertTrue(w.contains("lower max_mb to about 16"), w)
        s.freeBytes = { 1 << 30 }
        XCTAssertNil(s.boundWarning)
        s.close()
    }

    /// The real thing: a 4 MiB tmpfs. The recording fills what it may; something else fills the
    /// rest; the spool's next write finds ENOSPC, the recording gives back its oldest segments, and
    /// no observation of the live backlog is lost. Before, the spool dropped them
    /// (dropped_spool_failed) while the recording kept its history.
    func testOnARealFullFilesystemTheSpoolWinsOverTheRecording() throws {
        guard geteuid() == 0 else { throw XCTSkip("mounting a tmpfs needs root (CI runs as root)") }
        guard mount("tmpfs", dir, "tmpfs", 0, "size=4m,mode=0700") == 0 else {
            throw XCTSkip("tmpfs mount refused: \(String(cString: strerror(errno)))")
        }
        mounted = true
        let spool = try FileSpool(
            options: FileSpoolOptions(directory: dir + "/spool", maxBytes: 1 << 20, sync: .never),
            outputNames: ["imu", "baro"], maxValues: 4)
        var o = RecordingOptions(
            directory: dir + "/record", maxBytes: 64 << 20, maxAge: 86_400, sync: .never,
            keepFreeBytes: 2 * spool.options.segmentBytes + (64 << 10))
        o.segmentBytes = 64 << 10
        let rec = try RecordingStore(options: o, outputNames: ["imu"])
        var lines: [String] = []
        rec.onProblem = { lines.append($0) }
        spool.onProblem = { lines.append($0) }
        XCTAssertNotNil(rec.boundWarning, "64 MiB on a 4 MiB filesystem is warned")
        // Something else on the card from the start (a log, say): 1 MiB.
        let early = dir + "/early"
        XCTAssertTrue(FileManager.default.createFile(atPath: early, contents: Data(count: 1 << 20)))
        var t = t0
        // 6 MiB of records on a 4 MiB filesystem: the recording rotates inside what it may take.
        for _ in 0..<100_000 { _ = record(rec, 0, t); t += 0.001 }
        XCTAssertEqual(rec.writeState, .writing)
        XCTAssertGreaterThan(rec.storedBytes, 1 << 20, "the recording took what it may")
        XCTAssertLessThanOrEqual(rec.storedBytes, (4 << 20) - o.keepFreeBytes)
        XCTAssertGreaterThan(rec.counters(0).droppedNoSpace, 0, "its oldest segments went for room")
        XCTAssertGreaterThanOrEqual(RecordingStore.freeBytes(on: dir) ?? 0, o.keepFreeBytes, "the spool's room is kept")
        // Something else takes the room the recording kept.
        let filler = dir + "/filler"
        let fd = open(filler, O_WRONLY | O_CREAT, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        var chunk = [UInt8](repeating: 7, count: 4096)
        while chunk.withUnsafeMutableBytes({ Glibc.write(fd, $0.baseAddress, 4096) }) == 4096 {}
        Glibc.close(fd)
        // Without a way out, the spool fails…
        var failedWithout = 0
        for i in 0..<50 where ![t, 1, 2, 3].withUnsafeBufferPointer({ spool.append(datastream: i % 2, epochTime: t, values: $0) }) {
            failedWithout += 1
        }
        XCTAssertGreaterThan(failedWithout, 0, "the filesystem is really full")
        XCTAssertTrue(lines.contains { $0.contains("No space left on device") }, "\(lines)")
        // …with one, the recording yields and every observation of the backlog is kept.
        spool.onNoSpace = { rec.yieldSpace($0) > 0 }
        let recordedBefore = rec.storedBytes
        for i in 0..<20_000 {
            t += 0.001
            XCTAssertTrue(
                [t, 1, 2, 3].withUnsafeBufferPointer { spool.append(datastream: i % 2, epochTime: t, values: $0) }, "observation \(i)")
        }
        XCTAssertLessThan(rec.storedBytes, recordedBefore)
        XCTAssertEqual(rec.writeState, .paused)
        XCTAssertTrue(lines.contains { $0.hasPrefix("spool: writing again (") }, "\(lines)")
        XCTAssertGreaterThan(rec.counters(0).droppedNoSpace, 0)
        // The other files go: the recording writes again at its next tick.
        unlink(filler)
        unlink(early)
        rec.tick(now: t)
        XCTAssertEqual(rec.writeState, .writing, "\(lines)")
        XCTAssertTrue(record(rec, 0, t + 1))
        rec.close()
    }
}
