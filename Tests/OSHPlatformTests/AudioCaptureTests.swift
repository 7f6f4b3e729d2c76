import Foundation
import OSHCore
import OSHPlatform
import XCTest

/// ALSACapture through the real libasound: each reference WAV replayed by ALSA's `file` plugin
/// (null slave) from a private configuration, read non-blocking on the event loop, metered, and
/// compared with the SoX reference (`Tests/OSHCoreTests/Fixtures/audio`).
final class AudioCaptureTests: XCTestCase {
    private var dir = ""

    override func setUpWithError() throws {
        var template = Array("/tmp/osh-audio-XXXXXX".utf8CString)
        guard let p = mkdtemp(&template) else { throw SystemError.last("mkdtemp") }
        dir = String(cString: p)
    }

    override func tearDown() {
        if !dir.isEmpty { try? FileManager.default.removeItem(atPath: dir) }
    }

    private static let audioFixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("OSHCoreTests/Fixtures/audio")

    private struct Reference {
        var rms: Double, peak: Double
    }

    /// The 100 ms rows of audio_levels.csv for `file` (`-inf` = the −160 floor), in window order.
    private func referenceWindows(_ file: String) throws -> [Reference] {
        let text = try String(contentsOf: Self.audioFixtures.appendingPathComponent("audio_levels.csv"), encoding: .utf8)
        return text.split(whereSeparator: \.isNewline).dropFirst().compactMap { line in
            let c = line.split(separator: ",")
            guard c[0] == file, c[1] != "whole" else { return nil }
            func db(_ s: Substring) -> Double { s == "-inf" ? -160 : Double(s) ?? .nan }
            return Reference(rms: db(c[6]), peak: db(c[7]))
        }
    }

    /// Captures the whole of `wavPath` through ALSA and meters it in 100 ms windows.
    private func captureLevels(
        _ wavPath: String, window: Double = 0.1
    ) throws
        -> (levels: [AudioLevel], format: AudioCaptureFormat?, capture: ALSACapture)
    {
        let replay = try ALSAFileReplay.prepare(wavPath: wavPath, directory: dir)
        let loop = try EventLoop()
        let capture = ALSACapture(loop: loop, device: replay.device, request: replay.request, configText: replay.configText)
        // The null slave's descriptor cannot be epolled, so the capture is paced by a timer: faster than real time here.
        capture.pacing = 0.0005
        var meter = LevelMeter(window: window, sampleRate: replay.header.sampleRate)
        var levels: [AudioLevel] = []
        var remaining = replay.header.frames
        var format: AudioCaptureFormat?
        capture.onState = { s in
            if case .capturing(let f) = s { format = f }
        }
        capture.onChunk = { chunk in
            // Past the file's end the plugin repeats its last buffer: take exactly the file's frames.
            let n = min(chunk.frames, remaining) * chunk.channels
            remaining -= n / chunk.channels
            switch chunk.samples {
            case .s16(let s): meter.feed(UnsafeBufferPointer(rebasing: s[0..<n]), channels: chunk.channels) { levels.append($0) }
            case .s32(let s): meter.feed(UnsafeBufferPointer(rebasing: s[0..<n]), channels: chunk.channels) { levels.append($0) }
            }
            if remaining == 0 { capture.stop() }
        }
        capture.start()
        let deadline = Clock.monotonicNanoseconds() + 5_000_000_000
        while remaining > 0, Clock.monotonicNanoseconds() < deadline, capture.state != .stopped {
            _ = try loop.runOnce(timeoutMs: 100)
        }
        XCTAssertEqual(remaining, 0, "\(wavPath): capture did not deliver the whole file (state: \(capture.state))")
        capture.stop()
        XCTAssertEqual(loop.sourceCount, 0, "stop() leaves nothing on the loop")
        return (levels, format, capture)
    }

    func testReferenceWAVsThroughLibasoundMatchSoX() throws {
        let files = [
            "sine_1k_-20dBFS.wav", "silence.wav", "sine_1k_clipped_+6dB.wav", "sine_1k_0dBFS.wav",
            "sine_1k_-6dBFS.wav", "square_1k_0dBFS.wav", "pinknoise_vol-20dB.wav",
        ]
        for file in files {
            let (levels, format, capture) = try captureLevels(Self.audioFixtures.appendingPathComponent(file).path)
            let want = try referenceWindows(file)
            XCTAssertEqual(want.count, 10)
            XCTAssertEqual(levels.count, want.count, file)
            for (i, (got, ref)) in zip(levels, want).enumerated() {
                XCTAssertEqual(got.rmsdB, ref.rms, accuracy: 0.05, "\(file) window \(i) RMS")
                XCTAssertEqual(got.peakdB, ref.peak, accuracy: 0.05, "\(file) window \(i) peak")
            }
            XCTAssertEqual(
                format,
                AudioCaptureFormat(
                    sampleFormat: .s16, sampleRate: 48000, channels: 1,
                    periodFrames: 960, bufferFrames: 3840), file)
            XCTAssertEqual(capture.xruns, 0)
            if file == "silence.wav" { XCTAssertTrue(levels.allSatisfy { $0.rmsdB == -160 && $0.peakdB == -160 }) }
            if file.contains("clipped") { XCTAssertTrue(levels.allSatisfy { $0.peakdB == 0 }) }
        }
    }

    /// A WAV with the reference sine as S32 in the first of two channels and a full-scale
    /// square in the second: the S32 read path, and only the first channel metered.
    func testS32StereoFirstChannelThroughLibasound() throws {
        let src = try Data(contentsOf: Self.audioFixtures.appendingPathComponent("sine_1k_-20dBFS.wav"))
        let h = try WAVHeader.parse([UInt8](src))
        var data: [UInt8] = []
        for i in 0..<h.frames {
            let lo = src[h.dataOffset + 2 * i], hi = src[h.dataOffset + 2 * i + 1]
            data += [0, 0, lo, hi]  // S16 << 16 = S32
            data += i % 2 == 0 ? [0xFF, 0xFF, 0xFF, 0x7F] : [0, 0, 0, 0x80]  // the loud second channel
        }
        func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
        let fmt = le16(1) + le16(2) + le32(48000) + le32(48000 * 8) + le16(8) + le16(32)
        let body = Array("WAVEfmt ".utf8) + le32(16) + fmt + Array("data".utf8) + le32(data.count) + data
        let path = dir + "/sine32_stereo.wav"
        try Data(Array("RIFF".utf8) + le32(body.count) + body).write(to: URL(fileURLWithPath: path))

        let (levels, format, _) = try captureLevels(path, window: 0.25)
        XCTAssertEqual(format?.sampleFormat, .s32)
        XCTAssertEqual(format?.channels, 2)
        XCTAssertEqual(levels.count, 4)
        for l in levels {
            XCTAssertEqual(l.frames, 12000)
            XCTAssertEqual(l.rmsdB, -23.010204, accuracy: 1e-4)
            XCTAssertEqual(l.peakdB, -19.999470, accuracy: 1e-4)
        }
    }

    /// A SIGHUP replaces the agent: the new replay writes the raw copy before the old one is
    /// released, and the old one's cleanup must leave the new copy alone (the soak lost audio
    /// after every reload until this).
    func testAReplacedReplayDoesNotDeleteItsSuccessorsCopy() throws {
        let wav = Self.audioFixtures.appendingPathComponent("sine_1k_-6dBFS.wav").path
        let old = try ALSAFileReplay.prepare(wavPath: wav, directory: dir)
        let new = try ALSAFileReplay.prepare(wavPath: wav, directory: dir)
        XCTAssertEqual(old.rawPath, new.rawPath)
        old.remove()
        XCTAssertEqual(access(new.rawPath, R_OK), 0, "the successor's raw copy is still there")
        new.remove()
        XCTAssertNotEqual(access(new.rawPath, F_OK), 0, "its own copy goes")
    }

    /// A consumer that stops (or restarts) the capture from inside the chunk callback, while it
    /// is still reading the samples: the buffer must outlive the callback.
    func testStopAndRestartFromInsideTheCallback() throws {
        let replay = try ALSAFileReplay.prepare(
            wavPath: Self.audioFixtures.appendingPathComponent("sine_1k_-6dBFS.wav").path,
            directory: dir)
        let loop = try EventLoop()
        let capture = ALSACapture(loop: loop, device: replay.device, request: replay.request, configText: replay.configText)
        capture.pacing = 0.0005
        var chunks = 0
        var peaks: [Int16] = []
        capture.onChunk = { chunk in
            chunks += 1
            guard case .s16(let s) = chunk.samples else { return XCTFail("S16 expected") }
            capture.stop()
            if chunks == 1 { capture.start() }  // reopen while the first buffer is still being read
            peaks.append(s.max() ?? 0)  // still readable after stop()
        }
        capture.start()
        let deadline = Clock.monotonicNanoseconds() + 2_000_000_000
        while chunks < 2, Clock.monotonicNanoseconds() < deadline { _ = try loop.runOnce(timeoutMs: 50) }
        XCTAssertEqual(chunks, 2)
        XCTAssertEqual(peaks, [16423, 16423])
        XCTAssertEqual(capture.state, .stopped)
        XCTAssertEqual(capture.reopenCount, 1)
        XCTAssertEqual(loop.sourceCount, 0)
    }

    func testMissingDeviceIsRetriedWithBackoff() throws {
        let loop = try EventLoop()
        // An empty private configuration: no PCM of that name exists.
        let capture = ALSACapture(loop: loop, device: "osh_no_such_pcm", configText: "")
        capture.backoff = Backoff(initial: 0.01, maximum: 0.02)
        var states: [String] = []
        capture.onState = { states.append($0.description) }
        capture.start()
        let deadline = Clock.monotonicNanoseconds() + 2_000_000_000
        while capture.openAttempts < 3, Clock.monotonicNanoseconds() < deadline { _ = try loop.runOnce(timeoutMs: 50) }
        XCTAssertGreaterThanOrEqual(capture.openAttempts, 3)
        guard case .disconnected(let why, let wait) = capture.state else { return XCTFail("state \(capture.state)") }
        XCTAssertTrue(why.contains("'osh_no_such_pcm'"), why)
        XCTAssertTrue(why.contains("arecord -L"), why)  // says what to do
        XCTAssertEqual(wait, 0.02)
        XCTAssertEqual(loop.sourceCount, 1, "only the retry timer")
        capture.stop()
        XCTAssertEqual(capture.state, .stopped)
        XCTAssertEqual(states.last, "stopped")
    }

    func testCaptureDeviceListDoesNotFail() {
        // This machine may have no sound card; the call must still return (the default/null hints at least).
        let devices = ALSADevices.captureDevices()
        XCTAssertFalse(devices.contains { $0.name == "null" })
        for d in devices { XCTAssertFalse(d.name.isEmpty) }
    }
}
