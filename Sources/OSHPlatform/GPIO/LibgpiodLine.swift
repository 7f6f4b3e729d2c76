import CGPIOD
import OSHCore
#if canImport(Glibc)
import Glibc
#endif

/// An output line through libgpiod; the same code for the 1.x (bookworm) and 2.x (trixie)
/// APIs, which differ only inside `Sources/CGPIOD/shim.h`. The line is held (and shows up
/// as "osh-edge" in `gpioinfo`) until the object goes away.
public final class LibgpiodLine: GPIOLine {
    public let chip: String
    public let line: Int
    private let handle: UnsafeMutablePointer<osh_gpio_out>
    private var last: Bool?

    /// Requests `line` of `chip` as an output at `initialHigh`; `chip = "auto"` is the Pi's
    /// header chip found by its label (`chip` then reads "pinctrl-rp1 (gpiochip0)").
    public init(chip spec: String, line: Int, consumer: String = "osh-edge", initialHigh: Bool = false) throws {
        var chip = spec
        if spec == LEDSettings.auto {
            let chips = Self.chipLabels()
            guard let h = LEDSettings.headerChip(among: chips) else {
                throw GPIOError(.noHeaderChip(found: chips.map { "\($0.name) (\($0.label))" }), chip: spec, line: line)
            }
            chip = "/dev/" + h.name
            self.chip = "\(h.label) (\(h.name))"
        } else {
            self.chip = spec
        }
        self.line = line
        guard line >= 0, line <= Int(UInt32.max) else { throw GPIOError(.noSuchLine, chip: chip, line: line) }
        var busy = [CChar](repeating: 0, count: 64)
        let h = busy.withUnsafeMutableBufferPointer { b in
            osh_gpio_out_open(chip, UInt32(line), consumer, initialHigh ? 1 : 0, b.baseAddress, b.count)
        }
        guard let h else {
            let e = Glibc.errno
            let by = busy.withUnsafeBufferPointer { b in b.baseAddress.map { String(cString: $0) } ?? "" }
            throw GPIOError(GPIOError.kind(forErrno: e, busyBy: by), chip: chip, line: line, errno: e)
        }
        handle = h
        last = initialHigh
    }

    deinit { osh_gpio_out_close(handle) }

    public func set(_ high: Bool) throws {
        if last == high { return }  // one ioctl per edge, not per tick
        guard osh_gpio_out_set(handle, high ? 1 : 0) == 0 else {
            let e = Glibc.errno
            last = nil
            throw GPIOError(.other, chip: chip, line: line, errno: e, operation: "setting")
        }
        last = high
    }

    /// Every chip the kernel exposes with its label, in /dev order ("gpiochip0", "pinctrl-rp1");
    /// a chip that cannot be opened has the label "?".
    public static func chipLabels(devDirectory: String = "/dev") -> [(name: String, label: String)] {
        GPIOChips.present(devDirectory: devDirectory).map { name in
            var buf = [CChar](repeating: 0, count: 64)
            let ok = osh_gpio_chip_label(devDirectory + "/" + name, &buf, buf.count) == 0
            return (name, ok ? String(cBuffer: buf) : "?")
        }
    }

    /// "2.2.1 (API v2)": what this binary was built against.
    public static var libraryVersion: String {
        (osh_gpiod_version().map { String(cString: $0) } ?? "?") + " (API v\(OSH_GPIOD_MAJOR))"
    }
}
