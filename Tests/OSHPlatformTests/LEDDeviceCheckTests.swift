import OSHCore
import XCTest
@testable import OSHPlatform
#if canImport(Glibc)
import Glibc
#endif

/// The start-up device check: which paths a configuration needs, and what is said when one is
/// missing or not accessible. A fake /dev directory stands in for the board.
final class LEDDeviceCheckTests: XCTestCase {
    private var dev = ""

    override func setUp() {
        dev = "/tmp/osh-devcheck-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(dev, 0o755)
    }

    override func tearDown() {
        for n in ["serial0", "ttyUSB0", "gpiochip0", "locked"] { unlink(dev + "/" + n) }
        rmdir(dev)
    }

    private func touch(_ name: String, mode: mode_t = 0o660) {
        close(open(dev + "/" + name, O_CREAT | O_WRONLY, mode))
        chmod(dev + "/" + name, mode)
    }

    private func settings(gps: Bool, device: String = "/dev/serial0", gpsd: String = "") -> AgentSettings {
        var s = AgentSettings(server: ServerSettings(name: "main", url: "http://127.0.0.1:8181/sensorhub/api"))
        s.outputs["gps_data"]?.enabled = gps
        s.gps.device = device
        s.gps.gpsd = GPSDAddress(gpsd)
        return s
    }

    func testListNamesOnlyWhatWillBeOpened() {
        XCTAssertEqual(DeviceRequirement.list(settings(gps: false)), [])
        XCTAssertEqual(DeviceRequirement.list(settings(gps: true, gpsd: "127.0.0.1:2947")), [], "gpsd opens no device")
        var sim = settings(gps: true)
        sim.outputs["gps_data"]?.source = .simulated
        XCTAssertEqual(DeviceRequirement.list(sim), [])
        XCTAssertEqual(
            DeviceRequirement.list(settings(gps: true), led: LEDSettings(chip: "pinctrl-rp1")),
            [
                DeviceRequirement(path: "/dev/serial0", kind: .boardSerial, key: "[gps] device", required: false),
                DeviceRequirement(path: "pinctrl-rp1", kind: .gpioChip, key: "[led] chip", required: false),
            ])
        XCTAssertEqual(DeviceRequirement.list(settings(gps: true, device: "/dev/ttyACM0")).first?.kind, .usbSerial)
        XCTAssertEqual(DeviceRequirement.list(settings(gps: true), led: LEDSettings(chip: "")).count, 1)
    }

    func testMissingAndPresentDevices() {
        let reqs = DeviceRequirement.list(settings(gps: true), led: LEDSettings(chip: "gpiochip0"))
        var f = DeviceCheck.run(reqs, devDirectory: dev)
        XCTAssertEqual(f.count, 2)
        // A missing board UART never stops the agent: gps_data waits for it, with the fix.
        XCTAssertFalse(f[0].fatal)
        XCTAssertTrue(
            f[0].message.contains("[gps] device = \"/dev/serial0\": No such file or directory; enable the UART with enable_uart=1"),
            f[0].message)
        XCTAssertTrue(f[0].message.hasSuffix("gps_data waits for it, the other outputs run"), f[0].message)
        // The same fix for `osh-edge nmea /dev/serial0`.
        XCTAssertTrue(DeviceCheck.missingSerialHint("/dev/serial0").hasPrefix("enable the UART with enable_uart=1"))
        XCTAssertTrue(DeviceCheck.missingSerialHint("/dev/ttyACM0").hasPrefix("plug in the receiver"))
        XCTAssertFalse(f[1].fatal, "no LED is a warning")
        XCTAssertTrue(f[1].message.contains("gpiodetect"), f[1].message)
        touch("serial0")
        touch("gpiochip0")
        f = DeviceCheck.run(reqs, devDirectory: dev)
        XCTAssertEqual(f, [])
        // A label: fine when any chip exists, a warning when there is none.
        XCTAssertEqual(
            DeviceCheck.run(DeviceRequirement.list(settings(gps: false), led: LEDSettings(chip: "pinctrl-rp1")), devDirectory: dev), [])
        unlink(dev + "/gpiochip0")
        let label = DeviceCheck.run(DeviceRequirement.list(settings(gps: false), led: LEDSettings(chip: "pinctrl-rp1")), devDirectory: dev)
        XCTAssertTrue(label.first?.message.contains("no GPIO chips") == true, "\(label)")
    }

    func testUSBReceiverIsNotFatal() {
        let f = DeviceCheck.run(DeviceRequirement.list(settings(gps: true, device: "/dev/ttyUSB0")), devDirectory: dev)
        XCTAssertEqual(f.count, 1)
        XCTAssertFalse(f[0].fatal)
        XCTAssertTrue(f[0].message.contains("plug in the receiver"), f[0].message)
    }

    func testPermissionProblemNamesTheGroup() throws {
        guard geteuid() != 0 else { throw XCTSkip("root can open any file; the permission path needs a normal user") }
        touch("serial0", mode: 0o000)
        let f = DeviceCheck.run(DeviceRequirement.list(settings(gps: true)), devDirectory: dev)
        XCTAssertTrue(f.first?.message.contains("group dialout") == true, "\(f)")
    }
}
