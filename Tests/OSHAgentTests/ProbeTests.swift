import Foundation
import OSHAgent
import OSHCore
import OSHPlatform
import XCTest
import OSHSimulation

/// `osh-edge probe` on a simulated bus and V4L2, and the real binary on this machine.
final class ProbeTests: XCTestCase {
    override func setUp() { Log.muted = true }
    override func tearDown() { Log.muted = false }

    /// BMP280 at 0x76, MPU-9250 at 0x68 (AK8963 behind its bypass), a chip at 0x77 answering with
    /// an ID nobody has, and a chip at 0x5D that NACKs.
    private func board() throws -> (SimulatedI2CBus, SimulatedMPU) {
        let bus = SimulatedI2CBus(number: 1)
        _ = try SimulatedBarometerBoard.attach(to: bus, chip: "BMP280", address: 0x76) { (1013.25, 21.5) }
        let imu = try SimulatedIMUBoard.attach(to: bus, chip: "MPU9250", address: 0x68, motion: SimulatedMotion(), clock: { 1 })
        bus.attach(RegisterMapDevice(registers: [0xD0: 0x55, 0x00: 0x55]), at: 0x77)
        bus.attach(RegisterMapDevice(registers: [0x0F: 0xB1]), at: 0x5D)
        bus.inject(.nack, at: 0x5D)
        guard let mpu = imu.imu as? SimulatedMPU else { throw XCTSkip("not an MPU model") }
        return (bus, mpu)
    }

    private func sources(
        _ bus: SimulatedI2CBus, video: SimulatedV4L2 = SimulatedV4L2(),
        audio: [AudioDeviceInfo] = []
    ) -> ProbeSources {
        ProbeSources(
            adapters: { [bus.number] },
            openBus: { n in
                guard n == bus.number else {
                    throw I2CError(.adapterMissing, bus: n, address: nil, errno: ENOENT, operation: "opening /dev/i2c-\(n)")
                }
                return bus
            }, audioDevices: { audio }, video: video)
    }

    static let server = "[server.main]\nurl = \"http://127.0.0.1:8181/sensorhub/api\"\n\n"

    func testFindsChipsByIDAndReportsTheStranger() throws {
        let (bus, mpu) = try board()
        let pinBefore = mpu.registers[Int(MPUDriver.Reg.intPinCfg)]
        let r = Probe.scan(bus, dump: false)
        XCTAssertEqual(r.chips.map(\.name), ["AK8963", "MPU9250", "BMP280"])
        XCTAssertEqual(r.chips.map(\.address), [0x0C, 0x68, 0x76])
        XCTAssertEqual(r.chips.map(\.idValue), [0x48, 0x71, 0x58])
        XCTAssertTrue(r.chips.allSatisfy(\.identifiedByID))
        XCTAssertEqual(r.unidentified.map(\.address), [0x77], "a chip with a wrong ID is reported, not taken for a BMP280")
        XCTAssertTrue(r.unidentified[0].reads.joined().contains("0x55"), "\(r.unidentified)")
        XCTAssertFalse(r.chips.contains { $0.address == 0x5D } || r.unidentified.contains { $0.address == 0x5D }, "NACK = absent")
        XCTAssertTrue(r.faults.isEmpty, "\(r.faults)")
        XCTAssertEqual(mpu.registers[Int(MPUDriver.Reg.intPinCfg)], pinBefore, "the bypass bit is put back")
        XCTAssertTrue(r.barometerDumps.isEmpty)
    }

    func testPCA9685IsByAddressOnlyAndBusFaultsAreSaid() throws {
        let bus = SimulatedI2CBus(number: 3)
        bus.attach(SimulatedPCA9685(), at: 0x40)
        bus.attach(RegisterMapDevice(registers: [0xD0: 0x58]), at: 0x77)
        bus.inject(.ioError, at: 0x77)
        let r = Probe.scan(bus, dump: false)
        XCTAssertEqual(r.chips.map(\.name), ["PCA9685"])
        XCTAssertFalse(r.chips[0].identifiedByID)
        XCTAssertTrue(r.chips[0].note.contains("address only"), r.chips[0].note)
        XCTAssertEqual(r.faults.count, 1)
        XCTAssertTrue(r.faults[0].contains("0x77"), r.faults[0])
        let (config, _) = Probe.suggestConfig(buses: [r], audio: [], video: [])
        XCTAssertFalse(config.contains("[i2c]"), "a servo driver alone is no sensor config")
    }

    func testReportAndConfigSectionsParse() throws {
        let (bus, _) = try board()
        let video = SimulatedV4L2()
        video.add(
            "/dev/video0",
            .camera(
                card: "HD Webcam", formats: [.mjpeg, .yuyv],
                sizes: [
                    V4L2FrameSize(width: 320, height: 240), V4L2FrameSize(width: 640, height: 480),
                    V4L2FrameSize(width: 1280, height: 720),
                ]))
        video.add("/dev/video11", .encoder)
        let audio = [
            AudioDeviceInfo(name: "default", description: "Default ALSA device"),
            AudioDeviceInfo(name: "plughw:CARD=Device,DEV=0", description: "USB Audio Device"),
        ]
        let report = Probe.run(bus: nil, dump: false, sources: sources(bus, video: video, audio: audio))
        XCTAssertNil(report.i2cHint)
        XCTAssertEqual(report.buses.count, 1)
        XCTAssertEqual(report.video.map(\.role), [.camera, .h264Encoder])

        let text = Self.server + report.configSections
        let s = try AgentSettings.parse(bytes: Array(text.utf8), path: "probe.conf", chips: ChipTable.known)
        XCTAssertEqual(s.devices.i2c.bus, 1)
        XCTAssertEqual(s.devices.barometer.chip, "BMP280")
        XCTAssertEqual(s.devices.barometer.address, 0x76)
        XCTAssertEqual(s.devices.imu.chip, "MPU9250")
        XCTAssertEqual(s.devices.imu.address, 0x68)
        XCTAssertEqual(s.devices.imu.magnetometer, "AK8963")
        XCTAssertEqual(s.devices.audio.device, "plughw:CARD=Device,DEV=0")
        XCTAssertEqual(s.devices.camera.device, "/dev/video0")
        XCTAssertEqual(s.devices.camera.width, 640)
        XCTAssertEqual(s.devices.camera.encoder, .hardware)
        for o in [
            "barometer", "temperature", "quat_orientation_data", "euler_orientation_data", "magnetometer", "audio_level", "camera0_H264",
        ] {
            XCTAssertEqual(s.outputs[o]?.enabled, true, o)
        }
        XCTAssertEqual(s.outputs["humidity"]?.enabled, false, "a BMP280 measures no humidity")

        let table = report.table
        if ProcessInfo.processInfo.environment["PROBE_PRINT"] != nil { print(table); print(report.json) }
        for needle in [
            "/dev/i2c-1", "0x76  BMP280", "0x68  MPU9250", "0x0C  AK8963", "0x77  unknown chip", "plughw:CARD=Device,DEV=0",
            "/dev/video0  camera", "MJPG", "640x480", "/dev/video11  h264-encoder", "[barometer]", "calibrate mag",
        ] {
            XCTAssertTrue(table.contains(needle), "missing \(needle) in\n\(table)")
        }
        let obj = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any])
        let i2c = try XCTUnwrap(obj["i2c"] as? [[String: Any]])
        XCTAssertEqual((i2c[0]["chips"] as? [[String: Any]])?.compactMap { $0["name"] as? String }, ["AK8963", "MPU9250", "BMP280"])
        XCTAssertEqual(obj["config"] as? String, report.configSections)
        XCTAssertEqual((obj["video"] as? [[String: Any]])?.count, 2)
    }

    func testVicodecIsReportedAsAnM2MCodecNotUsableAndTheCameraGetsX264() throws {
        let (bus, _) = try board()
        let video = SimulatedV4L2()
        video.add("/dev/video0", .camera(card: "HD Webcam", formats: [.yuyv], sizes: [V4L2FrameSize(width: 640, height: 480)]))
        video.add("/dev/video1", .vicodecEncoder)
        let report = Probe.run(bus: nil, dump: false, sources: sources(bus, video: video))
        XCTAssertEqual(report.video.map(\.role), [.camera, .m2mCodec])
        XCTAssertTrue(
            report.table.contains("/dev/video1  m2m-codec  vicodec (vicodec)\n    not usable: encodes FWHT, not H.264"), report.table)
        XCTAssertTrue(report.configSections.contains("encoder = \"x264\""), report.configSections)
        XCTAssertEqual(
            report.configNotes.filter { $0.contains("no usable H.264 encoder") },
            ["no usable H.264 encoder (/dev/video1 (vicodec) encodes FWHT, not H.264); the camera uses libx264"])
        let obj = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any])
        let v = try XCTUnwrap(obj["video"] as? [[String: Any]])
        XCTAssertEqual(v[1]["role"] as? String, "m2m-codec")
        XCTAssertEqual(v[1]["note"] as? String, "encodes FWHT, not H.264")
    }

    /// Under each camera, what the agent would take and which encoder: a webcam's MJPEG at the
    /// size YUYV lacks, a Pi 5's libx264 said as such, and a Camera Module's raw sensor node
    /// (unicam) refused with what it needs.
    func testEachCameraSaysWhatTheAgentWouldTakeAndWhichEncoder() throws {
        let (bus, _) = try board()
        let video = SimulatedV4L2()
        video.add(
            "/dev/video0",
            .camera(card: "HD Webcam", formats: [.yuyv, .mjpeg], sizes: [V4L2FrameSize(width: 640, height: 480)]))
        video.limitSizes("/dev/video0", format: .yuyv, to: [V4L2FrameSize(width: 320, height: 240)])
        video.add(
            "/dev/video1",
            .camera(card: "unicam", formats: [FourCC("pRAA"), FourCC("RG10")], sizes: [V4L2FrameSize(width: 3280, height: 2464)]))
        let report = Probe.run(bus: nil, dump: false, sources: sources(bus, video: video))
        XCTAssertTrue(
            report.table.contains("    osh-edge takes: MJPG 640x480 (decoded by libv4lconvert), encoder libx264 — "), report.table)
        XCTAssertTrue(
            report.table.contains(
                "    osh-edge takes: nothing: the camera offers only raw Bayer (pRAA, RG10): a camera sensor such as a Raspberry Pi Camera Module"
            ),
            report.table)
        let webcam = try XCTUnwrap(report.video.first)
        XCTAssertEqual(
            Probe.cameraPlan(webcam, encoders: report.video, boardModel: "Raspberry Pi 5 Model B Rev 1.0"),
            "MJPG 640x480 (decoded by libv4lconvert), encoder libx264 — no H.264 encoder on this board (Raspberry Pi 5 Model B Rev 1.0); using libx264"
        )
    }

    /// A camera sensor behind a media controller (vimc here; a Camera Module on a Pi): listed with
    /// its media device and nodes, the way to it said, and the config names it by the word.
    func testACameraSensorIsListedWithTheWayToItThroughLibcamera() throws {
        let (bus, _) = try board()
        let video = SimulatedV4L2()
        for n in 0..<3 {
            video.add(
                "/dev/video\(n)", .camera(card: "vimc", formats: [FourCC("BA81")], sizes: [V4L2FrameSize(width: 640, height: 480)]))
        }
        video.add("/dev/video3", .vicodecEncoder)
        let vimc = MediaDeviceInfo(
            path: "/dev/media0", driver: "vimc", model: "VIMC MDEV", sensors: ["Sensor A", "Sensor B"],
            videoNodes: ["/dev/video0", "/dev/video1", "/dev/video2"])
        var src = sources(bus, video: video)
        src.media = { [vimc] }
        src.libcameraLayer = { "/usr/libexec/aarch64-linux-gnu/libcamera/v4l2-compat.so" }
        let report = Probe.run(bus: nil, dump: false, sources: src)
        XCTAssertTrue(
            report.table.contains(
                "Camera sensors (libcamera)\n  Sensor A, Sensor B  vimc (VIMC MDEV) at /dev/media0; V4L2 nodes /dev/video0 /dev/video1 /dev/video2\n"
                    + "    reached through libcamera's V4L2 layer (/usr/libexec/aarch64-linux-gnu/libcamera/v4l2-compat.so): "
                    + "[camera] device = \"libcamera\" (or \"auto\")"), report.table)
        XCTAssertTrue(
            report.configSections.contains("[camera]\ndevice = \"libcamera\"\nwidth = 640\nheight = 480\n"), report.configSections)
        let obj = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any])
        let sensors = try XCTUnwrap(obj["cameraSensors"] as? [[String: Any]])
        XCTAssertEqual(sensors.first?["nodes"] as? [String], ["/dev/video0", "/dev/video1", "/dev/video2"])

        // Under the layer, a camera another program streams is not listed by libcamera (vimc's
        // links are busy): said, with what to do.
        var loaded = Probe.run(bus: nil, dump: false, sources: src)
        loaded.libcameraLayerLoaded = true
        XCTAssertTrue(loaded.table.contains("    libcamera did not list it here: another program is using the camera"), loaded.table)

        src.libcameraLayer = { nil }
        XCTAssertTrue(
            Probe.run(bus: nil, dump: false, sources: src).table.contains(
                "    needs libcamera's V4L2 layer, not installed: apt install libcamera-v4l2 libcamera-ipa (Debian)"))
    }

    func testDumpGivesTheBytesDecodeTakes() throws {
        let (bus, _) = try board()
        let report = Probe.run(bus: 1, dump: true, sources: sources(bus))
        let dumps = report.buses[0].barometerDumps
        XCTAssertEqual(dumps.map(\.identity.name), ["BMP280"])
        let d = try XCTUnwrap(dumps.first)
        XCTAssertNil(d.error)
        XCTAssertEqual(d.calibrationHex.count, 48)
        XCTAssertEqual(d.rawHex.count, 12)
        let decoded = try XCTUnwrap(d.decoded)
        XCTAssertEqual(decoded.pressureHPa, 1013.25, accuracy: 0.05)
        XCTAssertEqual(decoded.celsius, 21.5, accuracy: 0.05)
        XCTAssertEqual(try BarometerDecode.decode(chip: "BMP280", calibrationHex: d.calibrationHex, rawHex: d.rawHex), decoded)
        if ProcessInfo.processInfo.environment["PROBE_PRINT"] != nil { print(report.table) }
        XCTAssertTrue(report.table.contains("osh-edge decode BMP280 \(d.calibrationHex) \(d.rawHex)"), report.table)
        let obj = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any])
        let dump = ((obj["i2c"] as? [[String: Any]])?.first?["dump"] as? [[String: Any]])?.first
        XCTAssertEqual((dump?["decoded"] as? [String: Any])?["chip"] as? String, "BMP280")
    }

    /// Beside the running agent (it announces its bus) probe only reads ID registers: no SHT4x
    /// command (its answer would go to whoever reads next: the agent, which then published the
    /// serial number as −34.59 °C on the virtual Pi), no bypass switch, no barometer start.
    func testBesideTheRunningAgentProbeSendsNoCommandAndSaysWhatItLeftOut() throws {
        let (bus, mpu) = try board()
        _ = try SimulatedHygrometerBoard.attach(to: bus, chip: "SHT4x") { (21.5, 48) }
        let alone = Probe.run(bus: 1, sources: sources(bus))
        XCTAssertEqual(alone.buses[0].chips.map(\.name), ["AK8963", "SHT4x", "MPU9250", "BMP280"])
        XCTAssertFalse(alone.buses[0].agentUsesIt)
        XCTAssertTrue(alone.configSections.contains("[hygrometer]"), alone.configSections)
        XCTAssertTrue(alone.table.contains("0x44  SHT4x     hygrometer    by a command's answer"), alone.table)
        XCTAssertTrue(alone.json.contains("\"address\":\"0x44\",\"identifiedBy\":\"command\""), alone.json)

        let pinBefore = mpu.registers[Int(MPUDriver.Reg.intPinCfg)]
        let bypassWrites = {
            bus.trace.filter { $0.address == 0x68 && $0.written.first == MPUDriver.Reg.intPinCfg && $0.written.count == 2 }.count
        }
        let writesBefore = bypassWrites()
        let sht4xBefore = bus.transactionCount[0x44] ?? 0
        var s = sources(bus)
        s.agentUsesBus = { $0.number == 1 }
        let beside = Probe.run(bus: 1, dump: true, sources: s)
        let b = beside.buses[0]
        XCTAssertEqual(b.chips.map(\.name), ["MPU9250", "BMP280"], "what ID registers show")
        XCTAssertEqual(bus.transactionCount[0x44] ?? 0, sht4xBefore, "no command reached the SHT4x")
        XCTAssertEqual(bypassWrites(), writesBefore, "the bypass switch was not touched")
        XCTAssertEqual(mpu.registers[Int(MPUDriver.Reg.intPinCfg)], pinBefore)
        XCTAssertTrue(b.barometerDumps.isEmpty, "no barometer was started")
        XCTAssertTrue(b.agentUsesIt)
        XCTAssertEqual(b.notDone.count, 2, "\(b.notDone)")
        let table = beside.table
        if ProcessInfo.processInfo.environment["PROBE_PRINT"] != nil { print(table) }
        XCTAssertTrue(table.contains("the running agent reads chips on this bus, so only ID registers were read"), table)
        XCTAssertTrue(table.contains("stop the agent (sudo systemctl stop osh-edge) and probe again"), table)
        XCTAssertTrue(table.contains("--dump was not done"), table)
        XCTAssertTrue(
            beside.configNotes.contains { $0.contains("written while the running agent reads /dev/i2c-1") }, "\(beside.configNotes)")
        let obj = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(beside.json.utf8)) as? [String: Any])
        let bus0 = try XCTUnwrap((obj["i2c"] as? [[String: Any]])?.first)
        XCTAssertEqual(bus0["agentUsesIt"] as? Bool, true)
        XCTAssertEqual((bus0["notDone"] as? [String])?.count, 2)
    }

    func testMissingAdapterAndNoAdapterSayHowToEnable() throws {
        let (bus, _) = try board()
        let missing = Probe.run(bus: 4, sources: sources(bus))
        XCTAssertTrue(missing.buses[0].error?.contains("dtparam=i2c_arm=on") == true, "\(missing.buses[0].error ?? "")")
        let none = Probe.run(sources: ProbeSources(adapters: { [] }, openBus: { _ in bus }, audioDevices: { [] }, video: SimulatedV4L2()))
        XCTAssertTrue(none.buses.isEmpty)
        XCTAssertTrue(none.i2cHint?.contains("dtparam=i2c_arm=on") == true)
        XCTAssertTrue(none.configSections.contains("nothing found"))
        _ = try AgentSettings.parse(bytes: Array((Self.server + none.configSections).utf8), path: "empty.conf", chips: ChipTable.known)
    }

    func testSerialPortsAndGPSDAreReported() throws {
        // A /dev of our own: serial0 → ttyAMA0 (the Pi's UART alias), a USB receiver's ACM port and
        // its by-id link, and ttyS0..3 that lead nowhere (every PC has them: not listed).
        let dev = NSTemporaryDirectory() + "osh-probe-dev-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dev) }
        let fm = FileManager.default
        try fm.createDirectory(atPath: dev + "/serial/by-id", withIntermediateDirectories: true)
        for n in ["ttyAMA0", "ttyACM0", "ttyS0", "ttyS1", "ttyS2", "ttyS3"] { fm.createFile(atPath: dev + "/" + n, contents: nil) }
        try fm.createSymbolicLink(atPath: dev + "/serial0", withDestinationPath: "ttyAMA0")
        try fm.createSymbolicLink(atPath: dev + "/serial/by-id/usb-u-blox_GNSS-if00", withDestinationPath: "../../ttyACM0")
        let ports = SerialPortList.ports(dev: dev)
        XCTAssertEqual(
            ports.map(\.path), [dev + "/serial0", dev + "/ttyACM0", dev + "/ttyAMA0", dev + "/serial/by-id/usb-u-blox_GNSS-if00"])
        XCTAssertEqual(ports[0].device, dev + "/ttyAMA0")
        // gpsd: something listening on a port of ours answers; nothing on another does not.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, len) } }
        XCTAssertEqual(listen(listener, 1), 0)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &len) } }
        let port = UInt16(bigEndian: addr.sin_port)
        XCTAssertTrue(SerialPortList.gpsdAnswers(port: port))
        close(listener)
        XCTAssertFalse(SerialPortList.gpsdAnswers(port: port))
        // In the report, and when there is no port at all, the fix.
        let (bus, _) = try board()
        var src = sources(bus)
        src.serialPorts = { ports }
        src.gpsd = { true }
        let r = Probe.run(sources: src)
        XCTAssertTrue(r.table.contains("Serial ports (GPS)\n  \(dev)/serial0 (→ \(dev)/ttyAMA0)"), r.table)
        XCTAssertTrue(r.table.contains("gpsd: answers on 127.0.0.1:2947"), r.table)
        let obj = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.json.utf8)) as? [String: Any])
        XCTAssertEqual((obj["serialPorts"] as? [[String: Any]])?.count, 4)
        XCTAssertEqual(obj["gpsd"] as? Bool, true)
        src.serialPorts = { [] }
        XCTAssertTrue(Probe.run(sources: src).table.contains("none: on a Raspberry Pi enable the UART (enable_uart=1"))
    }

    // MARK: The binary, on this machine (no I²C adapter here)

    func testCLIOnThisMachine() throws {
        guard LinuxI2CBus.adapters().isEmpty else { throw XCTSkip("this machine has I²C adapters") }
        let table = try runBinary(["probe"])
        XCTAssertEqual(table.status, 0, table.err)
        XCTAssertTrue(table.out.contains("dtparam=i2c_arm=on"), table.out)
        let json = try runBinary(["probe", "--json", "--dump"])
        XCTAssertEqual(json.status, 0, json.err)
        let obj = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
        XCTAssertTrue((obj["i2cHint"] as? String)?.contains("raspi-config") == true)
        let bad = try runBinary(["probe", "--bus", "x"])
        XCTAssertEqual(bad.status, 2)
    }
}

/// Runs the built `osh-edge` beside the test bundle.
func runBinary(_ args: [String]) throws -> (status: Int32, out: String, err: String) { try runOSHEdge(args) }
