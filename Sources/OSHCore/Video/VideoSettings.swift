// What the camera pipeline is asked for, and the two decisions it makes from what the
// hardware offers (pixel format, encoder). Both decisions are pure functions of probe
// results so they are tested without a camera (anchors §D.4).

/// A V4L2 pixel format code: four ASCII characters, little-endian (`v4l2_fourcc`).
public struct FourCC: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// From four ASCII characters, e.g. "YUYV"; anything else gives 0.
    public init(_ code: String) {
        var v: UInt32 = 0
        var n = 0
        for b in code.utf8.prefix(4) { v |= UInt32(b) << (8 * UInt32(n)); n += 1 }
        rawValue = n == 4 ? v : 0
    }
    public var description: String {
        var s = ""
        for i in 0..<4 {
            let b = UInt8((rawValue >> (8 * UInt32(i))) & 0xff)
            s.append(b >= 0x20 && b < 0x7f ? Character(Unicode.Scalar(b)) : "?")
        }
        return s
    }
    public static let h264 = FourCC("H264")
    public static let yuyv = FourCC("YUYV")
    public static let nv12 = FourCC("NV12")
    /// I420 (planar Y, U, V) — V4L2 calls it YU12 (`V4L2_PIX_FMT_YUV420`).
    public static let yu12 = FourCC("YU12")
    /// Raw Bayer formats, packed and unpacked (what a camera sensor's V4L2 node gives on its own).
    public static let rawBayer: Set<FourCC> = Set(
        [
            "BA81", "GBRG", "GRBG", "RGGB", "BG10", "GB10", "BA10", "RG10", "BG12", "GB12", "BA12", "RG12", "BG16", "GB16", "GR16",
            "RG16", "pBAA", "pGAA", "pgAA", "pRAA", "pBCC", "pGCC", "pgCC", "pRCC", "pBEE", "pGEE", "pgEE", "pREE", "Y10P", "Y12P",
        ].map { FourCC($0) })
    public static let mjpeg = FourCC("MJPG")
    public static let jpeg = FourCC("JPEG")
}

/// The raw layouts the pipeline understands, plus H.264 straight from a UVC camera.
public enum PixelFormat: String, Sendable, CaseIterable {
    /// Planar 4:2:0: Y, then U, then V (quarter size each).
    case i420
    /// Y plane, then interleaved UV at quarter size.
    case nv12
    /// Packed 4:2:2: Y0 U Y1 V.
    case yuyv
    /// Already encoded: Annex-B access units.
    case h264
    /// A JPEG picture per frame (USB webcams above their YUYV sizes); decoded to I420.
    case mjpeg
    /// Packed 8-bit RGB / BGR (what libcamera's V4L2 compatibility layer gives for some
    /// cameras); converted to I420.
    case rgb24, bgr24

    public var fourCC: FourCC {
        switch self {
        case .i420: return .yu12
        case .nv12: return .nv12
        case .yuyv: return .yuyv
        case .h264: return .h264
        case .mjpeg: return .mjpeg
        case .rgb24: return FourCC("RGB3")
        case .bgr24: return FourCC("BGR3")
        }
    }

    /// Bytes of one line of the first plane, tightly packed (0 for a compressed format).
    public func bytesPerLine(width: Int) -> Int {
        switch self {
        case .yuyv: return width * 2
        case .rgb24, .bgr24: return width * 3
        case .i420, .nv12: return width
        case .h264, .mjpeg: return 0
        }
    }

    /// Converted to I420 (libv4lconvert) before any encoder sees it.
    public var needsConversion: Bool { self == .mjpeg || self == .rgb24 || self == .bgr24 }

    /// Frames of varying length (no fixed picture layout).
    public var isCompressed: Bool { self == .h264 || self == .mjpeg }

    public init?(fourCC: FourCC) {
        guard let f = PixelFormat.allCases.first(where: { $0.fourCC == fourCC }) else { return nil }
        self = f
    }

    /// Bytes of one frame with tightly packed lines (`width` even).
    public func frameBytes(width: Int, height: Int) -> Int {
        switch self {
        case .i420, .nv12: return width * height + 2 * ((width / 2) * (height / 2))
        case .yuyv: return width * height * 2
        case .rgb24, .bgr24: return width * height * 3
        case .h264, .mjpeg: return 0
        }
    }
}

/// Which encoder the operator allows.
public enum VideoEncoderPreference: String, Sendable, CaseIterable {
    /// The hardware M2M encoder when present, libx264 otherwise.
    case auto
    /// libx264 even when a hardware encoder exists.
    case software
    /// The hardware encoder or nothing (refuse to start without it).
    case hardware
}

/// The camera settings (`[outputs.camera0_H264]` + `[camera]` in the config).
public struct VideoSettings: Sendable, Equatable {
    /// "test-pattern" (the demo), a device path (`/dev/video0`) or a V4L2 card name.
    public var device: String
    public var width: Int
    public var height: Int
    /// Frames per second, 1–25.
    public var fps: Double
    /// Frames between IDRs; 1 = every frame is an IDR (a viewer can join at any frame).
    public var keyFrameInterval: Int
    public var bitrateKbps: Int
    /// libx264 threads; 0 = one per core (x264's auto).
    public var threads: Int
    public var encoder: VideoEncoderPreference
    /// H.264 level_idc × 10 (40 = 4.0) for the hardware encoder.
    public var level: Int

    public static let testPattern = "test-pattern"

    public init(
        device: String = VideoSettings.testPattern, width: Int = 640, height: Int = 480, fps: Double = 5,
        keyFrameInterval: Int = 1, bitrateKbps: Int = 1500, threads: Int = 1,
        encoder: VideoEncoderPreference = .auto, level: Int = 40
    ) {
        self.device = device
        self.width = width
        self.height = height
        self.fps = fps
        self.keyFrameInterval = keyFrameInterval
        self.bitrateKbps = bitrateKbps
        self.threads = threads
        self.encoder = encoder
        self.level = level
    }

    /// Every problem at once, each naming the setting and what is allowed.
    public func problems() -> [String] {
        var p: [String] = []
        if width < 16 || width > 4096 || width % 2 != 0 { p.append("video width \(width): must be even, 16–4096") }
        if height < 16 || height > 4096 || height % 2 != 0 { p.append("video height \(height): must be even, 16–4096") }
        if !(fps >= 1 && fps <= 25) { p.append("video fps \(fps): must be 1–25 frames per second") }
        if keyFrameInterval < 1 || keyFrameInterval > 1000 { p.append("key frame interval \(keyFrameInterval): must be 1–1000 frames") }
        if bitrateKbps < 50 || bitrateKbps > 50_000 { p.append("bitrate \(bitrateKbps) kbit/s: must be 50–50000") }
        if threads < 0 || threads > 64 { p.append("encoder threads \(threads): must be 0 (auto) to 64") }
        return p
    }
}

/// What the camera's format list means for the pipeline.
public enum CaptureFormatChoice: Equatable, Sendable {
    case use(PixelFormat)
    /// Nothing usable; the message says what the camera offers and what to do.
    case unsupported(String)

    /// H.264 from the camera (no encoding at all) > YUYV > NV12 > YU12 > MJPEG > RGB24 > BGR24
    /// (the last three converted to I420), each
    /// taken first where it has the configured size: a USB webcam often has YUYV only at small
    /// sizes and MJPEG above them, and MJPEG at 1280×720 beats YUYV shrunk to 640×480. With no
    /// format at that size, the first in that order (the driver picks its nearest size).
    /// `hasSize`: whether the camera lists the configured size for a format (true when unknown).
    public static func choose(offered: [FourCC], hasSize: (FourCC) -> Bool = { _ in true }) -> CaptureFormatChoice {
        let order: [PixelFormat] = [.h264, .yuyv, .nv12, .i420, .mjpeg, .rgb24, .bgr24]
        let usable = order.filter { offered.contains($0.fourCC) || ($0 == .mjpeg && offered.contains(.jpeg)) }
        if let f = usable.first(where: { hasSize($0 == .mjpeg && !offered.contains(.mjpeg) ? .jpeg : $0.fourCC) }) {
            return .use(f)
        }
        if let f = usable.first { return .use(f) }
        let list = offered.map(\.description).joined(separator: ", ")
        if !offered.isEmpty, offered.allSatisfy(FourCC.rawBayer.contains) {
            return .unsupported(
                "the camera offers only raw Bayer (\(list)): a camera sensor such as a Raspberry Pi Camera Module on "
                    + "unicam or CFE, whose pictures need libcamera and the ISP; set [camera] device = \"libcamera\" (or \"auto\") "
                    + "with libcamera's V4L2 layer installed (apt install libcamera-v4l2)")
        }
        return .unsupported(
            "the camera offers \(list.isEmpty ? "no formats" : list); osh-edge needs H264, YUYV, NV12, YU12, MJPEG, RGB3 or BGR3")
    }
}

/// Which encoder the pipeline runs, and why (logged once).
public enum VideoEncoderKind: Equatable, Sendable {
    /// The camera sends H.264 itself.
    case cameraH264
    /// The V4L2 memory-to-memory encoder at this device path.
    case m2m(String)
    case x264

    public var name: String {
        switch self {
        case .cameraH264: return "none (the camera sends H.264)"
        case .m2m(let p): return "V4L2 M2M \(p)"
        case .x264: return "libx264"
        }
    }
}

public enum VideoEncoderDecision {
    /// Raspberry Pi boards built around the BCM2712, which has no video encoder.
    public static func boardHasNoH264Encoder(_ model: String) -> Bool {
        ["Raspberry Pi 5", "Raspberry Pi 500", "Raspberry Pi Compute Module 5"].contains { model.hasPrefix($0) }
    }

    /// Decides like rpicam-apps: the hardware encoder when one is found, else libx264.
    /// `m2mCard` names the found encoder; `unusable` says why each M2M node passed over is not
    /// one ("/dev/video1 (vicodec) encodes FWHT, not H.264"), for the log when libx264 is chosen.
    /// Returns nil (with the reason) when `hardware` is demanded and none exists.
    public static func decide(
        captureFormat: PixelFormat, m2mDevice: String?, m2mCard: String = "", unusable: [String] = [],
        preference: VideoEncoderPreference, boardModel: String? = nil
    ) -> (kind: VideoEncoderKind?, reason: String) {
        if captureFormat == .h264 { return (.cameraH264, "the camera delivers H.264 itself; no encoder needed") }
        // The Pi 5 (and the 500, the CM5) has no H.264 block at all: software is the official answer.
        if m2mDevice == nil, let model = boardModel, boardHasNoH264Encoder(model) {
            switch preference {
            case .hardware:
                return (nil, "encoder = hardware, but this board has no H.264 encoder (\(model)); set encoder = auto to use libx264")
            case .auto:
                return (.x264, "no H.264 encoder on this board (\(model)); using libx264")
            case .software:
                break
            }
        }
        let why = unusable.joined(separator: "; ")
        switch (preference, m2mDevice) {
        case (.software, _):
            return (.x264, "encoder = software in the config")
        case (_, let dev?):
            return (.m2m(dev), "hardware H.264 encoder \(m2mCard.isEmpty ? "" : m2mCard + " ")found at \(dev)")
        case (.hardware, nil):
            return (
                nil,
                "encoder = hardware but no M2M H.264 encoder exists\(why.isEmpty ? "" : " (" + why + ")"); set encoder = auto to use libx264"
            )
        case (.auto, nil):
            if !why.isEmpty { return (.x264, why + "; using libx264") }
            return (.x264, "no hardware H.264 encoder (bcm2835-codec-encode) found; using libx264")
        }
    }
}
