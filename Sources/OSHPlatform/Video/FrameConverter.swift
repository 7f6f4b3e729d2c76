// Camera frames the encoders cannot take — a USB webcam's MJPEG, the RGB24/BGR24 that
// libcamera's V4L2 compatibility layer gives for some cameras — as I420, through libv4lconvert
// (libv4l's own conversion, which knows what UVC cameras send: MJPEG frames without Huffman
// tables, 4:2:2 or 4:2:0 sampling). One picture buffer, allocated when the size changes, reused
// for every frame.

import CV4L2
import OSHCore
#if canImport(Glibc)
import Glibc
#endif

public final class FrameConverter {
    public struct Counters: Sendable, Equatable {
        public var converted = 0
        /// Frames libv4lconvert could not read (a broken transfer from the camera).
        public var failed = 0
        public var lastError: String?
        public init() {}
    }

    public private(set) var counters = Counters()
    private let handle: OpaquePointer
    private var picture: UnsafeMutableRawBufferPointer?
    private var size = (width: 0, height: 0)

    public init() throws(V4L2Error) {
        guard let h = osh_converter_create() else {
            throw V4L2Error("libv4lconvert could not make a frame converter (out of memory?)", errno: ENOMEM)
        }
        handle = h
    }

    deinit {
        v4lconvert_destroy(handle)
        picture?.deallocate()
    }

    /// The frame as I420 in this converter's picture (valid until the next call), or nil when the
    /// frame cannot be read — it is counted, and the next one is tried as usual.
    public func convert(_ frame: VideoFrame) -> VideoFrame? {
        let w = frame.width, h = frame.height
        let need = PixelFormat.i420.frameBytes(width: w, height: h)
        if size != (w, h) || picture == nil {
            picture?.deallocate()
            picture = UnsafeMutableRawBufferPointer.allocate(byteCount: need, alignment: 64)
            size = (w, h)
        }
        guard let out = picture, let src = frame.bytes.baseAddress, !frame.bytes.isEmpty else {
            return fail(frame.format, "it is empty")
        }
        let n = osh_convert_to_i420(
            handle, frame.format.fourCC.rawValue, UInt32(w), UInt32(h), UInt32(frame.format.isCompressed ? 0 : frame.bytesPerLine),
            src.assumingMemoryBound(to: UInt8.self), Int32(frame.bytes.count), out.baseAddress?.assumingMemoryBound(to: UInt8.self),
            Int32(need))
        guard n == Int32(need) else {
            let why = v4lconvert_get_error_message(handle).map { String(cString: $0) } ?? ""
            var line = Substring(why)
            while line.last == "\n" || line.last == " " { line.removeLast() }
            return fail(frame.format, line.isEmpty ? "libv4lconvert returned \(n)" : String(line))
        }
        counters.converted += 1
        return VideoFrame(
            format: .i420, width: w, height: h, bytesPerLine: w, monotonicTime: frame.monotonicTime,
            bytes: UnsafeRawBufferPointer(start: out.baseAddress, count: need))
    }

    private func fail(_ format: PixelFormat, _ why: String) -> VideoFrame? {
        counters.failed += 1
        counters.lastError = "\(format.fourCC) frame not converted: \(why)"
        return nil
    }
}
