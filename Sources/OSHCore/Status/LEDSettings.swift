/// `[led]`: the status LED's GPIO line (board/README.md lists each board's suggestion).
/// Keys: `chip` (a name `gpiochipN`, a `/dev/gpiochipN` path, a number, or a label such as
/// `pinctrl-rp1`; `""` = no LED), `line` (the offset on that chip: the BCM GPIO number on a
/// Pi's header chip), `active-low` (true when the LED is wired between 3V3 and the pin).
public struct LEDSettings: Sendable, Equatable {
    public var chip: String
    public var line: Int
    public var activeLow: Bool

    public init(chip: String = "gpiochip0", line: Int = 17, activeLow: Bool = false) {
        self.chip = chip
        self.line = line
        self.activeLow = activeLow
    }

    /// `chip = "auto"`: the Raspberry Pi's header GPIO chip, found by its label whatever number
    /// the kernel gave it (the Pi 5's RP1 was gpiochip4 on early kernels, gpiochip0 now).
    public static let auto = "auto"
    /// The header chips' labels: the Pi 5's RP1, the Pi 4's BCM2711, the Pi 3's and Zero 2's BCM2835.
    public static let headerChipLabels = ["pinctrl-rp1", "pinctrl-bcm2711", "pinctrl-bcm2835"]

    /// The header chip among the machine's chips (name and label), in the kernel's order; nil
    /// when none carries a header label (not a Pi, or an overlay renamed it).
    public static func headerChip(among chips: [(name: String, label: String)]) -> (name: String, label: String)? {
        for label in headerChipLabels {
            if let c = chips.first(where: { $0.label == label }) { return c }
        }
        return nil
    }

    /// The keys of `[led]`, as the config file spells them.
    public static let keys = ["chip", "line", "active_low"]

    /// An empty chip turns the LED off entirely.
    public var enabled: Bool { !chip.isEmpty }

    /// Largest line offset accepted (the Pi 5's RP1 has 54 lines; expanders have fewer).
    public static let maxLine = 1023

    /// What is wrong with `chip`, for the config reader (nil = fine). It must not carry
    /// shell or path surprises: a path must be under /dev.
    public static func chipProblem(_ chip: String) -> String? {
        if chip.isEmpty { return nil }
        if chip.hasPrefix("/") {
            return chip.hasPrefix("/dev/") && !chip.hasSubstring("..")
                ? nil
                : "a chip path must be under /dev, e.g. /dev/gpiochip0"
        }
        let ok = chip.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2D || c == 0x5F || c == 0x2E
        }
        return ok && chip.utf8.count <= 64
            ? nil
            : "expected a chip name (gpiochip0), a number, a /dev path or a label (pinctrl-rp1)"
    }

    /// What is wrong with `line` (nil = fine).
    public static func lineProblem(_ line: Int) -> String? {
        (0...maxLine).contains(line) ? nil : "expected a line offset from 0 to \(maxLine)"
    }
}
