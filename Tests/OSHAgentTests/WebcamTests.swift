import CV4L2
import Foundation
import OSHAgent
import OSHCore
import OSHPlatform
import OSHSimulation
import XCTest

/// USB webcams as they are, on the simulated V4L2: MJPEG above the YUYV sizes (decoded by
/// libv4lconvert, real JPEG frames from ffmpeg, the Huffman tables left out as UVC cameras leave
/// them out), and a camera's own H.264 re-framed so every key frame carries SPS + PPS.
final class WebcamTests: XCTestCase {
    override func setUp() { Log.muted = true }
    override func tearDown() { Log.muted = false }

    /// One JPEG picture of the moving test pattern, baseline with the standard tables, the DHT
    /// segments cut out (a UVC camera's MJPEG frame).
    static func uvcJPEG(width: Int, height: Int, frame: Int = 0, keepTables: Bool = false) throws -> [UInt8] {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg") else {
            throw XCTSkip("ffmpeg is not installed (scripts/bootstrap.sh installs it)")
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        p.arguments = [
            "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=\(width)x\(height):rate=25", "-vf", "select=eq(n\\,\(frame))",
            "-frames:v", "1", "-pix_fmt", "yuvj420p", "-huffman", "default", "-q:v", "4", "-f", "mjpeg", "-",
        ]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = [UInt8](out.fileHandleForReading.readDataToEndOfFile())
        p.waitUntilExit()
        guard p.terminationStatus == 0, data.count > 100 else { throw XCTSkip("ffmpeg made no JPEG") }
        return keepTables ? data : withoutHuffmanTables(data)
    }

    /// The JPEG without its DHT (FFC4) segments.
    static func withoutHuffmanTables(_ j: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0xFF, 0xD8]
        var i = 2
        while i + 4 <= j.count, j[i] == 0xFF {
            let marker = j[i + 1]
            if marker == 0xDA { break }  // start of scan: the rest is entropy-coded data
            let len = Int(j[i + 2]) << 8 | Int(j[i + 3])
            if marker != 0xC4 { out += j[i..<(i + 2 + len)] }
            i += 2 + len
        }
        out += j[i...]
        return out
    }

    private func webcam(_ formats: [FourCC], sizes: [V4L2FrameSize]) -> SimulatedV4L2 {
        let s = SimulatedV4L2()
        s.add("/dev/video0", .camera(card: "HD Webcam", formats: formats, sizes: sizes))
        return s
    }

    /// A webcam with YUYV only at 320×240 and MJPEG at 640×480 too: configured for 640×480, the
    /// agent takes MJPEG at that size (not YUYV shrunk), decodes each frame and encodes it with
    /// libx264; the access units decode in ffprobe. Configured for 320×240 it takes YUYV.
    func testAWebcamsMJPEGIsDecodedAtTheSizeYUYVDoesNotHave() throws {
        let jpeg = try Self.uvcJPEG(width: 640, height: 480)
        XCTAssertEqual(Self.withoutHuffmanTables(jpeg), jpeg, "the frame has no Huffman tables")
        let loop = try EventLoop()
        let s = webcam([.yuyv, .mjpeg], sizes: [V4L2FrameSize(width: 320, height: 240), V4L2FrameSize(width: 640, height: 480)])
        s.limitSizes("/dev/video0", format: .yuyv, to: [V4L2FrameSize(width: 320, height: 240)])
        var aus: [[UInt8]] = []
        let input = try VideoInput(
            loop: loop, settings: VideoSettings(device: "/dev/video0", width: 640, height: 480, fps: 25), device: s
        ) { _, au, _ in aus.append(Array(au)) }
        try input.start()
        XCTAssertEqual(input.pictureSize?.width, 640)
        // 25 fps: a frame every 40 ms (the camera drops what comes faster than the rate).
        for _ in 0..<5 {
            s.deliverFrame("/dev/video0", bytes: jpeg)
            let n = aus.count
            XCTAssertTrue(try loop.run(for: 3) { aus.count > n })
            _ = try loop.run(for: 0.04) { false }
        }
        XCTAssertEqual(input.conversions.converted, 5)
        XCTAssertEqual(input.encoderKind, .x264)
        XCTAssertTrue(
            input.sourceDescription.hasPrefix(
                "camera /dev/video0 (HD Webcam) through V4L2, MJPG 640x480 at 25 fps, decoded by libv4lconvert"),
            input.sourceDescription)
        // A frame that is no JPEG at all (a broken USB transfer) is counted and skipped. (A JPEG
        // cut short still decodes: libjpeg fills the missing rows.)
        s.deliverFrame("/dev/video0", bytes: [UInt8](repeating: 0x55, count: 500))
        XCTAssertTrue(try loop.run(for: 2) { input.conversions.failed == 1 })
        _ = try loop.run(for: 0.04) { false }
        s.deliverFrame("/dev/video0", bytes: jpeg)
        XCTAssertTrue(try loop.run(for: 3) { aus.count == 6 })
        input.stop()
        let file = scratchPath("osh-mjpeg") + ".h264"
        defer { try? FileManager.default.removeItem(atPath: file) }
        FileManager.default.createFile(atPath: file, contents: Data(aus.joined()))
        XCTAssertEqual(try ffprobeFrameCount(file), 6, "every access unit decodes")

        let small = try VideoInput(
            loop: loop, settings: VideoSettings(device: "/dev/video0", width: 320, height: 240, fps: 25), device: s
        ) { _, _, _ in }
        try small.start()
        XCTAssertEqual(small.sourceDescription, "camera /dev/video0 (HD Webcam) through V4L2, YUYV 320x240 at 25 fps")
        small.stop()
    }

    /// A camera that offers MJPEG only is no longer refused.
    func testAnMJPEGOnlyCameraStreams() throws {
        let jpeg = try Self.uvcJPEG(width: 320, height: 240, keepTables: true)
        let loop = try EventLoop()
        let s = webcam([.mjpeg], sizes: [V4L2FrameSize(width: 320, height: 240)])
        var keys = 0
        let input = try VideoInput(
            loop: loop, settings: VideoSettings(device: "/dev/video0", width: 320, height: 240, fps: 25), device: s
        ) { _, au, key in if key && AnnexB.summarize(au).isSelfContainedKeyFrame { keys += 1 } }
        try input.start()
        s.deliverFrame("/dev/video0", bytes: jpeg)
        XCTAssertTrue(try loop.run(for: 3) { keys == 1 })
        input.stop()
    }

    /// RGB24 and BGR24 (what libcamera's V4L2 compatibility layer gives for a camera such as
    /// vimc) are converted to I420: a red picture comes out red in both byte orders (BT.601,
    /// limited range: Y ≈ 82, U ≈ 90, V ≈ 240), and an RGB-only camera streams.
    func testRGBCamerasAreConvertedToI420() throws {
        let w = 64, h = 48
        let converter = try FrameConverter()
        for (format, pixel) in [(PixelFormat.rgb24, [UInt8]([255, 0, 0])), (.bgr24, [0, 0, 255])] {
            let red = [UInt8]((0..<(w * h)).flatMap { _ in pixel })
            let out = try red.withUnsafeBytes { b in
                try XCTUnwrap(
                    converter.convert(
                        VideoFrame(format: format, width: w, height: h, bytesPerLine: w * 3, monotonicTime: 0, bytes: b)))
            }
            XCTAssertEqual(out.format, .i420)
            let y = Int(out.bytes[w * h / 2]), u = Int(out.bytes[w * h + 10]), v = Int(out.bytes[w * h + w * h / 4 + 10])
            XCTAssertTrue(abs(y - 82) <= 6 && abs(u - 90) <= 8 && abs(v - 240) <= 8, "\(format): Y \(y) U \(u) V \(v)")
        }
        let loop = try EventLoop()
        let s = webcam([FourCC("RGB3")], sizes: [V4L2FrameSize(width: 320, height: 240)])
        var keys = 0
        let input = try VideoInput(
            loop: loop, settings: VideoSettings(device: "/dev/video0", width: 320, height: 240, fps: 25), device: s
        ) { _, au, key in if key && AnnexB.summarize(au).isSelfContainedKeyFrame { keys += 1 } }
        try input.start()
        s.deliverFrame("/dev/video0", fill: 0x40)
        XCTAssertTrue(try loop.run(for: 3) { keys == 1 })
        XCTAssertEqual(input.conversions.converted, 1)
        XCTAssertEqual(
            input.sourceDescription,
            "camera /dev/video0 (HD Webcam) through V4L2, RGB3 320x240 at 25 fps, converted to I420 by libv4lconvert")
        input.stop()
    }

    /// A UVC H.264 camera that sends SPS + PPS only with its first key frame and has no control
    /// for the key-frame period: P-frames before the first key frame are held back (counted),
    /// later key frames go out with the kept SPS + PPS in front, and the log line says the camera
    /// keeps its own cadence. A camera with the control is given the configured period.
    func testACamerasOwnH264IsReframedSoEveryKeyFrameStandsAlone() throws {
        let loop = try EventLoop()
        let s = webcam([.h264], sizes: [V4L2FrameSize(width: 320, height: 240)])
        var out: [([UInt8], Bool)] = []
        let input = try VideoInput(
            loop: loop, settings: VideoSettings(device: "/dev/video0", width: 320, height: 240, fps: 25, keyFrameInterval: 3),
            device: s
        ) { _, au, key in out.append((Array(au), key)) }
        try input.start()
        let p = { (n: Int) in SimulatedV4L2.fakeAccessUnit(key: false, frame: n, first: 0) }
        let bareIDR = { (n: Int) in SimulatedV4L2.fakeAccessUnit(key: true, frame: n, first: 0, headers: false) }
        let fullIDR = SimulatedV4L2.fakeAccessUnit(key: true, frame: 2, first: 0)
        var frames = [p(0), p(1), fullIDR, p(3), p(4), bareIDR(5), p(6)]
        frames.insert(bareIDR(-1), at: 0)  // a key frame before any SPS/PPS: undecodable
        for (i, f) in frames.enumerated() {
            s.deliverFrame("/dev/video0", bytes: f)
            _ = try loop.run(for: 0.5) { input.counters.framesIn > i }
            _ = try loop.run(for: 0.04) { false }
        }
        XCTAssertEqual(input.counters.framesIn, frames.count)
        XCTAssertEqual(out.count, 5, "from the first whole key frame on")
        XCTAssertEqual(out.map(\.1), [true, false, false, true, false])
        XCTAssertEqual(out[0].0, fullIDR, "a whole key frame passes untouched")
        XCTAssertEqual(AnnexB.units(in: out[3].0).map(\.type), [7, 8, 5], "SPS + PPS put in front")
        XCTAssertTrue(out[3].0.hasSuffix(bareIDR(5)))
        let f = input.h264Framing.counters
        XCTAssertEqual(f.droppedWithoutHeaders, 1)
        XCTAssertEqual(f.droppedBeforeKeyFrame, 2)
        XCTAssertEqual(f.headersAdded, 1)
        XCTAssertEqual(f.lastKeyFrameInterval, 3)
        XCTAssertTrue(input.sourceDescription.contains("its own H.264 at its own key-frame period"), input.sourceDescription)
        input.stop()

        let c = webcam([.h264], sizes: [V4L2FrameSize(width: 320, height: 240)])
        c.addCameraControls("/dev/video0", [OSH_V4L2_CID_MPEG_VIDEO_H264_I_PERIOD])
        let controlled = try VideoInput(
            loop: loop, settings: VideoSettings(device: "/dev/video0", width: 320, height: 240, fps: 25, keyFrameInterval: 5),
            device: c
        ) { _, _, _ in }
        try controlled.start()
        XCTAssertEqual(c.controls("/dev/video0")[OSH_V4L2_CID_MPEG_VIDEO_H264_I_PERIOD], 5)
        XCTAssertTrue(controlled.sourceDescription.hasSuffix("its own H.264 with a key frame every 5 frames"), controlled.sourceDescription)
        controlled.stop()
    }

    /// The Pi 5 has no H.264 encoder: said as such, with libx264; encoder = hardware refuses.
    func testThePi5SaysItHasNoEncoder() {
        let pi5 = "Raspberry Pi 5 Model B Rev 1.0"
        let auto = VideoEncoderDecision.decide(captureFormat: .yuyv, m2mDevice: nil, preference: .auto, boardModel: pi5)
        XCTAssertEqual(auto.kind, .x264)
        XCTAssertEqual(auto.reason, "no H.264 encoder on this board (Raspberry Pi 5 Model B Rev 1.0); using libx264")
        let hw = VideoEncoderDecision.decide(captureFormat: .yuyv, m2mDevice: nil, preference: .hardware, boardModel: pi5)
        XCTAssertNil(hw.kind)
        XCTAssertTrue(hw.reason.contains("this board has no H.264 encoder"), hw.reason)
        let pi4 = VideoEncoderDecision.decide(
            captureFormat: .yuyv, m2mDevice: nil, preference: .auto, boardModel: "Raspberry Pi 4 Model B Rev 1.4")
        XCTAssertEqual(pi4.reason, "no hardware H.264 encoder (bcm2835-codec-encode) found; using libx264")
        XCTAssertTrue(VideoEncoderDecision.boardHasNoH264Encoder("Raspberry Pi Compute Module 5 Rev 1.0"))
        XCTAssertFalse(VideoEncoderDecision.boardHasNoH264Encoder("Raspberry Pi 400 Rev 1.0"))
    }
}

extension Array where Element == UInt8 {
    fileprivate func hasSuffix(_ s: [UInt8]) -> Bool { count >= s.count && Array(self[(count - s.count)...]) == s }
}
