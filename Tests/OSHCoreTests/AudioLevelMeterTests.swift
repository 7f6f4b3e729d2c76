import Foundation
import OSHCore
import XCTest

/// Reads a binary fixture from `Tests/OSHCoreTests/Fixtures/…`.
func fixtureBytes(_ relativePath: String, file: StaticString = #filePath, line: UInt = #line) throws -> [UInt8] {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures").appendingPathComponent(relativePath)
    guard let data = FileManager.default.contents(atPath: url.path) else {
        XCTFail("missing fixture \(url.path)", file: file, line: line)
        throw CocoaError(.fileNoSuchFile)
    }
    return [UInt8](data)
}

/// One row of `Fixtures/audio/audio_levels.csv` (SoX stats and the same computed in Python).
struct AudioReferenceRow {
    var file: String
    var windowStart: Double?  // nil = the whole file
    var frames: Int
    var soxRMS: Double, soxPeak: Double
    var pyRMS: Double, pyPeak: Double

    /// All rows; `-inf` (digital silence) becomes the meter's −160 dB floor.
    static func load() throws -> [AudioReferenceRow] {
        let text = try fixture("audio/audio_levels.csv")
        func db(_ s: Substring) -> Double { s == "-inf" ? LevelMeter.floorDB : Double(s) ?? .nan }
        return text.split(whereSeparator: \.isNewline).dropFirst().map { line in
            let c = line.split(separator: ",", omittingEmptySubsequences: false)
            return AudioReferenceRow(
                file: String(c[0]), windowStart: c[1] == "whole" ? nil : Double(c[1]),
                frames: Int(c[3]) ?? 0, soxRMS: db(c[4]), soxPeak: db(c[5]),
                pyRMS: db(c[6]), pyPeak: db(c[7]))
        }
    }
}

/// The samples of a reference WAV (mono S16).
func referenceSamples(_ name: String) throws -> (WAVHeader, [Int16]) {
    let bytes = try fixtureBytes("audio/\(name)")
    let h = try WAVHeader.parse(bytes)
    var s = [Int16](repeating: 0, count: h.dataBytes / 2)
    for i in s.indices {
        s[i] = Int16(bitPattern: UInt16(bytes[h.dataOffset + 2 * i]) | UInt16(bytes[h.dataOffset + 2 * i + 1]) << 8)
    }
    return (h, s)
}

final class AudioLevelMeterTests: XCTestCase {
    /// Feeds `samples` in `chunk`-frame buffers (periods that do not line up with windows).
    private func meter(_ samples: [Int16], channels: Int = 1, windowFrames: Int, chunk: Int) -> [AudioLevel] {
        var m = LevelMeter(windowFrames: windowFrames)
        var out: [AudioLevel] = []
        samples.withUnsafeBufferPointer { all in
            var i = 0
            while i < all.count {
                let n = min(chunk * channels, all.count - i)
                m.feed(UnsafeBufferPointer(rebasing: all[i..<(i + n)]), channels: channels) { out.append($0) }
                i += n
            }
        }
        return out
    }

    func testEveryReferenceRowWithin005dB() throws {
        let rows = try AudioReferenceRow.load()
        XCTAssertEqual(rows.count, 77)
        for file in Set(rows.map(\.file)).sorted() {
            let (h, samples) = try referenceSamples(file)
            XCTAssertEqual(h.sampleRate, 48000)
            XCTAssertEqual(h.frames, 48000)
            let windows = meter(
                samples, windowFrames: LevelMeter.windowFrames(seconds: 0.1, sampleRate: h.sampleRate),
                chunk: 1024)
            let whole = meter(
                samples, windowFrames: LevelMeter.windowFrames(seconds: 1.0, sampleRate: h.sampleRate),
                chunk: 960)
            XCTAssertEqual(windows.count, 10, file)
            XCTAssertEqual(whole.count, 1, file)
            for row in rows where row.file == file {
                let got: AudioLevel
                if let start = row.windowStart {
                    got = windows[Int((start * 10).rounded())]
                } else {
                    got = whole[0]
                }
                XCTAssertEqual(got.frames, row.frames)
                let what = "\(file) @ \(row.windowStart.map { "\($0)" } ?? "whole")"
                XCTAssertEqual(got.rmsdB, row.soxRMS, accuracy: 0.05, "SoX RMS, \(what)")
                XCTAssertEqual(got.peakdB, row.soxPeak, accuracy: 0.05, "SoX peak, \(what)")
                // Tighter against the 6-decimal values: the formula, not just the rounding, agrees.
                XCTAssertEqual(got.rmsdB, row.pyRMS, accuracy: 1e-4, "RMS, \(what)")
                XCTAssertEqual(got.peakdB, row.pyPeak, accuracy: 1e-4, "peak, \(what)")
            }
        }
    }

    func testSilenceIsTheFloorAndClippingIsZero() throws {
        let silence = meter(try referenceSamples("silence.wav").1, windowFrames: 4800, chunk: 960)
        XCTAssertEqual(silence.count, 10)
        for w in silence {
            XCTAssertEqual(w.rmsdB, -160)
            XCTAssertEqual(w.peakdB, -160)
        }
        for w in meter(try referenceSamples("sine_1k_clipped_+6dB.wav").1, windowFrames: 4800, chunk: 960) {
            XCTAssertEqual(w.peakdB, 0.0)  // −32768 is exactly full scale
        }
    }

    func testConventionIsSoXNotAES17() throws {
        // A 0 dBFS sine reads −3.01 dB RMS; a full-scale square 0 dB.
        let sine = meter(try referenceSamples("sine_1k_0dBFS.wav").1, windowFrames: 48000, chunk: 4800)[0]
        XCTAssertEqual(sine.rmsdB, -3.01, accuracy: 0.005)
        let square = meter(try referenceSamples("square_1k_0dBFS.wav").1, windowFrames: 48000, chunk: 4800)[0]
        XCTAssertEqual(square.rmsdB, 0, accuracy: 0.005)
    }

    func testS32MetersLikeS16() throws {
        let (_, s16) = try referenceSamples("pinknoise_vol-20dB.wav")
        let s32 = s16.map { Int32($0) << 16 }
        let a = meter(s16, windowFrames: 4800, chunk: 1000)
        var b: [AudioLevel] = []
        var m = LevelMeter(windowFrames: 4800)
        s32.withUnsafeBufferPointer { p in m.feed(p) { b.append($0) } }
        XCTAssertEqual(a.count, b.count)
        for (x, y) in zip(a, b) {
            XCTAssertEqual(x.rmsdB, y.rmsdB, accuracy: 1e-9)
            XCTAssertEqual(x.peakdB, y.peakdB, accuracy: 1e-9)
        }
        var full = LevelMeter(windowFrames: 2)
        var out: [AudioLevel] = []
        [Int32.min, 0].withUnsafeBufferPointer { p in full.feed(p) { out.append($0) } }
        XCTAssertEqual(out.first?.peakdB, 0.0)
    }

    func testOnlyTheFirstChannelIsMetered() throws {
        let (_, sine) = try referenceSamples("sine_1k_-20dBFS.wav")
        var stereo: [Int16] = []
        for (i, s) in sine.enumerated() {
            stereo.append(s)
            stereo.append(i % 2 == 0 ? Int16.max : Int16.min)  // a loud second channel that must not count
        }
        let mono = meter(sine, windowFrames: 4800, chunk: 512)
        let first = meter(stereo, channels: 2, windowFrames: 4800, chunk: 512)
        XCTAssertEqual(mono, first)
        XCTAssertEqual(first[0].rmsdB, -23.01, accuracy: 0.005)
    }

    func testWindowBookkeeping() {
        XCTAssertEqual(LevelMeter.windowFrames(seconds: 0.1, sampleRate: 48000), 4800)
        XCTAssertEqual(LevelMeter.windowFrames(seconds: 0.05, sampleRate: 48000), 4800)  // clamped to 0.1 s
        XCTAssertEqual(LevelMeter.windowFrames(seconds: 5, sampleRate: 44100), 44100)  // clamped to 1 s
        XCTAssertEqual(LevelMeter.windowFrames(seconds: .nan, sampleRate: 16000), 1600)
        XCTAssertEqual(LevelMeter.windowFrames(seconds: 0.25, sampleRate: 16000), 4000)

        // A 960-frame period crossing a 4800-frame window boundary: the window ends mid-buffer.
        var m = LevelMeter(windowFrames: 4800)
        let period = [Int16](repeating: 1000, count: 1000)
        var seen: [AudioLevel] = []
        for _ in 0..<5 { period.withUnsafeBufferPointer { m.feed($0) { seen.append($0) } } }
        XCTAssertEqual(seen.count, 1)
        XCTAssertEqual(seen[0].endFrame, 4800)
        XCTAssertEqual(seen[0].framesAfter, 200)
        XCTAssertEqual(m.pendingFrames, 200)
        XCTAssertEqual(seen[0].rmsdB, 20 * log10(1000.0 / 32768), accuracy: 1e-9)
        m.flush { seen.append($0) }
        XCTAssertEqual(seen.count, 2)
        XCTAssertEqual(seen[1].frames, 200)
        XCTAssertEqual(seen[1].framesAfter, 0)
        m.flush { _ in XCTFail("nothing left to flush") }
        // A trailing half frame of a stereo buffer is ignored, not read past.
        var s = LevelMeter(windowFrames: 1)
        var n = 0
        [Int16(5), 6, 7].withUnsafeBufferPointer { s.feed($0, channels: 2) { _ in n += 1 } }
        XCTAssertEqual(n, 1)
    }

    // MARK: WAV header

    private func wav(
        tag: UInt16 = 1, channels: UInt16 = 1, rate: UInt32 = 48000, bits: UInt16 = 16,
        extensible: Bool = false, extraChunk: [UInt8]? = nil, dataSize: UInt32? = nil,
        data: [UInt8]
    ) -> [UInt8] {
        func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
        let align = channels * bits / 8
        var fmt =
            le16(extensible ? 0xFFFE : tag) + le16(channels) + le32(rate) + le32(rate * UInt32(align))
            + le16(align) + le16(bits)
        if extensible {
            fmt +=
                le16(22) + le16(bits) + le32(0) + le16(tag)
                + [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
        }
        var body = Array("WAVE".utf8) + Array("fmt ".utf8) + le32(UInt32(fmt.count)) + fmt
        if let extra = extraChunk {
            body += Array("LIST".utf8) + le32(UInt32(extra.count)) + extra + (extra.count % 2 == 1 ? [0] : [])
        }
        body += Array("data".utf8) + le32(dataSize ?? UInt32(data.count)) + data
        return Array("RIFF".utf8) + le32(UInt32(body.count)) + body
    }

    func testWAVHeaderVariants() throws {
        let ref = try WAVHeader.parse(try fixtureBytes("audio/sine_1k_-20dBFS.wav"))
        XCTAssertEqual(ref, WAVHeader(format: .s16, sampleRate: 48000, channels: 1, dataOffset: 44, dataBytes: 96000))

        let ext = try WAVHeader.parse(wav(channels: 2, rate: 16000, bits: 32, extensible: true, data: [UInt8](repeating: 0, count: 16)))
        XCTAssertEqual(ext.format, .s32)
        XCTAssertEqual(ext.channels, 2)
        XCTAssertEqual(ext.sampleRate, 16000)
        XCTAssertEqual(ext.frames, 2)

        // An odd-sized chunk before data is padded; the data offset follows the pad byte.
        let odd = try WAVHeader.parse(wav(extraChunk: [1, 2, 3], data: [1, 0, 2, 0]))
        XCTAssertEqual(odd.dataOffset, 12 + 8 + 16 + 8 + 4 + 8)
        XCTAssertEqual(odd.frames, 2)

        // A streaming writer's size, and a partial last frame, are clamped to whole frames present.
        let cut = try WAVHeader.parse(wav(channels: 2, dataSize: 0xFFFF_FFFF, data: [1, 0, 2, 0, 3]))
        XCTAssertEqual(cut.dataBytes, 4)

        XCTAssertThrowsError(try WAVHeader.parse(wav(tag: 3, bits: 32, data: []))) {
            XCTAssertEqual($0 as? WAVHeader.ParseError, .unsupported("32-bit float"))
        }
        XCTAssertThrowsError(try WAVHeader.parse(wav(bits: 24, data: []))) {
            XCTAssertEqual($0 as? WAVHeader.ParseError, .unsupported("24-bit samples (16 or 32 are read)"))
        }
        XCTAssertThrowsError(try WAVHeader.parse(Array("RIFX....WAVE".utf8))) {
            XCTAssertEqual($0 as? WAVHeader.ParseError, .notRIFFWAVE)
        }
        XCTAssertThrowsError(try WAVHeader.parse(Array("RIFF\u{0}\u{0}\u{0}\u{0}WAVE".utf8))) {
            XCTAssertEqual($0 as? WAVHeader.ParseError, .missingChunk("fmt "))
        }
        // Every truncation of a valid header fails cleanly (no trap).
        let full = wav(extensible: true, data: [0, 0])
        for n in 0..<full.count { _ = try? WAVHeader.parse(Array(full[0..<n])) }
    }
}
