import Foundation
import OSHCore
import XCTest

/// O&M JSON, swe+json and swe+binary observations against the report's examples and edge cases.
final class ObservationEncoderTests: XCTestCase {
    private let o = androidOptions()

    private func encode(_ spec: OutputSpec, _ format: ScalarFormat, time: String, _ values: [Double], foi: String? = nil) throws -> String {
        let enc = try ObservationEncoder(spec: spec, format: format, foiID: foi)
        let out = ByteBuffer()
        try enc.encode(time: try XCTUnwrap(ISOTime.parse(time)), values: values, into: out)
        return out.string
    }

    func testOMJSONMatchesAndroidObservations() throws {
        XCTAssertEqual(
            try encode(
                OutputCatalogue.gps(o), .omJSON, time: "2026-03-18T17:05:35.951Z",
                [31.2025068, -89.18142746, 58.38763427734375], foi: "0k0g"),
            compactJSON(try fixture("android/obs-om-gps.json")))
        XCTAssertEqual(
            try encode(
                OutputCatalogue.quatOrientation(o), .omJSON, time: "2026-03-18T17:05:36.051Z",
                [0.012345, -0.045678, 0.70711, 0.70543]),
            compactJSON(try fixture("android/obs-om-quat.json")))
        XCTAssertEqual(
            try encode(
                OutputCatalogue.eulerOrientation(o), .omJSON, time: "2026-03-18T17:05:36.051Z",
                [87.5, -3.25, 1.5]),
            compactJSON(try fixture("android/obs-om-euler.json")))
    }

    func testSWEJSONMatchesReportRecords() throws {
        let cases: [(OutputSpec, String, [Double], String)] = [
            (OutputCatalogue.gps(o), "2026-03-18T17:05:35.951Z", [31.2025068, -89.18142746, 58.38763427734375], "obs-swe-gps.json"),
            (OutputCatalogue.quatOrientation(o), "2026-03-18T17:05:36.051Z", [0.012345, -0.045678, 0.70711, 0.70543], "obs-swe-quat.json"),
            (OutputCatalogue.eulerOrientation(o), "2026-03-18T17:05:36.051Z", [87.5, -3.25, 1.5], "obs-swe-euler.json"),
            (OutputCatalogue.barometer(o), "2026-03-18T17:05:36.000Z", [1013.25, 0.42], "obs-swe-barometer.json"),
            (OutputCatalogue.audioLevel(o), "2026-03-18T17:05:36.100Z", [-42.5, -30.1], "obs-swe-audio.json"),
        ]
        for (spec, t, v, file) in cases {
            XCTAssertEqual(try encode(spec, .sweJSON, time: t, v), compactJSON(try fixture("android/\(file)")), file)
        }
    }

    func testFloatFieldsPrintLikeJavaFloatToString() throws {
        // quat coordinates are float32 on Android: 0.1 + 0.2 prints as the Float it becomes, not 0.30000000000000004.
        let s = try encode(OutputCatalogue.quatOrientation(o), .sweJSON, time: "2026-01-01T00:00:00Z", [0.1 + 0.2, 1e-7, -0.0, 1])
        XCTAssertEqual(s, "{\"time\":\"2026-01-01T00:00:00.000Z\",\"orient\":{\"qx\":0.3,\"qy\":1e-07,\"qz\":-0.0,\"q0\":1.0}}")
    }

    func testSpecialValuesUseTheNodeStrings() throws {
        let s = try encode(OutputCatalogue.gps(o), .sweJSON, time: "2026-01-01T00:00:00.5Z", [.nan, .infinity, -.infinity])
        XCTAssertEqual(s, "{\"time\":\"2026-01-01T00:00:00.500Z\",\"location\":{\"lat\":\"NaN\",\"lon\":\"+INF\",\"alt\":\"-INF\"}}")
        // A double too large for a float32 field becomes +INF there, as Java's (float) cast does.
        let q = try encode(OutputCatalogue.quatOrientation(o), .sweJSON, time: "2026-01-01T00:00:00Z", [1e300, -1e300, .nan, 0])
        XCTAssertTrue(q.contains("\"qx\":\"+INF\",\"qy\":\"-INF\",\"qz\":\"NaN\""), q)
    }

    func testExtremeDoublesRoundTrip() throws {
        let values = [-0.0, 5e-324, 1.7976931348623157e308, 2.2250738585072014e-308, 123456789012345680.0, 1e-5]
        for v in values {
            let s = try encode(OutputCatalogue.barometer(o), .sweJSON, time: "2026-01-01T00:00:00Z", [v, 0])
            let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(s.utf8)) as? [String: Any])
            let back = try XCTUnwrap(json["pressure"] as? NSNumber).doubleValue
            XCTAssertEqual(back.bitPattern, v.bitPattern, "\(v) → \(s)")
        }
    }

    func testCountsAndBooleans() throws {
        let health = OutputCatalogue.deviceHealth(o)
        let s = try encode(health, .sweJSON, time: "2026-01-01T00:00:00Z", [48.3, 1, 0, 0x50005, 0.25, 812.5, 61.0, 17, .nan, 3600.5, 1])
        XCTAssertEqual(
            s,
            "{\"time\":\"2026-01-01T00:00:00.000Z\",\"cpuTemperature\":48.3,\"underVoltage\":true,\"throttled\":false,"
                + "\"throttleFlags\":327685,\"loadAverage\":0.25,\"memoryAvailable\":812.5,\"diskFree\":61.0,"
                + "\"queueDepth\":17,\"droppedCount\":0,\"uptime\":3600.5,\"clockSynchronized\":true}")
    }

    func testOMBatchIsAJSONArray() throws {
        let enc = try ObservationEncoder(spec: OutputCatalogue.barometer(o), format: .omJSON)
        let out = ByteBuffer()
        ObservationEncoder.beginBatch(out)
        for i in 0..<3 {
            if i > 0 { ObservationEncoder.batchSeparator(out) }
            try enc.encode(time: 1_773_853_536 + Double(i), values: [1013.25 + Double(i), 0.5], into: out)
        }
        ObservationEncoder.endBatch(out)
        let arr = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(out.string.utf8)) as? [[String: Any]])
        XCTAssertEqual(arr.count, 3)
        XCTAssertEqual(arr[2]["phenomenonTime"] as? String, "2026-03-18T17:05:38.000Z")
        XCTAssertEqual((arr[1]["result"] as? [String: Any])?["pressure"] as? Double, 1014.25)
    }

    func testWrongValueCountIsAnError() throws {
        let enc = try ObservationEncoder(spec: OutputCatalogue.gps(o), format: .omJSON)
        XCTAssertThrowsError(try enc.encode(time: 0, values: [1, 2], into: ByteBuffer())) { e in
            XCTAssertEqual(e as? EncoderError, .valueCount(output: "gps_data", expected: 3, actual: 2))
        }
    }

    func testFOICanChangeAfterReRegistration() throws {
        let enc = try ObservationEncoder(spec: OutputCatalogue.barometer(o), format: .omJSON, foiID: "a\"b")
        let out = ByteBuffer()
        try enc.encode(time: 0, values: [1, 2], into: out)
        XCTAssertTrue(out.string.hasPrefix("{\"foi@id\":\"a\\\"b\",\"phenomenonTime\":\"1970-01-01T00:00:00.000Z\""), out.string)
        enc.setFOI(nil)
        out.reset()
        try enc.encode(time: 0, values: [1, 2], into: out)
        XCTAssertTrue(out.string.hasPrefix("{\"phenomenonTime\":"))
    }

    func testNonFiniteTimeIsNull() throws {
        XCTAssertEqual(
            try encode(OutputCatalogue.barometer(o), .sweJSON, time: "2026-01-01T00:00:00Z", [1, 2])
                .prefix(9), "{\"time\":\"")
        let enc = try ObservationEncoder(spec: OutputCatalogue.barometer(o), format: .sweJSON)
        let out = ByteBuffer()
        try enc.encode(time: .nan, values: [1, 2], into: out)
        XCTAssertEqual(out.string, "{\"time\":null,\"pressure\":1.0,\"relativeAltitude\":2.0}")
    }

    // MARK: swe+binary

    func testVideoRecordMatchesReportHex() throws {
        let out = ByteBuffer()
        try VideoRecord.writeHeader(time: 1_773_853_535.951, frameLength: 75003, to: out)
        XCTAssertEqual(out.array, [0x41, 0xda, 0x6e, 0xb6, 0xd7, 0xfc, 0xdd, 0x2f, 0x00, 0x01, 0x24, 0xfb])
        let frame: [UInt8] = [0, 0, 0, 1, 0x67, 0x42]
        out.reset()
        try frame.withUnsafeBytes { try VideoRecord.write(time: 1_773_853_535.951, frame: $0, to: out) }
        XCTAssertEqual(out.count, 12 + frame.count)
        XCTAssertEqual(Array(out.array[8..<12]), [0, 0, 0, 6])
        XCTAssertEqual(Array(out.array[12...]), frame)
    }

    func testBinaryScalarEncodingFollowsMemberTable() throws {
        let spec = OutputCatalogue.quatOrientation(o)
        let layout = try ObservationLayout(record: spec.record, outputName: spec.outputName)
        let enc = try BinaryScalarEncoder(layout: layout, encoding: .default(for: spec.record))
        let out = ByteBuffer()
        enc.encode(time: 1.5, values: [1, 0, 0, 0], into: out)
        // time double + four float32
        XCTAssertEqual(out.count, 8 + 4 * 4)
        XCTAssertEqual(Array(out.array[0..<8]), [0x3f, 0xf8, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(Array(out.array[8..<12]), [0x3f, 0x80, 0, 0])
    }

    func testTextLeavesAreRefusedForScalarEncoding() {
        var spec = OutputCatalogue.barometer(o)
        spec.record.kind = .record(spec.record.children + [DataComponent(.text(Text()), name: "note")])
        XCTAssertThrowsError(try ObservationEncoder(spec: spec, format: .omJSON)) { e in
            XCTAssertEqual(e as? EncoderError, .unsupportedLeaf(output: "barometer", path: "/note"))
        }
    }
}

final class ISOTimeTests: XCTestCase {
    func testWriteAndParse() {
        XCTAssertEqual(ISOTime.string(epochSeconds: 0), "1970-01-01T00:00:00.000Z")
        XCTAssertEqual(ISOTime.string(epochSeconds: 1_773_853_535.951), "2026-03-18T17:05:35.951Z")
        XCTAssertEqual(ISOTime.string(epochSeconds: 951_782_400), "2000-02-29T00:00:00.000Z")
        XCTAssertEqual(ISOTime.string(epochSeconds: -1), "1969-12-31T23:59:59.000Z")
        XCTAssertEqual(ISOTime.string(epochSeconds: 4_102_444_799.9996), "2100-01-01T00:00:00.000Z")
        XCTAssertEqual(ISOTime.parse("2026-03-18T17:05:35.951Z"), 1_773_853_535.951)
        XCTAssertEqual(ISOTime.parse("2026-03-18T19:05:35.951+02:00"), 1_773_853_535.951)
        XCTAssertEqual(ISOTime.parse("2026-03-18T17:05:35Z"), 1_773_853_535)
        XCTAssertNil(ISOTime.parse("2026-03-18T17:05:35"), "a zone is required, as on the node")
        XCTAssertNil(ISOTime.parse("2026-13-18T17:05:35Z"))
        XCTAssertNil(ISOTime.parse("garbage"))
        XCTAssertEqual(ISOTime.string(epochSeconds: .nan), "")
    }

    func testEveryMillisecondOfADayRoundTrips() {
        var t = 1_773_792_000.0
        for _ in 0..<5000 {
            t += 17.281
            let ms = (t * 1000).rounded() / 1000
            XCTAssertEqual(ISOTime.parse(ISOTime.string(epochSeconds: t)), ms)
        }
    }
}
