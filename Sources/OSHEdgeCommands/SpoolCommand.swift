#if canImport(Glibc)
import Glibc
#endif
import OSHAgent
import OSHCore
import OSHPlatform

/// `osh-edge spool [status|dump] [--dir DIR | --config FILE] [--json]`: what the store-and-forward
/// spool holds, read without changing it (safe while the service runs).
func runSpoolCommand(_ a: inout Arguments) {
    let what = a.positional() ?? "status"
    guard what == "status" || what == "dump" else { fail("spool: expected status or dump, not '\(what)'") }
    let json = a.flag("--json")
    let dir = stateSubdirectory(&a, "spool")
    a.finish()
    let inspection: FileSpool.Inspection
    do {
        inspection = try FileSpool.inspect(directory: dir)
    } catch {
        fail("cannot read the spool: \(error)", code: 1)
    }
    let names = SpoolNames()
    let out = ByteBuffer(capacity: 4096)
    if json {
        var w = JSONWriter(out)
        w.beginObject()
        w.key("directory"); w.string(dir)
        w.key("segments"); w.int(inspection.segments.count)
        w.key("pendingBytes"); w.int(inspection.pendingBytes)
        w.key("records"); w.int(inspection.entries.count)
        w.key("damaged"); w.int(inspection.damage.count)
        w.key("perOutput")
        w.beginObject()
        for (name, n) in perOutput(inspection, names) { w.key(name); w.int(n) }
        w.endObject()
        if what == "dump" {
            w.key("entries")
            w.beginArray()
            for e in inspection.entries {
                w.beginObject()
                w.key("output"); w.string(names.name(e.key))
                if e.heldBoot != nil {
                    // Held for the clock: the time is monotonic in the boot that wrote it.
                    w.key("heldForClock"); w.bool(true)
                    w.key("monotonic"); w.number(e.time)
                    w.key("thisBoot"); w.bool(e.heldBoot == BootID.tag)
                } else {
                    w.key("time"); w.string(ISOTime.string(epochSeconds: e.time))
                    w.key("epoch"); w.number(e.time)
                }
                w.key("values")
                w.beginArray()
                for v in e.values { if v.isFinite { w.number(v) } else { w.null() } }
                w.endArray()
                w.endObject()
            }
            w.endArray()
        }
        w.endObject()
        print(out.string)
        return
    }
    print(
        "spool \(dir): \(inspection.entries.count) observations waiting (\(inspection.pendingBytes) bytes in "
            + "\(inspection.segments.count) segment file(s))")
    if !inspection.damage.isEmpty {
        print(
            "  damaged stretches (skipped when sent): "
                + inspection.damage.map { "segment \($0.segment) @\($0.offset) (\($0.length) bytes)" }.joined(separator: ", "))
    }
    for (name, n) in perOutput(inspection, names) { print("  \(name): \(n)") }
    if what == "dump" {
        for e in inspection.entries {
            let time =
                e.heldBoot == nil
                ? ISOTime.string(epochSeconds: e.time)
                : "held for the clock (monotonic \(e.time) s, \(e.heldBoot == BootID.tag ? "this boot" : "an earlier boot: will be dropped"))"
            print("\(names.name(e.key))\t\(time)\t" + e.values.map { "\($0)" }.joined(separator: ","))
        }
    }
}

private func perOutput(_ i: FileSpool.Inspection, _ names: SpoolNames) -> [(String, Int)] {
    var counts: [UInt32: Int] = [:]
    var order: [UInt32] = []
    for e in i.entries {
        if counts[e.key] == nil { order.append(e.key) }
        counts[e.key, default: 0] += 1
    }
    return order.map { (names.name($0), counts[$0] ?? 0) }
}

/// Output names by spool key: every catalogue output, with the inertial ones under each IMU chip's name.
private struct SpoolNames {
    var byKey: [UInt32: String] = [:]
    init() {
        for spec in everyCatalogueOutput() { byKey[SpoolRecord.key(outputName: spec.outputName)] = spec.outputName }
        byKey[SpoolRecord.key(outputName: "ptz_position")] = "ptz_position"
    }
    func name(_ key: UInt32) -> String { byKey[key] ?? "output#" + String(key, radix: 16) }
}
