// GET …/observations as osh-core serves it, for the read side (`osh-edge observations`):
// filters (phenomenonTime / resultTime as an instant, an interval or `latest`), order,
// offset/limit, and the response formats O&M JSON (`{"items":[…]}`), swe+json (a JSON
// array of full records, ObsBindingSweCommon with the stream wrapper) and swe+binary
// (records back to back in the datastream's BinaryEncoding, or the node's default one).
import OSHCore

extension RequestHandler {
    func readSideListObservations(of indices: [Int]) throws -> HTTPResponse {
        let format = try responseFormat(default: MediaType.omJSON)
        switch format {
        case MediaType.omJSON, MediaType.json:
            break
        case MediaType.sweJSON, MediaType.sweBinary:
            // SWE formats describe one record structure: the root collection cannot mix datastreams.
            guard indices.count == 1 else { throw NodeFailure.unsupportedFormat(format) }
            if format == MediaType.sweJSON, store.datastreams[indices[0]].binaryOnly { throw NodeFailure.unsupportedFormat(format) }
        default:
            throw NodeFailure.unsupportedFormat(format)
        }
        let limit = min(try intParam("limit") ?? 100, 10_000)
        let offset = max(try intParam("offset") ?? 0, 0)
        let descending = ["desc", "descending"].contains(param("order")?.lowercased() ?? "")
        let phenomenon = try timeFilter("phenomenonTime")
        let result = try timeFilter("resultTime")

        var all: [(obs: StoredObservation, ds: Int, seq: Int)] = []
        for i in indices {
            let obs = store.datastreams[i].observations
            // `latest` is per datastream: the newest time it holds.
            let newestPhenomenon = obs.map(\.phenomenonTime).max()
            let newestResult = obs.map(\.resultTime).max()
            for (k, o) in obs.enumerated() {
                guard phenomenon.accepts(o.phenomenonTime, latest: newestPhenomenon),
                    result.accepts(o.resultTime, latest: newestResult)
                else { continue }
                all.append((o, i, all.count + k))
            }
        }
        all.sort { $0.obs.phenomenonTime != $1.obs.phenomenonTime ? $0.obs.phenomenonTime < $1.obs.phenomenonTime : $0.seq < $1.seq }
        if descending { all.reverse() }
        let window = all.dropFirst(offset).prefix(max(limit, 0))

        switch format {
        case MediaType.sweJSON:
            let d = store.datastreams[indices[0]]
            var r = HTTPResponse(
                status: 200,
                body: jsonBytes { w in
                    w.beginArray()
                    for e in window { Self.writeSWERecord(e.obs.record, d.record, &w) }
                    w.endArray()
                })
            r.contentType = MediaType.sweJSON
            return r
        case MediaType.sweBinary:
            let d = store.datastreams[indices[0]]
            let encoding = d.encoding ?? BinaryEncoding.default(for: d.record)
            var writer = BinaryRecordWriter(encoding: encoding)
            for e in window {
                do throws(BinaryRecordWriter.Failure) {
                    try writer.write(e.obs.record, d.record)
                } catch {
                    throw NodeFailure.badRequest("Unsupported format: " + MediaType.sweBinary + " (" + error.message + ")")
                }
            }
            var r = HTTPResponse(status: 200, body: writer.out)
            r.contentType = MediaType.sweBinary
            return r
        default:
            return json(
                jsonBytes { w in
                    w.beginObject()
                    w.key("items"); w.beginArray()
                    for e in window { writeObservation(e.obs, store.datastreams[e.ds], &w) }
                    w.endArray()
                    w.endObject()
                })
        }
    }

    /// A temporal query parameter: absent, `latest`, an instant, or `start/end` (`..` and `now` open/close it).
    enum TimeFilter {
        case any
        case latest
        case interval(Double, Double)

        func accepts(_ t: Double, latest newest: Double?) -> Bool {
            switch self {
            case .any: return true
            case .latest: return newest == t
            case .interval(let a, let b): return t >= a && t <= b
            }
        }
    }

    func timeFilter(_ name: String) throws -> TimeFilter {
        guard let raw = param(name) else { return .any }
        if raw == "latest" { return .latest }
        func bound(_ s: Substring, open: Double) throws -> Double {
            if s == ".." || s.isEmpty { return open }
            if s == "now" { return wallClock() }
            guard let t = ISOTime.parse(String(s)) else { throw NodeFailure.badRequest("Invalid time parameter: " + raw) }
            return t
        }
        let parts = raw.split(separator: "/", omittingEmptySubsequences: false)
        switch parts.count {
        case 1:
            let t = try bound(parts[0], open: .nan)
            guard t.isFinite else { throw NodeFailure.badRequest("Invalid time parameter: " + raw) }
            return .interval(t, t)
        case 2:
            return .interval(try bound(parts[0], open: -.infinity), try bound(parts[1], open: .infinity))
        default:
            throw NodeFailure.badRequest("Invalid time parameter: " + raw)
        }
    }

    /// One swe+json record: every field, the time included, in schema order.
    static func writeSWERecord(_ r: SWERecordValue, _ record: DataComponent, _ w: inout JSONWriter) {
        let values = Dictionary(r.fields.map { ($0.path, $0.value) }, uniquingKeysWith: { a, _ in a })
        switch record.kind {
        case .record, .vector: ResultWriter.group(record, path: "", values, omitTimes: false, &w)
        default: ResultWriter.component(record, path: "/", values, &w)
        }
    }
}

/// Writes decoded records back as swe+binary, the inverse of RecordReader's binary source:
/// members in schema order, each in its member's data type and the encoding's byte order;
/// strings with a 2-byte length; a Block without byteLength with a 4-byte length. Arrays and
/// choices that are not Blocks are not written (nothing the agent registers has them).
struct BinaryRecordWriter {
    struct Failure: Error { var message: String }

    let encoding: BinaryEncoding
    let members: [String: BinaryMember]
    var out: [UInt8] = []

    init(encoding: BinaryEncoding) {
        self.encoding = encoding
        var m: [String: BinaryMember] = [:]
        for x in encoding.members { m[x.ref] = x }
        members = m
    }

    mutating func write(_ r: SWERecordValue, _ record: DataComponent) throws(Failure) {
        let values = Dictionary(r.fields.map { ($0.path, $0.value) }, uniquingKeysWith: { a, _ in a })
        switch record.kind {
        case .record, .vector:
            for c in record.children { try component(c, path: "/" + (c.name ?? ""), values) }
        default:
            try component(record, path: "/", values)
        }
    }

    private mutating func component(_ c: DataComponent, path: String, _ values: [String: SWEValue]) throws(Failure) {
        switch c.kind {
        case .record, .vector:
            for child in c.children { try component(child, path: path + "/" + (child.name ?? ""), values) }
            return
        default:
            break
        }
        guard let m = members[path] else { throw Failure(message: "no BinaryEncoding member for " + path) }
        let v = values[path] ?? .absent
        switch m {
        case .block(_, _, let fixed):
            guard case .block(let bytes) = v else { throw Failure(message: "no block value at " + path) }
            if fixed == nil { integer(UInt64(bytes.count), 4) }
            out += bytes
        case .component(_, let dt):
            switch v {
            case .time(let t):
                if dt == .utf8String { string(ISOTime.string(epochSeconds: t)) } else { number(t, dt) }
            case .number(let d): number(d, dt)
            case .count(let n): number(Double(n), dt)
            case .bool(let b): number(b ? 1 : 0, dt)
            case .text(let s): string(s)
            case .absent: number(.nan, dt)
            default: throw Failure(message: "cannot write the value at " + path)
            }
        }
    }

    private mutating func integer(_ bits: UInt64, _ size: Int) {
        for i in 0..<size {
            let shift = encoding.bigEndian ? (size - 1 - i) * 8 : i * 8
            out.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift)))
        }
    }

    private mutating func number(_ d: Double, _ dt: ScalarDataType) {
        func clamped<T: FixedWidthInteger>(_: T.Type) -> T {
            guard d.isFinite else { return 0 }
            if d <= Double(T.min) { return T.min }
            if d >= Double(T.max) { return T.max }
            return T(d.rounded())
        }
        switch dt {
        case .double: integer(d.bitPattern, 8)
        case .float32: integer(UInt64(Float(d).bitPattern), 4)
        case .signedLong: integer(UInt64(bitPattern: clamped(Int64.self)), 8)
        case .signedInt: integer(UInt64(UInt32(bitPattern: clamped(Int32.self))), 4)
        case .signedShort: integer(UInt64(UInt16(bitPattern: clamped(Int16.self))), 2)
        case .signedByte: integer(UInt64(UInt8(bitPattern: clamped(Int8.self))), 1)
        case .unsignedLong: integer(clamped(UInt64.self), 8)
        case .unsignedInt: integer(UInt64(clamped(UInt32.self)), 4)
        case .unsignedShort: integer(UInt64(clamped(UInt16.self)), 2)
        case .unsignedByte: integer(UInt64(clamped(UInt8.self)), 1)
        case .boolean: integer(d != 0 && !d.isNaN ? 1 : 0, 1)
        case .utf8String: string(String(d))
        }
    }

    /// Java writeUTF: 2-byte length, then the text (modified UTF-8 differs only for NUL and
    /// characters beyond the BMP, which sensor text does not carry).
    private mutating func string(_ s: String) {
        let bytes = Array(s.utf8.prefix(65_535))
        integer(UInt64(bytes.count), 2)
        out += bytes
    }
}
