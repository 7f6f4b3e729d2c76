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
        XCTAssertEqual(try decode(#"{"enableOutput":{"outputName":"gps_data","enabled":false}}"#), .enableOutput(outputName: "gps_data", enabled: false))
        XCTAssertEqual(try decode(#"{"identify":{"duration":10}}"#), .identify(seconds: 10))
        XCTAssertEqual(try decode(#"{"reregister":{"reason":""}}"#), .reregister)
        for c in [DeviceControlCommand.setRate(outputName: "gps_data", hz: 2), .enableOutput(outputName: "barometer", enabled: true),
                  .identify(seconds: 3), .reregister] {
            XCTAssertEqual(try decode(DeviceControl.parametersJSON(c)), c)
        }
    }

    func testRejectionsSayWhy() {
        XCTAssertEqual(error(#"{"launch":{}}"#)?.kind, .badChoice)
        XCTAssertEqual(error(#"{"identify":{"duration":1},"reregister":{"reason":""}}"#)?.kind, .badChoice)
        XCTAssertEqual(error(#"{"setRate":{"outputName":"barometer"}}"#), CommandDecodeError(.missingField, "setRate: field 'rate' is missing"))
        XCTAssertEqual(error(#"{"setRate":{"rate":1,"outputName":"barometer"}}"#)?.message, "setRate: field 'outputName' out of schema order")
        XCTAssertEqual(error(#"{"setRate":{"outputName":"barometer","rate":"fast"}}"#)?.message, "setRate.rate: a number expected")
        XCTAssertEqual(error(#"{"setRate":{"outputName":"x","rate":1}}"#)?.message, "setRate.outputName: 'x' is not one of barometer, gps_data")
        XCTAssertEqual(error(#"{"setRate":{"outputName":"barometer","rate":1000}}"#)?.message, "setRate.rate 1000 Hz is outside 0.001…100 Hz")
        XCTAssertEqual(error(#"{"identify":{"duration":-1}}"#)?.kind, .outOfRange)
        XCTAssertEqual(error(#"{"enableOutput":{"outputName":"barometer","enabled":1}}"#)?.message, "enableOutput.enabled: true or false expected")
        XCTAssertEqual(error(#"{"identify":{"duration":1,"extra":2}}"#)?.message, "identify: unexpected field 'extra'")
    }

    func testControlStreamBodyIsTypeFirstAndNamedByInput() throws {
        let body = String(decoding: DeviceControl.body(systemLabel: "Pi", outputNames: ["gps_data"]), as: UTF8.self)
        XCTAssertTrue(body.hasPrefix(#"{"name":"Pi - device_control","description":"#))
        XCTAssertTrue(body.contains(#""inputName":"device_control","schema":{"commandFormat":"application/json","parametersSchema":{"type":"DataChoice""#))
        let v = try JSONValue.parse(body)
        let parsed = try SchemaDecoder.component(try XCTUnwrap(v["schema"]?["parametersSchema"]))
        XCTAssertEqual(parsed.children.map { $0.name ?? "" }, ["setRate", "enableOutput", "identify", "reregister"])
        XCTAssertEqual(parsed.child(named: "setRate")?.child(named: "rate")?.typeName, "Quantity")
    }
}
