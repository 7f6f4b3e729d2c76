// The media-controller devices (`/dev/media*`), read with MEDIA_IOC_DEVICE_INFO and
// MEDIA_IOC_ENUM_ENTITIES: enough to tell a camera sensor that needs libcamera (a Camera
// Module, vimc) from a webcam, and to name its video nodes. No libcamera is loaded for this.

import CShim
import CV4L2
import OSHCore
#if canImport(Glibc)
import Glibc
#endif

public enum MediaDevices {
    /// Every readable `/dev/media*`, in number order. A device that cannot be opened or read
    /// is left out (`osh-edge probe` reports what it sees, not what it cannot).
    public static func list(directory: String = "/dev", sysfs: String = "/sys") -> [MediaDeviceInfo] {
        StateFiles.numberedEntries(directory, prefix: "media").compactMap { read($0.path, directory: directory, sysfs: sysfs) }
    }

    static func read(_ path: String, directory: String, sysfs: String) -> MediaDeviceInfo? {
        guard let fd = try? FileDescriptor.open(path, O_RDWR | O_NONBLOCK) else { return nil }
        defer { fd.close() }
        var info = media_device_info()
        guard (try? fd.ioctl(IoctlRequest(OSH_MEDIA_IOC_DEVICE_INFO, "MEDIA_IOC_DEVICE_INFO"), &info)) != nil else { return nil }
        var sensors: [String] = []
        var nodes: [String] = []
        var subdevs: [String] = []
        var id = OSH_MEDIA_ENT_ID_FLAG_NEXT
        let enumerate = IoctlRequest(OSH_MEDIA_IOC_ENUM_ENTITIES, "MEDIA_IOC_ENUM_ENTITIES")
        for _ in 0..<256 {
            var e = media_entity_desc()
            e.id = id
            guard (try? fd.ioctl(enumerate, &e)) != nil else { break }  // EINVAL: no more entities
            id = e.id | OSH_MEDIA_ENT_ID_FLAG_NEXT
            if e.type == OSH_MEDIA_ENT_F_CAM_SENSOR { sensors.append(V4L2Text.string(e.name)) }
            let major = osh_media_entity_major(&e)
            if major != 0, let node = nodePath(major: major, minor: osh_media_entity_minor(&e), directory: directory, sysfs: sysfs) {
                if e.type == OSH_MEDIA_ENT_F_IO_V4L { nodes.append(node) } else { subdevs.append(node) }
            }
        }
        return MediaDeviceInfo(
            path: path, driver: V4L2Text.string(info.driver), model: V4L2Text.string(info.model), sensors: sensors, videoNodes: nodes,
            subdevNodes: subdevs)
    }

    /// Every node of the device can be opened read-write by this process: udev has finished
    /// with a device that just appeared (it sets the group a moment after the node exists).
    public static func isReady(_ m: MediaDeviceInfo) -> Bool {
        ([m.path] + m.videoNodes + m.subdevNodes).allSatisfy { access($0, R_OK | W_OK) == 0 }
    }

    /// `/dev/videoN` for a character device number, from sysfs's uevent (DEVNAME=video3).
    static func nodePath(major: UInt32, minor: UInt32, directory: String, sysfs: String) -> String? {
        guard let uevent = StateFiles.readText("\(sysfs)/dev/char/\(major):\(minor)/uevent") else { return nil }
        for line in uevent.split(separator: "\n") where line.hasPrefix("DEVNAME=") {
            return directory + "/" + line.dropFirst(8)
        }
        return nil
    }
}
