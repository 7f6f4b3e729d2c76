import OSHCore
import OSHPlatform
#if canImport(Glibc)
import Glibc
#endif

/// `osh-edge levels`: the levels the `audio_level` output would publish, per window, from a
/// WAV file or a capture device — for setting a microphone's gain and checking the meter.
/// Both paths use `LevelMeter`, the code the agent runs.
public enum AudioLevels {
    public struct Row: Sendable, Equatable {
        /// Seconds from the start of the file (or of the capture) to the window's last frame.
        public var time: Double
        public var rmsdB: Double
        public var peakdB: Double
    }

    /// Meters a WAV file read directly (not through ALSA): every complete window, in order.
    /// A trailing partial window is not reported, as the agent would not publish it.
    @discardableResult
    public static func meterFile(_ path: String, window: Double, onRow: (Row) -> Void) throws -> WAVHeader {
        guard let bytes = try StateFiles.read(path, limit: 1 << 30) else { throw AudioLevelsError("\(path): no such file") }
        let header: WAVHeader
        do { header = try WAVHeader.parse(bytes) } catch { throw AudioLevelsError("\(path): \(error)") }
        var meter = LevelMeter(window: window, sampleRate: header.sampleRate)
        let rate = Double(header.sampleRate)
        bytes.withUnsafeBytes { raw in
            header.meter(raw, with: &meter) { l in
                onRow(Row(time: Double(l.endFrame) / rate, rmsdB: l.rmsdB, peakdB: l.peakdB))
            }
        }
        return header
    }

    /// Captures from an ALSA device until `duration` seconds pass (nil = until SIGINT/SIGTERM);
    /// throws at once if the device cannot be opened.
    /// What the device granted is logged (stderr) when it opens.
    public static func meterDevice(
        _ device: String, window: Double, duration: Double?,
        onRow: @escaping (Row) -> Void
    ) throws {
        let loop = try EventLoop()
        let input = AudioInput(loop: loop, device: device, window: window)
        let start = Double(Clock.monotonicNanoseconds()) / 1e9
        input.sink = { t, level in onRow(Row(time: t - start, rmsdB: level.rmsdB, peakdB: level.peakdB)) }
        _ = try loop.onSignals([SIGINT, SIGTERM]) { _ in loop.stop() }
        // A command run at a desk should say at once that the device is not there, not retry.
        let wasMuted = Log.muted
        Log.muted = true
        input.start()
        Log.muted = wasMuted
        guard let format = input.format else {
            input.stop()
            throw AudioLevelsError(input.lastError ?? "cannot open ALSA device '\(device)'")
        }
        Log.info("audio: \(device): \(format)")
        if let d = duration {
            try loop.run(until: Clock.monotonicNanoseconds() + UInt64(max(0, d) * 1e9))
        } else {
            try loop.run()
        }
        input.stop()
    }
}

public struct AudioLevelsError: Error, CustomStringConvertible {
    public let description: String
    public init(_ s: String) { description = s }
}
