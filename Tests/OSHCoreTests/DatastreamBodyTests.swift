import Foundation
import OSHCore
import XCTest

/// The generated datastream bodies against the Android (and iOS) bodies in the research report.
final class DatastreamBodyTests: XCTestCase {
    private func body(_ spec: OutputSpec, _ format: ScalarFormat = .omJSON, label: String = androidLabel) -> String {
        DatastreamBody.string(spec, systemLabel: label, scalarFormat: format)
    }

    private func assertMatches(_ spec: OutputSpec, _ fixtureName: String, _ format: ScalarFormat = .omJSON,
                               file: StaticString = #filePath, line: UInt = #line) throws {
        let expected = compactJSON(try fixture("android/\(fixtureName)"))
        XCTAssertEqual(body(spec, format), expected, "\(spec.outputName) differs from \(fixtureName)", file: file, line: line)
    }

    func testGPSMatchesAndroid() throws {
        try assertMatches(OutputCatalogue.gps(androidOptions()), "gps_data.om-json.json")
        try assertMatches(OutputCatalogue.gps(androidOptions()), "gps_data.swe-json.json", .sweJSON)
    }

    func testQuaternionMatchesAndroid() throws {
        try assertMatches(OutputCatalogue.quatOrientation(androidOptions()), "quat_orientation_data.om-json.json")
        try assertMatches(OutputCatalogue.quatOrientation(androidOptions()), "quat_orientation_data.swe-json.json", .sweJSON)
    }

    func testEulerMagneticMatchesAndroid() throws {
        try assertMatches(OutputCatalogue.eulerOrientation(androidOptions(north: .magnetic)), "euler_orientation_data.om-json.json")
        try assertMatches(OutputCatalogue.eulerOrientation(androidOptions(north: .magnetic)), "euler_orientation_data.swe-json.json", .sweJSON)
    }

    func testEulerTrueNorthDiffersOnlyInHeadingDefinition() throws {
        let android = compactJSON(try fixture("android/euler_orientation_data.om-json.json"))
        let ours = body(OutputCatalogue.eulerOrientation(androidOptions(north: .true)))
        XCTAssertEqual(ours, android.replacingOccurrences(of: "property/MagneticHeading", with: "property/TrueHeading"))
        XCTAssertNotEqual(ours, android)
    }

    func testCameraMatchesAndroid() throws {
        try assertMatches(OutputCatalogue.video(androidOptions()), "camera0_H264.swe-binary.json")
        // The scalar format never changes a binary output.
        try assertMatches(OutputCatalogue.video(androidOptions()), "camera0_H264.swe-binary.json", .sweJSON)
    }

    func testCameraSizeFromOptions() {
        var o = androidOptions()
        o.videoWidth = 1280
        o.videoHeight = 720
        let b = body(OutputCatalogue.video(o))
        XCTAssertTrue(b.contains("GridHeight\",\"axisID\":\"Y\",\"value\":720}"))
        XCTAssertTrue(b.contains("GridWidth\",\"axisID\":\"X\",\"value\":1280}"))
    }

    func testInertialOutputsMatchAndroid() throws {
        let o = androidOptions()
        XCTAssertEqual(OutputCatalogue.accelerometer(o).outputName, "LSM6DSO_Accelerometer_data")
        try assertMatches(OutputCatalogue.accelerometer(o), "LSM6DSO_Accelerometer_data.om-json.json")
        try assertMatches(OutputCatalogue.gyroscope(o), "LSM6DSO_Gyroscope_data.om-json.json")
        try assertMatches(OutputCatalogue.magnetometer(o), "LSM6DSO_Magnetometer_data.om-json.json")
    }

    func testInertialNamesFollowAndroid() {
        XCTAssertEqual(OutputCatalogue.inertialOutputName("LSM6DSO Accelerometer"), "LSM6DSO_Accelerometer_data")
        XCTAssertEqual(OutputCatalogue.inertialOutputName("AK09916 Magnetometer"), "AK09916_Magnetometer_data")
        XCTAssertEqual(OutputCatalogue.inertialOutputName("ICM 20948/gyro"), "ICM_20948_gyro_data")
    }

    /// barometer and audio_level: the iOS components, in our Android conventions.
    /// The iOS body differs from ours in exactly three ways: the datastream name (bare output name
    /// on iOS), the root record's name (omitted by iOS), and the format (iOS only registers swe+json).
    func testIOSOnlyOutputsKeepIOSComponents() throws {
        for (spec, file) in [(OutputCatalogue.barometer(androidOptions()), "barometer.ios.json"),
                             (OutputCatalogue.audioLevel(androidOptions()), "audio_level.ios.json")] {
            let ios = compactJSON(try fixture("android/\(file)"))
            let name = spec.outputName
            // swe+json: a recordSchema whose time field is SamplingTime, as iOS sends it.
            let expectedSwe = ios
                .replacingOccurrences(of: "{\"name\":\"\(name)\"", with: "{\"name\":\"\(androidLabel) - \(name)\"")
                .replacingOccurrences(of: "\"recordSchema\":{\"type\":\"DataRecord\",",
                                      with: "\"recordSchema\":{\"type\":\"DataRecord\",\"name\":\"\(name)\",")
            XCTAssertEqual(body(spec, .sweJSON), expectedSwe)
            // om+json: the same record without its time field, under resultSchema.
            let timeField = compactJSON(try fixture("android/time-sampling.json"))
            let expectedOM = expectedSwe
                .replacingOccurrences(of: "application/swe+json", with: "application/om+json")
                .replacingOccurrences(of: "\"recordSchema\"", with: "\"resultSchema\"")
                .replacingOccurrences(of: timeField + ",", with: "")
            XCTAssertEqual(body(spec, .omJSON), expectedOM)
        }
    }

    func testDatastreamNameUsesSystemLabel() {
        let b = body(OutputCatalogue.barometer(androidOptions()), label: "Pi Sensors [mast-3]")
        XCTAssertTrue(b.hasPrefix("{\"name\":\"Pi Sensors [mast-3] - barometer\",\"outputName\":\"barometer\",\"schema\":{\"obsFormat\":"))
    }

    func testNonASCIILabelsPassThroughAndControlCharactersAreEscaped() {
        let b = body(OutputCatalogue.gps(androidOptions()), label: "Capteurs \"Météo\" ☂\n\u{01}")
        XCTAssertTrue(b.hasPrefix("{\"name\":\"Capteurs \\\"Météo\\\" ☂\\n\\u0001 - gps_data\""), b)
        XCTAssertNotNil(try JSONSerialization.jsonObject(with: Data(b.utf8)))
    }

    func testDeviceHealthIsWellFormedAndDocumented() throws {
        let spec = OutputCatalogue.deviceHealth(androidOptions())
        let leaves = spec.leaves.map(\.path)
        XCTAssertEqual(leaves, ["/time", "/cpuTemperature", "/underVoltage", "/throttled", "/throttleFlags", "/loadAverage",
                                "/memoryAvailable", "/diskFree", "/queueDepth", "/droppedCount", "/uptime", "/clockSynchronized"])
        // Every field has a sensorml.com definition and a label; quantities have UCUM codes.
        guard case .record(let fields) = spec.record.kind else { return XCTFail("not a record") }
        for f in fields.dropFirst() {
            XCTAssertTrue(f.definition?.hasPrefix(SWE.propertyPrefix) ?? false, "\(f.name ?? "?")")
            XCTAssertNotNil(f.label)
        }
        let b = body(spec)
        XCTAssertTrue(b.contains("\"uom\":{\"code\":\"Cel\"}"))
        XCTAssertNotNil(try JSONSerialization.jsonObject(with: Data(b.utf8)))
    }

    func testAllOutputsHaveUniqueNamesAndATimeFieldFirst() {
        let specs = OutputCatalogue.all(OutputOptions(uid: "urn:osh:rpi:10000000abcdef12"))
        XCTAssertEqual(Set(specs.map(\.outputName)).count, specs.count)
        XCTAssertEqual(specs.count, 10)
        for s in specs {
            XCTAssertEqual(s.leaves.first?.path, "/time", s.outputName)
            XCTAssertEqual(s.leaves.first?.component.definition, SWE.samplingTime, s.outputName)
        }
    }
}
