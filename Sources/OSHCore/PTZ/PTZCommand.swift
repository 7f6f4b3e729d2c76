// What a `ptz_control` command asks for, and where the axes should go: parsing the
// command's parameters (a DataChoice: exactly one item) and planning the move against the
// calibration's soft limits, saying when it had to clamp.

public enum PTZCommand: Sendable, Equatable {
    /// Degrees to add to the current position (`rpan`, `rtilt`).
    case relative(pan: Double, tilt: Double)
    /// Absolute degrees; nil leaves that axis where it is (`pan`, `tilt`, `ptzPos`).
    case absolute(pan: Double?, tilt: Double?)
    case preset(String)
}

public struct PTZCommandError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension PTZCommand {
    /// The item names of the `ptz_control` choice (OSH's video-camera tasking names).
    public static let itemNames = ["pan", "tilt", "rpan", "rtilt", "preset", "ptzPos"]

    /// `{"rpan":3.0}`, `{"tilt":-10}`, `{"ptzPos":{"pan":10,"tilt":5}}`, `{"preset":"home"}` — the
    /// `parameters` of a command (a `{"parameters": …}` body is unwrapped too).
    public static func parse(_ v: JSONValue) throws(PTZCommandError) -> PTZCommand {
        var p = v
        if let inner = v["parameters"], v.object?.count ?? 0 <= 2 { p = inner }
        guard let members = p.object else {
            throw PTZCommandError("the PTZ parameters must be an object with one item, e.g. {\"rpan\":3.0}")
        }
        guard members.count == 1, let (item, value) = members.first else {
            throw PTZCommandError(
                "a ptz_control command holds exactly one item (\(itemNames.joined(separator: ", "))); got \(members.count)")
        }
        func degrees(_ x: JSONValue, _ name: String) throws(PTZCommandError) -> Double {
            guard let d = x.double, d.isFinite else { throw PTZCommandError("\(name) must be a number of degrees, not \(x.typeName)") }
            return d
        }
        switch item {
        case "rpan": return .relative(pan: try degrees(value, "rpan"), tilt: 0)
        case "rtilt": return .relative(pan: 0, tilt: try degrees(value, "rtilt"))
        case "pan": return .absolute(pan: try degrees(value, "pan"), tilt: nil)
        case "tilt": return .absolute(pan: nil, tilt: try degrees(value, "tilt"))
        case "preset":
            guard let s = value.string else { throw PTZCommandError("preset must be a preset name (a string)") }
            return .preset(s)
        case "ptzPos":
            // A record: all fields, in schema order (pan, tilt), as the node enforces.
            guard let fields = value.object, fields.map(\.0) == ["pan", "tilt"] else {
                throw PTZCommandError("ptzPos must be {\"pan\": degrees, \"tilt\": degrees}, both fields in that order")
            }
            return .absolute(pan: try degrees(fields[0].1, "ptzPos/pan"), tilt: try degrees(fields[1].1, "ptzPos/tilt"))
        case "zoom", "rzoom":
            throw PTZCommandError("this pan-tilt unit has no zoom")
        default:
            throw PTZCommandError("unknown PTZ item '\(item)'; this unit takes \(itemNames.joined(separator: ", "))")
        }
    }
}

/// Where a command sends the axes, after the soft limits.
public struct PTZMove: Sendable, Equatable {
    public var pan: Double
    public var tilt: Double
    public var panClamped: Bool
    public var tiltClamped: Bool
    /// What was asked, for the message.
    public var requestedPan: Double
    public var requestedTilt: Double

    public var clamped: Bool { panClamped || tiltClamped }

    /// `"pan 95° is beyond the limit; moved to 80°"`, nil when nothing was clamped. Goes into the
    /// command's status message so the operator sees why the camera stopped short.
    public var clampMessage: String? {
        var parts: [String] = []
        if panClamped { parts.append("pan \(PTZMove.text(requestedPan))° is beyond the limit; moved to \(PTZMove.text(pan))°") }
        if tiltClamped { parts.append("tilt \(PTZMove.text(requestedTilt))° is beyond the limit; moved to \(PTZMove.text(tilt))°") }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }

    /// Degrees for a message: at most two decimals, no ".0".
    public static func text(_ d: Double) -> String {
        let r = (d * 100).rounded() / 100
        return r == r.rounded() && abs(r) < 1e9 ? String(Int(r)) : String(r)
    }
}

extension PTZCalibration {
    /// The target of `command` from the current (or, while slewing, the target) position.
    public func plan(_ command: PTZCommand, fromPan pan0: Double, tilt tilt0: Double) throws(PTZCommandError) -> PTZMove {
        var p = pan0, t = tilt0
        switch command {
        case .relative(let dp, let dt): p += dp; t += dt
        case .absolute(let ap, let at): p = ap ?? p; t = at ?? t
        case .preset(let name):
            guard let preset = presets.first(where: { $0.name == name }) else {
                throw PTZCommandError(
                    presets.isEmpty
                        ? "this unit has no presets"
                        : "no preset '\(name)'; the presets are \(presets.map(\.name).joined(separator: ", "))")
            }
            p = preset.pan; t = preset.tilt
        }
        let cp = self.pan.clamp(p), ct = self.tilt.clamp(t)
        return PTZMove(
            pan: cp.value, tilt: ct.value, panClamped: cp.clamped, tiltClamped: ct.clamped,
            requestedPan: p, requestedTilt: t)
    }
}

public enum PTZMotion {
    /// One slew step from `current` toward `target` at most `maxSpeed`°/s over `dt` s (nil speed: arrive).
    public static func step(from current: Double, to target: Double, maxSpeed: Double?, dt: Double) -> Double {
        guard let v = maxSpeed, v > 0, dt.isFinite, dt >= 0 else { return target }
        let room = v * dt
        let delta = target - current
        if abs(delta) <= room { return target }
        return current + (delta > 0 ? room : -room)
    }
}
