import OSHAgent
import OSHCore
import OSHPlatform
import XCTest
import OSHSimulation

final class VideoInputTests: XCTestCase {
    override func setUp() { Log.muted = true }
    override func tearDown() { Log.muted = false }

    /// A node that never answers: the first frame stays in flight for the whole test.
    final class StuckTransport: VideoTransport {
        var posts = 0
        var completions: [(TransportOutcome) -> Void] = []
        var firstBody: [UInt8] = []
        func postVideo(datastreamID: String, body: ByteBuffer, completion: @escaping (TransportOutcome) -> Void) {
            posts += 1
            if firstBody.isEmpty { firstBody = body.array }
            completions.append(completion)
        }
    }

    private func now() -> Double { Double(Clock.monotonicNanoseconds()) / 1e9 }

    private func spin(_ loop: EventLoop, timeout: Double = 3, until cond: () -> Bool) throws -> Bool {
        try loop.run(for: timeout, until: cond)
    }

    func testSlowNodeDropsAndCountsFramesWhileScalarsKeepTheirPace() throws {
        let loop = try EventLoop()
        let transport = StuckTransport()
        let publisher = VideoPublisher(transport: transport)
        publisher.datastreamID = "cam"
        publisher.clockOffset = 1_700_000_000
        var aus: [[UInt8]] = []
        let input = try VideoInput(loop: loop, settings: VideoSettings(width: 160, height: 120, fps: 25, threads: 1)) { t, au, _ in
            if aus.count < 3 { aus.append(Array(au)) }
            publisher.offer(monotonicTime: t, frame: au)
        }
        // A 50 Hz scalar output on the same loop.
        var ticks: [Double] = []
        let scalar = try loop.addTimer(firstAt: EventLoop.deadline(after: 0.02), interval: 20_000_000) { [unowned self] _ in
            ticks.append(self.now())
        }
        try input.start()
        XCTAssertEqual(input.encoderKind, .x264, "no hardware encoder on this machine")
        XCTAssertTrue(input.encoderReason.contains("libx264"), input.encoderReason)
        let started = now()
        XCTAssertTrue(try spin(loop) { publisher.counters.offered >= 10 })
        let elapsed = now() - started
        input.stop()
        loop.cancel(scalar)

        XCTAssertEqual(transport.posts, 1, "one frame in flight, nothing queued behind it")
        XCTAssertTrue(publisher.inFlight)
        XCTAssertEqual(publisher.counters.droppedBusy, publisher.counters.offered - 1)
        XCTAssertEqual(input.counters.keyFramesWithoutHeaders, 0)
        for au in aus { XCTAssertEqual(AnnexB.units(in: au).map(\.type).prefix(3), [7, 8, 5]) }
        XCTAssertEqual(Array(transport.firstBody[12...]), aus[0], "the posted body carries the access unit after the 12-byte header")
        // Scalars: about 50 per second, and never a gap a video frame could explain.
        let expected = elapsed / 0.02
        XCTAssertGreaterThan(Double(ticks.count), expected * 0.7, "\(ticks.count) ticks in \(elapsed) s")
        let gaps = zip(ticks.dropFirst(), ticks).map { $0 - $1 }
        XCTAssertLessThan(gaps.max() ?? 0, 0.1, "longest scalar gap \(gaps.max() ?? 0) s")

        // The node answers at last: the next frame goes out.
        transport.completions.removeFirst()(TransportOutcome(status: 201))
        XCTAssertEqual(publisher.counters.sent, 1)
        XCTAssertFalse(publisher.inFlight)
    }

    private func simulated(cameraFormats: [FourCC], encoder: Bool) -> SimulatedV4L2 {
        let s = SimulatedV4L2()
        s.add("/dev/video0", .camera(card: "USB Camera", formats: cameraFormats, sizes: [V4L2FrameSize(width: 320, height: 240)]))
        if encoder { s.add("/dev/video11", .encoder) }
        return s
    }

    /// A camera sensor through libcamera's V4L2 layer (vimc gives RGB24 only): converted,
    /// encoded, said to be libcamera's; its loss goes to the owner, which starts the agent again.
    func testALibcameraCameraStreamsAndItsLossAsksForANewStart() throws {
        let loop = try EventLoop()
        let s = simulated(cameraFormats: [FourCC("RGB3")], encoder: false)
        s.cameraDrivers["/dev/video0"] = "libcamera"
        var aus: [[UInt8]] = []
        let input = try VideoInput(
            loop: loop, settings: VideoSettings(device: "/dev/video0", width: 320, height: 240, fps: 25), device: s
        ) { _, au, _ in aus.append(Array(au)) }
        var restarts = 0
        // As the daemon does: the restart stops everything (the camera must be abandoned by then).
        input.onLibcameraCameraLost = { [unowned input] in
            restarts += 1
            input.stop()
        }
        try input.start()
        XCTAssertTrue(s.deliverFrame("/dev/video0", fill: 0x50))
        XCTAssertTrue(try spin(loop) { aus.count == 1 })
        XCTAssertEqual(input.conversions.converted, 1)
        XCTAssertTrue(
            input.sourceDescription.hasPrefix("camera /dev/video0 (USB Camera) through libcamera (its V4L2 layer), RGB3 320x240"),
            input.sourceDescription)
        s.unplug("/dev/video0")
        XCTAssertTrue(try spin(loop) { restarts == 1 })
        s.plug("/dev/video0")
        _ = try spin(loop, timeout: 0.2) { false }
        XCTAssertEqual(s.openHandles, 1, "abandoned (no STREAMOFF, no close), and not reopened in this process")
        XCTAssertFalse(s.trace(of: "/dev/video0").contains("STREAMOFF CAPTURE"))
    }

    /// After such a start the agent waits for the sensor, and opens it once two looks agree.
    func testAfterANewStartTheSensorIsWaitedForThenOpened() throws {
        let loop = try EventLoop()
        let s = simulated(cameraFormats: [FourCC("RGB3")], encoder: false)
        s.cameraDrivers["/dev/video0"] = "libcamera"
        var aus = 0
        let input = try VideoInput(
            loop: loop, settings: VideoSettings(device: "auto", width: 320, height: 240, fps: 25), device: s
        ) { _, _, _ in aus += 1 }
        var looks = 0
        var there: String?
        input.sensorNode = {
            looks += 1
            return there
        }
        input.sensorPollSeconds = 0.02
        try input.start()
        XCTAssertTrue(try spin(loop) { looks >= 3 })
        XCTAssertEqual(s.openHandles, 0, "nothing opened while the sensor is away")
        there = "/dev/video0"
        let before = looks
        XCTAssertTrue(try spin(loop) { s.openHandles == 1 })
        XCTAssertEqual(looks, before + 2, "opened at the second look that found it")
        XCTAssertTrue(s.deliverFrame("/dev/video0"))
        XCTAssertTrue(try spin(loop) { aus == 1 })
        input.stop()
    }

    /// libcamera lists its cameras at its first open; a sensor whose nodes udev had not yet
    /// opened to us is missing from that list, and the node then answers as the raw driver.
    /// Only a new start gives libcamera another look.
    func testASensorLibcameraDidNotTakeAsksForANewStart() throws {
        let loop = try EventLoop()
        let s = simulated(cameraFormats: [FourCC("BA81")], encoder: false)
        let input = try VideoInput(
            loop: loop, settings: VideoSettings(device: "auto", width: 320, height: 240, fps: 25), device: s
        ) { _, _, _ in }
        input.sensorNode = { "/dev/video0" }
        input.sensorPollSeconds = 0.01
        input.libcameraRetrySeconds = 0.05
        var restarts = 0
        input.onLibcameraCameraLost = { restarts += 1 }
        try input.start()
        XCTAssertTrue(try spin(loop) { restarts == 1 })
        XCTAssertTrue(input.counters.lastError?.contains("only raw Bayer (BA81)") == true, input.counters.lastError ?? "")
        input.stop()
    }

    func testCameraWithHardwareEncoderUsesM2M() throws {
        let loop = try EventLoop()
        let s = simulated(cameraFormats: [.yuyv], encoder: true)
        var aus: [[UInt8]] = []
        let input = try VideoInput(
            loop: loop, settings: VideoSettings(device: "USB Camera", width: 320, height: 240, fps: 25),
            device: s
        ) { _, au, _ in aus.append(Array(au)) }
        try input.start()
        XCTAssertTrue(s.deliverFrame("/dev/video0", fill: 0x33))
        XCTAssertTrue(try spin(loop) { aus.count == 1 })
        XCTAssertEqual(input.encoderKind, .m2m("/dev/video11"))
        XCTAssertTrue(input.encoderReason.contains("bcm2835-codec-encode"), input.encoderReason)
        XCTAssertTrue(input.encoderReason.contains("DMABUF, no copy"), input.encoderReason)
        XCTAssertEqual(AnnexB.units(in: aus[0]).map(\.type), [7, 8, 5])
        XCTAssertEqual(aus[0][aus[0].count - 2], 0x33, "the camera's picture reached the encoder")
        XCTAssertEqual(input.buffersLentToEncoder, 0, "the camera buffer came back after encoding")
        input.stop()
        XCTAssertEqual(s.openHandles, 0)
        XCTAssertEqual(s.openDMABUFs, 0)

        // A camera that cannot export: one copy into the encoder's buffer.
        let c = simulated(cameraFormats: [.yuyv], encoder: true)
        c.exportDisabled = ["/dev/video0"]
        aus.removeAll()
        let copying = try VideoInput(
            loop: loop, settings: VideoSettings(device: "/dev/video0", width: 320, height: 240, fps: 25),
            device: c
        ) { _, au, _ in aus.append(Array(au)) }
        try copying.start()
        c.deliverFrame("/dev/video0", fill: 0x44)
        XCTAssertTrue(try spin(loop) { aus.count == 1 })
        XCTAssertTrue(copying.encoderReason.contains("one copy"), copying.encoderReason)
        XCTAssertEqual(aus[0][aus[0].count - 2], 0x44)
        copying.stop()
    }

    func testCameraWithoutHardwareEncoderUsesX264AndH264CameraNeedsNone() throws {
        let loop = try EventLoop()
        let s = simulated(cameraFormats: [.mjpeg, .yuyv], encoder: false)
        var aus: [[UInt8]] = []
        let input = try VideoInput(
            loop: loop, settings: VideoSettings(device: "/dev/video0", width: 320, height: 240, fps: 25),
            device: s
        ) { _, au, _ in aus.append(Array(au)) }
        try input.start()
        s.deliverFrame("/dev/video0")
        XCTAssertTrue(try spin(loop) { aus.count == 1 })
        XCTAssertEqual(input.encoderKind, .x264, "YUYV converted once, then libx264")
        XCTAssertEqual(AnnexB.units(in: aus[0]).map(\.type).prefix(3), [7, 8, 5])
        input.stop()

        let h = simulated(cameraFormats: [.yuyv, .h264], encoder: true)
        aus.removeAll()
        let direct = try VideoInput(
            loop: loop, settings: VideoSettings(device: "/dev/video0", width: 320, height: 240, fps: 25),
            device: h
        ) { _, au, _ in aus.append(Array(au)) }
        try direct.start()
        XCTAssertEqual(direct.pictureSize?.width, 320)
        h.deliverFrame("/dev/video0", fill: 0x21)
        XCTAssertTrue(try spin(loop) { aus.count == 1 })
        XCTAssertEqual(direct.encoderKind, .cameraH264)
        XCTAssertEqual(aus[0], SimulatedV4L2.fakeAccessUnit(key: true, frame: 0, first: 0x21), "passed through untouched")
        direct.stop()
    }

    func testVicodecIsPassedOverWithItsReasonAndAnotherH264EncoderIsUsed() throws {
        let loop = try EventLoop()
        let s = simulated(cameraFormats: [.yuyv], encoder: false)
        s.add("/dev/video1", .vicodecEncoder)
        s.add("/dev/video2", .vicodecDecoder)
        var aus = 0
        let input = try VideoInput(
            loop: loop, settings: VideoSettings(device: "/dev/video0", width: 320, height: 240, fps: 25),
            device: s
        ) { _, _, _ in aus += 1 }
        try input.start()
        s.deliverFrame("/dev/video0")
        XCTAssertTrue(try spin(loop) { aus == 1 })
        XCTAssertEqual(input.encoderKind, .x264)
        XCTAssertEqual(
            input.encoderReason,
            "/dev/video1 (vicodec) encodes FWHT, not H.264; "
                + "/dev/video2 (vicodec) is a decoder (FWHT), not an encoder; using libx264")
        input.stop()

        // An H.264 M2M encoder with another card name is used like the Pi's.
        s.add(
            "/dev/video7",
            .m2m(
                card: "Qualcomm Venus video encoder", driver: "qcom-venus", capture: [.h264],
                output: [.nv12, .yuyv], multiplanar: true))
        aus = 0
        let hw = try VideoInput(
            loop: loop, settings: VideoSettings(device: "/dev/video0", width: 320, height: 240, fps: 25),
            device: s
        ) { _, _, _ in aus += 1 }
        try hw.start()
        s.deliverFrame("/dev/video0")
        XCTAssertTrue(try spin(loop) { aus == 1 })
        XCTAssertEqual(hw.encoderKind, .m2m("/dev/video7"))
        XCTAssertTrue(
            hw.encoderReason.hasPrefix("hardware H.264 encoder Qualcomm Venus video encoder found at /dev/video7"), hw.encoderReason)
        hw.stop()
        XCTAssertEqual(s.openHandles, 0)
    }

    func testHardwareEncoderLostFallsBackToX264() throws {
        let loop = try EventLoop()
        let s = simulated(cameraFormats: [.yuyv], encoder: true)
        var aus = 0
        let input = try VideoInput(
            loop: loop, settings: VideoSettings(device: "/dev/video0", width: 320, height: 240, fps: 25),
            device: s
        ) { _, _, _ in aus += 1 }
        try input.start()
        s.deliverFrame("/dev/video0")
        XCTAssertTrue(try spin(loop) { aus == 1 })
        s.unplug("/dev/video11")
        XCTAssertTrue(try spin(loop) { input.counters.lastError != nil })
        let t = now()
        _ = try spin(loop, timeout: 1) { now() > t + 0.05 }  // past the camera's 25 fps frame interval
        s.deliverFrame("/dev/video0")
        XCTAssertTrue(try spin(loop) { aus == 2 })
        XCTAssertEqual(input.encoderKind, .x264)
        XCTAssertTrue(input.encoderReason.contains("failed earlier"), input.encoderReason)
        input.stop()
    }

    /// The virtual Pi's camera unplug through the pipeline (vivid and vicodec there): the loss,
    /// the first failed reopen and the return are one line each — not a line per retry — and the
    /// encoder is neither chosen nor logged again when frames resume.
    func testACameraUnplugIsLoggedOnceNotAtEveryRetry() throws {
        let loop = try EventLoop()
        let s = simulated(cameraFormats: [.yuyv], encoder: false)
        s.add("/dev/video1", .vicodecEncoder)
        var aus = 0
        let input = try VideoInput(
            loop: loop, settings: VideoSettings(device: "/dev/video0", width: 320, height: 240, fps: 5),
            device: s
        ) { _, _, _ in aus += 1 }
        input.cameraBackoff = Backoff(initial: 0.01, maximum: 0.04)
        func count(_ line: String) -> Int { s.trace(of: "/dev/video0").filter { $0 == line }.count }
        let capture = LogCapture()
        defer { capture.stop() }
        try input.start()
        s.deliverFrame("/dev/video0")
        XCTAssertTrue(try spin(loop) { aus == 1 })
        s.unplug("/dev/video0")
        XCTAssertTrue(try spin(loop) { count("OPEN → ENOENT") >= 6 }, "several retries while it is gone")
        s.plug("/dev/video0")
        XCTAssertTrue(try spin(loop) { count("STREAMON CAPTURE") == 2 })
        let t = now()
        _ = try spin(loop, timeout: 1) { now() > t + 0.25 }  // past the 5 fps frame interval
        s.deliverFrame("/dev/video0")
        XCTAssertTrue(try spin(loop) { aus == 2 })
        input.stop()
        capture.stop()

        let lines = capture.lines
        XCTAssertEqual(lines.count, 5, "\(lines)")
        guard lines.count == 5 else { return }
        XCTAssertEqual(lines[0], "camera /dev/video0: YUYV 320x240, 4 buffers, 5.0 fps (driver 5.0)")
        XCTAssertTrue(
            lines[1].hasPrefix("video: camera /dev/video0 (USB Camera) through V4L2, YUYV 320x240 at 5 fps; encoder libx264 — "), lines[1])
        XCTAssertEqual(lines[2], "camera /dev/video0 lost (VIDIOC_DQBUF on /dev/video0: No such device); frames pause, retrying in 0.01 s")
        XCTAssertTrue(lines[3].hasPrefix("cannot open camera /dev/video0: open /dev/video0: "), lines[3])
        XCTAssertFalse(lines[3].contains("retrying"), lines[3])
        XCTAssertEqual(lines[4], "camera /dev/video0: back, YUYV 320x240, 4 buffers, 5.0 fps (driver 5.0); frames resume")
    }

    func testRefusesBadSettingsAndMissingHardwareWhenDemanded() throws {
        let loop = try EventLoop()
        XCTAssertThrowsError(try VideoInput(loop: loop, settings: VideoSettings(width: 641, fps: 60)) { _, _, _ in }) {
            XCTAssertTrue("\($0)".contains("fps 60.0"), "\($0)")
        }
        let input = try VideoInput(loop: loop, settings: VideoSettings(encoder: .hardware), device: SimulatedV4L2()) { _, _, _ in }
        XCTAssertThrowsError(try input.start()) { XCTAssertTrue("\($0)".contains("set encoder = auto"), "\($0)") }
        XCTAssertFalse(input.isRunning)
        XCTAssertEqual(VideoInput.listDevices(SimulatedV4L2()), [])
    }
}
