import Foundation
import Glibc
import OSHCore
@testable import OSHPlatform
import XCTest

/// The recording on real files in a temporary directory: round trips, rotation, key-frame
/// segments, the bounds, recovery after damage and after a real SIGKILL, windows.
final class RecordingStoreTests: XCTestCase {
    private var dir = ""
    private let t0 = 1_796_181_300.0  // 2026-12-02T03:15:00Z

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "osh-record-\(UUID().uuidString)"
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    private func open(
        maxBytes: Int = 64 << 20, maxAge: Double = 86_400, segmentBytes: Int? = nil, segmentSeconds: Double = 600,
        names: [String] = ["imu", "camera"], sync: SpoolSync = .never
    ) throws -> RecordingStore {
        var o = RecordingOptions(directory: dir, maxBytes: maxBytes, maxAge: maxAge, sync: sync)
        if let s = segmentBytes { o.segmentBytes = s }
        o.segmentSeconds = segmentSeconds
        return try RecordingStore(options: o, outputNames: names)
    }

    @discardableResult
    private func value(_ s: RecordingStore, _ out: Int = 0, _ t: Double, _ v: [Double]? = nil) -> Bool {
        (v ?? [t, -t, 0.5, 1]).withUnsafeBufferPointer { s.append(output: out, epochTime: t, values: $0) }
    }

    /// A fake access unit whose bytes say its time (checked on the way back).
    private func au(_ t: Double, size: Int = 1000) -> [UInt8] {
        var b = [UInt8](repeating: 0, count: size)
        withUnsafeBytes(of: t.bitPattern) { for i in 0..<8 { b[i] = $0[i] } }
        for i in 8..<size { b[i] = UInt8(truncatingIfNeeded: i &* 31) }
        return b
    }

    @discardableResult
    private func video(_ s: RecordingStore, _ out: Int = 1, _ t: Double, key: Bool, size: Int = 1000) -> Bool {
        au(t, size: size).withUnsafeBytes { s.append(output: out, epochTime: t, accessUnit: $0, keyFrame: key) }
    }

    private func window(_ name: String, _ from: Double, _ to: Double) throws -> (RecordingWindow, [(Double, Bool, [Double], [UInt8])]) {
        let w = try RecordingWindow(directory: dir, outputName: name, from: from, to: to)
        var out: [(Double, Bool, [Double], [UInt8])] = []
        while let r = try w.next() { out.append((r.time, r.keyFrame, Array(r.values), Array(r.accessUnit))) }
        return (w, out)
    }

    private func segmentFiles(_ name: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir + "/" + name)) ?? []).filter { $0.hasSuffix(".rec") }.sorted()
    }

    func testScalarsAndVideoRoundTrip() throws {
        let s = try open()
        for i in 0..<100 { value(s, 0, t0 + Double(i) * 0.01) }
        for i in 0..<25 { video(s, 1, t0 + Double(i) * 0.04, key: i % 10 == 0, size: 500 + i) }
        XCTAssertEqual(s.counters(0).recorded, 100)
        XCTAssertEqual(s.counters(0).bytes, 100 * (20 + 32 + 4))
        XCTAssertEqual(s.counters(1).recorded, 25)
        s.close()
        XCTAssertEqual(segmentFiles("imu"), ["20261202T031500.000Z.rec"])
        let (w, imu) = try window("imu", t0, t0 + 10)
        XCTAssertEqual(w.total, 100)
        XCTAssertEqual(w.done, 100)
        XCTAssertFalse(w.isVideo)
        XCTAssertFalse(w.startsBeforeRecording)
        XCTAssertEqual(imu.map(\.0), (0..<100).map { t0 + Double($0) * 0.01 })
        XCTAssertEqual(imu[7].2, [t0 + 0.07, -(t0 + 0.07), 0.5, 1])
        let (vw, cam) = try window("camera", t0, t0 + 10)
        XCTAssertTrue(vw.isVideo)
        XCTAssertEqual(cam.count, 25)
        for (i, r) in cam.enumerated() {
            XCTAssertEqual(r.3, au(t0 + Double(i) * 0.04, size: 500 + i))
            XCTAssertEqual(r.1, i % 10 == 0)
            XCTAssertTrue(r.2.isEmpty)
        }
        let catalog = try RecordingCatalog.inspect(directory: dir)
        XCTAssertEqual(catalog.map(\.name), ["camera", "imu"])
        XCTAssertEqual(catalog[1].records, 100)
        XCTAssertEqual(catalog[1].first, t0)
        XCTAssertEqual(catalog[1].last, t0 + 0.99)
        XCTAssertEqual(catalog[0].records, 25)
        XCTAssertTrue(catalog[0].isVideo)
        XCTAssertEqual(RecordingCatalog.bounds(directory: dir)?.maxBytes, 64 << 20)
    }

    func testRotationBySizeAndByTime() throws {
        let s = try open(segmentBytes: 56 * 10, segmentSeconds: 5)
        for i in 0..<25 { value(s, 0, t0 + Double(i) * 0.1) }  // 56-byte records: ten per segment
        XCTAssertEqual(segmentFiles("imu").count, 3)
        for i in 0..<4 { value(s, 0, t0 + 100 + Double(i) * 3) }  // 3 s apart: a new segment every 5 s
        s.close()
        let files = segmentFiles("imu")
        XCTAssertEqual(files.count, 5, "\(files)")
        XCTAssertEqual(files[0], "20261202T031500.000Z.rec")
        XCTAssertEqual(files[1], "20261202T031501.000Z.rec")
        XCTAssertEqual(files[3], "20261202T031640.000Z.rec")
        XCTAssertEqual(files[4], "20261202T031646.000Z.rec")
        let (_, all) = try window("imu", 0, t0 + 1000)
        XCTAssertEqual(all.count, 29)
    }

    func testVideoSegmentsStartAtKeyFrames() throws {
        let s = try open(segmentBytes: 5000)
        XCTAssertFalse(video(s, 1, t0, key: false), "nothing to decode it from")
        XCTAssertFalse(video(s, 1, t0 + 0.04, key: false))
        XCTAssertEqual(s.counters(1).droppedNoKeyFrame, 2)
        // A key frame every 8 access units of 1 KiB: segments of 5000 bytes close only at key frames.
        for i in 2..<50 { XCTAssertTrue(video(s, 1, t0 + Double(i) * 0.04, key: i % 8 == 2)) }
        s.close()
        let files = segmentFiles("camera")
        XCTAssertEqual(files.count, 6)
        for f in files {
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir + "/camera/" + f)))
            XCTAssertEqual(bytes[3], RecordingRecord.Kind.keyFrame.rawValue, "\(f) starts with a key frame")
        }
        XCTAssertEqual(try window("camera", 0, t0 + 10).1.count, 48)
    }

    func testAKeyFrameThatNeverComesEndsTheSegmentAtFourTimesItsSize() throws {
        let s = try open(segmentBytes: 4000)
        video(s, 1, t0, key: true)
        for i in 1..<30 { video(s, 1, t0 + Double(i), key: false) }
        XCTAssertEqual(s.counters(1).recorded, 15, "16 KiB of 1 KiB access units, then dropped until a key frame")
        XCTAssertEqual(s.counters(1).droppedNoKeyFrame, 15)
        XCTAssertTrue(video(s, 1, t0 + 30, key: true))
        XCTAssertEqual(segmentFiles("camera").count, 2)
    }

    func testTheBoundDropsTheOldestSegmentOfAnyOutputAndCountsItPerOutput() throws {
        // 1 MiB bound, 256 KiB segments (four 60 kB key frames each).
        let s = try open(maxBytes: 1 << 20, segmentBytes: 256 << 10)
        for i in 0..<4000 { value(s, 0, t0 + Double(i) * 0.01) }  // 224 kB of imu, in one segment, the oldest
        var problems: [String] = []
        s.onProblem = { problems.append($0) }
        for i in 0..<13 { video(s, 1, t0 + 10 + Double(i), key: true, size: 60_000) }
        XCTAssertEqual(s.counters(0).droppedBound, 4000, "the imu's only segment was the oldest")
        XCTAssertEqual(s.counters(1).droppedBound, 0)
        XCTAssertLessThanOrEqual(s.storedBytes, 1 << 20)
        for i in 13..<40 { video(s, 1, t0 + 10 + Double(i), key: true, size: 60_000) }
        XCTAssertGreaterThan(s.counters(1).droppedBound, 0)
        XCTAssertEqual(s.counters(1).droppedBound % 4, 0, "whole segments of four 64 KiB frames")
        XCTAssertLessThanOrEqual(s.storedBytes, 1 << 20)
        XCTAssertTrue(problems.contains { $0.contains("max_mb") }, "\(problems)")
        s.close()
        XCTAssertEqual(segmentFiles("imu"), [])
        let (w, cam) = try window("camera", t0, t0 + 100)
        XCTAssertTrue(w.startsBeforeRecording, "the window's start was dropped")
        XCTAssertEqual(cam.count, 40 - s.counters(1).droppedBound)
        XCTAssertEqual(cam.last?.0, t0 + 49)
        XCTAssertThrowsError(try RecordingWindow(directory: dir, outputName: "nothing", from: t0, to: t0 + 1)) { e in
            XCTAssertTrue("\(e)".contains("recorded: camera, imu"), "\(e)")
        }
        XCTAssertThrowsError(try RecordingWindow(directory: dir + "/no", outputName: "imu", from: t0, to: t0 + 1)) { e in
            XCTAssertTrue("\(e)".contains("is [record] enabled"), "\(e)")
        }
    }

    func testMaxAgePrunesWholeSegments() throws {
        let s = try open(maxAge: 60, segmentSeconds: 10)
        for i in 0..<100 { value(s, 0, t0 + Double(i)) }  // ten segments of ten seconds
        XCTAssertEqual(segmentFiles("imu").count, 10)
        s.tick(now: t0 + 100)
        // Segments whose last record is older than t0 + 40 go (the first four: up to t0 + 39).
        XCTAssertEqual(segmentFiles("imu").count, 6)
        XCTAssertEqual(s.counters(0).droppedBound, 40)
        s.tick(now: t0 + 1000)
        XCTAssertEqual(segmentFiles("imu").count, 0, "all of it, the open one too")
        XCTAssertTrue(value(s, 0, t0 + 1000))
        XCTAssertEqual(segmentFiles("imu").count, 1)
    }

    func testTornTailsAreCutAtReopenAndAppendsContinue() throws {
        for damage in ["truncated", "garbage"] {
            try? FileManager.default.removeItem(atPath: dir)
            var s: RecordingStore? = try open()
            for i in 0..<10 { value(s!, 0, t0 + Double(i)) }
            for i in 0..<10 { video(s!, 1, t0 + Double(i), key: i == 0) }
            s = nil
            for name in ["imu", "camera"] {
                let p = dir + "/\(name)/" + segmentFiles(name)[0]
                let h = try FileHandle(forUpdating: URL(fileURLWithPath: p))
                if damage == "truncated" {
                    try h.truncate(atOffset: h.seekToEnd() - 7)  // a kill or power cut in the last record
                } else {
                    try h.seekToEnd()
                    try h.write(contentsOf: Data([0xA5, 0x5A, 0x02, 0x00] + [UInt8](repeating: 0, count: 30)))
                }
                try h.close()
            }
            var problems: [String] = []
            s = try open()
            XCTAssertEqual(s!.counters(0).damaged, 1, damage)
            XCTAssertEqual(s!.counters(1).damaged, 1, damage)
            let want = damage == "truncated" ? 9 : 10
            s!.onProblem = { problems.append($0) }
            value(s!, 0, t0 + 20)
            XCTAssertTrue(video(s!, 1, t0 + 20, key: true))
            s = nil
            XCTAssertEqual(segmentFiles("imu").count, 1, "appends continue in the same segment")
            let (w, imu) = try window("imu", 0, t0 + 100)
            XCTAssertEqual(imu.count, want + 1, damage)
            XCTAssertEqual(imu.last?.0, t0 + 20)
            XCTAssertEqual(w.damaged, 0, "nothing damaged is left")
            XCTAssertEqual(try window("camera", 0, t0 + 100).1.count, want + 1, damage)
        }
    }

    func testAfterReopenVideoWaitsForAKeyFrame() throws {
        var s: RecordingStore? = try open()
        for i in 0..<5 { video(s!, 1, t0 + Double(i), key: i == 0) }
        s = try open()
        XCTAssertFalse(video(s!, 1, t0 + 5, key: false), "a restarted encoder's first frame is a key frame; anything else is dropped")
        XCTAssertTrue(video(s!, 1, t0 + 6, key: true))
        XCTAssertEqual(s!.counters(1).droppedNoKeyFrame, 1)
    }

    func testFilesThatAreNotSegmentsAreLeftAlone() throws {
        try FileManager.default.createDirectory(atPath: dir + "/imu", withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: URL(fileURLWithPath: dir + "/imu/notes.txt"))
        try Data("x".utf8).write(to: URL(fileURLWithPath: dir + "/imu/20261202T031500.000Z.rec.partial"))
        let s = try open(maxAge: 1)
        value(s, 0, t0)
        s.tick(now: t0 + 100)
        s.close()
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: dir + "/imu").sorted(),
            ["20261202T031500.000Z.rec.partial", "notes.txt"])
    }

    func testAWindowInTheMiddleReturnsExactlyItsRecordsAndVideoFromTheKeyFrameBefore() throws {
        let s = try open(segmentBytes: 56 * 50)
        for i in 0..<1000 { value(s, 0, t0 + Double(i) * 0.01) }  // 20 segments
        for i in 0..<250 { video(s, 1, t0 + Double(i) * 0.04, key: i % 25 == 0, size: 200) }  // key frames each second
        s.close()
        let (w, imu) = try window("imu", t0 + 3.005, t0 + 5.505)
        XCTAssertEqual(imu.map(\.0), (301...550).map { t0 + Double($0) * 0.01 })
        XCTAssertEqual(w.total, 250)
        XCTAssertEqual(w.done, 250)
        XCTAssertFalse(w.startsBeforeRecording)
        let (vw, cam) = try window("camera", t0 + 3.5, t0 + 5.01)
        let key = t0 + Double(75) * 0.04
        XCTAssertEqual(cam.first?.0, key, "from the key frame at or before the start")
        XCTAssertTrue(cam.first?.1 ?? false)
        XCTAssertEqual(cam.last?.0, t0 + Double(125) * 0.04)
        XCTAssertEqual(cam.count, 51)
        XCTAssertEqual(vw.total, 51)
        let (_, exact) = try window("camera", key, key)
        XCTAssertEqual(exact.map(\.0), [key])
        let (empty, none) = try window("imu", t0 + 100, t0 + 200)
        XCTAssertEqual(empty.total, 0)
        XCTAssertTrue(none.isEmpty)
        XCTAssertEqual(empty.recordedRange?.first, t0)
        XCTAssertEqual(empty.recordedRange?.last, t0 + Double(999) * 0.01)
    }

    func testDamageInsideAWindowIsSkippedAndCounted() throws {
        let s = try open()
        for i in 0..<100 { value(s, 0, t0 + Double(i)) }
        s.close()
        let p = dir + "/imu/" + segmentFiles("imu")[0]
        let h = try FileHandle(forUpdating: URL(fileURLWithPath: p))
        try h.seek(toOffset: 56 * 40 + 30)
        try h.write(contentsOf: Data([0xFF, 0xEE]))
        try h.close()
        let (w, imu) = try window("imu", 0, t0 + 1000)
        XCTAssertEqual(imu.count, 99)
        XCTAssertFalse(imu.contains { $0.0 == t0 + 40 })
        XCTAssertEqual(w.damaged, 1)
        XCTAssertEqual(w.damagedBytes, 56)
    }

    func testReadingWhileAnotherStoreWrites() throws {
        let s = try open(segmentBytes: 56 * 100)
        for i in 0..<250 { value(s, 0, t0 + Double(i)) }
        let w = try RecordingWindow(directory: dir, outputName: "imu", from: 0, to: t0 + 10_000)
        for i in 250..<300 { value(s, 0, t0 + Double(i)) }  // after the window opened: not in it
        var n = 0
        while try w.next() != nil { n += 1 }
        XCTAssertEqual(n, 250)
        XCTAssertEqual(w.total, 250)
    }

    /// A real SIGKILL of a process writing large access units and values: reopening finds at most a
    /// torn tail (a kill can cut a large write between pages), cuts it, and every record before it reads back.
    func testKilledWriterLeavesARecordingThatReopens() throws {
        var kills = 0
        for round in 0..<5 {
            try? FileManager.default.removeItem(atPath: dir)
            let s = try open(segmentBytes: 4 << 20)
            let frame = [UInt8](repeating: 0x11, count: 1 << 20)
            let values = [1.0, 2.0, 3.0, 4.0]
            // Warm up in the parent, so the child only makes system calls (no allocation after fork).
            _ = frame.withUnsafeBytes { s.append(output: 1, epochTime: t0, accessUnit: $0, keyFrame: true) }
            let pid = frame.withUnsafeBytes { f in
                values.withUnsafeBufferPointer { v -> pid_t in
                    let pid = fork()
                    if pid == 0 {
                        var t = t0
                        while true {
                            t += 0.01
                            _ = s.append(output: 0, epochTime: t, values: v)
                            _ = s.append(output: 1, epochTime: t, accessUnit: f, keyFrame: true)
                        }
                    }
                    return pid
                }
            }
            XCTAssertGreaterThan(pid, 0)
            usleep(UInt32(20_000 + round * 37_000))
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            kills += 1
            s.close()
            let again = try open(segmentBytes: 4 << 20)
            let recovered = again.counters(1)
            again.close()
            let (w, cam) = try window("camera", 0, t0 + 1e6)
            let (iw, imu) = try window("imu", 0, t0 + 1e6)
            XCTAssertGreaterThan(cam.count, 1, "the child wrote")
            XCTAssertEqual(w.damaged + iw.damaged, 0, "after reopening, nothing damaged is left")
            XCTAssertTrue(cam.allSatisfy { $0.3.count == 1 << 20 && $0.3.allSatisfy { $0 == 0x11 } })
            XCTAssertEqual(imu.map(\.0), imu.map(\.0).sorted())
            print("kill \(round): \(cam.count) access units and \(imu.count) values read back; torn tails cut: \(recovered.damaged)")
        }
        XCTAssertEqual(kills, 5)
    }

    /// For counting heap allocations per record from outside (valgrind, at N and 2N appends; the
    /// difference over N is the cost per record):
    ///   OSH_RECORD_APPENDS=N valgrind .build/debug/osh-edgePackageTests.xctest RecordingStoreTests/testAppendsForAnAllocationCount
    func testAppendsForAnAllocationCount() throws {
        guard let n = ProcessInfo.processInfo.environment["OSH_RECORD_APPENDS"].flatMap({ Int($0) }) else {
            throw XCTSkip("set OSH_RECORD_APPENDS=N and count allocations with valgrind")
        }
        let s = try open(maxBytes: 1 << 30, segmentBytes: 16 << 20, names: ["quat", "camera"])
        let q = [0.1, 0.2, 0.3, 0.9], frame = [UInt8](repeating: 7, count: 3000)
        q.withUnsafeBufferPointer { v in
            frame.withUnsafeBytes { f in
                for i in 0..<n {
                    let t = t0 + Double(i) * 0.01
                    _ = s.append(output: 0, epochTime: t, values: v)
                    _ = s.append(output: 1, epochTime: t, accessUnit: f, keyFrame: i % 50 == 0)
                    s.tick(now: t)
                }
            }
        }
        s.close()
    }

    /// Append cost: ns per scalar record, bytes per record, and what a 100 Hz quaternion plus 25 fps
    /// video would write.
    func testMeasureAppendCost() throws {
        let s = try open(maxBytes: 256 << 20, names: ["quat", "camera"], sync: .never)
        let q = [0.1, 0.2, 0.3, 0.9]
        let n = 200_000
        let start = DispatchTime.now().uptimeNanoseconds
        q.withUnsafeBufferPointer { v in
            for i in 0..<n { _ = s.append(output: 0, epochTime: t0 + Double(i) * 0.01, values: v) }
        }
        let ns = Double(DispatchTime.now().uptimeNanoseconds - start) / Double(n)
        let perRecord = s.counters(0).bytes / n
        let frame = [UInt8](repeating: 7, count: 6000)
        let vn = 5000
        let vstart = DispatchTime.now().uptimeNanoseconds
        frame.withUnsafeBytes { f in
            for i in 0..<vn { _ = s.append(output: 1, epochTime: t0 + Double(i) * 0.04, accessUnit: f, keyFrame: i % 50 == 0) }
        }
        let vns = Double(DispatchTime.now().uptimeNanoseconds - vstart) / Double(vn)
        s.close()
        print(
            String(
                format: "recording append: %.0f ns per 4-value record (%d bytes, fsync never); %.0f ns per 6000-byte access unit; "
                    + "100 Hz quaternion = 100 writes/s, %d bytes/s; + 25 fps video = 125 writes/s, %d bytes/s + the encoder's bitrate/8",
                ns, perRecord, vns, 100 * perRecord, 100 * perRecord + 25 * RecordingRecord.size(payload: 0)))
        XCTAssertEqual(perRecord, 56)
    }
}
