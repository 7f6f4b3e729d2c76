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
            onChunk?(
                AudioChunk(
                    samples: .s16($0), channels: channels, frames: samples.count / channels,
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
        input.sink = { got.append(($0, $1.rmsdB, $1.peakdB)) }
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

    /// A scratch directory for ALSA's file plugin (removed after the test) and the −6 dBFS sine fixture.
    private func scratchDirectoryAndSine() throws -> (dir: String, wav: String) {
        var template = Array("/tmp/osh-audioin-XXXXXX".utf8CString)
        guard let p = mkdtemp(&template) else { throw SystemError.last("mkdtemp") }
        let dir = String(cString: p)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        let wav = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("OSHCoreTests/Fixtures/audio/sine_1k_-6dBFS.wav").path
        return (dir, wav)
    }

    /// The demo's path: a WAV replayed through ALSA's file plugin in real time, metered.
    func testReplayedWAVThroughALSA() throws {
        let (dir, wav) = try scratchDirectoryAndSine()
        let loop = try EventLoop()
        let input = try AudioInput(loop: loop, replayingWAV: wav, directory: dir, window: 0.1)
        var got: [(Double, Double, Double)] = []
        input.sink = { got.append(($0, $1.rmsdB, $1.peakdB)) }
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
        XCTAssertEqual(input.format?.sampleRate, nil)  // stopped
        XCTAssertEqual(loop.sourceCount, 0)
    }

    /// A replay loops from the start: a 0.3 s WAV (0.1 s silence, 0.2 s sine) gives the same
    /// three windows again past its end.
    func testReplayLoops() throws {
        let (dir, sine) = try scratchDirectoryAndSine()
        let src = try Data(contentsOf: URL(fileURLWithPath: sine))
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
        input.sink = { got.append(($0, $1.rmsdB, $1.peakdB)) }
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

    /// A USB microphone unplugged for a while, in the journal: the loss once with its first
    /// retry, the failed reopen once (not again at 1, 2, 4, 8, 10 s) and one line when levels
    /// resume; the state text still says when the next attempt is at every step.
    func testAnUnplugIsLoggedOnceNotAtEveryRetry() {
        let cap = ScriptedAudioCapture()
        let input = AudioInput(capture: cap, device: "hw:1,0", window: 0.1)
        let f = format(rate: 48000, period: 960)
        let gone = "ALSA device 'hw:1,0' was disconnected"
        let missing =
            "ALSA snd_pcm_open 'hw:1,0': No such device; is it plugged in? list capture devices with `arecord -L` or `osh-edge probe`"
        var states: [String] = []
        let capture = LogCapture()
        defer { capture.stop() }
        input.start()
        cap.set(.capturing(f))
        cap.set(.disconnected(gone, retryIn: 0.5))
        states.append(input.stateText)
        for wait in [1.0, 2, 4, 8, 10, 10] {
            cap.set(.disconnected(missing, retryIn: wait))
            states.append(input.stateText)
        }
        XCTAssertEqual(input.lastError, missing)
        cap.set(.capturing(f))
        cap.push([Int16](repeating: 3277, count: 4800), rate: 48000, at: 1_000_000_000)
        XCTAssertEqual(input.windowsReported, 1, "levels resume")
        // A second outage is news again.
        cap.set(.disconnected(gone, retryIn: 0.5))
        cap.set(.disconnected(gone, retryIn: 1))
        cap.set(.capturing(f))
        input.stop()
        capture.stop()

        XCTAssertEqual(
            capture.lines,
            [
                "audio: hw:1,0: \(f); 4800-frame windows (0.1 s)",
                "audio: \(gone); levels pause, retrying in 0.5 s",
                "audio: \(missing)",
                "audio: hw:1,0: back, \(f); levels resume",
                "audio: \(gone); levels pause, retrying in 0.5 s",
                "audio: hw:1,0: back, \(f); levels resume",
            ])
        XCTAssertEqual(states, ["\(gone); retrying in 0.5 s"] + [1.0, 2, 4, 8, 10, 10].map { "\(missing); retrying in \($0) s" })
    }

    /// The same through the real libasound: ALSA's `file` plugin cannot open its input while the
    /// file is missing (a device not plugged in yet), so every retry fails alike; one line says so,
    /// and one line when it captures. Stopped and started without its input again: the failure
    /// once more, and "back" once.
    func testAMissingALSADeviceIsLoggedOnceThroughLibasound() throws {
        let (dir, wav) = try scratchDirectoryAndSine()
        let replay = try ALSAFileReplay.prepare(wavPath: wav, directory: dir)
        let loop = try EventLoop()
        let alsa = ALSACapture(loop: loop, device: replay.device, request: replay.request, configText: replay.configText)
        alsa.backoff = Backoff(initial: 0.01, maximum: 0.02)
        alsa.pacing = 0.0005
        let input = AudioInput(capture: alsa, device: replay.device, window: 0.1)
        func unplug() { XCTAssertEqual(rename(replay.rawPath, replay.rawPath + ".away"), 0) }
        func plug() { XCTAssertEqual(rename(replay.rawPath + ".away", replay.rawPath), 0) }
        func run(until: () -> Bool) throws {
            let deadline = Clock.monotonicNanoseconds() + 3_000_000_000
            while !until(), Clock.monotonicNanoseconds() < deadline { _ = try loop.runOnce(timeoutMs: 20) }
        }
        let capture = LogCapture()
        defer { capture.stop() }
        unplug()
        input.start()
        try run { alsa.openAttempts >= 5 }
        XCTAssertGreaterThanOrEqual(alsa.openAttempts, 5, "several retries")
        XCTAssertTrue(input.stateText.hasSuffix("; retrying in 0.02 s"), input.stateText)
        plug()
        try run { input.windowsReported >= 1 }
        XCTAssertEqual(input.windowsReported, 1)
        input.stop()
        unplug()
        let attempts = alsa.openAttempts
        input.start()
        try run { alsa.openAttempts >= attempts + 4 }
        plug()
        try run { input.windowsReported >= 2 }
        input.stop()
        capture.stop()

        let lines = capture.lines
        XCTAssertEqual(lines.count, 4, "\(lines)")
        guard lines.count == 4 else { return }
        XCTAssertTrue(lines[0].hasPrefix("audio: ALSA snd_pcm_open '\(replay.device)': "), lines[0])
        XCTAssertTrue(lines[0].hasSuffix("; retrying in 0.01 s"), lines[0])
        XCTAssertTrue(lines[1].hasPrefix("audio: \(replay.device): S16_LE 48000 Hz 1 ch"), lines[1])
        XCTAssertTrue(lines[1].hasSuffix("; 4800-frame windows (0.1 s)"), lines[1])
        XCTAssertEqual(lines[2], lines[0])
        XCTAssertTrue(lines[3].hasPrefix("audio: \(replay.device): back, S16_LE 48000 Hz 1 ch"), lines[3])
        XCTAssertTrue(lines[3].hasSuffix("; levels resume"), lines[3])
        XCTAssertEqual(loop.sourceCount, 0)
    }
}
