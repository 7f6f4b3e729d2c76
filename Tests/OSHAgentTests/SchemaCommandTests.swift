import Foundation
import OSHAgent
import OSHCore
import OSHPlatform
import XCTest

/// `osh-edge schema` through the Agent function and through the real binary.
final class SchemaCommandTests: XCTestCase {
    private let board = BoardIdentity(
        serial: "10000000abcdef12", serialSource: .deviceTree,
        model: "Raspberry Pi 4 Model B Rev 1.4", hostname: "mast-3")

    func testIdentityDefaultsFromTheBoard() throws {
        let id = try SystemIdentity.resolve(board: board, uid: nil, uidExtension: "", label: nil)
        XCTAssertEqual(id.uid, "urn:osh:rpi:10000000abcdef12")
        XCTAssertEqual(id.label, "Raspberry Pi Sensors [mast-3]")
        let ext = try SystemIdentity.resolve(board: board, uid: nil, uidExtension: "north", label: "Mast 3")
        XCTAssertEqual(ext.uid, "urn:osh:rpi:10000000abcdef12:north")
        XCTAssertEqual(ext.label, "Mast 3")
        let other = BoardIdentity(serial: "a3816d3249f308b9", serialSource: .machineID, model: nil, hostname: nil)
        XCTAssertEqual(
            try SystemIdentity.resolve(board: other, uid: nil, uidExtension: "", label: nil).label,
            "Linux Sensors [a3816d3249f308b9]")
    }

    func testNoSerialAndNoUIDIsAnErrorThatSaysWhatToDo() {
        let none = BoardIdentity(serial: "", serialSource: .none, model: nil, hostname: "x")
        XCTAssertThrowsError(try SystemIdentity.resolve(board: none, uid: nil, uidExtension: "", label: nil)) { e in
            XCTAssertTrue("\(e)".contains("--uid"), "\(e)")
        }
        XCTAssertEqual(
            try SystemIdentity.resolve(board: none, uid: "urn:osh:rpi:my-mast-03", uidExtension: "", label: nil).uid,
            "urn:osh:rpi:my-mast-03")
    }

    func testAllDocumentsWithTheReportIdentityIncludeTheAndroidBodies() throws {
        let identity = SystemIdentity(
            uid: "urn:osh:android:7ae57419dd427e4c:droid2", label: "Android Sensors [Android2-0253]",
            serial: "unknown")
        let request = SchemaRequest(
            what: .all, identity: identity,
            options: OutputOptions(uid: identity.uid, north: .magnetic, imuChip: "LSM6DSO", magnetometerChip: "LSM6DSO"),
            validFrom: 0)
        let docs = try SchemaCommand.documents(request)
        XCTAssertEqual(docs.count, 12, "Android's ten, temperature and humidity")
        let gps = docs.first { $0.contains("\"outputName\":\"gps_data\"") }
        XCTAssertEqual(gps, DatastreamBody.string(OutputCatalogue.gps(request.options), systemLabel: identity.label, scalarFormat: .omJSON))
    }

    func testUnknownOutputListsTheKnownOnes() {
        let id = SystemIdentity(uid: "urn:osh:rpi:10000000abcdef12", label: "L", serial: "s")
        let r = SchemaRequest(what: .output("gps"), identity: id, options: OutputOptions(uid: id.uid), validFrom: 0)
        XCTAssertThrowsError(try SchemaCommand.documents(r)) { e in
            XCTAssertTrue("\(e)".contains("gps_data"), "\(e)")
        }
    }

    // MARK: The binary

    private func run(_ args: [String]) throws -> (status: Int32, out: String, err: String) { try runOSHEdge(args) }

    func testCLIPrintsTheAndroidBodiesForTheReportIdentity() throws {
        let r = try run([
            "schema", "--all", "--uid", "urn:osh:android:7ae57419dd427e4c:droid2",
            "--label", "Android Sensors [Android2-0253]", "--north", "magnetic", "--imu", "LSM6DSO",
        ])
        XCTAssertEqual(r.status, 0, r.err)
        let lines = r.out.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 12)
        let o = OutputOptions(
            uid: "urn:osh:android:7ae57419dd427e4c:droid2", north: .magnetic, imuChip: "LSM6DSO", magnetometerChip: "LSM6DSO")
        for spec in OutputCatalogue.all(o) {
            XCTAssertTrue(
                lines.contains(DatastreamBody.string(spec, systemLabel: "Android Sensors [Android2-0253]", scalarFormat: .omJSON)),
                spec.outputName)
        }
        // Every line is one JSON document.
        for l in lines { XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(l.utf8))) }
    }

    func testCLISystemFeatureAndOptions() throws {
        let sys = try run([
            "schema", "--system", "--uid", "urn:osh:rpi:10000000abcdef12", "--label", "Mast",
            "--valid-from", "2026-03-18T16:02:58.497Z",
        ])
        XCTAssertEqual(sys.status, 0, sys.err)
        XCTAssertTrue(sys.out.hasPrefix("{\"type\":\"PhysicalSystem\",\"id\":\"RPI_SENSORS_"), sys.out)
        XCTAssertTrue(sys.out.contains("\"uniqueId\":\"urn:osh:rpi:10000000abcdef12\""))
        XCTAssertTrue(sys.out.contains("\"validTime\":[\"2026-03-18T16:02:58.497Z\",\"now\"]"))
        let foi = try run(["schema", "--feature", "--uid", "urn:osh:rpi:10000000abcdef12"])
        XCTAssertTrue(foi.out.contains("\"uid\":\"urn:rpi:foi:10000000abcdef12\""), foi.out)
        let video = try run(["schema", "camera0_H264", "--video-size", "1280x720", "--uid", "urn:osh:rpi:10000000abcdef12", "--pretty"])
        XCTAssertTrue(video.out.contains("\"value\": 720"), video.out)
        let swe = try run(["schema", "barometer", "--format", "swe+json", "--uid", "urn:osh:rpi:10000000abcdef12"])
        XCTAssertTrue(swe.out.contains("\"obsFormat\":\"application/swe+json\",\"recordSchema\""), swe.out)
    }

    func testCLIRefusesBadArgumentsWithAReason() throws {
        for (args, needle) in [
            (["schema", "--format", "xml"], "om+json or swe+json"),
            (["schema", "--north", "grid"], "true or magnetic"),
            (["schema", "--video-size", "big"], "WIDTHxHEIGHT"),
            (["schema", "nosuch", "--uid", "urn:osh:rpi:10000000abcdef12"], "gps_data"),
            (["schema", "--uid"], "needs a value"),
            (["frobnicate"], "unknown command"),
        ] {
            let r = try run(args)
            XCTAssertNotEqual(r.status, 0, args.joined(separator: " "))
            XCTAssertTrue(r.err.contains(needle), "\(args): \(r.err)")
        }
    }
}
