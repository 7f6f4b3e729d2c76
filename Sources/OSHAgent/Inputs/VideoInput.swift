// The camera pipeline: one frame source (the test pattern, or a V4L2 camera) and one encoder
// (the hardware M2M encoder when found, libx264 otherwise, none when the camera sends H.264),
// chosen once and logged with the reason. Each access unit goes to the sink — the
// VideoPublisher — straight from the encoder's own buffer.
//
// Copies of a frame on our side, by construction:
//   test pattern → libx264: 0 (x264 reads our planes) + 1 in VideoPublisher (into the POST body)
//   camera I420 → libx264: 0 + 1;  camera YUYV/NV12 → libx264: 1 conversion + 1
//   camera raw → M2M: 0 when the camera exports DMABUFs laid out as the encoder reads them,
//   else 1 (into the encoder's input buffer); + 1;  camera H.264: 0 + 1

import OSHCore
import OSHPlatform
#if canImport(Glibc)
import Glibc
#endif

/// Settings the pipeline cannot run with (every problem in one message).
public struct VideoInputError: Error, CustomStringConvertible, Equatable {
    public let message: String
    public var description: String { message }
}

public final class VideoInput {
    /// One encoded access unit; the bytes are valid only during the call.
    public typealias Sink = (_ monotonicTime: Double, _ accessUnit: UnsafeRawBufferPointer, _ keyFrame: Bool) -> Void

    public struct Counters: Sendable, Equatable {
        /// Pictures from the source (after the camera's rate dropping).
        public var framesIn = 0
        public var accessUnits = 0
        public var bytes = 0
        /// Timer ticks the loop was too late for (the pattern renders one frame, not a burst).
        public var ticksMissed = 0
        /// The hardware encoder still had every input buffer.
        public var droppedEncoderBusy = 0
        public var encodeErrors = 0
        /// Key frames without SPS+PPS in front of the IDR (a viewer could not start there).
        public var keyFramesWithoutHeaders = 0
        public var lastError: String?
    }

    public let settings: VideoSettings
    public private(set) var counters = Counters()
    /// nil until decided (at start for the test pattern, at the camera's first frame otherwise).
    public private(set) var encoderKind: VideoEncoderKind?
    public private(set) var encoderReason = ""
    /// Waits between attempts to reopen a missing or lost camera (set before `start()`; tests shorten it).
    public var cameraBackoff = Backoff(initial: 0.5, maximum: 10)
    public var isRunning: Bool { running }
    /// The picture size actually produced after start() (a camera may snap the configured size
    /// to one it has): the size the camera0_H264 schema should declare. nil while a camera is absent.
    public var pictureSize: (width: Int, height: Int)? {
        if let n = camera?.negotiated { return (n.width, n.height) }
        if let p = pattern { return (p.width, p.height) }
        return nil
    }

    private let loop: EventLoop
    private let device: V4L2Device
    /// The board's model (the device tree's), for the encoder choice's words; tests set it.
    public var boardModel: String? = BoardIdentity.readModel()
    /// Where each access unit goes: the runtime's video path, set before `start`.
    public var sink: Sink?
    private var running = false
    private var timer: EventLoop.Timer?
    private var pattern: TestPatternGenerator?
    private var camera: V4L2Camera?
    private var x264: X264Encoder?
    private var m2m: V4L2M2MEncoder?
    /// The layout the current encoder was opened for.
    private var encoderInput: (PixelFormat, Int, Int, Int)?
    private var m2mFailed = false
    /// A webcam's MJPEG (or an RGB camera's) frames to I420, made at the first one.
    private var converter: FrameConverter?
    /// Frames converted to I420, and those that could not be (a broken transfer): the
    /// converter's own counts.
    public var conversions: FrameConverter.Counters { converter?.counters ?? FrameConverter.Counters() }
    /// A camera's own H.264, every key frame self-contained.
    public private(set) var h264Framing = CameraH264Framing()
    /// The camera's opens seen: a reopened H.264 camera starts again at its next key frame.
    private var cameraOpensSeen = 0
    /// What the pipeline costs this thread (conversion + encode), for the first minute's line.
    public private(set) var cost = VideoCost()
    private var costNoted = false
    /// Under libcamera's layer, after the agent started again for a lost camera: the sensor's
    /// node once it is back (nil while absent), polled once a second; the camera opens when two
    /// polls agree (the driver registers its nodes one by one).
    public var sensorNode: (() -> String?)?
    public var sensorPollSeconds = 1.0
    /// After a sensor libcamera did not take: the wait before the agent starts again.
    public var libcameraRetrySeconds = 5.0
    private var sensorPoll: LoopDeadline?
    private var sensorSeen: String?
    /// Under libcamera's layer: the camera was lost. libcamera keeps the camera it listed at the
    /// start of the process, so the owner starts the agent again (nil: reopen here, as V4L2 does).
    public var onLibcameraCameraLost: (() -> Void)?
    private var restartSoon: LoopDeadline?
    /// Camera buffers lent to the hardware encoder (DMABUF), with the camera stream they belong to.
    private var lent: [Int: Int] = [:]

    /// Validates the settings (all problems in one message). `device` is the V4L2 seam
    /// (`SystemV4L2()` in the agent, `SimulatedV4L2` in tests).
    public init(loop: EventLoop, settings: VideoSettings, device: V4L2Device = SystemV4L2(), sink: Sink? = nil) throws {
        let problems = settings.problems()
        guard problems.isEmpty else { throw VideoInputError(message: "camera0_H264: " + problems.joined(separator: "; ")) }
        self.loop = loop
        self.settings = settings
        self.device = device
        self.sink = sink
    }

    deinit { stop() }

    /// Every V4L2 camera and H.264 encoder on the machine, with formats and sizes (`osh-edge probe`).
    public static func listDevices(_ device: V4L2Device = SystemV4L2()) -> [V4L2DeviceInfo] {
        V4L2Probe.list(device)
    }

    public func start() throws {
        guard !running else { return }
        running = true
        do {
            if settings.device == VideoSettings.testPattern {
                try startPattern()
            } else {
                try startCamera()
            }
        } catch {
            stop()
            throw error
        }
    }

    public func stop() {
        running = false
        if let t = timer { loop.cancel(t) }
        timer = nil
        sensorPoll?.cancel()
        sensorPoll = nil
        camera?.stop()
        camera = nil
        lent.removeAll()
        m2m?.shutdown()
        m2m = nil
        x264 = nil
        encoderInput = nil
    }

    // MARK: Sources

    private func startPattern() throws {
        let gen = TestPatternGenerator(width: settings.width, height: settings.height)
        pattern = gen
        try openEncoder(format: .i420, width: gen.width, height: gen.height, bytesPerLine: gen.lumaStride)
        let period = UInt64((1e9 / settings.fps).rounded())
        timer = try loop.addAlignedTimer(every: period) { [weak self] ticks in
            self?.patternTick(ticks)
        }
    }

    private func patternTick(_ ticks: UInt64) {
        guard running, let gen = pattern else { return }
        if ticks > 1 { counters.ticksMissed += Int(ticks - 1) }
        gen.render(frame: gen.frameNumber + Int(max(1, ticks)))
        let now = Double(Clock.monotonicNanoseconds()) / 1e9
        frame(
            VideoFrame(
                format: .i420, width: gen.width, height: gen.height, bytesPerLine: gen.lumaStride,
                monotonicTime: now, bytes: gen.buffer))
    }

    private func startCamera() throws {
        if sensorNode != nil {
            Log.notice("camera: waiting for the camera sensor to come back (libcamera)")
            sensorPoll = LoopDeadline(loop: loop) { [weak self] in self?.pollSensor() }
            return try sensorPoll?.arm(after: sensorPollSeconds) ?? ()
        }
        try openCamera(path: resolveCameraPath(settings.device))
    }

    private func pollSensor() {
        guard running, camera == nil, let look = sensorNode else { return }
        let node = look()
        if let node, node == sensorSeen {
            do { try openCamera(path: node) } catch {
                counters.lastError = "\(error)"
                Log.error("video: \(error)")
            }
            // libcamera lists its cameras once, at the first open: if it did not take this one
            // (a node it could not open yet), only a new start gives it another look.
            if camera?.negotiated?.isLibcamera == true { return }
            Log.warning(
                "video: libcamera did not take the camera at \(node); starting the agent again in \(RetryLog.seconds(libcameraRetrySeconds))"
            )
            camera?.abandon()
            camera = nil
            return restartAgent(after: libcameraRetrySeconds)
        }
        sensorSeen = node
        do { try sensorPoll?.arm(after: sensorPollSeconds) } catch { Log.error("video: cannot arm the camera poll: \(error)") }
    }

    /// Asks the owner (`onLibcameraCameraLost`) to start the agent again, from the loop, after
    /// `seconds`.
    private func restartAgent(after seconds: Double) {
        let restart = LoopDeadline(loop: loop) { [weak self] in self?.onLibcameraCameraLost?() }
        restartSoon = restart
        do { try restart.arm(after: seconds) } catch { onLibcameraCameraLost?() }
    }

    private func openCamera(path: String) throws {
        let cam = V4L2Camera(
            loop: loop, device: device, path: path, width: settings.width, height: settings.height, fps: settings.fps,
            backoff: cameraBackoff)
        cam.h264KeyFrameInterval = settings.keyFrameInterval
        cam.onFrame = { [weak self] f in self?.frame(f) }
        cam.onLost = { [weak self, weak cam] e in
            guard let self, self.onLibcameraCameraLost != nil, cam?.negotiated?.isLibcamera == true else { return false }
            Log.warning("video: camera \(path) lost (\(e)); starting the agent again so libcamera finds it when it is back")
            // On the next turn: the camera abandons its device first (stopping it would abort).
            self.restartAgent(after: 0)
            return true
        }
        cam.onFatalError = { [weak self] e in
            self?.counters.lastError = e.message
            self?.running = false
        }
        camera = cam
        try cam.start()
    }

    /// A path as given; otherwise a camera card name ("HD Pro Webcam C920") looked up among the nodes.
    private func resolveCameraPath(_ name: String) -> String {
        if name.hasPrefix("/") { return name }
        return V4L2Probe.list(device).first { $0.role == .camera && $0.card == name }?.path ?? "/dev/" + name
    }

    // MARK: Encoding

    /// Chooses and opens the encoder for this picture layout; logs the choice once per change.
    private func openEncoder(format: PixelFormat, width: Int, height: Int, bytesPerLine: Int, dmabuf: Bool = false) throws {
        m2m?.shutdown()
        m2m = nil
        x264 = nil
        let hw = (settings.encoder == .software || m2mFailed || format == .h264) ? V4L2EncoderSearch() : V4L2Probe.findEncoder(device)
        var (kind, reason) = VideoEncoderDecision.decide(
            captureFormat: format, m2mDevice: hw.path, m2mCard: hw.card, unusable: hw.unusable,
            preference: m2mFailed ? .software : settings.encoder, boardModel: boardModel)
        if m2mFailed && kind == .x264 { reason = "the hardware encoder failed earlier; using libx264" }
        guard let chosen = kind else { throw V4L2Error("camera0_H264: \(reason)", errno: ENODEV) }
        if case .m2m(let path) = chosen {
            do {
                // DMABUF: up to two camera buffers inside the encoder, the others keep capturing.
                let enc = try V4L2M2MEncoder(
                    loop: loop, device: device, path: path, input: format, width: width, height: height,
                    bytesPerLine: bytesPerLine, settings: settings, dmabufSlots: dmabuf ? 2 : 0)
                enc.onAccessUnit = { [weak self] au in self?.deliver(au) }
                enc.onInputReleased = { [weak self] i in self?.giveBack(i) }
                enc.onFailure = { [weak self] e in self?.hardwareEncoderFailed(e) }
                m2m = enc
            } catch {
                guard settings.encoder != .hardware else { throw error }
                m2mFailed = true
                Log.warning("video: hardware encoder \(path) could not be set up (\(error)); falling back to libx264")
                return try openEncoder(format: format, width: width, height: height, bytesPerLine: bytesPerLine, dmabuf: dmabuf)
            }
        } else if chosen == .x264 {
            x264 = try X264Encoder(
                X264Settings(
                    width: width, height: height, fps: settings.fps, keyFrameInterval: settings.keyFrameInterval,
                    bitrateKbps: settings.bitrateKbps, threads: settings.threads))
        }
        if let m = m2m {
            reason += m.importsDMABUF ? " (camera buffers imported as DMABUF, no copy)" : " (one copy into the encoder's buffer)"
        }
        if encoderKind != chosen || encoderReason != reason {
            Log.notice("video: \(sourceDescription); encoder \(chosen.name) — \(reason)")
        }
        encoderKind = chosen
        encoderReason = reason
        encoderInput = (format, width, height, bytesPerLine)
    }

    /// Which camera, which path, the negotiated format, size and rate: "camera /dev/video0
    /// (HD Webcam C525) through V4L2, MJPEG 1280x720 at 5 fps, decoded by libv4lconvert".
    public var sourceDescription: String {
        guard let c = camera, let n = c.negotiated else {
            return pattern.map { "test pattern \($0.width)x\($0.height) at \(Self.rate(settings.fps)) fps" } ?? "no camera"
        }
        let fps = min(n.driverFPS ?? settings.fps, settings.fps)
        var d =
            "camera \(c.path)\(n.card.isEmpty ? "" : " (\(n.card))") through \(n.isLibcamera ? "libcamera (its V4L2 layer)" : "V4L2"), \(n.format.fourCC) \(n.width)x\(n.height) at \(Self.rate(fps)) fps"
        switch n.format {
        case .mjpeg: d += ", decoded by libv4lconvert"
        case .rgb24, .bgr24: d += ", converted to I420 by libv4lconvert"
        case .h264:
            d +=
                n.keyFramePeriodSet == true
                ? ", its own H.264 with a key frame every \(settings.keyFrameInterval) frames"
                : ", its own H.264 at its own key-frame period (the camera has no control for it; the stream starts at its next key frame)"
        default: break
        }
        return d
    }

    private static func rate(_ fps: Double) -> String {
        fps == fps.rounded() ? String(Int(fps)) : String((fps * 10).rounded() / 10)
    }

    /// Once, a minute after the first frame: what the pipeline cost this thread meanwhile.
    private func noteCost() {
        guard !costNoted, cost.span >= 60 else { return }
        costNoted = true
        let format = camera?.negotiated?.format
        let what =
            format?.needsConversion == true
            ? "\(format?.fourCC.description ?? "") conversion + \(encoderKind?.name ?? "encoder")" : encoderKind?.name ?? "encoder"
        Log.notice("video: the first minute cost \(cost.summary) for \(what), \(cost.frames) frames")
    }

    private func giveBack(_ bufferIndex: Int) {
        guard let g = lent.removeValue(forKey: bufferIndex) else { return }
        camera?.release(bufferIndex: bufferIndex, generation: g)
    }

    /// Camera buffers currently inside the hardware encoder.
    public var buffersLentToEncoder: Int { lent.count }

    private func hardwareEncoderFailed(_ e: V4L2Error) {
        counters.lastError = e.message
        m2mFailed = true
        m2m = nil
        encoderInput = nil  // the next frame opens libx264
    }

    private func frame(_ captured: VideoFrame) {
        guard running else { return }
        counters.framesIn += 1
        // Measured for the first minute only: after its line, no clock reads on this path.
        let started = costNoted ? 0 : VideoCost.threadSeconds()
        defer {
            if !costNoted {
                cost.add(frameAt: captured.monotonicTime, seconds: VideoCost.threadSeconds() - started)
                noteCost()
            }
        }
        var f = captured
        if captured.format.needsConversion {
            guard let picture = convert(captured) else { return }
            f = picture
        }
        if let e = encoderInput, e == (f.format, f.width, f.height, f.bytesPerLine) {
        } else {
            do {
                try openEncoder(format: f.format, width: f.width, height: f.height, bytesPerLine: f.bytesPerLine, dmabuf: f.dmabufFD >= 0)
            } catch {
                counters.encodeErrors += 1
                counters.lastError = "\(error)"
                Log.error("video: \(error)")
                return
            }
        }
        switch encoderKind {
        case .cameraH264?:
            if let opens = camera?.counters.opens, opens != cameraOpensSeen {
                cameraOpensSeen = opens
                h264Framing.restart()
            }
            let t = f.monotonicTime
            _ = h264Framing.frame(f.bytes) { bytes, key in deliver(EncodedFrame(monotonicTime: t, bytes: bytes, isKeyFrame: key)) }
        case .m2m?:
            guard let m = m2m else { return }
            if m.submit(f) {
                // The encoder reads the camera's buffer itself: the camera must not refill it yet.
                if m.importsDMABUF, let cam = camera {
                    cam.holdCurrentBuffer()
                    lent[f.bufferIndex] = cam.generation
                }
            } else {
                counters.droppedEncoderBusy += 1
            }
        case .x264?:
            do {
                try x264?.encode(f) { [unowned self] au in self.deliver(au) }
            } catch {
                counters.encodeErrors += 1
                counters.lastError = "\(error)"
            }
        case nil:
            break
        }
    }

    private func convert(_ f: VideoFrame) -> VideoFrame? {
        if converter == nil {
            do {
                converter = try FrameConverter()
            } catch {
                counters.lastError = "\(error)"
                return nil
            }
        }
        guard let c = converter else { return nil }
        guard let picture = c.convert(f) else {
            // The first such frame is said; the count shows the rest.
            if c.counters.failed == 1, let why = c.counters.lastError { Log.warning("video: \(why); skipping such frames") }
            counters.lastError = c.counters.lastError
            return nil
        }
        return picture
    }

    private func deliver(_ au: EncodedFrame) {
        counters.accessUnits += 1
        counters.bytes += au.bytes.count
        if au.isKeyFrame && !AnnexB.summarize(au.bytes).isSelfContainedKeyFrame { counters.keyFramesWithoutHeaders += 1 }
        sink?(au.monotonicTime, au.bytes, au.isKeyFrame)
    }
}

extension VideoInput: ObservationSource {
    public var feeds: [OutputKind] { [.video] }
    public var isFaulted: Bool { false }

    public func connect(_ outputs: OutputConnections) throws {
        guard let v = outputs.video else { return }
        sink = { v.offer(monotonicTime: $0, accessUnit: $1, keyFrame: $2) }
    }
}
