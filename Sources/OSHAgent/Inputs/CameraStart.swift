// `[camera] device` resolved against what is plugged in: a webcam through V4L2, or a camera
// sensor (a Camera Module, vimc) through libcamera's V4L2 compatibility layer, which the agent
// preloads by starting itself again (`LibcameraLayer.restart`) — the service unit needs nothing.

import OSHCore
import OSHPlatform

enum CameraStart {
    /// The decision for `device` on this machine now. `plainCameras`: list the V4L2 cameras
    /// (every node opened) where "auto" might fall back to one; whether to start again with the
    /// layer never depends on them.
    static func decide(device: String, plainCameras: Bool = true, video: V4L2Device = SystemV4L2()) -> CameraDiscovery.Decision {
        let media = MediaDevices.list()
        let loaded = LibcameraLayer.isLoaded
        // The plain cameras matter only for "auto" without the layer. Under the layer no video
        // node is opened before the sensor's: the first open starts libcamera, which lists the
        // cameras of that moment for the rest of the process.
        let layer = LibcameraLayer.find()
        let nodes =
            plainCameras && device == CameraDiscovery.auto && !loaded && (layer == nil || !media.contains(where: \.needsLibcamera))
            ? V4L2Probe.list(video).filter { $0.role == .camera }.map(\.path) : []
        return CameraDiscovery.decide(
            device: device, media: media, cameraNodes: nodes, layer: layer, layerLoaded: loaded,
            restarted: LibcameraLayer.wasRestarted)
    }

    /// The node of the camera sensor `device` means once it is back (nil while it is absent).
    static func sensorNode(device: String) -> String? {
        if case .libcamera(let path, let cam) = decide(device: device), MediaDevices.isReady(cam) { return path }
        return nil
    }

    /// Before anything is opened: a camera that needs the layer starts the process again with
    /// it (this returns only when that failed, having said why).
    static func restartForLibcameraIfNeeded(_ c: CameraConfig, plan: HardwarePlan) {
        guard plan.camera == .board, c.device != VideoSettings.testPattern else { return }
        guard case .restartWithLayer(let layer, let cam) = decide(device: c.device, plainCameras: false) else { return }
        guard !LibcameraLayer.wasRestarted else {
            Log.error("camera: \(cam.cameraDescription) still needs libcamera's layer after starting again with \(layer)")
            return
        }
        Log.notice("camera: \(cam.cameraDescription) is a camera sensor; starting again with libcamera's V4L2 layer (\(layer))")
        Log.error("camera: \(LibcameraLayer.restart(with: layer))")
    }
}
