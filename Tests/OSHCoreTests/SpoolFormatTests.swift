import OSHCore
import XCTest

/// The spool's record and cursor encodings: every kind of damage is refused, never misread.
final class SpoolFormatTests: XCTestCase {
    private func record(
        key: UInt32 = 7, time: Double = 1_773_853_000.125, values: [Double] = [1013.25, -0.5, .nan],
        heldBoot: UInt64? = nil
    ) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: SpoolRecord.size(values: values.count, held: heldBoot != nil))
        let n = out.withUnsafeMutableBytes { o in
            values.withUnsafeBufferPointer {
                SpoolRecord.encode(key: key, time: time, values: $0, into: o.baseAddress!, heldBoot: heldBoot)
            }
        }
        XCTAssertEqual(n, out.count)
        return out
    }

    private func parse(_ bytes: [UInt8], at offset: Int = 0) -> SpoolRecord.Parsed {
        bytes.withUnsafeBytes { SpoolRecord.parse($0, at: offset, maxValues: 32) }
    }

    func testCRC32AndKeyAreTheStandardOnes() {
        XCTAssertEqual(Array("123456789".utf8).withUnsafeBytes { CRC32.checksum($0) }, 0xCBF4_3926)  // the check value
        XCTAssertEqual(SpoolRecord.key(outputName: ""), 0x811C_9DC5)  // FNV-1a offset basis
        XCTAssertEqual(SpoolRecord.key(outputName: "a"), 0xE40C_292C)
        XCTAssertNotEqual(SpoolRecord.key(outputName: "barometer"), SpoolRecord.key(outputName: "gps_data"))
    }

    func testARecordRoundTripsBitForBit() {
        let r = record()
        XCTAssertEqual(r.count, 16 + 3 * 8 + 4)
        guard case .record(let key, let time, let n, let len) = parse(r) else { return XCTFail("not parsed") }
        XCTAssertEqual(key, 7)
        XCTAssertEqual(time, 1_773_853_000.125)
        XCTAssertEqual(n, 3)
        XCTAssertEqual(len, r.count)
        let v = (0..<3).map { i in r.withUnsafeBytes { SpoolRecord.value($0, recordAt: 0, i) } }
        XCTAssertEqual(v[0], 1013.25)
        XCTAssertEqual(v[1], -0.5)
        XCTAssertTrue(v[2].isNaN, "NaN survives (a sensor's missing value)")
    }

    func testARecordHeldForTheClockCarriesItsBootAndIsRefusedWhenDamaged() {
        let r = record(time: 42.5, values: [1, 2], heldBoot: 0xfeed_f00d_1234_5678)
        XCTAssertEqual(r.count, 24 + 2 * 8 + 4)
        XCTAssertEqual(r[2], SpoolRecord.heldVersion)
        guard case .record(let key, let time, let n, let len) = parse(r) else { return XCTFail("not parsed") }
        XCTAssertEqual([Double(key), time, Double(n), Double(len)], [7, 42.5, 2, Double(r.count)])
        r.withUnsafeBytes {
            XCTAssertEqual(SpoolRecord.heldBoot($0, recordAt: 0), 0xfeed_f00d_1234_5678)
            XCTAssertEqual([SpoolRecord.value($0, recordAt: 0, 0), SpoolRecord.value($0, recordAt: 0, 1)], [1, 2])
        }
        record().withUnsafeBytes { XCTAssertNil(SpoolRecord.heldBoot($0, recordAt: 0), "an ordinary record's time is epoch") }
        for cut in 1..<r.count { XCTAssertEqual(parse(Array(r[0..<cut])), .incomplete, "cut at \(cut)") }
        for byte in 3..<r.count {
            var d = r
            d[byte] ^= 0x10
            if case .record = parse(d) { XCTFail("a flipped bit in byte \(byte) was read as a record") }
        }
    }

    func testEveryTruncationIsIncompleteNeverARecord() {
        let r = record()
        for cut in 1..<r.count {
            XCTAssertEqual(parse(Array(r[0..<cut])), .incomplete, "cut at \(cut)")
        }
    }

    func testEveryFlippedBitIsRefused() {
        let r = record()
        for byte in 0..<r.count {
            for bit in 0..<8 {
                var d = r
                d[byte] ^= UInt8(1 << bit)
                if case .record = parse(d) { XCTFail("byte \(byte) bit \(bit) flipped was accepted") }
            }
        }
    }

    func testResyncFindsTheNextRecordAfterGarbage() {
        let a = record(key: 1), b = record(key: 2)
        var bytes = a
        bytes[20] ^= 0xFF  // damage a
        bytes += [0x00, 0xA5, 0x13] + b
        XCTAssertEqual(parse(bytes), .invalid)
        var at = 0
        var found: [UInt32] = []
        while at < bytes.count {
            switch parse(bytes, at: at) {
            case .record(let key, _, _, let len): found.append(key); at += len
            case .invalid: at = bytes.withUnsafeBytes { SpoolRecord.resync($0, after: at) }
            case .incomplete: at = bytes.count
            }
        }
        XCTAssertEqual(found, [2])
    }

    func testACursorSlotTornByAPowerCutFallsBackToTheOtherSlot() {
        func slot(_ c: SpoolCursor) -> [UInt8] {
            var b = [UInt8](repeating: 0, count: SpoolCursor.slotBytes)
            b.withUnsafeMutableBytes { c.encode(into: $0.baseAddress!) }
            return b
        }
        let older = SpoolCursor(sequence: 4, segment: 2, offset: 4096)
        let newer = SpoolCursor(sequence: 5, segment: 3, offset: 52)
        let a = slot(older), b = slot(newer)
        let decode = { (x: [UInt8]) in x.withUnsafeBytes { SpoolCursor.decode($0) } }
        XCTAssertEqual(SpoolCursor.newest(decode(a), decode(b)), newer)
        for cut in 0..<SpoolCursor.slotBytes {
            var torn = b
            for i in cut..<torn.count { torn[i] = 0 }  // the write stopped after `cut` bytes
            XCTAssertEqual(SpoolCursor.newest(decode(a), decode(torn)), older, "torn at \(cut)")
        }
        XCTAssertNil(SpoolCursor.newest(nil, nil))
    }
}
