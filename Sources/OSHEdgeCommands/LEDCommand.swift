import OSHAgent
import OSHCLI
import OSHCore

/// `osh-edge led [--chip C] [--line N] [--active-low] [--show STATE] [--seconds S]`
func runLEDCommand(_ a: inout Arguments) {
    var settings = LEDSettings()
    if let c = a.value("--chip") {
        if let p = LEDSettings.chipProblem(c) { fail("--chip: \(p)") }
        settings.chip = c
    }
    if let l = a.value("--line") {
        guard let n = Int(l), LEDSettings.lineProblem(n) == nil else { fail("--line: expected 0 to \(LEDSettings.maxLine), not '\(l)'") }
        settings.line = n
    }
    settings.activeLow = a.flag("--active-low")
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
