// Typed outputs: one small value type per output that writes its values under their
// leaf names. `SampleSlots` (Publishing/OutputPort.swift) checks those names against the
// output's record once, when the pipeline is built, and from then on writes each value into
// its slot without looking at a name: a sample that names a leaf the record lacks, misses one,
// or writes one twice is refused at start, and a record whose leaves are reordered still gets
// every value in the right place — the fixed layout is no longer implied by the order of assignments.

/// One output's values: `write` calls `slots.set(leafName, value)` once per value leaf, in a
/// fixed order (no branches: the order seen at start is the order used ever after).
public protocol OutputSample {
    static var kind: OutputKind { get }
    /// A sample with every value zero (used once, to learn the names it writes).
    init()
    func write(to slots: inout SlotWriter)
}

// MARK: The value type of each catalogue output (field names: OutputCatalogue's leaf names;
// `BarometerSample` is in Barometers/BarometerSeries.swift, beside the rules that make it)

public struct AudioLevelSample: OutputSample, Equatable {
    public static let kind = OutputKind.audioLevel
    public var rmsdB = 0.0
    public var peakdB = 0.0
    public init() {}
    public init(rmsdB: Double, peakdB: Double) {
        self.rmsdB = rmsdB
        self.peakdB = peakdB
    }
    public func write(to s: inout SlotWriter) {
        s.set("rmsdB", rmsdB)
        s.set("peakdB", peakdB)
    }
}

public struct PositionSample: OutputSample, Equatable {
    public static let kind = OutputKind.gps
    public var lat = 0.0
    public var lon = 0.0
    /// Height above the WGS84 ellipsoid (m).
    public var alt = 0.0
    public init() {}
    public init(lat: Double, lon: Double, alt: Double) {
        self.lat = lat
        self.lon = lon
        self.alt = alt
    }
    public func write(to s: inout SlotWriter) {
        s.set("lat", lat)
        s.set("lon", lon)
        s.set("alt", alt)
    }
}

public struct QuaternionSample: OutputSample, Equatable {
    public static let kind = OutputKind.quatOrientation
    public var x = 0.0, y = 0.0, z = 0.0, w = 1.0
    public init() {}
    public init(x: Double, y: Double, z: Double, w: Double) {
        self.x = x
        self.y = y
        self.z = z
        self.w = w
    }
    public func write(to s: inout SlotWriter) {
        s.set("qx", x)
        s.set("qy", y)
        s.set("qz", z)
        s.set("q0", w)
    }
}

public struct EulerSample: OutputSample, Equatable {
    public static let kind = OutputKind.eulerOrientation
    public var heading = 0.0, pitch = 0.0, roll = 0.0
    public init() {}
    public init(heading: Double, pitch: Double, roll: Double) {
        self.heading = heading
        self.pitch = pitch
        self.roll = roll
    }
    public func write(to s: inout SlotWriter) {
        s.set("heading", heading)
        s.set("pitch", pitch)
        s.set("roll", roll)
    }
}

/// The three axes of a raw inertial output, as its record names them.
public protocol InertialAxes {
    static var kind: OutputKind { get }
    static var leafNames: (x: StaticString, y: StaticString, z: StaticString) { get }
}

/// A raw inertial output's vector, in the device frame.
public struct AxesSample<Axes: InertialAxes>: OutputSample, Equatable {
    public static var kind: OutputKind { Axes.kind }
    public var x = 0.0, y = 0.0, z = 0.0
    public init() {}
    public init(x: Double, y: Double, z: Double) {
        self.x = x
        self.y = y
        self.z = z
    }
    public func write(to s: inout SlotWriter) {
        let n = Axes.leafNames
        s.set(n.x, x)
        s.set(n.y, y)
        s.set(n.z, z)
    }
}

/// m/s².
public enum AccelerationAxes: InertialAxes {
    public static var kind: OutputKind { .accelerometer }
    public static var leafNames: (x: StaticString, y: StaticString, z: StaticString) { ("ax", "ay", "az") }
}

/// rad/s.
public enum AngularRateAxes: InertialAxes {
    public static var kind: OutputKind { .gyroscope }
    public static var leafNames: (x: StaticString, y: StaticString, z: StaticString) { ("wx", "wy", "wz") }
}

/// µT.
public enum MagneticFieldAxes: InertialAxes {
    public static var kind: OutputKind { .magnetometer }
    public static var leafNames: (x: StaticString, y: StaticString, z: StaticString) { ("mx", "my", "mz") }
}

public typealias AccelerationSample = AxesSample<AccelerationAxes>
public typealias AngularRateSample = AxesSample<AngularRateAxes>
public typealias MagneticFieldSample = AxesSample<MagneticFieldAxes>

/// Degrees, where the pan-tilt unit points.
public struct PTZPositionSample: OutputSample, Equatable {
    public static let kind = OutputKind.ptzPosition
    public var pan = 0.0, tilt = 0.0
    public init() {}
    public init(pan: Double, tilt: Double) {
        self.pan = pan
        self.tilt = tilt
    }
    public func write(to s: inout SlotWriter) {
        s.set("pan", pan)
        s.set("tilt", tilt)
    }
}

/// `device_health` (field meanings at `OutputCatalogue.deviceHealth`); flags are 0 or 1.
public struct DeviceHealthSample: OutputSample, Equatable {
    public static let kind = OutputKind.deviceHealth
    public var cpuTemperature = 0.0
    public var underVoltage = false
    public var throttled = false
    public var throttleFlags = 0.0
    public var loadAverage = 0.0
    public var memoryAvailable = 0.0
    public var diskFree = 0.0
    public var queueDepth = 0.0
    public var droppedCount = 0.0
    public var uptime = 0.0
    public var clockSynchronized = false
    public init() {}
    public func write(to s: inout SlotWriter) {
        s.set("cpuTemperature", cpuTemperature)
        s.set("underVoltage", underVoltage ? 1 : 0)
        s.set("throttled", throttled ? 1 : 0)
        s.set("throttleFlags", throttleFlags)
        s.set("loadAverage", loadAverage)
        s.set("memoryAvailable", memoryAvailable)
        s.set("diskFree", diskFree)
        s.set("queueDepth", queueDepth)
        s.set("droppedCount", droppedCount)
        s.set("uptime", uptime)
        s.set("clockSynchronized", clockSynchronized ? 1 : 0)
    }
}
