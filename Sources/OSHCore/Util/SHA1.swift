// SHA-1 (FIPS 180-4 §6.1), pure Swift. Only for the WebSocket handshake (RFC 6455 §4.2.2:
// Sec-WebSocket-Accept = base64(SHA-1(key + GUID))), where it is a checksum, not security.

public struct SHA1: Sendable, BlockHash64 {
    public static let digestSize = 20

    private var h: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0)
    var block = [UInt8](repeating: 0, count: 64)
    var blockCount = 0
    var totalBytes: UInt64 = 0
    private var w = [UInt32](repeating: 0, count: 80)

    public init() {}

    public mutating func update<C: Collection>(_ bytes: C) where C.Element == UInt8 { absorb(bytes) }

    public mutating func update(_ s: String) { update(s.utf8) }

    /// Pads, processes the last block(s) and returns the 20-byte digest. The hasher is spent afterwards.
    public mutating func finalize() -> [UInt8] {
        pad()
        return Self.bigEndian([h.0, h.1, h.2, h.3, h.4])
    }

    @inline(__always) private static func rotl(_ x: UInt32, _ n: UInt32) -> UInt32 { (x << n) | (x >> (32 - n)) }

    mutating func compress() {
        loadBlockWords(into: &w)
        for t in 16..<80 { w[t] = Self.rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1) }
        var (a, b, c, d, e) = h
        for t in 0..<80 {
            let f: UInt32, k: UInt32
            switch t {
            case 0..<20: f = (b & c) | (~b & d); k = 0x5A827999
            case 20..<40: f = b ^ c ^ d; k = 0x6ED9EBA1
            case 40..<60: f = (b & c) | (b & d) | (c & d); k = 0x8F1BBCDC
            default: f = b ^ c ^ d; k = 0xCA62C1D6
            }
            let temp = Self.rotl(a, 5) &+ f &+ e &+ k &+ w[t]
            e = d
            d = c
            c = Self.rotl(b, 30)
            b = a
            a = temp
        }
        h = (h.0 &+ a, h.1 &+ b, h.2 &+ c, h.3 &+ d, h.4 &+ e)
    }

    public static func hash<C: Collection>(_ bytes: C) -> [UInt8] where C.Element == UInt8 {
        var s = SHA1()
        s.update(bytes)
        return s.finalize()
    }

    public static func hash(_ s: String) -> [UInt8] { hash(s.utf8) }
}
