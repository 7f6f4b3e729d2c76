import Foundation
import OSHCore
import XCTest

/// The generated datastream bodies against the Android (and iOS) bodies in the research report.
final class DatastreamBodyTests: XCTestCase {
    private func body(_ spec: OutputSpec, _ format: ScalarFormat = .omJSON, label: String = androidLabel) -> String {
        DatastreamBody.string(spec, systemLabel: label, scalarFormat: format)
    }

    /// Android's body must be an ordered sub-structure of ours (same members, values and order),
    /// and what we add must be exactly `additions`: the members SWE Common 3 requires and Android omits.
    private func assertContains(
        _ spec: OutputSpec, _ fixtureName: String, _ format: ScalarFormat = .omJSON,
        replacing: (String, String)? = nil, additions: [String],
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        var text = try fixture("android/\(fixtureName)")
        if let (old, new) = replacing { text = text.replacingOccurrences(of: old, with: new) }
        let android = try JSONValue.parse(text)
        let ours = try JSONValue.parse(body(spec, format))
        let r = orderedContainment(android, in: ours)
        XCTAssertEqual(r.problems, [], "\(spec.outputName) does not contain \(fixtureName)", file: file, line: line)
        XCTAssertEqual(r.additions, additions, "\(spec.outputName) vs \(fixtureName): members added", file: file, line: line)
    }

    /// The label SWE Common 3 requires on a Vector (Android's have none), at the vector's field index.
    private func vectorLabel(_ root: String, _ field: Int) -> String { "/schema/\(root)/fields/\(field)/label" }

    func testGPSContainsAndroid() throws {
        try assertContains(
            OutputCatalogue.gps(androidOptions()), "gps_data.om-json.json",
            additions: [vectorLabel("resultSchema", 0)])
        try assertContains(
            OutputCatalogue.gps(androidOptions()), "gps_data.swe-json.json", .sweJSON,
            additions: [vectorLabel("recordSchema", 1), "/schema/encoding"])
    }

    func testQuaternionContainsAndroid() throws {
        try assertContains(
            OutputCatalogue.quatOrientation(androidOptions()), "quat_orientation_data.om-json.json",
            additions: [vectorLabel("resultSchema", 0)])
        try assertContains(
            OutputCatalogue.quatOrientation(androidOptions()), "quat_orientation_data.swe-json.json", .sweJSON,
            additions: [vectorLabel("recordSchema", 1), "/schema/encoding"])
    }

    func testEulerMagneticContainsAndroid() throws {
        try assertContains(
            OutputCatalogue.eulerOrientation(androidOptions(north: .magnetic)), "euler_orientation_data.om-json.json",
            additions: [vectorLabel("resultSchema", 0)])
        try assertContains(
            OutputCatalogue.eulerOrientation(androidOptions(north: .magnetic)), "euler_orientation_data.swe-json.json",
            .sweJSON, additions: [vectorLabel("recordSchema", 1), "/schema/encoding"])
    }

    func testEulerTrueNorthDiffersOnlyInHeadingDefinition() throws {
        let spec = OutputCatalogue.eulerOrientation(androidOptions(north: .true))
        try assertContains(
            spec, "euler_orientation_data.om-json.json",
            replacing: ("property/MagneticHeading", "property/TrueHeading"),
            additions: [vectorLabel("resultSchema", 0)])
        let r = orderedContainment(
            try JSONValue.parse(try fixture("android/euler_orientation_data.om-json.json")),
            in: try JSONValue.parse(body(spec)))
        XCTAssertEqual(r.problems.count, 1)
        XCTAssertTrue(r.problems.first?.hasPrefix("/schema/resultSchema/fields/0/coordinates/0/definition: ") ?? false)
    }

    func testCameraContainsAndroid() throws {
        let pixel = "/schema/recordSchema/fields/1/elementType/elementType/fields"
        let added = (0..<3).map { "\(pixel)/\($0)/label" } + ["/schema/encoding"]
        try assertContains(OutputCatalogue.video(androidOptions()), "camera0_H264.swe-binary.json", additions: added)
        // The scalar format never changes a binary output.
        try assertContains(OutputCatalogue.video(androidOptions()), "camera0_H264.swe-binary.json", .sweJSON, additions: added)
    }

    /// swe+binary carries its encoding under both names, with the same content: osh-core reads
    /// `recordEncoding`, CS API Part 2 requires `encoding`.
    func testBinaryEncodingIsSentUnderBothNames() throws {
        let schema = try XCTUnwrap(try JSONValue.parse(body(OutputCatalogue.video(androidOptions())))["schema"])
        XCTAssertEqual(schema.objectKeys, ["obsFormat", "recordSchema", "recordEncoding", "encoding"])
        XCTAssertNotNil(schema["recordEncoding"])
        XCTAssertEqual(schema["recordEncoding"], schema["encoding"])
        let swe = try XCTUnwrap(try JSONValue.parse(body(OutputCatalogue.gps(androidOptions()), .sweJSON))["schema"])
        XCTAssertEqual(swe.objectKeys, ["obsFormat", "recordSchema", "encoding"])
        XCTAssertEqual(swe["encoding"], .object([("type", .string("JSONEncoding"))]))
    }

    func testCameraSizeFromOptions() {
        var o = androidOptions()
        o.videoWidth = 1280
        o.videoHeight = 720
        let b = body(OutputCatalogue.video(o))
        XCTAssertTrue(b.contains("GridHeight\",\"axisID\":\"Y\",\"value\":720}"))
        XCTAssertTrue(b.contains("GridWidth\",\"axisID\":\"X\",\"value\":1280}"))
    }

    func testInertialOutputsContainAndroid() throws {
        let o = androidOptions()
        XCTAssertEqual(OutputCatalogue.accelerometer(o).outputName, "LSM6DSO_Accelerometer_data")
        try assertContains(
            OutputCatalogue.accelerometer(o), "LSM6DSO_Accelerometer_data.om-json.json",
            additions: [vectorLabel("resultSchema", 0)])
        try assertContains(
            OutputCatalogue.gyroscope(o), "LSM6DSO_Gyroscope_data.om-json.json",
            additions: [vectorLabel("resultSchema", 0)])
        // Android's magnetometer coordinates have neither definition nor label.
        let coords = (0..<3).flatMap {
            [
                "/schema/resultSchema/fields/0/coordinates/\($0)/definition",
                "/schema/resultSchema/fields/0/coordinates/\($0)/label",
            ]
        }
        try assertContains(
            OutputCatalogue.magnetometer(o), "LSM6DSO_Magnetometer_data.om-json.json",
            additions: [vectorLabel("resultSchema", 0)] + coords)
    }

    /// The labels and definitions we add, as a client shows them.
    func testAddedLabelsAreHumanReadable() throws {
        let o = androidOptions()
        func vector(_ spec: OutputSpec) -> DataComponent? { spec.record.children.first { $0.typeName == "Vector" } }
        XCTAssertEqual(vector(OutputCatalogue.gps(o))?.label, "Location")
        XCTAssertEqual(vector(OutputCatalogue.quatOrientation(o))?.label, "Orientation Quaternion")
        XCTAssertEqual(vector(OutputCatalogue.eulerOrientation(o))?.label, "Euler Angles")
        XCTAssertEqual(vector(OutputCatalogue.accelerometer(o))?.label, "Acceleration")
        XCTAssertEqual(vector(OutputCatalogue.gyroscope(o))?.label, "Angular Velocity")
        let mag = try XCTUnwrap(vector(OutputCatalogue.magnetometer(o)))
        XCTAssertEqual(mag.label, "Magnetic Field")
        XCTAssertEqual(mag.children.map(\.label), ["Magnetic Field X", "Magnetic Field Y", "Magnetic Field Z"])
        XCTAssertEqual(Set(mag.children.map(\.definition)), [SWE.property("MagneticField")])
        let camera = body(OutputCatalogue.video(o))
        for c in ["Red", "Green", "Blue"] {
            XCTAssertTrue(
                camera.contains(
                    #"{"type":"Count","name":"\#(c.lowercased())","definition":"http://sensorml.com/ont/swe/property/\#(c)Channel","label":"\#(c) Channel"}"#
                ), c)
        }
    }

    func testInertialNamesFollowAndroid() {
        XCTAssertEqual(OutputCatalogue.inertialOutputName("LSM6DSO Accelerometer"), "LSM6DSO_Accelerometer_data")
        XCTAssertEqual(OutputCatalogue.inertialOutputName("AK09916 Magnetometer"), "AK09916_Magnetometer_data")
        XCTAssertEqual(OutputCatalogue.inertialOutputName("ICM 20948/gyro"), "ICM_20948_gyro_data")
    }

    /// barometer and audio_level: the iOS components, in our Android conventions.
    /// The iOS body differs from ours in exactly four ways: the datastream name (bare output name
    /// on iOS), the root record's name (omitted by iOS), the format (iOS only registers swe+json),
    /// and the CS API Part 2 `encoding` our swe+json schema carries.
    func testIOSOnlyOutputsKeepIOSComponents() throws {
        for (spec, file) in [
            (OutputCatalogue.barometer(androidOptions()), "barometer.ios.json"),
            (OutputCatalogue.audioLevel(androidOptions()), "audio_level.ios.json"),
        ] {
            let ios = compactJSON(try fixture("android/\(file)"))
            let name = spec.outputName
            // swe+json: a recordSchema whose time field is SamplingTime, as iOS sends it.
            let renamed =
                ios
                .replacingOccurrences(of: "{\"name\":\"\(name)\"", with: "{\"name\":\"\(androidLabel) - \(name)\"")
                .replacingOccurrences(
                    of: "\"recordSchema\":{\"type\":\"DataRecord\",",
                    with: "\"recordSchema\":{\"type\":\"DataRecord\",\"name\":\"\(name)\",")
            XCTAssertTrue(renamed.hasSuffix("]}}}"))
            XCTAssertEqual(body(spec, .sweJSON), renamed.dropLast(2) + ",\"encoding\":{\"type\":\"JSONEncoding\"}}}")
            // om+json: the same record without its time field, under resultSchema.
            let timeField = compactJSON(try fixture("android/time-sampling.json"))
            let expectedOM =
                renamed
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
        XCTAssertEqual(
            leaves,
            [
                "/time", "/cpuTemperature", "/underVoltage", "/throttled", "/throttleFlags", "/loadAverage",
                "/memoryAvailable", "/diskFree", "/queueDepth", "/droppedCount", "/uptime", "/clockSynchronized",
            ])
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
        XCTAssertEqual(specs.count, 12)
        for s in specs {
            XCTAssertEqual(s.leaves.first?.path, "/time", s.outputName)
            XCTAssertEqual(s.leaves.first?.component.definition, SWE.samplingTime, s.outputName)
        }
    }
}
