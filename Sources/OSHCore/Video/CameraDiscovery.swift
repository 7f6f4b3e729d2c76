// Which camera `[camera] device` means, and whether it must be reached through libcamera.
// A Raspberry Pi Camera Module (unicam on a Pi 4, CFE on a Pi 5) and the kernel's vimc are a
// camera sensor behind a media controller: their V4L2 nodes give raw Bayer, and a picture needs
// libcamera's pipeline handler and ISP. The agent reaches them through libcamera's V4L2
// compatibility layer (v4l2-compat.so, preloaded), so the capture path stays the V4L2 one.
// Pure: the media devices and the layer's presence are read by the caller.

/// One `/dev/media*` device: who drives it, its camera sensors and its video nodes.
public struct MediaDeviceInfo: Sendable, Equatable {
    public var path: String
    /// MEDIA_IOC_DEVICE_INFO's driver ("unicam", "rp1-cfe", "vimc", "uvcvideo", …).
    public var driver: String
    public var model: String
    /// The names of its camera-sensor entities ("imx708 10-001a", "Sensor B").
    public var sensors: [String]
    /// Its V4L2 video nodes (`/dev/videoN`), in entity order.
    public var videoNodes: [String]
    /// Its other device nodes (`/dev/v4l-subdevN`: sensor, debayer, scaler), which libcamera
    /// opens too.
    public var subdevNodes: [String]

    public init(path: String, driver: String, model: String, sensors: [String], videoNodes: [String], subdevNodes: [String] = []) {
        self.path = path
        self.driver = driver
        self.model = model
        self.sensors = sensors
        self.videoNodes = videoNodes
        self.subdevNodes = subdevNodes
    }

    /// A sensor only libcamera turns into pictures. A UVC webcam also shows a camera-sensor
    /// entity, but its own node gives finished pictures: the V4L2 path takes it directly.
    public var needsLibcamera: Bool { !sensors.isEmpty && !videoNodes.isEmpty && driver != "uvcvideo" }

    /// "imx708 10-001a (rp1-cfe, /dev/media0)".
    public var cameraDescription: String {
        "\(sensors.joined(separator: ", ")) (\(driver), \(path))"
    }
}

public enum CameraDiscovery {
    /// `[camera] device` words that are not a path.
    public static let auto = "auto"
    public static let libcamera = "libcamera"

    public enum Decision: Equatable, Sendable {
        /// Open this node with the plain V4L2 path (a webcam, vivid, or a path as configured).
        case v4l2(path: String)
        /// Open this node of a libcamera camera; the compatibility layer is in the process.
        case libcamera(path: String, camera: MediaDeviceInfo)
        /// Start again with the compatibility layer preloaded, then open this camera.
        case restartWithLayer(layer: String, camera: MediaDeviceInfo)
        /// libcamera's layer is loaded but no camera sensor is there (yet): wait for one (the
        /// agent started again after its camera was lost, and waits for it to come back).
        case waitForSensor
        /// No camera can be opened; why, and what to do.
        case unavailable(String)
    }

    /// `device`: the configured word or path. `media`: every media device. `cameraNodes`: the
    /// V4L2 capture nodes the plain path could use, in order. `layer`: the compatibility layer's
    /// path when installed; `layerLoaded`: it is preloaded in this process; `restarted`: the
    /// agent started itself with it (for a sensor it had found).
    public static func decide(
        device: String, media: [MediaDeviceInfo], cameraNodes: [String], layer: String?, layerLoaded: Bool,
        restarted: Bool = false
    ) -> Decision {
        let sensors = media.filter(\.needsLibcamera)
        // A libcamera camera's own nodes are not plain cameras (raw Bayer, or all one camera).
        let owned = Set(sensors.flatMap(\.videoNodes))
        let plain = cameraNodes.first { !owned.contains($0) }
        func through(_ cam: MediaDeviceInfo, _ node: String) -> Decision {
            if layerLoaded { return .libcamera(path: node, camera: cam) }
            if let layer { return .restartWithLayer(layer: layer, camera: cam) }
            return .unavailable(
                "\(cam.cameraDescription) is a camera sensor that only libcamera turns into pictures, and libcamera's "
                    + "V4L2 compatibility layer (v4l2-compat.so) is not installed; install it (Debian: apt install "
                    + "libcamera-v4l2 libcamera-ipa; Raspberry Pi OS: apt install libcamera-v4l2), or use a USB webcam")
        }
        switch device {
        case libcamera:
            guard let cam = sensors.first, let node = cam.videoNodes.first else {
                if layerLoaded { return .waitForSensor }
                let others = media.map { "\($0.driver) at \($0.path)" }
                return .unavailable(
                    "device = \"libcamera\" but no camera sensor was found behind a media controller"
                        + (others.isEmpty ? " (no /dev/media* device)" : " (media devices: \(others.joined(separator: ", ")))")
                        + "; check the camera's ribbon cable and that its overlay is enabled (Raspberry Pi OS: "
                        + "camera_auto_detect=1 in config.txt), or set device = \"auto\"")
            }
            return through(cam, node)
        case auto:
            if let cam = sensors.first, let node = cam.videoNodes.first {
                let d = through(cam, node)
                if case .unavailable = d, let plain { return .v4l2(path: plain) }
                return d
            }
            // The layer is loaded only for a sensor chosen before: wait for it to return (a
            // webcam opened under the layer would go through libcamera's UVC handler).
            if layerLoaded { return .waitForSensor }
            guard let plain else {
                return .unavailable(
                    "device = \"auto\" found no camera (no V4L2 capture node, no camera sensor behind a media "
                        + "controller); plug in a camera and restart, or name it (osh-edge probe lists them)")
            }
            return .v4l2(path: plain)
        default:
            // A path that is one of a libcamera camera's nodes goes through libcamera too.
            if let cam = sensors.first(where: { $0.videoNodes.contains(device) }) { return through(cam, device) }
            // Its sensor was found before this start: wait for it rather than open a node early.
            if layerLoaded && restarted { return .waitForSensor }
            return .v4l2(path: device)
        }
    }
}
