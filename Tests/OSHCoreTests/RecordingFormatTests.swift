import OSHCore
import XCTest

/// The recording's record format: round trips, and every kind of damage refused, never misread.
final class RecordingFormatTests: XCTestCase {
    private func values(key: UInt32 = 7, time: Double = 1_773_853_000.125, _ v: [Double] = [0.5, -0.25, .nan, 1e300]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: RecordingRecord.size(payload: 8 * v.count))
        let n = out.withUnsafeMutableBytes { o in
            v.withUnsafeBufferPointer { RecordingRecord.encode(key: key, time: time, values: $0, into: o.baseAddress!) }
        }
        XCTAssertEqual(n, out.count)
        return out
    }

    /// A video record as the store writes it: header, the access unit from elsewhere, the CRC.
    private func accessUnit(_ au: [UInt8], keyFrame: Bool, time: Double = 1_773_853_001.5) -> [UInt8] {
        var header = [UInt8](repeating: 0, count: RecordingRecord.headerBytes)
        let crc = header.withUnsafeMutableBytes { h -> UInt32 in
            RecordingRecord.encodeHeader(
                kind: keyFrame ? .keyFrame : .accessUnit, key: 9, time: time,
                payloadLength: au.count, into: h.baseAddress!)
            return au.withUnsafeBytes { RecordingRecord.crc(header: h.baseAddress!, payload: $0) }
        }
        return header + au + withUnsafeBytes(of: crc.littleEndian) { Array($0) }
    }

    private func parse(_ b: [UInt8], at offset: Int = 0) -> RecordingRecord.Parsed {
        b.withUnsafeBytes { RecordingRecord.parse($0, at: offset) }
    }

    func testContinuedCRCEqualsTheWholeOne() {
        let a = Array("12345".utf8), b = Array("6789".utf8)
        let whole = (a + b).withUnsafeBytes { CRC32.checksum($0) }
        XCTAssertEqual(whole, 0xCBF4_3926)
        XCTAssertEqual(b.withUnsafeBytes { tail in a.withUnsafeBytes { CRC32.checksum(tail, previous: CRC32.checksum($0)) } }, whole)
    }

    func testValuesRoundTripBitForBit() {
        let r = values()
        XCTAssertEqual(r.count, 20 + 32 + 4)
        XCTAssertEqual(Array(r[0..<4]), [0xA5, 0x5A, 2, 0])
        guard case .record(let h) = parse(r) else { return XCTFail("not parsed") }
        XCTAssertEqual(h, RecordingRecord.Header(kind: .values, key: 7, time: 1_773_853_000.125, payloadLength: 32))
        XCTAssertEqual(h.length, r.count)
        let p = r.withUnsafeBytes { Array(RecordingRecord.payload($0, recordAt: 0, h)) }
        let v = (0..<4).map { i in Double(bitPattern: UInt64(p[8 * i..<8 * i + 8].reversed().reduce(0) { $0 << 8 | UInt64($1) })) }
        XCTAssertEqual(v[0], 0.5)
        XCTAssertEqual(v[1], -0.25)
        XCTAssertTrue(v[2].isNaN)
        XCTAssertEqual(v[3], 1e300)
    }

    func testAccessUnitRoundTripsAndTheCRCCoversHeaderAndPayload() {
        let au: [UInt8] = [0, 0, 0, 1, 0x67, 1, 2, 3, 0, 0, 0, 1, 0x65, 9, 9]
        let r = accessUnit(au, keyFrame: true)
        guard case .record(let h) = parse(r) else { return XCTFail("not parsed") }
        XCTAssertEqual(h.kind, .keyFrame)
        XCTAssertEqual(h.payloadLength, au.count)
        XCTAssertEqual(r.withUnsafeBytes { Array(RecordingRecord.payload($0, recordAt: 0, h)) }, au)
        // The same bytes CRC'd in one piece (what a reader checks) agree with the two-piece CRC.
        guard case .record(let p) = parse(accessUnit(au, keyFrame: false)) else { return XCTFail("not parsed") }
        XCTAssertEqual(p.kind, .accessUnit)
        XCTAssertEqual(accessUnit([], keyFrame: false).count, 24, "an empty payload is still a record")
    }

    func testEverySingleByteCorruptionIsFound() {
        for r in [values(), accessUnit(Array(0..<40), keyFrame: true)] {
            for i in 0..<r.count {
                for flip: UInt8 in [0x01, 0x80, 0xFF] {
                    var bad = r
                    bad[i] ^= flip
                    if case .record = parse(bad) { XCTFail("byte \(i) ^ \(flip) not found") }
                }
            }
        }
    }

    func testTornAtEveryLengthIsIncomplete() {
        for r in [values(), accessUnit(Array(0..<40), keyFrame: false)] {
            for n in 1..<r.count {
                XCTAssertEqual(parse(Array(r[0..<n])), .incomplete, "torn at \(n)")
            }
            XCTAssertEqual(parse([]), .incomplete)
        }
    }

    func testWrongVersionKindAndImpossibleLengthsAreInvalid() {
        var r = values()
        r[2] = 1  // a spool record
        XCTAssertEqual(parse(r), .invalid)
        r = values(); r[3] = 3
        XCTAssertEqual(parse(r), .invalid)
        r = values(); r[16] = 33  // a values payload that is not whole doubles
        XCTAssertEqual(parse(r), .invalid)
        r = accessUnit([1, 2, 3], keyFrame: true)
        withUnsafeBytes(of: UInt32(RecordingRecord.maxPayload + 1).littleEndian) { for i in 0..<4 { r[16 + i] = $0[i] } }
        XCTAssertEqual(parse(r), .invalid, "damage cannot claim more than the payload bound")
    }

    func testResyncFindsTheNextRecordAfterGarbage() {
        let a = values(time: 1), b = accessUnit([0xA5, 0x5A, 0xA5, 7], keyFrame: true), c = values(time: 3)
        let garbage: [UInt8] = [0x00, 0xA5, 0x13, 0x5A, 0xA5, 0x5A, 0x02, 0x09, 0xFF]
        let stream = a + garbage + b + c
        var found: [Double] = [], damaged = 0, off = 0
        while off < stream.count {
            switch parse(stream, at: off) {
            case .record(let h):
                found.append(h.time)
                off += h.length
            case .invalid:
                damaged += 1
                off = stream.withUnsafeBytes { RecordingRecord.resync($0, after: off) }
            case .incomplete:
                off = stream.count
            }
        }
        XCTAssertEqual(found, [1, 1_773_853_001.5, 3])
        XCTAssertGreaterThan(damaged, 0)
    }

    func testSegmentNamesAreFixedWidthSortableAndReadBack() {
        XCTAssertEqual(RecordingRecord.segmentName(start: 1_796_181_300.123), "20261202T031500.123Z.rec")
        XCTAssertEqual(RecordingRecord.segmentName(start: 0), "19700101T000000.000Z.rec")
        XCTAssertEqual(RecordingRecord.segmentStart(name: "20261202T031500.123Z.rec"), 1_796_181_300.123)
        XCTAssertNil(RecordingRecord.segmentStart(name: "20261202T031500.123Z.rec.tmp"))
        XCTAssertNil(RecordingRecord.segmentStart(name: "notes.txt"))
        XCTAssertNil(RecordingRecord.segmentStart(name: "20261302T031500.123Z.rec"))
        var t = 1_700_000_000.0
        var names: [String] = []
        for _ in 0..<200 {
            names.append(RecordingRecord.segmentName(start: t))
            let back = RecordingRecord.segmentStart(name: names[names.count - 1]) ?? .nan
            XCTAssertLessThanOrEqual(back, t)
            XCTAssertLessThan(t - back, 0.001)
            t += 3_333.3337
        }
        XCTAssertEqual(names, names.sorted())
        XCTAssertTrue(names.allSatisfy { $0.utf8.count == RecordingRecord.nameStemBytes + 4 })
    }

    func testTheLiveBitRoundTripsBesideTheKind() {
        let buf = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 8)
        defer { buf.deallocate() }
        for (kind, live) in [(RecordingRecord.Kind.values, true), (.keyFrame, true), (.accessUnit, false)] {
            RecordingRecord.encodeHeader(kind: kind, live: live, key: 7, time: 1.5, payloadLength: 8, into: buf)
            XCTAssertEqual(
                RecordingRecord.header(UnsafeRawBufferPointer(start: buf, count: 20), at: 0),
                .record(RecordingRecord.Header(kind: kind, live: live, key: 7, time: 1.5, payloadLength: 8)))
        }
        // Bit 7 beside a kind that does not exist is still no record.
        buf.storeBytes(of: UInt8(0x83), toByteOffset: 3, as: UInt8.self)
        XCTAssertEqual(RecordingRecord.header(UnsafeRawBufferPointer(start: buf, count: 20), at: 0), .invalid)
    }
}
