// SHA-256 (FIPS 180-4 §6.2) and HMAC-SHA256 (RFC 2104), pure Swift, no Foundation.
// Used for app-specific board ids derived from /etc/machine-id, SPKI pins and
// anything else that needs a digest; not on the observation hot path.

public struct SHA256: Sendable, BlockHash64 {
    public static let digestSize = 32
    public static let blockSize = 64

    /// FIPS 180-4 §4.2.2: the first 32 bits of the fractional parts of the cube roots of the first 64 primes.
    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    /// FIPS 180-4 §5.3.3 initial hash value.
    private var h: [UInt32] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
    ]
    var block = [UInt8](repeating: 0, count: 64)
    var blockCount = 0
    var totalBytes: UInt64 = 0
    private var w = [UInt32](repeating: 0, count: 64)

    public init() {}

    public mutating func update<C: Collection>(_ bytes: C) where C.Element == UInt8 { absorb(bytes) }

    public mutating func update(_ s: String) { update(s.utf8) }

    /// Pads, processes the last block(s) and returns the 32-byte digest. The hasher is spent afterwards.
    public mutating func finalize() -> [UInt8] {
        pad()
        return Self.bigEndian(h)
    }

    @inline(__always) private static func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 - n)) }

    mutating func compress() {
        loadBlockWords(into: &w)
        for t in 16..<64 {
            let s0 = SHA256.rotr(w[t - 15], 7) ^ SHA256.rotr(w[t - 15], 18) ^ (w[t - 15] >> 3)
            let s1 = SHA256.rotr(w[t - 2], 17) ^ SHA256.rotr(w[t - 2], 19) ^ (w[t - 2] >> 10)
            w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
        }
        var a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7]
        for t in 0..<64 {
            let s1 = SHA256.rotr(e, 6) ^ SHA256.rotr(e, 11) ^ SHA256.rotr(e, 25)
            let ch = (e & f) ^ (~e & g)
            let t1 = hh &+ s1 &+ ch &+ SHA256.k[t] &+ w[t]
            let s0 = SHA256.rotr(a, 2) ^ SHA256.rotr(a, 13) ^ SHA256.rotr(a, 22)
            let maj = (a & b) ^ (a & c) ^ (b & c)
            let t2 = s0 &+ maj
            hh = g; g = f; f = e; e = d &+ t1
            d = c; c = b; b = a; a = t1 &+ t2
        }
        h[0] = h[0] &+ a; h[1] = h[1] &+ b; h[2] = h[2] &+ c; h[3] = h[3] &+ d
        h[4] = h[4] &+ e; h[5] = h[5] &+ f; h[6] = h[6] &+ g; h[7] = h[7] &+ hh
    }

    /// The digest of `bytes` in one call.
    public static func hash<C: Collection>(_ bytes: C) -> [UInt8] where C.Element == UInt8 {
        var s = SHA256()
        s.update(bytes)
        return s.finalize()
    }

    public static func hash(_ s: String) -> [UInt8] { hash(s.utf8) }
}

/// HMAC-SHA256 (RFC 2104 with H = SHA-256, B = 64, L = 32).
public enum HMACSHA256 {
    public static func authenticationCode<K: Collection, M: Collection>(key: K, message: M) -> [UInt8]
    where K.Element == UInt8, M.Element == UInt8 {
        var k = key.count > SHA256.blockSize ? SHA256.hash(key) : Array(key)
        k += [UInt8](repeating: 0, count: SHA256.blockSize - k.count)
        var inner = SHA256()
        inner.update(k.map { $0 ^ 0x36 })
        inner.update(message)
        let innerDigest = inner.finalize()
        var outer = SHA256()
        outer.update(k.map { $0 ^ 0x5c })
        outer.update(innerDigest)
        return outer.finalize()
    }
}

public enum Hex {
    /// Lowercase hex of `bytes`.
    public static func string<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digit(b >> 4))
            out.append(digit(b & 0xF))
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Bytes of an even-length hex string (either case); nil on any other character or an odd length.
    public static func bytes(_ s: String) -> [UInt8]? {
        let u = Array(s.utf8)
        guard u.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(u.count / 2)
        var i = 0
        while i < u.count {
            guard let hi = value(u[i]), let lo = value(u[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    @inline(__always) static func digit(_ n: UInt8) -> UInt8 { n < 10 ? 48 + n : 87 + n }

    @inline(__always) static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: return c - 48
        case 97...102: return c - 87
        case 65...70: return c - 55
        default: return nil
        }
    }
}
