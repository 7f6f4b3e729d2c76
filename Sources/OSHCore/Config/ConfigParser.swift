// Size (~670 lines): the grammar below, its error messages with their suggestions and the value
// types it yields; a separate lexer would share every position and message with the parser.
//
// The reader for osh-edge's configuration files (`/etc/osh-edge/osh-edge.conf`, the secrets
// file): a small, strict, TOML-like, line-oriented format that people edit over SSH.
//
//   # a comment                      whole-line or after a value
//   [section]  [section.name]        bare words: letters, digits, _ and -
//   key = "text"                     escapes \" \\ \n \t \uXXXX
//   key = 42   key = -1_000          integers (no leading zeros, no hex)
//   key = 0.25 key = 1e-3            decimals (no nan or inf)
//   key = true                       true / false
//   key = [1, 2]  key = ["a", "b"]   one-line arrays of the above (not nested)
//
// Pure: it takes the file's bytes and its path (for messages) and never touches the disk.
// Every error names `FILE:LINE:` and what is allowed. Parsing recovers at the next line, so
// one pass reports every syntax error. It never traps on any input: lines are bounded, the
// file is bounded, nothing recurses.

/// One problem in a configuration file. `description` is `FILE:LINE: message`
/// (`FILE: message` when the problem has no single line, e.g. a missing section).
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    /// 1-based; nil when the problem belongs to the whole file.
    public var line: Int?
    public var message: String

    public init(path: String, line: Int?, message: String) {
        self.path = path
        self.line = line
        self.message = message
    }

    public var description: String {
        if let line { return "\(path):\(line): \(message)" }
        return "\(path): \(message)"
    }
}

/// Every problem found in one pass, in line order, so a user fixes the file in one go.
/// `description` puts each on its own line.
public struct ConfigErrors: Error, Sendable, Equatable, CustomStringConvertible {
    public var errors: [ConfigError]

    public init(_ errors: [ConfigError]) { self.errors = errors }

    public var description: String { errors.map(\.description).joined(separator: "\n") }
}

/// A parsed value.
public enum ConfigValue: Sendable, Equatable {
    case string(String)
    case integer(Int)
    case decimal(Double)
    case boolean(Bool)
    /// Elements are never arrays.
    case array([ConfigValue])

    /// "a string", "an integer", … for messages.
    public var kindName: String {
        switch self {
        case .string: return "a string"
        case .integer: return "a whole number"
        case .decimal: return "a decimal number"
        case .boolean: return "true/false"
        case .array: return "a list"
        }
    }

    /// The value as it would be written in the file (strings quoted and escaped).
    public var rendered: String {
        switch self {
        case .string(let s): return ConfigValue.quote(s)
        case .integer(let i): return String(i)
        case .decimal(let d): return String(d)
        case .boolean(let b): return b ? "true" : "false"
        case .array(let a): return "[" + a.map(\.rendered).joined(separator: ", ") + "]"
        }
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 || u.value == 0x7F {
                    let h = String(u.value, radix: 16, uppercase: true)
                    out += "\\u" + String(repeating: "0", count: 4 - h.count) + h
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }
}

/// `key = value` and the line it is on.
public struct ConfigEntry: Sendable, Equatable {
    public var key: String
    public var value: ConfigValue
    public var line: Int

    public init(key: String, value: ConfigValue, line: Int) {
        self.key = key
        self.value = value
        self.line = line
    }
}

/// One `[section]` (or the keys before any header: `name == []`, `line == 0`).
public struct ConfigSection: Sendable, Equatable {
    /// `["server", "main"]` for `[server.main]`; one or two parts.
    public var name: [String]
    /// The header's line.
    public var line: Int
    public var entries: [ConfigEntry] = []
    /// Keys whose line had a syntax error (already reported): present, but not to be checked again.
    public var damagedKeys: [String] = []
    /// The header had an error (already reported): its keys are not checked.
    public var isDamaged = false

    /// `[server.main]`, or "the top of the file".
    public var title: String { name.isEmpty ? "the top of the file" : "[" + name.joined(separator: ".") + "]" }

    public func entry(_ key: String) -> ConfigEntry? { entries.first { $0.key == key } }
}

/// A parsed file: the sections in file order, the first being the keys before any header.
public struct ConfigDocument: Sendable, Equatable {
    public var path: String
    public var sections: [ConfigSection]
}

public enum ConfigParser {
    /// Lines longer than this (in bytes, without the line break) are refused.
    public static let maxLineLength = 4096
    /// Files larger than this are refused (a configuration is a few kilobytes).
    public static let maxFileSize = 1 << 20
    /// After this many errors the reader stops and says so.
    public static let maxErrors = 100

    /// Parses a whole file; throws every syntax error found.
    public static func parse(bytes: [UInt8], path: String) throws(ConfigErrors) -> ConfigDocument {
        let (doc, errors) = parseRecovering(bytes: bytes, path: path)
        if !errors.isEmpty { throw ConfigErrors(errors) }
        return doc
    }

    /// Parses a whole file, recovering at each line: the document holds every line that parsed
    /// (damaged sections and keys are marked), the errors every line that did not.
    /// `redactValues` keeps value text out of messages (the secrets file).
    public static func parseRecovering(
        bytes: [UInt8], path: String,
        redactValues: Bool = false
    ) -> (ConfigDocument, [ConfigError]) {
        var p = LineParser(path: path, redact: redactValues)
        bytes.withUnsafeBufferPointer { p.run($0) }
        return (ConfigDocument(path: path, sections: p.sections), p.errors)
    }
}

// MARK: - The line parser

private struct LineError: Error {
    var message: String
}

private enum Byte {
    static let tab: UInt8 = 0x09, lf: UInt8 = 0x0A, cr: UInt8 = 0x0D, space: UInt8 = 0x20
    static let quote = UInt8(ascii: "\""), apostrophe = UInt8(ascii: "'"), backslash = UInt8(ascii: "\\")
    static let hash = UInt8(ascii: "#"), equals = UInt8(ascii: "="), dot = UInt8(ascii: ".")
    static let open = UInt8(ascii: "["), close = UInt8(ascii: "]"), comma = UInt8(ascii: ",")
    static let plus = UInt8(ascii: "+"), minus = UInt8(ascii: "-"), underscore = UInt8(ascii: "_")

    static func isBareKey(_ b: UInt8) -> Bool {
        (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == underscore || b == minus
    }
    static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
    static func isSpace(_ b: UInt8) -> Bool { b == space || b == tab }
    /// Characters that continue an unquoted word (so `om+json` or `2026-01-01T00:00Z` is read whole).
    static func isWord(_ b: UInt8) -> Bool {
        isBareKey(b) || b == plus || b == dot || b == UInt8(ascii: ":") || b == UInt8(ascii: "/") || b >= 0x80
    }
    static func hexValue(_ b: UInt8) -> UInt32? {
        switch b {
        case 0x30...0x39: return UInt32(b - 0x30)
        case 0x41...0x46: return UInt32(b - 0x41 + 10)
        case 0x61...0x66: return UInt32(b - 0x61 + 10)
        default: return nil
        }
    }
}

private struct LineParser {
    let path: String
    let redact: Bool
    var sections: [ConfigSection] = [ConfigSection(name: [], line: 0)]
    var errors: [ConfigError] = []
    var stopped = false

    init(path: String, redact: Bool) {
        self.path = path
        self.redact = redact
    }

    mutating func fail(_ line: Int?, _ message: String) {
        guard !stopped else { return }
        if errors.count >= ConfigParser.maxErrors {
            errors.append(
                ConfigError(
                    path: path, line: nil,
                    message: "too many errors (more than \(ConfigParser.maxErrors)); stopped reading"))
            stopped = true
            return
        }
        errors.append(ConfigError(path: path, line: line, message: message))
    }

    mutating func run(_ buf: UnsafeBufferPointer<UInt8>) {
        guard buf.count <= ConfigParser.maxFileSize else {
            fail(nil, "the file is \(buf.count) bytes long; the limit is \(ConfigParser.maxFileSize) bytes")
            return
        }
        var start = 0
        // A UTF-8 byte order mark (some editors write one) is skipped.
        if buf.count >= 3, buf[0] == 0xEF, buf[1] == 0xBB, buf[2] == 0xBF { start = 3 }
        var line = 1
        while start < buf.count {
            // One pass finds the line's end and its first bad byte (invalid UTF-8 or a control
            // character other than tab; CR only in a CRLF ending).
            var i = start
            var problem: String?
            while i < buf.count {
                let b = buf[i]
                if (b >= 0x20 && b < 0x7F) || b == Byte.tab { i += 1; continue }
                if b == Byte.lf { break }
                if b < 0x80 {
                    let crlf = b == Byte.cr && (i + 1 == buf.count || buf[i + 1] == Byte.lf)
                    if !crlf, problem == nil {
                        let what = b == Byte.cr ? "a carriage return (CR)" : "control character " + Self.hex(b)
                        problem = "\(what) at column \(i - start + 1) is not allowed (write \\n or \\t inside a quoted string)"
                    }
                    i += 1
                    continue
                }
                if let n = UTF8Check.sequenceLength(UnsafeRawBufferPointer(buf), i) {
                    i += n
                } else {
                    if problem == nil {
                        problem = "invalid UTF-8 (byte \(Self.hex(b))) at column \(i - start + 1); save the file as UTF-8"
                    }
                    i += 1
                }
            }
            let end = i
            var contentEnd = end
            if contentEnd > start, buf[contentEnd - 1] == Byte.cr { contentEnd -= 1 }  // CRLF
            parseLine(buf, start, contentEnd, line, problem)
            if stopped { return }
            start = end + 1
            line += 1
        }
    }

    // MARK: One line

    mutating func parseLine(
        _ buf: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int, _ line: Int,
        _ problem: String?
    ) {
        if end - start > ConfigParser.maxLineLength {
            fail(line, "the line is \(end - start) bytes long; the limit is \(ConfigParser.maxLineLength)")
            markDamagedLine(buf, start, end)
            return
        }
        if let problem {
            fail(line, problem)
            markDamagedLine(buf, start, end)
            return
        }
        var c = Cursor(buf: buf, i: start, end: end)
        c.skipSpaces()
        if c.atEnd || c.peek == Byte.hash { return }
        if c.peek == Byte.open {
            header(&c, line)
        } else {
            keyValue(&c, line)
        }
    }

    static func hex(_ b: UInt8) -> String {
        let h = String(b, radix: 16, uppercase: true)
        return "0x" + (h.count == 1 ? "0" : "") + h
    }

    /// A line that could not be read at all: if it looks like a header, later keys belong to a
    /// damaged section (so they are not blamed on the previous one); if it looks like `key =`,
    /// the key is marked present.
    mutating func markDamagedLine(_ buf: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) {
        var c = Cursor(buf: buf, i: start, end: min(end, start + ConfigParser.maxLineLength))
        c.skipSpaces()
        if c.peek == Byte.open {
            sections.append(ConfigSection(name: [], line: 0, isDamaged: true))
        } else if let key = c.bareKey() {
            c.skipSpaces()
            if c.peek == Byte.equals { sections[sections.count - 1].damagedKeys.append(key) }
        }
    }

    /// Works whether the compiler infers a catch's error as `LineError` or `any Error` (6.0).
    static func message(_ error: any Error) -> String {
        (error as? LineError)?.message ?? "\(error)"
    }

    // MARK: [section]

    mutating func header(_ c: inout Cursor, _ line: Int) {
        do {
            let name = try headerName(&c)
            let title = "[" + name.joined(separator: ".") + "]"
            if let previous = sections.first(where: { !$0.isDamaged && $0.name == name }) {
                fail(
                    line,
                    "section \(title) is already defined on line \(previous.line); "
                        + "put all its keys under that one header")
                sections.append(ConfigSection(name: name, line: line, isDamaged: true))
                return
            }
            sections.append(ConfigSection(name: name, line: line))
        } catch {
            fail(line, Self.message(error))
            sections.append(ConfigSection(name: [], line: line, isDamaged: true))
        }
    }

    func headerName(_ c: inout Cursor) throws(LineError) -> [String] {
        c.advance()  // [
        if c.peek == Byte.open {
            throw LineError(
                message: "[[...]] (arrays of tables) is not supported; "
                    + "use one [section.NAME] header per item")
        }
        var parts: [String] = []
        while true {
            c.skipSpaces()
            guard let part = c.bareKey() else {
                if c.peek == Byte.quote || c.peek == Byte.apostrophe {
                    throw LineError(message: "section names are bare words (letters, digits, _ and -), without quotes")
                }
                if c.peek == Byte.close {
                    throw LineError(
                        message: parts.isEmpty
                            ? "empty section header []; write [section] or [section.NAME]"
                            : "a section name cannot end with '.'")
                }
                throw LineError(
                    message: "section names are bare words (letters, digits, _ and -); "
                        + "found \(c.describeNext()) in the header")
            }
            parts.append(part)
            c.skipSpaces()
            if c.peek == Byte.dot { c.advance(); continue }
            if c.peek == Byte.close { c.advance(); break }
            if c.atEnd || c.peek == Byte.hash { throw LineError(message: "section header is not closed: missing ']'") }
            throw LineError(
                message: "unexpected \(c.describeNext()) in the section header; "
                    + "write [section] or [section.NAME]")
        }
        if parts.count > 2 {
            throw LineError(
                message: "a section header has one or two parts, as [section] or [section.NAME]; "
                    + "[\(parts.joined(separator: "."))] has \(parts.count)")
        }
        c.skipSpaces()
        guard c.atEnd || c.peek == Byte.hash else {
            throw LineError(message: "unexpected \(c.describeNext()) after the section header; comments start with '#'")
        }
        return parts
    }

    // MARK: key = value

    mutating func keyValue(_ c: inout Cursor, _ line: Int) {
        guard let key = c.bareKey() else {
            let next = c.peek
            if next == Byte.quote || next == Byte.apostrophe {
                fail(line, "keys are bare words (letters, digits, _ and -), without quotes")
            } else if next == Byte.equals {
                fail(line, "missing key before '='")
            } else {
                fail(
                    line,
                    "expected a key (letters, digits, _ and -) or a [section] header; "
                        + "found \(c.describeNext())")
            }
            return
        }
        let current = sections.count - 1
        do {
            c.skipSpaces()
            if c.peek == Byte.dot {
                throw LineError(message: "dotted keys ('\(key).…') are not supported; put the key under its [section] header")
            }
            guard c.peek == Byte.equals else {
                if c.atEnd || c.peek == Byte.hash {
                    throw LineError(message: "expected '=' and a value after key '\(key)'")
                }
                throw LineError(
                    message: "expected '=' after key '\(key)'; found \(c.describeNext())"
                        + " (keys are letters, digits, _ and -)")
            }
            c.advance()
            c.skipSpaces()
            if c.atEnd || c.peek == Byte.hash {
                throw LineError(message: "key '\(key)' has no value; write key = value (an empty string is \"\")")
            }
            let value = try self.value(&c, key: key, inArray: false)
            c.skipSpaces()
            guard c.atEnd || c.peek == Byte.hash else {
                throw LineError(
                    message: "unexpected \(shownNext(c)) after the value of '\(key)'; "
                        + "comments start with '#'")
            }
            if let previous = sections[current].entries.first(where: { $0.key == key }) {
                fail(
                    line,
                    "key '\(key)' is already set on line \(previous.line) in \(sections[current].title); "
                        + "set each key once")
                return
            }
            if sections[current].damagedKeys.contains(key) {
                fail(line, "key '\(key)' is set twice in \(sections[current].title); set each key once")
                return
            }
            sections[current].entries.append(ConfigEntry(key: key, value: value, line: line))
        } catch {
            fail(line, Self.message(error))
            sections[current].damagedKeys.append(key)
        }
    }

    func value(_ c: inout Cursor, key: String, inArray: Bool) throws(LineError) -> ConfigValue {
        guard let b = c.peek else { throw LineError(message: "missing value for '\(key)'") }
        switch b {
        case Byte.quote:
            return .string(try string(&c))
        case Byte.apostrophe:
            throw LineError(message: "strings use double quotes (\"…\"); single quotes are not supported")
        case Byte.open:
            if inArray { throw LineError(message: "lists cannot contain lists") }
            return try array(&c, key: key)
        default:
            let start = c.i
            while let w = c.peek, Byte.isWord(w) { c.advance() }
            guard c.i > start else {
                throw LineError(message: "expected a value for '\(key)'; found \(shownNext(c)). " + Self.valueKinds)
            }
            let word = Array(c.buf[start..<c.i])
            return try scalarWord(word)
        }
    }

    /// The next character for a message about a value; hidden in the secrets file.
    func shownNext(_ c: Cursor) -> String { redact && !c.atEnd ? "a character" : c.describeNext() }

    static let valueKinds = "A value is a \"quoted string\", a number, true, false, or a [list] of those"

    func scalarWord(_ w: [UInt8]) throws(LineError) -> ConfigValue {
        let text = String(decoding: w, as: UTF8.self)
        switch text {
        case "true": return .boolean(true)
        case "false": return .boolean(false)
        default: break
        }
        let lower = text.lowercased()
        if ["nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"].contains(lower) {
            throw LineError(message: "nan and inf are not allowed; write a finite number")
        }
        if lower == "true" || lower == "false" || lower == "yes" || lower == "no" || lower == "on" || lower == "off" {
            throw LineError(message: "true and false are written in lower case, without quotes: true or false")
        }
        let first = w[0]
        let looksNumeric =
            Byte.isDigit(first)
            || ((first == Byte.plus || first == Byte.minus || first == Byte.dot) && w.count > 1 && Byte.isDigit(w[1]))
        guard looksNumeric else {
            if redact { throw LineError(message: "text values must be in double quotes") }
            throw LineError(message: "text values must be in double quotes: write \(ConfigValue.quote(text))")
        }
        return try number(w, text)
    }

    /// `[+-]? int ( . digits )? ( [eE] [+-]? digits )?`, `_` only between digits, no leading zeros.
    func number(_ w: [UInt8], _ text: String) throws(LineError) -> ConfigValue {
        let shown = redact ? "the number" : "'\(text)'"
        var i = 0
        var clean: [UInt8] = []
        clean.reserveCapacity(w.count)
        if w[0] == Byte.plus || w[0] == Byte.minus {
            if w[0] == Byte.minus { clean.append(Byte.minus) }
            i = 1
        }
        func digits(_ i: inout Int, into clean: inout [UInt8]) -> Int {
            var n = 0
            while i < w.count {
                if Byte.isDigit(w[i]) {
                    clean.append(w[i]); n += 1; i += 1
                } else if w[i] == Byte.underscore, n > 0, i + 1 < w.count, Byte.isDigit(w[i + 1]) {
                    i += 1
                } else {
                    break
                }
            }
            return n
        }
        if i < w.count, w[i] == Byte.dot {
            throw LineError(message: "\(shown) needs a digit before the '.' (write 0.5, not .5)")
        }
        let intStart = i
        let intDigits = digits(&i, into: &clean)
        if intDigits == 0 {
            throw LineError(message: "\(shown) is not a number")
        }
        if w[intStart] == 0x30, intDigits > 1 || (i < w.count && (w[i] == Byte.underscore)) {
            throw LineError(message: "\(shown): leading zeros are not allowed in numbers")
        }
        if intDigits == 1, w[intStart] == 0x30, i < w.count,
            [UInt8(ascii: "x"), UInt8(ascii: "o"), UInt8(ascii: "b")].contains(w[i])
        {
            throw LineError(message: "\(shown): hexadecimal, octal and binary numbers are not supported; write a decimal number")
        }
        var isDecimal = false
        if i < w.count, w[i] == Byte.dot {
            isDecimal = true
            clean.append(Byte.dot)
            i += 1
            if digits(&i, into: &clean) == 0 {
                throw LineError(message: "\(shown) needs a digit after the '.' (write 5.0, not 5.)")
            }
        }
        if i < w.count, w[i] == UInt8(ascii: "e") || w[i] == UInt8(ascii: "E") {
            isDecimal = true
            clean.append(UInt8(ascii: "e"))
            i += 1
            if i < w.count, w[i] == Byte.plus || w[i] == Byte.minus {
                clean.append(w[i])
                i += 1
            }
            if digits(&i, into: &clean) == 0 {
                throw LineError(message: "\(shown) has an exponent without digits")
            }
        }
        guard i == w.count else {
            if w.contains(UInt8(ascii: ":")) || w.dropFirst().contains(Byte.minus) {
                throw LineError(message: "dates and times are written as quoted strings, as \"2026-01-01T00:00:00Z\"")
            }
            if redact { throw LineError(message: "the value is not a number; text values must be in double quotes") }
            throw LineError(
                message: "\(shown) is not a number; text values must be in double quotes: "
                    + ConfigValue.quote(text))
        }
        let s = String(decoding: clean, as: UTF8.self)
        if isDecimal {
            guard let d = Double(s), d.isFinite else {
                throw LineError(message: "\(shown) is too large")
            }
            return .decimal(d)
        }
        guard let v = Int(s) else {
            throw LineError(message: "\(shown) is too large; whole numbers go from \(Int.min) to \(Int.max)")
        }
        return .integer(v)
    }

    func string(_ c: inout Cursor) throws(LineError) -> String {
        c.advance()  // "
        if c.peek == Byte.quote, c.peek(1) == Byte.quote {
            throw LineError(message: "multi-line strings (\"\"\") are not supported; write \\n inside one quoted line")
        }
        var out: [UInt8] = []
        while true {
            guard let b = c.peek else {
                throw LineError(message: "the string is not closed: missing '\"' (strings fit on one line)")
            }
            c.advance()
            if b == Byte.quote { break }
            if b != Byte.backslash { out.append(b); continue }
            guard let e = c.peek else {
                throw LineError(message: "the string is not closed: missing '\"' (strings fit on one line)")
            }
            c.advance()
            switch e {
            case Byte.quote: out.append(Byte.quote)
            case Byte.backslash: out.append(Byte.backslash)
            case UInt8(ascii: "n"): out.append(Byte.lf)
            case UInt8(ascii: "t"): out.append(Byte.tab)
            case UInt8(ascii: "u"):
                var v: UInt32 = 0
                for _ in 0..<4 {
                    guard let h = c.peek.flatMap(Byte.hexValue) else {
                        throw LineError(message: "\\u needs exactly four hexadecimal digits, as \\u00E9")
                    }
                    v = v << 4 | h
                    c.advance()
                }
                guard let scalar = Unicode.Scalar(v) else {
                    throw LineError(
                        message: (redact ? "a \\u escape" : "\\u" + String(v, radix: 16, uppercase: true))
                            + " is not a Unicode character (surrogates are not allowed)")
                }
                if v == 0 { throw LineError(message: "\\u0000 (NUL) is not allowed in a string") }
                out.append(contentsOf: UTF8.encode(scalar)!)
            default:
                let shown =
                    redact
                    ? ""
                    : e < 0x80 && e >= 0x20
                        ? "\\" + String(UnicodeScalar(e)) + " "
                        : "(\\ followed by " + Self.hex(e) + ") "
                throw LineError(
                    message: "unknown escape \(shown)in a string; allowed: \\\" \\\\ \\n \\t \\uXXXX "
                        + "(a Windows path is written C:\\\\dir)")
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    func array(_ c: inout Cursor, key: String) throws(LineError) -> ConfigValue {
        c.advance()  // [
        var items: [ConfigValue] = []
        while true {
            c.skipSpaces()
            if c.peek == Byte.close { c.advance(); break }
            if c.atEnd || c.peek == Byte.hash {
                throw LineError(message: "the list is not closed: missing ']' (lists fit on one line)")
            }
            if c.peek == Byte.comma { throw LineError(message: "missing value before ',' in the list") }
            items.append(try value(&c, key: key, inArray: true))
            c.skipSpaces()
            if c.peek == Byte.comma { c.advance(); continue }
            if c.peek == Byte.close { c.advance(); break }
            if c.atEnd || c.peek == Byte.hash {
                throw LineError(message: "the list is not closed: missing ']' (lists fit on one line)")
            }
            throw LineError(message: "expected ',' or ']' in the list; found \(shownNext(c))")
        }
        return .array(items)
    }
}

private struct Cursor {
    let buf: UnsafeBufferPointer<UInt8>
    var i: Int
    let end: Int

    var atEnd: Bool { i >= end }
    var peek: UInt8? { i < end ? buf[i] : nil }
    func peek(_ k: Int) -> UInt8? { i + k < end ? buf[i + k] : nil }
    mutating func advance() { if i < end { i += 1 } }
    mutating func skipSpaces() { while i < end, Byte.isSpace(buf[i]) { i += 1 } }

    mutating func bareKey() -> String? {
        let start = i
        while i < end, Byte.isBareKey(buf[i]) { i += 1 }
        return i > start ? String(decoding: buf[start..<i], as: UTF8.self) : nil
    }

    /// `'x'`, or "the end of the line", for messages. A multi-byte character is shown whole.
    func describeNext() -> String {
        guard i < end else { return "the end of the line" }
        var j = i + 1
        while j < end, j - i < 4, buf[j] & 0xC0 == 0x80 { j += 1 }
        return "'" + String(decoding: buf[i..<j], as: UTF8.self) + "'"
    }
}
