// osh-edge probe [--bus N] [--dump] [--json]: what is attached to this board and the config
// sections that would use it (parsing and printing only; the work is OSHAgent's Probe).
import OSHAgent

func runProbeCommand(_ args: [String]) {
    var a = Arguments(rest: args)
    let json = a.flag("--json")
    let dump = a.flag("--dump")
    var bus: Int?
    if let text = a.value("--bus") {
        guard let n = Int(text), n >= 0 else { fail("--bus takes the N of /dev/i2c-N, not '\(text)'") }
        bus = n
    }
    a.finish()
    Probe.restartWithLibcameraLayerIfUseful()
    let report = Probe.run(bus: bus, dump: dump)
    print(json ? report.json : report.table, terminator: json ? "\n" : "")
}
