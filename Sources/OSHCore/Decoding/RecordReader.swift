// Size (~880 lines, one file on purpose): the node tree and its two token sources (JSON and
// binary) must agree on every leaf kind and time rule; split apart, the halves would drift.
//
// Decodes observations of one datastream. A RecordReader is built ONCE from the record
// DataComponent (plus its BinaryEncoding, if any) into a tree of nodes, and that single tree
// is driven by two token sources: JSON (swe+json records and O&M observations) and binary
// (swe+binary). Leaf paths, value kinds and O&M time handling therefore come out the same
// however the datastream was fetched.
//
// Wire assumptions (osh-core's org.vast.swe BinaryDataParser/Writer, the ones the node uses):
// - Binary records concatenate with no separator; members are read in schema order, each
//   with the data type of the encoding member whose `ref` is its path.
// - Lengths follow the encoding's byte order: string-utf-8 = 2-byte length + Java modified
//   UTF-8 (writeUTF), Block without byteLength = 4-byte signed length + payload.
// - DataChoice: JSON `{"item": value}`; binary a 1-byte signed item index, then the item
//   (osh-core writeByte/readByte), or one Block if the encoding has a Block at the choice.
// - DataArray without a Block: its elements, with members keyed by the element type's path
//   (`/array/element/...`); the size is the inline Count's value, the Count linked by
//   `{"href":"#ID"}` decoded earlier in the record, or (neither) a 4-byte count prefix.
// - `optional` fields may be omitted in JSON (their leaves decode as `.absent`); binary has
//   no presence flags in OSH, so optional fields are always read there.

// MARK: - Values

/// One decoded value.
public enum SWEValue: Sendable, Equatable {
    /// Epoch seconds for ISO-8601 times; for other times the number in the component's unit.
    case time(Double)
    case number(Double)
    case count(Int)
    case bool(Bool)
    /// Text or Category.
    case text(String)
    /// A DataArray or DataChoice encoded as one binary Block (e.g. an H.264 frame).
    case block([UInt8])
    /// A DataArray: elements are scalars, `.record` (record/vector elements), `.array`, `.choice`.
    case array([SWEValue])
    /// A record or vector element of an array, paths relative to the element.
    case record(SWERecordValue)
    /// A DataChoice: the chosen item's name and its value, paths as `SchemaWalker.leaves(of: item)`
    /// gives them (`/` for a scalar item).
    case choice(item: String, value: SWERecordValue)
    /// No value: an omitted optional field, a JSON `null` text, or a result the node did not show.
    case absent

    /// Times, numbers, counts and booleans (1/0) as a Double.
    public var double: Double? {
        switch self {
        case .time(let d), .number(let d): return d
        case .count(let n): return Double(n)
        case .bool(let b): return b ? 1 : 0
        default: return nil
        }
    }
}

/// One decoded record: its leaves in SchemaWalker order, plus what an O&M observation adds.
public struct SWERecordValue: Sendable, Equatable {
    /// `(path, value)` in `SchemaWalker.leaves` order: `/time`, `/location/lat`, …
    public var fields: [(path: String, value: SWEValue)]
    /// O&M `phenomenonTime`, epoch seconds.
    public var phenomenonTime: Double?
    /// O&M `resultTime`, epoch seconds.
    public var resultTime: Double?
    /// O&M `foi@id`.
    public var foiID: String?
    /// The node's observation `id`.
    public var id: String?

    public init(fields: [(path: String, value: SWEValue)], phenomenonTime: Double? = nil,
                resultTime: Double? = nil, foiID: String? = nil, id: String? = nil) {
        self.fields = fields
        self.phenomenonTime = phenomenonTime
        self.resultTime = resultTime
        self.foiID = foiID
        self.id = id
    }

    /// The value at a leaf path.
    public subscript(path: String) -> SWEValue? {
        for f in fields where f.path == path { return f.value }
        return nil
    }

    /// The numeric leaves (time, quantity, count, boolean as 1/0) in order: what a sensor emits.
    public var doubles: [Double] { fields.compactMap { $0.value.double } }

    public static func == (a: SWERecordValue, b: SWERecordValue) -> Bool {
        guard a.fields.count == b.fields.count, a.phenomenonTime == b.phenomenonTime, a.resultTime == b.resultTime,
              a.foiID == b.foiID, a.id == b.id else { return false }
        for i in a.fields.indices where a.fields[i].path != b.fields[i].path || a.fields[i].value != b.fields[i].value {
            return false
        }
        return true
    }
}

/// The records of a body, and the error that stopped decoding, if any. Records before the
/// error are kept: a truncated binary stream or a bad 7th observation still yields 6.
public struct DecodedRecords: Sendable, Equatable {
    public var records: [SWERecordValue]
    public var error: SWEDecodingError?
    public init(records: [SWERecordValue], error: SWEDecodingError? = nil) {
        self.records = records
        self.error = error
    }
}

/// What a JSON body holds.
public enum JSONObservationForm: Sendable {
    /// Per item: O&M if it has both `phenomenonTime` and `result`, else a swe+json record.
    case auto
    /// swe+json records.
    case record
    /// O&M JSON observations.
    case observation
}

// MARK: - Reader

public struct RecordReader: Sendable {
    public let record: DataComponent
    public let encoding: BinaryEncoding?
    fileprivate let root: Node

    /// Builds the reader tree. With an encoding, every scalar leaf must have a Component member
    /// (and every member must match a component): a layout mismatch fails here, not mid-stream.
    public init(record: DataComponent, encoding: BinaryEncoding? = nil) throws(SWEDecodingError) {
        self.record = record
        self.encoding = encoding
        var table: MemberTable?
        if let e = encoding {
            var t = MemberTable()
            for m in e.members {
                if t.byRef.updateValue(m, forKey: m.ref) != nil {
                    throw SWEDecodingError.schema(path: m.ref, message: "two BinaryEncoding members with the same ref")
                }
            }
            table = t
        }
        switch record.kind {
        case .record, .vector: root = try Node.build(record, path: "", ref: "", table: &table)
        default: root = try Node.build(record, path: "/", ref: "/", table: &table)
        }
        if let t = table, let unused = t.byRef.keys.sorted().first(where: { !t.used.contains($0) }) {
            throw SWEDecodingError.schema(path: unused, message: "BinaryEncoding member matches no component of the record")
        }
    }

    // MARK: JSON

    /// One swe+json record object (fields in schema order, as the node enforces).
    /// `path` is the record's JSON path in the document, for error messages.
    public func decodeRecord(_ json: JSONValue, path: String = "") throws(SWEDecodingError) -> SWERecordValue {
        var src = JSONSource(json, base: path)
        return SWERecordValue(fields: try decodeRoot(&src, om: nil))
    }

    /// One O&M JSON observation: `phenomenonTime` (required) fills the record's observation-time
    /// fields, whether or not `result` repeats them; `resultTime`, `foi@id` and `id` are kept;
    /// other keys (`datastream@id`, …) are skipped. A string `result` (the node's "Compressed
    /// binary result not shown in JSON") yields `.absent` for every non-time leaf.
    public func decodeObservation(_ json: JSONValue, path: String = "") throws(SWEDecodingError) -> SWERecordValue {
        guard case .object(let members) = json else {
            throw SWEDecodingError.record(path: path, message: "expected an observation object, found \(json.typeName)")
        }
        var seen = Set<String>()
        var phenomenon: Double?, resultTime: Double?, foi: String?, id: String?, result: JSONValue?
        for (key, v) in members where seen.insert(key).inserted { // first occurrence wins
            let p = "\(path)/\(key)"
            switch key {
            case "phenomenonTime": phenomenon = try Self.isoTime(v, p)
            case "resultTime": if !v.isNull { resultTime = try Self.isoTime(v, p) }
            case "foi@id": foi = try Self.string(v, p)
            case "id": id = try Self.string(v, p)
            case "result": result = v
            default: continue
            }
        }
        guard let t = phenomenon else { throw SWEDecodingError.record(path: path, message: "missing \"phenomenonTime\"") }
        guard let result else { throw SWEDecodingError.record(path: path, message: "missing \"result\"") }
        let om = OMTimes(phenomenon: t, result: resultTime)
        var fields: [(path: String, value: SWEValue)] = []
        if case .string = result {
            root.fill(om: om, excluded: false, into: &fields)
        } else {
            var src = JSONSource(result, base: path + "/result")
            fields = try decodeRoot(&src, om: om)
        }
        return SWERecordValue(fields: fields, phenomenonTime: t, resultTime: resultTime, foiID: foi, id: id)
    }

    /// A JSON body: one record or observation, an array of them, or a `{"items": […]}` collection.
    public func decodeJSON(_ json: JSONValue, form: JSONObservationForm = .auto) -> DecodedRecords {
        var items: [(JSONValue, String)]
        switch json {
        case .array(let a):
            items = a.enumerated().map { ($1, "/\($0)") }
        case .object:
            // A collection wrapper, unless the record itself starts with a field named "items".
            if case .array(let a)? = json["items"], Node.firstFieldName(of: root) != "items" {
                items = a.enumerated().map { ($1, "/items/\($0)") }
            } else {
                items = [(json, "")]
            }
        default:
            items = [(json, "")]
        }
        var out = DecodedRecords(records: [])
        out.records.reserveCapacity(items.count)
        for (v, p) in items {
            let isObservation: Bool
            switch form {
            case .record: isObservation = false
            case .observation: isObservation = true
            case .auto: isObservation = v["phenomenonTime"] != nil && v["result"] != nil
            }
            do throws(SWEDecodingError) {
                out.records.append(try isObservation ? decodeObservation(v, path: p) : decodeRecord(v, path: p))
            } catch {
                out.error = error
                break
            }
        }
        return out
    }

    /// JSON text, parsed then decoded as `decodeJSON(_:form:)`.
    public func decodeJSON(_ bytes: [UInt8], form: JSONObservationForm = .auto) -> DecodedRecords {
        do throws(JSONParseError) {
            return decodeJSON(try JSONValue.parse(bytes), form: form)
        } catch {
            return DecodedRecords(records: [], error: .json(error))
        }
    }

    // MARK: Binary

    /// A swe+binary body: records back to back until the end. On a short or bad record the
    /// records before it are returned with the error (offset, member ref, record index).
    public func decodeBinary(_ bytes: [UInt8]) -> DecodedRecords {
        guard let e = encoding else {
            return DecodedRecords(records: [], error: .binary(offset: 0, member: "", message: "the record has no BinaryEncoding"))
        }
        var data = bytes
        if e.base64 {
            guard let d = Base64.decode(bytes) else {
                return DecodedRecords(records: [], error: .binary(offset: 0, member: "", message: "invalid base64 body"))
            }
            data = d
        }
        return data.withUnsafeBytes { decodeRaw($0, bigEndian: e.bigEndian) }
    }

    public func decodeBinary(_ bytes: UnsafeRawBufferPointer) -> DecodedRecords {
        if encoding?.base64 ?? true { return decodeBinary(Array(bytes)) }
        return decodeRaw(bytes, bigEndian: encoding!.bigEndian)
    }

    private func decodeRaw(_ bytes: UnsafeRawBufferPointer, bigEndian: Bool) -> DecodedRecords {
        var src = BinarySource(bytes: bytes, bigEndian: bigEndian)
        var out = DecodedRecords(records: [])
        while src.offset < bytes.count {
            let start = src.offset
            do throws(SWEDecodingError) {
                out.records.append(SWERecordValue(fields: try decodeRoot(&src, om: nil)))
            } catch {
                if case .binary(let o, let m, let msg) = error {
                    out.error = .binary(offset: o, member: m, message: "\(msg) (record \(out.records.count) starting at byte \(start))")
                } else {
                    out.error = error
                }
                break
            }
            if src.offset == start { // a record of no bytes would loop forever
                out.error = .binary(offset: start, member: "", message: "the record encoding reads no bytes")
                break
            }
        }
        return out
    }

    // MARK: The tree walk, shared by both sources

    private func decodeRoot<S: TokenSource>(_ src: inout S, om: OMTimes?) throws(SWEDecodingError) -> [(path: String, value: SWEValue)] {
        var ctx = WalkContext(om: om)
        var out: [(path: String, value: SWEValue)] = []
        if case .group(let children) = root.kind {
            out.reserveCapacity(children.count)
            try walkGroup(root, children, &src, &out, &ctx)
        } else {
            out.append((root.path, try value(root, &src, &ctx)))
        }
        return out
    }

    private func walkGroup<S: TokenSource>(_ g: Node, _ children: [Node], _ src: inout S,
                                           _ out: inout [(path: String, value: SWEValue)],
                                           _ ctx: inout WalkContext) throws(SWEDecodingError) {
        try src.beginGroup(g)
        for c in children {
            if let om = ctx.om, c.omExcluded {
                // O&M moves observation times out of `result`; tolerate them being left in.
                try src.skipField(c)
                c.fill(om: om, excluded: true, into: &out)
                continue
            }
            guard try src.field(c) else { c.fill(om: nil, excluded: false, into: &out); continue }
            if case .group(let grandchildren) = c.kind {
                try walkGroup(c, grandchildren, &src, &out, &ctx)
            } else {
                out.append((c.path, try value(c, &src, &ctx)))
            }
        }
        try src.endGroup(g)
    }

    /// A leaf's value; for an array element or choice item, also records/vectors as one value.
    private func value<S: TokenSource>(_ n: Node, _ src: inout S, _ ctx: inout WalkContext) throws(SWEDecodingError) -> SWEValue {
        switch n.kind {
        case .group:
            return .record(try nested(n, &src, &ctx))
        case .array(let element, let size):
            var known: Int?
            switch size {
            case .fixed(let k): known = k
            case .implicit: known = nil
            case .ref(let id):
                guard let k = ctx.counts[id] else {
                    throw SWEDecodingError.schema(path: n.ref, message: "array size Count '#\(id)' is not decoded before the array")
                }
                known = k
            }
            switch try src.beginArray(n, size: known) {
            case .block(let bytes): return .block(bytes)
            case .elements(let k):
                var values: [SWEValue] = []
                values.reserveCapacity(k)
                for i in 0..<k {
                    try src.element(i)
                    values.append(try value(element, &src, &ctx))
                }
                try src.endArray()
                return .array(values)
            case .item: throw SWEDecodingError.schema(path: n.ref, message: "internal: array opened as a choice")
            }
        case .choice(let items):
            switch try src.beginChoice(n, items: items) {
            case .block(let bytes): return .block(bytes)
            case .item(let k):
                let item = items[k]
                let v = try nested(item, &src, &ctx)
                try src.endChoice()
                return .choice(item: item.name, value: v)
            case .elements: throw SWEDecodingError.schema(path: n.ref, message: "internal: choice opened as an array")
            }
        case .time, .quantity, .count, .boolean, .text:
            let v = try src.scalar(n)
            if case .count(let id?) = n.kind, case .count(let k) = v { ctx.counts[id] = k }
            return v
        }
    }

    /// An array element or choice item as a record of its own (O&M exclusion does not reach inside).
    private func nested<S: TokenSource>(_ n: Node, _ src: inout S, _ ctx: inout WalkContext) throws(SWEDecodingError) -> SWERecordValue {
        let om = ctx.om
        ctx.om = nil
        defer { ctx.om = om }
        var fields: [(path: String, value: SWEValue)] = []
        if case .group(let children) = n.kind {
            try walkGroup(n, children, &src, &fields, &ctx)
        } else {
            fields.append((n.path, try value(n, &src, &ctx)))
        }
        return SWERecordValue(fields: fields)
    }

    private static func isoTime(_ v: JSONValue, _ path: String) throws(SWEDecodingError) -> Double {
        guard case .string(let s) = v else {
            throw SWEDecodingError.record(path: path, message: "expected an ISO 8601 string, found \(v.typeName)")
        }
        guard let t = ISOTime.parse(s) else { throw SWEDecodingError.record(path: path, message: "invalid ISO 8601 time \"\(s)\"") }
        return t
    }

    private static func string(_ v: JSONValue, _ path: String) throws(SWEDecodingError) -> String {
        guard case .string(let s) = v else { throw SWEDecodingError.record(path: path, message: "expected a string, found \(v.typeName)") }
        return s
    }
}

// MARK: - The reader tree (nested, so its short names cannot clash with the rest of the module)

extension RecordReader {
    fileprivate struct OMTimes {
        var phenomenon: Double
        var result: Double?
    }

    fileprivate struct WalkContext {
        var om: OMTimes?
        /// Counts with an `id` decoded so far in this record, for `elementCount: {"href": "#id"}`.
        var counts: [String: Int] = [:]
        init(om: OMTimes?) { self.om = om }
    }

    fileprivate struct MemberTable {
        var byRef: [String: BinaryMember] = [:]
        var used: Set<String> = []
    }

    /// One component of the record, with everything both sources need precomputed.
    fileprivate struct Node: Sendable {
        enum Size: Sendable { case fixed(Int), ref(String), implicit }

        indirect enum Kind: Sendable {
            case group([Node])                       // DataRecord or Vector: walked into
            case time(iso: Bool), quantity(float32: Bool), count(id: String?), boolean, text
            case array(element: Node, size: Size)
            case choice(items: [Node])
        }

        let name: String
        /// Output path, relative to the enclosing value (`/location/lat`; `/` for a scalar root).
        let path: String
        /// Absolute path used by BinaryEncoding member refs (`/img`, `/arr/elem/x`).
        let ref: String
        let optional: Bool
        /// The definition is an O&M time (PhenomenonTime, SamplingTime, ForecastTime, RunTime).
        let omExcluded: Bool
        /// RunTime takes O&M `resultTime` instead of `phenomenonTime`.
        let isRunTime: Bool
        let kind: Kind
        /// A scalar's Component member, or an array's/choice's Block member (nil: read element-wise).
        let member: BinaryMember?

        static func build(_ c: DataComponent, path: String, ref: String, table: inout MemberTable?) throws(SWEDecodingError) -> Node {
            let name = c.name ?? ""
            var member: BinaryMember?
            if table != nil, let m = table!.byRef[ref] {
                table!.used.insert(ref)
                member = m
            }
            func child(_ x: DataComponent, base: String, baseRef: String) throws(SWEDecodingError) -> Node {
                try build(x, path: base + "/" + (x.name ?? ""), ref: baseRef + "/" + (x.name ?? ""), table: &table)
            }
            /// The root of an element or item: paths restart, refs continue. Under a Block nothing
            /// inside is encoded on its own, so the subtree is built without a member table.
            func root(_ x: DataComponent) throws(SWEDecodingError) -> Node {
                let r = ref + "/" + (x.name ?? "")
                let p: String
                switch x.kind {
                case .record, .vector: p = ""
                default: p = "/"
                }
                if case .block? = member {
                    var none: MemberTable?
                    return try build(x, path: p, ref: r, table: &none)
                }
                return try build(x, path: p, ref: r, table: &table)
            }
            if table != nil { try checkMember(member, kind: c.kind, ref: ref) }
            let kind: Kind
            switch c.kind {
            case .record, .vector:
                var children: [Node] = []
                for x in c.children { children.append(try child(x, base: path, baseRef: ref)) }
                kind = .group(children)
            case .time(let t): kind = .time(iso: t.isISO)
            case .quantity(let q): kind = .quantity(float32: q.dataType == .float32)
            case .count: kind = .count(id: c.id)
            case .boolean: kind = .boolean
            case .text, .category: kind = .text
            case .array(let a):
                let size: Size
                switch a.elementCount {
                case .href(let h): size = .ref(h.hasPrefix("#") ? String(h.dropFirst()) : h)
                case .inline(let countComponent):
                    if case .count(let n) = countComponent.kind, let v = n.value {
                        guard v >= 0 else { throw SWEDecodingError.schema(path: ref, message: "negative elementCount \(v)") }
                        size = .fixed(v)
                    } else {
                        size = .implicit
                    }
                }
                kind = .array(element: try root(a.elementType), size: size)
            case .choice(let ch):
                var items: [Node] = []
                for x in ch.items { items.append(try root(x)) }
                kind = .choice(items: items)
            }
            let def = c.definition ?? ""
            return Node(name: name, path: path, ref: ref, optional: c.optional ?? false,
                        omExcluded: SWE.observationTimeDefinitions.contains(def), isRunTime: def == SWE.runTime,
                        kind: kind, member: member)
        }

        /// With an encoding: scalars need a Component of a data type that can carry them;
        /// arrays and choices take a Block or nothing (then their elements have members).
        private static func checkMember(_ m: BinaryMember?, kind: DataComponent.Kind, ref: String) throws(SWEDecodingError) {
            func fail(_ msg: String) -> SWEDecodingError { .schema(path: ref, message: msg) }
            switch kind {
            case .record, .vector:
                if m != nil { throw fail("a BinaryEncoding member cannot encode a whole record or vector") }
            case .array, .choice:
                if case .component? = m { throw fail("an array or choice needs a Block member, not a Component") }
            case .time, .quantity, .count, .boolean, .text, .category:
                guard let m else { throw fail("no BinaryEncoding member for this component") }
                guard case .component(_, let dt) = m else { throw fail("a scalar needs a Component member, not a Block") }
                let ok: Bool
                switch kind {
                case .time: ok = dt != .boolean
                case .quantity, .count: ok = dt != .boolean && dt != .utf8String
                case .boolean: ok = dt != .utf8String && dt != .double && dt != .float32
                default: ok = dt == .utf8String
                }
                if !ok { throw fail("data type \(dt.rawValue) cannot encode this component") }
            }
        }

        /// Appends this node's leaves without reading anything: O&M times (when `excluded`) or `.absent`.
        func fill(om: OMTimes?, excluded: Bool, into out: inout [(path: String, value: SWEValue)]) {
            let ex = excluded || omExcluded
            switch kind {
            case .group(let children):
                for c in children { c.fill(om: om, excluded: ex, into: &out) }
            case .time:
                if ex, let om { out.append((path, .time(isRunTime ? om.result ?? om.phenomenon : om.phenomenon))) }
                else { out.append((path, .absent)) }
            default:
                out.append((path, .absent))
            }
        }

        static func firstFieldName(of n: Node) -> String? {
            if case .group(let children) = n.kind { return children.first?.name }
            return nil
        }
    }

    // MARK: - Token sources

    fileprivate enum Opening { case block([UInt8]), elements(Int), item(Int) }

    /// What the tree asks of a source. JSON checks names and shapes; binary ignores names and reads bytes.
    fileprivate protocol TokenSource {
        mutating func beginGroup(_ n: Node) throws(SWEDecodingError)
        /// Positions at field `n`; false when an optional field is absent.
        mutating func field(_ n: Node) throws(SWEDecodingError) -> Bool
        /// Consumes field `n` if it is next (O&M times the result may or may not repeat).
        mutating func skipField(_ n: Node) throws(SWEDecodingError)
        mutating func endGroup(_ n: Node) throws(SWEDecodingError)
        mutating func scalar(_ n: Node) throws(SWEDecodingError) -> SWEValue
        mutating func beginArray(_ n: Node, size: Int?) throws(SWEDecodingError) -> Opening
        mutating func element(_ i: Int) throws(SWEDecodingError)
        mutating func endArray() throws(SWEDecodingError)
        mutating func beginChoice(_ n: Node, items: [Node]) throws(SWEDecodingError) -> Opening
        mutating func endChoice() throws(SWEDecodingError)
    }

    /// Walks a parsed JSONValue. `current` is the value the next read consumes; frames track
    /// where we are, so errors carry the JSON path (`/items/2/result/location/lat`).
    fileprivate struct JSONSource: TokenSource {
        enum Frame {
            case object([(String, JSONValue)], next: Int)
            case array([JSONValue], at: Int)
            case key(String)
        }

        var current: JSONValue
        let base: String
        var frames: [Frame] = []

        init(_ value: JSONValue, base: String) {
            current = value
            self.base = base
        }

        /// The JSON path of `current` (or, with `container`, of the innermost object being read).
        func path(container: Bool = false) -> String {
            var p = base
            for (i, f) in frames.enumerated() {
                switch f {
                case .object(let m, let next):
                    if !(container && i == frames.count - 1), next > 0 { p += "/" + m[next - 1].0 }
                case .array(_, let at): if at >= 0 { p += "/\(at)" }
                case .key(let k): p += "/" + k
                }
            }
            return p
        }

        func fail(_ message: String, container: Bool = false) -> SWEDecodingError {
            .record(path: path(container: container), message: message)
        }

        mutating func beginGroup(_ n: Node) throws(SWEDecodingError) {
            guard case .object(let m) = current else { throw fail("expected an object, found \(current.typeName)") }
            frames.append(.object(m, next: 0))
        }

        mutating func field(_ n: Node) throws(SWEDecodingError) -> Bool {
            guard case .object(let m, let next)? = frames.last else { throw fail("internal: no object open") }
            if next < m.count, m[next].0 == n.name {
                current = m[next].1
                frames[frames.count - 1] = .object(m, next: next + 1)
                return true
            }
            if n.optional { return false }
            // The node's own wording (JsonDataParserGson.RecordReader), so messages match its 400s.
            throw fail(next < m.count ? "Expected field '\(n.name)' but was '\(m[next].0)'"
                                      : "Expected field '\(n.name)' but the object ended", container: true)
        }

        mutating func skipField(_ n: Node) throws(SWEDecodingError) {
            guard case .object(let m, let next)? = frames.last else { return }
            if next < m.count, m[next].0 == n.name { frames[frames.count - 1] = .object(m, next: next + 1) }
        }

        mutating func endGroup(_ n: Node) throws(SWEDecodingError) {
            guard case .object(let m, let next)? = frames.last else { throw fail("internal: no object open") }
            if next < m.count { throw fail("Unexpected field '\(m[next].0)' after the last field of the schema", container: true) }
            frames.removeLast()
        }

        mutating func scalar(_ n: Node) throws(SWEDecodingError) -> SWEValue {
            let v = current
            switch n.kind {
            case .time(let iso):
                switch v {
                case .string(let s):
                    if let d = SchemaDecoder.special(s) { return .time(d) }
                    if iso, let t = ISOTime.parse(s) { return .time(t) }
                    throw fail(iso ? "invalid ISO 8601 time \"\(s)\"" : "expected a number, found \"\(s)\"")
                case .number(let d, _):
                    if iso { throw fail("expected an ISO 8601 string, found number") }
                    return .time(d)
                case .null: return .time(.nan) // what osh-core reads for a null time
                default: throw fail("expected a time, found \(v.typeName)")
                }
            case .quantity(let float32):
                // A float32 field is read as a Float, as osh-core's FloatReader does, so JSON and binary agree.
                if case .number(let d, _) = v { return .number(float32 ? Double(Float(d)) : d) }
                if case .string(let s) = v, let d = SchemaDecoder.special(s) { return .number(d) }
                throw fail("Expected decimal value or one of ['NaN', '-INF', '+INF'], found \(Self.show(v))")
            case .count:
                guard let k = v.int else { throw fail("expected an integer, found \(Self.show(v))") }
                return .count(k)
            case .boolean:
                guard case .bool(let b) = v else { throw fail("expected a boolean, found \(Self.show(v))") }
                return .bool(b)
            case .text:
                if case .string(let s) = v { return .text(s) }
                if case .null = v { return .absent }
                throw fail("expected a string, found \(Self.show(v))")
            default:
                throw fail("internal: not a scalar")
            }
        }

        mutating func beginArray(_ n: Node, size: Int?) throws(SWEDecodingError) -> Opening {
            guard case .array(let a) = current else { throw fail("expected an array, found \(current.typeName)") }
            if let size, size != a.count { throw fail("expected \(size) array elements, found \(a.count)") }
            frames.append(.array(a, at: -1))
            return .elements(a.count)
        }

        mutating func element(_ i: Int) throws(SWEDecodingError) {
            guard case .array(let a, _)? = frames.last, a.indices.contains(i) else { throw fail("internal: no array open") }
            frames[frames.count - 1] = .array(a, at: i)
            current = a[i]
        }

        mutating func endArray() throws(SWEDecodingError) { frames.removeLast() }

        mutating func beginChoice(_ n: Node, items: [Node]) throws(SWEDecodingError) -> Opening {
            guard case .object(let m) = current, m.count == 1 else {
                throw fail("expected a one-member object naming the chosen item, found \(Self.show(current))")
            }
            guard let k = items.firstIndex(where: { $0.name == m[0].0 }) else {
                throw fail("Invalid choice selector value '\(m[0].0)'")
            }
            frames.append(.key(m[0].0))
            current = m[0].1
            return .item(k)
        }

        mutating func endChoice() throws(SWEDecodingError) { frames.removeLast() }

        static func show(_ v: JSONValue) -> String {
            switch v {
            case .number(_, let raw): return raw
            case .string(let s): return "\"\(s)\""
            case .bool(let b): return "\(b)"
            default: return v.typeName
            }
        }
    }

    /// Reads a raw (already base64-decoded) binary body. Errors carry the offset where the failed
    /// read began and the member's ref.
    fileprivate struct BinarySource: TokenSource {
        let b: UnsafeRawBufferPointer
        let bigEndian: Bool
        var offset = 0

        init(bytes: UnsafeRawBufferPointer, bigEndian: Bool) {
            b = bytes
            self.bigEndian = bigEndian
        }

        func fail(_ n: Node, _ message: String, at: Int? = nil) -> SWEDecodingError {
            .binary(offset: at ?? offset, member: n.ref, message: message)
        }

        /// Claims `k` bytes and returns where they start.
        mutating func take(_ k: Int, _ n: Node) throws(SWEDecodingError) -> Int {
            guard k <= b.count - offset else {
                throw fail(n, "truncated: needs \(k) bytes, \(b.count - offset) left")
            }
            defer { offset += k }
            return offset
        }

        mutating func unsigned(_ size: Int, _ n: Node) throws(SWEDecodingError) -> UInt64 {
            let s = try take(size, n)
            var v: UInt64 = 0
            for k in 0..<size { v = v << 8 | UInt64(b[bigEndian ? s + k : s + size - 1 - k]) }
            return v
        }

        enum Number { case signed(Int64), unsigned(UInt64), real(Double) }

        mutating func number(_ dt: ScalarDataType, _ n: Node) throws(SWEDecodingError) -> Number {
            switch dt {
            case .double: return .real(Double(bitPattern: try unsigned(8, n)))
            case .float32: return .real(Double(Float(bitPattern: UInt32(truncatingIfNeeded: try unsigned(4, n)))))
            case .signedLong: return .signed(Int64(bitPattern: try unsigned(8, n)))
            case .signedInt: return .signed(Int64(Int32(truncatingIfNeeded: try unsigned(4, n))))
            case .signedShort: return .signed(Int64(Int16(truncatingIfNeeded: try unsigned(2, n))))
            case .signedByte: return .signed(Int64(Int8(truncatingIfNeeded: try unsigned(1, n))))
            case .unsignedLong: return .unsigned(try unsigned(8, n))
            case .unsignedInt: return .unsigned(try unsigned(4, n))
            case .unsignedShort: return .unsigned(try unsigned(2, n))
            case .unsignedByte: return .unsigned(try unsigned(1, n))
            case .boolean: return .unsigned(try unsigned(1, n) != 0 ? 1 : 0)
            case .utf8String: throw fail(n, "internal: a string is not a number")
            }
        }

        mutating func real(_ dt: ScalarDataType, _ n: Node) throws(SWEDecodingError) -> Double {
            switch try number(dt, n) {
            case .signed(let i): return Double(i)
            case .unsigned(let u): return Double(u)
            case .real(let d): return d
            }
        }

        /// Java DataOutput.writeUTF: 2-byte length, then modified UTF-8.
        mutating func string(_ n: Node) throws(SWEDecodingError) -> String {
            let start = offset
            let length = Int(try unsigned(2, n))
            let s = try take(length, n)
            guard let text = ModifiedUTF8.decode(UnsafeRawBufferPointer(rebasing: b[s..<s + length])) else {
                throw fail(n, "invalid modified UTF-8 string", at: start)
            }
            return text
        }

        mutating func block(_ n: Node) throws(SWEDecodingError) -> [UInt8] {
            guard case .block(_, _, let fixed)? = n.member else { throw fail(n, "internal: no Block member") }
            let start = offset
            var length = fixed ?? 0
            if fixed == nil {
                let l = Int32(truncatingIfNeeded: try unsigned(4, n))
                guard l >= 0 else { throw fail(n, "negative block length \(l)", at: start) }
                length = Int(l)
            }
            let s = try take(length, n)
            return Array(b[s..<s + length])
        }

        mutating func beginGroup(_ n: Node) throws(SWEDecodingError) {}
        mutating func field(_ n: Node) throws(SWEDecodingError) -> Bool { true }
        mutating func skipField(_ n: Node) throws(SWEDecodingError) {}
        mutating func endGroup(_ n: Node) throws(SWEDecodingError) {}

        mutating func scalar(_ n: Node) throws(SWEDecodingError) -> SWEValue {
            guard case .component(_, let dt)? = n.member else { throw fail(n, "no BinaryEncoding member") }
            let start = offset
            switch n.kind {
            case .time:
                if dt == .utf8String {
                    let s = try string(n)
                    guard let t = ISOTime.parse(s) else { throw fail(n, "invalid ISO 8601 time \"\(s)\"", at: start) }
                    return .time(t)
                }
                return .time(try real(dt, n))
            case .quantity:
                return .number(try real(dt, n))
            case .count:
                let k: Int?
                switch try number(dt, n) {
                case .signed(let i): k = Int(exactly: i)
                case .unsigned(let u): k = Int(exactly: u)
                case .real(let d): k = d.isFinite ? Int(exactly: d) : nil
                }
                guard let k else { throw fail(n, "count value is not an integer in range", at: start) }
                return .count(k)
            case .boolean:
                return .bool(try real(dt, n) != 0) // any non-zero integer is true, as Java's readBoolean
            case .text:
                return .text(try string(n))
            default:
                throw fail(n, "internal: not a scalar")
            }
        }

        mutating func beginArray(_ n: Node, size: Int?) throws(SWEDecodingError) -> Opening {
            if case .block? = n.member { return .block(try block(n)) }
            var k = size ?? 0
            if size == nil { // implicit size: a 4-byte count first (osh-core ImplicitSizeProcessor)
                let start = offset
                let l = Int32(truncatingIfNeeded: try unsigned(4, n))
                guard l >= 0 else { throw fail(n, "negative array size \(l)", at: start) }
                k = Int(l)
            }
            // Every element takes at least a byte: a larger size is a bad or truncated body, not a loop to run.
            guard k <= b.count - offset else { throw fail(n, "truncated: array of \(k) elements, \(b.count - offset) bytes left") }
            return .elements(k)
        }

        mutating func element(_ i: Int) throws(SWEDecodingError) {}
        mutating func endArray() throws(SWEDecodingError) {}

        mutating func beginChoice(_ n: Node, items: [Node]) throws(SWEDecodingError) -> Opening {
            if case .block? = n.member { return .block(try block(n)) }
            let start = offset
            let k = Int(Int8(truncatingIfNeeded: try unsigned(1, n)))
            guard items.indices.contains(k) else { throw fail(n, "invalid choice index \(k)", at: start) }
            return .item(k)
        }

        mutating func endChoice() throws(SWEDecodingError) {}
    }

    // MARK: - Byte helpers

    fileprivate enum ModifiedUTF8 {
        /// Java's modified UTF-8 (NUL as C0 80, supplementary characters as surrogate pairs); plain
        /// 4-byte UTF-8 is accepted too, since non-Java writers (iOS) send it. Nil when malformed.
        static func decode(_ b: UnsafeRawBufferPointer) -> String? {
            if !b.contains(where: { $0 >= 0x80 }) { return String(decoding: b, as: UTF8.self) }
            var units: [UInt16] = []
            units.reserveCapacity(b.count)
            var i = 0
            func cont(_ k: Int) -> UInt32? {
                guard i + k < b.count, b[i + k] & 0xC0 == 0x80 else { return nil }
                return UInt32(b[i + k] & 0x3F)
            }
            while i < b.count {
                let c = b[i]
                switch c {
                case 0..<0x80:
                    units.append(UInt16(c)); i += 1
                case 0xC0..<0xE0:
                    guard let c1 = cont(1) else { return nil }
                    units.append(UInt16(UInt32(c & 0x1F) << 6 | c1)); i += 2
                case 0xE0..<0xF0:
                    guard let c1 = cont(1), let c2 = cont(2) else { return nil }
                    units.append(UInt16(UInt32(c & 0x0F) << 12 | c1 << 6 | c2)); i += 3
                case 0xF0..<0xF8:
                    guard let c1 = cont(1), let c2 = cont(2), let c3 = cont(3) else { return nil }
                    let s = UInt32(c & 0x07) << 18 | c1 << 12 | c2 << 6 | c3
                    guard s >= 0x10000, s <= 0x10FFFF else { return nil }
                    units.append(UInt16(0xD800 + ((s - 0x10000) >> 10)))
                    units.append(UInt16(0xDC00 + ((s - 0x10000) & 0x3FF)))
                    i += 4
                default:
                    return nil
                }
            }
            return String(decoding: units, as: UTF16.self) // a lone surrogate becomes U+FFFD
        }
    }

}
