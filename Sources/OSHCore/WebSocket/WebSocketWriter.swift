// RFC 6455 frame writing, and the strict UTF-8 check text frames and close reasons need.

/// Writes frames into a reusable ByteBuffer. A client masks every frame (RFC 6455 §5.3) with a
/// key from the caller (the platform draws it from getrandom); a server never masks.
public enum WebSocketFrameWriter {
    /// Appends one frame. `mask` nil writes an unmasked (server) frame.
    public static func write(
        _ opcode: WebSocketOpcode, payload: UnsafeRawBufferPointer, fin: Bool = true,
        mask: UInt32?, to out: ByteBuffer
    ) {
        out.append((fin ? 0x80 : 0) | opcode.rawValue)
        let maskBit: UInt8 = mask == nil ? 0 : 0x80
        let n = payload.count
        if n <= 125 {
            out.append(maskBit | UInt8(n))
        } else if n <= 0xFFFF {
            out.append(maskBit | 126)
            out.appendBigEndian(UInt16(n))
        } else {
            out.append(maskBit | 127)
            out.appendBigEndian(UInt64(n))
        }
        guard let m = mask else {
            out.append(payload)
            return
        }
        let k0 = UInt8(truncatingIfNeeded: m >> 24), k1 = UInt8(truncatingIfNeeded: m >> 16)
        let k2 = UInt8(truncatingIfNeeded: m >> 8), k3 = UInt8(truncatingIfNeeded: m)
        out.append(k0); out.append(k1); out.append(k2); out.append(k3)
        out.reserve(n)
        for i in 0..<n {
            let k: UInt8
            switch i & 3 {
            case 0: k = k0
            case 1: k = k1
            case 2: k = k2
            default: k = k3
            }
            out.append(payload[i] ^ k)
        }
    }

    public static func write(_ opcode: WebSocketOpcode, payload: [UInt8], fin: Bool = true, mask: UInt32?, to out: ByteBuffer) {
        payload.withUnsafeBytes { write(opcode, payload: $0, fin: fin, mask: mask, to: out) }
    }

    /// A close frame: code, then the reason cut to fit the 125-byte control limit (on a character boundary).
    public static func writeClose(code: UInt16, reason: String, mask: UInt32?, to out: ByteBuffer) {
        var body: [UInt8] = [UInt8(code >> 8), UInt8(code & 0xFF)]
        var r = Array(reason.utf8)
        if r.count > 123 {
            var cut = 123
            while cut > 0, r[cut] & 0xC0 == 0x80 { cut -= 1 }  // don't split a multi-byte character
            r = Array(r[0..<cut])
        }
        body += r
        write(.close, payload: body, mask: mask, to: out)
    }
}

/// Strict UTF-8 validation (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF.
public enum UTF8Check {
    public static func isValid(_ p: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        while i < p.count {
            if p[i] < 0x80 { i += 1; continue }
            guard let len = sequenceLength(p, i) else { return false }
            i += len
        }
        return true
    }

    /// The length of the well-formed sequence whose lead (non-ASCII) byte is at `i`, or nil: a
    /// bad lead or continuation byte, or a sequence cut short by the end of `p`.
    @inline(__always)
    static func sequenceLength(_ p: UnsafeRawBufferPointer, _ i: Int) -> Int? {
        let need: Int
        var lo: UInt8 = 0x80, hi: UInt8 = 0xBF
        switch p[i] {
        case 0xC2...0xDF: need = 1
        case 0xE0: need = 2; lo = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: need = 2
        case 0xED: need = 2; hi = 0x9F
        case 0xF0: need = 3; lo = 0x90
        case 0xF1...0xF3: need = 3
        case 0xF4: need = 3; hi = 0x8F
        default: return nil
        }
        guard i + need < p.count else { return nil }  // truncated sequence
        let b1 = p[i + 1]
        guard b1 >= lo, b1 <= hi else { return nil }
        var k = 2
        while k <= need {
            guard p[i + k] & 0xC0 == 0x80 else { return nil }
            k += 1
        }
        return need + 1
    }

    public static func isValid(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { isValid($0) } }
}
