// Size (~620 lines): one device model — the camera and the M2M codecs share the buffer-queue and
// streaming state machine they simulate; built only into tests and the development executable.
//
// The mocking half of the V4L2 seam: a UVC-like camera, the Pi's bcm2835 M2M H.264 encoder
// and other M2M codecs (vicodec, another SoC's encoder), modelled closely enough to drive every path of V4L2Camera and V4L2M2MEncoder
// without hardware — formats and sizes, buffer queue states, streaming, the poll fd
// (an eventfd, readable while a finished buffer waits), unplugging, injected errnos — and a
// trace of every ioctl. No device exists on the build machine; this is how that code is tested.

import CShim
import CV4L2
import OSHCore
#if canImport(Glibc)
import Glibc
#endif
import OSHPlatform

public final class SimulatedV4L2: V4L2Device {
    public enum Model: Sendable {
        /// A capture camera: what ENUM_FMT lists, the sizes it has, what S_FMT really accepts
        /// (nil = the listed formats) and whether S_PARM works.
        case camera(card: String, formats: [FourCC], sizes: [V4L2FrameSize], accepts: [FourCC]? = nil, frameRateControl: Bool = true)
        /// bcm2835-codec-encode: raw in on OUTPUT_MPLANE, H.264 out on CAPTURE_MPLANE.
        case encoder
        /// Any other memory-to-memory codec, known by what its CAPTURE and OUTPUT queues list.
        /// A multi-planar one runs like `encoder` (whatever `capture` says, it writes the fake
        /// H.264 access unit); a single-planar one answers only QUERYCAP, ENUM_FMT and
        /// ENUM_FRAMESIZES (all the probe asks).
        case m2m(card: String, driver: String, capture: [FourCC], output: [FourCC], multiplanar: Bool)
        /// Any other node (decoder, ISP, metadata).
        case other(card: String)

        /// vicodec's three nodes as Linux 6.12 registers them (card "vicodec" on each; single-
        /// planar unless loaded with multiplanar=1): a FWHT encoder, a FWHT decoder and a
        /// stateless FWHT decoder.
        public static let vicodecEncoder = Model.m2m(
            card: "vicodec", driver: "vicodec", capture: [FourCC("FWHT")],
            output: [.yu12, .nv12, .yuyv, FourCC("RGB3")], multiplanar: false)
        public static let vicodecDecoder = Model.m2m(
            card: "vicodec", driver: "vicodec", capture: [.yu12, .nv12, .yuyv],
            output: [FourCC("FWHT")], multiplanar: false)
        public static let vicodecStatelessDecoder = Model.m2m(
            card: "vicodec", driver: "vicodec", capture: [.yu12, .nv12, .yuyv],
            output: [FourCC("SFWH")], multiplanar: false)
    }

    /// What ENUM_FMT flags compressed, as the kernel's v4l_fill_fmtdesc does.
    static let compressed: Set<FourCC> = [.h264, .mjpeg, .jpeg, FourCC("FWHT"), FourCC("SFWH"), FourCC("HEVC")]

    final class Buffer {
        enum State { case dequeued, queued, done }
        let memory: UnsafeMutableRawPointer
        let length: Int
        var state = State.dequeued
        var bytesused = 0
        var flags: UInt32 = 0
        var timestamp = timeval()
        var sequence: UInt32 = 0
        var doneOrder = 0
        var queuedOrder = 0
        /// DMABUF queues: the exported buffer this one currently points at.
        var imported: Buffer?
        init(length: Int) {
            self.length = length
            memory = UnsafeMutableRawPointer.allocate(byteCount: length, alignment: 64)
            memory.initializeMemory(as: UInt8.self, repeating: 0, count: length)
        }
        deinit { memory.deallocate() }
    }

    final class Queue {
        let type: UInt32
        var fourCC = FourCC(rawValue: 0)
        var width = 0, height = 0, bytesPerLine = 0, sizeImage = 0
        var buffers: [Buffer] = []
        var streaming = false
        var sequence: UInt32 = 0
        var memory = V4L2_MEMORY_MMAP.rawValue
        init(type: UInt32) { self.type = type }
    }

    final class Node {
        let path: String
        let model: Model
        var present = true
        var capture: Queue
        var output: Queue
        var controls: [UInt32: Int32] = [:]
        /// Controls the camera node has (S_CTRL of another → EINVAL, as uvcvideo answers).
        var cameraControls: Set<UInt32> = []
        /// Sizes of one format when they differ from the camera's list (a webcam with YUYV
        /// only at 640×480 and MJPEG up to 1280×720).
        var sizesByFormat: [FourCC: [V4L2FrameSize]] = [:]
        var fps: Double = 30
        var encoded = 0
        init(path: String, model: Model) {
            self.path = path
            self.model = model
            switch model {
            case .encoder, .m2m(_, _, _, _, true):
                capture = Queue(type: V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE.rawValue)
                output = Queue(type: V4L2_BUF_TYPE_VIDEO_OUTPUT_MPLANE.rawValue)
            case .m2m:
                capture = Queue(type: V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
                output = Queue(type: V4L2_BUF_TYPE_VIDEO_OUTPUT.rawValue)
            default:
                capture = Queue(type: V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
                output = Queue(type: V4L2_BUF_TYPE_VIDEO_OUTPUT_MPLANE.rawValue)
            }
        }
        var card: String {
            switch model {
            case .camera(let c, _, _, _, _): return c
            case .encoder: return V4L2Probe.encoderCard
            case .m2m(let c, _, _, _, _): return c
            case .other(let c): return c
            }
        }
        /// Runs the encoder model: bcm2835 or a multi-planar M2M codec.
        var isEncoder: Bool {
            switch model {
            case .encoder, .m2m(_, _, _, _, true): return true
            default: return false
            }
        }
        /// A single-planar M2M node: listed and probed, never streamed.
        var isProbeOnly: Bool { if case .m2m(_, _, _, _, false) = model { return true }; return false }
    }

    struct Injection {
        var request: V4L2Request
        var errno: Int32
        var remaining: Int
        var path: String?
    }

    private var nodes: [Node] = []
    /// Open handles: the fd is a real eventfd (so the event loop can watch it) → its node.
    private var handles: [Int32: Node] = [:]
    private var injections: [Injection] = []
    private var order = 0
    private var mappings = 0
    /// Exported DMABUF fds (fake numbers, never real descriptors) → the buffer they share.
    private var exported: [Int32: Buffer] = [:]
    private var nextDMABUF: Int32 = 1_000_000
    /// Cameras that cannot export DMABUFs (EXPBUF → ENOTTY), as some drivers.
    public var exportDisabled: Set<String> = []
    /// Cameras whose QUERYCAP names another driver than uvcvideo ("libcamera": a node answered
    /// by libcamera's V4L2 layer, whose card is the camera's id).
    public var cameraDrivers: [String: String] = [:]

    public var openDMABUFs: Int { exported.count }

    /// Every ioctl, open, close and mmap, e.g. "video0 S_FMT CAPTURE YUYV 640x480".
    public private(set) var trace: [String] = []
    public var openHandles: Int { handles.count }
    public var liveMappings: Int { mappings }

    public init() {}

    /// A node at `path` (e.g. "/dev/video0").
    public func add(_ path: String, _ model: Model) { nodes.append(Node(path: path, model: model)) }

    /// The camera at `path` offers `format` only at these sizes (its other formats keep the list
    /// the camera was added with).
    public func limitSizes(_ path: String, format: FourCC, to sizes: [V4L2FrameSize]) {
        node(path)?.sizesByFormat[format] = sizes
    }

    /// The camera at `path` has these controls (e.g. an H.264 UVC camera's key-frame period).
    public func addCameraControls(_ path: String, _ ids: [UInt32]) {
        node(path)?.cameraControls.formUnion(ids)
    }

    /// The next `times` calls of `request` (on `path`, or on any node) fail with `errno`.
    public func inject(_ request: V4L2Request, errno: Int32, times: Int = 1, path: String? = nil) {
        injections.append(Injection(request: request, errno: errno, remaining: times, path: path))
    }

    /// The device disappears: open fails with ENOENT, calls on open handles fail with ENODEV,
    /// and the poll fd wakes (as POLLERR would) so the owner notices. `silently`: open fails,
    /// but open handles hear nothing and frames just stop (libcamera's V4L2 layer).
    public func unplug(_ path: String, silently: Bool = false) {
        guard let n = node(path) else { return }
        n.present = false
        if !silently { for (fd, h) in handles where h === n { _ = osh_eventfd_write(fd, 1) } }
        trace.append("\(short(path)) UNPLUGGED")
    }

    /// Plugged back in, fresh (no buffers, not streaming).
    public func plug(_ path: String) {
        guard let n = node(path) else { return }
        n.present = true
        n.capture = Queue(type: n.capture.type)
        n.output = Queue(type: n.output.type)
        trace.append("\(short(path)) PLUGGED")
    }

    /// The camera finishes a frame into the oldest queued buffer, every byte `fill` (an H.264
    /// camera writes an SPS+PPS+IDR access unit instead). False: nothing queued or not
    /// streaming, so the frame is lost — as a real driver would lose it.
    @discardableResult
    public func deliverFrame(_ path: String, fill: UInt8 = 0x80, bytes: [UInt8]? = nil) -> Bool {
        guard let n = node(path), n.present, !n.isEncoder, n.capture.streaming,
            let b = n.capture.buffers.filter({ $0.state == .queued }).min(by: { $0.queuedOrder < $1.queuedOrder })
        else { return false }
        if let bytes {
            // A compressed frame as the camera sent it (an MJPEG picture, an H.264 access unit).
            UnsafeMutableRawBufferPointer(start: b.memory, count: b.length).copyBytes(from: bytes.prefix(b.length))
            b.bytesused = min(b.length, bytes.count)
        } else if n.capture.fourCC == .h264 {
            let au = Self.fakeAccessUnit(key: true, frame: Int(n.capture.sequence), first: fill)
            UnsafeMutableRawBufferPointer(start: b.memory, count: b.length).copyBytes(from: au.prefix(b.length))
            b.bytesused = min(b.length, au.count)
        } else {
            b.memory.initializeMemory(as: UInt8.self, repeating: fill, count: b.length)
            b.bytesused = n.capture.sizeImage
        }
        finish(b, in: n.capture, node: n, flags: UInt32(truncatingIfNeeded: V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC))
        return true
    }

    /// Controls the encoder was given, by control id.
    public func controls(_ path: String) -> [UInt32: Int32] { node(path)?.controls ?? [:] }

    /// The trace lines for one node, without its name (for compact assertions).
    public func trace(of path: String) -> [String] {
        let p = short(path) + " "
        return trace.filter { $0.hasPrefix(p) }.map { String($0.dropFirst(p.count)) }
    }

    public func clearTrace() { trace.removeAll() }

    /// SPS, PPS, IDR (or a P slice) with start codes; the slice carries the frame number and
    /// the first input byte so a test can follow a frame through.
    public static func fakeAccessUnit(key: Bool, frame: Int, first: UInt8, headers: Bool = true) -> [UInt8] {
        var au: [UInt8] = []
        if key && headers { au += [0, 0, 0, 1, 0x67, 0x42, 0xc0, 0x1e, 0xda] + [0, 0, 0, 1, 0x68, 0xce, 0x3c, 0x80] }
        au += [0, 0, 0, 1, key ? 0x65 : 0x41, 0x88, UInt8(truncatingIfNeeded: frame >> 8), UInt8(truncatingIfNeeded: frame), first, 0x10]
        return au
    }

    deinit { for fd in handles.keys { _ = Glibc.close(fd) } }

    // MARK: V4L2Device

    public func listNodes() -> [String] { nodes.filter(\.present).map(\.path) }

    public func open(_ path: String) -> Result<Int32, SystemError> {
        guard let n = node(path), n.present else {
            trace.append("\(short(path)) OPEN → ENOENT")
            return .failure(SystemError("open", errno: ENOENT, subject: path))
        }
        let fd = osh_eventfd_create()
        guard fd >= 0 else { return .failure(.last("eventfd")) }
        handles[fd] = n
        trace.append("\(short(path)) OPEN")
        return .success(fd)
    }

    public func close(_ fd: Int32) {
        if exported.removeValue(forKey: fd) != nil { return }
        guard let n = handles.removeValue(forKey: fd) else { return }
        // The last close frees the queues, as the kernel does.
        if !handles.values.contains(where: { $0 === n }) {
            n.capture.streaming = false
            n.output.streaming = false
            n.capture.buffers.removeAll()
            n.output.buffers.removeAll()
        }
        _ = Glibc.close(fd)
        trace.append("\(short(n.path)) CLOSE")
    }

    public func mmap(_ fd: Int32, length: Int, offset: Int) -> Result<UnsafeMutableRawPointer, SystemError> {
        guard let n = handles[fd] else { return .failure(SystemError("mmap", errno: EBADF)) }
        guard n.present else { return .failure(SystemError("mmap", errno: ENODEV, subject: n.path)) }
        let q = offset >= Self.outputOffset ? n.output : n.capture
        let i = (offset % Self.outputOffset) / Self.page
        guard i < q.buffers.count, length <= q.buffers[i].length else {
            return .failure(SystemError("mmap", errno: EINVAL, subject: n.path))
        }
        mappings += 1
        trace.append("\(short(n.path)) MMAP \(queueName(q)) #\(i)")
        return .success(q.buffers[i].memory)
    }

    public func munmap(_ address: UnsafeMutableRawPointer, length: Int) { mappings -= 1 }

    public func pollFD(_ fd: Int32) -> Int32 { fd }

    public func ioctl(_ fd: Int32, _ request: V4L2Request, _ arg: UnsafeMutableRawPointer) -> Int32 {
        guard let n = handles[fd] else { return EBADF }
        if let i = injections.firstIndex(where: { $0.request == request && ($0.path == nil || $0.path == n.path) && $0.remaining > 0 }) {
            injections[i].remaining -= 1
            let e = injections[i].errno
            if injections[i].remaining == 0 { injections.remove(at: i) }
            trace.append("\(short(n.path)) \(request.rawValue) → \(Self.errnoName(e)) (injected)")
            return e
        }
        guard n.present else {
            trace.append("\(short(n.path)) \(request.rawValue) → ENODEV")
            return ENODEV
        }
        let (e, detail) = handle(n, fd: fd, request, arg)
        trace.append("\(short(n.path)) \(request.rawValue)\(detail.isEmpty ? "" : " " + detail)\(e == 0 ? "" : " → " + Self.errnoName(e))")
        return e
    }

    // MARK: The model

    private static let page = 4096
    private static let outputOffset = 1 << 24

    private func node(_ path: String) -> Node? { nodes.first { $0.path == path } }
    private func short(_ path: String) -> String { String(path.split(separator: "/").last ?? Substring(path)) }

    private func queue(_ n: Node, type: UInt32) -> Queue? {
        if type == n.capture.type { return n.capture }
        if n.isEncoder && type == n.output.type { return n.output }
        return nil
    }

    private func queueName(_ q: Queue) -> String {
        switch q.type {
        case V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue: return "CAPTURE"
        case V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE.rawValue: return "CAPTURE_MPLANE"
        case V4L2_BUF_TYPE_VIDEO_OUTPUT_MPLANE.rawValue: return "OUTPUT_MPLANE"
        default: return "type\(q.type)"
        }
    }

    static func errnoName(_ e: Int32) -> String {
        switch e {
        case EINVAL: return "EINVAL"
        case EAGAIN: return "EAGAIN"
        case ENODEV: return "ENODEV"
        case EBUSY: return "EBUSY"
        case ENOTTY: return "ENOTTY"
        case ENOMEM: return "ENOMEM"
        case EIO: return "EIO"
        case EBADF: return "EBADF"
        case ENOENT: return "ENOENT"
        default: return "errno \(e)"
        }
    }

    private func handle(_ n: Node, fd: Int32, _ request: V4L2Request, _ arg: UnsafeMutableRawPointer) -> (Int32, String) {
        if n.isProbeOnly && ![.querycap, .enumFmt, .enumFramesizes].contains(request) { return (ENOTTY, "not modelled") }
        switch request {
        case .querycap:
            let cap = arg.assumingMemoryBound(to: v4l2_capability.self)
            cap.pointee = v4l2_capability()
            V4L2Text.set(&cap.pointee.card, n.card)
            let devCaps: UInt32
            switch n.model {
            case .camera:
                V4L2Text.set(&cap.pointee.driver, cameraDrivers[n.path] ?? "uvcvideo")
                V4L2Text.set(&cap.pointee.bus_info, "usb-0000:01:00.0-1.2")
                devCaps = UInt32(truncatingIfNeeded: V4L2_CAP_VIDEO_CAPTURE) | UInt32(truncatingIfNeeded: V4L2_CAP_STREAMING)
            case .encoder:
                V4L2Text.set(&cap.pointee.driver, "bcm2835-codec")
                V4L2Text.set(&cap.pointee.bus_info, "platform:bcm2835-codec")
                devCaps = UInt32(truncatingIfNeeded: V4L2_CAP_VIDEO_M2M_MPLANE) | UInt32(truncatingIfNeeded: V4L2_CAP_STREAMING)
            case .m2m(_, let driver, _, _, let multiplanar):
                V4L2Text.set(&cap.pointee.driver, driver)
                V4L2Text.set(&cap.pointee.bus_info, "platform:" + driver)
                devCaps =
                    UInt32(truncatingIfNeeded: multiplanar ? V4L2_CAP_VIDEO_M2M_MPLANE : V4L2_CAP_VIDEO_M2M)
                    | UInt32(truncatingIfNeeded: V4L2_CAP_STREAMING)
            case .other:
                V4L2Text.set(&cap.pointee.driver, "sim")
                devCaps = UInt32(truncatingIfNeeded: V4L2_CAP_STREAMING)
            }
            cap.pointee.device_caps = devCaps
            cap.pointee.capabilities = devCaps | UInt32(truncatingIfNeeded: V4L2_CAP_DEVICE_CAPS)
            return (0, "")

        case .enumFmt:
            let d = arg.assumingMemoryBound(to: v4l2_fmtdesc.self)
            let list = formats(n, type: d.pointee.type)
            let i = Int(d.pointee.index)
            guard i < list.count else { return (EINVAL, "#\(i)") }
            d.pointee.pixelformat = list[i].rawValue
            d.pointee.flags = Self.compressed.contains(list[i]) ? UInt32(truncatingIfNeeded: V4L2_FMT_FLAG_COMPRESSED) : 0
            V4L2Text.set(&d.pointee.description, list[i].description)
            return (0, "#\(i) \(list[i])")

        case .enumFramesizes:
            let s = arg.assumingMemoryBound(to: v4l2_frmsizeenum.self)
            let i = Int(s.pointee.index)
            switch n.model {
            case .camera(_, let formats, let all, _, _):
                let f = FourCC(rawValue: s.pointee.pixel_format)
                let sizes = n.sizesByFormat[f] ?? all
                guard formats.contains(f), i < sizes.count else { return (EINVAL, "#\(i)") }
                s.pointee.type = V4L2_FRMSIZE_TYPE_DISCRETE.rawValue
                s.pointee.discrete.width = UInt32(sizes[i].width)
                s.pointee.discrete.height = UInt32(sizes[i].height)
                return (0, "#\(i) \(sizes[i])")
            case .encoder, .m2m:
                guard i == 0 else { return (EINVAL, "#\(i)") }
                s.pointee.type = V4L2_FRMSIZE_TYPE_STEPWISE.rawValue
                s.pointee.stepwise = v4l2_frmsize_stepwise(
                    min_width: 32, max_width: 1920, step_width: 2,
                    min_height: 32, max_height: 1920, step_height: 2)
                return (0, "#0 32x32-1920x1920")
            case .other:
                return (EINVAL, "")
            }

        case .gFmt, .sFmt:
            let f = arg.assumingMemoryBound(to: v4l2_format.self)
            guard let q = queue(n, type: f.pointee.type) else { return (EINVAL, "type \(f.pointee.type)") }
            if request == .sFmt {
                if q.streaming || !q.buffers.isEmpty { return (EBUSY, queueName(q)) }
                if n.isEncoder { setEncoderFormat(n, q, f) } else { setCameraFormat(n, q, f) }
            }
            if n.isEncoder {
                f.pointee.fmt.pix_mp.width = UInt32(q.width)
                f.pointee.fmt.pix_mp.height = UInt32(q.height)
                f.pointee.fmt.pix_mp.pixelformat = q.fourCC.rawValue
                f.pointee.fmt.pix_mp.num_planes = 1
                f.pointee.fmt.pix_mp.plane_fmt.0.bytesperline = UInt32(q.bytesPerLine)
                f.pointee.fmt.pix_mp.plane_fmt.0.sizeimage = UInt32(q.sizeImage)
            } else {
                f.pointee.fmt.pix.width = UInt32(q.width)
                f.pointee.fmt.pix.height = UInt32(q.height)
                f.pointee.fmt.pix.pixelformat = q.fourCC.rawValue
                f.pointee.fmt.pix.bytesperline = UInt32(q.bytesPerLine)
                f.pointee.fmt.pix.sizeimage = UInt32(q.sizeImage)
            }
            return (0, "\(queueName(q)) \(q.fourCC) \(q.width)x\(q.height)")

        case .sParm:
            let p = arg.assumingMemoryBound(to: v4l2_streamparm.self)
            if case .camera(_, _, _, _, let control) = n.model, control {
                let t = p.pointee.parm.capture.timeperframe
                guard t.numerator > 0, t.denominator > 0 else { return (EINVAL, "") }
                // Like many UVC cameras: only a few rates; the nearest one at or above the request.
                let asked = Double(t.denominator) / Double(t.numerator)
                let rate = [5.0, 10, 15, 20, 25, 30].first { $0 >= asked - 0.01 } ?? 30
                n.fps = rate
                p.pointee.parm.capture.capability = UInt32(truncatingIfNeeded: V4L2_CAP_TIMEPERFRAME)
                p.pointee.parm.capture.timeperframe = v4l2_fract(numerator: 1, denominator: UInt32(rate))
                return (0, "\(rate) fps")
            }
            if n.isEncoder { return (0, "") }
            return (ENOTTY, "")

        case .sCtrl:
            let c = arg.assumingMemoryBound(to: v4l2_control.self)
            guard n.isEncoder else {
                guard n.cameraControls.contains(c.pointee.id) else { return (EINVAL, "id \(c.pointee.id)") }
                n.controls[c.pointee.id] = c.pointee.value
                return (0, "\(controlName(c.pointee.id))=\(c.pointee.value)")
            }
            let known = [
                OSH_V4L2_CID_MPEG_VIDEO_BITRATE, OSH_V4L2_CID_MPEG_VIDEO_H264_I_PERIOD,
                OSH_V4L2_CID_MPEG_VIDEO_REPEAT_SEQ_HEADER, OSH_V4L2_CID_MPEG_VIDEO_H264_LEVEL,
                OSH_V4L2_CID_MPEG_VIDEO_H264_PROFILE,
            ]
            guard known.contains(c.pointee.id) else { return (EINVAL, "id \(c.pointee.id)") }
            n.controls[c.pointee.id] = c.pointee.value
            return (0, "\(controlName(c.pointee.id))=\(c.pointee.value)")

        case .reqbufs:
            let r = arg.assumingMemoryBound(to: v4l2_requestbuffers.self)
            guard let q = queue(n, type: r.pointee.type) else { return (EINVAL, "") }
            let dmabuf = r.pointee.memory == V4L2_MEMORY_DMABUF.rawValue
            // Only the encoder's raw input imports DMABUFs (as bcm2835-codec does).
            guard r.pointee.memory == V4L2_MEMORY_MMAP.rawValue || (dmabuf && q === n.output) else {
                return (EINVAL, "\(queueName(q)) memory \(r.pointee.memory)")
            }
            if q.streaming { return (EBUSY, queueName(q)) }
            let count = r.pointee.count == 0 ? 0 : min(8, max(2, Int(r.pointee.count)))
            q.memory = r.pointee.memory
            q.buffers = (0..<count).map { _ in Buffer(length: dmabuf ? 1 : max(Self.page, q.sizeImage)) }
            r.pointee.count = UInt32(count)
            return (0, "\(queueName(q)) \(count)\(dmabuf ? " DMABUF" : "")")

        case .expbuf:
            let x = arg.assumingMemoryBound(to: v4l2_exportbuffer.self)
            guard !n.isEncoder, !exportDisabled.contains(n.path) else { return (ENOTTY, "") }
            guard let q = queue(n, type: x.pointee.type), Int(x.pointee.index) < q.buffers.count else { return (EINVAL, "") }
            nextDMABUF += 1
            exported[nextDMABUF] = q.buffers[Int(x.pointee.index)]
            x.pointee.fd = nextDMABUF
            return (0, "\(queueName(q)) #\(x.pointee.index)")

        case .querybuf, .qbuf, .dqbuf:
            let b = arg.assumingMemoryBound(to: v4l2_buffer.self)
            guard let q = queue(n, type: b.pointee.type), b.pointee.memory == q.memory else {
                return (EINVAL, "memory \(b.pointee.memory)")
            }
            let mplane = n.isEncoder
            if mplane && (b.pointee.length < 1 || b.pointee.m.planes == nil) { return (EINVAL, "\(queueName(q)) no planes") }
            switch request {
            case .querybuf:
                let i = Int(b.pointee.index)
                guard i < q.buffers.count else { return (EINVAL, "\(queueName(q)) #\(i)") }
                let offset = (q === n.output ? Self.outputOffset : 0) + i * Self.page
                if mplane, let p = b.pointee.m.planes {
                    p.pointee.length = UInt32(q.buffers[i].length)
                    p.pointee.m.mem_offset = UInt32(offset)
                    b.pointee.length = 1
                } else {
                    b.pointee.length = UInt32(q.buffers[i].length)
                    b.pointee.m.offset = UInt32(offset)
                }
                return (0, "\(queueName(q)) #\(i)")
            case .qbuf:
                let i = Int(b.pointee.index)
                guard i < q.buffers.count, q.buffers[i].state == .dequeued else { return (EINVAL, "\(queueName(q)) #\(i)") }
                let buf = q.buffers[i]
                if q === n.output, let p = b.pointee.m.planes {
                    buf.bytesused = Int(p.pointee.bytesused)
                    buf.timestamp = b.pointee.timestamp
                    if q.memory == V4L2_MEMORY_DMABUF.rawValue {
                        guard let src = exported[p.pointee.m.fd] else {
                            return (EBADF, "\(queueName(q)) #\(i) dmabuf fd \(p.pointee.m.fd)")
                        }
                        buf.imported = src
                    }
                }
                order += 1
                buf.queuedOrder = order
                buf.state = .queued
                if n.isEncoder { encode(n) }
                return (0, "\(queueName(q)) #\(i)")
            default:
                guard q.streaming else { return (EINVAL, "\(queueName(q)) not streaming") }
                guard
                    let i = q.buffers.indices.filter({ q.buffers[$0].state == .done }).min(by: {
                        q.buffers[$0].doneOrder < q.buffers[$1].doneOrder
                    })
                else {
                    return (EAGAIN, queueName(q))
                }
                let buf = q.buffers[i]
                buf.state = .dequeued
                b.pointee.index = UInt32(i)
                b.pointee.flags = buf.flags
                b.pointee.timestamp = buf.timestamp
                b.pointee.sequence = buf.sequence
                if mplane, let p = b.pointee.m.planes {
                    p.pointee.bytesused = UInt32(buf.bytesused)
                    p.pointee.data_offset = 0
                    b.pointee.length = 1
                } else {
                    b.pointee.bytesused = UInt32(buf.bytesused)
                }
                drainIfIdle(n, fd: fd)
                return (0, "\(queueName(q)) #\(i)")
            }

        case .streamon, .streamoff:
            let type = UInt32(bitPattern: arg.assumingMemoryBound(to: Int32.self).pointee)
            guard let q = queue(n, type: type) else { return (EINVAL, "") }
            if request == .streamon {
                guard !q.buffers.isEmpty else { return (EINVAL, "\(queueName(q)) no buffers") }
                q.streaming = true
                if n.isEncoder { encode(n) }
            } else {
                q.streaming = false
                for b in q.buffers { b.state = .dequeued }
            }
            return (0, queueName(q))
        }
    }

    private func formats(_ n: Node, type: UInt32) -> [FourCC] {
        switch n.model {
        case .camera(_, let f, _, _, _): return type == V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue ? f : []
        case .encoder:
            if type == V4L2_BUF_TYPE_VIDEO_OUTPUT_MPLANE.rawValue { return [.yu12, .nv12, .yuyv] }
            if type == V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE.rawValue { return [.h264] }
            return []
        case .m2m(_, _, let capture, let output, _):
            if type == n.capture.type { return capture }
            if type == n.output.type { return output }
            return []
        case .other: return []
        }
    }

    /// UVC behaviour: an unknown format becomes the first accepted one; the size snaps to the
    /// nearest one the camera has.
    private func setCameraFormat(_ n: Node, _ q: Queue, _ f: UnsafeMutablePointer<v4l2_format>) {
        guard case .camera(_, let listed, let all, let accepts, _) = n.model else { return }
        let ok = accepts ?? listed
        let asked = FourCC(rawValue: f.pointee.fmt.pix.pixelformat)
        q.fourCC = ok.contains(asked) ? asked : (ok.first ?? asked)
        let sizes = n.sizesByFormat[q.fourCC] ?? all
        let w = Int(f.pointee.fmt.pix.width), h = Int(f.pointee.fmt.pix.height)
        let size = sizes.min { abs($0.width * $0.height - w * h) < abs($1.width * $1.height - w * h) } ?? V4L2FrameSize(width: w, height: h)
        q.width = size.width
        q.height = size.height
        let pf = PixelFormat(fourCC: q.fourCC)
        q.bytesPerLine = pf?.bytesPerLine(width: size.width) ?? 0
        q.sizeImage =
            pf.map { $0.isCompressed ? 256 * 1024 : $0.frameBytes(width: size.width, height: size.height) } ?? size.width * size.height
    }

    private func setEncoderFormat(_ n: Node, _ q: Queue, _ f: UnsafeMutablePointer<v4l2_format>) {
        let mp = f.pointee.fmt.pix_mp
        let allowed = formats(n, type: q.type)
        let asked = FourCC(rawValue: mp.pixelformat)
        q.fourCC = allowed.contains(asked) ? asked : (allowed.first ?? asked)
        q.width = min(1920, max(32, Int(mp.width) & ~1))
        q.height = min(1920, max(32, Int(mp.height) & ~1))
        if q === n.output {
            // Like bcm2835-codec: lines padded to 32 bytes, the luma height to 16 rows.
            let pf = PixelFormat(fourCC: q.fourCC) ?? .i420
            let natural = max(Int(mp.plane_fmt.0.bytesperline), pf == .yuyv ? q.width * 2 : q.width)
            q.bytesPerLine = (natural + 31) & ~31
            let rows = (q.height + 15) & ~15
            q.sizeImage = pf == .yuyv ? q.bytesPerLine * q.height : q.bytesPerLine * rows * 3 / 2
        } else {
            q.bytesPerLine = 0
            q.sizeImage = max(Int(mp.plane_fmt.0.sizeimage), 64 * 1024)
        }
    }

    /// The codec: one queued raw buffer + one queued capture buffer, both queues streaming →
    /// an access unit in the capture buffer, both buffers done, the timestamp copied across.
    private func encode(_ n: Node) {
        while n.output.streaming && n.capture.streaming,
            let input = n.output.buffers.filter({ $0.state == .queued }).min(by: { $0.queuedOrder < $1.queuedOrder }),
            let out = n.capture.buffers.filter({ $0.state == .queued }).min(by: { $0.queuedOrder < $1.queuedOrder })
        {
            let period = Int(n.controls[OSH_V4L2_CID_MPEG_VIDEO_H264_I_PERIOD] ?? 60)
            let key = n.encoded % max(1, period) == 0
            let headers = (n.controls[OSH_V4L2_CID_MPEG_VIDEO_REPEAT_SEQ_HEADER] ?? 0) != 0 || n.encoded == 0
            let first = input.bytesused > 0 ? (input.imported?.memory ?? input.memory).load(as: UInt8.self) : 0
            input.imported = nil
            let au = Self.fakeAccessUnit(key: key, frame: n.encoded, first: first, headers: headers)
            UnsafeMutableRawBufferPointer(start: out.memory, count: out.length).copyBytes(from: au.prefix(out.length))
            out.bytesused = min(out.length, au.count)
            out.timestamp = input.timestamp
            n.encoded += 1
            let keyFlag = key ? UInt32(truncatingIfNeeded: V4L2_BUF_FLAG_KEYFRAME) : 0
            finish(input, in: n.output, node: n, flags: 0)
            finish(out, in: n.capture, node: n, flags: keyFlag)
        }
    }

    private func finish(_ b: Buffer, in q: Queue, node n: Node, flags: UInt32) {
        order += 1
        b.doneOrder = order
        b.state = .done
        b.flags = flags
        b.sequence = q.sequence
        q.sequence &+= 1
        if q.type == V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue {
            var ts = timespec()
            clock_gettime(CLOCK_MONOTONIC, &ts)
            b.timestamp.tv_sec = .init(ts.tv_sec)
            b.timestamp.tv_usec = .init(ts.tv_nsec / 1000)
        }
        for (fd, h) in handles where h === n { _ = osh_eventfd_write(fd, 1) }
    }

    /// Poll semantics: readable while a finished buffer waits on any queue.
    private func drainIfIdle(_ n: Node, fd: Int32) {
        let waiting = n.capture.buffers.contains { $0.state == .done } || n.output.buffers.contains { $0.state == .done }
        if !waiting { _ = osh_eventfd_read(fd) }
    }

    private func controlName(_ id: UInt32) -> String {
        switch id {
        case OSH_V4L2_CID_MPEG_VIDEO_BITRATE: return "BITRATE"
        case OSH_V4L2_CID_MPEG_VIDEO_H264_I_PERIOD: return "H264_I_PERIOD"
        case OSH_V4L2_CID_MPEG_VIDEO_REPEAT_SEQ_HEADER: return "REPEAT_SEQ_HEADER"
        case OSH_V4L2_CID_MPEG_VIDEO_H264_LEVEL: return "H264_LEVEL"
        case OSH_V4L2_CID_MPEG_VIDEO_H264_PROFILE: return "H264_PROFILE"
        default: return "id \(id)"
        }
    }
}
