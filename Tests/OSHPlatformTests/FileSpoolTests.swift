import Foundation
import Glibc
import OSHCore
@testable import OSHPlatform
import XCTest

/// The spool on real files in a temporary directory: order, acknowledgement across restarts,
/// damage (torn tails at every offset, bad CRCs, torn cursor writes), the size bound.
final class FileSpoolTests: XCTestCase {
    private var dir = ""
    private let names = ["barometer", "gps_data"]

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "osh-spool-\(UUID().uuidString)"
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    private func open(
        _ maxBytes: Int = 1 << 20, names: [String]? = nil, sync: SpoolSync = .second,
        boot: UInt64 = 0x1234_5678_9abc_def0
    ) throws -> FileSpool {
        try FileSpool(
            options: FileSpoolOptions(directory: dir, maxBytes: maxBytes, sync: sync, bootTag: boot),
            outputNames: names ?? self.names, maxValues: 4)
    }

    @discardableResult
    private func append(_ s: FileSpool, _ ds: Int, _ t: Double, _ v: [Double]? = nil) -> Bool {
        (v ?? [t, -t]).withUnsafeBufferPointer { s.append(datastream: ds, epochTime: t, values: $0) }
    }

    /// Every batch until empty, committing each: (datastream, times).
    private func drain(_ s: FileSpool, max: Int = 4) -> [(Int, [Double])] {
        var out: [(Int, [Double])] = []
        while let d = s.loadBatch(max: max) {
            out.append((d, (0..<s.batchCount).map { s.batchTime($0) }))
            s.commitBatch()
        }
        return out
    }

    private func segments() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(".seg") }.sorted()
    }

    func testBatchesComeBackInOrderOneDatastreamAtATimeAndAcknowledgedOnesNeverAgain() throws {
        var s: FileSpool? = try open()
        for t in 0..<6 { append(s!, 0, Double(t)) }
        for t in 6..<9 { append(s!, 1, Double(t), [Double(t), 1, 2]) }
        for t in 9..<11 { append(s!, 0, Double(t)) }
        XCTAssertEqual(s!.stats.appended, 11)
        XCTAssertEqual(s!.loadBatch(max: 4), 0)
        XCTAssertEqual((0..<s!.batchCount).map { s!.batchTime($0) }, [0, 1, 2, 3])
        XCTAssertEqual(Array(s!.batchValues(1)), [1, -1])
        s!.commitBatch()
        XCTAssertEqual(s!.loadBatch(max: 4), 0, "stops before the other datastream")
        XCTAssertEqual(s!.batchCount, 2)
        // Not committed: a restart must send 4 and 5 again, but never 0…3.
        s = nil
        s = try open()
        let rest = drain(s!)
        XCTAssertEqual(rest.map(\.0), [0, 1, 0])
        XCTAssertEqual(rest.flatMap(\.1), (4..<11).map(Double.init))
        XCTAssertEqual(s!.pendingBytes, 0)
        XCTAssertEqual(segments(), [], "an empty spool leaves no segment on the card")
        s = nil
        s = try open()
        XCTAssertNil(s!.loadBatch(max: 4), "everything was acknowledged")
        append(s!, 1, 99, [99, 0, 0])
        XCTAssertEqual(drain(s!).flatMap(\.1), [99], "appends after a full drain start a new segment")
    }

    func testRecordsHeldForTheClockWaitForItInThisBootAndAreDroppedAfterAReboot() throws {
        var s: FileSpool? = try open()
        append(s!, 0, 1_773_853_000)
        for t in 0..<3 {
            _ = [Double(t), 0].withUnsafeBufferPointer { s!.appendHeld(datastream: 0, monotonicTime: Double(t), values: $0) }
        }
        append(s!, 1, 1_773_853_100, [5, 0, 0])
        // The clock is not trusted yet: the epoch record goes, the batch stops before the first held one.
        XCTAssertEqual(drain(s!).flatMap(\.1), [1_773_853_000])
        XCTAssertNil(s!.loadBatch(max: 4), "held records wait for the clock")
        XCTAssertGreaterThan(s!.pendingBytes, 0)
        s!.heldTimeOffset = 1_000_000
        XCTAssertEqual(
            drain(s!).flatMap(\.1), [1_000_000, 1_000_001, 1_000_002, 1_773_853_100],
            "epoch = monotonic + the offset, in order, and what followed them after")
        // Held in one boot, read in another: the monotonic times mean nothing there.
        for t in 0..<2 {
            _ = [Double(t), 0].withUnsafeBufferPointer { s!.appendHeld(datastream: 0, monotonicTime: Double(t), values: $0) }
        }
        append(s!, 1, 1_773_853_200, [6, 0, 0])
        s = nil
        s = try open(boot: 0x0fed_cba9_8765_4321)
        var untimed: [Int: Int] = [:]
        var problems: [String] = []
        s!.onUntimedDrop = { untimed[$0, default: 0] += $1 }
        s!.onProblem = { problems.append($0) }
        XCTAssertEqual(drain(s!).flatMap(\.1), [1_773_853_200], "never sent with a made-up time")
        XCTAssertEqual(untimed, [0: 2], "counted against their datastream")
        XCTAssertEqual(s!.stats.untimed, 2)
        XCTAssertTrue(problems.contains { $0.contains("before a reboot") && $0.contains("require_sync") }, "\(problems)")
        // What `osh-edge spool` shows knows a held record from an epoch one.
        _ = [Double(7), 0].withUnsafeBufferPointer { s!.appendHeld(datastream: 0, monotonicTime: 7, values: $0) }
        s = nil
        let e = try XCTUnwrap(FileSpool.inspect(directory: dir).entries.last)
        XCTAssertEqual(e.heldBoot, 0x0fed_cba9_8765_4321)
        XCTAssertEqual(e.time, 7)
        XCTAssertEqual(e.values, [7, 0])
    }

    func testABootIDIsReadAsItsFirstSixteenHexDigits() {
        XCTAssertEqual(BootID.parse("8a3c0f1e-2b4d-4c6e-9f01-23456789abcd\n"), 0x8a3c_0f1e_2b4d_4c6e)
        XCTAssertNil(BootID.parse(""))
        XCTAssertNil(BootID.parse("not a boot id"))
        XCTAssertNotEqual(BootID.tag, 0)
    }

    func testATornTailAtEveryOffsetIsCutOffAndAppendsContinueAfterIt() throws {
        let reference = dir
        do {
            let s = try open()
            for t in 0..<3 { append(s, 0, Double(t)) }
        }
        let seg = try XCTUnwrap(segments().first)
        let bytes = try XCTUnwrap(FileManager.default.contents(atPath: reference + "/" + seg))
        let recordSize = SpoolRecord.size(values: 2)
        XCTAssertEqual(bytes.count, 3 * recordSize)
        for cut in 0..<bytes.count {
            dir = reference + "-cut\(cut)"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            try bytes.prefix(cut).write(to: URL(fileURLWithPath: dir + "/" + seg))
            let s = try open()
            append(s, 0, 100)
            let whole = cut / recordSize
            XCTAssertEqual(drain(s, max: 10).flatMap(\.1), (0..<whole).map(Double.init) + [100], "cut at \(cut)")
            XCTAssertEqual(s.stats.damaged, cut % recordSize == 0 ? 0 : 1, "cut at \(cut)")
            try? FileManager.default.removeItem(atPath: dir)
        }
        dir = reference
    }

    func testABadRecordInTheMiddleIsSkippedAndCountedTheRestIsSent() throws {
        do {
            let s = try open()
            for t in 0..<5 { append(s, 0, Double(t)) }
        }
        let path = dir + "/" + (try XCTUnwrap(segments().first))
        var bytes = try XCTUnwrap(FileManager.default.contents(atPath: path))
        bytes[2 * SpoolRecord.size(values: 2) + 20] ^= 0x40  // a value bit of record 2 (bit rot, not a tear)
        try bytes.write(to: URL(fileURLWithPath: path))
        let inspection = try FileSpool.inspect(directory: dir)
        XCTAssertEqual(inspection.entries.map(\.time), [0, 1, 3, 4])
        XCTAssertEqual(inspection.damage.count, 1)
        let s = try open()
        XCTAssertEqual(drain(s, max: 10).flatMap(\.1), [0, 1, 3, 4], "the damaged record is never sent")
        XCTAssertEqual(s.stats.damaged, 1)
    }

    func testACursorWriteTornByAPowerCutFallsBackToTheOlderPosition() throws {
        do {
            let s = try open()
            for t in 0..<8 { append(s, 0, Double(t)) }
            _ = s.loadBatch(max: 2); s.commitBatch()  // cursor seq 1 after 0,1 (slot 1)
            _ = s.loadBatch(max: 2); s.commitBatch()  // seq 2 after 2,3 (slot 0)
        }
        // Tear the newest slot (slot 0, sequence 2): the older slot says "after 0,1".
        let fd = Glibc.open(dir + "/cursor", O_RDWR)
        XCTAssertGreaterThanOrEqual(fd, 0)
        var zero = [UInt8](repeating: 0, count: 12)
        XCTAssertEqual(pwrite(fd, &zero, 12, 20), 12)
        close(fd)
        let s = try open()
        XCTAssertEqual(
            drain(s, max: 10).flatMap(\.1), (2..<8).map(Double.init),
            "2 and 3 are sent again (their acknowledgement was lost), nothing earlier")
    }

    func testWhenFullTheOldestSegmentIsDroppedAndCounted() throws {
        let s = try open(128 << 10)  // two 64 KiB segments
        var lost = [0, 0]
        s.onBoundDrop = { d, n in lost[d] += n }
        let perSegment = (64 << 10) / SpoolRecord.size(values: 2)
        let n = 3 * perSegment  // exactly three segments' worth
        for t in 0..<n { XCTAssertTrue(append(s, t % 2, Double(t))) }
        XCTAssertEqual(s.stats.segmentsDropped, 1)
        XCTAssertEqual(s.stats.droppedFull, perSegment)
        XCTAssertEqual(lost, [(perSegment + 1) / 2, perSegment / 2], "told per datastream (the publisher counts them)")
        let files = segments()
        XCTAssertEqual(files.count, 2)
        var total = 0
        for f in files { total += (try FileManager.default.attributesOfItem(atPath: dir + "/" + f)[.size] as? Int) ?? 0 }
        XCTAssertLessThanOrEqual(total, 128 << 10, "the bound holds")
        let times = drain(s, max: 500).flatMap(\.1)
        XCTAssertEqual(s.stats.damaged, 0, "dropping a segment mid-append must not touch the record being written")
        XCTAssertTrue(
            times == (perSegment..<n).map(Double.init),
            "the newest are kept, in order: \(times.count) from \(times.first ?? -1), missing \(Set((perSegment..<n).map(Double.init)).subtracting(times).sorted().prefix(5))"
        )
    }

    func testRecordsOfAnOutputNoLongerConfiguredAreSkippedAndCounted() throws {
        do {
            let s = try open()
            append(s, 0, 1); append(s, 1, 2, [2, 0, 0]); append(s, 0, 3)
        }
        let s = try open(names: ["gps_data"])
        XCTAssertEqual(drain(s).flatMap(\.1), [2])
        XCTAssertEqual(s.stats.unknownOutput, 2)
    }

    func testAnUnwritableDirectoryIsAnErrorThatSaysWhere() throws {
        try "x".write(toFile: dir, atomically: true, encoding: .utf8)  // a file where the directory should be
        XCTAssertThrowsError(try open()) { error in
            XCTAssertTrue("\(error)".contains(dir), "\(error)")
        }
        try FileManager.default.removeItem(atPath: dir)
    }

    func testSyncPolicyRecordWritesEveryRecordThrough() throws {
        // fdatasync cannot be observed here; what can: every mode keeps what was appended across a
        // reopen (a killed process loses nothing; the page cache outlives it).
        for mode in SpoolSync.allCases {
            let s = try open(sync: mode)
            append(s, 0, 1)
            XCTAssertEqual(try FileSpool.inspect(directory: dir).entries.map(\.time), [1], "\(mode)")
            _ = drain(s)
        }
    }
}
