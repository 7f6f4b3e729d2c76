import Foundation
import XCTest
@testable import OSHCore

final class LEDPatternTests: XCTestCase {
    /// The level every 50 ms over `ms`, as a string of 1/0 (one character per tick).
    private func timeline(_ state: LEDState, ms: UInt64) -> String {
        String(stride(from: UInt64(0), to: ms, by: 50).map { LEDPattern.level(state: state, elapsedMs: $0) ? "1" : "0" })
    }

    func testEachStateHasItsDocumentedShape() {
        XCTAssertEqual(timeline(.starting, ms: 2000), "1111111111000000000011111111110000000000")
        XCTAssertEqual(timeline(.nodeUnreachable, ms: 800), "1100110011001100")
        XCTAssertEqual(timeline(.clockHeld, ms: 2000), "11" + String(repeating: "0", count: 38))
        XCTAssertEqual(timeline(.sensorFault, ms: 2000), "111000111" + String(repeating: "0", count: 31))
        XCTAssertEqual(timeline(.configError, ms: 3000), "111000111000111" + String(repeating: "0", count: 45))
        XCTAssertEqual(timeline(.streaming, ms: 1000), String(repeating: "1", count: 20))
        XCTAssertEqual(timeline(.off, ms: 1000), String(repeating: "0", count: 20))
    }

    func testPatternsRepeatAndAreDistinct() {
        var seen = Set<String>()
        for s in LEDState.allCases {
            let p = LEDPattern.pattern(for: s)
            for t in stride(from: UInt64(0), to: p.periodMs, by: 50) {
                XCTAssertEqual(p.isOn(elapsedMs: t), p.isOn(elapsedMs: t + 7 * p.periodMs), "\(s) at \(t) ms")
            }
            // Over 6 s (a common multiple of every period) no two states look alike.
            XCTAssertTrue(seen.insert(timeline(s, ms: 6000)).inserted, "\(s) looks like another state")
        }
        // Every edge falls on the 50 ms tick grid.
        for s in LEDState.allCases {
            let p = LEDPattern.pattern(for: s)
            XCTAssertEqual(p.periodMs % 50, 0)
            for r in p.onMs { XCTAssertEqual(r.lowerBound % 50, 0); XCTAssertEqual(r.upperBound % 50, 0) }
        }
    }

    func testStreamingBlipsDarkAfterABatch() {
        XCTAssertFalse(LEDPattern.level(state: .streaming, elapsedMs: 5000, sinceActivityMs: 0))
        XCTAssertFalse(LEDPattern.level(state: .streaming, elapsedMs: 5000, sinceActivityMs: 99))
        XCTAssertTrue(LEDPattern.level(state: .streaming, elapsedMs: 5000, sinceActivityMs: 100))
        XCTAssertTrue(LEDPattern.level(state: .streaming, elapsedMs: 5000, sinceActivityMs: nil))
        // Activity means nothing in other states.
        XCTAssertTrue(LEDPattern.level(state: .starting, elapsedMs: 0, sinceActivityMs: 0))
    }

    func testIdentifyOverridesEveryState() {
        for s in LEDState.allCases {
            let line = String(
                stride(from: UInt64(0), to: 400, by: 50).map {
                    LEDPattern.level(state: s, elapsedMs: 123, identifyRemainingMs: 1000, identifyElapsedMs: $0) ? "1" : "0"
                })
            XCTAssertEqual(line, "10101010", "\(s)")
        }
        XCTAssertTrue(LEDPattern.level(state: .off, elapsedMs: 0, identifyRemainingMs: 1, identifyElapsedMs: 0))
        XCTAssertFalse(LEDPattern.level(state: .off, elapsedMs: 0, identifyRemainingMs: 0, identifyElapsedMs: 0))
    }

    func testDeriveTakesTheMostUrgent() {
        XCTAssertEqual(
            LEDState.derive(configError: true, registered: true, nodeReachable: false, clockSynchronized: false, sensorFault: true),
            .configError)
        XCTAssertEqual(
            LEDState.derive(registered: true, nodeReachable: false, clockSynchronized: false, sensorFault: true), .nodeUnreachable)
        XCTAssertEqual(LEDState.derive(registered: false, nodeReachable: false, clockSynchronized: true), .nodeUnreachable)
        XCTAssertEqual(LEDState.derive(registered: true, nodeReachable: true, clockSynchronized: false, sensorFault: true), .clockHeld)
        XCTAssertEqual(LEDState.derive(registered: true, nodeReachable: true, clockSynchronized: true, sensorFault: true), .sensorFault)
        XCTAssertEqual(LEDState.derive(registered: false, nodeReachable: true, clockSynchronized: true), .starting)
        XCTAssertEqual(LEDState.derive(registered: true, nodeReachable: true, clockSynchronized: true), .streaming)
    }

    func testSettingsChecks() {
        XCTAssertNil(LEDSettings.chipProblem("gpiochip0"))
        XCTAssertNil(LEDSettings.chipProblem("pinctrl-rp1"))
        XCTAssertNil(LEDSettings.chipProblem("/dev/gpiochip4"))
        XCTAssertNil(LEDSettings.chipProblem("0"))
        XCTAssertNil(LEDSettings.chipProblem(""))
        XCTAssertNotNil(LEDSettings.chipProblem("/etc/passwd"))
        XCTAssertNotNil(LEDSettings.chipProblem("/dev/../etc/x"))
        XCTAssertNotNil(LEDSettings.chipProblem("gpio chip"))
        XCTAssertNil(LEDSettings.lineProblem(17))
        XCTAssertNotNil(LEDSettings.lineProblem(-1))
        XCTAssertNotNil(LEDSettings.lineProblem(5000))
        XCTAssertFalse(LEDSettings(chip: "").enabled)
        XCTAssertEqual(LEDSettings(), LEDSettings(chip: "gpiochip0", line: 17, activeLow: false))
    }

    /// chip = "auto": the header chip by its label, whatever its number — each board's chips as
    /// its kernel lists them (the Pi 5's RP1 behind the BCM2712's own chips on early kernels).
    func testAutoFindsEachBoardsHeaderChipByItsLabel() {
        XCTAssertNil(LEDSettings.chipProblem("auto"))
        let boards: [(String, [(name: String, label: String)], String?)] = [
            (
                "Pi 5, early kernel",
                [
                    ("gpiochip0", "gpio-brcmstb@107d508500"), ("gpiochip1", "gpio-brcmstb@107d508520"),
                    ("gpiochip2", "gpio-brcmstb@107d517c00"), ("gpiochip3", "gpio-brcmstb@107d517c20"), ("gpiochip4", "pinctrl-rp1"),
                ],
                "gpiochip4"
            ),
            ("Pi 5, kernel 6.6.45+", [("gpiochip0", "pinctrl-rp1"), ("gpiochip10", "gpio-brcmstb@107d508500")], "gpiochip0"),
            ("Pi 4", [("gpiochip0", "pinctrl-bcm2711"), ("gpiochip1", "raspberrypi-exp-gpio")], "gpiochip0"),
            ("Pi 3 with an expander first", [("gpiochip0", "mcp23017"), ("gpiochip1", "pinctrl-bcm2835")], "gpiochip1"),
            ("not a Pi", [("gpiochip0", "INT34C6:00")], nil),
        ]
        for (board, chips, want) in boards {
            XCTAssertEqual(LEDSettings.headerChip(among: chips)?.name, want, board)
        }
    }

    /// board/profiles/*.conf: each parses, names only known sections, and its [led] and [gps]
    /// values pass the checks the config reader applies.
    func testBoardProfilesAreValid() throws {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("board/profiles")
        let all = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".conf") }.sorted()
        // Add-on boards (HATs) name chips, not the Pi's LED and serial port; ConfigCheckTests reads them.
        XCTAssertEqual(all.filter { !$0.hasPrefix("pi") }, ["sense-hat.conf"])
        let names = all.filter { $0.hasPrefix("pi") }
        XCTAssertEqual(names, ["pi-zero-2w.conf", "pi3.conf", "pi4.conf", "pi5.conf"])
        for n in names {
            let bytes = try [UInt8](Data(contentsOf: dir.appendingPathComponent(n)))
            let doc = try ConfigParser.parse(bytes: bytes, path: n)
            for s in doc.sections where !(s.name.isEmpty && s.entries.isEmpty) {
                XCTAssertTrue(["gps", "led", "publisher"].contains(s.name.joined(separator: ".")), "\(n): \(s.title)")
            }
            let led = try XCTUnwrap(doc.sections.first { $0.name == ["led"] }, n)
            for e in led.entries { XCTAssertTrue(LEDSettings.keys.contains(e.key), "\(n): \(e.key)") }
            guard case .string(let chip)? = led.entry("chip")?.value, case .integer(let line)? = led.entry("line")?.value else {
                return XCTFail("\(n): [led] needs chip and line")
            }
            XCTAssertNil(LEDSettings.chipProblem(chip), n)
            XCTAssertNil(LEDSettings.lineProblem(line), n)
            XCTAssertTrue(chip.hasPrefix("pinctrl-"), "\(n): name the chip by its label (Pi 5 renumbered)")
            guard case .string(let gps)? = doc.sections.first(where: { $0.name == ["gps"] })?.entry("device")?.value else {
                return XCTFail("\(n): [gps] device")
            }
            XCTAssertEqual(gps, "/dev/serial0", n)
        }
    }
}
