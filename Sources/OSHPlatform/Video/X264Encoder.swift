// libx264, the encoder when there is no hardware one (the Pi 5): ultrafast + zerolatency
// (no lookahead, no B-frames, sliced threads), Annex-B with SPS+PPS repeated in front of
// every IDR, so each key-frame access unit stands alone for a viewer joining there.
//
// Copies on our side per frame: none for I420 input (x264 reads the caller's planes
// through pointers), one conversion pass into a preallocated picture for YUYV and NV12.
// The output is x264's own buffer (its NAL payloads are contiguous), valid until the next
// encode call: handed to the sink without copying.

import CX264
import OSHCore
#if canImport(Glibc)
import Glibc
#endif

public struct X264Error: Error, CustomStringConvertible, Equatable {
    public let message: String
    public var description: String { message }
    public init(message: String) { self.message = message }
}

/// One encoded access unit, valid only inside the callback that receives it.
public struct EncodedFrame {
    public var monotonicTime: Double
    public var bytes: UnsafeRawBufferPointer
    public var isKeyFrame: Bool

    public init(monotonicTime: Double, bytes: UnsafeRawBufferPointer, isKeyFrame: Bool) {
        self.monotonicTime = monotonicTime
        self.bytes = bytes
        self.isKeyFrame = isKeyFrame
    }
}

/// A raw or encoded picture handed from a source to an encoder; its bytes are valid only
/// during the call that receives it.
public struct VideoFrame {
    public var format: PixelFormat
    public var width: Int
    public var height: Int
    /// Bytes per line of the first plane (Y, or the packed YUYV line).
    public var bytesPerLine: Int
    public var monotonicTime: Double
    /// The whole picture, planes contiguous (I420: Y, U, V; NV12: Y, UV).
    public var bytes: UnsafeRawBufferPointer
    /// The capture buffer exported as a DMABUF (-1: none), so a hardware encoder can read
    /// the picture without a copy; `bufferIndex` names it for V4L2Camera.hold/release.
    public var dmabufFD: Int32
    public var bufferIndex: Int

    public init(
        format: PixelFormat, width: Int, height: Int, bytesPerLine: Int, monotonicTime: Double,
        bytes: UnsafeRawBufferPointer, dmabufFD: Int32 = -1, bufferIndex: Int = -1
    ) {
        self.format = format
        self.width = width
        self.height = height
        self.bytesPerLine = bytesPerLine
        self.monotonicTime = monotonicTime
        self.bytes = bytes
        self.dmabufFD = dmabufFD
        self.bufferIndex = bufferIndex
    }

    /// Whether `bytes` holds a full picture of this size and layout.
    public var isComplete: Bool {
        switch format {
        case .i420, .nv12: return bytesPerLine >= width && bytes.count >= bytesPerLine * height + 2 * (bytesPerLine / 2) * (height / 2)
        case .yuyv: return bytesPerLine >= width * 2 && bytes.count >= bytesPerLine * height
        case .h264, .mjpeg, .rgb24, .bgr24: return bytes.count > 0
        }
    }
}

public struct X264Settings: Sendable, Equatable {
    public var width: Int
    public var height: Int
    public var fps: Double
    public var keyFrameInterval: Int
    public var bitrateKbps: Int
    /// 0 = x264 picks (one per core).
    public var threads: Int

    public init(width: Int, height: Int, fps: Double = 5, keyFrameInterval: Int = 1, bitrateKbps: Int = 1500, threads: Int = 1) {
        self.width = width
        self.height = height
        self.fps = fps
        self.keyFrameInterval = keyFrameInterval
        self.bitrateKbps = bitrateKbps
        self.threads = threads
    }

    public init(_ v: VideoSettings) {
        self.init(
            width: v.width, height: v.height, fps: v.fps, keyFrameInterval: v.keyFrameInterval,
            bitrateKbps: v.bitrateKbps, threads: v.threads)
    }
}

public final class X264Encoder {
    public let settings: X264Settings
    public private(set) var framesEncoded = 0
    /// Key frames that did not carry SPS+PPS before the IDR (should stay 0).
    public private(set) var keyFramesWithoutHeaders = 0

    private let encoder: OpaquePointer
    private var picture = x264_picture_t()
    private var output = x264_picture_t()
    /// The I420 picture YUYV/NV12 input is converted into (allocated once, only when needed).
    private var converted: UnsafeMutablePointer<UInt8>?
    private var pts: Int64 = 0

    public init(_ s: X264Settings) throws {
        guard s.width >= 16, s.height >= 16, s.width % 2 == 0, s.height % 2 == 0 else {
            throw X264Error(message: "libx264: picture \(s.width)×\(s.height) must be even and at least 16×16")
        }
        settings = s
        var p = x264_param_t()
        guard x264_param_default_preset(&p, "ultrafast", "zerolatency") == 0 else {
            throw X264Error(message: "libx264: preset ultrafast/zerolatency refused (is libx264 too old?)")
        }
        p.i_width = Int32(s.width)
        p.i_height = Int32(s.height)
        p.i_csp = X264_CSP_I420
        p.i_threads = Int32(max(0, s.threads))
        let fpsNum = max(1, Int32((s.fps * 1000).rounded()))
        p.i_fps_num = UInt32(fpsNum)
        p.i_fps_den = 1000
        p.i_timebase_num = 1
        p.i_timebase_den = UInt32(fpsNum)
        p.b_vfr_input = 0
        let keyint = Int32(max(1, s.keyFrameInterval))
        p.i_keyint_max = keyint
        p.i_keyint_min = keyint
        p.i_scenecut_threshold = 0  // IDRs exactly every keyint frames, never extra ones
        p.b_intra_refresh = 0
        p.b_repeat_headers = 1
        p.b_annexb = 1
        p.b_aud = 0
        p.rc.i_rc_method = X264_RC_ABR
        p.rc.i_bitrate = Int32(max(1, s.bitrateKbps))
        // A VBV cap keeps frame sizes near the target, as a live link needs.
        p.rc.i_vbv_max_bitrate = Int32(max(1, s.bitrateKbps))
        p.rc.i_vbv_buffer_size = Int32(max(1, s.bitrateKbps))
        p.i_log_level = X264_LOG_ERROR
        // Baseline: what every browser/WebRTC decoder accepts.
        guard x264_param_apply_profile(&p, "baseline") == 0 else {
            throw X264Error(message: "libx264: the baseline profile cannot be applied to these settings")
        }
        guard let e = osh_x264_encoder_open(&p) else {
            throw X264Error(message: "libx264: cannot open an encoder for \(s.width)×\(s.height) (out of memory, or unsupported size)")
        }
        encoder = e
        x264_picture_init(&picture)
        picture.img.i_csp = X264_CSP_I420
        picture.img.i_plane = 3
        x264_picture_init(&output)
    }

    deinit {
        x264_encoder_close(encoder)
        converted?.deallocate()
    }

    /// Encodes one picture and calls `sink` with the access unit (zero or one call: x264 in
    /// zerolatency mode outputs each frame immediately). Throws on a wrong-sized picture.
    public func encode(_ frame: VideoFrame, sink: (EncodedFrame) -> Void) throws {
        guard frame.width == settings.width, frame.height == settings.height, frame.format != .h264, frame.isComplete else {
            throw X264Error(
                message:
                    "libx264: got a \(frame.width)×\(frame.height) \(frame.format.rawValue) picture of \(frame.bytes.count) bytes; the encoder was opened for \(settings.width)×\(settings.height)"
            )
        }
        guard let base = frame.bytes.baseAddress else { return }
        let w = settings.width, h = settings.height
        switch frame.format {
        case .i420:
            let src = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: UInt8.self))
            let ls = frame.bytesPerLine, cs = ls / 2
            setPlanes(src, src + ls * h, src + ls * h + cs * (h / 2), lumaStride: ls)
        case .nv12, .yuyv:
            let dst = conversionBuffer()
            if frame.format == .nv12 {
                PixelConversion.nv12ToI420(
                    base.assumingMemoryBound(to: UInt8.self), bytesPerLine: frame.bytesPerLine, width: w, height: h, into: dst)
            } else {
                PixelConversion.yuyvToI420(
                    base.assumingMemoryBound(to: UInt8.self), bytesPerLine: frame.bytesPerLine, width: w, height: h, into: dst)
            }
            setPlanes(dst, dst + w * h, dst + w * h + (w / 2) * (h / 2), lumaStride: w)
        case .h264, .mjpeg, .rgb24, .bgr24:
            return  // decoded before the encoder: never an encoder's input
        }
        picture.i_pts = pts
        pts += 1
        picture.i_type = 0  // X264_TYPE_AUTO: keyint decides
        var nals: UnsafeMutablePointer<x264_nal_t>?
        var count: Int32 = 0
        let size = x264_encoder_encode(encoder, &nals, &count, &picture, &output)
        guard size >= 0 else { throw X264Error(message: "libx264: encoding frame \(framesEncoded) failed") }
        guard size > 0, let list = nals, count > 0, let start = list[0].p_payload else { return }
        framesEncoded += 1
        var au = UnsafeRawBufferPointer(start: start, count: Int(size))
        au = Self.dropLeadingSEI(au, nals: list, count: Int(count))
        let key = output.b_keyframe != 0
        if key && !AnnexB.summarize(au).isSelfContainedKeyFrame { keyFramesWithoutHeaders += 1 }
        sink(EncodedFrame(monotonicTime: frame.monotonicTime, bytes: au, isKeyFrame: key))
    }

    private func setPlanes(
        _ y: UnsafeMutablePointer<UInt8>, _ u: UnsafeMutablePointer<UInt8>, _ v: UnsafeMutablePointer<UInt8>, lumaStride: Int
    ) {
        picture.img.plane.0 = y
        picture.img.plane.1 = u
        picture.img.plane.2 = v
        picture.img.i_stride.0 = Int32(lumaStride)
        picture.img.i_stride.1 = Int32(lumaStride / 2)
        picture.img.i_stride.2 = Int32(lumaStride / 2)
    }

    private func conversionBuffer() -> UnsafeMutablePointer<UInt8> {
        if let c = converted { return c }
        let n = PixelFormat.i420.frameBytes(width: settings.width, height: settings.height)
        let c = UnsafeMutablePointer<UInt8>.allocate(capacity: n)
        c.initialize(repeating: 0, count: n)
        converted = c
        return c
    }

    /// x264 puts a version SEI (its option string) between the PPS and the first IDR. It is
    /// removed in place — SPS+PPS moved up over it inside x264's buffer — so every access
    /// unit has the same shape: SPS, PPS, IDR.
    static func dropLeadingSEI(_ au: UnsafeRawBufferPointer, nals: UnsafeMutablePointer<x264_nal_t>, count: Int) -> UnsafeRawBufferPointer {
        guard count >= 3, nals[0].i_type == 7, nals[1].i_type == 8, nals[2].i_type == 6,
            let base = au.baseAddress, let sei = nals[2].p_payload
        else { return au }
        let seiLength = Int(nals[2].i_payload)
        let headerLength = UnsafeRawPointer(sei) - base
        guard headerLength >= 0, headerLength + seiLength <= au.count else { return au }
        let m = UnsafeMutableRawPointer(mutating: base)
        memmove(m + seiLength, m, headerLength)
        return UnsafeRawBufferPointer(start: base + seiLength, count: au.count - seiLength)
    }
}

/// Pixel layout conversions into I420, one pass each, into a caller-owned buffer.
public enum PixelConversion {
    /// Packed YUYV 4:2:2 → planar 4:2:0; chroma from the even lines (no vertical averaging:
    /// one read per output byte, and the encoder does not care at these sizes).
    public static func yuyvToI420(
        _ src: UnsafePointer<UInt8>, bytesPerLine: Int, width: Int, height: Int,
        into dst: UnsafeMutablePointer<UInt8>
    ) {
        let u = dst + width * height, v = u + (width / 2) * (height / 2)
        for row in 0..<height {
            let s = src + row * bytesPerLine
            let y = dst + row * width
            let chroma = row % 2 == 0
            let cu = u + (row / 2) * (width / 2), cv = v + (row / 2) * (width / 2)
            for pair in 0..<(width / 2) {
                let p = s + pair * 4
                y[pair * 2] = p[0]
                y[pair * 2 + 1] = p[2]
                if chroma { cu[pair] = p[1]; cv[pair] = p[3] }
            }
        }
    }

    /// NV12 (Y, interleaved UV) → I420: the Y plane copied, UV de-interleaved.
    public static func nv12ToI420(
        _ src: UnsafePointer<UInt8>, bytesPerLine: Int, width: Int, height: Int,
        into dst: UnsafeMutablePointer<UInt8>
    ) {
        for row in 0..<height { memcpy(dst + row * width, src + row * bytesPerLine, width) }
        let uvSrc = src + bytesPerLine * height
        let u = dst + width * height, v = u + (width / 2) * (height / 2)
        for row in 0..<(height / 2) {
            let s = uvSrc + row * bytesPerLine
            let cu = u + row * (width / 2), cv = v + row * (width / 2)
            for i in 0..<(width / 2) { cu[i] = s[2 * i]; cv[i] = s[2 * i + 1] }
        }
    }
}
