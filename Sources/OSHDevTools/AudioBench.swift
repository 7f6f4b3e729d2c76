import OSHCore
import OSHPlatform
#if canImport(Glibc)
import Glibc
#endif
import OSHAgent
import OSHSimulation

/// `osh-edge-dev bench audio`: the CPU the `audio_level` meter costs per second of audio.
///
/// - `meter`: `LevelMeter.feed` alone over period-sized buffers of a synthetic 48 kHz signal
///   (one 1 s buffer made up front, walked period by period) — the arithmetic's cost.
/// - `alsa`: the whole capture path through the real libasound — a WAV replayed by the `file`
///   plugin, read non-blocking on the event loop by `ALSACapture` (paced as fast as it goes),
///   metered by `AudioInput` — i.e. library, loop and meter together.
///
/// Heap allocations per window are counted from outside (valgrind at two lengths; see
/// scripts/bench-audio-allocs.sh): the steady state must allocate nothing.
public enum AudioBench {
    public enum Path: String, Sendable { case meter, alsa }

    public struct Result: Sendable {
        public var path: Path
        public var format: PCMSampleFormat
        public var channels: Int
        public var periodFrames: Int
        public var audioSeconds: Double
        public var cpuSeconds: Double
        public var wallSeconds: Double
        public var windows: Int

        /// CPU microseconds spent per second of 48 kHz audio.
        public var cpuMicrosPerAudioSecond: Double { cpuSeconds / max(audioSeconds, 1e-9) * 1e6 }
        /// Frames metered per CPU second.
        public var framesPerCPUSecond: Double { audioSeconds * 48000 / max(cpuSeconds, 1e-9) }
        /// Share of one core a live 48 kHz stream needs.
        public var coreShare: Double { cpuSeconds / max(audioSeconds, 1e-9) }
    }

    /// Process CPU time (user + system) in seconds.
    static func cpuSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// One second of a 1 kHz sine at −20 dBFS plus a little noise, as S16 or S32, `channels` interleaved.
    static func signal(format: PCMSampleFormat, channels: Int) -> (s16: [Int16], s32: [Int32]) {
        var s16: [Int16] = []
        var s32: [Int32] = []
        var noise: UInt32 = 0x1234_5678
        for i in 0..<48000 {
            noise = noise &* 1_664_525 &+ 1_013_904_223
            let x = 0.1 * sin(2 * Double.pi * 1000 * Double(i) / 48000) + 0.001 * (Double(noise >> 16) / 32768 - 1)
            for _ in 0..<channels {
                if format == .s16 { s16.append(Int16(x * 32767)) } else { s32.append(Int32(x * 2_147_483_647)) }
            }
        }
        return (s16, s32)
    }

    /// Meters `seconds` of 48 kHz audio in `periodFrames` buffers with 0.1 s windows.
    public static func runMeter(
        seconds: Double, format: PCMSampleFormat = .s16, channels: Int = 1,
        periodFrames: Int = 960
    ) -> Result {
        let sig = signal(format: format, channels: channels)
        var meter = LevelMeter(window: 0.1, sampleRate: 48000)
        let periods = Int(seconds * 48000) / periodFrames
        let perSecond = 48000 / periodFrames
        var windows = 0
        var sink = 0.0
        let wall0 = Clock.monotonicNanoseconds()
        let cpu0 = cpuSeconds()
        sig.s16.withUnsafeBufferPointer { b16 in
            sig.s32.withUnsafeBufferPointer { b32 in
                for p in 0..<periods {
                    let start = (p % perSecond) * periodFrames * channels
                    let end = start + periodFrames * channels
                    if format == .s16 {
                        meter.feed(UnsafeBufferPointer(rebasing: b16[start..<end]), channels: channels) { l in
                            windows += 1
                            sink += l.rmsdB
                        }
                    } else {
                        meter.feed(UnsafeBufferPointer(rebasing: b32[start..<end]), channels: channels) { l in
                            windows += 1
                            sink += l.rmsdB
                        }
                    }
                }
            }
        }
        let cpu = cpuSeconds() - cpu0
        let wall = Double(Clock.monotonicNanoseconds() - wall0) / 1e9
        if sink.isNaN { Log.debug("audio bench: NaN level") }  // keeps the sums observable
        return Result(
            path: .meter, format: format, channels: channels, periodFrames: periodFrames,
            audioSeconds: Double(periods * periodFrames) / 48000, cpuSeconds: cpu, wallSeconds: wall,
            windows: windows)
    }

    /// Captures `seconds` of audio through libasound's `file` plugin and meters it (see the type's note).
    /// `directory` receives the synthetic WAV and its raw copy.
    public static func runALSA(
        seconds: Double, format: PCMSampleFormat = .s16, channels: Int = 1,
        directory: String
    ) throws -> Result {
        let sig = signal(format: format, channels: channels)
        let wavPath = directory + "/bench-audio.wav"
        try StateFiles.write(wav(sig, format: format, channels: channels), to: wavPath)
        let replay = try ALSAFileReplay.prepare(wavPath: wavPath, directory: directory)
        defer {
            replay.remove()
            StateFiles.remove(wavPath)
        }
        let loop = try EventLoop()
        let capture = ALSACapture(loop: loop, device: replay.device, request: replay.request, configText: replay.configText)
        capture.pacing = 0.000_001
        let input = AudioInput(capture: capture, device: "bench", window: 0.1)
        let target = UInt64(seconds * 48000)
        var windows = 0
        input.sink = { _, _ in windows += 1 }
        let wall0 = Clock.monotonicNanoseconds()
        let cpu0 = cpuSeconds()
        input.start()
        guard let f = capture.format else {
            throw AudioLevelsError("the file-plugin PCM did not open: \(input.lastError ?? "unknown error")")
        }
        // Past the file's end the plugin repeats its last buffer, which is as good as new audio here.
        while capture.framesRead < target { _ = try loop.runOnce(timeoutMs: 100) }
        input.stop()
        let cpu = cpuSeconds() - cpu0
        let wall = Double(Clock.monotonicNanoseconds() - wall0) / 1e9
        return Result(
            path: .alsa, format: format, channels: channels, periodFrames: f.periodFrames,
            audioSeconds: Double(capture.framesRead) / 48000, cpuSeconds: cpu, wallSeconds: wall,
            windows: windows)
    }

    private static func wav(_ sig: (s16: [Int16], s32: [Int32]), format: PCMSampleFormat, channels: Int) -> [UInt8] {
        var data: [UInt8] = []
        if format == .s16 {
            for v in sig.s16 { withUnsafeBytes(of: v.littleEndian) { data += $0 } }
        } else {
            for v in sig.s32 { withUnsafeBytes(of: v.littleEndian) { data += $0 } }
        }
        func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF)] }
        let align = channels * format.bytesPerSample
        let fmt = le16(1) + le16(channels) + le32(48000) + le32(48000 * align) + le16(align) + le16(format.bytesPerSample * 8)
        let body = Array("WAVEfmt ".utf8) + le32(16) + fmt + Array("data".utf8) + le32(data.count) + data
        return Array("RIFF".utf8) + le32(body.count) + body
    }
}
