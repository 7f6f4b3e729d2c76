/// A device file the configuration asks for, and why: checked before anything starts
/// (`DeviceCheck.run` in OSHPlatform), so a missing UART or a permission problem is
/// reported at once with its fix, not as a retry loop later.
public struct DeviceRequirement: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// A UART built into the board (/dev/serial0, ttyAMA*, ttyS*): its absence usually means
        /// config.txt does not enable it. The GPS input waits for it all the same, as for a USB
        /// receiver: one absent device never stops the others.
        case boardSerial
        /// A USB serial device (ttyUSB*, ttyACM*, /dev/serial/by-id/…, /dev/gps-*): may be
        /// plugged in later; the GPS source reopens it with backoff.
        case usbSerial
        /// The status LED's GPIO chip (a name, path, number or label).
        case gpioChip
    }

    public var path: String
    public var kind: Kind
    /// The config key that named it, e.g. "[gps] device".
    public var key: String
    /// Missing → refuse to start (true) or warn and go on (false).
    public var required: Bool

    public init(path: String, kind: Kind, key: String, required: Bool) {
        self.path = path
        self.kind = kind
        self.key = key
        self.required = required
    }

    /// The device files `settings` will open, in a stable order. Only what is enabled and
    /// read from hardware counts (a simulated output or a gpsd source opens no device).
    public static func list(_ settings: AgentSettings, led: LEDSettings? = nil) -> [DeviceRequirement] {
        var out: [DeviceRequirement] = []
        if let g = settings.outputs["gps_data"], g.enabled, g.source == .hardware, settings.gps.gpsd == nil {
            let d = settings.gps.device
            let usb =
                d.hasPrefix("/dev/ttyUSB") || d.hasPrefix("/dev/ttyACM") || d.hasPrefix("/dev/serial/by-id/")
                || d.hasPrefix("/dev/serial/by-path/") || d.hasPrefix("/dev/gps")
            out.append(DeviceRequirement(path: d, kind: usb ? .usbSerial : .boardSerial, key: "[gps] device", required: false))
        }
        if let led, led.enabled {
            // A missing LED never stops the agent (StatusLED logs it and runs without).
            out.append(DeviceRequirement(path: led.chip, kind: .gpioChip, key: "[led] chip", required: false))
        }
        return out
    }
}
