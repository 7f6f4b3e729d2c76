// Size (~520 lines): one test per V4L2 path (formats, queues, unplug, errnos) through the mocking seam.
import CV4L2
import OSHCore
@testable import OSHPlatform
import XCTest
import OSHSimulation

/// V4L2 capture and the M2M encoder through the simulated device (no camera exists here).
final class VideoV4L2Tests: XCTestCase {
    static let cam = "/dev/video0", enc = "/dev/video11"
    static let sizes = [
        V4L2FrameSize(width: 320, height: 240), V4L2FrameSize(width: 640, height: 480), V4L2FrameSize(width: 1280, height: 720),
    ]

    override func setUp() { Log.muted = true }
    override func tearDown() { Log.muted = false }

    private func sim(
        formats: [FourCC] = [.mjpeg, .yuyv], accepts: [FourCC]? = nil, rateControl: Bool = true, encoder: Bool = true
    ) -> SimulatedV4L2 {
        let s = SimulatedV4L2()
        s.add(Self.cam, .camera(card: "HD Webcam", formats: formats, sizes: Self.sizes, accepts: accepts, frameRateControl: rateControl))
        s.add("/dev/video1", .other(card: "HD Webcam metadata"))
        if encoder {
            s.add("/dev/video10", .other(card: "bcm2835-codec-decode"))
            s.add(Self.enc, .encoder)
        }
        return s
    }

    /// Runs the loop until `cond` holds or `timeout` seconds pass.
    private func spin(_ loop: EventLoop, timeout: Double = 2, until cond: () -> Bool) throws -> Bool {
        try loop.run(for: timeout, until: cond)
    }

    // MARK: Probe

    func testProbeListsCamerasAndEncoderWithFormatsAndSizes() {
        let s = sim()
        let list = V4L2Probe.list(s)
        XCTAssertEqual(list.map(\.path), ["/dev/video0", "/dev/video1", "/dev/video10", "/dev/video11"])
        XCTAssertEqual(list.map(\.role), [.camera, .other, .other, .h264Encoder])
        XCTAssertEqual(list[0].formats.map(\.fourCC), [.mjpeg, .yuyv])
        XCTAssertEqual(list[0].formats[1].sizes, Self.sizes)
        XCTAssertEqual(list[0].driver, "uvcvideo")
        XCTAssertEqual(list[3].formats.map(\.fourCC), [.yu12, .nv12, .yuyv])
        XCTAssertTrue(list[3].formats[0].isRange)
        XCTAssertEqual(
            V4L2Probe.findEncoder(s), V4L2EncoderSearch(path: Self.enc, card: V4L2Probe.encoderCard),
            "found by what its queues list (H.264 out, YU12/NV12/YUYV in)")
        XCTAssertEqual(V4L2Probe.findEncoder(sim(encoder: false)), V4L2EncoderSearch(), "no M2M node at all: nothing to explain")
        XCTAssertEqual(s.openHandles, 0, "probing closes what it opens")
        XCTAssertEqual(V4L2Probe.list(SimulatedV4L2()), [])
    }

    /// vicodec (the kernel's virtual codec, present under QEMU): M2M, but FWHT.
    private func vicodec(_ s: SimulatedV4L2, from n: Int = 1) {
        s.add("/dev/video\(n)", .vicodecEncoder)
        s.add("/dev/video\(n + 1)", .vicodecDecoder)
        s.add("/dev/video\(n + 2)", .vicodecStatelessDecoder)
    }

    func testEncoderIsFoundByWhatItEncodesNotByItsName() throws {
        // vicodec alone: no encoder, and why for each of its nodes.
        let v = SimulatedV4L2()
        v.add(Self.cam, .camera(card: "HD Webcam", formats: [.yuyv], sizes: Self.sizes))
        vicodec(v)
        let none = V4L2Probe.findEncoder(v)
        XCTAssertNil(none.path)
        XCTAssertEqual(
            none.unusable,
            [
                "/dev/video1 (vicodec) encodes FWHT, not H.264",
                "/dev/video2 (vicodec) is a decoder (FWHT), not an encoder",
                "/dev/video3 (vicodec) is a decoder (SFWH), not an encoder",
            ])
        XCTAssertEqual(
            v.trace(of: "/dev/video1"),
            [
                "OPEN", "QUERYCAP", "ENUM_FMT #0 FWHT", "ENUM_FMT #1 → EINVAL",
                "ENUM_FMT #0 YU12", "ENUM_FMT #1 NV12", "ENUM_FMT #2 YUYV", "ENUM_FMT #3 RGB3",
                "ENUM_FMT #4 → EINVAL", "CLOSE",
            ], "single-planar queues asked, nothing streamed")
        XCTAssertEqual(v.trace(of: Self.cam), ["OPEN", "QUERYCAP", "CLOSE"], "a camera is not asked for formats")
        XCTAssertEqual(v.openHandles, 0)

        // The probe says the same, by role and note.
        let list = V4L2Probe.list(v)
        XCTAssertEqual(list.map(\.role), [.camera, .m2mCodec, .m2mCodec, .m2mCodec])
        XCTAssertEqual(list[1].note, "encodes FWHT, not H.264")
        XCTAssertEqual(list[1].driver, "vicodec")
        XCTAssertEqual(list[1].formats.map(\.fourCC), [FourCC("FWHT")], "an unusable codec shows its coded side")
        XCTAssertEqual(list[2].formats.map(\.fourCC), [FourCC("FWHT")])

        // vicodec + the Pi's codec: the Pi's, after vicodec's nodes; the ones passed over are said.
        vicodec(v, from: 4)
        v.add("/dev/video10", .other(card: "bcm2835-codec-decode"))
        v.add(Self.enc, .encoder)
        let pi = V4L2Probe.findEncoder(v)
        XCTAssertEqual(pi.path, Self.enc)
        XCTAssertEqual(pi.card, "bcm2835-codec-encode")
        XCTAssertEqual(pi.unusable.count, 6)

        // An H.264 encoder under another name (another SoC's codec) is found too, and runs.
        let q = SimulatedV4L2()
        vicodec(q)
        q.add(
            "/dev/video7",
            .m2m(
                card: "Qualcomm Venus video encoder", driver: "qcom-venus", capture: [.h264, FourCC("HEVC")],
                output: [.nv12], multiplanar: true))
        XCTAssertEqual(V4L2Probe.findEncoder(q).path, "/dev/video7")
        XCTAssertEqual(V4L2Probe.list(q).last?.role, .h264Encoder)
        XCTAssertEqual(V4L2Probe.list(q).last?.formats.map(\.fourCC), [.nv12], "an encoder shows the raw layouts it takes")
        let loop = try EventLoop()
        let e = try V4L2M2MEncoder(
            loop: loop, device: q, path: "/dev/video7", input: .nv12, width: 320, height: 240, bytesPerLine: 320,
            settings: VideoSettings(width: 320, height: 240, fps: 10))
        XCTAssertEqual(e.path, "/dev/video7")
        e.shutdown()
        XCTAssertEqual(q.openHandles, 0)
    }

    func testH264EncodersOsHEdgeCannotDriveAreExplained() {
        let s = SimulatedV4L2()
        s.add("/dev/video0", .m2m(card: "rgb-only", driver: "x", capture: [.h264], output: [FourCC("RGB3")], multiplanar: true))
        s.add("/dev/video1", .m2m(card: "single", driver: "y", capture: [.h264], output: [.nv12], multiplanar: false))
        s.add("/dev/video2", .m2m(card: "isp", driver: "z", capture: [.yu12], output: [.yuyv], multiplanar: true))
        s.add("/dev/video3", .m2m(card: "jpeg", driver: "z", capture: [.jpeg], output: [.yu12], multiplanar: true))
        XCTAssertEqual(
            V4L2Probe.findEncoder(s).unusable,
            [
                "/dev/video0 (rgb-only) encodes H.264 but takes only RGB3 (osh-edge feeds YUYV, NV12 or YU12)",
                "/dev/video1 (single) encodes H.264 through the single-planar M2M API (osh-edge drives multi-planar encoders only)",
                "/dev/video2 (isp) is a converter (raw to raw), not an encoder",
                "/dev/video3 (jpeg) encodes JPEG, not H.264",
            ])
        XCTAssertNil(V4L2Probe.findEncoder(s).path)
        XCTAssertTrue(V4L2Probe.list(s).allSatisfy { $0.role == .m2mCodec })
    }

    func testSystemProbeOnThisMachineFindsNothingAndDoesNotFail() {
        // No /dev/video* here; on a Pi this lists the real nodes.
        let found = V4L2Probe.list(SystemV4L2(directory: "/nonexistent"))
        XCTAssertEqual(found, [])
    }

    // MARK: Capture

    func testNegotiatesYUYVMapsBuffersStreamsAndDeliversFrames() throws {
        let loop = try EventLoop()
        let s = sim()
        let cam = V4L2Camera(loop: loop, device: s, path: Self.cam, width: 640, height: 480, fps: 25, bufferCount: 4)
        var frames: [(PixelFormat, Int, Int, Int, UInt8, Int)] = []
        cam.onFrame = { f in frames.append((f.format, f.width, f.height, f.bytesPerLine, f.bytes[0], f.bytes.count)) }
        try cam.start()
        XCTAssertEqual(
            cam.negotiated,
            .init(
                format: .yuyv, width: 640, height: 480, bytesPerLine: 1280, sizeImage: 614_400, driverFPS: 25, card: "HD Webcam",
                driver: "uvcvideo"))
        XCTAssertEqual(
            s.trace(of: Self.cam),
            [
                "OPEN", "QUERYCAP", "ENUM_FMT #0 MJPG", "ENUM_FMT #1 YUYV", "ENUM_FMT #2 → EINVAL",
                // YUYV has the configured size: it goes before MJPEG.
                "ENUM_FRAMESIZES #0 320x240", "ENUM_FRAMESIZES #1 640x480",
                "S_FMT CAPTURE YUYV 640x480", "S_PARM 25.0 fps", "REQBUFS CAPTURE 4",
                "QUERYBUF CAPTURE #0", "MMAP CAPTURE #0", "QBUF CAPTURE #0",
                "QUERYBUF CAPTURE #1", "MMAP CAPTURE #1", "QBUF CAPTURE #1",
                "QUERYBUF CAPTURE #2", "MMAP CAPTURE #2", "QBUF CAPTURE #2",
                "QUERYBUF CAPTURE #3", "MMAP CAPTURE #3", "QBUF CAPTURE #3",
                "EXPBUF CAPTURE #0", "EXPBUF CAPTURE #1", "EXPBUF CAPTURE #2", "EXPBUF CAPTURE #3",
                "STREAMON CAPTURE",
            ])
        s.clearTrace()
        XCTAssertTrue(s.deliverFrame(Self.cam, fill: 0x42))
        XCTAssertTrue(try spin(loop) { frames.count == 1 })
        XCTAssertEqual(frames[0].0, .yuyv)
        XCTAssertEqual(frames[0].4, 0x42, "the frame is the driver's buffer, not a copy of something else")
        XCTAssertEqual(frames[0].5, 614_400)
        XCTAssertEqual(
            s.trace(of: Self.cam), ["DQBUF CAPTURE #0", "QBUF CAPTURE #0", "DQBUF CAPTURE → EAGAIN"],
            "dequeued, handed over, queued again; then EAGAIN ends the burst")
        cam.stop()
        XCTAssertEqual(s.openHandles, 0)
        XCTAssertEqual(s.liveMappings, 0)
        XCTAssertEqual(s.openDMABUFs, 0, "exported DMABUF fds closed")
        XCTAssertEqual(Array(s.trace(of: Self.cam).suffix(3)), ["STREAMOFF CAPTURE", "REQBUFS CAPTURE 0", "CLOSE"])
    }

    func testHeldBuffersStayOutOfTheQueueUntilReleased() throws {
        let loop = try EventLoop()
        let s = sim()
        let cam = V4L2Camera(loop: loop, device: s, path: Self.cam, width: 320, height: 240, fps: 25, bufferCount: 2, now: { 0 })
        var frames: [(Int32, Int)] = []
        cam.onFrame = { f in
            frames.append((f.dmabufFD, f.bufferIndex))
            cam.holdCurrentBuffer()
        }
        try cam.start()
        XCTAssertTrue(cam.exportsDMABUF)
        s.clearTrace()
        s.deliverFrame(Self.cam)
        XCTAssertTrue(try spin(loop) { frames.count == 1 })
        XCTAssertGreaterThanOrEqual(frames[0].0, 0, "the frame names its DMABUF")
        XCTAssertEqual(cam.heldCount, 1)
        XCTAssertEqual(s.trace(of: Self.cam), ["DQBUF CAPTURE #0", "DQBUF CAPTURE → EAGAIN"], "held: not queued again")
        XCTAssertTrue(s.deliverFrame(Self.cam))
        XCTAssertFalse(s.deliverFrame(Self.cam), "one buffer left in the driver, now filled")
        cam.release(bufferIndex: 0, generation: cam.generation - 1)
        XCTAssertEqual(cam.heldCount, 1, "a release from an earlier stream is ignored")
        cam.release(bufferIndex: 0, generation: cam.generation)
        XCTAssertEqual(cam.heldCount, 0)
        XCTAssertEqual(s.trace(of: Self.cam).last, "QBUF CAPTURE #0")
        cam.stop()

        let noExport = sim()
        noExport.exportDisabled = [Self.cam]
        let plain = V4L2Camera(loop: loop, device: noExport, path: Self.cam, width: 320, height: 240, fps: 25)
        var fds: [Int32] = []
        plain.onFrame = { fds.append($0.dmabufFD) }
        try plain.start()
        XCTAssertFalse(plain.exportsDMABUF)
        noExport.deliverFrame(Self.cam)
        XCTAssertTrue(try spin(loop) { fds.count == 1 })
        XCTAssertEqual(fds, [-1], "no export: frames are copied into the encoder instead")
        plain.stop()
    }

    func testPrefersH264FromTheCameraThenYUYVThenNV12() throws {
        let loop = try EventLoop()
        for (offered, expect) in [
            ([FourCC.mjpeg, .yuyv, .h264], PixelFormat.h264), ([.nv12, .yuyv], .yuyv), ([.yu12, .nv12], .nv12), ([.yu12], .i420),
        ] {
            let s = sim(formats: offered)
            let cam = V4L2Camera(loop: loop, device: s, path: Self.cam, width: 1280, height: 720, fps: 5)
            try cam.start()
            XCTAssertEqual(cam.negotiated?.format, expect, "\(offered)")
            cam.stop()
        }
    }

    func testNegotiationFailuresAreThrownAndLeaveNothingOpen() throws {
        let loop = try EventLoop()
        let cases: [(SimulatedV4L2, String, String)] = [
            (sim(formats: [FourCC("GREY")]), Self.cam, "osh-edge needs H264, YUYV, NV12, YU12, MJPEG, RGB3 or BGR3"),
            (sim(formats: [.yuyv], accepts: [.mjpeg]), Self.cam, "format negotiation failed"),
            (sim(), Self.enc, "is not a capture device"),
            (sim(), "/dev/video1", "is not a capture device"),
        ]
        for (s, path, needle) in cases {
            let cam = V4L2Camera(loop: loop, device: s, path: path, width: 640, height: 480, fps: 5)
            XCTAssertThrowsError(try cam.start()) { XCTAssertTrue("\($0)".contains(needle), "\($0)") }
            XCTAssertEqual(s.openHandles, 0, needle)
            XCTAssertEqual(s.liveMappings, 0, needle)
        }
        // A driver error mid-setup: S_FMT busy (another program streams), REQBUFS refused.
        let s = sim()
        s.inject(.reqbufs, errno: EINVAL)
        let cam = V4L2Camera(loop: loop, device: s, path: Self.cam, width: 640, height: 480, fps: 5)
        XCTAssertThrowsError(try cam.start()) { XCTAssertTrue("\($0)".contains("VIDIOC_REQBUFS on /dev/video0"), "\($0)") }
        XCTAssertEqual(s.openHandles, 0)
    }

    func testSizeIsSnappedByTheDriverAndRateDroppingWithoutDriverControl() throws {
        let loop = try EventLoop()
        let s = sim(rateControl: false)
        var t = 100.0
        let cam = V4L2Camera(loop: loop, device: s, path: Self.cam, width: 600, height: 500, fps: 5, now: { t })
        var got = 0
        cam.onFrame = { _ in got += 1 }
        try cam.start()
        XCTAssertEqual(cam.negotiated?.width, 640, "the nearest size the camera has")
        XCTAssertNil(cam.negotiated?.driverFPS, "S_PARM refused: the rate is kept by dropping")
        XCTAssertTrue(s.trace(of: Self.cam).contains("S_PARM → ENOTTY"))
        // The camera runs at 30 fps; we want 5: one frame in six is kept.
        for i in 0..<12 {
            s.deliverFrame(Self.cam)
            XCTAssertTrue(try spin(loop) { cam.counters.dequeued == i + 1 })
            t += 1.0 / 30
        }
        XCTAssertEqual(cam.counters.dequeued, 12)
        XCTAssertEqual(got, 2)
        XCTAssertEqual(cam.counters.droppedForRate, 10)
    }

    func testBuffersFullLosesFramesAndEAGAINIsHarmless() throws {
        let loop = try EventLoop()
        let s = sim()
        let cam = V4L2Camera(loop: loop, device: s, path: Self.cam, width: 320, height: 240, fps: 25, bufferCount: 3, now: { 0 })
        var seen: [UInt8] = []
        cam.onFrame = { seen.append($0.bytes[0]) }
        try cam.start()
        // Three buffers queued: the fourth frame has nowhere to go while we are not reading.
        XCTAssertEqual((1...4).map { s.deliverFrame(Self.cam, fill: UInt8($0)) }, [true, true, true, false])
        s.inject(.dqbuf, errno: EAGAIN)
        _ = try loop.runOnce(timeoutMs: 100)
        XCTAssertEqual(cam.counters.eagain, 1, "a spurious wake-up: nothing dequeued, nothing lost")
        XCTAssertTrue(try spin(loop) { cam.counters.dequeued == 3 })
        XCTAssertEqual(seen.count, 1, "same clock instant: the rate keeps one")
        XCTAssertEqual(cam.counters.droppedForRate, 2)
        XCTAssertEqual(seen, [1], "oldest first")
        XCTAssertTrue(s.deliverFrame(Self.cam, fill: 9), "buffers were queued again")
        cam.stop()
    }

    func testDeviceRemovalClosesAndReopensWithBackoff() throws {
        let loop = try EventLoop()
        let s = sim()
        let cam = V4L2Camera(
            loop: loop, device: s, path: Self.cam, width: 640, height: 480, fps: 25,
            backoff: Backoff(initial: 0.01, maximum: 0.02))
        var got = 0
        cam.onFrame = { _ in got += 1 }
        try cam.start()
        s.unplug(Self.cam)
        XCTAssertTrue(try spin(loop) { cam.counters.deviceLost == 1 })
        XCTAssertFalse(cam.isStreaming)
        XCTAssertEqual(s.liveMappings, 0, "buffers unmapped")
        XCTAssertEqual(s.openHandles, 0, "fd closed")
        XCTAssertTrue(try spin(loop) { cam.counters.failedOpens >= 2 }, "retrying while it is gone")
        s.plug(Self.cam)
        XCTAssertTrue(try spin(loop) { cam.isStreaming })
        XCTAssertTrue(s.deliverFrame(Self.cam))
        XCTAssertTrue(try spin(loop) { got == 1 })
        let t = s.trace(of: Self.cam)
        XCTAssertTrue(t.contains("DQBUF → ENODEV"), "\(t)")
        XCTAssertTrue(t.contains("OPEN → ENOENT"), "\(t)")
        XCTAssertEqual(t.filter { $0 == "STREAMON CAPTURE" }.count, 2)
        cam.stop()
    }

    /// The virtual Pi's 20 s camera unplug, in the journal: the loss once with its first retry,
    /// each different reason once (the node is missing; then busy), and one line when frames
    /// resume — not a line per retry. `counters.lastError` still follows every attempt.
    func testAnUnplugIsLoggedOnceNotAtEveryRetry() throws {
        let loop = try EventLoop()
        let s = sim()
        var t = 100.0
        let cam = V4L2Camera(
            loop: loop, device: s, path: Self.cam, width: 640, height: 480, fps: 5,
            backoff: Backoff(initial: 0.01, maximum: 0.04), now: { t })
        var got = 0
        cam.onFrame = { _ in got += 1 }
        var busy = ""
        let lines = try capturingLog {
            try cam.start()
            XCTAssertTrue(s.deliverFrame(Self.cam))
            XCTAssertTrue(try spin(loop) { got == 1 })
            s.unplug(Self.cam)
            XCTAssertTrue(try spin(loop) { cam.counters.failedOpens >= 6 }, "several retries while it is gone")
            XCTAssertTrue(cam.counters.lastError?.hasPrefix("cannot open camera /dev/video0: ") ?? false, cam.counters.lastError ?? "")
            // Plugged in again, but another program holds it for two attempts.
            s.inject(.sFmt, errno: EBUSY, times: 2, path: Self.cam)
            s.plug(Self.cam)
            XCTAssertTrue(try spin(loop) { cam.isStreaming })
            busy = s.trace(of: Self.cam).filter { $0.hasPrefix("S_FMT") && $0.contains("EBUSY") }.joined(separator: ", ")
            t += 1
            XCTAssertTrue(s.deliverFrame(Self.cam))
            XCTAssertTrue(try spin(loop) { got == 2 })
            cam.stop()
        }
        XCTAssertEqual(busy.components(separatedBy: ", ").count, 2, busy)
        XCTAssertEqual(
            lines.map(\.1),
            [
                "camera /dev/video0: YUYV 640x480, 4 buffers, 5.0 fps (driver 5.0)",
                "camera /dev/video0 lost (VIDIOC_DQBUF on /dev/video0: No such device); frames pause, retrying in 0.01 s",
                "cannot open camera /dev/video0: open /dev/video0: No such file or directory; check the device exists "
                    + "(v4l2-ctl --list-devices) and the agent is in the video group",
                "VIDIOC_S_FMT on /dev/video0: Device or resource busy; the camera refused YUYV 640x480",
                "camera /dev/video0: back, YUYV 640x480, 4 buffers, 5.0 fps (driver 5.0); frames resume",
            ])
        XCTAssertEqual(lines.map(\.0), [.info, .warning, .warning, .warning, .notice])

        // A second outage is news again, said the same way.
        let again = try capturingLog {
            try cam.start()
            s.unplug(Self.cam)
            XCTAssertTrue(try spin(loop) { cam.counters.failedOpens >= 9 })
            s.plug(Self.cam)
            XCTAssertTrue(try spin(loop) { cam.isStreaming })
            cam.stop()
        }.map(\.1)
        XCTAssertEqual(again.count, 4, "\(again)")
        guard again.count == 4 else { return }
        XCTAssertEqual(again[0], lines[0].1)
        XCTAssertEqual(again[1], lines[1].1)
        XCTAssertEqual(again[2], lines[2].1)
        XCTAssertEqual(again[3], lines[4].1)
    }

    /// libcamera's V4L2 layer says nothing when its camera goes (nor does a wedged USB camera):
    /// frames just stop. No frame for `stallSeconds` is taken as an unplug.
    func testACameraThatStopsSilentlyIsTakenAsLostAndReopened() throws {
        let loop = try EventLoop()
        let s = sim()
        let cam = V4L2Camera(
            loop: loop, device: s, path: Self.cam, width: 640, height: 480, fps: 25,
            backoff: Backoff(initial: 0.01, maximum: 0.02))
        cam.stallSeconds = 0.1
        var got = 0
        cam.onFrame = { _ in got += 1 }
        try cam.start()
        // Frames keep it alive across several checks.
        for _ in 0..<6 {
            XCTAssertTrue(s.deliverFrame(Self.cam))
            _ = try spin(loop, timeout: 0.05) { false }
        }
        XCTAssertEqual(cam.counters.deviceLost, 0, "frames came within every check")
        s.unplug(Self.cam, silently: true)
        XCTAssertTrue(try spin(loop) { cam.counters.deviceLost == 1 })
        XCTAssertEqual(
            cam.counters.lastError,
            "no frame for 0.1 s while streaming (unplugged, or the camera stopped without saying so)")
        XCTAssertEqual(s.openHandles, 0)
        s.plug(Self.cam)
        XCTAssertTrue(try spin(loop) { cam.isStreaming })
        XCTAssertTrue(s.deliverFrame(Self.cam))
        XCTAssertTrue(try spin(loop) { got == 7 })
        cam.stop()
    }

    /// A node answered by libcamera's layer: its driver is said, the stall limit is shorter, and
    /// an owner that handles the loss (the agent starts again) gets it instead of a reopen.
    func testALibcameraCameraLossGoesToItsOwner() throws {
        let loop = try EventLoop()
        let s = sim(formats: [FourCC("RGB3")])
        s.cameraDrivers[Self.cam] = "libcamera"
        let cam = V4L2Camera(
            loop: loop, device: s, path: Self.cam, width: 640, height: 480, fps: 25,
            backoff: Backoff(initial: 0.01, maximum: 0.02))
        var losses: [String] = []
        cam.onLost = { e in
            losses.append(e.message)
            return true
        }
        try cam.start()
        XCTAssertEqual(cam.negotiated?.driver, "libcamera")
        XCTAssertEqual(cam.negotiated?.format, .rgb24)
        XCTAssertEqual(cam.stallSeconds, 4)
        s.unplug(Self.cam)
        XCTAssertTrue(try spin(loop) { losses.count == 1 })
        XCTAssertEqual(losses, ["VIDIOC_DQBUF on /dev/video0: No such device"])
        _ = try spin(loop, timeout: 0.1) { false }
        XCTAssertEqual(cam.counters.opens, 1, "no reopen: the owner starts again")
        XCTAssertFalse(cam.isStreaming)
        // Abandoned, not stopped: libcamera aborts on a STREAMOFF of a camera that has gone.
        XCTAssertFalse(s.trace(of: Self.cam).contains("STREAMOFF CAPTURE"), "\(s.trace(of: Self.cam))")
        XCTAssertEqual(s.openHandles, 1, "left to the new process image to release")
        cam.stop()
    }

    func testCameraAbsentAtStartIsRetriedNotFatal() throws {
        let loop = try EventLoop()
        let s = SimulatedV4L2()
        let cam = V4L2Camera(
            loop: loop, device: s, path: Self.cam, width: 640, height: 480, fps: 5,
            backoff: Backoff(initial: 0.01, maximum: 0.01))
        XCTAssertNoThrow(try cam.start())
        XCTAssertTrue(try spin(loop) { cam.counters.failedOpens >= 2 })
        XCTAssertTrue(cam.counters.lastError?.contains("cannot open camera /dev/video0") ?? false, cam.counters.lastError ?? "")
        cam.stop()
    }

    // MARK: M2M encoder

    private func encoder(
        _ loop: EventLoop, _ s: SimulatedV4L2, input: PixelFormat = .i420, width: Int = 320, height: Int = 240,
        keyint: Int = 1
    ) throws -> V4L2M2MEncoder {
        try V4L2M2MEncoder(
            loop: loop, device: s, path: Self.enc, input: input, width: width, height: height,
            bytesPerLine: input == .yuyv ? width * 2 : width,
            settings: VideoSettings(width: width, height: height, fps: 10, keyFrameInterval: keyint, bitrateKbps: 2000, level: 40))
    }

    func testM2MSetupSequenceAndControls() throws {
        let loop = try EventLoop()
        let s = sim()
        let e = try encoder(loop, s)
        XCTAssertEqual(
            s.trace(of: Self.enc),
            [
                "OPEN", "QUERYCAP",
                "S_FMT OUTPUT_MPLANE YU12 320x240", "S_FMT CAPTURE_MPLANE H264 320x240", "S_PARM",
                "S_CTRL H264_I_PERIOD=1", "S_CTRL REPEAT_SEQ_HEADER=1", "S_CTRL BITRATE=2000000", "S_CTRL H264_LEVEL=11",
                "REQBUFS OUTPUT_MPLANE 2", "QUERYBUF OUTPUT_MPLANE #0", "MMAP OUTPUT_MPLANE #0", "QUERYBUF OUTPUT_MPLANE #1",
                "MMAP OUTPUT_MPLANE #1",
                "REQBUFS CAPTURE_MPLANE 2", "QUERYBUF CAPTURE_MPLANE #0", "MMAP CAPTURE_MPLANE #0", "QUERYBUF CAPTURE_MPLANE #1",
                "MMAP CAPTURE_MPLANE #1",
                "QBUF CAPTURE_MPLANE #0", "QBUF CAPTURE_MPLANE #1",
                "STREAMON OUTPUT_MPLANE", "STREAMON CAPTURE_MPLANE",
            ])
        XCTAssertEqual(V4L2M2MEncoder.levelControl(40), 11)
        XCTAssertEqual(V4L2M2MEncoder.levelControl(42), 13)
        XCTAssertNil(V4L2M2MEncoder.levelControl(7))
        e.shutdown()
        XCTAssertEqual(s.openHandles, 0)
        XCTAssertEqual(s.liveMappings, 0)
    }

    func testM2MEncodesEachFrameWithHeadersKeepsTimeAndDropsWhenBusy() throws {
        let loop = try EventLoop()
        let s = sim()
        let e = try encoder(loop, s)
        var aus: [([UInt8], Double, Bool)] = []
        e.onAccessUnit = { aus.append((Array($0.bytes), $0.monotonicTime, $0.isKeyFrame)) }
        var picture = [UInt8](repeating: 0, count: 320 * 240 * 3 / 2)
        for i in 0..<3 {
            picture[0] = UInt8(10 + i)
            let ok = picture.withUnsafeBytes {
                e.submit(VideoFrame(format: .i420, width: 320, height: 240, bytesPerLine: 320, monotonicTime: 12.5 + Double(i), bytes: $0))
            }
            XCTAssertEqual(ok, i < 2, "two input buffers; the third frame finds both with the encoder")
        }
        XCTAssertEqual(e.counters.droppedBusy, 1)
        XCTAssertTrue(try spin(loop) { aus.count == 2 })
        for (i, au) in aus.enumerated() {
            XCTAssertEqual(Array(AnnexB.units(in: au.0).map(\.type)), [7, 8, 5])
            XCTAssertEqual(au.0.last.map { _ in au.0[au.0.count - 2] }, UInt8(10 + i), "the encoder saw our picture")
            XCTAssertEqual(au.1, 12.5 + Double(i), accuracy: 1e-6, "the timestamp travels through the driver")
            XCTAssertTrue(au.2)
        }
        // Input buffers came back: the next frame is accepted.
        let ok = picture.withUnsafeBytes {
            e.submit(VideoFrame(format: .i420, width: 320, height: 240, bytesPerLine: 320, monotonicTime: 20, bytes: $0))
        }
        XCTAssertTrue(ok)
        XCTAssertTrue(try spin(loop) { aus.count == 3 })
        e.shutdown()
    }

    func testM2MKeyIntervalAndPaddedLines() throws {
        let loop = try EventLoop()
        let s = sim()
        // 100 pixels: the driver pads lines to 128 bytes; the copy follows its layout.
        let e = try encoder(loop, s, input: .nv12, width: 100, height: 50, keyint: 3)
        var keys: [Bool] = []
        var firstBytes: [UInt8] = []
        e.onAccessUnit = {
            keys.append($0.isKeyFrame); firstBytes.append($0.bytes[$0.bytes.count - 2])
        }
        var picture = [UInt8](repeating: 7, count: 100 * 50 * 3 / 2)
        for i in 0..<6 {
            picture[0] = UInt8(i)
            picture.withUnsafeBytes {
                _ = e.submit(VideoFrame(format: .nv12, width: 100, height: 50, bytesPerLine: 100, monotonicTime: Double(i), bytes: $0))
            }
            XCTAssertTrue(try spin(loop) { keys.count == i + 1 })
        }
        XCTAssertEqual(keys, [true, false, false, true, false, false])
        XCTAssertEqual(firstBytes, [0, 1, 2, 3, 4, 5])
        XCTAssertEqual(s.controls(Self.enc)[OSH_V4L2_CID_MPEG_VIDEO_H264_I_PERIOD], 3)
        e.shutdown()
    }

    func testM2MImportsCameraDMABUFWithoutCopyWhenLayoutsMatch() throws {
        let loop = try EventLoop()
        let s = sim()
        let cam = V4L2Camera(loop: loop, device: s, path: Self.cam, width: 320, height: 240, fps: 25, bufferCount: 4, now: { 0 })
        let e = try V4L2M2MEncoder(
            loop: loop, device: s, path: Self.enc, input: .yuyv, width: 320, height: 240, bytesPerLine: 640,
            settings: VideoSettings(width: 320, height: 240), dmabufSlots: 2)
        XCTAssertTrue(e.importsDMABUF)
        let t = s.trace(of: Self.enc)
        XCTAssertTrue(t.contains("REQBUFS OUTPUT_MPLANE 2 DMABUF"), "\(t)")
        XCTAssertFalse(t.contains { $0.hasPrefix("MMAP OUTPUT_MPLANE") }, "no input buffers of its own")
        var released: [Int] = []
        var aus: [UInt8] = []
        e.onInputReleased = { i in
            released.append(i); cam.release(bufferIndex: i, generation: cam.generation)
        }
        e.onAccessUnit = { aus.append($0.bytes[$0.bytes.count - 2]) }
        cam.onFrame = { f in if e.submit(f) { cam.holdCurrentBuffer() } }
        try cam.start()
        s.deliverFrame(Self.cam, fill: 0x5a)
        XCTAssertTrue(try spin(loop) { aus.count == 1 })
        XCTAssertEqual(aus, [0x5a], "the encoder read the camera's own buffer")
        XCTAssertEqual(released, [0])
        XCTAssertEqual(cam.heldCount, 0, "given back to the camera")
        XCTAssertTrue(s.trace(of: Self.enc).contains("QBUF OUTPUT_MPLANE #0"))
        e.shutdown()
        cam.stop()

        // The codec refuses the camera's buffer (not contiguous memory): copy from then on.
        let s2 = sim()
        let cam2 = V4L2Camera(loop: loop, device: s2, path: Self.cam, width: 320, height: 240, fps: 25, now: { 0 })
        let e2 = try V4L2M2MEncoder(
            loop: loop, device: s2, path: Self.enc, input: .yuyv, width: 320, height: 240, bytesPerLine: 640,
            settings: VideoSettings(width: 320, height: 240), dmabufSlots: 2)
        var aus2: [UInt8] = []
        var failed = false
        e2.onFailure = { _ in failed = true }
        e2.onAccessUnit = { aus2.append($0.bytes[$0.bytes.count - 2]) }
        cam2.onFrame = { f in if e2.submit(f) && e2.importsDMABUF { cam2.holdCurrentBuffer() } }
        try cam2.start()
        s2.inject(.qbuf, errno: EFAULT, path: Self.enc)
        s2.deliverFrame(Self.cam, fill: 0x61)
        XCTAssertTrue(try spin(loop) { aus2.count == 1 })
        XCTAssertEqual(aus2, [0x61])
        XCTAssertFalse(e2.importsDMABUF)
        XCTAssertFalse(failed, "the encoder is kept")
        XCTAssertEqual(cam2.heldCount, 0)
        let t2 = s2.trace(of: Self.enc)
        XCTAssertTrue(t2.contains("REQBUFS OUTPUT_MPLANE 2") && t2.contains("MMAP OUTPUT_MPLANE #0"), "\(t2)")
        e2.shutdown()
        cam2.stop()

        // Padded lines (100 px → 128-byte lines): the camera's layout is not the encoder's, so copy.
        let padded = try V4L2M2MEncoder(
            loop: loop, device: sim(), path: Self.enc, input: .nv12, width: 100, height: 50, bytesPerLine: 100,
            settings: VideoSettings(width: 100, height: 50), dmabufSlots: 2)
        XCTAssertFalse(padded.importsDMABUF)
        padded.shutdown()
    }

    func testM2MRefusalsAndLoss() throws {
        let loop = try EventLoop()
        let s = sim()
        s.inject(.sCtrl, errno: EINVAL)  // the I-period control
        XCTAssertThrowsError(try encoder(loop, s)) { XCTAssertTrue("\($0)".contains("H264_I_PERIOD"), "\($0)") }
        XCTAssertEqual(s.openHandles, 0)
        XCTAssertThrowsError(
            try V4L2M2MEncoder(
                loop: loop, device: s, path: Self.cam, input: .i420, width: 320, height: 240,
                bytesPerLine: 320, settings: VideoSettings())
        ) {
            XCTAssertTrue("\($0)".contains("not a multi-planar memory-to-memory device"), "\($0)")
        }
        var failure: V4L2Error?
        let s2 = sim()
        let e2 = try encoder(loop, s2)
        e2.onFailure = { failure = $0 }
        s2.unplug(Self.enc)
        XCTAssertTrue(try spin(loop) { failure != nil })
        XCTAssertEqual(failure?.errno, ENODEV)
        XCTAssertEqual(s2.openHandles, 0)
    }
}
