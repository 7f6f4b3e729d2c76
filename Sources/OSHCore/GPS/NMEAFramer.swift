// NMEA 0183 sentence framing for bytes as they arrive (any chunking, down to one byte).
//
// A sentence starts at `$` (or `!` for encapsulated sentences) and ends at CR or LF; it
// consists of printable ASCII. The standard limit is 82 characters including `$` and CR LF,
// but real receivers exceed it (high-precision RTK GGA ≈ 100, MediaTek $PMTKCHN ≈ 200), so
// the line buffer holds `maxLineLength` bytes (default 256) and longer lines are dropped and
// counted. A `$` or `!` inside a line abandons the partial line and starts a new one
// (resynchronisation after a truncated sentence); a control byte abandons the line.
//
// The checksum is `*` and two hex digits (either case) at the end: XOR of every byte between
// `$` and `*`. A line with a `*` that is not followed by exactly two hex digits and the end of
// line is a bad checksum. A line with no `*` has no checksum; it is accepted unless
// `requireChecksum` (gpsd accepts those too).
//
// The buffer is allocated once, in init; framing allocates nothing.

/// Framing counters (all monotonic).
public struct NMEAFramingCounters: Sendable, Equatable {
    /// Lines accepted (checksum good, or absent and not required).
    public var accepted = 0
    /// Lines whose checksum did not match, or whose `*` was not followed by two hex digits.
    public var badChecksum = 0
    /// Accepted lines without a checksum.
    public var noChecksum = 0
    /// Lines longer than the buffer.
    public var tooLong = 0
    /// Lines abandoned: a new `$`/`!` before the end of line, a control byte, or too short.
    public var malformed = 0
    /// Bytes outside any sentence (between lines, comments, noise).
    public var noiseBytes = 0

    public init() {}
}

public final class NMEAFramer {
    public let maxLineLength: Int
    public let requireChecksum: Bool
    public private(set) var counters = NMEAFramingCounters()

    private let line: UnsafeMutablePointer<UInt8>
    private var count = 0
    private var inLine = false
    private var xor: UInt8 = 0
    private var xorAtStar: UInt8 = 0
    private var star = -1

    public init(maxLineLength: Int = 256, requireChecksum: Bool = false) {
        self.maxLineLength = Swift.max(16, maxLineLength)
        self.requireChecksum = requireChecksum
        line = UnsafeMutablePointer<UInt8>.allocate(capacity: self.maxLineLength)
    }

    deinit { line.deallocate() }

    /// Forgets any partial line (e.g. after reopening the device). Counters are kept.
    public func reset() {
        inLine = false
        count = 0
    }

    /// Frames `bytes`, calling `onSentence` for each accepted line with the line from `$`/`!`
    /// up to (not including) the `*` or the end of line. The pointer is valid only during the call.
    @inline(__always)
    public func feed(_ bytes: UnsafeRawBufferPointer, _ onSentence: (UnsafeRawBufferPointer) -> Void) {
        feedLines(bytes) { body, _ in onSentence(body) }
    }

    /// As `feed`, also passing the whole line as received (with `*hh`, without CR/LF).
    public func feedLines(
        _ bytes: UnsafeRawBufferPointer,
        _ onLine: (_ body: UnsafeRawBufferPointer, _ whole: UnsafeRawBufferPointer) -> Void
    ) {
        for b in bytes {
            if b == 0x24 || b == 0x21 {  // '$' '!'
                if inLine { counters.malformed &+= 1 }
                inLine = true
                line[0] = b
                count = 1
                xor = 0
                star = -1
                continue
            }
            guard inLine else {
                counters.noiseBytes &+= 1
                continue
            }
            if b == 0x0D || b == 0x0A {
                inLine = false
                endOfLine(onLine)
                continue
            }
            if b < 0x20 || b > 0x7E {
                inLine = false
                counters.malformed &+= 1
                continue
            }
            if count == maxLineLength {
                inLine = false
                counters.tooLong &+= 1
                continue
            }
            if b == 0x2A {  // '*'
                star = count
                xorAtStar = xor
            }
            xor ^= b
            line[count] = b
            count += 1
        }
    }

    @inline(__always)
    private func endOfLine(_ onLine: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Void) {
        // "$" plus at least a two-character address.
        guard count >= 3 else {
            counters.malformed &+= 1
            return
        }
        var bodyEnd = count
        if star >= 0 {
            guard star == count - 3,
                let hi = NMEAFramer.hexValue(line[count - 2]),
                let lo = NMEAFramer.hexValue(line[count - 1]),
                hi << 4 | lo == xorAtStar
            else {
                counters.badChecksum &+= 1
                return
            }
            bodyEnd = star
        } else {
            guard !requireChecksum else {
                counters.badChecksum &+= 1
                return
            }
            counters.noChecksum &+= 1
        }
        counters.accepted &+= 1
        onLine(UnsafeRawBufferPointer(start: line, count: bodyEnd), UnsafeRawBufferPointer(start: line, count: count))
    }

    @inline(__always)
    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x37
        case 0x61...0x66: return c - 0x57
        default: return nil
        }
    }
}
