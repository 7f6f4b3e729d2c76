// osh-edge decode CHIP CALIBRATION_HEX RAW_HEX [--json]: a barometer's compensated values from
// register bytes (parsing and printing only; the work is OSHAgent's BarometerDecode).
#if canImport(Glibc)
import Glibc
#endif
import OSHAgent

func runDecodeCommand(_ args: [String]) {
    var a = Arguments(rest: args)
    let json = a.flag("--json")
    guard let chip = a.positional(), let calibration = a.positional(), let raw = a.positional() else {
        var text = "usage: osh-edge decode CHIP CALIBRATION_HEX RAW_HEX [--json]\n"
        for l in BarometerDecode.layouts {
            text += "  \(l.chip.padding(8)) calibration: \(l.calibration)\n  \(String(repeating: " ", count: 8)) data burst:  \(l.burst)\n"
        }
        fail(text)
    }
    a.finish()
    do {
        let r = try BarometerDecode.decode(chip: chip, calibrationHex: calibration, rawHex: raw)
        print(json ? r.json : r.table)
    } catch {
        fail("\(error)", code: 1)
    }
}
