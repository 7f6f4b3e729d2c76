import OSHCore
import XCTest

final class VideoCoreTests: XCTestCase {
    func testAnnexBScannerFindsStartCodesAndTypes() {
        let s: [UInt8] = [0xff, 0, 0, 0, 1, 0x67, 0x42, 0, 0, 1, 0x68, 0xce, 0, 0, 0, 0, 1, 0x65, 0x88, 0x84, 0, 0]
        let u = AnnexB.units(in: s)
        XCTAssertEqual(u.map(\.type), [7, 8, 5])
        XCTAssertEqual(u.map(\.offset), [5, 10, 17])
        XCTAssertEqual(u.map(\.length), [2, 2, 3], "trailing zeros are not part of the NAL")
        XCTAssertEqual(u.map(\.startCodeLength), [4, 3, 4])
        s.withUnsafeBytes {
            let sum = AnnexB.summarize($0)
            XCTAssertTrue(sum.startsWithSPSPPSIDR)
            XCTAssertTrue(sum.isSelfContainedKeyFrame)
        }
        let idrOnly: [UInt8] = [0, 0, 0, 1, 0x65, 0x88]
        idrOnly.withUnsafeBytes { XCTAssertFalse(AnnexB.summarize($0).isSelfContainedKeyFrame) }
        XCTAssertEqual(AnnexB.units(in: [UInt8]()).count, 0)
        XCTAssertEqual(AnnexB.units(in: [0, 0, 1]).count, 0)
        XCTAssertEqual(AnnexB.units(in: [1, 2, 3, 4]).count, 0)
    }

    func testTestPatternIsDeterministicAndCarriesTheCounter() {
        let a = TestPatternGenerator(width: 320, height: 240)
        let b = TestPatternGenerator(width: 320, height: 240)
        XCTAssertEqual(a.frameBytes, 320 * 240 * 3 / 2)
        a.render(frame: 1234)
        b.render(frame: 1234)
        XCTAssertEqual(Array(a.buffer), Array(b.buffer))
        XCTAssertEqual(TestPatternGenerator.readCounter(luma: a.buffer, width: 320, height: 240), 1234)
        b.render(frame: 1235)
        XCTAssertNotEqual(Array(a.buffer), Array(b.buffer), "the bars move and the counter changes")
        XCTAssertEqual(TestPatternGenerator.readCounter(luma: b.buffer, width: 320, height: 240), 1235)
    }

    func testCaptureFormatPreferenceAndRefusals() {
        XCTAssertEqual(CaptureFormatChoice.choose(offered: [.mjpeg, .yuyv, .h264]), .use(.h264))
        XCTAssertEqual(CaptureFormatChoice.choose(offered: [.mjpeg, .nv12, .yuyv]), .use(.yuyv))
        XCTAssertEqual(CaptureFormatChoice.choose(offered: [.yu12, .nv12]), .use(.nv12))
        XCTAssertEqual(CaptureFormatChoice.choose(offered: [.yu12]), .use(.i420))
        XCTAssertEqual(CaptureFormatChoice.choose(offered: [.mjpeg]), .use(.mjpeg), "decoded before the encoder")
        XCTAssertEqual(CaptureFormatChoice.choose(offered: [.jpeg]), .use(.mjpeg))
        // The configured size decides first: a webcam with YUYV only at small sizes.
        XCTAssertEqual(CaptureFormatChoice.choose(offered: [.yuyv, .mjpeg], hasSize: { $0 == .mjpeg }), .use(.mjpeg))
        XCTAssertEqual(CaptureFormatChoice.choose(offered: [.h264, .yuyv, .mjpeg], hasSize: { $0 == .yuyv }), .use(.yuyv))
        XCTAssertEqual(
            CaptureFormatChoice.choose(offered: [.yuyv, .mjpeg], hasSize: { _ in false }), .use(.yuyv), "none has it: the order")
        guard case .unsupported(let why) = CaptureFormatChoice.choose(offered: [FourCC("GREY")]) else { return XCTFail() }
        XCTAssertTrue(why.contains("osh-edge needs H264, YUYV, NV12, YU12, MJPEG, RGB3 or BGR3"), why)
        guard case .unsupported(let none) = CaptureFormatChoice.choose(offered: []) else { return XCTFail() }
        XCTAssertTrue(none.contains("no formats"), none)
        XCTAssertEqual(FourCC("YUYV").description, "YUYV")
        XCTAssertEqual(FourCC("YUYV").rawValue, 0x5659_5559)
    }

    func testEncoderDecisionIsRpicamAppsRule() {
        XCTAssertEqual(VideoEncoderDecision.decide(captureFormat: .h264, m2mDevice: "/dev/video11", preference: .auto).kind, .cameraH264)
        XCTAssertEqual(
            VideoEncoderDecision.decide(captureFormat: .yuyv, m2mDevice: "/dev/video11", preference: .auto).kind, .m2m("/dev/video11"))
        XCTAssertEqual(VideoEncoderDecision.decide(captureFormat: .yuyv, m2mDevice: nil, preference: .auto).kind, .x264)
        XCTAssertEqual(VideoEncoderDecision.decide(captureFormat: .i420, m2mDevice: "/dev/video11", preference: .software).kind, .x264)
        let refused = VideoEncoderDecision.decide(captureFormat: .i420, m2mDevice: nil, preference: .hardware)
        XCTAssertNil(refused.kind)
        XCTAssertTrue(refused.reason.contains("encoder = auto"), refused.reason)
        // Why each M2M node was passed over is the reason libx264 runs.
        let why = ["/dev/video1 (vicodec) encodes FWHT, not H.264"]
        let soft = VideoEncoderDecision.decide(captureFormat: .yuyv, m2mDevice: nil, unusable: why, preference: .auto)
        XCTAssertEqual(soft.kind, .x264)
        XCTAssertEqual(soft.reason, "/dev/video1 (vicodec) encodes FWHT, not H.264; using libx264")
        let demanded = VideoEncoderDecision.decide(captureFormat: .yuyv, m2mDevice: nil, unusable: why, preference: .hardware)
        XCTAssertNil(demanded.kind)
        XCTAssertTrue(demanded.reason.contains("(/dev/video1 (vicodec) encodes FWHT, not H.264)"), demanded.reason)
        let found = VideoEncoderDecision.decide(
            captureFormat: .yuyv, m2mDevice: "/dev/video11", m2mCard: "bcm2835-codec-encode",
            unusable: why, preference: .auto)
        XCTAssertEqual(found.reason, "hardware H.264 encoder bcm2835-codec-encode found at /dev/video11")
    }

    func testVideoSettingsProblems() {
        XCTAssertEqual(VideoSettings().problems(), [])
        let bad = VideoSettings(width: 641, height: 8, fps: 30, keyFrameInterval: 0, bitrateKbps: 1, threads: -1).problems()
        XCTAssertEqual(bad.count, 6, "\(bad)")
    }
}
