import OSHCore
import OSHPlatform
import XCTest

/// Typed outputs: each output's kind, its leaves walked once, and sample types that write by
/// leaf name, checked against the record at start.
final class TypedOutputTests: XCTestCase {
    private let o = OutputOptions(uid: "urn:osh:rpi:typed")

    /// The sampling paths read `spec.leaves` per observation; it used to walk the schema (and
    /// allocate a new array) on every read.
    func testLeavesAreWalkedOnceWhenTheRecordIsSet() {
        var spec = OutputCatalogue.gps(o)
        let a = spec.leaves
        let b = spec.leaves
        XCTAssertEqual(
            a.withUnsafeBufferPointer { $0.baseAddress }, b.withUnsafeBufferPointer { $0.baseAddress },
            "two reads of one spec's leaves must share one stored array")
        spec.record = OutputCatalogue.barometer(o).record
        XCTAssertEqual(spec.leaves.map(\.path), ["/time", "/pressure", "/relativeAltitude"], "a new record is walked again")
    }

    func testEveryCatalogueOutputHasItsKind() {
        let kinds = OutputCatalogue.all(o).map(\.kind)
        XCTAssertEqual(
            kinds,
            [
                .quatOrientation, .eulerOrientation, .accelerometer, .gyroscope, .magnetometer, .barometer,
                .temperature, .humidity, .gps, .video, .audioLevel, .deviceHealth,
            ])
        XCTAssertEqual(
            OutputCatalogue.all(OutputOptions(uid: "u", imuChip: "ICM20948", magnetometerChip: "AK09916")).first {
                $0.kind == .magnetometer
            }?.outputName,
            "AK09916_Magnetometer_data")
    }

    /// The name `schema`, `config check` and `run` give the magnetometer: its own chip's.
    func testTheMagnetometerIsNamedAfterItsOwnChip() {
        XCTAssertEqual(OutputCatalogue.magnetometer(o).outputName, "AK8963_Magnetometer_data")
        XCTAssertEqual(
            OutputCatalogue.magnetometer(OutputOptions(uid: "u", imuChip: "MPU9250", magnetometerChip: "AK8963")).outputName,
            "AK8963_Magnetometer_data")
        XCTAssertEqual(
            OutputCatalogue.magnetometer(OutputOptions(uid: "u", imuChip: "LSM6DSO", magnetometerChip: "LSM6DSO")).outputName,
            "LSM6DSO_Magnetometer_data")
        XCTAssertEqual(ChipTable.known.builtInMagnetometer("mpu-9250"), "AK8963")
        XCTAssertEqual(ChipTable.known.builtInMagnetometer("ICM-20948"), "AK09916")
        XCTAssertNil(ChipTable.known.builtInMagnetometer("LSM6DSOX"))
    }

    func testEverySampleTypeMatchesItsCatalogueRecord() throws {
        func check<S: OutputSample>(_ type: S.Type, _ spec: OutputSpec) throws {
            let slots = try SampleSlots<S>(spec: spec)
            XCTAssertEqual(slots.valueCount, spec.leaves.count - 1, spec.outputName)
        }
        try check(QuaternionSample.self, OutputCatalogue.quatOrientation(o))
        try check(EulerSample.self, OutputCatalogue.eulerOrientation(o))
        try check(AccelerationSample.self, OutputCatalogue.accelerometer(o))
        try check(AngularRateSample.self, OutputCatalogue.gyroscope(o))
        try check(MagneticFieldSample.self, OutputCatalogue.magnetometer(o))
        try check(BarometerSample.self, OutputCatalogue.barometer(o))
        try check(TemperatureSample.self, OutputCatalogue.temperature(o))
        try check(HumiditySample.self, OutputCatalogue.humidity(o))
        try check(PositionSample.self, OutputCatalogue.gps(o))
        try check(AudioLevelSample.self, OutputCatalogue.audioLevel(o))
        try check(DeviceHealthSample.self, OutputCatalogue.deviceHealth(o))
        try check(PTZPositionSample.self, PTZSchema.positionOutput(PTZCalibration()))
        XCTAssertThrowsError(try SampleSlots<BarometerSample>(spec: OutputCatalogue.audioLevel(o))) { e in
            XCTAssertTrue("\(e)".contains("audio_level"), "\(e)")
        }
    }

    /// Pressure and altitude land under their own names whatever order the record lists them in:
    /// the layout is checked by name, not implied by the order of assignments.
    func testBarometerValuesLandByNameNotByPosition() throws {
        var swapped = OutputCatalogue.barometer(o)
        swapped.record.kind = .record([swapped.record.children[0], swapped.record.children[2], swapped.record.children[1]])
        let slots = try SampleSlots<BarometerSample>(spec: swapped)
        let values = slots.withValues(BarometerSample(pressure: 1013.25, relativeAltitude: 2.5)) { Array($0) }
        XCTAssertEqual(values, [2.5, 1013.25])
        let enc = try ObservationEncoder(spec: swapped, format: .sweJSON)
        let out = ByteBuffer()
        try slots.withValues(BarometerSample(pressure: 1013.25, relativeAltitude: 2.5)) {
            try enc.encode(time: 1_767_225_600, values: $0, into: out)
        }
        XCTAssertTrue(out.string.contains("\"relativeAltitude\":2.5,\"pressure\":1013.25"), out.string)
    }

    /// A sample that writes a leaf twice (the swap's usual shape: one value assigned to both
    /// names' slot) or a name the record lacks is refused when the pipeline is built.
    func testASampleThatMisnamesOrRepeatsALeafIsRefusedAtStart() {
        enum Repeats: InertialAxes {
            static var kind: OutputKind { .accelerometer }
            static var leafNames: (x: StaticString, y: StaticString, z: StaticString) { ("ax", "ax", "az") }
        }
        enum Misnames: InertialAxes {
            static var kind: OutputKind { .accelerometer }
            static var leafNames: (x: StaticString, y: StaticString, z: StaticString) { ("ax", "ay", "a_z") }
        }
        XCTAssertThrowsError(try SampleSlots<AxesSample<Repeats>>(spec: OutputCatalogue.accelerometer(o))) { e in
            XCTAssertTrue("\(e)".contains("writes 'ax' twice"), "\(e)")
        }
        XCTAssertThrowsError(try SampleSlots<AxesSample<Misnames>>(spec: OutputCatalogue.accelerometer(o))) { e in
            XCTAssertTrue("\(e)".contains("'a_z', which is not a leaf"), "\(e)")
        }
    }
}
