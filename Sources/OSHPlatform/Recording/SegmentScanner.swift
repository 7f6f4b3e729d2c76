#if canImport(Glibc)
import Glibc
#endif
import OSHCore

/// Reads one recording segment record by record through one buffer (made once, grown only for a
/// record larger than any before): the store's recovery and drop counts, the catalogue and the
/// windows all read through it. With `payloads: false` it walks headers only, reading small
/// chunks where records are large, so counting a video segment does not read its frames.
final class SegmentScanner {
    enum Item {
        /// A record; `payload` (only when read with payloads) is valid until the next call.
        case record(offset: Int, header: RecordingRecord.Header, payload: UnsafeRawBufferPointer)
        /// A stretch with no whole record in it: a bad CRC, garbage, a torn tail.
        case damage(offset: Int, length: Int)
    }

    private var buffer: UnsafeMutableRawBufferPointer
    private var file: FileDescriptor?
    private(set) var path = ""
    /// The file's size when opened: what a writer appends later is not read.
    private(set) var size = 0
    /// File offset of the next item.
    private(set) var position = 0
    private var bufferOffset = 0, bufferCount = 0
    private var lastLength = 0
    private static let chunk = 256 << 10

    init() {
        buffer = .allocate(byteCount: Self.chunk, alignment: 8)
    }

    deinit {
        file?.close()
        buffer.deallocate()
    }

    /// Opens `p` at `offset`, reading at most `limit` bytes of it (what an earlier pass saw); false
    /// when it no longer exists (the writer dropped it meanwhile).
    @discardableResult
    func open(_ p: String, at offset: Int = 0, limit: Int = .max) throws -> Bool {
        close()
        let f: FileDescriptor
        do {
            f = try FileDescriptor.open(p, O_RDONLY)
        } catch {
            if error.errno == ENOENT { return false }
            throw error
        }
        var st = stat()
        guard fstat(f.rawValue, &st) == 0 else {
            let e = SystemError.last("fstat", subject: p)
            f.close()
            throw e
        }
        file = f
        path = p
        size = min(Int(st.st_size), limit)
        position = min(offset, size)
        bufferOffset = 0; bufferCount = 0
        return true
    }

    func close() {
        file?.close()
        file = nil
    }

    /// Continues at `offset` (a record's start found by an earlier pass).
    func seek(_ offset: Int) { position = min(max(0, offset), size) }

    /// The next record or damaged stretch; nil at the end.
    func next(payloads: Bool) throws -> Item? {
        guard position < size else { return nil }
        let start = position
        while position < size {
            try fill(position, want: RecordingRecord.headerBytes, payloads: payloads)
            let view = UnsafeRawBufferPointer(start: buffer.baseAddress, count: bufferCount)
            let rel = position - bufferOffset
            var found: RecordingRecord.Header?
            if case .record(let h) = RecordingRecord.header(view, at: rel), position + h.length <= size {
                if payloads {
                    try fill(position, want: h.length, payloads: true)
                    let whole = UnsafeRawBufferPointer(start: buffer.baseAddress, count: bufferCount)
                    if case .record = RecordingRecord.parse(whole, at: position - bufferOffset) { found = h }
                } else {
                    found = h
                }
            }
            if let h = found {
                // Damage first; the record is found again on the next call.
                if position > start { return .damage(offset: start, length: position - start) }
                let rel = position - bufferOffset
                let payload =
                    payloads
                    ? RecordingRecord.payload(UnsafeRawBufferPointer(start: buffer.baseAddress, count: bufferCount), recordAt: rel, h)
                    : UnsafeRawBufferPointer(start: nil, count: 0)
                position += h.length
                lastLength = h.length
                return .record(offset: start, header: h, payload: payload)
            }
            // No record here: on to the next magic in what is buffered (or past it, to read more).
            let view2 = UnsafeRawBufferPointer(start: buffer.baseAddress, count: bufferCount)
            position = bufferOffset + RecordingRecord.resync(view2, after: position - bufferOffset)
        }
        return .damage(offset: start, length: size - start)
    }

    /// Makes bytes [at, at + want) (or to the end of the file) buffered.
    private func fill(_ at: Int, want: Int, payloads: Bool) throws {
        let end = min(at + want, size)
        if at >= bufferOffset, end <= bufferOffset + bufferCount { return }
        guard let f = file else { throw SystemError("read", errno: EBADF, subject: path) }
        if want > buffer.count {
            // A record larger than any before: grow once (not per record).
            buffer.deallocate()
            buffer = .allocate(byteCount: max(want, 2 * buffer.count), alignment: 8)
        }
        // Walking headers past large records, read little: the next header, not the frame after it.
        let ahead = payloads || lastLength < 16 << 10 ? Self.chunk : 4 << 10
        let count = min(buffer.count, size - at, max(want, ahead))
        var got = 0
        while got < count {
            let n: Int
            do {
                n = try f.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[got..<count]), at: at + got)
            } catch {
                throw error.on(path)
            }
            if n == 0 { break }
            got += n
        }
        // Shorter than it was (cut meanwhile): what is there is all there is.
        if got < count { size = at + got }
        bufferOffset = at
        bufferCount = got
    }
}
