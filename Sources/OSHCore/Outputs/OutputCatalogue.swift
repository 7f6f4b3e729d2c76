// The output catalogue: every datastream osh-edge can publish, built as the OSH
// Android driver builds it (record and field definitions, labels, axis IDs, UOM
// codes, constraints, `cs` ENU frame, names, key order; the golden files in
// Tests/OSHCoreTests/Fixtures/android are its bodies) — plus what SWE Common 3
// requires and Android omits: a `label` on every Vector and on the camera's pixel
// Counts, a `definition` and `label` on the magnetometer's coordinates. Android's
// members stay, in Android's order; ours only add. `barometer` and `audio_level`
// have no Android counterpart and follow the iOS schemas; `device_health` is ours,
// in the same conventions.

/// Which north the Euler heading is referenced to (default `.true`).
public enum NorthReference: String, Sendable, CaseIterable {
    /// Magnetic heading + WMM declination; the heading definition says TrueHeading.
    case `true`
    /// Android's MagneticHeading, byte for byte.
    case magnetic
}

/// How the time field appears in a swe+json `recordSchema`.
public enum SweJSONTimeField: Sendable {
    /// PhenomenonTime: what the node stores for an Android om+json registration, so both
    /// formats give a node-identical datastream.
    case phenomenon
    /// SamplingTime: the record's own field, as the iOS app registers barometer/audio_level.
    case sampling
}

/// A PhysicalComponent of the system description (one per sensor an output reads).
public struct SystemComponentInfo: Sendable, Equatable {
    public var id: String
    public var label: String
    public init(id: String, label: String) {
        self.id = id
        self.label = label
    }
}

/// One output: its name, its record (time field first, as on the device), and how it travels.
public struct OutputSpec: Sendable, Equatable {
    /// Which output this is, whatever the chip in its name (`<chip>_Accelerometer_data` is `.accelerometer`).
    public var kind: OutputKind
    public var outputName: String
    /// The record; its leaves are walked once here, never per observation.
    public var record: DataComponent {
        didSet { leaves = SchemaWalker.leaves(of: record) }
    }
    /// Non-nil for swe+binary outputs (video): the record encoding sent with the datastream.
    public var binaryEncoding: BinaryEncoding?
    public var sweJSONTime: SweJSONTimeField
    /// The sensor behind the output, listed in the system's `components`.
    public var source: SystemComponentInfo
    /// Hz until the config or a `setRate` command says otherwise (`all` takes them from the
    /// output's declaration).
    public var defaultRate: Double

    public init(
        kind: OutputKind = .other, outputName: String, record: DataComponent, binaryEncoding: BinaryEncoding? = nil,
        sweJSONTime: SweJSONTimeField, source: SystemComponentInfo, defaultRate: Double = 10
    ) {
        self.kind = kind
        self.defaultRate = defaultRate
        self.outputName = outputName
        self.record = record
        self.leaves = SchemaWalker.leaves(of: record)
        self.binaryEncoding = binaryEncoding
        self.sweJSONTime = sweJSONTime
        self.source = source
    }

    /// The record's leaves in SchemaWalker order, walked when the record is set.
    public private(set) var leaves: [SchemaLeaf]
}

/// Everything the catalogue needs to know about this board to name and frame outputs.
public struct OutputOptions: Sendable, Equatable {
    /// The system UID; the local frame is `<uid>#LOCAL_FRAME` as on Android.
    public var uid: String
    public var north: NorthReference
    public var videoWidth: Int
    public var videoHeight: Int
    public var cameraIndex: Int
    /// Sensor names for the raw inertial outputs, Android style: `"<chip> Accelerometer"` → `<chip>_Accelerometer_data`.
    public var accelerometerName: String
    public var gyroscopeName: String
    public var magnetometerName: String
    public var barometerChip: String
    public var imuChip: String
    /// The chip behind `temperature` and `humidity` (a hygrometer, else the barometer).
    public var climateChip: String

    /// `magnetometerChip`: the magnetometer's own name (the one in the IMU's package, or the
    /// separate chip; the IMU's name when it has none) — the driver table knows which.
    public init(
        uid: String, north: NorthReference = .true, videoWidth: Int = 640, videoHeight: Int = 480,
        cameraIndex: Int = 0, imuChip: String = "MPU9250", magnetometerChip: String = "AK8963",
        barometerChip: String = "BMP280"
    ) {
        self.uid = uid
        self.north = north
        self.videoWidth = videoWidth
        self.videoHeight = videoHeight
        self.cameraIndex = cameraIndex
        self.imuChip = imuChip
        self.accelerometerName = imuChip + " Accelerometer"
        self.gyroscopeName = imuChip + " Gyroscope"
        self.magnetometerName = magnetometerChip + " Magnetometer"
        self.barometerChip = barometerChip
        climateChip = barometerChip
    }

    public var localFrame: String { uid + "#LOCAL_FRAME" }
}

public enum OutputCatalogue {
    // MARK: Field helpers (osh-core GeoPosHelper/VectorHelper shapes)

    static func quantity(
        _ name: String, def: String?, label: String?, description: String? = nil,
        axis: String? = nil, uom: String, constraint: ClosedInterval? = nil,
        type: ScalarDataType = .double
    ) -> DataComponent {
        DataComponent(
            .quantity(
                Quantity(
                    uom: .code(uom), axisID: axis,
                    constraint: constraint.map { AllowedValues(intervals: [$0]) },
                    dataType: type)),
            name: name, definition: def, label: label, description: description)
    }

    static func count(_ name: String, def: String?, label: String?, description: String? = nil) -> DataComponent {
        DataComponent(.count(Count()), name: name, definition: def, label: label, description: description)
    }

    static func boolean(_ name: String, def: String, label: String, description: String? = nil) -> DataComponent {
        DataComponent(.boolean(BooleanComponent()), name: name, definition: def, label: label, description: description)
    }

    static func record(_ name: String, def: String?, _ fields: [DataComponent]) -> DataComponent {
        DataComponent(.record([SWE.samplingTimeField()] + fields), name: name, definition: def)
    }

    // MARK: gps_data (§1.1)

    public static func gps(_ o: OutputOptions) -> OutputSpec {
        let location = DataComponent(
            .vector(
                Vector(
                    referenceFrame: SWE.epsg4979, localFrame: o.localFrame,
                    coordinates: [
                        quantity("lat", def: SWE.property("GeodeticLatitude"), label: "Geodetic Latitude", axis: "Lat", uom: "deg"),
                        quantity("lon", def: SWE.property("Longitude"), label: "Longitude", axis: "Lon", uom: "deg"),
                        quantity(
                            "alt", def: SWE.property("HeightAboveEllipsoid"), label: "Ellipsoidal Height",
                            description: "Altitude above WGS84 ellipsoid", axis: "h", uom: "m"),
                    ])), name: "location", definition: SWE.property("LocationVector"), label: "Location")
        return OutputSpec(
            kind: .gps, outputName: "gps_data",
            record: record("gps_data", def: SWE.property("Location"), [location]),
            sweJSONTime: .phenomenon, source: SystemComponentInfo(id: "LOC_GPS", label: "gps"))
    }

    // MARK: quat_orientation_data (§1.2)

    public static func quatOrientation(_ o: OutputOptions) -> OutputSpec {
        let coef = SWE.property("Coefficient")
        let orient = DataComponent(
            .vector(
                Vector(
                    referenceFrame: SWE.enuFrame, localFrame: o.localFrame,
                    coordinates: [
                        quantity("qx", def: coef, label: "X Component", axis: "X", uom: "1", type: .float32),
                        quantity("qy", def: coef, label: "Y Component", axis: "Y", uom: "1", type: .float32),
                        quantity("qz", def: coef, label: "Z Component", axis: "Z", uom: "1", type: .float32),
                        quantity("q0", def: coef, label: "Scalar Component", uom: "1", type: .float32),
                    ])), name: "orient", definition: SWE.property("RotationQuaternion"), label: "Orientation Quaternion",
            description: "Orientation quaternion, usually normalized")
        return OutputSpec(
            kind: .quatOrientation, outputName: "quat_orientation_data",
            record: record("quat_orientation_data", def: SWE.property("OrientationQuaternion"), [orient]),
            sweJSONTime: .phenomenon, source: rotationVector(o))
    }

    // MARK: euler_orientation_data (§1.3)

    public static func eulerOrientation(_ o: OutputOptions) -> OutputSpec {
        let heading = o.north == .true ? "TrueHeading" : "MagneticHeading"
        let orient = DataComponent(
            .vector(
                Vector(
                    referenceFrame: SWE.enuFrame, localFrame: o.localFrame,
                    coordinates: [
                        quantity(
                            "heading", def: SWE.property(heading), label: "Heading Angle",
                            description: "Heading angle from east direction, measured counter clockwise",
                            axis: "Z", uom: "deg", constraint: ClosedInterval(-180, 180), type: .float32),
                        quantity(
                            "pitch", def: SWE.property("PitchAngle"), label: "Pitch Angle",
                            description:
                                "Rotation around the lateral axis, up/down from the local horizontal plane (positive when pointing up)",
                            axis: "X", uom: "deg", constraint: ClosedInterval(-90, 90), type: .float32),
                        quantity(
                            "roll", def: SWE.property("RollAngle"), label: "Roll Angle",
                            description: "Rotation around the longitudinal axis",
                            axis: "Y", uom: "deg", constraint: ClosedInterval(-180, 180), type: .float32),
                    ])), name: "orient", definition: SWE.property("EulerAngles"), label: "Euler Angles",
            description: "Euler angles with order of rotation heading/pitch/roll in rotating frame")
        return OutputSpec(
            kind: .eulerOrientation, outputName: "euler_orientation_data",
            record: record("euler_orientation_data", def: SWE.property("OrientationEuler"), [orient]),
            sweJSONTime: .phenomenon, source: rotationVector(o))
    }

    static func rotationVector(_ o: OutputOptions) -> SystemComponentInfo {
        SystemComponentInfo(id: "SENSOR_ROTATION_VECTOR", label: o.imuChip + " Rotation Vector")
    }

    // MARK: barometer (§1.4, iOS schema)

    public static func barometer(_ o: OutputOptions) -> OutputSpec {
        OutputSpec(
            kind: .barometer, outputName: "barometer",
            record: record(
                "barometer", def: SWE.property("AtmosphericPressure"),
                [
                    quantity("pressure", def: SWE.property("AtmosphericPressure"), label: "Atmospheric Pressure", uom: "hPa"),
                    quantity("relativeAltitude", def: SWE.property("AltitudeAboveEllipsoid"), label: "Relative Altitude", uom: "m"),
                ]),
            sweJSONTime: .sampling,
            source: SystemComponentInfo(id: "SENSOR_PRESSURE", label: o.barometerChip + " Pressure Sensor"))
    }

    // MARK: audio_level (§1.5, iOS schema)

    public static func audioLevel(_ o: OutputOptions) -> OutputSpec {
        let spl = SWE.property("SoundPressureLevel")
        return OutputSpec(
            kind: .audioLevel, outputName: "audio_level",
            record: record(
                "audio_level", def: SWE.property("SoundLevel"),
                [
                    quantity("rmsdB", def: spl, label: "RMS Sound Level", uom: "dB", type: .float32),
                    quantity("peakdB", def: spl, label: "Peak Sound Level", uom: "dB", type: .float32),
                ]),
            sweJSONTime: .sampling, source: SystemComponentInfo(id: "AUDIO_MIC", label: "Audio MIC"))
    }

    // MARK: camera<N>_H264 (§1.6)

    public static func video(_ o: OutputOptions, codec: String = "H264") -> OutputSpec {
        let name = "camera\(o.cameraIndex)_\(codec)"
        func gridCount(_ def: String, _ axis: String, _ value: Int) -> DataComponent {
            DataComponent(.count(Count(axisID: axis, value: value)), name: "elementCount", definition: SWE.property(def))
        }
        let pixel = DataComponent(
            .record([
                DataComponent(
                    .count(Count(dataType: .unsignedByte)), name: "red", definition: SWE.property("RedChannel"), label: "Red Channel"),
                DataComponent(
                    .count(Count(dataType: .unsignedByte)), name: "green", definition: SWE.property("GreenChannel"), label: "Green Channel"),
                DataComponent(
                    .count(Count(dataType: .unsignedByte)), name: "blue", definition: SWE.property("BlueChannel"), label: "Blue Channel"),
            ]), name: "pixel")
        let row = DataComponent(
            .array(
                DataArray(
                    elementCount: .inline(gridCount("GridWidth", "X", o.videoWidth)),
                    elementType: pixel)), name: "row")
        let img = DataComponent(
            .array(
                DataArray(
                    elementCount: .inline(gridCount("GridHeight", "Y", o.videoHeight)),
                    elementType: row)),
            name: "img", definition: SWE.property("RasterImage"))
        let encoding = BinaryEncoding(members: [
            .component(ref: "/time", dataType: .double),
            .block(ref: "/img", compression: codec),
        ])
        return OutputSpec(
            kind: .video, outputName: name, record: record(name, def: SWE.property("VideoFrame"), [img]),
            binaryEncoding: encoding, sweJSONTime: .sampling,
            source: SystemComponentInfo(id: "CAM_\(o.cameraIndex)", label: "Camera #\(o.cameraIndex)"))
    }

    // MARK: Raw inertial outputs (§5)

    /// Android names inertial outputs after the device's sensor: spaces become `_`, then `_data`.
    public static func inertialOutputName(_ sensorName: String) -> String {
        var s = ""
        for ch in sensorName.unicodeScalars {
            let ok = ("a"..."z").contains(ch) || ("A"..."Z").contains(ch) || ("0"..."9").contains(ch) || ch == "_" || ch == "-"
            s.unicodeScalars.append(ok ? ch : "_")
        }
        return s + "_data"
    }

    public static func accelerometer(_ o: OutputOptions) -> OutputSpec {
        let def = SWE.qudt("LinearAcceleration")
        return inertial(
            .accelerometer, o, sensorName: o.accelerometerName, vectorName: "accel", vectorDef: def, vectorLabel: "Acceleration",
            sourceID: "SENSOR_ACCELEROMETER",
            [
                quantity("ax", def: def, label: "X Accel", axis: "X", uom: "m/s2"),
                quantity("ay", def: def, label: "Y Accel", axis: "Y", uom: "m/s2"),
                quantity("az", def: def, label: "Z Accel", axis: "Z", uom: "m/s2"),
            ])
    }

    public static func gyroscope(_ o: OutputOptions) -> OutputSpec {
        let def = SWE.qudt("AngularVelocity")
        return inertial(
            .gyroscope, o, sensorName: o.gyroscopeName, vectorName: "omega", vectorDef: def, vectorLabel: "Angular Velocity",
            sourceID: "SENSOR_GYROSCOPE",
            [
                quantity("wx", def: def, label: "X Angular Rate", axis: "X", uom: "rad/s", type: .float32),
                quantity("wy", def: def, label: "Y Angular Rate", axis: "Y", uom: "rad/s", type: .float32),
                quantity("wz", def: def, label: "Z Angular Rate", axis: "Z", uom: "rad/s", type: .float32),
            ])
    }

    public static func magnetometer(_ o: OutputOptions) -> OutputSpec {
        // Android's magnetometer coordinates carry no definition and no label (SWEHelper.newVector);
        // SWE Common 3 requires both, so they take the vector's definition, as the other inertial
        // outputs' coordinates do.
        let def = SWE.property("MagneticField")
        return inertial(
            .magnetometer, o, sensorName: o.magnetometerName, vectorName: "mag", vectorDef: def, vectorLabel: "Magnetic Field",
            sourceID: "SENSOR_MAGNETIC_FIELD",
            [
                quantity("mx", def: def, label: "Magnetic Field X", axis: "X", uom: "uT"),
                quantity("my", def: def, label: "Magnetic Field Y", axis: "Y", uom: "uT"),
                quantity("mz", def: def, label: "Magnetic Field Z", axis: "Z", uom: "uT"),
            ])
    }

    static func inertial(
        _ kind: OutputKind, _ o: OutputOptions, sensorName: String, vectorName: String, vectorDef: String,
        vectorLabel: String, sourceID: String, _ coords: [DataComponent]
    ) -> OutputSpec {
        let name = inertialOutputName(sensorName)
        // Android passes the local frame as the Vector's referenceFrame and sets no localFrame; records have no definition.
        let vector = DataComponent(
            .vector(Vector(referenceFrame: o.localFrame, coordinates: coords)),
            name: vectorName, definition: vectorDef, label: vectorLabel)
        return OutputSpec(
            kind: kind, outputName: name, record: record(name, def: nil, [vector]), sweJSONTime: .phenomenon,
            source: SystemComponentInfo(id: sourceID, label: sensorName))
    }

    // MARK: device_health (ours)

    /// Board health, once a minute. Field meanings:
    /// - `cpuTemperature` (Cel): SoC temperature from the thermal zone.
    /// - `underVoltage`, `throttled`: the firmware's *current* under-voltage and throttling flags.
    /// - `throttleFlags`: the raw firmware `get_throttled` bitmask (bit 0 under-voltage, 1 frequency capped,
    ///   2 throttled, 3 soft temperature limit; bits 16–19 the same conditions since boot), 0 off a Pi.
    /// - `loadAverage`: 1-minute load average (runnable tasks, unit 1).
    /// - `memoryAvailable` (MBy): MemAvailable.
    /// - `diskFree` (%): free space on the state directory's file system.
    /// - `queueDepth`: observations waiting in the ring; `droppedCount`: observations dropped since start.
    public static func deviceHealth(_ o: OutputOptions) -> OutputSpec {
        let p = SWE.property
        return OutputSpec(
            kind: .deviceHealth, outputName: "device_health",
            record: record(
                "device_health", def: p("DeviceHealth"),
                [
                    quantity("cpuTemperature", def: p("Temperature"), label: "CPU Temperature", uom: "Cel", type: .float32),
                    boolean("underVoltage", def: p("UnderVoltage"), label: "Under-voltage"),
                    boolean("throttled", def: p("Throttled"), label: "Throttled"),
                    count(
                        "throttleFlags", def: p("ThrottleFlags"), label: "Throttle Flags",
                        description:
                            "Firmware get_throttled bitmask: bits 0-3 now (under-voltage, frequency capped, throttled, soft temperature limit), bits 16-19 since boot"
                    ),
                    quantity(
                        "loadAverage", def: p("LoadAverage"), label: "Load Average", description: "1-minute load average", uom: "1",
                        type: .float32),
                    quantity("memoryAvailable", def: p("AvailableMemory"), label: "Available Memory", uom: "MBy", type: .float32),
                    quantity("diskFree", def: p("FreeDiskSpace"), label: "Free Disk Space", uom: "%", type: .float32),
                    count("queueDepth", def: p("QueueDepth"), label: "Queued Observations"),
                    count(
                        "droppedCount", def: p("DroppedCount"), label: "Dropped Observations",
                        description: "Observations dropped since the agent started"),
                    quantity(
                        "uptime", def: p("Uptime"), label: "Uptime", description: "Seconds since the board booted",
                        uom: "s", type: .float32),
                    boolean(
                        "clockSynchronized", def: p("ClockSynchronized"), label: "Clock Synchronized",
                        description: "The system clock is synchronised (NTP or GPS); false while observations are held"),
                ]),
            sweJSONTime: .sampling,
            source: SystemComponentInfo(id: "SENSOR_BOARD", label: "Board Health"))
    }

    // MARK: All outputs

    /// Every declared output (`OutputDeclarations.all`, in its order), named and framed for this board.
    public static func all(_ o: OutputOptions) -> [OutputSpec] {
        OutputDeclarations.all.map { d in
            var spec = d.spec(o)
            spec.defaultRate = d.defaultRate
            return spec
        }
    }
}
