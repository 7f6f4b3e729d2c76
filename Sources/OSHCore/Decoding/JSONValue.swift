// A strict RFC 8259 JSON parser into an ordered tree. Objects keep their members in
// document order with duplicates, because SWE JSON is order-sensitive (`type` first,
// record fields in schema order) and the decoders must see what the node sent.
// Hostile input cannot crash it: every read is bounds-checked and nesting is capped.

/// A parsed JSON value.
public enum JSONValue: Sendable {
    /// Members in document order; duplicate keys are kept.
    case object([(String, JSONValue)])
    case array([JSONValue])
    case string(String)
    /// The value and the literal as written (`-0.0`, `1e-05`), for callers that care about the text.
    case number(Double, raw: String)
    case bool(Bool)
    case null
}

/// Where and why parsing stopped.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset into the input where the problem was found.
    public var offset: Int
    /// What the parser expected there, e.g. `',' or '}'`.
    public var expected: String
    public init(offset: Int, expected: String) {
        self.offset = offset
        self.expected = expected
    }
    public var description: String { "invalid JSON at byte \(offset): expected \(expected)" }
}

extension JSONValue: Equatable {
    /// Structural equality; numbers compare by value (so `1` == `1.0`), object members in order.
    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case let (.object(x), .object(y)):
            guard x.count == y.count else { return false }
            for i in x.indices where x[i].0 != y[i].0 || x[i].1 != y[i].1 { return false }
            return true
        case let (.array(x), .array(y)): return x == y
        case let (.string(x), .string(y)): return x == y
        case let (.number(x, _), .number(y, _)): return x == y
        case let (.bool(x), .bool(y)): return x == y
        case (.null, .null): return true
        default: return false
        }
    }
}

// MARK: - Accessors

extension JSONValue {
    /// The first member named `key` of an object (nil for non-objects).
    public subscript(key: String) -> JSONValue? {
        guard case .object(let m) = self else { return nil }
        for (k, v) in m where k == key { return v }
        return nil
    }

    /// Element `index` of an array (nil when out of range or not an array).
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let a) = self, a.indices.contains(index) else { return nil }
        return a[index]
    }

    public var string: String? { if case .string(let s) = self { return s } else { return nil } }
    public var double: Double? { if case .number(let d, _) = self { return d } else { return nil } }
    public var bool: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    public var array: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
    public var object: [(String, JSONValue)]? { if case .object(let m) = self { return m } else { return nil } }
    public var objectKeys: [String]? { object?.map { $0.0 } }
    public var isNull: Bool { if case .null = self { return true } else { return false } }

    /// An integer number exactly: integer literals are read from the text (no Double rounding
    /// above 2^53), other literals only when their value is integral and in range.
    public var int: Int? {
        guard case .number(let d, let raw) = self else { return nil }
        if let i = Int(raw) { return i }
        return d.isFinite ? Int(exactly: d) : nil
    }

    /// `object`, `array`, `string`, `number`, `boolean` or `null` (error messages).
    public var typeName: String {
        switch self {
        case .object: return "object"
        case .array: return "array"
        case .string: return "string"
        case .number: return "number"
        case .bool: return "boolean"
        case .null: return "null"
        }
    }
}

// MARK: - Parsing

extension JSONValue {
    /// The default nesting limit: deep enough for any SWE schema, shallow enough for any stack.
    public static let defaultMaxDepth = 256

    public static func parse(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> JSONValue {
        var result: Result<JSONValue, JSONParseError> = .success(.null)
        bytes.withUnsafeBytes { result = run($0, maxDepth) }
        return try result.get()
    }

    public static func parse(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> JSONValue {
        try run(bytes, maxDepth).get()
    }

    public static func parse(_ text: String, maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8), maxDepth: maxDepth)
    }

    private static func run(_ bytes: UnsafeRawBufferPointer, _ maxDepth: Int) -> Result<JSONValue, JSONParseError> {
        var p = JSONParser(bytes: bytes, maxDepth: maxDepth)
        do throws(JSONParseError) { return .success(try p.document()) } catch { return .failure(error) }
    }
}

private struct JSONParser {
    let b: UnsafeRawBufferPointer
    let maxDepth: Int
    var i = 0
    var depth = 0

    init(bytes: UnsafeRawBufferPointer, maxDepth: Int) {
        self.b = bytes
        self.maxDepth = maxDepth
    }

    private static let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")

    func fail(_ expected: String, at offset: Int? = nil) -> JSONParseError {
        JSONParseError(offset: offset ?? i, expected: expected)
    }

    mutating func document() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        let v = try value()
        skipWhitespace()
        guard i == b.count else { throw fail("end of input") }
        return v
    }

    mutating func skipWhitespace() {
        while i < b.count {
            switch b[i] {
            case 0x20, 0x09, 0x0A, 0x0D: i += 1
            default: return
            }
        }
    }

    mutating func value() throws(JSONParseError) -> JSONValue {
        guard i < b.count else { throw fail("a value") }
        switch b[i] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case Self.quote: return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw fail("a value")
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONParseError) {
        let n = word.utf8CodeUnitCount
        let w = UnsafeBufferPointer(start: word.utf8Start, count: n)
        for k in 0..<n where i + k >= b.count || b[i + k] != w[k] { throw fail("'\(word)'") }
        i += n
    }

    /// Counts nesting; the limit keeps recursion (one frame per level) far from the stack's end.
    mutating func enter() throws(JSONParseError) {
        depth += 1
        guard depth <= maxDepth else { throw fail("nesting depth at most \(maxDepth)") }
        i += 1
    }

    mutating func object() throws(JSONParseError) -> JSONValue {
        try enter()
        var members: [(String, JSONValue)] = []
        skipWhitespace()
        if i < b.count, b[i] == UInt8(ascii: "}") { i += 1; depth -= 1; return .object(members) }
        while true {
            skipWhitespace()
            guard i < b.count, b[i] == Self.quote else { throw fail("a string key") }
            let key = try string()
            skipWhitespace()
            guard i < b.count, b[i] == UInt8(ascii: ":") else { throw fail("':'") }
            i += 1
            skipWhitespace()
            members.append((key, try value()))
            skipWhitespace()
            guard i < b.count else { throw fail("',' or '}'") }
            if b[i] == UInt8(ascii: ",") { i += 1; continue }
            if b[i] == UInt8(ascii: "}") { i += 1; break }
            throw fail("',' or '}'")
        }
        depth -= 1
        return .object(members)
    }

    mutating func array() throws(JSONParseError) -> JSONValue {
        try enter()
        var elements: [JSONValue] = []
        skipWhitespace()
        if i < b.count, b[i] == UInt8(ascii: "]") { i += 1; depth -= 1; return .array(elements) }
        while true {
            skipWhitespace()
            elements.append(try value())
            skipWhitespace()
            guard i < b.count else { throw fail("',' or ']'") }
            if b[i] == UInt8(ascii: ",") { i += 1; continue }
            if b[i] == UInt8(ascii: "]") { i += 1; break }
            throw fail("',' or ']'")
        }
        depth -= 1
        return .array(elements)
    }

    mutating func string() throws(JSONParseError) -> String {
        let open = i
        i += 1
        let start = i
        var ascii = true
        // Fast path: no escapes, so the string is a slice of the input.
        while i < b.count {
            let c = b[i]
            if c == Self.quote {
                let slice = UnsafeRawBufferPointer(rebasing: b[start..<i])
                i += 1
                if ascii { return String(decoding: slice, as: UTF8.self) }
                guard let s = String(validating: slice, as: UTF8.self) else { throw fail("valid UTF-8 in the string", at: open) }
                return s
            }
            if c == Self.backslash { break }
            if c < 0x20 { throw fail("an escaped control character") }
            if c >= 0x80 { ascii = false }
            i += 1
        }
        guard i < b.count else { throw fail("'\"' to close the string") }
        // Slow path: unescape into a byte buffer, validate once at the end.
        var out = Array(b[start..<i])
        while i < b.count {
            let c = b[i]
            if c == Self.quote {
                i += 1
                guard let s = String(validating: out, as: UTF8.self) else { throw fail("valid UTF-8 in the string", at: open) }
                return s
            }
            if c < 0x20 { throw fail("an escaped control character") }
            if c != Self.backslash { out.append(c); i += 1; continue }
            i += 1
            guard i < b.count else { break }
            let e = b[i]
            i += 1
            switch e {
            case Self.quote, Self.backslash, UInt8(ascii: "/"): out.append(e)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"): appendUTF8(try unicodeEscape(), to: &out)
            default: throw fail("a valid escape character", at: i - 1)
            }
        }
        throw fail("'\"' to close the string")
    }

    /// After `\u`: four hex digits, and for a high surrogate the `\uDC00`–`\uDFFF` that must follow.
    mutating func unicodeEscape() throws(JSONParseError) -> UInt32 {
        let first = try hex4()
        switch first {
        case 0xD800...0xDBFF:
            guard i + 1 < b.count, b[i] == Self.backslash, b[i + 1] == UInt8(ascii: "u") else {
                throw fail("'\\u' with a low surrogate after a high surrogate")
            }
            i += 2
            let low = try hex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw fail("a low surrogate \\uDC00-\\uDFFF", at: i - 4) }
            return 0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00)
        case 0xDC00...0xDFFF:
            throw fail("a high surrogate before a low surrogate", at: i - 4)
        default:
            return first
        }
    }

    mutating func hex4() throws(JSONParseError) -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard i < b.count else { throw fail("four hex digits") }
            let c = b[i]
            let d: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = c - 48
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = c - 87
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = c - 55
            default: throw fail("four hex digits")
            }
            v = v << 4 | UInt32(d)
            i += 1
        }
        return v
    }

    func appendUTF8(_ scalar: UInt32, to out: inout [UInt8]) {
        switch scalar {
        case 0..<0x80: out.append(UInt8(scalar))
        case 0x80..<0x800:
            out.append(0xC0 | UInt8(scalar >> 6)); out.append(0x80 | UInt8(scalar & 0x3F))
        case 0x800..<0x10000:
            out.append(0xE0 | UInt8(scalar >> 12)); out.append(0x80 | UInt8(scalar >> 6 & 0x3F))
            out.append(0x80 | UInt8(scalar & 0x3F))
        default:
            out.append(0xF0 | UInt8(scalar >> 18)); out.append(0x80 | UInt8(scalar >> 12 & 0x3F))
            out.append(0x80 | UInt8(scalar >> 6 & 0x3F)); out.append(0x80 | UInt8(scalar & 0x3F))
        }
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`; out-of-range magnitudes read as ±∞ / ±0.
    mutating func number() throws(JSONParseError) -> JSONValue {
        let start = i
        if b[i] == UInt8(ascii: "-") { i += 1 }
        guard digit() else { throw fail("a digit") }
        if b[i] == UInt8(ascii: "0") { i += 1 } else { while digit() { i += 1 } }
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            guard digit() else { throw fail("a digit after '.'") }
            while digit() { i += 1 }
        }
        if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
            i += 1
            if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
            guard digit() else { throw fail("a digit in the exponent") }
            while digit() { i += 1 }
        }
        let raw = String(decoding: UnsafeRawBufferPointer(rebasing: b[start..<i]), as: UTF8.self)
        guard let d = Double(raw) else { throw fail("a number", at: start) }
        return .number(d, raw: raw)
    }

    func digit() -> Bool { i < b.count && b[i] >= UInt8(ascii: "0") && b[i] <= UInt8(ascii: "9") }
}
