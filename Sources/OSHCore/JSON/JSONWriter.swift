// An ordered JSON writer into a caller's ByteBuffer. Keys come out in exactly the
// order the caller writes them — there is no dictionary anywhere — which is what
// the OSH node needs (`type` first, `obsFormat` first, fields in schema order).
// Numbers and strings are written without allocating.

public struct JSONWriter {
    public let out: ByteBuffer
    /// Bit d set: the container at depth d already holds a member, so the next one needs a comma.
    private var hasMember: UInt64 = 0
    private var depth = 0
    private var afterKey = false

    public init(_ out: ByteBuffer) { self.out = out }

    /// Starts a new document in the same buffer (no reset of the buffer itself).
    public mutating func restart() {
        hasMember = 0
        depth = 0
        afterKey = false
    }

    @inline(__always) private mutating func separator() {
        if afterKey { afterKey = false; return }
        guard depth > 0 else { return }
        let bit: UInt64 = 1 << UInt64(depth & 63)
        if hasMember & bit != 0 { out.append(UInt8(ascii: ",")) } else { hasMember |= bit }
    }

    public mutating func beginObject() { separator(); out.append(UInt8(ascii: "{")); push() }
    public mutating func endObject() { pop(); out.append(UInt8(ascii: "}")) }
    public mutating func beginArray() { separator(); out.append(UInt8(ascii: "[")); push() }
    public mutating func endArray() { pop(); out.append(UInt8(ascii: "]")) }

    private mutating func push() {
        depth += 1
        hasMember &= ~(1 << UInt64(depth & 63))
    }
    private mutating func pop() { depth -= 1 }

    public mutating func key(_ k: StaticString) {
        separator()
        out.append(UInt8(ascii: "\""))
        out.append(k)
        out.append(StaticString("\":"))
        afterKey = true
    }

    public mutating func key(_ k: String) {
        separator()
        JSONWriter.writeEscaped(k, to: out)
        out.append(UInt8(ascii: ":"))
        afterKey = true
    }

    public mutating func string(_ s: String) { separator(); JSONWriter.writeEscaped(s, to: out) }
    public mutating func string(_ s: StaticString) {
        separator()
        out.append(UInt8(ascii: "\""))
        out.append(s)
        out.append(UInt8(ascii: "\""))
    }
    public mutating func bool(_ b: Bool) { separator(); out.append(b ? StaticString("true") : StaticString("false")) }
    public mutating func null() { separator(); out.append(StaticString("null")) }
    public mutating func int(_ v: Int) { separator(); JSONWriter.writeInt(v, to: out) }

    /// A double as osh-core's schema writer does (Gson `value(double)`): NaN and ±∞ as the strings
    /// `"NaN"`, `"+Infinity"`, `"-Infinity"` (SWEJsonBindings.writeNumberOrSpecialValue).
    public mutating func schemaNumber(_ v: Double) {
        separator()
        if v.isFinite { JSONWriter.writeDouble(v, to: out) } else { JSONWriter.writeSpecial(v, schema: true, to: out) }
    }

    /// A double as osh-core's data writer does (JsonDataWriterGson): NaN and ±∞ as `"NaN"`, `"+INF"`, `"-INF"`.
    public mutating func number(_ v: Double) {
        separator()
        if v.isFinite { JSONWriter.writeDouble(v, to: out) } else { JSONWriter.writeSpecial(v, schema: false, to: out) }
    }

    /// Writes pre-rendered JSON (e.g. a template segment) as the next value.
    public mutating func raw(_ s: StaticString) { separator(); out.append(s) }
    public mutating func rawValue(_ bytes: UnsafeRawBufferPointer) { separator(); out.append(bytes) }

    // MARK: - Scalars, usable without a writer state (the observation templates call these)

    /// Shortest digits that read back to the same Double (the standard library's algorithm),
    /// `-0.0` kept, integral values with `.0` as Java writes them. Finite values only.
    @inline(__always) public static func writeDouble(_ v: Double, to out: ByteBuffer) {
        var stream = ByteBufferStream(buffer: out)
        v.write(to: &stream)
    }

    /// Shortest digits for a Float (what Java's Float.toString is to osh-core's FloatWriter). Finite values only.
    @inline(__always) public static func writeFloat(_ v: Float, to out: ByteBuffer) {
        var stream = ByteBufferStream(buffer: out)
        v.write(to: &stream)
    }

    public static func writeSpecial(_ v: Double, schema: Bool, to out: ByteBuffer) {
        if v.isNaN { out.append(StaticString("\"NaN\"")); return }
        if v > 0 {
            out.append(schema ? StaticString("\"+Infinity\"") : StaticString("\"+INF\""))
        } else {
            out.append(schema ? StaticString("\"-Infinity\"") : StaticString("\"-INF\""))
        }
    }

    public static func writeInt(_ v: Int, to out: ByteBuffer) {
        if v == 0 { out.append(UInt8(ascii: "0")); return }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes of scratch on the stack
        var mag = v.magnitude
        var n = 0
        withUnsafeMutableBytes(of: &digits) { scratch in
            while mag > 0 {
                scratch[23 - n] = UInt8(truncatingIfNeeded: mag % 10) &+ 48
                mag /= 10
                n += 1
            }
            if v < 0 { n += 1; scratch[24 - n] = UInt8(ascii: "-") }
            out.append(UnsafeRawBufferPointer(rebasing: scratch[(24 - n)...]))
        }
    }

    /// A JSON string with the escapes RFC 8259 requires; non-ASCII UTF-8 passes through unchanged.
    public static func writeEscaped(_ s: String, to out: ByteBuffer) {
        out.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): out.append(StaticString("\\\""))
            case UInt8(ascii: "\\"): out.append(StaticString("\\\\"))
            case 0x0A: out.append(StaticString("\\n"))
            case 0x0D: out.append(StaticString("\\r"))
            case 0x09: out.append(StaticString("\\t"))
            case 0x08: out.append(StaticString("\\b"))
            case 0x0C: out.append(StaticString("\\f"))
            case 0..<0x20:
                out.append(StaticString("\\u00"))
                out.append(hexDigit(b >> 4))
                out.append(hexDigit(b & 0xF))
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    @inline(__always) static func hexDigit(_ n: UInt8) -> UInt8 { n < 10 ? 48 + n : 87 + n }
}
