// `osh-edge fuse [--algorithm madgwick|mahony] [--gain G] [--ki KI] [--rate HZ] [--mag-unit uT|nT]
//  [--mounting SPEC] [--no-bias] [--json] < samples.csv`: the orientation filter over a recording.
#if canImport(Glibc)
import Glibc
#endif
import OSHAgent
import OSHCore

func runFuseCommand(_ args: [String]) {
    var a = Arguments(rest: args)
    var o = FuseTool.Options()
    switch a.value("--algorithm") {
    case nil: break
    case let name?:
        guard let alg = FusionAlgorithm(rawValue: name) else { fail("--algorithm must be madgwick or mahony, not '\(name)'") }
        o.settings.algorithm = alg
    }
    if let g = a.value("--gain") {
        guard let v = Double(g), v.isFinite, v >= 0 else {
            fail("--gain must be a non-negative number (Madgwick β or Mahony Kp), not '\(g)'")
        }
        if o.settings.algorithm == .madgwick { o.settings.beta = v } else { o.settings.kp = v }
    }
    if let k = a.value("--ki") {
        guard let v = Double(k), v.isFinite, v >= 0 else { fail("--ki must be a non-negative number, not '\(k)'") }
        o.settings.ki = v
    }
    if let r = a.value("--rate") {
        guard let v = Double(r), v.isFinite, v > 0, v <= 10_000 else { fail("--rate must be the sample rate in Hz (0–10000), not '\(r)'") }
        o.settings.rateHz = v
    }
    switch a.value("--mag-unit") {
    case nil, "uT", "µT": o.magScale = 1
    case "nT": o.magScale = 0.001
    case let other?: fail("--mag-unit must be uT or nT, not '\(other)'")
    }
    if let m = a.value("--mounting") {
        do { o.settings.mounting = try AxisMapping(parsing: m) } catch { fail("--mounting: \(error)") }
    }
    if a.flag("--no-bias") { o.settings.estimateGyroBias = false }
    o.json = a.flag("--json")
    a.finish()
    do {
        let n = try FuseTool.run(o, lines: FileDescriptorLines(fd: 0)) { print($0) }
        if n == 0 { fail("no samples on standard input (CSV columns: t,gx,gy,gz,ax,ay,az[,mx,my,mz])", code: 1) }
    } catch {
        fail("\(error)", code: 1)
    }
}
