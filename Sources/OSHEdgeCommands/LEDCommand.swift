import OSHAgent
import OSHCore
import OSHPlatform

/// `osh-edge led [--chip C] [--line N] [--active-low] [--config FILE] [--show STATE] [--seconds S]`
/// `--config FILE`: the LED of that file's `[led]` section, read even when the rest of the file
/// is refused (as `osh-edge run` shows a refused configuration); the image's first boot uses it.
func runLEDCommand(_ a: inout Arguments) {
    var settings = LEDSettings()
    if let path = a.value("--config") {
        let bytes: [UInt8]?
        do { bytes = try StateFiles.read(path) } catch { fail("--config: \(error)", code: 1) }
        guard let bytes else { fail("--config: \(path) does not exist", code: 1) }
        guard let led = AgentSettings.ledSettings(bytes: bytes, path: path) else {
            fail("\(path) has no usable [led] section (none, damaged, or chip = \"\"): no LED to show", code: 1)
        }
        settings = led
    }
    if let c = a.value("--chip") {
        if let p = LEDSettings.chipProblem(c) { fail("--chip: \(p)") }
        settings.chip = c
    }
    if let l = a.value("--line") {
        guard let n = Int(l), LEDSettings.lineProblem(n) == nil else { fail("--line: expected 0 to \(LEDSettings.maxLine), not '\(l)'") }
        settings.line = n
    }
    if a.flag("--active-low") { settings.activeLow = true }
    var state: LEDState?
    if let s = a.value("--show"), s != "identify" {
        guard let st = LEDState(rawValue: s) else {
            fail("--show must be identify or one of " + LEDState.allCases.map(\.rawValue).joined(separator: ", "))
        }
        state = st
    }
    let secondsText = a.value("--seconds") ?? "10"
    guard let seconds = Double(secondsText), seconds > 0, seconds <= 3600 else { fail("--seconds must be from 0 to 3600") }
    a.finish()
    guard settings.enabled else { fail("--chip \"\" means no LED") }
    do {
        try StatusLED.demonstrate(settings, state: state, seconds: seconds) { print($0) }
    } catch {
        fail("\(error)", code: 1)
    }
}
