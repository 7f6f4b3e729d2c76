// The two token sources that drive RecordReader's node tree (RecordReader.swift): JSON checks
// names and shapes, binary ignores names and reads bytes as osh-core's BinaryDataParser writes them.

extension RecordReader {
    // MARK: - Token sources

    enum Opening { case block([UInt8]), elements(Int), item(Int) }

    /// What the tree asks of a source. JSON checks names and shapes; binary ignores names and reads bytes.
    protocol TokenSource {
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
    struct JSONSource: TokenSource {
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
            throw fail(
                next < m.count
                    ? "Expected field '\(n.name)' but was '\(m[next].0)'"
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
                case .null: return .time(.nan)  // what osh-core reads for a null time
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
    struct BinarySource: TokenSource {
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
                return .bool(try real(dt, n) != 0)  // any non-zero integer is true, as Java's readBoolean
            case .text:
                return .text(try string(n))
            default:
                throw fail(n, "internal: not a scalar")
            }
        }

        mutating func beginArray(_ n: Node, size: Int?) throws(SWEDecodingError) -> Opening {
            if case .block? = n.member { return .block(try block(n)) }
            var k = size ?? 0
            if size == nil {  // implicit size: a 4-byte count first (osh-core ImplicitSizeProcessor)
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

    enum ModifiedUTF8 {
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
            return String(decoding: units, as: UTF16.self)  // a lone surrogate becomes U+FFFD
        }
    }
}
