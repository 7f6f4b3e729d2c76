import OSHCore
import OSHPlatform

/// The `audio_level` source: a capture device and a level meter on the loop. Each completed
/// window (default 0.1 s, 0.1–1 s) is handed to `sink` as (monotonic seconds of the window's
/// last frame, its `AudioLevelSample`).
/// Samples never leave this class: only the two levels do.
///
/// The window is counted in frames at the rate the device granted; a reopened device with a
/// different format starts a fresh window. The window's time is the read's monotonic time
/// minus the frames that followed the window in that read (the driver's own buffering, at
/// most one period, is not subtracted).
///
/// Logging (`RetryLog`): a lost or missing device is one warning with the first retry's delay,
/// then each different reason once, then one line when capture resumes — not a line per retry;
/// `stateText` says when the next attempt is at every step (status displays).
public final class AudioInput {
    public typealias Sink = (_ monotonicTime: Double, _ level: AudioLevelSample) -> Void

    public let device: String
    /// Seconds per window, clamped to 0.1–1.
    public let window: Double
    public var sink: Sink?
    public private(set) var stateText = "not started"
    /// The format the device granted, while capturing.
    public private(set) var format: AudioCaptureFormat?
    public private(set) var windowsReported = 0
    /// Why the device was last lost or could not be opened.
    public private(set) var lastError: String?

    private let capture: AudioCapture
    private var meter: LevelMeter
    private var loggedFormat: AudioCaptureFormat?
    private var log = RetryLog()
    /// Levels flowed at some point: an outage pauses them and the recovery resumes them.
    private var everCaptured = false
    private var replay: ALSAFileReplay?
    /// Frames of the replayed file not yet delivered in this pass.
    private var replayFramesLeft = 0
    private var restartingReplay = false

    /// Captures from an ALSA device (`default`, `hw:1,0`, `plughw:CARD=Device`, `dsnoop:…`).
    public convenience init(loop: EventLoop, device: String, window: Double = LevelMeter.defaultWindow) {
        self.init(capture: ALSACapture(loop: loop, device: device), device: device, window: window)
    }

    /// Replays a WAV file through ALSA's `file` plugin in real time (the demo's microphone):
    /// its samples are written to `directory` as a raw file the plugin reads. At the end of the
    /// file the PCM is closed and reopened, so the replay loops (one reopen per pass; the
    /// plugin itself would repeat its last buffer). The window runs on across the seam.
    public convenience init(
        loop: EventLoop, replayingWAV wavPath: String, directory: String,
        window: Double = LevelMeter.defaultWindow
    ) throws {
        let r = try ALSAFileReplay.prepare(wavPath: wavPath, directory: directory)
        self.init(
            capture: ALSACapture(loop: loop, device: r.device, request: r.request, configText: r.configText),
            device: wavPath, window: window)
        replay = r
    }

    /// Any capture source (tests pass a scripted one).
    public init(capture: AudioCapture, device: String, window: Double = LevelMeter.defaultWindow) {
        self.capture = capture
        self.device = device
        self.window =
            window.isNaN
            ? LevelMeter.defaultWindow
            : min(max(window, LevelMeter.windowRange.lowerBound), LevelMeter.windowRange.upperBound)
        meter = LevelMeter(window: self.window, sampleRate: 48000)
        capture.onState = { [unowned self] s in self.stateChanged(s) }
        capture.onChunk = { [unowned self] c in self.consume(c) }
    }

    deinit {
        capture.onState = nil
        capture.onChunk = nil
        replay?.remove()
    }

    public func start() { capture.start() }

    public func stop() { capture.stop() }

    private func stateChanged(_ s: AudioCaptureState) {
        if let r = replay, case .capturing = s { replayFramesLeft = r.header.frames }
        if restartingReplay {
            // The replay's own close and reopen: same format, same window; anything else is news.
            if case .stopped = s { return }
            if case .capturing(let f) = s, f == format { return }
        }
        let wasCapturing = format != nil
        switch s {
        case .capturing(let f):
            format = f
            meter = LevelMeter(window: window, sampleRate: f.sampleRate)
            let windows = "\(meter.windowFrames)-frame windows (\(window) s)"
            if log.recovered() && everCaptured {
                log.note(.notice, "audio: \(device): back, \(f)" + (f != loggedFormat ? "; \(windows)" : "") + "; levels resume")
            } else if f != loggedFormat {
                log.note(.info, "audio: \(device): \(f); \(windows)")
            }
            loggedFormat = f
            everCaptured = true
        case .disconnected(let why, let wait):
            format = nil
            lastError = why
            // Every retry is a new state ("…; retrying in 2 s"); the log says the first with its
            // delay and then only a different reason.
            let pause = wasCapturing && !log.isDown ? "levels pause, " : ""
            log.failed(.warning, "audio: \(why)", firstSuffix: "; \(pause)retrying in \(RetryLog.seconds(wait))")
        case .stopped:
            format = nil
        }
        stateText = s.description
    }

    private func consume(_ chunk: AudioChunk) {
        let readAt = Double(chunk.readAtNanos) / 1e9
        let rate = Double(max(1, chunk.sampleRate))
        // A replay delivers exactly the file's frames per pass (past the end the plugin repeats itself).
        let frames = replay == nil ? chunk.frames : min(chunk.frames, replayFramesLeft)
        let n = frames * chunk.channels
        switch chunk.samples {
        case .s16(let s): meter.feed(UnsafeBufferPointer(rebasing: s[0..<n]), channels: chunk.channels) { report($0, readAt, rate) }
        case .s32(let s): meter.feed(UnsafeBufferPointer(rebasing: s[0..<n]), channels: chunk.channels) { report($0, readAt, rate) }
        }
        if replay != nil {
            replayFramesLeft -= frames
            if replayFramesLeft <= 0 {
                restartingReplay = true
                capture.stop()
                capture.start()
                restartingReplay = false
            }
        }
    }

    @inline(__always)
    private func report(_ l: AudioLevel, _ readAt: Double, _ rate: Double) {
        windowsReported += 1
        sink?(readAt - Double(l.framesAfter) / rate, AudioLevelSample(rmsdB: l.rmsdB, peakdB: l.peakdB))
    }
}

extension AudioInput: ObservationSource {
    public var feeds: [OutputKind] { [.audioLevel] }
    /// A lost microphone retries on its own and says so in `stateText`; it is not a bus sensor fault.
    public var isFaulted: Bool { false }

    public func connect(_ outputs: OutputConnections) throws {
        sink = try outputs.port(AudioLevelSample.self)?.sink
    }
}
