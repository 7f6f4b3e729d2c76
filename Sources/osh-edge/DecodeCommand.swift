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
        for l in BarometerDecode.layouts { text += "  \(l.chip.padding(8)) calibration: \(l.calibration)\n  \(String(repeating: " ", count: 8)) data burst:  \(l.burst)\n" }
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

/// osh-edge bench baro [--count N] [--quiet]
func runBaroBench(_ a: inout Arguments) {
    let count = Int(a.value("--count") ?? "1000000") ?? 0
    guard count > 0 else { fail("--count must be a positive integer") }
    let quiet = a.flag("--quiet")
    a.finish()
    do {
        let r = try BarometerBench.run(count: count)
        if quiet { return }
        print("chip     stage          ns/sample")
        for x in r.results { print("\(x.chip.padding(9))\(x.stage.padding(13))\(format1(x.nanosPerSample).leftPadding(11))") }
        print("samples per case: \(count); checksum \(r.checksum)")
    } catch {
        fail("\(error)", code: 1)
    }
}
