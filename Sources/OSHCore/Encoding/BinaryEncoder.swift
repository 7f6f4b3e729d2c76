// swe+binary records (osh-core BinaryDataWriter): member values in encoding order,
// scalars in their data type and byte order, a Block as a 4-byte signed length
// then the payload.

public enum BinaryRecordError: Error, Equatable, CustomStringConvertible {
    case memberNotInRecord(ref: String)
    case unsupportedMember(ref: String)
    case valueCount(expected: Int, actual: Int)
    case frameTooLarge(Int)

    public var description: String {
        switch self {
        case .memberNotInRecord(let r): return "encoding member \(r) names no leaf of the record"
        case .unsupportedMember(let r): return "encoding member \(r): strings and blocks cannot come from a double"
        case .valueCount(let e, let a): return "\(a) values given, the encoding has \(e) scalar members"
        case .frameTooLarge(let n): return "frame of \(n) bytes does not fit a signed 32-bit length"
        }
    }
}

public enum VideoRecord {
    /// Size of the header in front of each access unit: 8-byte time + 4-byte length.
    public static let headerSize = 12

    /// Writes the 12-byte header: big-endian IEEE-754 epoch seconds, big-endian signed length.
    /// The payload is sent after it, from the encoder's own buffer.
    public static func writeHeader(time: Double, frameLength: Int, to out: ByteBuffer) throws {
        guard frameLength >= 0, frameLength <= Int(Int32.max) else { throw BinaryRecordError.frameTooLarge(frameLength) }
        out.appendBigEndian(time)
        out.appendBigEndian(Int32(frameLength))
    }

    /// Header + payload in one buffer (one copy of the frame).
    public static func write(time: Double, frame: UnsafeRawBufferPointer, to out: ByteBuffer) throws {
        try writeHeader(time: time, frameLength: frame.count, to: out)
        out.append(frame)
    }
}

/// A compiled scalar binary encoder (all members are numeric Components), e.g. the node's default encoding.
public struct BinaryScalarEncoder: Sendable {
    public let encoding: BinaryEncoding
    /// For each member: its data type and the index of its value (-1 = the observation time).
    private let plan: [(ScalarDataType, Int)]

    public init(layout: ObservationLayout, encoding: BinaryEncoding) throws {
        self.encoding = encoding
        var plan: [(ScalarDataType, Int)] = []
        for m in encoding.members {
            guard case .component(let ref, let dt) = m, dt != .utf8String else {
                throw BinaryRecordError.unsupportedMember(ref: m.ref)
            }
            guard let li = layout.leaves.firstIndex(where: { $0.path == ref }) else {
                throw BinaryRecordError.memberNotInRecord(ref: ref)
            }
            plan.append((dt, li == layout.timeLeaf ? -1 : layout.valueLeaves.firstIndex(of: li) ?? 0))
        }
        self.plan = plan
    }

    public func encode(time: Double, values: UnsafeBufferPointer<Double>, into out: ByteBuffer) {
        for (dt, vi) in plan {
            let v = vi < 0 ? time : values[vi]
            BinaryScalarEncoder.write(v, as: dt, bigEndian: encoding.bigEndian, to: out)
        }
    }

    public func encode(time: Double, values: [Double], into out: ByteBuffer) {
        values.withUnsafeBufferPointer { encode(time: time, values: $0, into: out) }
    }

    static func clampInt<T: FixedWidthInteger>(_ v: Double, _: T.Type) -> T {
        guard v.isFinite else { return 0 }
        let r = v.rounded()
        if r <= Double(T.min) { return T.min }
        if r >= Double(T.max) { return T.max }
        return T(r)
    }

    static func write(_ v: Double, as dt: ScalarDataType, bigEndian: Bool, to out: ByteBuffer) {
        func put<T: FixedWidthInteger>(_ x: T) {
            if bigEndian {
                out.appendBigEndian(x)
            } else {
                var le = x.littleEndian
                withUnsafeBytes(of: &le) { out.append($0) }
            }
        }
        switch dt {
        case .double: put(v.bitPattern)
        case .float32: put(Float(v).bitPattern)
        case .signedLong: put(clampInt(v, Int64.self))
        case .signedInt: put(clampInt(v, Int32.self))
        case .signedShort: put(clampInt(v, Int16.self))
        case .signedByte: put(clampInt(v, Int8.self))
        case .unsignedLong: put(clampInt(v, UInt64.self))
        case .unsignedInt: put(clampInt(v, UInt32.self))
        case .unsignedShort: put(clampInt(v, UInt16.self))
        case .unsignedByte: put(clampInt(v, UInt8.self))
        case .boolean: put(UInt8(v != 0 && !v.isNaN ? 1 : 0))
        case .utf8String: break  // refused at init
        }
    }
}
