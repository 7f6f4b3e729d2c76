// Reads SWE Common JSON as a node returns it (osh-core SWEJsonBindings) back into the
// DataComponent model: the inverse of SWEJSON.write. Lenient about member ORDER (a reader
// takes what the node sends), strict about member TYPES (a string where a number belongs is
// an error naming its JSON path). Unknown members (quality, nilValues, …) are skipped.

/// A datastream's schema as `GET /datastreams/{id}/schema` returns it.
public struct DatastreamSchema: Sendable, Equatable {
    /// `application/om+json`, `application/swe+json`, `application/swe+binary`, …
    public var obsFormat: String
    /// The full record, time field included (see `insertedTime`).
    public var record: DataComponent
    /// The BinaryEncoding, when the schema has one (`recordEncoding`); nil for JSON/text encodings.
    public var encoding: BinaryEncoding?
    /// True when an om+json `resultSchema` had no observation time and the decoder added the
    /// node's own `time` (PhenomenonTime) field, as the node does on registration, so leaf
    /// paths are the same whichever format the schema was fetched in.
    public var insertedTime: Bool

    public init(obsFormat: String, record: DataComponent, encoding: BinaryEncoding? = nil, insertedTime: Bool = false) {
        self.obsFormat = obsFormat
        self.record = record
        self.encoding = encoding
        self.insertedTime = insertedTime
    }

    /// The reader for this datastream's observations (JSON, O&M or binary).
    public func reader() throws(SWEDecodingError) -> RecordReader {
        try RecordReader(record: record, encoding: encoding)
    }
}

public enum SchemaDecoder {
    // MARK: Components

    /// A data component object. `path` is the JSON path of `json`, used in error messages.
    public static func component(_ json: JSONValue, path: String = "") throws(SWEDecodingError) -> DataComponent {
        let o = try Members(json, path, "a component")
        guard let type = try o.string("type") else { throw o.error(nil, "missing \"type\"") }
        var c: DataComponent
        switch type {
        case "DataRecord":
            c = DataComponent(.record(try components(o, "fields")))
        case "Vector":
            c = DataComponent(
                .vector(
                    Vector(
                        referenceFrame: try o.string("referenceFrame"),
                        localFrame: try o.string("localFrame"),
                        coordinates: try components(o, "coordinates"))))
        case "Quantity":
            var q = Quantity(
                uom: try uom(o), constraint: try allowedValues(o, integers: false),
                value: try o.number("value"))
            q.simple = try simple(o)
            c = DataComponent(.quantity(q))
        case "Count":
            var n = Count(constraint: try allowedValues(o, integers: true), value: try o.int("value"))
            n.simple = try simple(o)
            c = DataComponent(.count(n))
        case "Time":
            var t = Time(
                uom: try uom(o), referenceTime: try o.string("referenceTime"),
                localFrame: try o.string("localFrame"), constraint: try allowedValues(o, integers: false))
            t.simple = try simple(o)  // replaces Time()'s UTC default with what was actually sent
            c = DataComponent(.time(t))
        case "Text":
            var t = Text(constraint: try allowedTokens(o), value: try o.string("value"))
            t.simple = try simple(o)
            c = DataComponent(.text(t))
        case "Category":
            var t = Category(codeSpace: try codeSpace(o), constraint: try allowedTokens(o), value: try o.string("value"))
            t.simple = try simple(o)
            c = DataComponent(.category(t))
        case "Boolean":
            var t = BooleanComponent(value: try o.bool("value"))
            t.simple = try simple(o)
            c = DataComponent(.boolean(t))
        case "DataArray":
            c = DataComponent(.array(try dataArray(o)))
        case "DataChoice":
            c = DataComponent(.choice(DataChoice(items: try components(o, "items"))))
        case "QuantityRange", "CountRange", "TimeRange", "CategoryRange", "Matrix", "DataStream", "Geometry":
            throw o.error(nil, "unsupported component type \"\(type)\"")
        default:
            throw o.error(nil, "unknown component type \"\(type)\"")
        }
        c.name = try o.string("name")
        c.definition = try o.string("definition")
        c.id = try o.string("id")
        c.identifier = try o.string("identifier")
        c.label = try o.string("label")
        c.description = try o.string("description")
        c.updatable = try o.bool("updatable")
        c.optional = try o.bool("optional")
        return c
    }

    /// A component from JSON text.
    public static func component(json bytes: [UInt8]) throws(SWEDecodingError) -> DataComponent {
        try component(try parse(bytes))
    }

    private static func components(_ o: Members, _ key: String) throws(SWEDecodingError) -> [DataComponent] {
        guard let list = try o.array(key) else { return [] }
        var out: [DataComponent] = []
        out.reserveCapacity(list.count)
        for (i, v) in list.enumerated() { out.append(try component(v, path: "\(o.path)/\(key)/\(i)")) }
        return out
    }

    private static func simple(_ o: Members) throws(SWEDecodingError) -> SimpleProperties {
        SimpleProperties(referenceFrame: try o.string("referenceFrame"), axisID: try o.string("axisID"))
    }

    private static func uom(_ o: Members) throws(SWEDecodingError) -> UnitOfMeasure {
        guard let v = o["uom"] else { throw o.error(nil, "missing \"uom\"") }
        let u = try Members(v, "\(o.path)/uom", "a uom")
        if let code = try u.string("code") { return .code(code) }
        if let href = try u.string("href") { return .href(href) }
        throw u.error(nil, "expected \"code\" or \"href\"")
    }

    // osh-core writes codeSpace as a string; SWE Common 3's JSON schema as {"href": …}. Read both.
    private static func codeSpace(_ o: Members) throws(SWEDecodingError) -> String? {
        guard let v = o["codeSpace"] else { return nil }
        if case .string(let s) = v { return s }
        let m = try Members(v, "\(o.path)/codeSpace", "a codeSpace string or")
        guard let h = try m.string("href") else { throw m.error(nil, "missing \"href\"") }
        return h
    }

    private static func allowedValues(_ o: Members, integers: Bool) throws(SWEDecodingError) -> AllowedValues? {
        guard let v = o["constraint"] else { return nil }
        let c = try Members(v, "\(o.path)/constraint", "a constraint")
        var out = AllowedValues()
        if let values = try c.array("values") {
            for (i, x) in values.enumerated() {
                out.values.append(try number(x, "\(c.path)/values/\(i)", integer: integers))
            }
        }
        if let intervals = try c.array("intervals") {
            for (i, x) in intervals.enumerated() {
                let p = "\(c.path)/intervals/\(i)"
                guard case .array(let pair) = x, pair.count == 2 else {
                    throw SWEDecodingError.schema(path: p, message: "expected a [min, max] pair")
                }
                out.intervals.append(
                    ClosedInterval(
                        try number(pair[0], p + "/0", integer: integers),
                        try number(pair[1], p + "/1", integer: integers)))
            }
        }
        return out
    }

    private static func allowedTokens(_ o: Members) throws(SWEDecodingError) -> AllowedTokens? {
        guard let v = o["constraint"] else { return nil }
        let c = try Members(v, "\(o.path)/constraint", "a constraint")
        var out = AllowedTokens(pattern: try c.string("pattern"))
        if let values = try c.array("values") {
            for (i, x) in values.enumerated() {
                guard case .string(let s) = x else {
                    throw SWEDecodingError.schema(path: "\(c.path)/values/\(i)", message: "expected a string, found \(x.typeName)")
                }
                out.values.append(s)
            }
        }
        return out
    }

    private static func dataArray(_ o: Members) throws(SWEDecodingError) -> DataArray {
        guard let ec = o["elementCount"] else { throw o.error(nil, "missing \"elementCount\"") }
        let ecPath = "\(o.path)/elementCount"
        let count: DataArray.ElementCount
        let m = try Members(ec, ecPath, "an elementCount")
        if m["type"] == nil, let href = try m.string("href") {
            count = .href(href)
        } else {
            let c = try component(ec, path: ecPath)
            guard case .count = c.kind else {
                throw SWEDecodingError.schema(path: ecPath, message: "expected a Count, found \(c.typeName)")
            }
            count = .inline(c)
        }
        guard let et = o["elementType"] else { throw o.error(nil, "missing \"elementType\"") }
        return DataArray(elementCount: count, elementType: try component(et, path: "\(o.path)/elementType"))
    }

    /// A number, or the special strings osh-core writes for non-finite values (schema and data spellings).
    static func number(_ v: JSONValue, _ path: String, integer: Bool = false) throws(SWEDecodingError) -> Double {
        switch v {
        case .number(let d, _):
            if integer, Double(Int(exactly: d) ?? 0) != d {
                throw SWEDecodingError.schema(path: path, message: "expected an integer, found \(d)")
            }
            return d
        case .string(let s):
            if let d = special(s) { return d }
            throw SWEDecodingError.schema(path: path, message: "expected a number, found \"\(s)\"")
        default:
            throw SWEDecodingError.schema(path: path, message: "expected a number, found \(v.typeName)")
        }
    }

    /// `NaN`, `+Infinity`/`-Infinity` (osh-core schema writer), `INF`/`+INF`/`-INF` (data writer).
    static func special(_ s: String) -> Double? {
        switch s {
        case "NaN": return .nan
        case "+Infinity", "Infinity", "+INF", "INF": return .infinity
        case "-Infinity", "-INF": return -.infinity
        default: return nil
        }
    }

    // MARK: Encodings

    /// A `BinaryEncoding` object (members `Component` with a dataType URI, or `Block`).
    public static func binaryEncoding(_ json: JSONValue, path: String = "") throws(SWEDecodingError) -> BinaryEncoding {
        let o = try Members(json, path, "an encoding")
        let type = try o.string("type")
        guard type == "BinaryEncoding" else {
            throw o.error("type", type.map { "expected \"BinaryEncoding\", found \"\($0)\"" } ?? "missing \"type\"")
        }
        var e = BinaryEncoding(members: [])
        switch try o.string("byteOrder") ?? "bigEndian" {  // SWE Common's default
        case "bigEndian": e.bigEndian = true
        case "littleEndian": e.bigEndian = false
        case let s: throw o.error("byteOrder", "unknown byte order \"\(s)\"")
        }
        switch try o.string("byteEncoding") ?? "raw" {
        case "raw": e.base64 = false
        case "base64": e.base64 = true
        case let s: throw o.error("byteEncoding", "unknown byte encoding \"\(s)\"")
        }
        for (i, v) in (try o.array("members") ?? []).enumerated() {
            let m = try Members(v, "\(o.path)/members/\(i)", "a member")
            guard let ref = try m.string("ref") else { throw m.error(nil, "missing \"ref\"") }
            switch try m.string("type") {
            case "Component":
                guard let uri = try m.string("dataType") else { throw m.error(nil, "missing \"dataType\"") }
                guard let dt = ScalarDataType(uri: uri) else { throw m.error("dataType", "unsupported data type \"\(uri)\"") }
                e.members.append(.component(ref: ref, dataType: dt))
            case "Block":
                // Padding would shift every later byte; nothing in OSH writes it, so refuse rather than misread.
                for key in ["paddingBytes-before", "paddingBytes-after"] {
                    if let pad = try m.int(key), pad != 0 { throw m.error(key, "block padding is not supported") }
                }
                let length = try m.int("byteLength")
                if let n = length, n < 0 { throw m.error("byteLength", "negative byteLength") }
                e.members.append(.block(ref: ref, compression: try m.string("compression"), byteLength: length))
            case let t:
                throw m.error("type", t.map { "unknown member type \"\($0)\"" } ?? "missing \"type\"")
            }
        }
        return e
    }

    // MARK: Datastream schemas

    /// A `GET /datastreams/{id}/schema` body: om+json (`resultSchema`) or SWE (`recordSchema`
    /// plus an encoding, required for swe+binary). Keys may come in any order. The encoding is
    /// osh-core's `recordEncoding`, else CS API Part 2's `encoding` (a server that follows the
    /// standard; our own POST bodies carry both, with the same content).
    public static func datastreamSchema(_ json: JSONValue, path: String = "") throws(SWEDecodingError) -> DatastreamSchema {
        let o = try Members(json, path, "a schema")
        guard let format = try o.string("obsFormat") else { throw o.error(nil, "missing \"obsFormat\"") }
        if format == "application/om+json" || format == "application/json" || (o["recordSchema"] == nil && o["resultSchema"] != nil) {
            guard let rs = o["resultSchema"] else { throw o.error(nil, "missing \"resultSchema\"") }
            let (record, inserted) = withObservationTime(try component(rs, path: "\(o.path)/resultSchema"))
            return DatastreamSchema(obsFormat: format, record: record, insertedTime: inserted)
        }
        guard let rs = o["recordSchema"] else { throw o.error(nil, "missing \"recordSchema\"") }
        var record = try component(rs, path: "\(o.path)/recordSchema")
        var encoding: BinaryEncoding?
        let encodingKey = o["recordEncoding"] != nil ? "recordEncoding" : "encoding"
        if let enc = o[encodingKey] {
            // JSON/Text/XML encodings carry nothing the JSON reader needs; only a BinaryEncoding is kept.
            if enc["type"]?.string == "BinaryEncoding" || format == "application/swe+binary" {
                let e = try binaryEncoding(enc, path: "\(o.path)/\(encodingKey)")
                record = applying(e, to: record)
                encoding = e
            }
        } else if format == "application/swe+binary" {
            throw o.error(nil, "missing \"recordEncoding\" (or \"encoding\") for application/swe+binary")
        }
        return DatastreamSchema(obsFormat: format, record: record, encoding: encoding)
    }

    public static func datastreamSchema(json bytes: [UInt8]) throws(SWEDecodingError) -> DatastreamSchema {
        try datastreamSchema(try parse(bytes))
    }

    /// What the node does to an om+json resultSchema (DataStreamSchemaBindingOmJson.deserialize):
    /// with no Time carrying an O&M time definition anywhere, a DataRecord gets the PhenomenonTime
    /// `time` field first; any other root is wrapped as `{time, <root name or "result">}`.
    public static func withObservationTime(_ c: DataComponent) -> (DataComponent, inserted: Bool) {
        if hasObservationTime(c) { return (c, false) }
        if case .record(var fields) = c.kind {
            var r = c
            fields.insert(SWE.phenomenonTimeField(), at: 0)
            r.kind = .record(fields)
            return (r, true)
        }
        var inner = c
        if inner.name == nil { inner.name = "result" }
        return (DataComponent(.record([SWE.phenomenonTimeField(), inner])), true)
    }

    private static func hasObservationTime(_ c: DataComponent) -> Bool {
        if c.isObservationTime { return true }
        if case .array(let a) = c.kind { return hasObservationTime(a.elementType) }
        return c.children.contains(where: hasObservationTime)
    }

    /// Copies each Component member's data type onto its Quantity, Count or Time, as osh-core
    /// does when it assigns an encoding (so a `float` member makes a float32 Quantity).
    static func applying(_ e: BinaryEncoding, to record: DataComponent) -> DataComponent {
        var types: [String: ScalarDataType] = [:]
        for case .component(let ref, let dt) in e.members { types[ref] = dt }
        func visit(_ c: inout DataComponent, _ path: String) {
            switch c.kind {
            case .record(var fs):
                for i in fs.indices { visit(&fs[i], path + "/" + (fs[i].name ?? "")) }
                c.kind = .record(fs)
            case .vector(var v):
                for i in v.coordinates.indices { visit(&v.coordinates[i], path + "/" + (v.coordinates[i].name ?? "")) }
                c.kind = .vector(v)
            case .quantity(var q): if let t = types[path] { q.dataType = t; c.kind = .quantity(q) }
            case .count(var n): if let t = types[path] { n.dataType = t; c.kind = .count(n) }
            case .time(var t): if let d = types[path] { t.dataType = d; c.kind = .time(t) }
            default: break
            }
        }
        var r = record
        switch r.kind {
        case .record, .vector: visit(&r, "")
        default: visit(&r, "/")
        }
        return r
    }

    private static func parse(_ bytes: [UInt8]) throws(SWEDecodingError) -> JSONValue {
        do throws(JSONParseError) { return try JSONValue.parse(bytes) } catch { throw .json(error) }
    }
}

extension SchemaDecoder {
    /// An object's members with typed, path-naming accessors. Absent → nil; present with the wrong type → error.
    fileprivate struct Members {
        let m: [(String, JSONValue)]
        let path: String

        init(_ v: JSONValue, _ path: String, _ what: String) throws(SWEDecodingError) {
            guard case .object(let m) = v else {
                throw SWEDecodingError.schema(path: path, message: "expected \(what) object, found \(v.typeName)")
            }
            self.m = m
            self.path = path
        }

        subscript(key: String) -> JSONValue? {
            for (k, v) in m where k == key { return v }
            return nil
        }

        func error(_ key: String?, _ message: String) -> SWEDecodingError {
            .schema(path: key.map { "\(path)/\($0)" } ?? path, message: message)
        }

        func string(_ key: String) throws(SWEDecodingError) -> String? {
            guard let v = self[key] else { return nil }
            guard case .string(let s) = v else { throw error(key, "expected a string, found \(v.typeName)") }
            return s
        }

        func bool(_ key: String) throws(SWEDecodingError) -> Bool? {
            guard let v = self[key] else { return nil }
            guard case .bool(let b) = v else { throw error(key, "expected a boolean, found \(v.typeName)") }
            return b
        }

        func int(_ key: String) throws(SWEDecodingError) -> Int? {
            guard let v = self[key] else { return nil }
            guard let i = v.int else {
                throw error(key, "expected an integer, found \(v.typeName == "number" ? "\(v.double!)" : v.typeName)")
            }
            return i
        }

        func number(_ key: String) throws(SWEDecodingError) -> Double? {
            guard let v = self[key] else { return nil }
            return try SchemaDecoder.number(v, "\(path)/\(key)")
        }

        func array(_ key: String) throws(SWEDecodingError) -> [JSONValue]? {
            guard let v = self[key] else { return nil }
            guard case .array(let a) = v else { throw error(key, "expected an array, found \(v.typeName)") }
            return a
        }
    }
}
