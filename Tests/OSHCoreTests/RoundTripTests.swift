import OSHCore
import XCTest

/// Encode with the write side, decode with the read side, get the same values —
/// for every scalar output in every format, and for the video record.
final class RoundTripTests: XCTestCase {
    private let options = OutputOptions(uid: "urn:osh:rpi:10000000abcdef12")

    /// Values a sensor could emit for this layout, including awkward ones.
    private func values(for layout: ObservationLayout, seed: Int) -> [Double] {
        let awkward: [Double] = [-0.0, 1e-300, 123456.789012345, -42.5, 0.1, 1e21, 3.0, 7.25e-5]
        return layout.valueLeaves.enumerated().map { i, li in
            let v = awkward[(i + seed) % awkward.count]
            switch layout.leaves[li].kind {
            case .count: return Double(Int(abs(v).truncatingRemainder(dividingBy: 1e6)))
            case .boolean: return (i + seed) % 2 == 0 ? 1 : 0
            default: return v
            }
        }
    }

    /// What a value should read back as: floats lose what a float32 cannot hold, times keep milliseconds.
    private func expected(_ v: Double, _ kind: LeafKind) -> Double {
        switch kind {
        case .quantity(.float32): return Double(Float(v))
        default: return v
        }
    }

    func testEveryScalarOutputRoundTripsThroughJSONAndBinary() throws {
        for spec in OutputCatalogue.all(options) where spec.binaryEncoding == nil {
            let layout = try ObservationLayout(record: spec.record, outputName: spec.outputName)
            let reader = try RecordReader(record: spec.record, encoding: .default(for: spec.record))
            for seed in 0..<4 {
                let v = values(for: layout, seed: seed)
                let time = 1_773_853_535.951 + Double(seed)
                var decoded: [SWERecordValue] = []
                for format in ScalarFormat.allCases {
                    let out = ByteBuffer()
                    try ObservationEncoder(spec: spec, format: format, foiID: "f").encode(time: time, values: v, into: out)
                    let r = reader.decodeJSON(out.array)
                    XCTAssertNil(r.error, "\(spec.outputName) \(format): \(String(describing: r.error))")
                    decoded += r.records
                }
                let bin = ByteBuffer()
                try BinaryScalarEncoder(layout: layout, encoding: .default(for: spec.record)).encode(time: time, values: v, into: bin)
                let rb = reader.decodeBinary(bin.array)
                XCTAssertNil(rb.error)
                decoded += rb.records
                XCTAssertEqual(decoded.count, 3, spec.outputName)

                for record in decoded {
                    XCTAssertEqual(record.fields.map(\.path), layout.leaves.map(\.path), spec.outputName)
                    XCTAssertEqual(record["/time"]?.double, time, spec.outputName)
                    for (i, li) in layout.valueLeaves.enumerated() {
                        let leaf = layout.leaves[li]
                        let got = try XCTUnwrap(record[leaf.path]?.double, "\(spec.outputName)\(leaf.path)")
                        XCTAssertEqual(
                            got.bitPattern, expected(v[i], leaf.kind).bitPattern,
                            "\(spec.outputName)\(leaf.path): \(got) vs \(v[i])")
                    }
                }
                // The three forms decode to identical records.
                XCTAssertEqual(decoded[0].fields.map(\.value), decoded[1].fields.map(\.value))
                XCTAssertEqual(decoded[1].fields.map(\.value), decoded[2].fields.map(\.value))
            }
        }
    }

    func testSpecialValuesRoundTrip() throws {
        let spec = OutputCatalogue.gps(options)
        let reader = try RecordReader(record: spec.record)
        for format in ScalarFormat.allCases {
            let out = ByteBuffer()
            try ObservationEncoder(spec: spec, format: format).encode(time: 1, values: [.nan, .infinity, -.infinity], into: out)
            let r = try XCTUnwrap(reader.decodeJSON(out.array).records.first)
            XCTAssertTrue(r["/location/lat"]?.double?.isNaN ?? false)
            XCTAssertEqual(r["/location/lon"]?.double, .infinity)
            XCTAssertEqual(r["/location/alt"]?.double, -.infinity)
        }
    }

    func testOMBatchDecodesToEveryRecordInOrder() throws {
        let spec = OutputCatalogue.barometer(options)
        let enc = try ObservationEncoder(spec: spec, format: .omJSON)
        let out = ByteBuffer()
        ObservationEncoder.beginBatch(out)
        for i in 0..<50 {
            if i > 0 { ObservationEncoder.batchSeparator(out) }
            try enc.encode(time: 1000 + Double(i) * 0.25, values: [1013.25 - Double(i), Double(i)], into: out)
        }
        ObservationEncoder.endBatch(out)
        let r = try RecordReader(record: spec.record).decodeJSON(out.array)
        XCTAssertNil(r.error)
        XCTAssertEqual(r.records.count, 50)
        XCTAssertEqual(r.records.map { $0["/time"]?.double }, (0..<50).map { 1000 + Double($0) * 0.25 })
        XCTAssertEqual(r.records.last?["/pressure"]?.double, 1013.25 - 49)
    }

    func testVideoRecordsRoundTripThroughTheBinaryReader() throws {
        let spec = OutputCatalogue.video(options)
        let reader = try RecordReader(record: spec.record, encoding: spec.binaryEncoding)
        let frames: [[UInt8]] = [[0, 0, 0, 1, 0x67, 0x42, 0xc0, 0x1e], [], Array(repeating: 0xab, count: 70_000)]
        let out = ByteBuffer()
        for (i, f) in frames.enumerated() {
            try f.withUnsafeBytes { try VideoRecord.write(time: 1_773_853_535.951 + Double(i) / 25, frame: $0, to: out) }
        }
        let r = reader.decodeBinary(out.array)
        XCTAssertNil(r.error)
        XCTAssertEqual(r.records.count, 3)
        for (i, f) in frames.enumerated() {
            XCTAssertEqual(r.records[i]["/time"], .time(1_773_853_535.951 + Double(i) / 25))
            XCTAssertEqual(r.records[i]["/img"], .block(f))
        }
    }
}
