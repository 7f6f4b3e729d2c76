#if canImport(Glibc)
import Glibc
#endif

/// What the camera pipeline costs the agent's thread, frame by frame: the MJPEG decode and the
/// encode call, as this thread's CPU time (CLOCK_THREAD_CPUTIME_ID). libx264 with `threads = 1`
/// encodes on this thread, so its whole cost is here; a hardware encoder's work is not the
/// CPU's (only the copy into its buffer is counted), and x264's own threads are not counted.
public struct VideoCost: Sendable, Equatable {
    public private(set) var frames = 0
    public private(set) var seconds = 0.0
    public private(set) var firstFrameAt: Double?
    public private(set) var lastFrameAt = 0.0

    public init() {}

    /// Seconds between the first and the last frame measured.
    public var span: Double { firstFrameAt.map { lastFrameAt - $0 } ?? 0 }
    /// The share of one core over that span (0.1 = 10 %).
    public var shareOfCore: Double { span > 0 ? seconds / span : 0 }
    public var millisecondsPerFrame: Double { frames > 0 ? seconds / Double(frames) * 1000 : 0 }

    mutating func add(frameAt t: Double, seconds s: Double) {
        if firstFrameAt == nil { firstFrameAt = t }
        lastFrameAt = max(lastFrameAt, t)
        frames += 1
        seconds += max(0, s)
    }

    public static func threadSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// "12.3 % of a core (24.6 ms a frame)".
    public var summary: String {
        let pct = (shareOfCore * 1000).rounded() / 10
        let ms = (millisecondsPerFrame * 10).rounded() / 10
        return "\(pct) % of a core (\(ms) ms a frame on the agent's thread)"
    }
}
