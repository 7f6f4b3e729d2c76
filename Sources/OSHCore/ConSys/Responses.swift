// Reading what the node answers to a write: the new resource's id from a
// `Location` header, and the node's JSON error body. Both are tolerant — a
// proxy, an admin page or a truncated body must never crash the agent.

public enum LocationError: Error, Equatable, CustomStringConvertible {
    /// No Location header (or an empty one).
    case missing
    /// A Location without an id segment (e.g. `/systems/` or `http://host/`).
    case noID(String)

    public var description: String {
        switch self {
        case .missing: return "the node's create response has no Location header"
        case .noID(let l): return "no resource id in Location '\(l)'"
        }
    }
}

public enum CSResponse {
    /// The id in a `Location` header: its last path segment, as osh-core's own client takes it.
    /// Accepts the node's form relative to the API root (`/systems/0e2b7shpqb3g`), an absolute URL
    /// (`http://host:8181/sensorhub/api/systems/0e2b7shpqb3g`), a trailing `/`, a query or fragment
    /// (stripped). When `collection` is given, a Location that ends in the collection itself has no id.
    public static func resourceID(fromLocation location: String?, collection: String? = nil) -> String? {
        try? requireResourceID(fromLocation: location, collection: collection)
    }

    public static func requireResourceID(fromLocation location: String?, collection: String? = nil) throws -> String {
        guard let raw = location.map(SystemUID.trim), !raw.isEmpty else { throw LocationError.missing }
        var s = Substring(raw)
        if let cut = s.firstIndex(where: { $0 == "?" || $0 == "#" }) { s = s[..<cut] }
        if let afterScheme = schemeEnd(s) {
            // Drop scheme and authority; what is left is the path (possibly empty).
            let afterAuthority = s[afterScheme...]
            guard let slash = afterAuthority.firstIndex(of: "/") else { throw LocationError.noID(raw) }
            s = afterAuthority[slash...]
        }
        while s.hasSuffix("/") { s = s.dropLast() }
        let segment: Substring
        if let slash = s.lastIndex(of: "/") { segment = s[s.index(after: slash)...] } else { segment = s }
        let id = CSURL.percentDecode(String(segment))
        guard !id.isEmpty, id != ".", id != "..", id != collection else { throw LocationError.noID(raw) }
        return id
    }

    /// The index just past `scheme://` when `s` starts with a URL scheme.
    static func schemeEnd(_ s: Substring) -> Substring.Index? {
        var idx = s.startIndex
        while idx < s.endIndex, let a = s[idx].asciiValue,
            (a >= 97 && a <= 122) || (a >= 65 && a <= 90) || (a >= 48 && a <= 57) || a == 43 || a == 45 || a == 46
        {
            idx = s.index(after: idx)
        }
        guard idx > s.startIndex, s[idx...].hasPrefix("://") else { return nil }
        return s.index(idx, offsetBy: 3)
    }
}

/// The node's error body `{"status":N,"message":"…"}` (osh-core ServiceErrors / RestApiServlet), or a
/// summary of whatever else came back (an HTML page from Jetty or a proxy, plain text, garbage).
public struct NodeError: Sendable, Equatable, CustomStringConvertible {
    public static let summaryLimit = 200

    public var status: Int?
    public var message: String?
    /// One line for logs, at most ~200 characters: the message when there is one, else the body's text
    /// (tags stripped, whitespace collapsed), else "(empty body)".
    public var summary: String

    public init(status: Int?, message: String?, summary: String) {
        self.status = status
        self.message = message
        self.summary = summary
    }

    public var description: String {
        if let s = status { return String(s) + " " + summary }
        return summary
    }

    public static func parse(_ body: String) -> NodeError { parse(Array(body.utf8)) }

    public static func parse(_ body: [UInt8]) -> NodeError {
        var scan = ErrorBodyScanner(bytes: body)
        let found = scan.scan()
        if let m = found.message {
            let line = oneLine(m)
            if !line.isEmpty { return NodeError(status: found.status, message: m, summary: truncate(line)) }
        }
        return NodeError(status: found.status, message: found.message, summary: textSummary(body))
    }

    /// Text of a non-JSON body for a log line: tags and entities dropped, whitespace collapsed, truncated.
    static func textSummary(_ body: [UInt8]) -> String {
        var text = [UInt8]()
        text.reserveCapacity(Swift.min(body.count, 4096))
        var inTag = false
        var inScriptOrStyle = false
        var i = 0
        let looksLikeMarkup = body.first(where: { !isSpace($0) }) == UInt8(ascii: "<")
        while i < body.count, text.count < 4 * summaryLimit {
            let b = body[i]
            if looksLikeMarkup {
                if inTag {
                    if b == UInt8(ascii: ">") { inTag = false; text.append(0x20) }
                } else if b == UInt8(ascii: "<") {
                    inTag = true
                    let name = tagName(body, from: i + 1)
                    if name == "script" || name == "style" { inScriptOrStyle = true }
                    if name == "/script" || name == "/style" { inScriptOrStyle = false }
                } else if !inScriptOrStyle {
                    text.append(b)
                }
            } else {
                text.append(b)
            }
            i += 1
        }
        let line = oneLine(String(decoding: text, as: UTF8.self))
        return line.isEmpty ? "(empty body)" : truncate(line)
    }

    private static func tagName(_ body: [UInt8], from start: Int) -> String {
        var end = start
        while end < body.count, end - start < 8, body[end] != UInt8(ascii: ">"), !isSpace(body[end]) { end += 1 }
        return String(decoding: body[start..<end], as: UTF8.self).lowercased()
    }

    @inline(__always) static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || (b >= 0x09 && b <= 0x0D) }

    /// Whitespace and control characters collapsed to single spaces, ends trimmed.
    static func oneLine(_ s: String) -> String {
        var out = ""
        var pendingSpace = false
        for ch in s.unicodeScalars {
            if ch.value < 0x20 || ch == " " || ch.value == 0x7F || ch.value == 0xA0 {
                pendingSpace = !out.isEmpty
            } else {
                if pendingSpace { out.unicodeScalars.append(" "); pendingSpace = false }
                out.unicodeScalars.append(ch)
            }
        }
        return out
    }

    static func truncate(_ s: String) -> String {
        guard s.count > summaryLimit else { return s }
        return String(s.prefix(summaryLimit - 1)) + "…"
    }
}

/// A minimal, tolerant scan of a JSON object's top level for `status` (number) and `message` (string).
/// Stops at the first syntax error and keeps what it found so far.
struct ErrorBodyScanner {
    let bytes: [UInt8]
    var i = 0

    init(bytes: [UInt8]) {
        self.bytes = bytes
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { i = 3 }  // UTF-8 BOM
    }

    mutating func scan() -> (status: Int?, message: String?) {
        var status: Int?
        var message: String?
        skipSpace()
        guard consume(UInt8(ascii: "{")) else { return (nil, nil) }
        while true {
            skipSpace()
            if consume(UInt8(ascii: "}")) { break }
            guard let key = parseString() else { break }
            skipSpace()
            guard consume(UInt8(ascii: ":")) else { break }
            skipSpace()
            if key == "status", status == nil, let n = parseNumber() {
                status = n
            } else if key == "message", message == nil, peek == UInt8(ascii: "\"") {
                guard let m = parseString() else { break }
                message = m
            } else {
                guard skipValue(depth: 0) else { break }
            }
            skipSpace()
            if consume(UInt8(ascii: ",")) { continue }
            break
        }
        return (status, message)
    }

    var peek: UInt8? { i < bytes.count ? bytes[i] : nil }

    mutating func consume(_ b: UInt8) -> Bool {
        guard peek == b else { return false }
        i += 1
        return true
    }

    mutating func skipSpace() {
        while let b = peek, b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D { i += 1 }
    }

    /// An integer status; a number with a fraction or exponent is read and truncated.
    mutating func parseNumber() -> Int? {
        let start = i
        var value = 0
        var negative = false
        var digits = 0
        if consume(UInt8(ascii: "-")) { negative = true }
        while let b = peek, b >= 48, b <= 57 {
            if digits < 9 { value = value * 10 + Int(b - 48) }
            digits += 1
            i += 1
        }
        guard digits > 0 else { i = start; return nil }
        while let b = peek,
            b == UInt8(ascii: ".") || b == UInt8(ascii: "e") || b == UInt8(ascii: "E")
                || b == UInt8(ascii: "+") || b == UInt8(ascii: "-") || (b >= 48 && b <= 57)
        { i += 1 }
        return negative ? -value : value
    }

    /// A JSON string with its escapes decoded (surrogate pairs joined; lone surrogates become U+FFFD).
    mutating func parseString() -> String? {
        guard consume(UInt8(ascii: "\"")) else { return nil }
        var out = [UInt8]()
        while let b = peek {
            i += 1
            switch b {
            case UInt8(ascii: "\""):
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard let e = peek else { return nil }
                i += 1
                switch e {
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "u"):
                    guard var code = hex4() else { return nil }
                    if code >= 0xD800, code < 0xDC00, bytes.count >= i + 6,
                        bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u")
                    {
                        let save = i
                        i += 2
                        if let low = hex4(), low >= 0xDC00, low < 0xE000 {
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        } else {
                            i = save
                        }
                    }
                    let scalar = Unicode.Scalar(code) ?? "\u{FFFD}"
                    out.append(contentsOf: Array(String(Character(scalar)).utf8))
                default: out.append(e)  // \" \\ \/ and anything lenient
                }
            default:
                out.append(b)
            }
        }
        return nil
    }

    mutating func hex4() -> UInt32? {
        guard i + 4 <= bytes.count else { return nil }
        var v: UInt32 = 0
        for k in 0..<4 {
            guard let d = Hex.value(bytes[i + k]) else { return nil }
            v = v << 4 | UInt32(d)
        }
        i += 4
        return v
    }

    /// Skips one value of any kind; false on a syntax error or nesting deeper than 64.
    mutating func skipValue(depth: Int) -> Bool {
        guard depth < 64, let b = peek else { return false }
        switch b {
        case UInt8(ascii: "\""):
            return parseString() != nil
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            let close = b == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
            i += 1
            skipSpace()
            if consume(close) { return true }
            while true {
                skipSpace()
                if close == UInt8(ascii: "}") {
                    guard parseString() != nil else { return false }
                    skipSpace()
                    guard consume(UInt8(ascii: ":")) else { return false }
                    skipSpace()
                }
                guard skipValue(depth: depth + 1) else { return false }
                skipSpace()
                if consume(UInt8(ascii: ",")) { continue }
                return consume(close)
            }
        default:
            // number, true, false, null: a run of literal characters
            let start = i
            while let c = peek, c != UInt8(ascii: ","), c != UInt8(ascii: "}"), c != UInt8(ascii: "]"),
                c != 0x20, c != 0x09, c != 0x0A, c != 0x0D
            { i += 1 }
            return i > start
        }
    }
}
