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

    private func open(_ maxBytes: Int = 1 << 20, names: [String]? = nil, sync: SpoolSync = .second) throws -> FileSpool {
        try FileSpool(options: FileSpoolOptions(directory: dir, maxBytes: maxBytes, sync: sync),
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
        bytes[2 * SpoolRecord.size(values: 2) + 20] ^= 0x40 // a value bit of record 2 (bit rot, not a tear)
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
            _ = s.loadBatch(max: 2); s.commitBatch() // cursor seq 1 after 0,1 (slot 1)
            _ = s.loadBatch(max: 2); s.commitBatch() // seq 2 after 2,3 (slot 0)
        }
        // Tear the newest slot (slot 0, sequence 2): the older slot says "after 0,1".
        let fd = Glibc.open(dir + "/cursor", O_RDWR)
        XCTAssertGreaterThanOrEqual(fd, 0)
        var zero = [UInt8](repeating: 0, count: 12)
        XCTAssertEqual(pwrite(fd, &zero, 12, 20), 12)
        close(fd)
        let s = try open()
        XCTAssertEqual(drain(s, max: 10).flatMap(\.1), (2..<8).map(Double.init),
                       "2 and 3 are sent again (their acknowledgement was lost), nothing earlier")
    }

    func testWhenFullTheOldestSegmentIsDroppedAndCounted() throws {
        let s = try open(128 << 10) // two 64 KiB segments
        var lost = [0, 0]
        s.onBoundDrop = { d, n in lost[d] += n }
        let perSegment = (64 << 10) / SpoolRecord.size(values: 2)
        let n = 3 * perSegment // exactly three segments' worth
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
        XCTAssertTrue(times == (perSegment..<n).map(Double.init), "the newest are kept, in order: \(times.count) from \(times.first ?? -1), missing \(Set((perSegment..<n).map(Double.init)).subtracting(times).sorted().prefix(5))")
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
        try "x".write(toFile: dir, atomically: true, encoding: .utf8) // a file where the directory should be
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
