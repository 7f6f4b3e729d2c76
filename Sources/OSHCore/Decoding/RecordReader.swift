// The node tree is here; its two token sources (JSON and binary) are in
// RecordReader+TokenSources.swift. Both must agree on every leaf kind and time rule: the
// round-trip tests (DecodingTests, RoundTripTests) drive one tree through both.
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

// MARK: - Reader

public struct RecordReader: Sendable {
    public let record: DataComponent
    public let encoding: BinaryEncoding?
    let root: Node

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
        for (key, v) in members where seen.insert(key).inserted {  // first occurrence wins
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
            if src.offset == start {  // a record of no bytes would loop forever
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

    private func walkGroup<S: TokenSource>(
        _ g: Node, _ children: [Node], _ src: inout S,
        _ out: inout [(path: String, value: SWEValue)],
        _ ctx: inout WalkContext
    ) throws(SWEDecodingError) {
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
    struct OMTimes {
        var phenomenon: Double
        var result: Double?
    }

    struct WalkContext {
        var om: OMTimes?
        /// Counts with an `id` decoded so far in this record, for `elementCount: {"href": "#id"}`.
        var counts: [String: Int] = [:]
        init(om: OMTimes?) { self.om = om }
    }

    struct MemberTable {
        var byRef: [String: BinaryMember] = [:]
        var used: Set<String> = []
    }

    /// One component of the record, with everything both sources need precomputed.
    struct Node: Sendable {
        enum Size: Sendable { case fixed(Int), ref(String), implicit }

        indirect enum Kind: Sendable {
            case group([Node])  // DataRecord or Vector: walked into
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
            return Node(
                name: name, path: path, ref: ref, optional: c.optional ?? false,
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
                if ex, let om {
                    out.append((path, .time(isRunTime ? om.result ?? om.phenomenon : om.phenomenon)))
                } else {
                    out.append((path, .absent))
                }
            default:
                out.append((path, .absent))
            }
        }

        static func firstFieldName(of n: Node) -> String? {
            if case .group(let children) = n.kind { return children.first?.name }
            return nil
        }
    }
}
