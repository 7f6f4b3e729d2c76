/// The header of a RIFF/WAVE file holding integer PCM — what `osh-edge levels FILE.wav` and
/// the audio tests need: where the samples are and how to read them. Pure: it parses bytes
/// already read.
public struct WAVHeader: Sendable, Equatable {
    public var format: PCMSampleFormat
    public var sampleRate: Int
    public var channels: Int
    /// Byte offset of the first sample (the `data` chunk's payload).
    public var dataOffset: Int
    /// Bytes of sample data actually present (whole frames only).
    public var dataBytes: Int

    public init(format: PCMSampleFormat, sampleRate: Int, channels: Int, dataOffset: Int, dataBytes: Int) {
        self.format = format
        self.sampleRate = sampleRate
        self.channels = channels
        self.dataOffset = dataOffset
        self.dataBytes = dataBytes
    }

    public var bytesPerFrame: Int { format.bytesPerSample * channels }
    public var frames: Int { dataBytes / bytesPerFrame }

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case notRIFFWAVE
        case missingChunk(String)
        case truncated(String)
        case unsupported(String)

        public var description: String {
            switch self {
            case .notRIFFWAVE: return "not a WAV file (no RIFF/WAVE header)"
            case .missingChunk(let c): return "WAV file has no '\(c)' chunk"
            case .truncated(let what): return "WAV file is truncated (\(what))"
            case .unsupported(let what):
                return "unsupported WAV encoding: \(what); convert it with `sox IN.wav -b 16 -e signed-integer OUT.wav`"
            }
        }
    }

    /// Parses the chunks of `bytes` (the whole file, or at least up to the `data` chunk's header).
    /// Accepts WAVE_FORMAT_PCM and WAVE_FORMAT_EXTENSIBLE with the PCM sub-format, 16 or 32 bits,
    /// any channel count. A `data` size larger than the file (a recording cut short, or a
    /// streaming writer's 0xFFFFFFFF) is clamped to what is there.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws -> WAVHeader {
        func u32(_ o: Int) -> Int {
            Int(bytes[o]) | Int(bytes[o + 1]) << 8 | Int(bytes[o + 2]) << 16 | Int(bytes[o + 3]) << 24
        }
        func u16(_ o: Int) -> Int { Int(bytes[o]) | Int(bytes[o + 1]) << 8 }
        func tag(_ o: Int) -> [UInt8] { Array(bytes[o..<(o + 4)]) }

        guard bytes.count >= 12, tag(0) == Array("RIFF".utf8), tag(8) == Array("WAVE".utf8) else {
            throw ParseError.notRIFFWAVE
        }
        var fmt: (tag: Int, channels: Int, rate: Int, bits: Int)?
        var offset = 12
        while offset + 8 <= bytes.count {
            let id = tag(offset)
            let size = u32(offset + 4)
            let body = offset + 8
            if id == Array("fmt ".utf8) {
                guard size >= 16, body + 16 <= bytes.count else { throw ParseError.truncated("fmt chunk") }
                var formatTag = u16(body)
                if formatTag == 0xFFFE {
                    // WAVE_FORMAT_EXTENSIBLE: the real format is the sub-format GUID's first two bytes.
                    guard size >= 40, body + 40 <= bytes.count else { throw ParseError.truncated("extensible fmt chunk") }
                    formatTag = u16(body + 24)
                }
                fmt = (formatTag, u16(body + 2), u32(body + 4), u16(body + 14))
            } else if id == Array("data".utf8) {
                guard let f = fmt else { throw ParseError.missingChunk("fmt ") }
                guard f.tag == 1 else {
                    throw ParseError.unsupported(f.tag == 3 ? "32-bit float" : "format tag \(f.tag), not integer PCM")
                }
                let sampleFormat: PCMSampleFormat
                switch f.bits {
                case 16: sampleFormat = .s16
                case 32: sampleFormat = .s32
                default: throw ParseError.unsupported("\(f.bits)-bit samples (16 or 32 are read)")
                }
                guard f.channels >= 1 else { throw ParseError.unsupported("\(f.channels) channels") }
                guard f.rate >= 1 else { throw ParseError.unsupported("sample rate \(f.rate)") }
                let present = min(size, bytes.count - body)
                let frameBytes = sampleFormat.bytesPerSample * f.channels
                return WAVHeader(
                    format: sampleFormat, sampleRate: f.rate, channels: f.channels,
                    dataOffset: body, dataBytes: present - present % frameBytes)
            }
            // Chunks are padded to an even length.
            offset = body + size + (size & 1)
        }
        throw ParseError.missingChunk(fmt == nil ? "fmt " : "data")
    }

    public static func parse(_ bytes: [UInt8]) throws -> WAVHeader {
        try bytes.withUnsafeBytes { try parse($0) }
    }
}

extension WAVHeader {
    /// Meters the samples of this WAV in `file` (the whole file's bytes) with `meter`, reporting
    /// each completed window; the trailing partial window stays open in `meter` (call `flush`
    /// for it). Samples are read little-endian through one small scratch buffer, so any
    /// alignment and any host byte order work — the same `LevelMeter.feed` the capture uses.
    public func meter(_ file: UnsafeRawBufferPointer, with meter: inout LevelMeter, _ onWindow: (AudioLevel) -> Void) {
        let end = min(dataOffset + dataBytes, file.count)
        guard dataOffset < end else { return }
        let chunkFrames = max(1, 4096 / channels)
        let framesTotal = (end - dataOffset) / bytesPerFrame
        // One chunk loop for both sample widths; `feed` picks LevelMeter's overload for T.
        func chunks<T: FixedWidthInteger & BitwiseCopyable>(_: T.Type, _ feed: (UnsafeBufferPointer<T>) -> Void) {
            var scratch = [T](repeating: 0, count: chunkFrames * channels)
            var frame = 0
            while frame < framesTotal {
                let n = min(chunkFrames, framesTotal - frame)
                scratch.withUnsafeMutableBufferPointer { s in
                    let at = dataOffset + frame * bytesPerFrame
                    for i in 0..<(n * channels) {
                        s[i] = T(littleEndian: file.loadUnaligned(fromByteOffset: at + MemoryLayout<T>.size * i, as: T.self))
                    }
                    feed(UnsafeBufferPointer(rebasing: s[0..<(n * channels)]))
                }
                frame += n
            }
        }
        switch format {
        case .s16: chunks(Int16.self) { meter.feed($0, channels: channels, onWindow) }
        case .s32: chunks(Int32.self) { meter.feed($0, channels: channels, onWindow) }
        }
    }
}
