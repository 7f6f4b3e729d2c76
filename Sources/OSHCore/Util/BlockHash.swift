// What SHA-1 and SHA-256 share (FIPS 180-4 §5.1.1, §5.2.1): 64-byte blocks filled from the
// input, the 0x80 / zeros / 64-bit big-endian bit-length padding, and big-endian output words.
// Each hash supplies only its initial value and its compression function.

protocol BlockHash64 {
    var block: [UInt8] { get set }
    var blockCount: Int { get set }
    var totalBytes: UInt64 { get set }
    /// Processes `block` (64 bytes) into the state.
    mutating func compress()
}

extension BlockHash64 {
    mutating func absorb<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        for b in bytes {
            block[blockCount] = b
            blockCount += 1
            if blockCount == 64 {
                compress()
                blockCount = 0
            }
        }
        totalBytes &+= UInt64(bytes.count)
    }

    /// Appends the padding and processes the last block(s).
    mutating func pad() {
        let bitLength = totalBytes &* 8
        block[blockCount] = 0x80
        blockCount += 1
        if blockCount > 56 {
            while blockCount < 64 { block[blockCount] = 0; blockCount += 1 }
            compress()
            blockCount = 0
        }
        while blockCount < 56 { block[blockCount] = 0; blockCount += 1 }
        for i in 0..<8 { block[56 + i] = UInt8(truncatingIfNeeded: bitLength >> UInt64(56 - 8 * i)) }
        compress()
        blockCount = 0
    }

    /// The block as 16 big-endian words, the first of the message schedule `w`.
    func loadBlockWords(into w: inout [UInt32]) {
        for t in 0..<16 {
            w[t] =
                UInt32(block[4 * t]) << 24 | UInt32(block[4 * t + 1]) << 16
                | UInt32(block[4 * t + 2]) << 8 | UInt32(block[4 * t + 3])
        }
    }

    static func bigEndian(_ words: [UInt32]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(words.count * 4)
        for word in words {
            out.append(UInt8(truncatingIfNeeded: word >> 24))
            out.append(UInt8(truncatingIfNeeded: word >> 16))
            out.append(UInt8(truncatingIfNeeded: word >> 8))
            out.append(UInt8(truncatingIfNeeded: word))
        }
        return out
    }
}
