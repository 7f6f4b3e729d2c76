import OSHCore
#if canImport(Glibc)
import Glibc
#endif

/// Checks the device files a configuration needs (`DeviceRequirement.list`) before the agent
/// starts: each must exist and be readable and writable by this process. The messages name
/// the file, the config key and the fix.
public enum DeviceCheck {
    public struct Finding: Sendable, Equatable, CustomStringConvertible {
        public var requirement: DeviceRequirement
        public var message: String
        /// True: refuse to start. False: log a warning and go on.
        public var fatal: Bool { requirement.required }
        public var description: String { message }
    }

    /// What is wrong (empty = all present and accessible). `devDirectory` is for tests.
    public static func run(_ requirements: [DeviceRequirement], devDirectory: String = "/dev") -> [Finding] {
        requirements.compactMap { r in
            problem(r, devDirectory: devDirectory).map { Finding(requirement: r, message: $0) }
        }
    }

    static func problem(_ r: DeviceRequirement, devDirectory: String) -> String? {
        var path = r.path
        if r.kind == .gpioChip {
            // Names and numbers are /dev/gpiochipN; a label can only be checked by libgpiod,
            // so here it is enough that some chip exists.
            let digits = !path.isEmpty && path.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
            if digits {
                path = "/dev/gpiochip" + path
            } else if path.hasPrefix("gpiochip") {
                path = "/dev/" + path
            } else if !path.hasPrefix("/") {
                return GPIOChips.present(devDirectory: devDirectory).isEmpty
                    ? "\(r.key) = \"\(r.path)\": this machine has no GPIO chips (/dev/gpiochip*); the status LED stays off"
                    : nil
            }
        }
        if devDirectory != "/dev", path.hasPrefix("/dev/") { path = devDirectory + path.dropFirst(4) }
        if access(path, F_OK) != 0 {
            let e = errno
            return "\(r.key) = \"\(r.path)\": \(Errno(e).text); " + missingHint(r)
                + (r.kind == .boardSerial ? "; gps_data waits for it, the other outputs run" : "")
        }
        if access(path, R_OK | W_OK) != 0 {
            let e = errno
            return "\(r.key) = \"\(r.path)\": \(Errno(e).text); " + permissionHint(r)
        }
        return nil
    }

    /// What to do about a serial port that is not there (`nmea`, as the agent says it).
    public static func missingSerialHint(_ path: String) -> String {
        let usb =
            path.hasPrefix("/dev/ttyUSB") || path.hasPrefix("/dev/ttyACM") || path.hasPrefix("/dev/serial/by-")
            || path.hasPrefix("/dev/gps")
        return missingHint(DeviceRequirement(path: path, kind: usb ? .usbSerial : .boardSerial, key: "", required: false))
    }

    private static func missingHint(_ r: DeviceRequirement) -> String {
        switch r.kind {
        case .boardSerial:
            return "enable the UART with enable_uart=1 (and dtoverlay=disable-bt on a Pi 3/4/Zero 2 W) in "
                + "/boot/firmware/config.txt and reboot (board/README.md)"
        case .usbSerial:
            return "plug in the receiver (ls /dev/serial/by-id/ shows what is there); the agent keeps trying"
        case .gpioChip:
            return "gpiodetect lists the chips; set [led] chip to one of them, or \"\" for no LED"
        }
    }

    private static func permissionHint(_ r: DeviceRequirement) -> String {
        switch r.kind {
        case .boardSerial, .usbSerial:
            return "the service user needs group dialout (usermod -aG dialout osh-edge; deploy/udev/99-osh-edge.rules)"
        case .gpioChip:
            return "the service user needs group gpio (usermod -aG gpio osh-edge; deploy/udev/99-osh-edge.rules)"
        }
    }
}
