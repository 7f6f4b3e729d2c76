// `osh-edge-dev bench video`: libx264 as the agent runs it (ultrafast, zerolatency, baseline,
// IDR every frame by default) on the moving test pattern, one thread and x264's automatic
// thread count, at 640×480 and 1280×720. Only the encode call is timed (the pattern is
// rendered outside the clock). Also the YUYV→I420 pass a UVC camera's frames need.
//
// Copies of a frame on our side, by construction (see VideoInput): the pattern or an I420
// camera frame reaches x264 by pointer (0 copies); x264's access unit goes to the sink from
// x264's own buffer (0); VideoPublisher copies it once into the POST body (1). A YUYV/NV12
// camera adds the one conversion pass measured below; the M2M path copies once into the
// encoder's input buffer instead.

import OSHCore
import OSHPlatform
#if canImport(Glibc)
import Glibc
#endif
import OSHAgent
import OSHSimulation

public enum VideoBench {
    public struct Case: Sendable {
        public var width: Int
        public var height: Int
        /// 0 = x264 auto (one per core).
        public var threads: Int
        public init(width: Int, height: Int, threads: Int) {
            self.width = width
            self.height = height
            self.threads = threads
        }
    }

    public struct Result: Sendable {
        public var benchCase: Case
        public var frames: Int
        public var seconds: Double
        public var totalBytes: Int
        public var maxBytes: Int
        public var keyFrames: Int
        /// Every key frame carried SPS+PPS+IDR.
        public var allSelfContained: Bool
        public var framesPerSecond: Double { Double(frames) / max(seconds, 1e-9) }
        public var bytesPerFrame: Double { Double(totalBytes) / Double(max(1, frames)) }
    }

    public static let defaultCases = [
        Case(width: 640, height: 480, threads: 1), Case(width: 640, height: 480, threads: 0),
        Case(width: 1280, height: 720, threads: 1), Case(width: 1280, height: 720, threads: 0),
    ]

    public static func run(_ c: Case, frames: Int, fps: Double, keyFrameInterval: Int, bitrateKbps: Int) throws -> Result {
        let enc = try X264Encoder(
            X264Settings(
                width: c.width, height: c.height, fps: fps, keyFrameInterval: keyFrameInterval,
                bitrateKbps: bitrateKbps, threads: c.threads))
        let gen = TestPatternGenerator(width: c.width, height: c.height)
        var r = Result(benchCase: c, frames: 0, seconds: 0, totalBytes: 0, maxBytes: 0, keyFrames: 0, allSelfContained: true)
        // A few warm-up frames: x264 allocates its lookahead/thread state on the first ones.
        for i in 0..<3 {
            gen.render(frame: i)
            try enc.encode(
                VideoFrame(
                    format: .i420, width: gen.width, height: gen.height, bytesPerLine: gen.lumaStride,
                    monotonicTime: 0, bytes: gen.buffer)
            ) { _ in }
        }
        for i in 0..<frames {
            gen.render(frame: i + 3)
            let f = VideoFrame(
                format: .i420, width: gen.width, height: gen.height, bytesPerLine: gen.lumaStride,
                monotonicTime: Double(i) / fps, bytes: gen.buffer)
            let t0 = Clock.monotonicNanoseconds()
            try enc.encode(f) { au in
                r.frames += 1
                r.totalBytes += au.bytes.count
                r.maxBytes = max(r.maxBytes, au.bytes.count)
                if au.isKeyFrame {
                    r.keyFrames += 1
                    if !AnnexB.summarize(au.bytes).isSelfContainedKeyFrame { r.allSelfContained = false }
                }
            }
            r.seconds += Double(Clock.monotonicNanoseconds() - t0) / 1e9
        }
        return r
    }

    /// Milliseconds per YUYV→I420 conversion at this size (the one extra pass a YUYV camera costs).
    public static func yuyvConversionMilliseconds(width: Int, height: Int, frames: Int) -> Double {
        let src = UnsafeMutablePointer<UInt8>.allocate(capacity: width * height * 2)
        let dst = UnsafeMutablePointer<UInt8>.allocate(capacity: PixelFormat.i420.frameBytes(width: width, height: height))
        defer { src.deallocate(); dst.deallocate() }
        for i in 0..<(width * height * 2) { src[i] = UInt8(truncatingIfNeeded: i &* 31) }
        let t0 = Clock.monotonicNanoseconds()
        for _ in 0..<max(1, frames) {
            PixelConversion.yuyvToI420(src, bytesPerLine: width * 2, width: width, height: height, into: dst)
        }
        return Double(Clock.monotonicNanoseconds() - t0) / 1e6 / Double(max(1, frames))
    }

    /// MJPEG decode (libv4lconvert, as the agent runs it for a webcam's MJPEG) at this size:
    /// CPU milliseconds per frame of this thread, over `frames` camera-like JPEGs (ffmpeg's
    /// moving pattern with sensor-like noise, quality 4 — about what a UVC webcam sends), and
    /// their mean size. nil when ffmpeg is not installed to make them.
    public static func mjpegDecode(width: Int, height: Int, frames: Int) throws -> (milliseconds: Double, jpegBytes: Int)? {
        let n = max(1, frames)
        let command =
            "ffmpeg -loglevel error -f lavfi -i 'testsrc2=size=\(width)x\(height):rate=25,noise=alls=12:allf=t' "
            + "-frames:v \(n) -pix_fmt yuvj420p -q:v 4 -f mjpeg - 2>/dev/null"
        guard let pipe = popen(command, "r") else { return nil }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let k = fread(&chunk, 1, chunk.count, pipe)
            if k <= 0 { break }
            bytes += chunk[0..<k]
        }
        pclose(pipe)
        // The stream is JPEG after JPEG: each starts with SOI (FF D8).
        var starts: [Int] = []
        var i = 0
        while i + 2 < bytes.count {
            if bytes[i] == 0xFF && bytes[i + 1] == 0xD8 && bytes[i + 2] == 0xFF { starts.append(i) }
            i += 1
        }
        guard !starts.isEmpty else { return nil }
        let jpegs = zip(starts, starts.dropFirst() + [bytes.count]).map { Array(bytes[$0..<$1]) }
        let decoder = try FrameConverter()
        var cpu = 0.0
        for j in jpegs {
            let t0 = VideoCost.threadSeconds()
            let ok = j.withUnsafeBytes { b in
                decoder.convert(
                    VideoFrame(format: .mjpeg, width: width, height: height, bytesPerLine: 0, monotonicTime: 0, bytes: b)) != nil
            }
            cpu += VideoCost.threadSeconds() - t0
            if !ok { throw V4L2Error(decoder.counters.lastError ?? "MJPEG frame not decoded", errno: EINVAL) }
        }
        return (cpu / Double(jpegs.count) * 1000, jpegs.reduce(0) { $0 + $1.count } / jpegs.count)
    }

    /// What the machine has: CPU count for the "auto" rows.
    public static func onlineCPUs() -> Int { Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))) }
}
