// Observation encoders. Each is compiled once per datastream from its record into
// a template — literal bytes between values — so encoding an observation is
// appending literals and formatting numbers into the caller's buffer: no field is
// named at run time and nothing is allocated per observation.
//
// The values contract (SchemaWalker): a sensor supplies the observation time and
// the doubles of every other leaf of its record, in leaf order.

/// The wire format of scalar observations.
public enum ScalarFormat: String, Sendable, CaseIterable {
    /// O&M JSON, as Android posts (`phenomenonTime`, `resultTime`, `foi@id`, `result`); batches are a JSON array.
    case omJSON = "om+json"
    /// One SWE JSON record per POST, time first, as the iOS app posts.
    case sweJSON = "swe+json"

    public var mediaType: String { self == .omJSON ? MediaType.omJSON : MediaType.sweJSON }
}

public enum EncoderError: Error, Equatable, CustomStringConvertible {
    case noTimeField(output: String)
    case unsupportedLeaf(output: String, path: String)
    case valueCount(output: String, expected: Int, actual: Int)

    public var description: String {
        switch self {
        case .noTimeField(let o):
            return "output \(o): the record has no SamplingTime/PhenomenonTime field; add one as the first field"
        case .unsupportedLeaf(let o, let p):
            return "output \(o): leaf \(p) is not a number, count, boolean or time; scalar observations carry only those"
        case .valueCount(let o, let e, let a):
            return "output \(o): \(a) values given, the schema has \(e) value leaves (check the sensor's leaf order)"
        }
    }
}

/// Where the observation time sits in a record and which leaves carry the values.
public struct ObservationLayout: Sendable, Equatable {
    public let leaves: [SchemaLeaf]
    /// Index in `leaves` of the observation time (SamplingTime/PhenomenonTime).
    public let timeLeaf: Int
    /// Indices in `leaves` of the value leaves, in order: value i of an observation belongs to `leaves[valueLeaves[i]]`.
    public let valueLeaves: [Int]

    public init(record: DataComponent, outputName: String) throws {
        leaves = SchemaWalker.leaves(of: record)
        guard let t = leaves.firstIndex(where: { $0.component.isObservationTime }) else {
            throw EncoderError.noTimeField(output: outputName)
        }
        timeLeaf = t
        valueLeaves = leaves.indices.filter { $0 != t }
    }

    public var valueCount: Int { valueLeaves.count }
}

/// A compiled scalar encoder for one datastream.
public final class ObservationEncoder {
    public let format: ScalarFormat
    public let layout: ObservationLayout
    public let outputName: String
    public private(set) var foiID: String?

    private enum Op {
        case literal(Int, Int)  // [start, end) in `literals`
        case time  // the observation time as an ISO string in quotes
        case value(Int, LeafKind)  // value index
    }

    private var literalStorage: UnsafeMutablePointer<UInt8>
    private var literalCount = 0
    private var ops: [Op] = []
    private let record: DataComponent

    public init(spec: OutputSpec, format: ScalarFormat, foiID: String? = nil) throws {
        self.format = format
        self.outputName = spec.outputName
        self.record = spec.record
        self.layout = try ObservationLayout(record: spec.record, outputName: spec.outputName)
        self.foiID = foiID
        literalStorage = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
        for i in layout.valueLeaves where !layout.leaves[i].kind.isNumeric {
            throw EncoderError.unsupportedLeaf(output: spec.outputName, path: layout.leaves[i].path)
        }
        compile()
    }

    deinit { literalStorage.deallocate() }

    /// Changes the sampling-feature id stamped on O&M observations (after a re-registration).
    public func setFOI(_ id: String?) {
        foiID = id
        compile()
    }

    // MARK: Compilation

    private func compile() {
        var lit: [UInt8] = []
        var ops: [Op] = []
        var pending: [UInt8] = []
        func flush() {
            if !lit.isEmpty {
                ops.append(.literal(literalCount, literalCount + lit.count))
                pending.append(contentsOf: lit)
                literalCount += lit.count
                lit.removeAll()
            }
        }
        literalCount = 0
        func text(_ s: String) { lit.append(contentsOf: Array(s.utf8)) }
        func key(_ name: String) {
            let b = ByteBuffer(capacity: 64)
            JSONWriter.writeEscaped(name, to: b)
            lit.append(contentsOf: b.array)
            lit.append(UInt8(ascii: ":"))
        }

        var valueIndexOfLeaf: [Int: Int] = [:]
        for (vi, li) in layout.valueLeaves.enumerated() { valueIndexOfLeaf[li] = vi }
        var leafCursor = 0
        // Writes the members of a record/vector in schema order, skipping the observation time in O&M.
        func members(_ c: DataComponent) {
            var first = true
            for child in c.children {
                switch child.kind {
                case .record, .vector:
                    if !first { text(",") }
                    first = false
                    key(child.name ?? "")
                    text("{")
                    members(child)
                    text("}")
                default:
                    let li = leafCursor
                    leafCursor += 1
                    if li == layout.timeLeaf {
                        if format == .omJSON { continue }
                        if !first { text(",") }
                        first = false
                        key(child.name ?? "time")
                        flush(); ops.append(.time)
                    } else {
                        if !first { text(",") }
                        first = false
                        key(child.name ?? "")
                        flush()
                        ops.append(.value(valueIndexOfLeaf[li] ?? 0, layout.leaves[li].kind))
                    }
                }
            }
        }

        if format == .omJSON {
            text("{")
            if let foi = foiID {
                key("foi@id")
                let b = ByteBuffer(capacity: 64)
                JSONWriter.writeEscaped(foi, to: b)
                lit.append(contentsOf: b.array)
                text(",")
            }
            text("\"phenomenonTime\":"); flush(); ops.append(.time)
            text(",\"resultTime\":"); flush(); ops.append(.time)
            text(",\"result\":{")
            members(record)
            text("}}")
        } else {
            text("{")
            members(record)
            text("}")
        }
        flush()

        literalStorage.deallocate()
        literalStorage = UnsafeMutablePointer<UInt8>.allocate(capacity: Swift.max(pending.count, 1))
        pending.withUnsafeBufferPointer { literalStorage.update(from: $0.baseAddress!, count: pending.count) }
        self.ops = ops
    }

    // MARK: Encoding

    /// Appends one observation. `values` holds the value leaves in layout order (time excluded).
    public func encode(time: Double, values: UnsafeBufferPointer<Double>, into out: ByteBuffer) throws {
        guard values.count == layout.valueCount else {
            throw EncoderError.valueCount(output: outputName, expected: layout.valueCount, actual: values.count)
        }
        for op in ops {
            switch op {
            case .literal(let s, let e):
                out.append(UnsafeRawBufferPointer(start: literalStorage + s, count: e - s))
            case .time:
                ObservationEncoder.writeTime(time, to: out)
            case .value(let i, let kind):
                ObservationEncoder.writeValue(values[i], kind: kind, to: out)
            }
        }
    }

    /// Convenience for tests and the CLI.
    public func encode(time: Double, values: [Double], into out: ByteBuffer) throws {
        try values.withUnsafeBufferPointer { try encode(time: time, values: $0, into: out) }
    }

    /// O&M batches: `[` obs `,` obs … `]` (the node takes an O&M JSON array as a batch; swe+json never batches).
    public static func beginBatch(_ out: ByteBuffer) { out.append(UInt8(ascii: "[")) }
    public static func batchSeparator(_ out: ByteBuffer) { out.append(UInt8(ascii: ",")) }
    public static func endBatch(_ out: ByteBuffer) { out.append(UInt8(ascii: "]")) }

    /// An ISO-8601 string, or null when the time is not finite (the node then refuses that record).
    @inline(__always) static func writeTime(_ t: Double, to out: ByteBuffer) {
        out.append(UInt8(ascii: "\""))
        if !ISOTime.write(epochSeconds: t, to: out) {
            out.truncate(to: out.count - 1)
            out.append(StaticString("null"))
            return
        }
        out.append(UInt8(ascii: "\""))
    }

    /// One leaf value as osh-core's JSON data writer writes it.
    @inline(__always) public static func writeValue(_ v: Double, kind: LeafKind, to out: ByteBuffer) {
        switch kind {
        case .quantity(.float32):
            let f = Float(v)
            if f.isFinite { JSONWriter.writeFloat(f, to: out) } else { JSONWriter.writeSpecial(Double(f), schema: false, to: out) }
        case .quantity:
            if v.isFinite { JSONWriter.writeDouble(v, to: out) } else { JSONWriter.writeSpecial(v, schema: false, to: out) }
        case .count:
            // A count has no NaN: a non-finite value is written as 0 rather than breaking the record.
            JSONWriter.writeInt(v.isFinite ? Int(Swift.max(Swift.min(v.rounded(), 9.0e15), -9.0e15)) : 0, to: out)
        case .boolean:
            out.append(v != 0 && !v.isNaN ? StaticString("true") : StaticString("false"))
        case .time(let iso):
            if iso {
                writeTime(v, to: out)
            } else if v.isFinite {
                JSONWriter.writeDouble(v, to: out)
            } else {
                JSONWriter.writeSpecial(v, schema: false, to: out)
            }
        case .text, .category, .array, .choice:
            out.append(StaticString("null"))  // excluded at init; never reached
        }
    }
}
