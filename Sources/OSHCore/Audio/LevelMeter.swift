#if canImport(Glibc)
import Glibc
#endif

/// Integer PCM layouts the meter reads (host byte order; ALSA's `_LE` formats on a Pi).
public enum PCMSampleFormat: String, Sendable, Equatable {
    /// Signed 16-bit; full scale 32768.
    case s16 = "S16_LE"
    /// Signed 32-bit (also 24-bit audio left-justified in 32, as USB microphones deliver it); full scale 2³¹.
    case s32 = "S32_LE"

    public var bytesPerSample: Int { self == .s16 ? 2 : 4 }
}

/// One window's levels, as the `audio_level` output publishes them.
public struct AudioLevel: Sendable, Equatable {
    /// RMS of the window in dBFS (SoX convention: a full-scale square wave is 0 dB, a full-scale sine −3.01 dB).
    public var rmsdB: Double
    /// Largest |sample| of the window in dBFS (full scale = 0 dB; a clipped signal reads 0.00).
    public var peakdB: Double
    /// Frames in the window (the configured window length unless `flush()` closed a partial one).
    public var frames: Int
    /// Frames fed since the meter was created or reset, up to and including this window's last frame.
    public var endFrame: UInt64
    /// Frames of the buffer being fed that come after this window's last frame (0 for `flush()`):
    /// lets a caller that knows when the buffer's last frame was captured date the window's end.
    public var framesAfter: Int

    public init(rmsdB: Double, peakdB: Double, frames: Int, endFrame: UInt64, framesAfter: Int) {
        self.rmsdB = rmsdB
        self.peakdB = peakdB
        self.frames = frames
        self.endFrame = endFrame
        self.framesAfter = framesAfter
    }
}

/// Windowed RMS and peak levels in dBFS, computed in place over the capture's period buffers:
/// no copies, no allocation, one pass per buffer. Periods and windows need not line up — a
/// period that crosses a window boundary is split, and the window is reported mid-buffer.
///
/// Convention (stated because meters disagree): full scale = 1.0, i.e. 32768 for S16 and 2³¹
/// for S32; `rmsdB = 20·log10(sqrt(mean(x²)))` with no sine correction, as SoX's `stats`
/// prints "RMS lev dB" — a 0 dBFS sine reads −3.01 dB, a full-scale square 0 dB. (AES17 would
/// add +3.01 dB so the sine reads 0.) `peakdB = 20·log10(max|x|)`. Both are floored at
/// −160 dB (`max(x, 1e-8)`), so digital silence reads −160 rather than −∞.
///
/// Only the first channel of interleaved multi-channel audio is metered: a microphone is one
/// channel, and a stereo device's second channel is often a copy or unconnected.
public struct LevelMeter: Sendable {
    public static let floorDB = -160.0
    /// The floor as a linear ratio: 20·log10(1e-8) = −160.
    static let floorRatio = 1e-8
    public static let defaultWindow = 0.1
    public static let windowRange: ClosedRange<Double> = 0.1...1.0

    /// Frames per window.
    public let windowFrames: Int

    // Running sums of the open window, in full-scale units.
    private var sumSquares = 0.0
    private var peak = 0.0
    private var count = 0
    private var framesFed: UInt64 = 0

    /// A meter over `windowFrames` frames per report (at least 1).
    public init(windowFrames: Int) {
        self.windowFrames = max(1, windowFrames)
    }

    /// A meter over `window` seconds (clamped to 0.1–1 s) at `sampleRate`.
    public init(window: Double, sampleRate: Int) {
        self.init(windowFrames: LevelMeter.windowFrames(seconds: window, sampleRate: sampleRate))
    }

    /// Window length in frames: `seconds` clamped to 0.1–1 s (NaN → the default), rounded.
    public static func windowFrames(seconds: Double, sampleRate: Int) -> Int {
        let s = seconds.isNaN ? defaultWindow : min(max(seconds, windowRange.lowerBound), windowRange.upperBound)
        return max(1, Int((s * Double(max(1, sampleRate))).rounded()))
    }

    /// dBFS of a linear ratio to full scale, floored at −160 dB.
    @inline(__always)
    public static func decibels(_ ratio: Double) -> Double {
        20 * log10(max(ratio, floorRatio))
    }

    /// Frames fed since creation or `reset()`.
    public var totalFrames: UInt64 { framesFed }
    /// Frames in the window still open.
    public var pendingFrames: Int { count }

    /// Drops the open window and the frame count (after a format change or a reopened device).
    public mutating func reset() {
        sumSquares = 0
        peak = 0
        count = 0
        framesFed = 0
    }

    /// Meters interleaved S16 samples (`channels` per frame, first channel only); calls
    /// `onWindow` for each window completed inside this buffer. A trailing partial frame is ignored.
    public mutating func feed(
        _ samples: UnsafeBufferPointer<Int16>, channels: Int = 1,
        _ onWindow: (AudioLevel) -> Void
    ) {
        guard let base = samples.baseAddress else { return }
        let ch = max(1, channels)
        let frames = samples.count / ch
        var f = 0
        while f < frames {
            let take = min(frames - f, windowFrames - count)
            // Exact integer sums within one stretch (≤ 1 s: 192 000 × 2³⁰ fits an Int64 easily).
            var s: Int64 = 0
            var p: Int32 = 0
            var i = f * ch
            let end = (f + take) * ch
            while i < end {
                let v = Int32(base[i])
                s &+= Int64(v &* v)
                let a = v < 0 ? -v : v
                if a > p { p = a }
                i &+= ch
            }
            sumSquares += Double(s) / (32768.0 * 32768.0)
            peak = max(peak, Double(p) / 32768.0)
            f += take
            advance(take, framesAfter: frames - f, onWindow)
        }
    }

    /// Meters interleaved S32 samples (first channel only); see the S16 variant.
    public mutating func feed(
        _ samples: UnsafeBufferPointer<Int32>, channels: Int = 1,
        _ onWindow: (AudioLevel) -> Void
    ) {
        guard let base = samples.baseAddress else { return }
        let ch = max(1, channels)
        let frames = samples.count / ch
        let scale = 1.0 / 2147483648.0
        var f = 0
        while f < frames {
            let take = min(frames - f, windowFrames - count)
            var s = 0.0
            var p: UInt32 = 0
            var i = f * ch
            let end = (f + take) * ch
            while i < end {
                let v = base[i]
                let x = Double(v) * scale
                s += x * x
                let a = v.magnitude
                if a > p { p = a }
                i &+= ch
            }
            sumSquares += s
            peak = max(peak, Double(p) * scale)
            f += take
            advance(take, framesAfter: frames - f, onWindow)
        }
    }

    /// Reports the open window even if it is short (end of a file); nothing when it is empty.
    public mutating func flush(_ onWindow: (AudioLevel) -> Void) {
        guard count > 0 else { return }
        onWindow(closeWindow(framesAfter: 0))
    }

    @inline(__always)
    private mutating func advance(_ n: Int, framesAfter: Int, _ onWindow: (AudioLevel) -> Void) {
        count += n
        framesFed &+= UInt64(n)
        if count >= windowFrames { onWindow(closeWindow(framesAfter: framesAfter)) }
    }

    private mutating func closeWindow(framesAfter: Int) -> AudioLevel {
        let level = AudioLevel(
            rmsdB: LevelMeter.decibels((sumSquares / Double(count)).squareRoot()),
            peakdB: LevelMeter.decibels(peak),
            frames: count, endFrame: framesFed, framesAfter: framesAfter)
        sumSquares = 0
        peak = 0
        count = 0
        return level
    }
}
