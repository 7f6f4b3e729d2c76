import OSHCore
import OSHPlatform

/// The camera's way to the node: the encoder's access units go live through the VideoPublisher
/// (one in flight, the rest dropped and counted) and every one into the recording. The camera
/// input holds this object, not the runtime, so nothing points back up the chain.
public final class VideoPath {
    public let spec: OutputSpec
    public let publisher: VideoPublisher
    /// The scalar publisher: its clock offset stamps the frames too.
    private let link: Publisher
    /// The camera's index among the recorded outputs (after the scalar ones).
    private let recordIndex: Int
    /// Set while the recording is open.
    var recorder: Recorder?
    /// The camera's datastream on or off (`enableOutput`).
    var enabled = true
    /// The camera records faster than it streams: it encodes at the recording's rate with a key
    /// frame every live interval, and only the key frames go live (a P-frame cannot be thinned).
    var liveKeyFramesOnly = false

    init(spec: OutputSpec, publisher: VideoPublisher, link: Publisher, recordIndex: Int) {
        self.spec = spec
        self.publisher = publisher
        self.link = link
        self.recordIndex = recordIndex
    }

    /// One encoded access unit: live unless one is in flight (then dropped and counted), and
    /// recorded whether it went live or not.
    public func offer(monotonicTime: Double, accessUnit: UnsafeRawBufferPointer, keyFrame: Bool) {
        var live = false
        if enabled, keyFrame || !liveKeyFramesOnly {
            publisher.clockOffset = link.clockOffset
            live = publisher.offer(monotonicTime: monotonicTime, frame: accessUnit)
        }
        recorder?.offerVideo(recordIndex, monotonicTime: monotonicTime, accessUnit: accessUnit, keyFrame: keyFrame, live: live)
    }
}
