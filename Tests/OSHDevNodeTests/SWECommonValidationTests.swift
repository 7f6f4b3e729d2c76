import Foundation
import OSHCore
import OSHPlatform
import XCTest

/// Every schema osh-edge sends, against the official SWE Common 3 / CS API Part 2 JSON schemas
/// (Tests/OSHCoreTests/Fixtures/ogc-schemas, unmodified), checked strictly by scripts/validate-swe.py:
/// what any SWE Common 3 client may demand, where the node (and the development node) demand less.
final class SWECommonValidationTests: XCTestCase {
    private static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    private static let script = repo.appendingPathComponent("scripts/validate-swe.py").path

    private let ptz = PTZCalibration(
        pan: ServoAxisCalibration(channel: 0, lowerLimit: -80, upperLimit: 80),
        tilt: ServoAxisCalibration(channel: 1, lowerLimit: -30, upperLimit: 60),
        presets: [("home", 0, 0), ("gate", 45, -10)])

    /// Every datastream and control-stream body, over every option that changes one: north,
    /// IMU and barometer chip, a second video size, both scalar formats; identical bodies once.
    private func allBodies() -> [(name: String, body: String)] {
        var out: [(String, String)] = []
        var seen = Set<String>()
        func add(_ name: String, _ body: String) {
            if seen.insert(body).inserted { out.append(("\(name).\(out.count)", body)) }
        }
        var noPresets = ptz
        noPresets.presets = []
        for north in NorthReference.allCases {
            for imu in ChipTable.known.imuNames {
                for baro in ChipTable.known.barometerNames {
                    for (w, h) in [(640, 480), (1280, 720)] {
                        let o = OutputOptions(
                            uid: "urn:osh:rpi:10000000abcdef12:mast", north: north, videoWidth: w,
                            videoHeight: h, imuChip: imu,
                            magnetometerChip: ChipTable.known.builtInMagnetometer(imu) ?? imu, barometerChip: baro)
                        let specs = OutputCatalogue.all(o) + [PTZSchema.positionOutput(ptz)]
                        for spec in specs {
                            for f in ScalarFormat.allCases {
                                add(
                                    "\(spec.outputName).\(f == .omJSON ? "om-json" : "swe-json")",
                                    DatastreamBody.string(spec, systemLabel: "Pi Sensors [mast]", scalarFormat: f))
                            }
                        }
                        add(
                            "device_control",
                            String(
                                decoding: DeviceControl.body(
                                    systemLabel: "Pi Sensors [mast]",
                                    outputNames: specs.map(\.outputName)), as: UTF8.self))
                    }
                }
            }
        }
        add("device_control.any", String(decoding: DeviceControl.body(systemLabel: "Pi", outputNames: []), as: UTF8.self))
        add("ptz_control", String(decoding: PTZSchema.controlStreamBody(ptz, systemLabel: "Pi"), as: UTF8.self))
        add("ptz_control.nopresets", String(decoding: PTZSchema.controlStreamBody(noPresets, systemLabel: "Pi"), as: UTF8.self))
        return out
    }

    func testEveryGeneratedSchemaValidatesStrictlyAgainstSWECommon3() throws {
        let python = try pythonWithJSONSchema()
        let bodies = allBodies()
        let dir = NSTemporaryDirectory() + "osh-edge-swe-validate-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for (name, body) in bodies {
            XCTAssertTrue(FileManager.default.createFile(atPath: "\(dir)/\(name).json", contents: Data(body.utf8)))
        }
        // Both formats, all outputs, both control streams are in there.
        for what in ["om-json", "swe-json", "camera0_H264", "ptz_position", "device_control", "ptz_control", "Magnetometer"] {
            XCTAssertTrue(bodies.contains { $0.name.contains(what) }, what)
        }

        let r = try runTool(python, [Self.script, dir])
        let failures = r.output.split(separator: "\n").filter { $0.hasPrefix("FAIL ") }
        for f in failures { XCTFail(String(f)) }
        XCTAssertTrue(r.output.contains("validate-swe: \(bodies.count)/\(bodies.count) documents valid"), r.output)
        XCTAssertEqual(r.status, 0, r.output)

        // With `format` asserted as well (2020-12 only annotates it), one member fails, and it must
        // stay: the Block's `compression` is Android's "H264", the name OSH and its clients match,
        // where SWE Common 3 types it as an absolute URI.
        let f = try runTool(python, [Self.script, "--formats", dir])
        let formatFailures = f.output.split(separator: "\n").filter { $0.hasPrefix("FAIL ") }
        let cameras = bodies.filter { $0.name.hasPrefix("camera0_H264.") }.count
        XCTAssertGreaterThan(cameras, 0)
        XCTAssertEqual(formatFailures.count, cameras, f.output)
        for line in formatFailures where !line.hasSuffix(".json: /schema/encoding/members/1/compression: 'H264' is not a 'uri'") {
            XCTFail("unexpected format failure: \(line)")
        }
    }

    /// The validator is strict: what Android sends (no Vector label, unlabelled coordinates) fails,
    /// naming the member, and so does a swe+binary schema with only osh-core's `recordEncoding`.
    func testValidatorRejectsAndroidsBodies() throws {
        let python = try pythonWithJSONSchema()
        let android = Self.repo.appendingPathComponent("Tests/OSHCoreTests/Fixtures/android")
        let r = try runTool(
            python,
            [
                Self.script, android.appendingPathComponent("LSM6DSO_Magnetometer_data.om-json.json").path,
                android.appendingPathComponent("camera0_H264.swe-binary.json").path,
                android.appendingPathComponent("barometer.ios.json").path,
            ])
        XCTAssertEqual(r.status, 1, r.output)
        for expected in [
            "/schema/resultSchema/fields/0: 'label' is a required property",
            "/schema/resultSchema/fields/0/coordinates/2: 'definition' is a required property",
            "/schema/recordSchema/fields/1/elementType/elementType/fields/0: 'label' is a required property",
            "/schema: 'encoding' is a required property",
        ] {
            XCTAssertTrue(r.output.contains(expected), "missing «\(expected)» in\n\(r.output)")
        }
        XCTAssertTrue(r.output.contains("validate-swe: 0/3 documents valid"), r.output)
    }

    /// A Python 3 that can import jsonschema: the PATH's, else Debian's (package python3-jsonschema,
    /// installed by scripts/bootstrap.sh). Skips when there is none.
    private func pythonWithJSONSchema() throws -> String {
        for candidate in ["python3", "/usr/bin/python3"] {
            if let r = try? runTool(candidate, ["-c", "import jsonschema"]), r.status == 0 { return candidate }
        }
        throw XCTSkip("no python3 with the jsonschema module: install the Debian package python3-jsonschema (scripts/bootstrap.sh)")
    }
}
