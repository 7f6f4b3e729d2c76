// A growable byte buffer the caller owns and reuses. Encoders append into it;
// `reset()` keeps the storage, so after the first few bodies no call allocates.
// The storage is a plain pointer so libcurl can send it without a copy.

public final class ByteBuffer {
    public private(set) var base: UnsafeMutablePointer<UInt8>
    public private(set) var capacity: Int
    public private(set) var count: Int = 0

    public init(capacity: Int = 4096) {
        self.capacity = Swift.max(capacity, 16)
        self.base = UnsafeMutablePointer<UInt8>.allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// Forgets the contents, keeps the storage.
    @inline(__always) public func reset() { count = 0 }

    /// Drops bytes from the end (e.g. a trailing comma).
    @inline(__always) public func truncate(to n: Int) { count = Swift.min(count, Swift.max(0, n)) }

    @inline(__always) public func reserve(_ extra: Int) {
        if count + extra > capacity { grow(to: count + extra) }
    }

    private func grow(to minimum: Int) {
        var newCapacity = capacity * 2
        while newCapacity < minimum { newCapacity *= 2 }
        let fresh = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        fresh.update(from: base, count: count)
        base.deallocate()
        base = fresh
        capacity = newCapacity
    }

    @inline(__always) public func append(_ byte: UInt8) {
        if count == capacity { grow(to: count + 1) }
        base[count] = byte
        count += 1
    }

    public func append(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0, let src = bytes.baseAddress else { return }
        reserve(bytes.count)
        (base + count).update(from: src.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        count += bytes.count
    }

    public func append(_ bytes: UnsafeBufferPointer<UInt8>) { append(UnsafeRawBufferPointer(bytes)) }

    public func append(_ bytes: [UInt8]) { bytes.withUnsafeBytes { append($0) } }

    /// Appends a static string's UTF-8 bytes (no allocation).
    public func append(_ s: StaticString) {
        append(UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    /// Appends a string's UTF-8 bytes verbatim (no escaping; native strings are contiguous, so no allocation).
    public func appendUTF8(_ s: String) {
        var s = s
        s.withUTF8 { append($0) }
    }

    /// Big-endian fixed-width integers and IEEE-754 doubles, for binary encodings.
    public func appendBigEndian<T: FixedWidthInteger>(_ v: T) {
        var be = v.bigEndian
        withUnsafeBytes(of: &be) { append($0) }
    }

    public func appendBigEndian(_ d: Double) { appendBigEndian(d.bitPattern) }
    public func appendBigEndian(_ f: Float) { appendBigEndian(f.bitPattern) }

    /// The contents, valid until the next mutation.
    public var bytes: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }

    /// A copy of the contents (tests, CLI).
    public var array: [UInt8] { Array(bytes) }

    /// The contents decoded as UTF-8 (tests, CLI).
    public var string: String { String(decoding: bytes, as: UTF8.self) }
}

/// Lets the standard library's allocation-free float printing (`Double.write(to:)`,
/// shortest round-trip digits) write straight into a ByteBuffer.
struct ByteBufferStream: TextOutputStream {
    let buffer: ByteBuffer
    mutating func write(_ string: String) { buffer.appendUTF8(string) }
    mutating func _writeASCII(_ ascii: UnsafeBufferPointer<UInt8>) { buffer.append(ascii) }
}
