// The one seam every V4L2 call goes through. `SystemV4L2` is the real kernel (thin: one
// syscall per method); `SimulatedV4L2` models a UVC camera, the Pi's bcm2835 codec and other
// M2M codecs (vicodec) for tests. Camera, M2M encoder and probe are written only against this
// protocol.

import CShim
import CV4L2
import OSHCore
#if canImport(Glibc)
import Glibc
#endif

/// The ioctls the pipeline uses (named, so the simulation can switch on them and trace them).
public enum V4L2Request: String, Sendable, CaseIterable {
    case querycap = "QUERYCAP", enumFmt = "ENUM_FMT", enumFramesizes = "ENUM_FRAMESIZES"
    case gFmt = "G_FMT", sFmt = "S_FMT", reqbufs = "REQBUFS", querybuf = "QUERYBUF"
    case qbuf = "QBUF", dqbuf = "DQBUF", streamon = "STREAMON", streamoff = "STREAMOFF"
    case sParm = "S_PARM", sCtrl = "S_CTRL", expbuf = "EXPBUF"

    public var code: UInt {
        switch self {
        case .querycap: return OSH_VIDIOC_QUERYCAP
        case .enumFmt: return OSH_VIDIOC_ENUM_FMT
        case .enumFramesizes: return OSH_VIDIOC_ENUM_FRAMESIZES
        case .gFmt: return OSH_VIDIOC_G_FMT
        case .sFmt: return OSH_VIDIOC_S_FMT
        case .reqbufs: return OSH_VIDIOC_REQBUFS
        case .querybuf: return OSH_VIDIOC_QUERYBUF
        case .qbuf: return OSH_VIDIOC_QBUF
        case .dqbuf: return OSH_VIDIOC_DQBUF
        case .streamon: return OSH_VIDIOC_STREAMON
        case .streamoff: return OSH_VIDIOC_STREAMOFF
        case .sParm: return OSH_VIDIOC_S_PARM
        case .sCtrl: return OSH_VIDIOC_S_CTRL
        case .expbuf: return OSH_VIDIOC_EXPBUF
        }
    }

    /// The request as the syscall layer names it ("VIDIOC_DQBUF"); made once per case.
    var ioctl: IoctlRequest { Self.requests[self] ?? IoctlRequest(code, "VIDIOC_" + rawValue) }

    private static let requests: [V4L2Request: IoctlRequest] = Dictionary(
        uniqueKeysWithValues: allCases.map { ($0, IoctlRequest($0.code, "VIDIOC_" + $0.rawValue)) })
}

public protocol V4L2Device: AnyObject {
    /// The `/dev/video*` nodes, in number order.
    func listNodes() -> [String]
    /// Opens read-write, non-blocking, close-on-exec. Returns the fd, or the errno.
    func open(_ path: String) -> Result<Int32, SystemError>
    /// Closes a device fd or an exported DMABUF fd.
    func close(_ fd: Int32)
    /// 0, or the errno (EINTR already retried).
    func ioctl(_ fd: Int32, _ request: V4L2Request, _ arg: UnsafeMutableRawPointer) -> Int32
    /// A shared read-write mapping of a driver buffer; nil with the errno on failure.
    func mmap(_ fd: Int32, length: Int, offset: Int) -> Result<UnsafeMutableRawPointer, SystemError>
    func munmap(_ address: UnsafeMutableRawPointer, length: Int)
    /// The descriptor the event loop watches (readable = a buffer is ready to dequeue).
    func pollFD(_ fd: Int32) -> Int32
}

extension V4L2Device {
    /// `ioctl` on a typed struct.
    @inline(__always)
    func call<T>(_ fd: Int32, _ request: V4L2Request, _ value: inout T) -> Int32 {
        withUnsafeMutableBytes(of: &value) { p in
            guard let base = p.baseAddress else { return EINVAL }
            return ioctl(fd, request, base)
        }
    }
}

/// The kernel.
public final class SystemV4L2: V4L2Device {
    private let directory: String
    private let system: any SyscallDriver

    public init(directory: String = "/dev", system: any SyscallDriver = KernelSyscalls.shared) {
        self.directory = directory
        self.system = system
    }

    public func listNodes() -> [String] { StateFiles.numberedEntries(directory, prefix: "video").map(\.path) }

    public func open(_ path: String) -> Result<Int32, SystemError> {
        do {
            return .success(try FileDescriptor.open(path, O_RDWR | O_NONBLOCK, system: system).rawValue)
        } catch {
            return .failure(error)
        }
    }

    public func close(_ fd: Int32) { FileDescriptor(rawValue: fd, system: system).close() }

    public func ioctl(_ fd: Int32, _ request: V4L2Request, _ arg: UnsafeMutableRawPointer) -> Int32 {
        do {
            try FileDescriptor(rawValue: fd, system: system).ioctl(request.ioctl, arg)
            return 0
        } catch {
            return error.errno
        }
    }

    public func mmap(_ fd: Int32, length: Int, offset: Int) -> Result<UnsafeMutableRawPointer, SystemError> {
        let p = Glibc.mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(offset))
        guard let p, p != MAP_FAILED else { return .failure(.last("mmap", subject: "fd \(fd)")) }
        return .success(p)
    }

    public func munmap(_ address: UnsafeMutableRawPointer, length: Int) { _ = Glibc.munmap(address, length) }

    public func pollFD(_ fd: Int32) -> Int32 { fd }
}

/// A V4L2 failure: what was being done, on which device, and whether retrying can help.
public struct V4L2Error: Error, CustomStringConvertible, Equatable {
    public let message: String
    public let errno: Int32
    /// The device went away or is busy: close and retry later. Otherwise a configuration problem.
    public var isTransient: Bool {
        [ENODEV, ENOENT, ENXIO, EBUSY, EIO, EAGAIN, EINTR].contains(errno)
    }
    public var description: String { message }

    public init(_ message: String, errno: Int32 = 0) {
        self.message = message
        self.errno = errno
    }

    static func call(_ what: V4L2Request, _ path: String, _ e: Int32, hint: String = "") -> V4L2Error {
        return V4L2Error("VIDIOC_\(what.rawValue) on \(path): \(Errno(e).text)\(hint.isEmpty ? "" : "; " + hint)", errno: e)
    }
}

// MARK: - Small helpers over the C structs

public enum V4L2Text {
    /// A NUL-terminated fixed-size C char array (a tuple in Swift) as a String.
    static func string<T>(_ tuple: T) -> String {
        withUnsafeBytes(of: tuple) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    /// Writes `s` into a fixed-size C char array, NUL-terminated and truncated to fit.
    public static func set<T>(_ tuple: inout T, _ s: String) {
        withUnsafeMutableBytes(of: &tuple) { raw in
            for i in 0..<raw.count { raw[i] = 0 }
            for (i, b) in s.utf8.prefix(raw.count - 1).enumerated() { raw[i] = b }
        }
    }
}

extension v4l2_capability {
    /// device_caps when the driver fills it (what this node does), else the whole device's caps.
    var nodeCaps: UInt32 {
        capabilities & UInt32(truncatingIfNeeded: V4L2_CAP_DEVICE_CAPS) != 0 ? device_caps : capabilities
    }
}

// MARK: - Probe (`osh-edge probe`)

public struct V4L2FrameSize: Equatable, Sendable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
    public var description: String { "\(width)x\(height)" }
}

public struct V4L2FormatInfo: Equatable, Sendable {
    public var fourCC: FourCC
    public var description: String
    /// Discrete sizes; for a stepwise/continuous range, its minimum and maximum.
    public var sizes: [V4L2FrameSize]
    public var isRange: Bool

    /// Whether the driver lists `size` for this format (true when it lists no sizes at all).
    public func offers(_ size: V4L2FrameSize) -> Bool {
        guard let lo = sizes.first, let hi = sizes.last else { return true }
        return isRange ? size.isWithin(lo, hi) : sizes.contains(size)
    }
}

extension V4L2FrameSize {
    /// Inside the range from `lo` to `hi` (a stepwise or continuous size list), both inclusive.
    func isWithin(_ lo: V4L2FrameSize, _ hi: V4L2FrameSize) -> Bool {
        (lo.width...hi.width).contains(width) && (lo.height...hi.height).contains(height)
    }
}

public struct V4L2DeviceInfo: Equatable, Sendable {
    public enum Role: String, Sendable { case camera, h264Encoder = "h264-encoder", m2mCodec = "m2m-codec", other }
    public var path: String
    public var driver: String
    public var card: String
    public var busInfo: String
    public var role: Role
    /// Capture formats (cameras), the raw input formats an encoder accepts, or the coded
    /// formats of an M2M codec osh-edge cannot use.
    public var formats: [V4L2FormatInfo]
    /// Why an M2M codec is not usable ("encodes FWHT, not H.264"); empty otherwise.
    public var note = ""
}

/// What `V4L2Probe.findEncoder` found: the first usable H.264 M2M encoder, and why each M2M
/// node before it (all of them when there is none) is not one.
public struct V4L2EncoderSearch: Equatable, Sendable {
    /// The encoder's node; nil when none is usable.
    public var path: String?
    /// Its QUERYCAP card name ("bcm2835-codec-encode" on a Pi 4).
    public var card: String
    /// One line per M2M node passed over, e.g. "/dev/video1 (vicodec) encodes FWHT, not H.264".
    public var unusable: [String]

    public init(path: String? = nil, card: String = "", unusable: [String] = []) {
        self.path = path
        self.card = card
        self.unusable = unusable
    }
}

/// One ENUM_FMT answer, as far as choosing an encoder needs it.
struct V4L2FormatDesc: Equatable {
    var fourCC: FourCC
    var compressed: Bool
}

/// Whether an M2M node is an H.264 encoder osh-edge can drive, from what its queues list —
/// never from its name (vicodec, another SoC's codec and the Pi's all say what they do here).
struct M2MAssessment: Equatable {
    /// The raw layouts the pipeline can put on the OUTPUT queue (V4L2M2MEncoder's inputs).
    static let feedable: [FourCC] = [.yuyv, .nv12, .yu12]

    var multiplanar: Bool
    /// Formats of the CAPTURE queue (an encoder's coded side) and of the OUTPUT queue (its raw side).
    var capture: [V4L2FormatDesc]
    var output: [V4L2FormatDesc]

    /// Coded: flagged compressed by the kernel, or a format known to be (a driver may not flag it).
    private static func coded(_ list: [V4L2FormatDesc]) -> [FourCC] {
        list.filter { $0.compressed || [.h264, .mjpeg, .jpeg].contains($0.fourCC) }.map(\.fourCC)
    }

    private static func names(_ list: [FourCC]) -> String { list.map(\.description).joined(separator: ", ") }

    /// nil when usable, else why not: a phrase after "/dev/videoN (card)", without ";" (the
    /// agent joins several with it).
    var problem: String? {
        let outputs = output.map(\.fourCC)
        if capture.contains(where: { $0.fourCC == .h264 }) {
            if !outputs.contains(where: Self.feedable.contains) {
                return
                    "encodes H.264 but takes \(outputs.isEmpty ? "no raw format" : "only " + Self.names(outputs)) (osh-edge feeds YUYV, NV12 or YU12)"
            }
            // V4L2M2MEncoder speaks the multi-planar API only (what bcm2835-codec offers).
            if !multiplanar { return "encodes H.264 through the single-planar M2M API (osh-edge drives multi-planar encoders only)" }
            return nil
        }
        let encodes = Self.coded(capture)
        if !encodes.isEmpty { return "encodes \(Self.names(encodes)), not H.264" }
        let decodes = Self.coded(output)
        if !decodes.isEmpty { return "is a decoder (\(Self.names(decodes))), not an encoder" }
        if capture.isEmpty && output.isEmpty { return "lists no formats" }
        return "is a converter (raw to raw), not an encoder"
    }

    /// The queue whose formats describe the node: an encoder's raw input when usable, else the
    /// side carrying coded formats (an encoder's CAPTURE, a decoder's OUTPUT).
    var describingCapture: Bool { problem != nil && !Self.coded(capture).isEmpty }
}

public enum V4L2Probe {
    /// The card name of the Pi 4's hardware H.264 encoder (what rpicam-apps looks for).
    public static let encoderCard = "bcm2835-codec-encode"

    /// Every video node with its role, formats and sizes. Nodes that cannot be opened are skipped.
    public static func list(_ device: V4L2Device = SystemV4L2()) -> [V4L2DeviceInfo] {
        device.listNodes().compactMap { info(device, path: $0) }
    }

    /// The first memory-to-memory node whose CAPTURE queue lists H.264 and whose OUTPUT queue
    /// takes a raw layout the pipeline feeds (bcm2835-codec-encode on a Pi 4; none on a Pi 5 or
    /// a PC), with why every M2M node passed over is not one (vicodec under QEMU encodes FWHT).
    public static func findEncoder(_ device: V4L2Device) -> V4L2EncoderSearch {
        var search = V4L2EncoderSearch()
        for path in device.listNodes() {
            guard case .success(let fd) = device.open(path) else { continue }
            defer { device.close(fd) }
            var cap = v4l2_capability()
            guard device.call(fd, .querycap, &cap) == 0, let m2m = assess(device, fd: fd, caps: cap.nodeCaps) else { continue }
            let card = V4L2Text.string(cap.card)
            guard let problem = m2m.problem else {
                search.path = path
                search.card = card
                return search
            }
            search.unusable.append("\(path) (\(card)) \(problem)")
        }
        return search
    }

    /// The queue types of a memory-to-memory node (nil for any other node).
    static func m2mTypes(_ caps: UInt32) -> (capture: UInt32, output: UInt32)? {
        if caps & UInt32(truncatingIfNeeded: V4L2_CAP_VIDEO_M2M_MPLANE) != 0 {
            return (V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE.rawValue, V4L2_BUF_TYPE_VIDEO_OUTPUT_MPLANE.rawValue)
        }
        if caps & UInt32(truncatingIfNeeded: V4L2_CAP_VIDEO_M2M) != 0 {
            return (V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue, V4L2_BUF_TYPE_VIDEO_OUTPUT.rawValue)
        }
        return nil
    }

    /// Both queues' formats of an M2M node; nil when the node is not one.
    static func assess(_ device: V4L2Device, fd: Int32, caps: UInt32) -> M2MAssessment? {
        guard let types = m2mTypes(caps) else { return nil }
        return M2MAssessment(
            multiplanar: types.capture == V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE.rawValue,
            capture: descriptions(device, fd: fd, type: types.capture),
            output: descriptions(device, fd: fd, type: types.output))
    }

    static func descriptions(_ device: V4L2Device, fd: Int32, type: UInt32) -> [V4L2FormatDesc] {
        var out: [V4L2FormatDesc] = []
        for i in 0..<64 {
            var d = v4l2_fmtdesc()
            d.index = UInt32(i)
            d.type = type
            guard device.call(fd, .enumFmt, &d) == 0 else { break }
            out.append(
                V4L2FormatDesc(
                    fourCC: FourCC(rawValue: d.pixelformat),
                    compressed: d.flags & UInt32(truncatingIfNeeded: V4L2_FMT_FLAG_COMPRESSED) != 0))
        }
        return out
    }

    static func info(_ device: V4L2Device, path: String) -> V4L2DeviceInfo? {
        guard case .success(let fd) = device.open(path) else { return nil }
        defer { device.close(fd) }
        var cap = v4l2_capability()
        guard device.call(fd, .querycap, &cap) == 0 else { return nil }
        let caps = cap.nodeCaps
        let card = V4L2Text.string(cap.card)
        let role: V4L2DeviceInfo.Role
        var type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        var note = ""
        if let types = m2mTypes(caps), let m2m = assess(device, fd: fd, caps: caps) {
            if let problem = m2m.problem {
                role = .m2mCodec
                note = problem
                type = m2m.describingCapture ? types.capture : types.output
            } else {
                role = .h264Encoder
                type = types.output
            }
        } else if caps & UInt32(truncatingIfNeeded: V4L2_CAP_VIDEO_CAPTURE) != 0
            && caps & UInt32(truncatingIfNeeded: V4L2_CAP_STREAMING) != 0
        {
            role = .camera
        } else {
            role = .other
        }
        return V4L2DeviceInfo(
            path: path, driver: V4L2Text.string(cap.driver), card: card, busInfo: V4L2Text.string(cap.bus_info),
            role: role, formats: role == .other ? [] : formats(device, fd: fd, type: type), note: note)
    }

    /// One answer of VIDIOC_ENUM_FRAMESIZES: a discrete size, or a stepwise/continuous range.
    enum FrameSizeEntry {
        case size(V4L2FrameSize)
        case range(V4L2FrameSize, V4L2FrameSize)
    }

    /// Calls `body` with each frame size the driver lists for `fourCC`, in order, until it
    /// returns false (a range is the last entry); the number of entries the driver gave.
    @discardableResult
    static func forEachFrameSize(_ device: V4L2Device, fd: Int32, fourCC: FourCC, _ body: (FrameSizeEntry) -> Bool) -> Int {
        for j in 0..<64 {
            var s = v4l2_frmsizeenum()
            s.index = UInt32(j)
            s.pixel_format = fourCC.rawValue
            guard device.call(fd, .enumFramesizes, &s) == 0 else { return j }
            if s.type == V4L2_FRMSIZE_TYPE_DISCRETE.rawValue {
                if !body(.size(V4L2FrameSize(width: Int(s.discrete.width), height: Int(s.discrete.height)))) { return j + 1 }
            } else {
                let r = s.stepwise
                _ = body(
                    .range(
                        V4L2FrameSize(width: Int(r.min_width), height: Int(r.min_height)),
                        V4L2FrameSize(width: Int(r.max_width), height: Int(r.max_height))))
                return j + 1
            }
        }
        return 64
    }

    static func formats(_ device: V4L2Device, fd: Int32, type: UInt32) -> [V4L2FormatInfo] {
        var out: [V4L2FormatInfo] = []
        for i in 0..<64 {
            var d = v4l2_fmtdesc()
            d.index = UInt32(i)
            d.type = type
            guard device.call(fd, .enumFmt, &d) == 0 else { break }
            var sizes: [V4L2FrameSize] = []
            var range = false
            forEachFrameSize(device, fd: fd, fourCC: FourCC(rawValue: d.pixelformat)) { entry in
                switch entry {
                case .size(let s): sizes.append(s)
                case .range(let lo, let hi):
                    range = true
                    sizes += [lo, hi]
                }
                return true
            }
            out.append(
                V4L2FormatInfo(
                    fourCC: FourCC(rawValue: d.pixelformat), description: V4L2Text.string(d.description),
                    sizes: sizes, isRange: range))
        }
        return out
    }
}
