// Command parameters read against a control stream's parameter schema: the JSON the node pushes
// (`"parameters": {…}`) becomes a tree of values in schema order. The node itself checks the shape
// (a DataChoice takes exactly one item, a record lists every field in schema order — osh-android-
// schemas.md §4.4); constraints (allowed intervals and tokens) are checked only by the receiver,
// which answers REJECTED with the reason.

/// One decoded parameter value.
public indirect enum CommandValue: Sendable, Equatable {
    case choice(item: String, value: CommandValue)
    case record([CommandField])
    case number(Double)
    case bool(Bool)
    case text(String)

    public var number: Double? { if case .number(let d) = self { return d } else { return nil } }
    public var bool: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    public var text: String? { if case .text(let s) = self { return s } else { return nil } }

    /// The field of a record with this name.
    public subscript(field: String) -> CommandValue? {
        if case .record(let fs) = self { return fs.first { $0.name == field }?.value }
        return nil
    }
}

public struct CommandField: Sendable, Equatable {
    public var name: String
    public var value: CommandValue
    public init(_ name: String, _ value: CommandValue) {
        self.name = name
        self.value = value
    }
}

/// Why parameters do not fit the schema. `message` is what goes into a REJECTED status.
public struct CommandDecodeError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The DataChoice item is not one of the schema's, or not exactly one was given.
        case badChoice
        /// A record lacks a field (the node's "Expected a name but was END_OBJECT").
        case missingField
        /// Wrong JSON type, unknown or out-of-order field.
        case badValue
        /// Outside the schema's allowed interval or token list.
        case outOfRange
    }
    public var kind: Kind
    public var message: String
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
    public var description: String { message }
}

public enum CommandDecoder {
    /// Reads `parameters` against `schema`. With `checkConstraints`, AllowedValues/AllowedTokens are
    /// enforced too (the receiver's job; the node only checks the shape).
    public static func decode(
        _ parameters: JSONValue, schema: DataComponent,
        checkConstraints: Bool = true
    ) throws(CommandDecodeError) -> CommandValue {
        try value(parameters, schema, path: schema.name ?? "parameters", checkConstraints)
    }

    private static func value(
        _ v: JSONValue, _ c: DataComponent, path: String,
        _ check: Bool
    ) throws(CommandDecodeError) -> CommandValue {
        switch c.kind {
        case .choice(let choice):
            guard case .object(let m) = v, m.count == 1 else {
                throw CommandDecodeError(.badChoice, "\(path): exactly one of " + names(choice.items) + " expected")
            }
            let (key, x) = m[0]
            guard let item = choice.items.first(where: { $0.name == key }) else {
                throw CommandDecodeError(.badChoice, "\(path): unknown command '\(key)' (one of " + names(choice.items) + ")")
            }
            return .choice(item: key, value: try value(x, item, path: key, check))
        case .record(let fields):
            guard case .object(let m) = v else { throw CommandDecodeError(.badValue, "\(path): an object expected") }
            var out: [CommandField] = []
            out.reserveCapacity(fields.count)
            for (i, f) in fields.enumerated() {
                let name = f.name ?? ""
                guard i < m.count else { throw CommandDecodeError(.missingField, "\(path): field '\(name)' is missing") }
                guard m[i].0 == name else {
                    if m.contains(where: { $0.0 == name }) {
                        throw CommandDecodeError(.badValue, "\(path): field '\(name)' out of schema order")
                    }
                    throw CommandDecodeError(.missingField, "\(path): field '\(name)' is missing")
                }
                out.append(CommandField(name, try value(m[i].1, f, path: path + "." + name, check)))
            }
            if m.count > fields.count {
                throw CommandDecodeError(.badValue, "\(path): unexpected field '\(m[fields.count].0)'")
            }
            return .record(out)
        case .quantity(let q):
            guard let d = v.double, d.isFinite else { throw CommandDecodeError(.badValue, "\(path): a number expected") }
            if check, let a = q.constraint, !allowed(d, a) {
                throw CommandDecodeError(.outOfRange, "\(path) \(fmt(d))\(unit(q.uom)) is outside " + describe(a) + unit(q.uom))
            }
            return .number(d)
        case .count(let n):
            guard let i = v.int else { throw CommandDecodeError(.badValue, "\(path): an integer expected") }
            if check, let a = n.constraint, !allowed(Double(i), a) {
                throw CommandDecodeError(.outOfRange, "\(path) \(i) is outside " + describe(a))
            }
            return .number(Double(i))
        case .boolean:
            guard let b = v.bool else { throw CommandDecodeError(.badValue, "\(path): true or false expected") }
            return .bool(b)
        case .text(let t):
            guard let s = v.string else { throw CommandDecodeError(.badValue, "\(path): a string expected") }
            if check, let a = t.constraint, !a.values.isEmpty, !a.values.contains(s) {
                throw CommandDecodeError(.outOfRange, "\(path): '\(s)' is not one of " + a.values.joined(separator: ", "))
            }
            return .text(s)
        case .category(let t):
            guard let s = v.string else { throw CommandDecodeError(.badValue, "\(path): a string expected") }
            if check, let a = t.constraint, !a.values.isEmpty, !a.values.contains(s) {
                throw CommandDecodeError(.outOfRange, "\(path): '\(s)' is not one of " + a.values.joined(separator: ", "))
            }
            return .text(s)
        case .time(let t):
            // An ISO-unit Time is a string in JSON (what OSH sends and accepts); other units are numbers.
            guard t.isISO else {
                guard let d = v.double, d.isFinite else { throw CommandDecodeError(.badValue, "\(path): a number expected") }
                return .number(d)
            }
            guard let s = v.string, let d = ISOTime.parse(s) else {
                throw CommandDecodeError(.badValue, "\(path): an ISO 8601 time with a zone expected, as \"2026-05-01T12:00:00Z\"")
            }
            return .number(d)
        case .vector(let vec):
            return try value(v, DataComponent(.record(vec.coordinates), name: c.name), path: path, check)
        case .array:
            throw CommandDecodeError(.badValue, "\(path): arrays are not supported in commands")
        }
    }

    private static func names(_ items: [DataComponent]) -> String {
        items.map { $0.name ?? "?" }.joined(separator: ", ")
    }

    private static func allowed(_ d: Double, _ a: AllowedValues) -> Bool {
        if a.values.isEmpty && a.intervals.isEmpty { return true }
        return a.values.contains(d) || a.intervals.contains { d >= $0.min && d <= $0.max }
    }

    private static func describe(_ a: AllowedValues) -> String {
        var parts = a.intervals.map { fmt($0.min) + "…" + fmt($0.max) }
        parts += a.values.map(fmt)
        return parts.joined(separator: " or ")
    }

    private static func unit(_ u: UnitOfMeasure) -> String {
        if case .code(let c) = u, !c.isEmpty { return " " + c }
        return ""
    }

    static func fmt(_ d: Double) -> String {
        if d == d.rounded(), abs(d) < 1e15 { return String(Int(d)) }
        return String(d)
    }
}
