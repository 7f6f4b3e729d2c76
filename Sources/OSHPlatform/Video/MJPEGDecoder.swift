// A USB webcam's MJPEG frames as I420 for the H.264 encoder, through libv4lconvert (libv4l's
// own conversion, which knows what UVC cameras send: frames without Huffman tables, 4:2:2 or
// 4:2:0 sampling). One picture buffer, allocated when the size changes, reused for every frame.

import CV4L2
import OSHCore
#if canImport(Glibc)
import Glibc
#endif

public final class MJPEGDecoder {
    public struct Counters: Sendable, Equatable {
        public var decoded = 0
        /// Frames libv4lconvert could not read (a torn or truncated frame from the camera).
        public var failed = 0
        public var lastError: String?
    }

    public private(set) var counters = Counters()
    private let handle: OpaquePointer
    private var picture: UnsafeMutableRawBufferPointer?
    private var size = (width: 0, height: 0)

    public init() throws(V4L2Error) {
        guard let h = osh_mjpeg_decoder_create() else {
            throw V4L2Error("libv4lconvert could not make an MJPEG decoder (out of memory?)", errno: ENOMEM)
        }
        handle = h
    }

    deinit {
        v4lconvert_destroy(handle)
        picture?.deallocate()
    }

    /// The frame decoded into this decoder's picture (valid until the next call), or nil when
    /// the frame cannot be read — it is counted, and the next one is tried as usual.
    public func decode(_ frame: VideoFrame) -> VideoFrame? {
        let w = frame.width, h = frame.height
        let need = PixelFormat.i420.frameBytes(width: w, height: h)
        if size != (w, h) || picture == nil {
            picture?.deallocate()
            picture = UnsafeMutableRawBufferPointer.allocate(byteCount: need, alignment: 64)
            size = (w, h)
        }
        guard let out = picture, let src = frame.bytes.baseAddress, !frame.bytes.isEmpty else {
            return fail("an empty MJPEG frame")
        }
        let n = osh_mjpeg_decode(
            handle, UInt32(w), UInt32(h), src.assumingMemoryBound(to: UInt8.self), Int32(frame.bytes.count),
            out.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(need))
        guard n == Int32(need) else {
            let why = v4lconvert_get_error_message(handle).map { String(cString: $0) } ?? ""
            var line = Substring(why)
            while line.last == "\n" || line.last == " " { line.removeLast() }
            return fail(line.isEmpty ? "libv4lconvert returned \(n)" : String(line))
        }
        counters.decoded += 1
        return VideoFrame(
            format: .i420, width: w, height: h, bytesPerLine: w, monotonicTime: frame.monotonicTime,
            bytes: UnsafeRawBufferPointer(start: out.baseAddress, count: need))
    }

    private func fail(_ why: String) -> VideoFrame? {
        counters.failed += 1
        counters.lastError = "MJPEG frame not decoded: \(why)"
        return nil
    }
}
