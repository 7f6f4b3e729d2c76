import Foundation
import OSHAgent
import OSHCore
import OSHPlatform
import OSHSimulation
import XCTest
import OSHDevTools

/// `osh-edge-dev demo` end to end: the simulated board through the real drivers (I²C chips, ALSA's
/// file plugin, libx264), the built-in node, and a command round trip through its WebSocket.
final class DemoTests: XCTestCase {
    // The simulated chips and values these agents run on come from OSHSimulation.
    override class func setUp() { super.setUp(); DemoSimulation.install() }

    func testDemoRunsEveryOutputThroughTheDriversAndACommandRoundTrip() throws {
        Log.muted = true
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        var o = DemoOptions()
        o.duration = 9
        o.stateDirectory = NSTemporaryDirectory() + "osh-demo-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: o.stateDirectory ?? "") }
        o.gpsLog = root + "/Tests/OSHCoreTests/Fixtures/nmea/gpsd-3.22/ublox-neo-m9n-nmea.log"
        o.audioWAV = root + "/Tests/OSHCoreTests/Fixtures/audio/pinknoise_vol-20dB.wav"
        var text = ""
        let rows = try Demo.run(o) { text += $0 + "\n" }
        let sent = Dictionary(uniqueKeysWithValues: rows.map { ($0.outputName, $0.counters.sent) })
        for name in [
            "quat_orientation_data", "euler_orientation_data", "MPU9250_Accelerometer_data", "MPU9250_Gyroscope_data",
            "AK8963_Magnetometer_data", "barometer", "gps_data", "audio_level",
        ] {
            XCTAssertGreaterThan(sent[name] ?? 0, 3, "\(name) sent\n\(text.suffix(2000))")
        }
        XCTAssertTrue(text.contains("camera0_H264"), text.suffix(2000).description)
        XCTAssertTrue(text.contains("LED: identify"), "identify reached the agent through the node")
        XCTAssertTrue(text.contains("setRate: COMPLETED — quat_orientation_data now at 2.0 Hz"), text.suffix(3000).description)
        // Heading comes from the fused simulated IMU (turning 10°/s), not synthetic numbers.
        let euler = try XCTUnwrap(rows.first { $0.outputName == "euler_orientation_data" })
        XCTAssertTrue(euler.lastValue.isFinite)
    }
}
