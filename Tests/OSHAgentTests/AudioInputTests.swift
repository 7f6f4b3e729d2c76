import Foundation
import OSHAgent
import OSHCore
import OSHPlatform
import XCTest

/// The one mocking AudioCapture: the test opens it with a format and pushes chunks.
final class ScriptedAudioCapture: AudioCapture {
    var onChunk: ((AudioChunk) -> Void)?
    var onState: ((AudioCaptureState) -> Void)?
    private(set) var state: AudioCaptureState = .stopped
    var startCount = 0

    func start() { startCount += 1 }
    func stop() { set(.stopped) }

    func set(_ s: AudioCaptureState) {
        state = s
        onState?(s)
    }

    func push(_ samples: [Int16], channels: Int = 1, rate: Int, at ns: UInt64) {
        samples.withUnsafeBufferPointer {
            onChunk?(AudioChunk(samples: .s16($0), channels: channels, frames: samples.count / channels,
                                sampleRate: rate, readAtNanos: ns))
        }
    }
}

final class AudioInputTests: XCTestCase {
    private func format(rate: Int, period: Int) -> AudioCaptureFormat {
        AudioCaptureFormat(sampleFormat: .s16, sampleRate: rate, channels: 1, periodFrames: period, bufferFrames: 4 * period)
    }

    func testWindowsAreReportedWithTheirEndTime() {
        let cap = ScriptedAudioCapture()
        let input = AudioInput(capture: cap, device: "scripted", window: 0.1)
        var got: [(Double, Double, Double)] = []
        input.sink = { got.append(($0, $1, $2)) }
        input.start()
        XCTAssertEqual(cap.startCount, 1)
        cap.set(.capturing(format(rate: 48000, period: 1000)))
        // 5 reads of 1000 frames at amplitude 3277 (−20 dBFS peak): the window closes 200 frames into the 5th.
        for k in 1...5 { cap.push([Int16](repeating: 3277, count: 1000), rate: 48000, at: UInt64(k) * 1_000_000_000) }
        XCTAssertEqual(got.count, 1)
        XCTAssertEqual(got[0].0, 5.0 - 200.0 / 48000, accuracy: 1e-9)
        XCTAssertEqual(got[0].1, 20 * log10(3277.0 / 32768), accuracy: 1e-9)
        XCTAssertEqual(got[0].2, 20 * log10(3277.0 / 32768), accuracy: 1e-9)
        XCTAssertEqual(input.format?.sampleRate, 48000)

        // A reopened device at 16 kHz starts a fresh 1600-frame window (the 200 pending frames are dropped).
        cap.set(.disconnected("gone", retryIn: 0.5))
        XCTAssertNil(input.format)
        XCTAssertEqual(input.stateText, "gone; retrying in 0.5 s")
        XCTAssertEqual(input.lastError, "gone")
        cap.set(.capturing(format(rate: 16000, period: 320)))
        cap.push([Int16](repeating: 0, count: 1600), rate: 16000, at: 9_000_000_000)
        XCTAssertEqual(got.count, 2)
        XCTAssertEqual(got[1].0, 9.0, accuracy: 1e-9)
        XCTAssertEqual(got[1].1, -160)
        XCTAssertEqual(input.windowsReported, 2)
        input.stop()
        XCTAssertEqual(input.stateText, "stopped")
    }

    func testWindowIsClamped() {
        XCTAssertEqual(AudioInput(capture: ScriptedAudioCapture(), device: "x", window: 0.01).window, 0.1)
        XCTAssertEqual(AudioInput(capture: ScriptedAudioCapture(), device: "x", window: 3).window, 1.0)
        XCTAssertEqual(AudioInput(capture: ScriptedAudioCapture(), device: "x", window: 0.5).window, 0.5)
    }

    /// The demo's path: a WAV replayed through ALSA's file plugin in real time, metered.
    func testReplayedWAVThroughALSA() throws {
        var template = Array("/tmp/osh-audioin-XXXXXX".utf8CString)
        guard let p = mkdtemp(&template) else { throw SystemError.last("mkdtemp") }
        let dir = String(cString: p)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let wav = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("OSHCoreTests/Fixtures/audio/sine_1k_-6dBFS.wav").path
        let loop = try EventLoop()
        let input = try AudioInput(loop: loop, replayingWAV: wav, directory: dir, window: 0.1)
        var got: [(Double, Double, Double)] = []
        input.sink = { got.append(($0, $1, $2)) }
        input.start()
        let started = Double(Clock.monotonicNanoseconds()) / 1e9
        let deadline = Clock.monotonicNanoseconds() + 3_000_000_000
        while got.count < 3, Clock.monotonicNanoseconds() < deadline { _ = try loop.runOnce(timeoutMs: 50) }
        input.stop()
        XCTAssertEqual(got.count, 3)
        for (t, rms, peak) in got {
            XCTAssertEqual(rms, -9.01, accuracy: 0.05)
            XCTAssertEqual(peak, -6.00, accuracy: 0.05)
            XCTAssertGreaterThan(t, started)
        }
        // Real-time pacing: three 100 ms windows take about 300 ms (loose bound: shared CI machines).
        let elapsed = Double(Clock.monotonicNanoseconds()) / 1e9 - started
        XCTAssertGreaterThan(elapsed, 0.25)
        XCTAssertEqual(input.format?.sampleRate, nil) // stopped
        XCTAssertEqual(loop.sourceCount, 0)
    }

    /// A replay loops from the start: a 0.3 s WAV (0.1 s silence, 0.2 s sine) gives the same
    /// three windows again past its end.
    func testReplayLoops() throws {
        var template = Array("/tmp/osh-audioin-XXXXXX".utf8CString)
        guard let p = mkdtemp(&template) else { throw SystemError.last("mkdtemp") }
        let dir = String(cString: p)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let src = try Data(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("OSHCoreTests/Fixtures/audio/sine_1k_-6dBFS.wav"))
        // The 44-byte header with the data size patched to 0.3 s; 0.1 s of silence, then 0.2 s of sine.
        var wav = [UInt8](src.prefix(44)) + [UInt8](repeating: 0, count: 9600) + [UInt8](src[44..<(44 + 19200)])
        wav[40] = UInt8(28800 & 0xFF)
        wav[41] = UInt8(28800 >> 8)
        wav[42] = 0
        wav[43] = 0
        let path = dir + "/short.wav"
        try Data(wav).write(to: URL(fileURLWithPath: path))
        let loop = try EventLoop()
        let input = try AudioInput(loop: loop, replayingWAV: path, directory: dir, window: 0.1)
        var got: [(Double, Double, Double)] = []
        input.sink = { got.append(($0, $1, $2)) }
        input.start()
        let deadline = Clock.monotonicNanoseconds() + 3_000_000_000
        while got.count < 7, Clock.monotonicNanoseconds() < deadline { _ = try loop.runOnce(timeoutMs: 50) }
        input.stop()
        XCTAssertEqual(got.count, 7)
        for (i, (_, rms, peak)) in got.enumerated() {
            XCTAssertEqual(rms, i % 3 == 0 ? -160 : -9.01, accuracy: 0.05, "window \(i)")
            XCTAssertEqual(peak, i % 3 == 0 ? -160 : -6.00, accuracy: 0.05, "window \(i)")
        }
        for i in 1..<got.count { XCTAssertGreaterThan(got[i].0, got[i - 1].0) }
        XCTAssertNil(input.lastError)
        XCTAssertEqual(loop.sourceCount, 0)
    }
}
