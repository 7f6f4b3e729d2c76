import XCTest
@testable import OSHCore
import OSHPlatform

final class DeviceConfigTests: XCTestCase {
    private func parse(_ text: String) throws(ConfigErrors) -> AgentSettings {
        try AgentSettings.parse(
            bytes: Array(("[server.main]\nurl = \"http://127.0.0.1:8181/sensorhub/api\"\n" + text).utf8), path: "t.conf",
            chips: ChipTable.known)
    }

    private func errors(_ text: String) -> [String] {
        do { _ = try parse(text); return [] } catch { return error.errors.map(\.message) }
    }

    func testHardwareSectionsAreRead() throws {
        let s = try parse(
            """
            [i2c]
            bus = 3
            [barometer]
            chip = "bme-280"
            address = "0x77"
            oversampling = "high-resolution"
            [imu]
            chip = "MPU-9250"
            magnetometer = "none"
            accel_range = 8
            gyro_range = 2000
            mounting = "-y,+x,+z"
            fifo = false
            [orientation]
            algorithm = "mahony"
            gain = 0.5
            mag_offset = [1.5, -2, 3]
            [audio]
            device = "hw:1,0"
            window = 0.5
            [camera]
            device = "test-pattern"
            width = 1280
            height = 720
            encoder = "x264"
            [led]
            chip = "gpiochip0"
            line = 17
            active_low = true
            """)
        let d = s.devices
        XCTAssertEqual(d.i2c.bus, 3)
        XCTAssertEqual(d.barometer.chip, "BME280")
        XCTAssertEqual(d.barometer.address, 0x77)
        XCTAssertEqual(d.barometer.oversampling, .highResolution)
        XCTAssertEqual(try parse("[barometer]\nchip = \"auto\"\n").devices.barometer.oversampling, .standard)
        let wrong = errors("[barometer]\noversampling = \"ultra\"\n")
        XCTAssertEqual(wrong.count, 1, "\(wrong)")
        XCTAssertTrue(
            wrong.first?.hasPrefix("oversampling = \"ultra\" in [barometer] is not allowed") == true
                && wrong.first?.hasSuffix("allowed: \"low-power\", \"standard\", \"high-resolution\"") == true, "\(wrong)")
        XCTAssertEqual(d.imu.chip, "MPU9250")
        XCTAssertNil(d.imu.address)
        XCTAssertEqual(d.imu.magnetometer, "none")
        XCTAssertEqual(d.imu.accelRange, .g8)
        XCTAssertEqual(d.imu.gyroRange, .dps2000)
        XCTAssertEqual(d.imu.mounting.axes, ["-y", "+x", "+z"])
        XCTAssertFalse(d.imu.fifo)
        XCTAssertTrue(try parse("[imu]\nchip = \"auto\"\n").devices.imu.fifo, "FIFO bursts unless turned off")
        XCTAssertFalse(errors("[imu]\nfifo = \"yes\"\n").isEmpty, "a boolean")
        XCTAssertEqual(d.fusion.algorithm, .mahony)
        XCTAssertEqual(d.fusion.magOffset, [1.5, -2, 3])
        XCTAssertEqual(d.audio.device, "hw:1,0")
        XCTAssertEqual(d.camera.width, 1280)
        XCTAssertEqual(d.camera.encoder, .software)
        XCTAssertEqual(d.led, LEDSettings(chip: "gpiochip0", line: 17, activeLow: true))
    }

    func testMistakesAreNamedWithWhatIsAllowed() {
        let e = errors(
            """
            [barometer]
            chip = "BMP281"
            address = "118"
            [imu]
            accel_range = 3
            mounting = "+x,+x,+z"
            [orientation]
            mag_matrix = [1, 0, 0]
            """)
        XCTAssertEqual(e.count, 5, "\(e)")
        XCTAssertTrue(e[0].contains("did you mean \"BMP280\""), e[0])
        XCTAssertTrue(e[1].contains("\"0x08\""), e[1])
        XCTAssertTrue(e[2].contains("2, 4, 8 or 16"), e[2])
        XCTAssertTrue(e[3].contains("exactly once"), e[3])
        XCTAssertTrue(e[4].contains("list of 9 numbers"), e[4])
        // The mounting is parsed once, here: a mirrored one is refused with the file's line.
        let mirrored = errors("[imu]\nmounting = \"+x,+y,-z\"\n")
        XCTAssertEqual(mirrored.count, 1, "\(mirrored)")
        XCTAssertTrue(mirrored.first?.contains("mirrors the frame") == true, "\(mirrored)")
    }

    func testTheCameraIsAPathOrAWord() throws {
        XCTAssertEqual(try parse("[camera]\ndevice = \"auto\"\n").devices.camera.device, "auto")
        XCTAssertEqual(try parse("[camera]\ndevice = \"libcamera\"\n").devices.camera.device, "libcamera")
        XCTAssertEqual(try parse("[camera]\ndevice = \"/dev/video2\"\n").devices.camera.device, "/dev/video2")
        let e = errors("[camera]\ndevice = \"picam\"\n")
        XCTAssertEqual(e.count, 1, "\(e)")
        XCTAssertTrue(e.first?.hasSuffix("\"auto\", \"libcamera\" or \"test-pattern\"") == true, "\(e)")
    }
}
