// Size (~700 lines): one test per wire form and leaf kind of the record reader, each short.
import Foundation
import OSHCore
import XCTest

/// The read side: JSON parser, schema decoder, record reader (JSON, O&M, binary).
final class DecodingTests: XCTestCase {
    // MARK: - Helpers

    private let uid = "urn:osh:android:7ae57419dd427e4c:droid2"

    private func parse(_ s: String, file: StaticString = #filePath, line: UInt = #line) -> JSONValue {
        do throws(JSONParseError) { return try JSONValue.parse(s) } catch {
            XCTFail("\(error)", file: file, line: line)
            return .null
        }
    }

    private func parseError(_ s: String) -> JSONParseError? {
        parseError(Array(s.utf8))
    }

    private func parseError(_ bytes: [UInt8]) -> JSONParseError? {
        do throws(JSONParseError) { _ = try JSONValue.parse(bytes); return nil } catch { return error }
    }

    private func decodeError(_ body: () throws -> Void, file: StaticString = #filePath, line: UInt = #line) -> SWEDecodingError? {
        do { try body(); return nil } catch let e as SWEDecodingError { return e } catch {
            XCTFail("not a SWEDecodingError: \(error)", file: file, line: line)
            return nil
        }
    }

    private func schema(_ s: String, file: StaticString = #filePath, line: UInt = #line) -> DatastreamSchema? {
        do throws(SWEDecodingError) { return try SchemaDecoder.datastreamSchema(json: Array(s.utf8)) } catch {
            XCTFail("\(error)", file: file, line: line)
            return nil
        }
    }

    private func reader(
        _ record: DataComponent, _ encoding: BinaryEncoding? = nil,
        file: StaticString = #filePath, line: UInt = #line
    ) -> RecordReader? {
        do throws(SWEDecodingError) { return try RecordReader(record: record, encoding: encoding) } catch {
            XCTFail("\(error)", file: file, line: line)
            return nil
        }
    }

    private func bytes(_ fill: (ByteBuffer) -> Void) -> [UInt8] {
        let b = ByteBuffer()
        fill(b)
        return b.array
    }

    // The Android GPS record as the node stores it (node-added PhenomenonTime first).
    private var gpsRecord: DataComponent {
        let lat = DataComponent(
            .quantity(Quantity(uom: .code("deg"), axisID: "Lat")), name: "lat",
            definition: SWE.property("GeodeticLatitude"), label: "Geodetic Latitude")
        let lon = DataComponent(
            .quantity(Quantity(uom: .code("deg"), axisID: "Lon")), name: "lon",
            definition: SWE.property("Longitude"), label: "Longitude")
        let alt = DataComponent(
            .quantity(Quantity(uom: .code("m"), axisID: "h")), name: "alt",
            definition: SWE.property("HeightAboveEllipsoid"), label: "Ellipsoidal Height",
            description: "Altitude above WGS84 ellipsoid")
        let location = DataComponent(
            .vector(
                Vector(
                    referenceFrame: SWE.epsg4979, localFrame: uid + "#LOCAL_FRAME",
                    coordinates: [lat, lon, alt])),
            name: "location", definition: SWE.property("LocationVector"))
        return DataComponent(
            .record([SWE.phenomenonTimeField(), location]), name: "gps_data",
            definition: SWE.property("Location"))
    }

    private var cameraRecord: DataComponent {
        func channel(_ n: String, _ d: String) -> DataComponent {
            DataComponent(.count(Count()), name: n, definition: SWE.property(d))
        }
        let pixel = DataComponent(
            .record([
                channel("red", "RedChannel"), channel("green", "GreenChannel"),
                channel("blue", "BlueChannel"),
            ]), name: "pixel")
        let width = DataComponent(.count(Count(axisID: "X", value: 640)), name: "elementCount", definition: SWE.property("GridWidth"))
        let row = DataComponent(.array(DataArray(elementCount: .inline(width), elementType: pixel)), name: "row")
        let height = DataComponent(.count(Count(axisID: "Y", value: 480)), name: "elementCount", definition: SWE.property("GridHeight"))
        let img = DataComponent(
            .array(DataArray(elementCount: .inline(height), elementType: row)), name: "img",
            definition: SWE.property("RasterImage"))
        return DataComponent(.record([SWE.samplingTimeField(), img]), name: "camera0_H264", definition: SWE.property("VideoFrame"))
    }

    private let cameraEncoding = BinaryEncoding(members: [
        .component(ref: "/time", dataType: .double),
        .block(ref: "/img", compression: "H264"),
    ])

    // The Android gps_data resultSchema (no time field), as the phone registers it and the node's om+json view returns it.
    private let gpsResultSchema = """
        {"type":"DataRecord","name":"gps_data","definition":"http://sensorml.com/ont/swe/property/Location","fields":[
          {"type":"Vector","name":"location","definition":"http://sensorml.com/ont/swe/property/LocationVector",
           "referenceFrame":"http://www.opengis.net/def/crs/EPSG/0/4979","localFrame":"urn:osh:android:7ae57419dd427e4c:droid2#LOCAL_FRAME",
           "coordinates":[
            {"type":"Quantity","name":"lat","definition":"http://sensorml.com/ont/swe/property/GeodeticLatitude","label":"Geodetic Latitude","axisID":"Lat","uom":{"code":"deg"}},
            {"type":"Quantity","name":"lon","definition":"http://sensorml.com/ont/swe/property/Longitude","label":"Longitude","axisID":"Lon","uom":{"code":"deg"}},
            {"type":"Quantity","name":"alt","definition":"http://sensorml.com/ont/swe/property/HeightAboveEllipsoid","label":"Ellipsoidal Height","description":"Altitude above WGS84 ellipsoid","axisID":"h","uom":{"code":"m"}}]}]}
        """

    private let phenomenonTimeJSON = """
        {"type":"Time","name":"time","definition":"http://www.opengis.net/def/property/OGC/0/PhenomenonTime","label":"Phenomenon Time","referenceFrame":"http://www.opengis.net/def/trs/BIPM/0/UTC","uom":{"href":"http://www.opengis.net/def/uom/ISO-8601/0/Gregorian"}}
        """

    // MARK: - JSON parser

    func testParserKeepsMemberOrderAndDuplicates() {
        let v = parse(#" { "b" : 1 , "a" : [true, false, null, "x"], "b": 2 } "#)
        XCTAssertEqual(v.objectKeys, ["b", "a", "b"])
        XCTAssertEqual(v["b"]?.int, 1, "subscript returns the first match")
        XCTAssertEqual(v["a"]?.array?.count, 4)
        XCTAssertEqual(v["a"]?[0]?.bool, true)
        XCTAssertEqual(v["a"]?[2]?.isNull, true)
        XCTAssertEqual(v["a"]?[3]?.string, "x")
        XCTAssertNil(v["a"]?[4])
        XCTAssertNil(v["zz"])
        XCTAssertEqual(parse("{}"), .object([]))
        XCTAssertEqual(parse("[]"), .array([]))
        XCTAssertEqual(parse("\"\""), .string(""))
    }

    func testParserEscapesAndSurrogatePairs() {
        XCTAssertEqual(parse(#""q\"b\\s\/\b\f\n\r\t""#).string, "q\"b\\s/\u{08}\u{0C}\n\r\t")
        XCTAssertEqual(parse(#""\u00e9\u00E9 caf\u00e9 \u0000""#).string, "éé café \u{0}")
        XCTAssertEqual(parse(#""\ud83d\ude00 and \uD834\uDD1E""#).string, "😀 and 𝄞")
        XCTAssertEqual(parse("\"raw é 😀\"").string, "raw é 😀")
        XCTAssertEqual(parse(#"{"k\u0041":1}"#).objectKeys, ["kA"])

        XCTAssertEqual(parseError(#""\ud83d""#)?.expected, "'\\u' with a low surrogate after a high surrogate")
        XCTAssertEqual(parseError(#""\ud83d\u0041""#)?.expected, "a low surrogate \\uDC00-\\uDFFF")
        XCTAssertEqual(parseError(#""\ude00""#)?.expected, "a high surrogate before a low surrogate")
        XCTAssertEqual(parseError(#""\x""#), JSONParseError(offset: 2, expected: "a valid escape character"))
        XCTAssertEqual(parseError(#""\u12G4""#)?.expected, "four hex digits")
        XCTAssertEqual(parseError("\"a\nb\"")?.offset, 2, "raw control characters must be escaped")
        XCTAssertEqual(parseError("\"abc"), JSONParseError(offset: 4, expected: "'\"' to close the string"))
        XCTAssertEqual(parseError([0x22, 0xC3, 0x28, 0x22])?.expected, "valid UTF-8 in the string")
        XCTAssertEqual(parseError([0x22, 0xED, 0xA0, 0x80, 0x22])?.expected, "valid UTF-8 in the string", "UTF-8 surrogates are invalid")
    }

    func testParserNumbers() {
        let negZero = parse("-0.0")
        XCTAssertEqual(negZero.double, 0)
        XCTAssertEqual(negZero.double?.sign, .minus)
        if case .number(_, let raw) = negZero { XCTAssertEqual(raw, "-0.0") } else { XCTFail() }
        XCTAssertEqual(parse("1e-05").double, 0.00001)
        XCTAssertEqual(parse("5e-324").double, Double.leastNonzeroMagnitude)
        XCTAssertEqual(parse("1.7976931348623157e308").double, Double.greatestFiniteMagnitude)
        XCTAssertEqual(parse("-12.5E+2").double, -1250)
        XCTAssertEqual(parse("31.2025068").double, 31.2025068)
        XCTAssertEqual(parse("1e400").double, .infinity, "out of range saturates; the literal is kept")
        XCTAssertEqual(parse("9007199254740993").int, 9_007_199_254_740_993, "integers come from the literal, not the Double")
        XCTAssertEqual(parse("4.8e2").int, 480)
        XCTAssertNil(parse("1.5").int)
        XCTAssertEqual(parse("1"), parse("1.0"), "numbers compare by value")
        for bad in ["01", "1.", ".5", "-", "+1", "1e", "1e+", "0x10", "NaN", "Infinity", "-Infinity", "1.0.0", "--1"] {
            XCTAssertNotNil(parseError(bad), bad)
        }
        XCTAssertEqual(parseError("01"), JSONParseError(offset: 1, expected: "end of input"))
    }

    func testParserDepthLimitAndHostileInput() {
        let ok = String(repeating: "[", count: 256) + String(repeating: "]", count: 256)
        XCTAssertNotNil(try? JSONValue.parse(ok))
        let deep = String(repeating: "[", count: 257) + String(repeating: "]", count: 257)
        XCTAssertEqual(parseError(deep), JSONParseError(offset: 256, expected: "nesting depth at most 256"))
        XCTAssertEqual(parseError(String(repeating: "{\"a\":", count: 100_000))?.expected, "nesting depth at most 256")
        XCTAssertNotNil(parseError(String(repeating: "[", count: 1_000_000)), "a megabyte of '[' is an error, not a crash")
        XCTAssertEqual(try? JSONValue.parse("[[1]]", maxDepth: 1), nil)

        // Every prefix of a valid document fails cleanly; every byte flip either parses or fails cleanly.
        let doc = Array(#"{"a":[1,-2.5e3,"x\u00e9\ud83d\ude00",true,null,{"b":false}],"c":"\\"}"#.utf8)
        for n in 0..<doc.count { XCTAssertNotNil(parseError(Array(doc[..<n])), "prefix \(n)") }
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            var d = doc
            d[Int.random(in: 0..<d.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            _ = parseError(d)
        }
        for _ in 0..<500 {
            _ = parseError((0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        }
    }

    func testParserTrailingGarbageAndStructureErrors() {
        XCTAssertEqual(parseError("{} x"), JSONParseError(offset: 3, expected: "end of input"))
        XCTAssertEqual(parseError("{}{}"), JSONParseError(offset: 2, expected: "end of input"))
        XCTAssertEqual(parseError(""), JSONParseError(offset: 0, expected: "a value"))
        XCTAssertEqual(parseError("   "), JSONParseError(offset: 3, expected: "a value"))
        XCTAssertEqual(parseError("[1,]"), JSONParseError(offset: 3, expected: "a value"))
        XCTAssertEqual(parseError(#"{"a":1,}"#), JSONParseError(offset: 7, expected: "a string key"))
        XCTAssertEqual(parseError(#"{"a" 1}"#), JSONParseError(offset: 5, expected: "':'"))
        XCTAssertEqual(parseError(#"{"a":1 "b":2}"#), JSONParseError(offset: 7, expected: "',' or '}'"))
        XCTAssertEqual(parseError("[1 2]"), JSONParseError(offset: 3, expected: "',' or ']'"))
        XCTAssertEqual(parseError("tru"), JSONParseError(offset: 0, expected: "'true'"))
        XCTAssertEqual(parseError("nul1"), JSONParseError(offset: 0, expected: "'null'"))
        XCTAssertEqual(parseError("\u{FEFF}{}")?.offset, 0, "no BOM")
        XCTAssertEqual(parseError("{} x")?.description, "invalid JSON at byte 3: expected end of input")
        XCTAssertEqual(parse(" \t\r\n[ 1 ]\n"), .array([.number(1, raw: "1")]))
    }

    // MARK: - Schema decoder

    func testDecodesAndroidGPSOMJSONSchemaAndInsertsTheNodeTime() throws {
        let body = "{\"obsFormat\":\"application/om+json\",\"resultSchema\":\(gpsResultSchema)}"
        let s = try XCTUnwrap(schema(body))
        XCTAssertEqual(s.obsFormat, "application/om+json")
        XCTAssertTrue(s.insertedTime)
        XCTAssertNil(s.encoding)
        XCTAssertEqual(s.record, gpsRecord)
        XCTAssertEqual(SchemaWalker.leaves(of: s.record).map(\.path), ["/time", "/location/lat", "/location/lon", "/location/alt"])
    }

    func testDecodesGPSSweJSONSchemaWithTimeAndAnyKeyOrder() throws {
        // The swe+json view carries the time field; keys deliberately out of osh-core's order.
        let record = gpsResultSchema.replacingOccurrences(of: "\"fields\":[", with: "\"fields\":[\(phenomenonTimeJSON),")
        let body = """
            {"recordEncoding":{"type":"JSONEncoding"},"recordSchema":\(record),"obsFormat":"application/swe+json"}
            """
        let s = try XCTUnwrap(schema(body))
        XCTAssertFalse(s.insertedTime)
        XCTAssertNil(s.encoding, "a JSON encoding carries nothing the reader needs")
        XCTAssertEqual(s.record, gpsRecord)

        let shuffled = """
            {"uom":{"code":"m"},"axisID":"h","label":"L","name":"alt","type":"Quantity","value":"+Infinity","constraint":{"intervals":[["-Infinity",9000]],"values":["NaN"]}}
            """
        let c = try SchemaDecoder.component(json: Array(shuffled.utf8))
        guard case .quantity(var got) = c.kind else { return XCTFail() }
        XCTAssertEqual(got.constraint?.values.first?.isNaN, true)
        got.constraint?.values = []
        var shown = c
        shown.kind = .quantity(got)
        let q = Quantity(
            uom: .code("m"), axisID: "h", constraint: AllowedValues(intervals: [ClosedInterval(-.infinity, 9000)]), value: .infinity)
        XCTAssertEqual(shown, DataComponent(.quantity(q), name: "alt", label: "L"))
    }

    func testDecodesAndroidCameraSweBinarySchema() throws {
        let body = """
            {"obsFormat":"application/swe+binary","recordSchema":{"type":"DataRecord","name":"camera0_H264","definition":"http://sensorml.com/ont/swe/property/VideoFrame","fields":[
              {"type":"Time","name":"time","definition":"http://www.opengis.net/def/property/OGC/0/SamplingTime","label":"Sampling Time","referenceFrame":"http://www.opengis.net/def/trs/BIPM/0/UTC","uom":{"href":"http://www.opengis.net/def/uom/ISO-8601/0/Gregorian"}},
              {"type":"DataArray","name":"img","definition":"http://sensorml.com/ont/swe/property/RasterImage",
               "elementCount":{"type":"Count","name":"elementCount","definition":"http://sensorml.com/ont/swe/property/GridHeight","axisID":"Y","value":480},
               "elementType":{"type":"DataArray","name":"row",
                 "elementCount":{"type":"Count","name":"elementCount","definition":"http://sensorml.com/ont/swe/property/GridWidth","axisID":"X","value":640},
                 "elementType":{"type":"DataRecord","name":"pixel","fields":[
                   {"type":"Count","name":"red","definition":"http://sensorml.com/ont/swe/property/RedChannel"},
                   {"type":"Count","name":"green","definition":"http://sensorml.com/ont/swe/property/GreenChannel"},
                   {"type":"Count","name":"blue","definition":"http://sensorml.com/ont/swe/property/BlueChannel"}]}}}]},
             "recordEncoding":{"type":"BinaryEncoding","byteOrder":"bigEndian","byteEncoding":"raw","members":[
              {"type":"Component","ref":"/time","dataType":"http://www.opengis.net/def/dataType/OGC/0/double"},
              {"type":"Block","ref":"/img","compression":"H264"}]}}
            """
        let s = try XCTUnwrap(schema(body))
        XCTAssertEqual(s.obsFormat, "application/swe+binary")
        XCTAssertFalse(s.insertedTime)
        XCTAssertEqual(s.record, cameraRecord)
        XCTAssertEqual(s.encoding, cameraEncoding)
        XCTAssertNoThrow(try s.reader())
    }

    /// Our own bodies, with the labels, definitions and `encoding` SWE Common 3 asks for, read back
    /// to the records we built (Android's bodies without them are read by the tests above).
    func testDecodesOurBodiesWithTheAddedMembers() throws {
        let o = OutputOptions(uid: "urn:osh:rpi:10000000abcdef12", imuChip: "ICM20948", magnetometerChip: "AK09916")
        for spec in OutputCatalogue.all(o) {
            for format in ScalarFormat.allCases {
                let body = try JSONValue.parse(DatastreamBody.string(spec, systemLabel: "Pi", scalarFormat: format))
                let s = try SchemaDecoder.datastreamSchema(try XCTUnwrap(body["schema"]), path: "/schema")
                let expected: DataComponent
                if spec.binaryEncoding != nil {
                    expected = spec.record
                } else if format == .omJSON {
                    expected = SchemaDecoder.withObservationTime(DatastreamBody.resultSchema(spec.record)).0
                } else {
                    expected = DatastreamBody.recordSchema(spec)
                }
                XCTAssertEqual(SWEJSON.string(s.record), SWEJSON.string(expected), "\(spec.outputName) \(format)")
                XCTAssertEqual(s.encoding, spec.binaryEncoding, "\(spec.outputName) \(format)")
                XCTAssertNoThrow(try s.reader(), "\(spec.outputName) \(format)")
            }
        }
    }

    /// A server that follows CS API Part 2 sends `encoding` only; it is read as `recordEncoding` is.
    func testReadsTheStandardEncodingMemberWhenRecordEncodingIsAbsent() throws {
        let record = #"{"type":"DataRecord","fields":[{"type":"Quantity","name":"q","label":"Q","definition":"urn:q","uom":{"code":"m"}}]}"#
        let s = try XCTUnwrap(
            schema(
                """
                {"obsFormat":"application/swe+binary","recordSchema":\(record),"encoding":{"type":"BinaryEncoding","byteOrder":"littleEndian",
                 "byteEncoding":"raw","members":[{"type":"Component","ref":"/q","dataType":"http://www.opengis.net/def/dataType/OGC/0/float32"}]}}
                """))
        XCTAssertEqual(s.encoding, BinaryEncoding(bigEndian: false, members: [.component(ref: "/q", dataType: .float32)]))
        XCTAssertEqual(SchemaWalker.leaves(of: s.record).map(\.kind), [.quantity(.float32)])
        // With both, osh-core's member wins, as on the node.
        let both = try XCTUnwrap(
            schema(
                """
                {"obsFormat":"application/swe+binary","recordSchema":\(record),
                 "recordEncoding":{"type":"BinaryEncoding","members":[{"type":"Component","ref":"/q","dataType":"http://www.opengis.net/def/dataType/OGC/0/double"}]},
                 "encoding":{"type":"BinaryEncoding","members":[{"type":"Component","ref":"/q","dataType":"http://www.opengis.net/def/dataType/OGC/0/float32"}]}}
                """))
        XCTAssertEqual(both.encoding?.members, [.component(ref: "/q", dataType: .double)])
        let e = decodeError {
            _ = try SchemaDecoder.datastreamSchema(
                json: Array(
                    """
                    {"obsFormat":"application/swe+binary","recordSchema":\(record),"encoding":{"type":"TextEncoding"}}
                    """.utf8))
        }
        XCTAssertEqual(e, .schema(path: "/encoding/type", message: "expected \"BinaryEncoding\", found \"TextEncoding\""))
    }

    func testBinaryEncodingForms() throws {
        let e = try SchemaDecoder.binaryEncoding(
            parse(
                """
                {"members":[{"ref":"/a","type":"Component","dataType":"http://www.opengis.net/def/dataType/OGC/0/float32"},
                            {"type":"Component","ref":"/b","dataType":"http://www.opengis.net/def/dataType/OGC/0/string"},
                            {"type":"Block","ref":"/c","byteLength":16,"paddingBytes-before":0}],
                 "byteEncoding":"base64","byteOrder":"littleEndian","type":"BinaryEncoding"}
                """))
        XCTAssertEqual(
            e,
            BinaryEncoding(
                bigEndian: false, base64: true,
                members: [
                    .component(ref: "/a", dataType: .float32), .component(ref: "/b", dataType: .utf8String),
                    .block(ref: "/c", compression: nil, byteLength: 16),
                ]))
        // The encoding's data types land on the record, as osh-core assigns them.
        let body = """
            {"obsFormat":"application/swe+binary","recordSchema":{"type":"DataRecord","fields":[
              {"type":"Quantity","name":"q","uom":{"code":"m"}},{"type":"Count","name":"n"}]},
             "recordEncoding":{"type":"BinaryEncoding","members":[
              {"type":"Component","ref":"/q","dataType":"http://www.opengis.net/def/dataType/OGC/0/float"},
              {"type":"Component","ref":"/n","dataType":"http://www.opengis.net/def/dataType/OGC/0/unsignedShort"}]}}
            """
        let s = try XCTUnwrap(schema(body))
        XCTAssertEqual(SchemaWalker.leaves(of: s.record).map(\.kind), [.quantity(.float32), .count(.unsignedShort)])
        XCTAssertEqual(s.encoding?.bigEndian, true, "bigEndian is the default byte order")
    }

    func testSchemaErrorsNameTheJSONPath() {
        let fields = #"[{"type":"Quantity","name":"q","uom":{"code":"m"}},{"type":"Foo","name":"x"}]"#
        var e = decodeError {
            _ = try SchemaDecoder.datastreamSchema(
                json: Array(
                    """
                    {"obsFormat":"application/swe+json","recordSchema":{"type":"DataRecord","fields":\(fields)}}
                    """.utf8))
        }
        XCTAssertEqual(e, .schema(path: "/recordSchema/fields/1", message: "unknown component type \"Foo\""))
        XCTAssertEqual(e?.description, "/recordSchema/fields/1: unknown component type \"Foo\"")

        e = decodeError {
            _ = try SchemaDecoder.component(json: Array(#"{"type":"DataRecord","fields":[{"type":"Text","label":5}]}"#.utf8))
        }
        XCTAssertEqual(e, .schema(path: "/fields/0/label", message: "expected a string, found number"))
        e = decodeError { _ = try SchemaDecoder.component(json: Array(#"{"type":"Quantity","name":"q"}"#.utf8)) }
        XCTAssertEqual(e, .schema(path: "", message: "missing \"uom\""))
        e = decodeError { _ = try SchemaDecoder.component(json: Array(#"{"name":"q"}"#.utf8)) }
        XCTAssertEqual(e, .schema(path: "", message: "missing \"type\""))
        e = decodeError { _ = try SchemaDecoder.component(json: Array(#"{"type":"Count","value":1.5}"#.utf8)) }
        XCTAssertEqual(e, .schema(path: "/value", message: "expected an integer, found 1.5"))
        e = decodeError { _ = try SchemaDecoder.component(json: Array(#"{"type":"Boolean","updatable":"yes"}"#.utf8)) }
        XCTAssertEqual(e, .schema(path: "/updatable", message: "expected a boolean, found string"))
        e = decodeError {
            _ = try SchemaDecoder.component(json: Array(#"{"type":"Quantity","uom":{"code":"m"},"constraint":{"intervals":[[1]]}}"#.utf8))
        }
        XCTAssertEqual(e, .schema(path: "/constraint/intervals/0", message: "expected a [min, max] pair"))
        e = decodeError {
            _ = try SchemaDecoder.component(
                json: Array(#"{"type":"DataArray","elementCount":{"type":"Text"},"elementType":{"type":"Boolean"}}"#.utf8))
        }
        XCTAssertEqual(e, .schema(path: "/elementCount", message: "expected a Count, found Text"))
        e = decodeError { _ = try SchemaDecoder.component(json: Array(#"{"type":"QuantityRange"}"#.utf8)) }
        XCTAssertEqual(e, .schema(path: "", message: "unsupported component type \"QuantityRange\""))
        e = decodeError { _ = try SchemaDecoder.component(json: Array("{\"type\":".utf8)) }
        XCTAssertEqual(e, .json(JSONParseError(offset: 8, expected: "a value")))

        let record = #"{"type":"DataRecord","fields":[{"type":"Boolean","name":"b"}]}"#
        e = decodeError {
            _ = try SchemaDecoder.datastreamSchema(
                json: Array(
                    """
                    {"obsFormat":"application/swe+binary","recordSchema":\(record)}
                    """.utf8))
        }
        XCTAssertEqual(e, .schema(path: "", message: "missing \"recordEncoding\" (or \"encoding\") for application/swe+binary"))
        e = decodeError {
            _ = try SchemaDecoder.datastreamSchema(
                json: Array(
                    """
                    {"obsFormat":"application/swe+binary","recordSchema":\(record),"recordEncoding":{"type":"BinaryEncoding","members":[
                     {"type":"Component","ref":"/b","dataType":"http://www.opengis.net/def/dataType/OGC/0/int128"}]}}
                    """.utf8))
        }
        XCTAssertEqual(
            e,
            .schema(
                path: "/recordEncoding/members/0/dataType",
                message: "unsupported data type \"http://www.opengis.net/def/dataType/OGC/0/int128\""))
        e = decodeError { _ = try SchemaDecoder.datastreamSchema(json: Array(#"{"resultSchema":{}}"#.utf8)) }
        XCTAssertEqual(e, .schema(path: "", message: "missing \"obsFormat\""))
    }

    func testEveryComponentKindRoundTripsThroughTheWriter() throws {
        var text = Text(constraint: AllowedTokens(values: ["a", "b"], pattern: "[a-z]+"), value: "a")
        text.simple = SimpleProperties(referenceFrame: "urn:tf", axisID: "T1")
        var category = Category(codeSpace: "http://example.org/codes", constraint: AllowedTokens(values: ["x", "y"]), value: "y")
        category.simple.axisID = "C"
        var boolean = BooleanComponent(value: false)
        boolean.simple.referenceFrame = "urn:bf"
        let count = DataComponent(
            .count(
                Count(
                    axisID: "N", referenceFrame: "urn:cf",
                    constraint: AllowedValues(values: [1, 2], intervals: [ClosedInterval(0, 10)]), value: 7)),
            name: "n", id: "N")
        let time = DataComponent(
            .time(
                Time(
                    uom: .code("s"), referenceFrame: nil, axisID: "t", referenceTime: "1970-01-01T00:00:00Z",
                    localFrame: "#TF", constraint: AllowedValues(intervals: [ClosedInterval(0, .infinity)]))),
            name: "elapsed", definition: SWE.runTime, label: "Run time")
        let quantity = DataComponent(
            .quantity(
                Quantity(
                    uom: .code("m"), axisID: "h", referenceFrame: "urn:qf",
                    constraint: AllowedValues(values: [1.5, -.infinity], intervals: [ClosedInterval(-180, 180)]),
                    value: 2.25)),
            name: "q", definition: SWE.property("Q"), label: "Q", description: "a quantity",
            identifier: "urn:q", updatable: true, optional: false)
        let vector = DataComponent(
            .vector(
                Vector(
                    referenceFrame: SWE.enuFrame, localFrame: "#L",
                    coordinates: [
                        DataComponent(.quantity(Quantity(uom: .code("m/s2"), axisID: "x")), name: "x"),
                        DataComponent(.quantity(Quantity(uom: .code("m/s2"), axisID: "y")), name: "y"),
                    ])), name: "accel", label: "Acceleration")
        let fixedArray = DataComponent(
            .array(
                DataArray(
                    elementCount: .inline(DataComponent(.count(Count(value: 3)), name: "elementCount")),
                    elementType: DataComponent(.quantity(Quantity(uom: .code("Hz"))), name: "f"))), name: "spectrum")
        let linkedArray = DataComponent(
            .array(
                DataArray(
                    elementCount: .href("#N"),
                    elementType: DataComponent(
                        .record([DataComponent(.text(Text()), name: "id"), DataComponent(.boolean(BooleanComponent()), name: "on")]),
                        name: "entry"))), name: "entries")
        let choice = DataComponent(
            .choice(
                DataChoice(items: [
                    DataComponent(.quantity(Quantity(uom: .code("deg"))), name: "rpan"),
                    DataComponent(
                        .record([
                            DataComponent(.quantity(Quantity(uom: .code("deg"))), name: "pan"),
                            DataComponent(.quantity(Quantity(uom: .code("deg"))), name: "tilt"),
                        ]), name: "ptz"),
                ])), name: "cmd", optional: true)
        let all = DataComponent(
            .record([
                SWE.samplingTimeField(), time, quantity, count, DataComponent(.text(text), name: "t"),
                DataComponent(.category(category), name: "c"), DataComponent(.boolean(boolean), name: "b"),
                vector, fixedArray, linkedArray, choice,
                DataComponent(.record([]), name: "empty"),
            ]), name: "all", definition: SWE.property("All"), label: "All kinds", description: "every kind",
            id: "ALL", identifier: "urn:all", updatable: false, optional: false)

        let decoded = try SchemaDecoder.component(json: Array(SWEJSON.string(all).utf8))
        XCTAssertEqual(decoded, all)
        XCTAssertNoThrow(try RecordReader(record: decoded, encoding: .default(for: decoded)))
    }

    func testAndroidFixtureSchemasDecode() throws {
        // The catalogue's golden datastream bodies, when present: every `schema` must decode and build a reader.
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/android")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        var decoded = 0
        defer { if !names.isEmpty { XCTAssertGreaterThan(decoded, 0, "no datastream body found in \(dir.path)") } }
        for name in names.sorted() where name.hasSuffix("-json.json") || name.hasSuffix("-binary.json") {
            let data = try Data(contentsOf: dir.appendingPathComponent(name))
            guard let body = try? JSONValue.parse([UInt8](data)), let schemaJSON = body["schema"] else { continue }
            do throws(SWEDecodingError) {
                let s = try SchemaDecoder.datastreamSchema(schemaJSON, path: "/schema")
                _ = try s.reader()
                XCTAssertEqual(SchemaWalker.leaves(of: s.record).first?.path, "/time", name)
                decoded += 1
            } catch {
                XCTFail("\(name): \(error)")
            }
        }
    }

    // MARK: - Records: swe+json and O&M

    func testSweJSONRecordDecodesToSchemaWalkerPaths() throws {
        let r = try XCTUnwrap(reader(gpsRecord))
        let rec = try r.decodeRecord(
            parse(#"{"time":"2026-03-18T17:05:35.951Z","location":{"lat":31.2025068,"lon":-89.18142746,"alt":58.38763427734375}}"#))
        XCTAssertEqual(rec.fields.map(\.path), SchemaWalker.leaves(of: gpsRecord).map(\.path))
        XCTAssertEqual(rec["/time"], .time(1773853535.951))
        XCTAssertEqual(rec["/location/lat"], .number(31.2025068))
        XCTAssertEqual(rec.doubles, [1773853535.951, 31.2025068, -89.18142746, 58.38763427734375])
        XCTAssertNil(rec.phenomenonTime)
    }

    func testOMObservationsDecodeLikeSweJSON() throws {
        let r = try XCTUnwrap(reader(gpsRecord))
        let swe = try r.decodeRecord(
            parse(#"{"time":"2026-03-18T17:05:35.951Z","location":{"lat":31.2025068,"lon":-89.18142746,"alt":58.38763427734375}}"#))
        // The node's GET form: extra keys before and after, result without the time field.
        let get =
            #"{"id":"0abc","datastream@id":"ds1","foi@id":"0k0g","phenomenonTime":"2026-03-18T17:05:35.951Z","resultTime":"2026-03-18T17:05:36Z","result":{"location":{"lat":31.2025068,"lon":-89.18142746,"alt":58.38763427734375}},"links":[]}"#
        let om = try r.decodeObservation(parse(get))
        XCTAssertEqual(om.fields.map(\.path), swe.fields.map(\.path))
        XCTAssertEqual(om.doubles, swe.doubles)
        XCTAssertEqual(om.phenomenonTime, 1773853535.951)
        XCTAssertEqual(om.resultTime, 1773853536)
        XCTAssertEqual(om.foiID, "0k0g")
        XCTAssertEqual(om.id, "0abc")

        // A result that repeats the time field is accepted; the time still comes from phenomenonTime.
        let repeated = try r.decodeObservation(
            parse(
                #"{"phenomenonTime":"2026-03-18T17:05:35.951Z","result":{"time":"2000-01-01T00:00:00Z","location":{"lat":1,"lon":2,"alt":3}}}"#
            ))
        XCTAssertEqual(repeated.doubles, [1773853535.951, 1, 2, 3])

        // A reader built on the bare resultSchema (no time field) keeps phenomenonTime as metadata only.
        let bare = try SchemaDecoder.component(json: Array(gpsResultSchema.utf8))
        let br = try XCTUnwrap(reader(bare))
        let b = try br.decodeObservation(parse(get))
        XCTAssertEqual(b.fields.map(\.path), ["/location/lat", "/location/lon", "/location/alt"])
        XCTAssertEqual(b.phenomenonTime, 1773853535.951)

        // A binary datastream's O&M view: the node writes a string instead of the result.
        let cam = try XCTUnwrap(reader(cameraRecord, cameraEncoding))
        let v = try cam.decodeObservation(
            parse(#"{"phenomenonTime":"2026-03-18T17:05:35.951Z","result":"Compressed binary result not shown in JSON"}"#))
        XCTAssertEqual(v.fields.map(\.value), [.time(1773853535.951), .absent])

        XCTAssertEqual(
            decodeError { _ = try r.decodeObservation(parse(#"{"result":{}}"#)) },
            .record(path: "", message: "missing \"phenomenonTime\""))
        XCTAssertEqual(
            decodeError { _ = try r.decodeObservation(parse(#"{"phenomenonTime":"2026-03-18T17:05:35","result":{}}"#)) },
            .record(path: "/phenomenonTime", message: "invalid ISO 8601 time \"2026-03-18T17:05:35\""))
    }

    func testJSONCollectionsArraysAndPartialResults() throws {
        let r = try XCTUnwrap(reader(gpsRecord))
        let obs = { (t: String, lat: Int) in
            #"{"phenomenonTime":"\#(t)","result":{"location":{"lat":\#(lat),"lon":0,"alt":0}}}"#
        }
        let page =
            "{\"items\":[\(obs("2026-03-18T17:05:35Z", 1)),\(obs("2026-03-18T17:05:36Z", 2))],\"links\":[{\"rel\":\"next\",\"href\":\"x\"}]}"
        let d = r.decodeJSON(Array(page.utf8))
        XCTAssertNil(d.error)
        XCTAssertEqual(d.records.map(\.doubles), [[1773853535, 1, 0, 0], [1773853536, 2, 0, 0]])

        let sweArray =
            #"[{"time":"2026-03-18T17:05:35Z","location":{"lat":1,"lon":0,"alt":0}},{"time":"2026-03-18T17:05:36Z","location":{"lat":2,"lon":0,"alt":"x"}}]"#
        let partial = r.decodeJSON(Array(sweArray.utf8))
        XCTAssertEqual(partial.records.count, 1, "records before the bad one are kept")
        XCTAssertEqual(
            partial.error,
            .record(
                path: "/1/location/alt",
                message: "Expected decimal value or one of ['NaN', '-INF', '+INF'], found \"x\""))
        XCTAssertEqual(r.decodeJSON(Array("[1,".utf8)).error, .json(JSONParseError(offset: 3, expected: "a value")))
        XCTAssertEqual(
            r.decodeJSON(parse(obs("2026-03-18T17:05:35Z", 5)), form: .record).error,
            .record(path: "", message: "Expected field 'time' but was 'phenomenonTime'"))
    }

    func testSchemaOrderViolationsUseTheNodesWording() throws {
        let r = try XCTUnwrap(reader(gpsRecord))
        var e = decodeError { _ = try r.decodeRecord(self.parse(#"{"location":{"lat":1,"lon":2,"alt":3},"time":"2026-03-18T17:05:35Z"}"#)) }
        XCTAssertEqual(e, .record(path: "", message: "Expected field 'time' but was 'location'"))
        XCTAssertEqual(e?.description, "/: Expected field 'time' but was 'location'")
        e = decodeError { _ = try r.decodeRecord(self.parse(#"{"time":"2026-03-18T17:05:35Z","location":{"lon":2,"lat":1,"alt":3}}"#)) }
        XCTAssertEqual(e, .record(path: "/location", message: "Expected field 'lat' but was 'lon'"))
        e = decodeError { _ = try r.decodeRecord(self.parse(#"{"time":"2026-03-18T17:05:35Z","location":{"lat":1,"lon":2}}"#)) }
        XCTAssertEqual(e, .record(path: "/location", message: "Expected field 'alt' but the object ended"))
        e = decodeError {
            _ = try r.decodeRecord(self.parse(#"{"time":"2026-03-18T17:05:35Z","location":{"lat":1,"lon":2,"alt":3},"x":1}"#))
        }
        XCTAssertEqual(e, .record(path: "", message: "Unexpected field 'x' after the last field of the schema"))
        e = decodeError { _ = try r.decodeRecord(self.parse(#"{"time":1773853535,"location":{"lat":1,"lon":2,"alt":3}}"#)) }
        XCTAssertEqual(e, .record(path: "/time", message: "expected an ISO 8601 string, found number"))
        e = decodeError { _ = try r.decodeRecord(self.parse(#"{"time":"2026-03-18T17:05:35Z","location":[1,2,3]}"#)) }
        XCTAssertEqual(e, .record(path: "/location", message: "expected an object, found array"))
    }

    func testJSONScalarKindsSpecialValuesAndOptionalFields() throws {
        let record = DataComponent(
            .record([
                DataComponent(.time(Time(uom: .code("s"), referenceFrame: nil)), name: "t"),
                DataComponent(.quantity(Quantity(uom: .code("m"))), name: "q"),
                DataComponent(.count(Count()), name: "n"),
                DataComponent(.boolean(BooleanComponent()), name: "b"),
                DataComponent(.text(Text()), name: "s"),
                DataComponent(.category(Category()), name: "c", optional: true),
            ]))
        let r = try XCTUnwrap(reader(record))
        let rec = try r.decodeRecord(parse(#"{"t":12.5,"q":"-INF","n":3.0,"b":true,"s":"hé","c":"on"}"#))
        XCTAssertEqual(rec.fields.map(\.value), [.time(12.5), .number(-.infinity), .count(3), .bool(true), .text("hé"), .text("on")])
        XCTAssertEqual(rec.doubles, [12.5, -.infinity, 3, 1])
        for (special, value) in [("NaN", Double.nan), ("+INF", .infinity), ("INF", .infinity)] {
            let v = try r.decodeRecord(parse(#"{"t":0,"q":"\#(special)","n":0,"b":false,"s":null}"#))
            XCTAssertEqual(v["/q"]?.double?.isNaN, value.isNaN)
            if !value.isNaN { XCTAssertEqual(v["/q"], .number(value)) }
            XCTAssertEqual(v["/s"], .absent, "null text")
            XCTAssertEqual(v["/c"], .absent, "omitted optional field")
        }
        XCTAssertEqual(
            decodeError { _ = try r.decodeRecord(self.parse(#"{"t":0,"q":1,"n":3.5,"b":true,"s":""}"#)) },
            .record(path: "/n", message: "expected an integer, found 3.5"))
        XCTAssertEqual(
            decodeError { _ = try r.decodeRecord(self.parse(#"{"t":0,"q":1,"n":3,"b":1,"s":""}"#)) },
            .record(path: "/b", message: "expected a boolean, found 1"))
    }

    func testChoiceAndVariableArraysFromJSONAndBinary() throws {
        let ptz = DataComponent(
            .record([
                DataComponent(.quantity(Quantity(uom: .code("deg"))), name: "pan"),
                DataComponent(.quantity(Quantity(uom: .code("deg"))), name: "tilt"),
            ]), name: "ptz")
        let record = DataComponent(
            .record([
                DataComponent(.count(Count()), name: "n", id: "N"),
                DataComponent(
                    .array(
                        DataArray(
                            elementCount: .href("#N"),
                            elementType: DataComponent(.quantity(Quantity(uom: .code("Hz"), dataType: .float32)), name: "f"))),
                    name: "freqs"),
                DataComponent(
                    .choice(DataChoice(items: [DataComponent(.quantity(Quantity(uom: .code("deg"))), name: "rpan"), ptz])), name: "cmd"),
            ]))
        XCTAssertEqual(SchemaWalker.leaves(of: record).map(\.path), ["/n", "/freqs", "/cmd"])
        let enc = BinaryEncoding(members: [
            .component(ref: "/n", dataType: .unsignedByte),
            .component(ref: "/freqs/f", dataType: .float32),
            .component(ref: "/cmd/rpan", dataType: .double),
            .component(ref: "/cmd/ptz/pan", dataType: .signedShort),
            .component(ref: "/cmd/ptz/tilt", dataType: .signedShort),
        ])
        let r = try XCTUnwrap(reader(record, enc))
        let expected: [SWEValue] = [
            .count(2), .array([.number(1.5), .number(-2)]),
            .choice(item: "ptz", value: SWERecordValue(fields: [("/pan", .number(-90)), ("/tilt", .number(45))])),
        ]
        let fromJSON = try r.decodeRecord(parse(#"{"n":2,"freqs":[1.5,-2],"cmd":{"ptz":{"pan":-90,"tilt":45}}}"#))
        XCTAssertEqual(fromJSON.fields.map(\.value), expected)

        let body = bytes {
            $0.append(2); $0.appendBigEndian(Float(1.5)); $0.appendBigEndian(Float(-2))
            $0.append(1); $0.appendBigEndian(Int16(-90)); $0.appendBigEndian(Int16(45))
            // a second record: choice item 0 (a scalar item decodes at path "/")
            $0.append(0); $0.append(0); $0.appendBigEndian(Double(3))
        }
        let d = r.decodeBinary(body)
        XCTAssertNil(d.error)
        XCTAssertEqual(d.records.first?.fields.map(\.value), expected)
        XCTAssertEqual(
            d.records.last?.fields.map(\.value),
            [.count(0), .array([]), .choice(item: "rpan", value: SWERecordValue(fields: [("/", .number(3))]))])

        XCTAssertEqual(
            decodeError { _ = try r.decodeRecord(self.parse(#"{"n":1,"freqs":[1,2],"cmd":{"rpan":1}}"#)) },
            .record(path: "/freqs", message: "expected 1 array elements, found 2"))
        XCTAssertEqual(
            decodeError { _ = try r.decodeRecord(self.parse(#"{"n":0,"freqs":[],"cmd":{"zoom":1}}"#)) },
            .record(path: "/cmd", message: "Invalid choice selector value 'zoom'"))
        XCTAssertEqual(
            r.decodeBinary([0, 5]).error,
            .binary(offset: 1, member: "/cmd", message: "invalid choice index 5 (record 0 starting at byte 0)"))
    }

    // MARK: - Records: binary

    func testBinaryVideoRecordFromTheAndroidCapture() throws {
        let r = try XCTUnwrap(reader(cameraRecord, cameraEncoding))
        let record: [UInt8] = [0x41, 0xDA, 0x6E, 0xB6, 0xD7, 0xFC, 0xDD, 0x2F, 0, 0, 0, 5, 0, 0, 0, 1, 0x65]
        let d = r.decodeBinary(record + record)
        XCTAssertNil(d.error)
        XCTAssertEqual(d.records.count, 2)
        XCTAssertEqual(d.records[0].fields.map(\.path), ["/time", "/img"])
        XCTAssertEqual(d.records[0]["/time"], .time(1773853535.951))
        XCTAssertEqual(d.records[0]["/img"], .block([0, 0, 0, 1, 0x65]))
        XCTAssertEqual(d.records[0].doubles, [1773853535.951])
        XCTAssertEqual(ISOTime.string(epochSeconds: d.records[0].doubles[0]), "2026-03-18T17:05:35.951Z")
        record.withUnsafeBytes { XCTAssertEqual(r.decodeBinary($0).records, [d.records[0]]) }
    }

    func testTruncatedBinaryKeepsTheCompleteRecords() throws {
        let r = try XCTUnwrap(reader(cameraRecord, cameraEncoding))
        let record: [UInt8] = [0x41, 0xDA, 0x6E, 0xB6, 0xD7, 0xFC, 0xDD, 0x2F, 0, 0, 0, 5, 1, 2, 3, 4, 5]
        let d = r.decodeBinary(record + record + Array(record.prefix(14)))
        XCTAssertEqual(d.records.count, 2)
        XCTAssertEqual(
            d.error, .binary(offset: 46, member: "/img", message: "truncated: needs 5 bytes, 2 left (record 2 starting at byte 34)"))
        XCTAssertEqual(d.error?.description, "byte 46 (/img): truncated: needs 5 bytes, 2 left (record 2 starting at byte 34)")
        let short = r.decodeBinary(record + Array(record.prefix(3)))
        XCTAssertEqual(short.records.count, 1)
        XCTAssertEqual(
            short.error, .binary(offset: 17, member: "/time", message: "truncated: needs 8 bytes, 3 left (record 1 starting at byte 17)"))
        XCTAssertEqual(r.decodeBinary([]), DecodedRecords(records: []))
        var negative = record
        negative[8] = 0xFF
        XCTAssertEqual(
            r.decodeBinary(negative).error,
            .binary(offset: 8, member: "/img", message: "negative block length -16777211 (record 0 starting at byte 0)"))
    }

    func testBinaryScalarTypesBothByteOrders() throws {
        let record = DataComponent(
            .record([
                DataComponent(.time(Time()), name: "time"),
                DataComponent(.quantity(Quantity(uom: .code("m"))), name: "f"),
                DataComponent(.count(Count()), name: "s"),
                DataComponent(.count(Count()), name: "u"),
                DataComponent(.count(Count()), name: "l"),
                DataComponent(.boolean(BooleanComponent()), name: "b"),
                DataComponent(.text(Text()), name: "txt"),
                DataComponent(.category(Category()), name: "iso"),
                DataComponent(
                    .array(
                        DataArray(
                            elementCount: .inline(DataComponent(.count(Count(value: 3)), name: "elementCount")),
                            elementType: DataComponent(.count(Count()), name: "x"))), name: "fixed"),
            ]))
        let members: [BinaryMember] = [
            .component(ref: "/time", dataType: .signedLong), .component(ref: "/f", dataType: .float32),
            .component(ref: "/s", dataType: .signedShort), .component(ref: "/u", dataType: .unsignedInt),
            .component(ref: "/l", dataType: .signedByte), .component(ref: "/b", dataType: .boolean),
            .component(ref: "/txt", dataType: .utf8String), .component(ref: "/iso", dataType: .utf8String),
            .block(ref: "/fixed", compression: nil, byteLength: 3),
        ]
        // "é\0😀" in Java's modified UTF-8: C3 A9, C0 80, then the surrogate pair as two 3-byte sequences.
        let javaUTF: [UInt8] = [0xC3, 0xA9, 0xC0, 0x80, 0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80]
        let expected: [SWEValue] = [
            .time(1_700_000_000), .number(-0.5), .count(-2), .count(4_000_000_000), .count(-1),
            .bool(true), .text("é\u{0}😀"), .text("Z"), .block([7, 8, 9]),
        ]
        for bigEndian in [true, false] {
            let r = try XCTUnwrap(reader(record, BinaryEncoding(bigEndian: bigEndian, members: members)))
            func put<T: FixedWidthInteger>(_ v: T, _ b: ByteBuffer) {
                withUnsafeBytes(of: bigEndian ? v.bigEndian : v.littleEndian) { b.append($0) }
            }
            let body = bytes { b in
                put(Int64(1_700_000_000), b); put(Float(-0.5).bitPattern, b); put(Int16(-2), b); put(UInt32(4_000_000_000), b)
                b.append(0xFF); b.append(2)
                put(UInt16(javaUTF.count), b); b.append(javaUTF)
                put(UInt16(1), b); b.append(UInt8(ascii: "Z"))
                b.append([7, 8, 9])
            }
            let d = r.decodeBinary(body)
            XCTAssertNil(d.error, "bigEndian \(bigEndian)")
            XCTAssertEqual(d.records.first?.fields.map(\.value), expected, "bigEndian \(bigEndian)")
        }
        // base64 bodies are decoded first.
        let r64 = try XCTUnwrap(reader(cameraRecord, BinaryEncoding(base64: true, members: cameraEncoding.members)))
        let raw: [UInt8] = [0x41, 0xDA, 0x6E, 0xB6, 0xD7, 0xFC, 0xDD, 0x2F, 0, 0, 0, 1, 0x65]
        let d = r64.decodeBinary(Array(Data(raw).base64EncodedString(options: .lineLength64Characters).utf8))
        XCTAssertEqual(d.records.first?.fields.map(\.value), [.time(1773853535.951), .block([0x65])])
    }

    func testOneDatastreamDecodesIdenticallyFromJSONOMAndBinary() throws {
        let r = try XCTUnwrap(reader(gpsRecord, .default(for: gpsRecord)))
        let swe = try r.decodeRecord(
            parse(#"{"time":"2026-03-18T17:05:35.951Z","location":{"lat":31.2025068,"lon":-89.18142746,"alt":58.38763427734375}}"#))
        let om = try r.decodeObservation(
            parse(
                #"{"phenomenonTime":"2026-03-18T17:05:35.951Z","result":{"location":{"lat":31.2025068,"lon":-89.18142746,"alt":58.38763427734375}}}"#
            ))
        let binary = r.decodeBinary(
            bytes {
                for d in [1773853535.951, 31.2025068, -89.18142746, 58.38763427734375] { $0.appendBigEndian(d) }
            })
        XCTAssertEqual(binary.records.count, 1)
        XCTAssertEqual(binary.records.first, swe)
        XCTAssertEqual(om.fields.map(\.path), swe.fields.map(\.path))
        XCTAssertEqual(om.fields.map(\.value), swe.fields.map(\.value))
    }

    func testReaderRejectsAnEncodingThatDoesNotFitTheRecord() {
        var enc = BinaryEncoding.default(for: gpsRecord)
        enc.members.removeLast()
        XCTAssertEqual(
            decodeError { _ = try RecordReader(record: self.gpsRecord, encoding: enc) },
            .schema(path: "/location/alt", message: "no BinaryEncoding member for this component"))
        enc = BinaryEncoding.default(for: gpsRecord)
        enc.members.append(.component(ref: "/speed", dataType: .double))
        XCTAssertEqual(
            decodeError { _ = try RecordReader(record: self.gpsRecord, encoding: enc) },
            .schema(path: "/speed", message: "BinaryEncoding member matches no component of the record"))
        enc = BinaryEncoding.default(for: gpsRecord)
        enc.members[0] = .component(ref: "/time", dataType: .boolean)
        XCTAssertEqual(
            decodeError { _ = try RecordReader(record: self.gpsRecord, encoding: enc) },
            .schema(path: "/time", message: "data type boolean cannot encode this component"))
        XCTAssertEqual(
            decodeError {
                _ = try RecordReader(
                    record: self.cameraRecord,
                    encoding: BinaryEncoding(members: [
                        .component(ref: "/time", dataType: .double), .component(ref: "/img", dataType: .double),
                    ]))
            },
            .schema(path: "/img", message: "an array or choice needs a Block member, not a Component"))
        XCTAssertEqual(
            try? RecordReader(record: gpsRecord).decodeBinary([1, 2, 3]).error,
            .binary(offset: 0, member: "", message: "the record has no BinaryEncoding"))
    }
}
