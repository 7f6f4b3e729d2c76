import XCTest
@testable import OSHCore

final class CommandDecoderTests: XCTestCase {
    let schema = DeviceControl.schema(outputNames: ["barometer", "gps_data"])

    private func decode(_ json: String) throws -> DeviceControlCommand {
        let v = try JSONValue.parse(json)
        return try DeviceControl.command(try CommandDecoder.decode(v, schema: schema))
    }

    private func error(_ json: String) -> CommandDecodeError? {
        do {
            _ = try decode(json)
            return nil
        } catch let e as CommandDecodeError {
            return e
        } catch {
            return nil
        }
    }

    func testEachItemDecodes() throws {
        XCTAssertEqual(try decode(#"{"setRate":{"outputName":"barometer","rate":0.5}}"#), .setRate(outputName: "barometer", hz: 0.5))
        XCTAssertEqual(
            try decode(#"{"enableOutput":{"outputName":"gps_data","enabled":false}}"#),
            .enableOutput(outputName: "gps_data", enabled: false))
        XCTAssertEqual(try decode(#"{"identify":{"duration":10}}"#), .identify(seconds: 10))
        XCTAssertEqual(try decode(#"{"reregister":{"reason":""}}"#), .reregister)
        for c in [
            DeviceControlCommand.setRate(outputName: "gps_data", hz: 2), .enableOutput(outputName: "barometer", enabled: true),
            .identify(seconds: 3), .reregister,
            .uploadTimeRange(start: 1_780_000_000.25, stop: 1_780_000_600, outputs: ["barometer", "gps_data"]),
            .uploadTimeRange(start: 1_780_000_000, stop: 1_780_000_000.001, outputs: []),
        ] {
            XCTAssertEqual(try decode(DeviceControl.parametersJSON(c)), c)
        }
    }

    func testUploadTimeRangeDecodes() throws {
        XCTAssertEqual(
            try decode(#"{"uploadTimeRange":{"start":"2026-06-01T10:00:00Z","stop":"2026-06-01T12:10:00+02:00","outputs":""}}"#),
            .uploadTimeRange(start: 1_780_308_000, stop: 1_780_308_600, outputs: []))
        // Names trimmed, empty ones dropped; any name (what was recorded is the agent's to check).
        XCTAssertEqual(
            try decode(
                #"{"uploadTimeRange":{"start":"2026-06-01T10:00:00.5Z","stop":"2026-06-01T10:00:01Z","outputs":" barometer, ,camera0_H264 ,"}}"#
            ),
            .uploadTimeRange(start: 1_780_308_000.5, stop: 1_780_308_001, outputs: ["barometer", "camera0_H264"]))
        XCTAssertEqual(
            DeviceControl.parametersJSON(.uploadTimeRange(start: 1_780_308_000, stop: 1_780_308_600.5, outputs: ["a", "b"])),
            #"{"uploadTimeRange":{"start":"2026-06-01T10:00:00.000Z","stop":"2026-06-01T10:10:00.500Z","outputs":"a,b"}}"#)
    }

    func testUploadTimeRangeRejectionsSayWhy() {
        XCTAssertEqual(
            error(#"{"uploadTimeRange":{"start":"2026-06-01T10:00:00Z","stop":"2026-06-01T09:00:00Z","outputs":""}}"#),
            CommandDecodeError(
                .outOfRange,
                "uploadTimeRange.stop 2026-06-01T09:00:00.000Z is not after start "
                    + "2026-06-01T10:00:00.000Z: give a window with stop later than start"))
        XCTAssertEqual(
            error(#"{"uploadTimeRange":{"start":"2026-06-01T10:00:00Z","stop":"2026-06-01T10:00:00Z","outputs":""}}"#)?.kind, .outOfRange)
        // A Time in ISO units is a string, as OSH sends it: a number, a time without a zone or a date alone is refused.
        for bad in ["1780308000", #""2026-06-01T10:00:00""#, #""2026-06-01""#, "true", #""yesterday""#] {
            XCTAssertEqual(
                error(#"{"uploadTimeRange":{"start":"# + bad + #","stop":"2026-06-01T09:00:00Z","outputs":""}}"#),
                CommandDecodeError(.badValue, #"uploadTimeRange.start: an ISO 8601 time with a zone expected, as "2026-05-01T12:00:00Z""#),
                bad)
        }
        XCTAssertEqual(
            error(#"{"uploadTimeRange":{"start":"2026-06-01T10:00:00Z","stop":null,"outputs":""}}"#)?.message,
            #"uploadTimeRange.stop: an ISO 8601 time with a zone expected, as "2026-05-01T12:00:00Z""#)
        XCTAssertEqual(
            error(#"{"uploadTimeRange":{"start":"2026-06-01T10:00:00Z","stop":"2026-06-01T11:00:00Z"}}"#),
            CommandDecodeError(.missingField, "uploadTimeRange: field 'outputs' is missing"))
        XCTAssertEqual(
            error(#"{"uploadTimeRange":{"start":"2026-06-01T10:00:00Z","stop":"2026-06-01T11:00:00Z","outputs":["a"]}}"#)?.message,
            "uploadTimeRange.outputs: a string expected")
    }

    /// A Time in other units (seconds from a reference) stays a number.
    func testANumericTimeIsANumber() throws {
        let schema = DataComponent(.record([DataComponent(.time(Time(uom: .code("s"), referenceFrame: nil)), name: "t")]), name: "r")
        XCTAssertEqual(
            try CommandDecoder.decode(try JSONValue.parse(#"{"t":12.5}"#), schema: schema), .record([CommandField("t", .number(12.5))]))
        XCTAssertThrowsError(try CommandDecoder.decode(try JSONValue.parse(#"{"t":"12.5"}"#), schema: schema)) { e in
            XCTAssertEqual((e as? CommandDecodeError)?.message, "r.t: a number expected")
        }
    }

    func testRejectionsSayWhy() {
        XCTAssertEqual(error(#"{"launch":{}}"#)?.kind, .badChoice)
        XCTAssertEqual(error(#"{"identify":{"duration":1},"reregister":{"reason":""}}"#)?.kind, .badChoice)
        XCTAssertEqual(
            error(#"{"setRate":{"outputName":"barometer"}}"#), CommandDecodeError(.missingField, "setRate: field 'rate' is missing"))
        XCTAssertEqual(
            error(#"{"setRate":{"rate":1,"outputName":"barometer"}}"#)?.message, "setRate: field 'outputName' out of schema order")
        XCTAssertEqual(error(#"{"setRate":{"outputName":"barometer","rate":"fast"}}"#)?.message, "setRate.rate: a number expected")
        XCTAssertEqual(
            error(#"{"setRate":{"outputName":"x","rate":1}}"#)?.message, "setRate.outputName: 'x' is not one of barometer, gps_data")
        XCTAssertEqual(
            error(#"{"setRate":{"outputName":"barometer","rate":1000}}"#)?.message, "setRate.rate 1000 Hz is outside 0.001…100 Hz")
        XCTAssertEqual(error(#"{"identify":{"duration":-1}}"#)?.kind, .outOfRange)
        XCTAssertEqual(
            error(#"{"enableOutput":{"outputName":"barometer","enabled":1}}"#)?.message, "enableOutput.enabled: true or false expected")
        XCTAssertEqual(error(#"{"identify":{"duration":1,"extra":2}}"#)?.message, "identify: unexpected field 'extra'")
    }

    func testControlStreamBodyIsTypeFirstAndNamedByInput() throws {
        let body = String(decoding: DeviceControl.body(systemLabel: "Pi", outputNames: ["gps_data"]), as: UTF8.self)
        XCTAssertTrue(body.hasPrefix(#"{"name":"Pi - device_control","description":"#))
        XCTAssertTrue(
            body.contains(
                #""inputName":"device_control","schema":{"commandFormat":"application/json","parametersSchema":{"type":"DataChoice""#))
        let v = try JSONValue.parse(body)
        let parsed = try SchemaDecoder.component(try XCTUnwrap(v["schema"]?["parametersSchema"]))
        XCTAssertEqual(parsed.children.map { $0.name ?? "" }, ["setRate", "enableOutput", "identify", "reregister", "uploadTimeRange"])
        XCTAssertEqual(parsed.child(named: "setRate")?.child(named: "rate")?.typeName, "Quantity")
        let upload = try XCTUnwrap(parsed.child(named: "uploadTimeRange"))
        XCTAssertEqual(upload.children.map { $0.name ?? "" }, ["start", "stop", "outputs"])
        XCTAssertEqual(upload.children.map(\.typeName), ["Time", "Time", "Text"])
        guard case .time(let t)? = upload.child(named: "start")?.kind else { return XCTFail("start is not a Time") }
        XCTAssertTrue(t.isISO)
        // What the node sees: written as the datastreams' time fields are.
        XCTAssertTrue(
            body.contains(
                #"{"type":"DataRecord","name":"uploadTimeRange","definition":"urn:osh:edge:def:command:uploadTimeRange","#
                    + #""label":"Upload a Recorded Time Range","fields":[{"type":"Time","name":"start","definition":"urn:osh:edge:def:command:startTime","#
                    + #""label":"Start Time","referenceFrame":"http://www.opengis.net/def/trs/BIPM/0/UTC","#
                    + #""uom":{"href":"http://www.opengis.net/def/uom/ISO-8601/0/Gregorian"}}"#), body)
    }
}
