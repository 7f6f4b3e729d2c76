// The SchemaWalker contract: a record flattens into ordered leaves, depth first.
// DataRecord and Vector are walked into; every other component — Quantity, Count,
// Time, Text, Category, Boolean, and a DataArray or DataChoice as one opaque leaf —
// is a leaf. A sensor emits its values in exactly this order, so the encoders
// write a body without naming a field at run time.

/// What a leaf holds, as far as the encoders and decoders care.
public enum LeafKind: Sendable, Equatable {
    case time(iso: Bool)
    case quantity(ScalarDataType)
    case count(ScalarDataType)
    case boolean
    case text
    case category
    /// A DataArray: one opaque leaf (one Block in a binary encoding).
    case array
    /// A DataChoice: one opaque leaf (decoded by the reader tree, never emitted as doubles).
    case choice

    /// True for leaves a sensor can emit as a Double.
    public var isNumeric: Bool {
        switch self {
        case .time, .quantity, .count, .boolean: return true
        default: return false
        }
    }
}

public struct SchemaLeaf: Sendable, Equatable {
    /// `/time`, `/location/lat`, … (names joined by `/`, the root record's own name omitted).
    public var path: String
    /// Names from the root's children down to this leaf.
    public var names: [String]
    public var kind: LeafKind
    public var component: DataComponent
}

public enum SchemaWalker {
    /// Flattens `root` into its leaves in schema order. A root that is itself a leaf yields one leaf with path `/`.
    public static func leaves(of root: DataComponent) -> [SchemaLeaf] {
        var out: [SchemaLeaf] = []
        switch root.kind {
        case .record, .vector:
            for child in root.children { walk(child, names: [], into: &out) }
        default:
            out.append(SchemaLeaf(path: "/", names: [], kind: leafKind(root), component: root))
        }
        return out
    }

    private static func walk(_ c: DataComponent, names: [String], into out: inout [SchemaLeaf]) {
        let here = names + [c.name ?? ""]
        switch c.kind {
        case .record, .vector:
            for child in c.children { walk(child, names: here, into: &out) }
        default:
            out.append(SchemaLeaf(path: "/" + here.joined(separator: "/"), names: here, kind: leafKind(c), component: c))
        }
    }

    static func leafKind(_ c: DataComponent) -> LeafKind {
        switch c.kind {
        case .time(let t): return .time(iso: t.isISO)
        case .quantity(let q): return .quantity(q.dataType)
        case .count(let n): return .count(n.dataType)
        case .boolean: return .boolean
        case .text: return .text
        case .category: return .category
        case .array: return .array
        case .choice: return .choice
        case .record, .vector: return .array  // unreachable: records and vectors are walked into
        }
    }
}
