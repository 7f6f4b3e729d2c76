import OSHCore
import XCTest

final class PTZCoreTests: XCTestCase {
    let cal = PTZCalibration(
        pan: ServoAxisCalibration(channel: 0, lowerLimit: -80, upperLimit: 80),
        tilt: ServoAxisCalibration(
            channel: 1, minPulseMicros: 2400, maxPulseMicros: 600,
            minDegrees: -45, maxDegrees: 90, lowerLimit: -30, upperLimit: 60),
        presets: [("home", 0, 0), ("gate", 45, -10)])

    func testAxisMappingBothWays() {
        XCTAssertEqual(cal.pan.pulseMicros(degrees: 0), 1500)
        XCTAssertEqual(cal.pan.pulseMicros(degrees: 90), 2500)
        XCTAssertEqual(cal.pan.microsPerDegree, 2000.0 / 180, accuracy: 1e-12)
        XCTAssertEqual(cal.tilt.pulseMicros(degrees: -45), 2400, "reversed servo")
        XCTAssertEqual(cal.tilt.degrees(pulseMicros: cal.tilt.pulseMicros(degrees: 12.5)), 12.5, accuracy: 1e-9)
        XCTAssertTrue(cal.problems().isEmpty, cal.problems().joined(separator: "\n"))
    }

    func testPlanClampsAndSaysSo() throws {
        let m = try cal.plan(.relative(pan: 3, tilt: 0), fromPan: 10, tilt: 5)
        XCTAssertEqual(m.pan, 13)
        XCTAssertEqual(m.tilt, 5)
        XCTAssertFalse(m.clamped)
        XCTAssertNil(m.clampMessage)
        let far = try cal.plan(.absolute(pan: 95, tilt: -40), fromPan: 0, tilt: 0)
        XCTAssertEqual(far.pan, 80)
        XCTAssertEqual(far.tilt, -30)
        XCTAssertTrue(far.panClamped && far.tiltClamped)
        XCTAssertEqual(far.clampMessage, "pan 95° is beyond the limit; moved to 80°; tilt -40° is beyond the limit; moved to -30°")
        XCTAssertEqual(try cal.plan(.preset("gate"), fromPan: 0, tilt: 0).pan, 45)
        XCTAssertThrowsError(try cal.plan(.preset("roof"), fromPan: 0, tilt: 0)) { e in
            XCTAssertTrue("\(e)".contains("home, gate"), "\(e)")
        }
    }

    func testCommandParsing() throws {
        func parse(_ s: String) throws -> PTZCommand { try PTZCommand.parse(try JSONValue.parse(s)) }
        XCTAssertEqual(try parse(#"{"rpan":3.0}"#), .relative(pan: 3, tilt: 0))
        XCTAssertEqual(try parse(#"{"rtilt":-2}"#), .relative(pan: 0, tilt: -2))
        XCTAssertEqual(try parse(#"{"pan":10}"#), .absolute(pan: 10, tilt: nil))
        XCTAssertEqual(try parse(#"{"ptzPos":{"pan":10,"tilt":-5}}"#), .absolute(pan: 10, tilt: -5))
        XCTAssertEqual(try parse(#"{"parameters":{"preset":"home"}}"#), .preset("home"))
        for bad in [
            #"{"rpan":3,"rtilt":1}"#, #"{"ptzPos":{"pan":0}}"#, #"{"ptzPos":{"tilt":0,"pan":0}}"#,
            #"{"zoom":2}"#, #"{"rpan":"3"}"#, #"{"warp":1}"#, "[1]",
        ] {
            XCTAssertThrowsError(try parse(bad), bad)
        }
    }

    func testBadCalibrationsAreNamed() {
        var c = cal
        c.tilt.channel = 0
        c.pan.lowerLimit = -120
        c.pan.maxSpeed = 0
        c.frequency = 400  // a 2500 µs pulse does not fit
        let p = c.problems().joined(separator: "\n")
        XCTAssertTrue(p.contains("both on channel 0"), p)
        XCTAssertTrue(p.contains("outside the calibrated span"), p)
        XCTAssertTrue(p.contains("max_speed"), p)
        XCTAssertTrue(p.contains("does not fit"), p)
    }

    func testSlewSteps() {
        XCTAssertEqual(PTZMotion.step(from: 0, to: 10, maxSpeed: 60, dt: 0.05), 3)
        XCTAssertEqual(PTZMotion.step(from: 0, to: -10, maxSpeed: 60, dt: 0.05), -3)
        XCTAssertEqual(PTZMotion.step(from: 9, to: 10, maxSpeed: 60, dt: 0.05), 10)
        XCTAssertEqual(PTZMotion.step(from: 0, to: 10, maxSpeed: nil, dt: 0.05), 10)
    }

    func testPositionOutputAndControlSchema() throws {
        let out = PTZSchema.positionOutput(cal)
        XCTAssertEqual(out.outputName, "ptz_position")
        XCTAssertEqual(out.leaves.map(\.path), ["/time", "/pan", "/tilt"])
        XCTAssertEqual(out.leaves[1].component.definition, "http://sensorml.com/ont/swe/property/Pan")
        XCTAssertNoThrow(try ObservationLayout(record: out.record, outputName: out.outputName))

        let params = PTZSchema.controlParameters(cal)
        guard case .choice(let choice) = params.kind else { return XCTFail("a DataChoice") }
        XCTAssertEqual(choice.items.map { $0.name ?? "" }, ["pan", "tilt", "rpan", "rtilt", "preset", "ptzPos"])
        XCTAssertEqual(
            choice.items.map { $0.definition ?? "" }.map { String($0.split(separator: "/").last ?? "") },
            ["Pan", "Tilt", "RelativePan", "RelativeTilt", "CameraPresetPositionName", "PtzPosition"])
        guard case .quantity(let rpan) = choice.items[2].kind else { return XCTFail("rpan is a Quantity") }
        XCTAssertEqual(rpan.constraint?.intervals, [ClosedInterval(-160, 160)], "relative moves span the limits")
        guard case .quantity(let tilt) = choice.items[1].kind else { return XCTFail("tilt is a Quantity") }
        XCTAssertEqual(tilt.constraint?.intervals, [ClosedInterval(-30, 60)])
        // The body round-trips through the decoder (type first everywhere, as the node requires).
        let body = String(decoding: PTZSchema.controlStreamBody(cal, systemLabel: "Pi"), as: UTF8.self)
        XCTAssertTrue(body.hasPrefix(#"{"name":"Pi - ptz_control""#), body)
        let v = try JSONValue.parse(body)
        let decoded = try SchemaDecoder.component(try XCTUnwrap(v["schema"]?["parametersSchema"]))
        XCTAssertEqual(decoded.kind, params.kind)
        var noPresets = cal
        noPresets.presets = []
        guard case .choice(let c2) = PTZSchema.controlParameters(noPresets).kind else { return XCTFail() }
        XCTAssertFalse(c2.items.contains { $0.name == "preset" })
    }
}
