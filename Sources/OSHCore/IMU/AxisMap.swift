// How a board is mounted: which chip axis (and sign) each device axis is. Written in config
// as three signed axes, e.g. ["+y", "-x", "+z"]: device X = chip +Y, device Y = chip −X,
// device Z = chip +Z. The same map applies to gyro, accel and magnetometer, so it must be a
// rotation (a reflection would turn the right-handed frame the fusion assumes into a left one).

public struct AxisMap: Sendable, Equatable, CustomStringConvertible {
    /// For each device axis, the chip axis it reads (0 = x, 1 = y, 2 = z) …
    public let source: (Int, Int, Int)
    /// … and the sign (+1 or −1).
    public let sign: (Double, Double, Double)

    public static let identity = AxisMap(uncheckedSource: (0, 1, 2), sign: (1, 1, 1))

    init(uncheckedSource: (Int, Int, Int), sign: (Double, Double, Double)) {
        self.source = uncheckedSource
        self.sign = sign
    }

    /// From chip axes (0 = x, 1 = y, 2 = z) and signs, as a chip's axis-remap registers hold
    /// them; nil unless it is a rotation.
    public init?(source: (Int, Int, Int), sign: (Double, Double, Double)) {
        guard Set([source.0, source.1, source.2]) == [0, 1, 2],
            [sign.0, sign.1, sign.2].allSatisfy({ $0 == 1 || $0 == -1 })
        else { return nil }
        self.init(uncheckedSource: source, sign: sign)
        guard determinant > 0 else { return nil }
    }

    public static func == (a: AxisMap, b: AxisMap) -> Bool {
        a.source == b.source && a.sign == b.sign
    }

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case badAxis(String)
        case notAPermutation([String])
        case reflection([String])

        public var description: String {
            switch self {
            case .badAxis(let s):
                return "mounting axis \"\(s)\" is not one of +x, -x, +y, -y, +z, -z"
            case .notAPermutation(let a):
                return "mounting \(a) must name each of x, y and z exactly once"
            case .reflection(let a):
                return "mounting \(a) mirrors the frame (a left-handed map); flip the sign of one axis"
            }
        }
    }

    /// Parses three signed axes ("+x", "-Y", "z"). Throws `ParseError` naming what is wrong.
    public init(_ axes: [String]) throws {
        guard axes.count == 3 else { throw ParseError.notAPermutation(axes) }
        var src = [0, 0, 0]
        var sgn = [1.0, 1.0, 1.0]
        for (i, raw) in axes.enumerated() {
            var s = Substring(raw.lowercased())
            s = s.drop(while: { $0 == " " })
            var sign = 1.0
            if s.first == "-" { sign = -1; s = s.dropFirst() } else if s.first == "+" { s = s.dropFirst() }
            switch s {
            case "x": src[i] = 0
            case "y": src[i] = 1
            case "z": src[i] = 2
            default: throw ParseError.badAxis(raw)
            }
            sgn[i] = sign
        }
        guard Set(src).count == 3 else { throw ParseError.notAPermutation(axes) }
        let m = AxisMap(uncheckedSource: (src[0], src[1], src[2]), sign: (sgn[0], sgn[1], sgn[2]))
        guard m.determinant > 0 else { throw ParseError.reflection(axes) }
        self = m
    }

    /// The config's comma form, "-y,+x,+z" (IMUConfig.mounting).
    public init(commaSeparated text: String) throws {
        try self.init(text.split(separator: ",").map { String($0.filter { $0 != " " }) })
    }

    /// +1 for a rotation, −1 for a reflection.
    public var determinant: Double {
        // Sign of the permutation times the product of the signs.
        let p = [source.0, source.1, source.2]
        var inversions = 0
        for i in 0..<3 { for j in (i + 1)..<3 where p[i] > p[j] { inversions += 1 } }
        return (inversions % 2 == 0 ? 1.0 : -1.0) * sign.0 * sign.1 * sign.2
    }

    public var isIdentity: Bool { self == .identity }

    /// Chip frame → device frame.
    @inlinable public func apply(_ v: IMUVector) -> IMUVector {
        IMUVector(sign.0 * v[source.0], sign.1 * v[source.1], sign.2 * v[source.2])
    }

    /// Device frame → chip frame (the simulator mounts a chip with it).
    public func inverse(_ v: IMUVector) -> IMUVector {
        var out = [0.0, 0.0, 0.0]
        out[source.0] = sign.0 * v.x
        out[source.1] = sign.1 * v.y
        out[source.2] = sign.2 * v.z
        return IMUVector(out[0], out[1], out[2])
    }

    /// The same rotation as a quaternion: `quaternion.rotate(v) == apply(v)` (chip → device).
    public var quaternion: IMUQuaternion {
        // Rows of the chip→device matrix, built without arrays (the simulator calls this per sample).
        let r0 = IMUVector(source.0 == 0 ? sign.0 : 0, source.0 == 1 ? sign.0 : 0, source.0 == 2 ? sign.0 : 0)
        let r1 = IMUVector(source.1 == 0 ? sign.1 : 0, source.1 == 1 ? sign.1 : 0, source.1 == 2 ? sign.1 : 0)
        let r2 = IMUVector(source.2 == 0 ? sign.2 : 0, source.2 == 1 ? sign.2 : 0, source.2 == 2 ? sign.2 : 0)
        return Self.quaternion(rows: r0, r1, r2)
    }

    /// The config spelling, e.g. ["+y", "-x", "+z"].
    public var axes: [String] {
        let names = ["x", "y", "z"]
        return [(source.0, sign.0), (source.1, sign.1), (source.2, sign.2)].map { ($0.1 < 0 ? "-" : "+") + names[$0.0] }
    }

    public var description: String { "[" + axes.joined(separator: ", ") + "]" }

    /// Rotation matrix (given by rows) → quaternion (Shepperd's method: divide by the largest term).
    public static func quaternion(rows a: IMUVector, _ b: IMUVector, _ c: IMUVector) -> IMUQuaternion {
        let tr = a.x + b.y + c.z
        if tr > 0 {
            let s = (tr + 1).squareRoot() * 2
            return IMUQuaternion(w: s / 4, x: (c.y - b.z) / s, y: (a.z - c.x) / s, z: (b.x - a.y) / s)
        } else if a.x > b.y && a.x > c.z {
            let s = (1 + a.x - b.y - c.z).squareRoot() * 2
            return IMUQuaternion(w: (c.y - b.z) / s, x: s / 4, y: (a.y + b.x) / s, z: (a.z + c.x) / s)
        } else if b.y > c.z {
            let s = (1 + b.y - a.x - c.z).squareRoot() * 2
            return IMUQuaternion(w: (a.z - c.x) / s, x: (a.y + b.x) / s, y: s / 4, z: (b.z + c.y) / s)
        } else {
            let s = (1 + c.z - a.x - b.y).squareRoot() * 2
            return IMUQuaternion(w: (b.x - a.y) / s, x: (a.z + c.x) / s, y: (b.z + c.y) / s, z: s / 4)
        }
    }
}
