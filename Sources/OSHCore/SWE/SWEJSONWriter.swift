// Writes SWE Common components as osh-core's SWEJsonBindings does, member for
// member: `type`, `name`, then definition, id, identifier, label, description,
// updatable, optional, then the kind's own members (as osh-core's SWE JSON bindings write them).

/// A BinaryEncoding member: a scalar `Component` or a `Block` (compressed payload such as H.264).
public enum BinaryMember: Sendable, Equatable {
    case component(ref: String, dataType: ScalarDataType)
    case block(ref: String, compression: String?, byteLength: Int? = nil)

    public var ref: String {
        switch self {
        case .component(let r, _), .block(let r, _, _): return r
        }
    }
}

public struct BinaryEncoding: Sendable, Equatable {
    public var bigEndian: Bool
    public var base64: Bool
    public var members: [BinaryMember]
    public init(bigEndian: Bool = true, base64: Bool = false, members: [BinaryMember]) {
        self.bigEndian = bigEndian
        self.base64 = base64
        self.members = members
    }

    /// The encoding the node builds when a datastream has none of its own: raw, big-endian,
    /// one Component per scalar leaf with its own data type, one Block per array (SWEHelper.getDefaultBinaryEncoding).
    public static func `default`(for record: DataComponent) -> BinaryEncoding {
        var members: [BinaryMember] = []
        for leaf in SchemaWalker.leaves(of: record) {
            switch leaf.kind {
            case .time: members.append(.component(ref: leaf.path, dataType: .double))
            case .quantity(let t), .count(let t): members.append(.component(ref: leaf.path, dataType: t))
            case .boolean: members.append(.component(ref: leaf.path, dataType: .boolean))
            case .text, .category: members.append(.component(ref: leaf.path, dataType: .utf8String))
            case .array, .choice: members.append(.block(ref: leaf.path, compression: nil))
            }
        }
        return BinaryEncoding(members: members)
    }
}

public enum SWEJSON {
    /// Writes `c` as one JSON object. `nameOverride` replaces the component's own name (as osh-core
    /// passes the property name of a field); `omitName` drops it (iOS-style roots).
    public static func write(_ c: DataComponent, to w: inout JSONWriter, omitName: Bool = false) {
        w.beginObject()
        w.key("type"); w.string(c.typeName)
        if !omitName, let n = c.name { w.key("name"); w.string(n) }
        if let v = c.definition { w.key("definition"); w.string(v) }
        if let v = c.id { w.key("id"); w.string(v) }
        if let v = c.identifier { w.key("identifier"); w.string(v) }
        if let v = c.label { w.key("label"); w.string(v) }
        if let v = c.description { w.key("description"); w.string(v) }
        if let v = c.updatable { w.key("updatable"); w.bool(v) }
        if let v = c.optional { w.key("optional"); w.bool(v) }

        switch c.kind {
        case .record(let fields):
            if !fields.isEmpty {
                w.key("fields"); w.beginArray()
                for f in fields { write(f, to: &w) }
                w.endArray()
            }
        case .vector(let v):
            if let r = v.referenceFrame { w.key("referenceFrame"); w.string(r) }
            if let l = v.localFrame { w.key("localFrame"); w.string(l) }
            if !v.coordinates.isEmpty {
                w.key("coordinates"); w.beginArray()
                for f in v.coordinates { write(f, to: &w) }
                w.endArray()
            }
        case .quantity(let q):
            simple(q.simple, &w)
            w.key("uom"); uom(q.uom, &w)
            if let con = q.constraint { w.key("constraint"); allowedValues(con, integers: false, &w) }
            if let v = q.value { w.key("value"); w.schemaNumber(v) }
        case .count(let n):
            simple(n.simple, &w)
            if let con = n.constraint { w.key("constraint"); allowedValues(con, integers: true, &w) }
            if let v = n.value { w.key("value"); w.int(v) }
        case .time(let t):
            simple(t.simple, &w)
            if let r = t.referenceTime { w.key("referenceTime"); w.string(r) }
            if let l = t.localFrame { w.key("localFrame"); w.string(l) }
            w.key("uom"); uom(t.uom, &w)
            if let con = t.constraint { w.key("constraint"); allowedValues(con, integers: false, &w) }
        case .text(let t):
            simple(t.simple, &w)
            if let con = t.constraint { w.key("constraint"); allowedTokens(con, &w) }
            if let v = t.value { w.key("value"); w.string(v) }
        case .category(let t):
            simple(t.simple, &w)
            if let cs = t.codeSpace { w.key("codeSpace"); w.string(cs) }
            if let con = t.constraint { w.key("constraint"); allowedTokens(con, &w) }
            if let v = t.value { w.key("value"); w.string(v) }
        case .boolean(let b):
            simple(b.simple, &w)
            if let v = b.value { w.key("value"); w.bool(v) }
        case .array(let a):
            w.key("elementCount")
            switch a.elementCount {
            case .inline(let count): write(count, to: &w)
            case .href(let h):
                w.beginObject(); w.key("href"); w.string(h); w.endObject()
            }
            w.key("elementType"); write(a.elementType, to: &w)
        case .choice(let ch):
            if !ch.items.isEmpty {
                w.key("items"); w.beginArray()
                for f in ch.items { write(f, to: &w) }
                w.endArray()
            }
        }
        w.endObject()
    }

    /// Writes a BinaryEncoding object (osh-core writeBinaryEncodingProperties order).
    public static func write(_ e: BinaryEncoding, to w: inout JSONWriter) {
        w.beginObject()
        w.key("type"); w.string("BinaryEncoding")
        w.key("byteOrder"); w.string(e.bigEndian ? "bigEndian" : "littleEndian")
        w.key("byteEncoding"); w.string(e.base64 ? "base64" : "raw")
        if !e.members.isEmpty {
            w.key("members"); w.beginArray()
            for m in e.members {
                w.beginObject()
                switch m {
                case .component(let ref, let dt):
                    w.key("type"); w.string("Component")
                    w.key("ref"); w.string(ref)
                    w.key("dataType"); w.string(dt.uri)
                case .block(let ref, let compression, let byteLength):
                    w.key("type"); w.string("Block")
                    w.key("ref"); w.string(ref)
                    if let n = byteLength { w.key("byteLength"); w.int(n) }
                    if let c = compression { w.key("compression"); w.string(c) }
                }
                w.endObject()
            }
            w.endArray()
        }
        w.endObject()
    }

    /// A component as a compact JSON string (CLI, tests).
    public static func string(_ c: DataComponent) -> String {
        let b = ByteBuffer()
        var w = JSONWriter(b)
        write(c, to: &w)
        return b.string
    }

    private static func simple(_ s: SimpleProperties, _ w: inout JSONWriter) {
        if let r = s.referenceFrame { w.key("referenceFrame"); w.string(r) }
        if let a = s.axisID { w.key("axisID"); w.string(a) }
    }

    private static func uom(_ u: UnitOfMeasure, _ w: inout JSONWriter) {
        w.beginObject()
        switch u {
        case .code(let c): w.key("code"); w.string(c)
        case .href(let h): w.key("href"); w.string(h)
        }
        w.endObject()
    }

    private static func allowedValues(_ a: AllowedValues, integers: Bool, _ w: inout JSONWriter) {
        w.beginObject()
        if !a.values.isEmpty {
            w.key("values"); w.beginArray()
            for v in a.values { number(v, integers: integers, &w) }
            w.endArray()
        }
        if !a.intervals.isEmpty {
            w.key("intervals"); w.beginArray()
            for i in a.intervals {
                w.beginArray(); number(i.min, integers: integers, &w); number(i.max, integers: integers, &w); w.endArray()
            }
            w.endArray()
        }
        w.endObject()
    }

    // osh-core writes Count constraints as integers and Quantity constraints as doubles (`-180.0`).
    private static func number(_ v: Double, integers: Bool, _ w: inout JSONWriter) {
        if integers, v.isFinite, let i = Int(exactly: v.rounded()) { w.int(i) } else { w.schemaNumber(v) }
    }

    private static func allowedTokens(_ a: AllowedTokens, _ w: inout JSONWriter) {
        w.beginObject()
        if !a.values.isEmpty {
            w.key("values"); w.beginArray()
            for v in a.values { w.string(v) }
            w.endArray()
        }
        if let p = a.pattern { w.key("pattern"); w.string(p) }
        w.endObject()
    }
}
