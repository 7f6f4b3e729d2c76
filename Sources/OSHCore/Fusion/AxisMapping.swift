// Board mounting → device frame. Drivers read the chip's axes; the fusion and the
// Android outputs want the device frame (x right, y forward/up the screen, z out of
// the screen/board top). A mapping is a signed permutation with determinant +1.

/// An error in a mounting description, naming what is wrong and what is accepted.
public struct FusionConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Maps vectors measured in the chip/board frame into the device frame.
public struct AxisMapping: Sendable, Equatable {
    /// device = matrix · board.
    public let matrix: Matrix3

    public static let identity = AxisMapping(uncheckedMatrix: .identity)

    init(uncheckedMatrix: Matrix3) { matrix = uncheckedMatrix }

    /// Named mountings: rotations of the board relative to the device frame.
    /// `zN` = the board turned N° counter-clockwise about z (seen from above);
    /// `x180`/`y180` = the board upside down, flipped about its x / y axis.
    public static let named: [(String, String)] = [
        ("identity", "x=x,y=y,z=z"), ("z90", "x=-y,y=x,z=z"), ("z180", "x=-x,y=-y,z=z"),
        ("z270", "x=y,y=-x,z=z"), ("x180", "x=x,y=-y,z=-z"), ("y180", "x=-x,y=y,z=-z"),
    ]

    /// Parses a rotation name (see `named`) or "x=-y,y=x,z=z": each device axis given as a
    /// signed board axis. Mirror mappings (determinant −1) are refused: they would turn a
    /// right-handed chip frame left-handed and the fusion would rotate the wrong way.
    public init(parsing text: String) throws(FusionConfigError) {
        let trimmed = text.filter { $0 != " " }.lowercased()
        let spec = Self.named.first { $0.0 == trimmed }?.1 ?? trimmed
        var rows: [Vector3?] = [nil, nil, nil]
        var used = Set<Character>()
        for part in spec.split(separator: ",") {
            let kv = part.split(separator: "=")
            guard kv.count == 2, let target = "xyz".firstIndex(of: kv[0].first ?? "?"), kv[0].count == 1 else {
                throw FusionConfigError("axis mapping '\(text)': '\(part)' is not DEVICE_AXIS=[-]BOARD_AXIS, e.g. x=-y")
            }
            var source = Substring(kv[1])
            var sign = 1.0
            if source.hasPrefix("-") {
                sign = -1; source = source.dropFirst()
            } else if source.hasPrefix("+") {
                source = source.dropFirst()
            }
            guard source.count == 1, let axis = source.first, "xyz".contains(axis) else {
                throw FusionConfigError("axis mapping '\(text)': '\(kv[1])' is not one of x, y, z, -x, -y, -z")
            }
            guard !used.contains(axis) else { throw FusionConfigError("axis mapping '\(text)': board axis \(axis) is used twice") }
            used.insert(axis)
            let i = "xyz".distance(from: "xyz".startIndex, to: target)
            guard rows[i] == nil else { throw FusionConfigError("axis mapping '\(text)': device axis \(kv[0]) is given twice") }
            rows[i] = Vector3(axis == "x" ? sign : 0, axis == "y" ? sign : 0, axis == "z" ? sign : 0)
        }
        guard let r0 = rows[0], let r1 = rows[1], let r2 = rows[2] else {
            throw FusionConfigError(
                "axis mapping '\(text)': give all three axes (x=…,y=…,z=…) or one of "
                    + Self.named.map(\.0).joined(separator: ", "))
        }
        let m = Matrix3(r0.x, r0.y, r0.z, r1.x, r1.y, r1.z, r2.x, r2.y, r2.z)
        guard m.determinant > 0 else {
            throw FusionConfigError("axis mapping '\(text)' is a mirror image (left-handed); flip the sign of one more axis")
        }
        matrix = m
    }

    /// A board vector in the device frame.
    @inline(__always) public func apply(_ v: Vector3) -> Vector3 { matrix * v }

    /// The canonical "x=…,y=…,z=…" text.
    public var text: String {
        func axis(_ r: Vector3) -> String {
            r.x != 0 ? (r.x < 0 ? "-x" : "x") : r.y != 0 ? (r.y < 0 ? "-y" : "y") : (r.z < 0 ? "-z" : "z")
        }
        let m = matrix
        return "x=\(axis(Vector3(m.m00, m.m01, m.m02))),y=\(axis(Vector3(m.m10, m.m11, m.m12))),z=\(axis(Vector3(m.m20, m.m21, m.m22)))"
    }
}
