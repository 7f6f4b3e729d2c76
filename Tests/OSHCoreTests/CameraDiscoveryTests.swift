import OSHCore
import XCTest

/// `[camera] device` against what is plugged in: which camera, and through libcamera or not.
final class CameraDiscoveryTests: XCTestCase {
    static let layer = "/usr/libexec/aarch64-linux-gnu/libcamera/v4l2-compat.so"
    /// A Camera Module v3 on a Pi 5 (rp1-cfe), as its media controller shows it.
    static let module = MediaDeviceInfo(
        path: "/dev/media0", driver: "rp1-cfe", model: "rp1-cfe", sensors: ["imx708 10-001a"],
        videoNodes: ["/dev/video0", "/dev/video1", "/dev/video2"])
    static let vimc = MediaDeviceInfo(
        path: "/dev/media1", driver: "vimc", model: "VIMC MDEV", sensors: ["Sensor A", "Sensor B"],
        videoNodes: ["/dev/video3", "/dev/video4", "/dev/video5"])
    /// A UVC webcam also shows a camera-sensor entity, but gives finished pictures itself.
    static let webcam = MediaDeviceInfo(
        path: "/dev/media2", driver: "uvcvideo", model: "HD Webcam C525", sensors: ["HD Webcam C525"],
        videoNodes: ["/dev/video8", "/dev/video9"])
    /// The Pi 4's ISP and codecs: a media controller without a sensor.
    static let isp = MediaDeviceInfo(
        path: "/dev/media3", driver: "bcm2835-isp", model: "bcm2835-isp", sensors: [], videoNodes: ["/dev/video13"])

    private func decide(
        _ device: String, _ media: [MediaDeviceInfo], nodes: [String] = [], layer: String? = layer, loaded: Bool = false,
        restarted: Bool = false
    ) -> CameraDiscovery.Decision {
        CameraDiscovery.decide(device: device, media: media, cameraNodes: nodes, layer: layer, layerLoaded: loaded, restarted: restarted)
    }

    func testTheSensorNeedsLibcameraTheWebcamDoesNot() {
        XCTAssertTrue(Self.module.needsLibcamera)
        XCTAssertTrue(Self.vimc.needsLibcamera)
        XCTAssertFalse(Self.webcam.needsLibcamera, "uvcvideo's own node gives pictures")
        XCTAssertFalse(Self.isp.needsLibcamera, "no sensor")
        XCTAssertEqual(Self.module.cameraDescription, "imx708 10-001a (rp1-cfe, /dev/media0)")
    }

    func testAutoPrefersTheSensorAndStartsAgainWithTheLayer() {
        let media = [Self.isp, Self.webcam, Self.module]
        XCTAssertEqual(
            decide("auto", media, nodes: ["/dev/video0", "/dev/video8"]), .restartWithLayer(layer: Self.layer, camera: Self.module))
        XCTAssertEqual(decide("auto", media, loaded: true), .libcamera(path: "/dev/video0", camera: Self.module))
        XCTAssertEqual(decide("libcamera", media, loaded: true), .libcamera(path: "/dev/video0", camera: Self.module))
        // A path that is one of the sensor's nodes goes through libcamera as well.
        XCTAssertEqual(decide("/dev/video1", media, loaded: true), .libcamera(path: "/dev/video1", camera: Self.module))
        XCTAssertEqual(decide("/dev/video1", media), .restartWithLayer(layer: Self.layer, camera: Self.module))
    }

    func testAutoWithoutASensorTakesTheFirstPlainCamera() {
        XCTAssertEqual(decide("auto", [Self.webcam], nodes: ["/dev/video8"]), .v4l2(path: "/dev/video8"))
        XCTAssertEqual(decide("/dev/video8", [Self.webcam]), .v4l2(path: "/dev/video8"))
        guard case .unavailable(let why) = decide("auto", [], nodes: []) else { return XCTFail("nothing to open") }
        XCTAssertTrue(why.hasPrefix("device = \"auto\" found no camera"), why)
    }

    func testWithoutTheLayerAutoFallsBackToAWebcamAndLibcameraSaysWhatToInstall() {
        let media = [Self.module, Self.webcam]
        XCTAssertEqual(
            decide("auto", media, nodes: ["/dev/video0", "/dev/video8"], layer: nil), .v4l2(path: "/dev/video8"),
            "the sensor's raw nodes are not taken for a webcam")
        guard case .unavailable(let why) = decide("libcamera", media, layer: nil) else { return XCTFail("no layer") }
        XCTAssertTrue(why.hasPrefix("imx708 10-001a (rp1-cfe, /dev/media0) is a camera sensor that only libcamera"), why)
        XCTAssertTrue(why.contains("apt install libcamera-v4l2"), why)
        guard case .unavailable = decide("auto", [Self.module], nodes: ["/dev/video0"], layer: nil) else {
            return XCTFail("only the sensor's raw nodes: nothing to open")
        }
    }

    func testLibcameraWithoutASensorSaysWhereToLook() {
        guard case .unavailable(let why) = decide("libcamera", [Self.webcam]) else { return XCTFail() }
        XCTAssertTrue(why.hasPrefix("device = \"libcamera\" but no camera sensor was found behind a media controller"), why)
        XCTAssertTrue(why.contains("(media devices: uvcvideo at /dev/media2)"), why)
        XCTAssertTrue(why.contains("camera_auto_detect=1"), why)
    }

    /// After a lost camera the agent starts again under the layer and waits for the sensor:
    /// opening any node before it is back would start libcamera without it.
    func testUnderTheLayerAnAbsentSensorIsWaitedFor() {
        XCTAssertEqual(decide("auto", [Self.webcam], nodes: ["/dev/video8"], loaded: true), .waitForSensor)
        XCTAssertEqual(decide("libcamera", [], loaded: true), .waitForSensor)
        XCTAssertEqual(decide("/dev/video1", [], loaded: true, restarted: true), .waitForSensor)
        XCTAssertEqual(decide("/dev/video1", [], loaded: true), .v4l2(path: "/dev/video1"), "libcamerify'd by hand: as configured")
    }
}
