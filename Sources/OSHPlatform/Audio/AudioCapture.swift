import OSHCore

/// What a capture device granted (it may differ from what was asked for).
public struct AudioCaptureFormat: Sendable, Equatable, CustomStringConvertible {
    public var sampleFormat: PCMSampleFormat
    public var sampleRate: Int
    /// Channels per frame in the buffers delivered; the meter reads the first.
    public var channels: Int
    public var periodFrames: Int
    public var bufferFrames: Int

    public init(sampleFormat: PCMSampleFormat, sampleRate: Int, channels: Int, periodFrames: Int, bufferFrames: Int) {
        self.sampleFormat = sampleFormat
        self.sampleRate = sampleRate
        self.channels = channels
        self.periodFrames = periodFrames
        self.bufferFrames = bufferFrames
    }

    public var description: String {
        let periodMs = (Double(periodFrames) * 10000 / Double(max(1, sampleRate))).rounded() / 10
        return
            "\(sampleFormat.rawValue) \(sampleRate) Hz \(channels) ch, period \(periodFrames) frames (\(periodMs) ms), buffer \(bufferFrames) frames"
    }
}

/// Samples of one read, in the device's format; valid only during the callback that receives them.
public enum AudioSamples {
    case s16(UnsafeBufferPointer<Int16>)
    case s32(UnsafeBufferPointer<Int32>)
}

/// One block of interleaved frames as read from the device.
public struct AudioChunk {
    public var samples: AudioSamples
    public var channels: Int
    public var frames: Int
    public var sampleRate: Int
    /// CLOCK_MONOTONIC ns when the read returned: the chunk's last frame was captured at most
    /// one period before (the device wakes us once per period).
    public var readAtNanos: UInt64

    public init(samples: AudioSamples, channels: Int, frames: Int, sampleRate: Int, readAtNanos: UInt64) {
        self.samples = samples
        self.channels = channels
        self.frames = frames
        self.sampleRate = sampleRate
        self.readAtNanos = readAtNanos
    }
}

public enum AudioCaptureState: Sendable, Equatable, CustomStringConvertible {
    case stopped
    case capturing(AudioCaptureFormat)
    /// Not capturing, why, and when the next attempt is (seconds from then).
    case disconnected(String, retryIn: Double)

    public var description: String {
        switch self {
        case .stopped: return "stopped"
        case .capturing(let f): return "capturing \(f)"
        case .disconnected(let why, let wait): return "\(why); retrying in \(wait) s"
        }
    }
}

/// A capture source on the event loop: ALSA on a board (`ALSACapture`), a scripted one in tests.
/// Callbacks run on the loop's thread; a callback may call `stop()`.
public protocol AudioCapture: AnyObject {
    /// Each block of frames read. Steady state delivers from one preallocated buffer.
    var onChunk: ((AudioChunk) -> Void)? { get set }
    /// State changes (opened with a format, lost, stopped).
    var onState: ((AudioCaptureState) -> Void)? { get set }
    var state: AudioCaptureState { get }
    /// Opens the device (now) and keeps capturing, reopening it when it goes away, until `stop()`.
    func start()
    func stop()
}
