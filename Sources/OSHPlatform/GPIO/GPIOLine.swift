#if canImport(Glibc)
import Glibc
#endif
import OSHCore

// The GPIO seam. The status LED drives a `GPIOLine`; on a board it is `LibgpiodLine`
// (the character device through libgpiod 1.x or 2.x — never sysfs, which kernel 6.6
// renumbered), in tests OSHSimulation's `SimulatedGPIOLine`, which records every level it was given.

/// One output line, already requested. Values are physical levels (true = high).
public protocol GPIOLine: AnyObject {
    func set(_ high: Bool) throws
}

/// Why a line could not be had or driven, with what to do about it.
public struct GPIOError: Error, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// No chip matched (no /dev/gpiochip*, or a name/label that is not there).
        case chipMissing
        case permissionDenied
        /// The offset is not a line of that chip.
        case noSuchLine
        /// Another consumer (a kernel driver such as gpio-leds, or a process) holds the line.
        case busy(consumer: String)
        /// `chip = "auto"` and no chip carries a Raspberry Pi header label; the chips there are.
        case noHeaderChip(found: [String])
        case other
    }

    public let kind: Kind
    public let chip: String
    public let line: Int
    public let errno: Int32
    /// What was being done ("requesting", "setting").
    public let operation: String

    public init(_ kind: Kind, chip: String, line: Int, errno: Int32 = 0, operation: String = "requesting") {
        self.kind = kind
        self.chip = chip
        self.line = line
        self.errno = errno
        self.operation = operation
    }

    /// Classifies the errno that libgpiod left.
    public static func kind(forErrno e: Int32, busyBy: String) -> Kind {
        switch e {
        case ENOENT, ENODEV, ENOTTY: return .chipMissing
        case EACCES, EPERM: return .permissionDenied
        case ERANGE, EINVAL: return .noSuchLine
        case EBUSY: return .busy(consumer: busyBy)
        default: return .other
        }
    }

    public var description: String {
        let what = "GPIO line \(line) of \(chip)"
        let why = errno != 0 ? Errno(errno).text : ""
        switch kind {
        case .chipMissing:
            let chips = GPIOChips.present()
            return "\(what): no such GPIO chip (\(why)); "
                + (chips.isEmpty
                    ? "this machine has no /dev/gpiochip* at all (not a Pi, or a container without them); set [led] chip = \"\" for no LED"
                    : "this machine has \(chips.joined(separator: ", ")); set [led] chip to one of them or to its label "
                        + "(gpiodetect lists both), or chip = \"\" for no LED")
        case .permissionDenied:
            return "\(what): \(why) on /dev/gpiochip*; add the service user to group gpio "
                + "(usermod -aG gpio osh-edge; deploy/udev/99-osh-edge.rules gives that group the chips)"
        case .noSuchLine:
            return "\(what): \(chip) has no line \(line); use the BCM GPIO number on the header chip (gpioinfo \(chip))"
        case .busy(let c):
            return "\(what) is already used by \(c.isEmpty ? "another consumer" : "\"\(c)\"")"
                + "; pick a free line or remove the overlay/program that holds it"
        case .noHeaderChip(let found):
            return
                "no Raspberry Pi header GPIO chip (labelled \(LEDSettings.headerChipLabels.joined(separator: ", "))) for chip = \"auto\"; "
                + (found.isEmpty
                    ? "this machine has no /dev/gpiochip* at all; set [led] chip = \"\" for no LED"
                    : "this machine has \(found.joined(separator: ", ")); set [led] chip to one of them, or chip = \"\" for no LED")
        case .other:
            return "\(what): \(operation) failed: \(why)"
        }
    }
}

/// The GPIO chips the kernel exposes.
public enum GPIOChips {
    public static func present(devDirectory: String = "/dev") -> [String] {
        guard let d = opendir(devDirectory) else { return [] }
        defer { closedir(d) }
        var names: [String] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name.hasPrefix("gpiochip") { names.append(name) }
        }
        return names.sorted { $0.count != $1.count ? $0.count < $1.count : $0 < $1 }
    }
}
