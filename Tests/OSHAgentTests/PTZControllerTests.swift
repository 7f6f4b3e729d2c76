import OSHAgent
import OSHCore
import OSHDevNode
import OSHPlatform
import XCTest
import OSHSimulation

/// The pan-tilt controller end to end on the simulated PCA9685.
final class PTZControllerTests: XCTestCase {
    let cal = PTZCalibration(
        pan: ServoAxisCalibration(channel: 0, lowerLimit: -80, upperLimit: 80),
        tilt: ServoAxisCalibration(channel: 1, minDegrees: -45, maxDegrees: 90, lowerLimit: -30, upperLimit: 60))

    func rig(_ c: PTZCalibration? = nil) throws -> (SimulatedPCA9685, PTZController) {
        let bus = SimulatedI2CBus()
        let chip = SimulatedPCA9685()
        bus.attach(chip, at: 0x40)
        let ptz = try PTZController(driver: PCA9685(bus: bus, pause: { _ in }), calibration: c ?? cal)
        return (chip, ptz)
    }

    func testRelativePanMovesTheChannelByTheCalibratedPulseDelta() throws {
        let (chip, ptz) = try rig()
        XCTAssertEqual(ptz.position, PTZPositionSample(pan: 0, tilt: 0), "home")
        let before = try XCTUnwrap(chip.pulseMicros(channel: 0))
        let countsBefore = chip.channel(0).off
        var reported: [(Double, Double)] = []
        ptz.onPosition = { reported.append(($0, $1)) }

        let o = ptz.apply(parameters: try JSONValue.parse(#"{"rpan":3.0}"#))
        XCTAssertEqual(o.status, .completed)
        XCTAssertEqual(o.message, "pan 3°, tilt 0°")
        let after = try XCTUnwrap(chip.pulseMicros(channel: 0))
        let resolution = PCA9685Math.microsPerCount(prescale: 121)
        XCTAssertEqual(after - before, 3 * cal.pan.microsPerDegree, accuracy: resolution)
        XCTAssertEqual(chip.channel(0).off, PCA9685Math.counts(pulseMicros: cal.pan.pulseMicros(degrees: 3), prescale: 121))
        XCTAssertEqual(Int(chip.channel(0).off) - Int(countsBefore), 7)  // 33.3 µs at 4.88 µs per count
        XCTAssertEqual(ptz.position, PTZPositionSample(pan: 3, tilt: 0))
        XCTAssertEqual(ptz.position, PTZPositionSample(pan: 3, tilt: 0))
        XCTAssertEqual(reported.last?.0, 3)
        // Tilt untouched.
        XCTAssertEqual(chip.channel(1).off, PCA9685Math.counts(pulseMicros: cal.tilt.pulseMicros(degrees: 0), prescale: 121))
    }

    func testLimitsClampAndSaySo() throws {
        let (chip, ptz) = try rig()
        let o = ptz.apply(parameters: try JSONValue.parse(#"{"ptzPos":{"pan":120,"tilt":-50}}"#))
        XCTAssertEqual(o.status, .completed)
        XCTAssertTrue(o.message.contains("pan 120° is beyond the limit; moved to 80°"), o.message)
        XCTAssertTrue(o.message.contains("tilt -50° is beyond the limit; moved to -30°"), o.message)
        XCTAssertEqual(ptz.position, PTZPositionSample(pan: 80, tilt: -30))
        XCTAssertEqual(
            try XCTUnwrap(chip.pulseMicros(channel: 0)), cal.pan.pulseMicros(degrees: 80),
            accuracy: PCA9685Math.microsPerCount(prescale: 121) / 2 + 1e-9)
        // Relative moves from the limit stay there.
        XCTAssertTrue(ptz.apply(.relative(pan: 5, tilt: 0)).message.contains("moved to 80°"))
        // Bad commands are rejected with the reason; nothing moves.
        let bad = ptz.apply(parameters: try JSONValue.parse(#"{"zoom":2}"#))
        XCTAssertEqual(bad.status, .rejected)
        XCTAssertEqual(bad.message, "this pan-tilt unit has no zoom")
        XCTAssertEqual(ptz.position, PTZPositionSample(pan: 80, tilt: -30))
    }

    func testSlewAtMaxSpeed() throws {
        var c = cal
        c.pan.maxSpeed = 60
        let (_, ptz) = try rig(c)
        XCTAssertEqual(ptz.apply(.absolute(pan: 10, tilt: nil)).message, "pan 10°, tilt 0° (slewing)")
        XCTAssertTrue(ptz.isMoving)
        XCTAssertTrue(try ptz.tick(dt: 0.1))
        XCTAssertEqual(ptz.pan, 6, accuracy: 1e-9)
        XCTAssertFalse(try ptz.tick(dt: 0.1))
        XCTAssertEqual(ptz.pan, 10)
    }

    func testARestartKeepsThePositionTheServosHold() throws {
        let bus = SimulatedI2CBus()
        let chip = SimulatedPCA9685()
        bus.attach(chip, at: 0x40)
        let first = try PTZController(driver: PCA9685(bus: bus, pause: { _ in }), calibration: cal)
        _ = first.apply(.absolute(pan: 30, tilt: 20))
        let second = try PTZController(driver: PCA9685(bus: bus, pause: { _ in }), calibration: cal)
        XCTAssertEqual(second.pan, 30, accuracy: 0.5)
        XCTAssertEqual(second.tilt, 20, accuracy: 0.5)
        var bad = cal
        bad.pan.channel = 1
        XCTAssertThrowsError(try PTZController(driver: PCA9685(bus: bus, pause: { _ in }), calibration: bad)) { e in
            XCTAssertTrue("\(e)".contains("both on channel 1"), "\(e)")
        }
    }

    /// The node takes both bodies as they are (type first, obsFormat first, …).
    func testTheDevelopmentNodeAcceptsThePTZBodies() throws {
        Log.muted = true
        let node = DevNode(config: DevNodeConfig())
        _ = try node.start()
        defer { node.stop() }
        let r = try NodeReader(server: NodeEndpoint(apiRoot: node.apiRoot))
        let sys = "{\"type\":\"Feature\",\"properties\":{\"uid\":\"urn:osh:rpi:ptz-test-0001\",\"name\":\"PTZ Pi\"}}"
        let s = try r.exchange(r.builder.request(.post, "/systems", contentType: MediaType.geoJSON, body: Array(sys.utf8)), what: "system")
        let id = try XCTUnwrap(CSResponse.resourceID(fromLocation: s.location))
        let cs = try r.exchange(
            r.builder.createControlStream(systemID: id, body: PTZSchema.controlStreamBody(cal, systemLabel: "PTZ Pi")),
            what: "control stream")
        XCTAssertEqual(cs.status, 201, String(decoding: cs.body, as: UTF8.self))
        for f in [ScalarFormat.omJSON, .sweJSON] {
            let ds = try r.exchange(
                r.builder.createDatastream(
                    systemID: id,
                    body: Array(
                        DatastreamBody.string(
                            PTZSchema.positionOutput(cal), systemLabel: "PTZ Pi", scalarFormat: f
                        ).utf8)), what: "datastream")
            XCTAssertEqual(ds.status, 201, String(decoding: ds.body, as: UTF8.self))
        }
    }
}
