// One error type for the whole read side, so a caller (`osh-edge observations`) can print
// exactly where a node's answer stopped making sense: a byte offset in the JSON text, a
// JSON path in a schema or record, or a byte offset and encoding member in a binary body.

public enum SWEDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The text is not JSON.
    case json(JSONParseError)
    /// A schema or encoding problem at a JSON path such as `/recordSchema/fields/1`.
    case schema(path: String, message: String)
    /// A JSON record or observation that does not fit its schema, at a JSON path such as `/items/3/result/location`.
    case record(path: String, message: String)
    /// A binary body that does not fit its encoding: the byte offset where the read began and the member's `ref`.
    case binary(offset: Int, member: String, message: String)

    public var description: String {
        switch self {
        case .json(let e): return e.description
        case .schema(let p, let m), .record(let p, let m): return "\(p.isEmpty ? "/" : p): \(m)"
        case .binary(let o, let r, let m): return "byte \(o) (\(r.isEmpty ? "record" : r)): \(m)"
        }
    }
}
