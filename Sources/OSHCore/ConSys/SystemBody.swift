// The SensorML `PhysicalSystem` body of `POST /systems` / `PUT /systems/{id}`
// (Content-Type application/sml+json), member for member what the Android driver
// sends: type, id, uniqueId, definition, label,
// [description], validTime, localReferenceFrames, components. `type` is first in
// every SensorML object, as osh-core's SMLJsonBindings requires. Outputs are not
// listed: SML outputs in a POST would make the node create datastreams on its own.

/// One axis of a local reference frame.
public struct FrameAxis: Sendable, Equatable {
    public var name: String
    public var description: String
    public init(name: String, description: String) {
        self.name = name
        self.description = description
    }
}

/// A SensorML spatial frame (`localReferenceFrames` item).
public struct LocalReferenceFrame: Sendable, Equatable {
    public var id: String
    public var origin: String
    public var axes: [FrameAxis]
    public init(id: String, origin: String, axes: [FrameAxis]) {
        self.id = id
        self.origin = origin
        self.axes = axes
    }

    /// The board's own frame, the Pi counterpart of Android's device-screen frame. `<uid>#LOCAL_FRAME`
    /// (OutputOptions.localFrame) refers to it. Right-handed: x right, y up, z out of the component side.
    public static let board = LocalReferenceFrame(
        id: "LOCAL_FRAME",
        origin: "Center of the sensor board",
        axes: [
            FrameAxis(
                name: "x",
                description: "The X axis is in the plane of the board and points to the right "
                    + "when the board is seen from its component side with the GPIO header along the top edge"),
            FrameAxis(
                name: "y",
                description: "The Y axis is in the plane of the board and points up, "
                    + "towards the GPIO header, in that same view"),
            FrameAxis(
                name: "z",
                description: "The Z axis is perpendicular to the board and points out of "
                    + "its component side"),
        ])
}

/// What the system description says about the board.
public struct SystemDescription: Sendable, Equatable {
    public var uid: String
    public var label: String
    /// The board serial, used for the SensorML `id` (`RPI_SENSORS_<serial>`).
    public var serial: String
    /// Start of `validTime`, Unix epoch seconds (the agent's start, as Android uses the app's start).
    public var validFrom: Double
    public var description: String?
    public var frame: LocalReferenceFrame
    /// One PhysicalComponent per entry, in order, duplicates kept (Android lists the rotation-vector
    /// sensor twice when both quat and euler outputs use it).
    public var components: [SystemComponentInfo]

    public init(
        uid: String, label: String, serial: String, validFrom: Double, description: String? = nil,
        frame: LocalReferenceFrame = .board, components: [SystemComponentInfo]
    ) {
        self.uid = uid
        self.label = label
        self.serial = serial
        self.validFrom = validFrom
        self.description = description
        self.frame = frame
        self.components = components
    }

    /// Components taken from the outputs in the order given (`spec.source` of each).
    public init(
        uid: String, label: String, serial: String, validFrom: Double, description: String? = nil,
        frame: LocalReferenceFrame = .board, outputs: [OutputSpec]
    ) {
        self.init(
            uid: uid, label: label, serial: serial, validFrom: validFrom, description: description,
            frame: frame, components: outputs.map(\.source))
    }
}

public enum SystemBody {
    public static let idPrefix = "RPI_SENSORS_"

    /// The SensorML `id`: `RPI_SENSORS_` + serial (Android: `ANDROID_SENSORS_` + Build.SERIAL). The id
    /// is an XML ID, so characters other than letters, digits, `_`, `-`, `.` become `_`; an empty
    /// serial gives `unknown`, as Build.SERIAL does on current Android.
    public static func xmlID(serial: String) -> String {
        let s = SystemUID.trim(serial)
        guard !s.isEmpty else { return idPrefix + "unknown" }
        var out = [UInt8]()
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."):
                out.append(b)
            default:
                out.append(UInt8(ascii: "_"))
            }
        }
        return idPrefix + String(decoding: out, as: UTF8.self)
    }

    public static func write(_ d: SystemDescription, to out: ByteBuffer) {
        var w = JSONWriter(out)
        w.beginObject()
        w.key("type"); w.string("PhysicalSystem")
        w.key("id"); w.string(xmlID(serial: d.serial))
        w.key("uniqueId"); w.string(d.uid)
        w.key("definition"); w.string(SWE.sensorDefinition)
        w.key("label"); w.string(d.label)
        if let desc = d.description, !desc.isEmpty { w.key("description"); w.string(desc) }
        w.key("validTime"); w.beginArray()
        w.string(ISOTime.string(epochSeconds: d.validFrom))
        w.string("now")
        w.endArray()
        w.key("localReferenceFrames"); w.beginArray()
        w.beginObject()
        w.key("id"); w.string(d.frame.id)
        w.key("origin"); w.string(d.frame.origin)
        w.key("axes"); w.beginArray()
        for axis in d.frame.axes {
            w.beginObject()
            w.key("name"); w.string(axis.name)
            w.key("description"); w.string(axis.description)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        w.endArray()
        if !d.components.isEmpty {
            w.key("components"); w.beginArray()
            for (i, c) in d.components.enumerated() {
                w.beginObject()
                w.key("type"); w.string("PhysicalComponent")
                w.key("name"); w.string("sensor" + String(i))
                w.key("id"); w.string(c.id)
                w.key("label"); w.string(c.label)
                w.endObject()
            }
            w.endArray()
        }
        w.endObject()
    }

    /// Convenience for the registration inputs the agent has.
    public static func write(
        uid: String, label: String, serial: String, validFrom: Double,
        description: String? = nil, outputs: [OutputSpec], to out: ByteBuffer
    ) {
        write(
            SystemDescription(
                uid: uid, label: label, serial: serial, validFrom: validFrom,
                description: description, outputs: outputs), to: out)
    }

    public static func bytes(_ d: SystemDescription) -> [UInt8] {
        let b = ByteBuffer()
        write(d, to: b)
        return b.array
    }

    public static func string(_ d: SystemDescription) -> String {
        let b = ByteBuffer()
        write(d, to: b)
        return b.string
    }
}
