// A V4L2 capture camera on the event loop: negotiate a format (H.264 > YUYV > NV12 > YU12 >
// MJPEG, each first where it has the configured size),
// mmap streaming buffers, and hand each frame to `onFrame` straight from the driver's
// buffer (no copy), then queue the buffer again. Frame rate: asked of the driver with
// S_PARM, and enforced by dropping (UVC cameras often ignore or round the request).
// Unplugged (ENODEV, POLLERR with nothing to dequeue) → everything closed, reopened with backoff.
// A camera that stops sending without an error (libcamera's V4L2 layer says nothing when its
// camera goes; a wedged USB camera neither) is treated as unplugged after `stallSeconds`.
// Logging (`RetryLog`): an outage is one warning with the first retry's delay, then each different
// reason once (the first failed open, a busy device), then one line when frames flow again — not a
// line per retry. `counters.lastError` keeps the latest reason for status displays.

import CV4L2
import OSHCore
#if canImport(Glibc)
import Glibc
#endif

public struct CaptureCounters: Sendable, Equatable {
    public var dequeued = 0
    public var delivered = 0
    /// Frames the driver produced faster than the configured rate.
    public var droppedForRate = 0
    /// Readable but nothing to dequeue yet.
    public var eagain = 0
    public var deviceLost = 0
    public var opens = 0
    public var failedOpens = 0
    public var lastError: String?
}

public final class V4L2Camera {
    public struct Negotiated: Equatable, Sendable {
        public var format: PixelFormat
        public var width: Int
        public var height: Int
        public var bytesPerLine: Int
        public var sizeImage: Int
        /// What the driver accepted for S_PARM (nil: it has no frame-rate control).
        public var driverFPS: Double?
        /// An H.264 camera that took `h264KeyFrameInterval` as its key-frame period (false: it
        /// has no such control and keeps its own cadence; nil: not an H.264 format).
        public var keyFramePeriodSet: Bool?
        /// The driver's name for the camera (VIDIOC_QUERYCAP's card; libcamera's camera id).
        public var card = ""
        /// VIDIOC_QUERYCAP's driver ("uvcvideo", "vivid"; "libcamera" through libcamera's layer).
        public var driver = ""
        /// Opened through libcamera's V4L2 layer.
        public var isLibcamera: Bool { driver == LibcameraLayer.driverName }
    }

    public let path: String
    public let width: Int
    public let height: Int
    public let fps: Double
    /// Frames between key frames to ask of a camera that sends H.264 itself (UVC), when it has the
    /// control (V4L2_CID_MPEG_VIDEO_H264_I_PERIOD).
    public var h264KeyFrameInterval = 0
    /// Called for each frame kept; the bytes are the driver's buffer, valid during the call.
    public var onFrame: ((VideoFrame) -> Void)?
    /// Called when the camera is lost while streaming; returning true means the owner handles
    /// it (libcamera's layer cannot find a returning camera in the same process): the device is
    /// then abandoned, not closed, and no reopen is tried here.
    public var onLost: ((V4L2Error) -> Bool)?
    /// Called when a problem stops the camera for good (a format it cannot deliver); transient
    /// ones are retried and only logged.
    public var onFatalError: ((V4L2Error) -> Void)?
    public private(set) var negotiated: Negotiated?
    public private(set) var counters = CaptureCounters()
    public var isStreaming: Bool { fd >= 0 }
    /// No frame dequeued for this long while streaming: the camera is taken as lost.
    public var stallSeconds = 10.0

    private let loop: EventLoop
    private let device: V4L2Device
    private let bufferCount: Int
    private let now: () -> Double
    private var fd: Int32 = -1
    private var registration: EventLoop.Registration?
    private var buffers: [(address: UnsafeMutableRawPointer, length: Int)] = []
    /// The buffers exported as DMABUF fds (empty when the driver cannot export).
    private var dmabufs: [Int32] = []
    /// Buffers a consumer (the hardware encoder) is still reading; queued again on release.
    private var held: Set<Int> = []
    private var holdRequested = false
    /// Changes at every open, so a release for a buffer of an earlier stream is ignored.
    public private(set) var generation = 0
    private var retry: LoopDeadline?
    /// Failures, backoff and the outage's lines: one policy.
    private var log: RetryLog
    /// Frames flowed at some point: an outage pauses them and the recovery resumes them.
    private var everStreamed = false
    /// The size the driver snapped a request to, once said.
    private var snapNoted = ""
    private var lastDelivered = -Double.infinity
    private var running = false
    /// Checks that frames still come (`stallSeconds`), and the count it last saw.
    private var stallCheck: LoopDeadline?
    private var dequeuedAtCheck = 0

    public init(
        loop: EventLoop, device: V4L2Device, path: String, width: Int, height: Int, fps: Double,
        bufferCount: Int = 4, backoff: Backoff = Backoff(initial: 0.5, maximum: 10),
        now: @escaping () -> Double = { Double(Clock.monotonicNanoseconds()) / 1e9 }
    ) {
        self.loop = loop
        self.device = device
        self.path = path
        self.width = width
        self.height = height
        self.fps = min(25, max(1, fps))
        self.bufferCount = max(2, min(8, bufferCount))
        log = RetryLog(ReconnectPolicy(backoff: backoff))
        self.now = now
    }

    deinit { closeDevice() }

    /// Opens and starts streaming. A configuration problem (not a camera, no usable format) is
    /// thrown; a missing or vanished device is retried with backoff and only logged.
    public func start() throws {
        running = true
        do {
            try openAndStream()
        } catch let e as V4L2Error where e.isTransient {
            scheduleRetry(e)
        }
    }

    public func stop() { halt(releasing: true) }

    /// Stops without another call to the device: libcamera's layer turns STREAMOFF on a camera
    /// that has gone into libcamera stopping it with requests still queued, which aborts the
    /// process (libcamera 0.4's pipeline_handler.cpp asserts). The owner is about to replace the
    /// process, which releases the descriptor and the mappings.
    public func abandon() { halt(releasing: false) }

    private func halt(releasing: Bool) {
        running = false
        retry?.cancel()
        retry = nil
        stallCheck?.cancel()
        stallCheck = nil
        closeDevice(releasing: releasing)
    }

    // MARK: Opening

    func openAndStream() throws {
        closeDevice()
        counters.opens += 1
        switch device.open(path) {
        case .failure(let e):
            counters.failedOpens += 1
            throw V4L2Error(
                "cannot open camera \(path): \(e); check the device exists (v4l2-ctl --list-devices) and the agent is in the video group",
                errno: e.errno)
        case .success(let f):
            fd = f
        }
        do {
            negotiated = try negotiate()
            try startStreaming()
            if let n = negotiated {
                let what =
                    "\(n.format.fourCC) \(n.width)x\(n.height), \(bufferCount) buffers, \(fps) fps"
                    + (n.driverFPS.map { " (driver \($0))" } ?? " (driver has no rate control; dropping)")
                if log.recovered() && everStreamed {
                    log.note(.notice, "camera \(path): back, \(what); frames resume")
                } else {
                    log.note(.info, "camera \(path): \(what)")
                }
                everStreamed = true
            }
        } catch {
            closeDevice()
            throw error
        }
    }

    private func negotiate() throws -> Negotiated {
        var cap = v4l2_capability()
        let e = device.call(fd, .querycap, &cap)
        guard e == 0 else { throw V4L2Error.call(.querycap, path, e, hint: "is this a V4L2 device?") }
        let caps = cap.nodeCaps
        guard caps & UInt32(truncatingIfNeeded: V4L2_CAP_VIDEO_CAPTURE) != 0 else {
            throw V4L2Error(
                "\(path) (\(V4L2Text.string(cap.card))) is not a capture device; pick a camera from osh-edge probe", errno: ENOTTY)
        }
        guard caps & UInt32(truncatingIfNeeded: V4L2_CAP_STREAMING) != 0 else {
            throw V4L2Error("\(path) (\(V4L2Text.string(cap.card))) cannot stream (no mmap I/O); it is not supported", errno: ENOTTY)
        }
        var offered: [FourCC] = []
        for i in 0..<64 {
            var d = v4l2_fmtdesc()
            d.index = UInt32(i)
            d.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            let r = device.call(fd, .enumFmt, &d)
            if r == EINVAL { break }  // the end of the list
            guard r == 0 else { throw V4L2Error.call(.enumFmt, path, r) }
            offered.append(FourCC(rawValue: d.pixelformat))
        }
        let chosen: PixelFormat
        switch CaptureFormatChoice.choose(offered: offered, hasSize: { self.lists($0, width: self.width, height: self.height) }) {
        case .use(let f): chosen = f
        case .unsupported(let why): throw V4L2Error("camera \(path): \(why)", errno: EINVAL)
        }
        var f = v4l2_format()
        f.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        f.fmt.pix.width = UInt32(width)
        f.fmt.pix.height = UInt32(height)
        f.fmt.pix.pixelformat = chosen.fourCC.rawValue
        f.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        let s = device.call(fd, .sFmt, &f)
        guard s == 0 else { throw V4L2Error.call(.sFmt, path, s, hint: "the camera refused \(chosen.fourCC) \(width)x\(height)") }
        // The driver may adjust the request; accept another size, never another format.
        guard f.fmt.pix.pixelformat == chosen.fourCC.rawValue else {
            throw V4L2Error(
                "camera \(path) answered S_FMT \(chosen.fourCC) with \(FourCC(rawValue: f.fmt.pix.pixelformat)); format negotiation failed",
                errno: EINVAL)
        }
        let w = Int(f.fmt.pix.width), h = Int(f.fmt.pix.height)
        guard w >= 16, h >= 16, w % 2 == 0, h % 2 == 0 else {
            throw V4L2Error(
                "camera \(path) offers \(w)x\(h) for \(width)x\(height); the encoder needs an even size of at least 16x16", errno: EINVAL)
        }
        if (w != width || h != height) && snapNoted != "\(w)x\(h)" {
            snapNoted = "\(w)x\(h)"  // said once, not at every reopen
            Log.notice("camera \(path): asked for \(width)x\(height), the driver gives \(w)x\(h)")
        }
        var bpl = Int(f.fmt.pix.bytesperline)
        if bpl == 0 { bpl = chosen.isCompressed ? w : chosen.bytesPerLine(width: w) }
        var n = Negotiated(
            format: chosen, width: w, height: h, bytesPerLine: bpl,
            sizeImage: max(Int(f.fmt.pix.sizeimage), chosen.frameBytes(width: w, height: h)), driverFPS: nil)
        n.card = V4L2Text.string(cap.card)
        n.driver = V4L2Text.string(cap.driver)
        // libcamera's layer says nothing when its camera goes: notice it sooner.
        if n.isLibcamera { stallSeconds = min(stallSeconds, 4) }
        var p = v4l2_streamparm()
        p.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        if chosen == .h264 && h264KeyFrameInterval > 0 {
            var c = v4l2_control(id: OSH_V4L2_CID_MPEG_VIDEO_H264_I_PERIOD, value: Int32(h264KeyFrameInterval))
            n.keyFramePeriodSet = device.call(fd, .sCtrl, &c) == 0
        }
        p.parm.capture.timeperframe.numerator = 1000
        p.parm.capture.timeperframe.denominator = UInt32((fps * 1000).rounded())
        // Not every driver has frame-rate control; dropping covers that case.
        if device.call(fd, .sParm, &p) == 0, p.parm.capture.capability & UInt32(truncatingIfNeeded: V4L2_CAP_TIMEPERFRAME) != 0,
            p.parm.capture.timeperframe.numerator > 0
        {
            n.driverFPS = Double(p.parm.capture.timeperframe.denominator) / Double(p.parm.capture.timeperframe.numerator)
        }
        return n
    }

    /// Whether the camera lists `width`×`height` for `format` (true when it lists no sizes);
    /// the enumeration stops at the first match.
    private func lists(_ format: FourCC, width: Int, height: Int) -> Bool {
        let want = V4L2FrameSize(width: width, height: height)
        var found = false
        let entries = V4L2Probe.forEachFrameSize(device, fd: fd, fourCC: format) { entry in
            switch entry {
            case .size(let s): found = s == want
            case .range(let lo, let hi): found = want.isWithin(lo, hi)
            }
            return !found
        }
        return found || entries == 0
    }

    private func startStreaming() throws {
        var req = v4l2_requestbuffers()
        req.count = UInt32(bufferCount)
        req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        req.memory = V4L2_MEMORY_MMAP.rawValue
        var e = device.call(fd, .reqbufs, &req)
        guard e == 0 else { throw V4L2Error.call(.reqbufs, path, e, hint: "is another program using the camera?") }
        guard req.count >= 2 else {
            throw V4L2Error("camera \(path) granted \(req.count) buffers; streaming needs at least 2", errno: ENOMEM)
        }
        for i in 0..<Int(req.count) {
            var b = v4l2_buffer()
            b.index = UInt32(i)
            b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            b.memory = V4L2_MEMORY_MMAP.rawValue
            e = device.call(fd, .querybuf, &b)
            guard e == 0 else { throw V4L2Error.call(.querybuf, path, e) }
            switch device.mmap(fd, length: Int(b.length), offset: Int(b.m.offset)) {
            case .success(let p): buffers.append((p, Int(b.length)))
            case .failure(let err): throw V4L2Error("camera \(path): cannot map buffer \(i): \(err)", errno: err.errno)
            }
            e = device.call(fd, .qbuf, &b)
            guard e == 0 else { throw V4L2Error.call(.qbuf, path, e) }
        }
        exportBuffers(count: Int(req.count))
        var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
        e = device.call(fd, .streamon, &type)
        guard e == 0 else { throw V4L2Error.call(.streamon, path, e) }
        do {
            registration = try loop.add(fd: device.pollFD(fd), events: .readable) { [weak self] ev in self?.readable(ev) }
            dequeuedAtCheck = counters.dequeued
            if stallCheck == nil { stallCheck = LoopDeadline(loop: loop) { [weak self] in self?.checkStall() } }
            try stallCheck?.arm(after: stallSeconds)
        } catch {
            throw V4L2Error("camera \(path): cannot watch it on the event loop: \(error)", errno: EIO)
        }
    }

    /// DMABUF fds for the buffers, for zero-copy hand-over to the M2M encoder. Optional:
    /// a driver that cannot export just means one copy.
    private func exportBuffers(count: Int) {
        for i in 0..<count {
            var x = v4l2_exportbuffer()
            x.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            x.index = UInt32(i)
            x.flags = UInt32(O_CLOEXEC | O_RDONLY)
            guard device.call(fd, .expbuf, &x) == 0, x.fd >= 0 else {
                for d in dmabufs { device.close(d) }
                dmabufs.removeAll()
                return
            }
            dmabufs.append(x.fd)
        }
    }

    /// Whether frames carry DMABUF fds.
    public var exportsDMABUF: Bool { !dmabufs.isEmpty }

    /// Called inside `onFrame`: keep this frame's buffer out of the driver's queue until
    /// `release(bufferIndex:generation:)` (the encoder reads it directly).
    public func holdCurrentBuffer() { holdRequested = true }

    /// Buffers currently held by a consumer.
    public var heldCount: Int { held.count }

    /// Gives a held buffer back to the driver.
    public func release(bufferIndex i: Int, generation g: Int) {
        guard g == generation, held.remove(i) != nil, fd >= 0 else { return }
        var b = v4l2_buffer()
        b.index = UInt32(i)
        b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        b.memory = V4L2_MEMORY_MMAP.rawValue
        let q = device.call(fd, .qbuf, &b)
        if q != 0 { lost(V4L2Error.call(.qbuf, path, q)) }
    }

    // MARK: Frames

    private func readable(_ events: EventLoop.Events) {
        var got = 0
        while fd >= 0 {
            var b = v4l2_buffer()
            b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            b.memory = V4L2_MEMORY_MMAP.rawValue
            let e = device.call(fd, .dqbuf, &b)
            if e == EAGAIN {
                counters.eagain += 1
                // POLLERR with nothing to dequeue while streaming: the device is gone.
                if got == 0 && !events.isDisjoint(with: [.error, .hangup]) { lost(V4L2Error.call(.dqbuf, path, ENODEV)) }
                return
            }
            guard e == 0 else { return lost(V4L2Error.call(.dqbuf, path, e)) }
            got += 1
            counters.dequeued += 1
            holdRequested = false
            deliver(b)
            guard fd >= 0 else { return }  // stopped from inside onFrame
            if holdRequested {
                held.insert(Int(b.index))
                continue
            }
            let q = device.call(fd, .qbuf, &b)
            guard q == 0 else { return lost(V4L2Error.call(.qbuf, path, q)) }
        }
    }

    private func deliver(_ b: v4l2_buffer) {
        guard let n = negotiated, Int(b.index) < buffers.count else { return }
        // An errored buffer (V4L2_BUF_FLAG_ERROR) holds a damaged picture: skip it.
        if b.flags & UInt32(truncatingIfNeeded: V4L2_BUF_FLAG_ERROR) != 0 { return }
        let t = now()
        // Keep a frame when at least 90 % of a period has passed: a driver running at exactly
        // the requested rate is never thinned by jitter.
        guard t - lastDelivered >= 0.9 / fps else { counters.droppedForRate += 1; return }
        lastDelivered = t
        let buf = buffers[Int(b.index)]
        let used = min(buf.length, b.bytesused > 0 ? Int(b.bytesused) : buf.length)
        counters.delivered += 1
        let i = Int(b.index)
        onFrame?(
            VideoFrame(
                format: n.format, width: n.width, height: n.height, bytesPerLine: n.bytesPerLine,
                monotonicTime: t, bytes: UnsafeRawBufferPointer(start: buf.address, count: used),
                dmabufFD: i < dmabufs.count ? dmabufs[i] : -1, bufferIndex: i))
    }

    // MARK: Loss and retry

    /// One timer per `stallSeconds`, not per frame: it compares the dequeue count.
    private func checkStall() {
        guard running, fd >= 0 else { return }
        if counters.dequeued == dequeuedAtCheck {
            return lost(
                V4L2Error(
                    "no frame for \(RetryLog.seconds(stallSeconds)) while streaming (unplugged, or the camera stopped without saying so)",
                    errno: ETIMEDOUT))
        }
        dequeuedAtCheck = counters.dequeued
        do { try stallCheck?.arm(after: stallSeconds) } catch { Log.error("camera \(path): cannot arm the stall check: \(error)") }
    }

    private func lost(_ e: V4L2Error) {
        counters.deviceLost += 1
        counters.lastError = e.message
        if onLost?(e) == true { return abandon() }
        closeDevice()
        scheduleRetry(e, lost: true)
    }

    /// `lost`: the camera was streaming (its loss is the news, said with when it is retried).
    private func scheduleRetry(_ e: V4L2Error, lost: Bool = false) {
        guard running else { return }
        counters.lastError = e.message
        // The first failure of an outage says when the next attempt is; the retries after it
        // only what changes.
        let pause = lost && !log.isDown ? "frames pause, " : ""
        let step = log.nextStep
        let verdict = log.failed(
            .warning, lost ? "camera \(path) lost (\(e))" : "\(e)",
            firstSuffix: "; \(pause)retrying in \(RetryLog.seconds(step))")
        if retry == nil { retry = LoopDeadline(loop: loop) { [weak self] in self?.retryNow() } }
        do { try retry?.arm(after: verdict.delay) } catch { Log.error("camera \(path): cannot arm the retry timer: \(error)") }
    }

    private func retryNow() {
        guard running else { return }
        do {
            try openAndStream()
        } catch let e as V4L2Error where e.isTransient {
            scheduleRetry(e)
        } catch let e as V4L2Error {
            running = false
            counters.lastError = e.message
            Log.error("\(e)")
            onFatalError?(e)
        } catch {
            scheduleRetry(V4L2Error("camera \(path): \(error)", errno: EIO))
        }
    }

    /// `releasing`: STREAMOFF, unmap, free the buffers and close; otherwise only forget them.
    private func closeDevice(releasing: Bool = true) {
        stallCheck?.disarm()
        if let r = registration { loop.remove(r) }
        registration = nil
        if releasing && fd >= 0 {
            var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
            _ = device.call(fd, .streamoff, &type)
        }
        if releasing { for d in dmabufs { device.close(d) } }
        dmabufs.removeAll()
        held.removeAll()
        generation += 1
        if releasing { for b in buffers { device.munmap(b.address, length: b.length) } }
        buffers.removeAll(keepingCapacity: true)
        if releasing && fd >= 0 {
            // Freeing the buffers (count 0) before close lets another process take the camera at once.
            var req = v4l2_requestbuffers()
            req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            req.memory = V4L2_MEMORY_MMAP.rawValue
            _ = device.call(fd, .reqbufs, &req)
            device.close(fd)
        }
        fd = -1
    }
}
