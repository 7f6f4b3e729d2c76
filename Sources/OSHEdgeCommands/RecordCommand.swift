#if canImport(Glibc)
import Glibc
#endif
import OSHAgent
import OSHCore
import OSHPlatform

/// `osh-edge record status|export`: the on-board recording at the board, read without
/// changing it (safe while the service writes).
func runRecordCommand(_ a: inout Arguments) {
    let what = a.positional() ?? "status"
    switch what {
    case "status": recordStatus(&a)
    case "export": recordExport(&a)
    default: fail("record: expected status or export, not '\(what)'")
    }
}

/// `--dir DIR`, or `<state_directory>/<sub>` of `--config FILE` (default: the service's configuration).
func stateSubdirectory(_ a: inout Arguments, _ sub: String) -> String { stateSubdirectoryAndSettings(&a, sub).directory }

/// The same, with the configuration when one was read (`--dir` reads none).
func stateSubdirectoryAndSettings(_ a: inout Arguments, _ sub: String) -> (directory: String, settings: AgentSettings?) {
    let dirArg = a.value("--dir")
    let configArg = a.value("--config")
    if let d = dirArg {
        // The state directory itself (what [paths] state_directory names) is understood too.
        var st = stat()
        let inner = (d.hasSuffix("/") ? String(d.dropLast()) : d) + "/" + sub
        if !d.hasSuffix("/" + sub), stat(inner, &st) == 0, st.st_mode & S_IFMT == S_IFDIR { return (inner, nil) }
        return (d, nil)
    }
    let path = configArg ?? Daemon.defaultConfigPath
    do {
        guard let bytes = try StateFiles.read(path) else {
            fail("\(path) does not exist; give --config FILE or --dir STATE_DIRECTORY/\(sub)")
        }
        let settings = try AgentSettings.parseFile(bytes: bytes, path: path)
        return (settings.stateDirectory + "/" + sub, settings)
    } catch {
        fail("\(error)")
    }
}

private func mib(_ bytes: Int) -> String {
    let tenths = (bytes * 10 + (1 << 19)) >> 20
    return "\(tenths / 10).\(tenths % 10) MiB"
}

/// What the running service says of its recording writes (its counters file), one line; nil when
/// no service writes that file.
private func serviceRecordingLine(_ status: ServiceStatus?) -> (state: String, dropped: Int, text: String)? {
    guard let s = status, s.isLive(now: Clock.realtimeSeconds()), let state = s.header["recording"] else { return nil }
    let dropped = s.outputs.reduce(0) { $0 + $1.value("record_dropped") }
    let what: String
    switch state {
    case "paused":
        what = "writes paused: the state filesystem is full (it keeps room for the spool); free space or lower [record] max_mb"
    case "failing":
        what = "writes failing: see its log (journalctl -u osh-edge) for the error"
    default:
        what = "writing"
    }
    return (
        state, dropped,
        "service PID \(s.pid.map(String.init) ?? "?"): \(what); \(dropped) record(s) not kept since it started "
            + "(bound, clock, full card or errors)"
    )
}

private func recordStatus(_ a: inout Arguments) {
    let json = a.flag("--json")
    let countersArg = a.value("--counters")
    let (dir, settings) = stateSubdirectoryAndSettings(&a, "record")
    a.finish()
    let service = serviceRecordingLine((countersArg ?? ServiceStatus.countersPath(settings)).flatMap { try? ServiceStatus.read($0) })
    let outputs: [RecordedOutput]
    do {
        outputs = try RecordingCatalog.inspect(directory: dir)
    } catch {
        fail("\(error)", code: 1)
    }
    let bounds = RecordingCatalog.bounds(directory: dir)
    let total = outputs.reduce(0) { $0 + $1.bytes }
    if json {
        let out = ByteBuffer(capacity: 4096)
        var w = JSONWriter(out)
        w.beginObject()
        w.key("directory"); w.string(dir)
        w.key("bytes"); w.int(total)
        if let b = bounds {
            w.key("maxBytes"); w.int(b.maxBytes)
            w.key("maxAgeSeconds"); w.number(b.maxAge)
        }
        if let sv = service {
            w.key("service"); w.beginObject()
            w.key("writes"); w.string(sv.state)
            w.key("recordDropped"); w.int(sv.dropped)
            w.endObject()
        }
        w.key("outputs")
        w.beginArray()
        for o in outputs {
            w.beginObject()
            w.key("name"); w.string(o.name)
            w.key("video"); w.bool(o.isVideo)
            w.key("first"); if let t = o.first { w.string(ISOTime.string(epochSeconds: t)) } else { w.null() }
            w.key("last"); if let t = o.last { w.string(ISOTime.string(epochSeconds: t)) } else { w.null() }
            w.key("records"); w.int(o.records)
            w.key("segments"); w.int(o.segments.count)
            w.key("bytes"); w.int(o.bytes)
            w.key("damaged"); w.int(o.damaged)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        print(out.string)
        return
    }
    let bound = bounds.map { " of \(mib($0.maxBytes)) (bound), at most \($0.maxAge / 3600) h old" } ?? ""
    print("recording \(dir): \(outputs.count) output(s), \(mib(total))\(bound)")
    if let sv = service { print("  " + sv.text) }
    for o in outputs {
        let range =
            o.first.flatMap { f in o.last.map { ISOTime.string(epochSeconds: f) + " … " + ISOTime.string(epochSeconds: $0) } }
            ?? "nothing recorded"
        print(
            "  \(o.name)\(o.isVideo ? " (video)" : ""): \(range), \(o.records) records, \(o.segments.count) segment(s), "
                + mib(o.bytes) + (o.damaged > 0 ? ", \(o.damaged) damaged stretch(es) (skipped when read)" : ""))
    }
}

private func recordExport(_ a: inout Arguments) {
    let fromArg = a.value("--from"), toArg = a.value("--to"), name = a.value("--output")
    let force = a.flag("--force")
    let dir = stateSubdirectory(&a, "record")
    // "-" (standard output) is not an option: take it before positional(), which skips "--" words only.
    let file = a.rest.firstIndex(of: "-").map { a.rest.remove(at: $0) } ?? a.positional()
    a.finish()
    guard let fromArg, let toArg, let name, let file else {
        fail(
            "record export needs --from TIME --to TIME --output NAME FILE (times ISO-8601 with a zone, "
                + "e.g. 2026-12-02T03:15:00Z; `\(programName) record status` lists the outputs and their ranges)")
    }
    guard let from = ISOTime.parse(fromArg), let to = ISOTime.parse(toArg) else {
        fail("--from and --to must be ISO-8601 times with a zone, e.g. 2026-12-02T03:15:00Z or 2026-12-02T04:15:00+01:00")
    }
    let window: RecordingWindow
    do {
        window = try RecordingWindow(directory: dir, outputName: name, from: from, to: to)
    } catch {
        fail("\(error)", code: 1)
    }
    guard window.total > 0 else {
        let recorded =
            window.recordedRange.map {
                "recorded: " + ISOTime.string(epochSeconds: $0.first) + " … " + ISOTime.string(epochSeconds: $0.last)
            }
            ?? "nothing is recorded of it yet"
        fail(
            "nothing of \(name) between \(ISOTime.string(epochSeconds: from)) and \(ISOTime.string(epochSeconds: to)); \(recorded)", code: 1
        )
    }
    let toStdout = file == "-"
    let out: FileDescriptor
    if toStdout {
        out = FileDescriptor(rawValue: 1)
    } else {
        // An export never replaces a file by surprise (a recording's window is not got back).
        if !force, access(file, F_OK) == 0 {
            fail("\(file) exists; give --force to replace it, or another name (- writes to standard output)", code: 1)
        }
        do {
            out = try FileDescriptor.open(file, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
        } catch {
            fail("cannot write \(file): \(error)", code: 1)
        }
    }
    let buffer = ByteBuffer(capacity: 128 << 10)
    var first: Double?, last = 0.0
    do {
        var header = false
        while let item = try window.next() {
            if first == nil { first = item.time }
            last = item.time
            if window.isVideo {
                try out.writeAll(item.accessUnit)
                continue
            }
            if !header {
                header = true
                buffer.append(StaticString("time"))
                for leaf in leafNames(name, count: item.values.count) { buffer.append(UInt8(ascii: ",")); buffer.appendUTF8(leaf) }
                buffer.append(UInt8(ascii: "\n"))
            }
            ISOTime.write(epochSeconds: item.time, to: buffer)
            for v in item.values {
                buffer.append(UInt8(ascii: ","))
                if v.isFinite { JSONWriter.writeDouble(v, to: buffer) }
            }
            buffer.append(UInt8(ascii: "\n"))
            if buffer.count > 96 << 10 {
                try out.writeAll(UnsafeRawBufferPointer(buffer.bytes))
                buffer.reset()
            }
        }
        try out.writeAll(UnsafeRawBufferPointer(buffer.bytes))
    } catch {
        if !toStdout { out.close() }
        fail("export to \(file) failed: \(error)", code: 1)
    }
    if !toStdout { out.close() }
    var note = ""
    if window.startsBeforeRecording, let r = window.recordedRange {
        note =
            " (the window starts before what is recorded, \(ISOTime.string(epochSeconds: r.first)): dropped by the bound or not recorded)"
    }
    if window.damaged > 0 { note += "; \(window.damaged) damaged stretch(es) skipped" }
    // The summary goes to standard error when the data goes to standard output.
    let say: (String) -> Void = toStdout ? { printError($0) } : { print($0) }
    say(
        "\(toStdout ? "standard output" : file): \(window.done) \(window.isVideo ? "access units (Annex-B H.264)" : "records (CSV)") of \(name), "
            + "\(ISOTime.string(epochSeconds: first ?? from)) … \(ISOTime.string(epochSeconds: last))\(note)")
}

/// The CSV header's value names: the output's leaves after the time as the catalogue knows them,
/// or value1…n for an output it does not know (or one recorded with another layout).
private func leafNames(_ output: String, count: Int) -> [String] {
    if let spec = everyCatalogueOutput().first(where: { $0.outputName == output }) {
        let names = spec.leaves.filter { !$0.component.isObservationTime }.map { $0.names.last ?? "" }
        if names.count == count { return names }
    }
    return (0..<count).map { "value\($0 + 1)" }
}

/// Every catalogue output, the inertial ones under each IMU and magnetometer chip's name (the
/// names a running agent may have used).
func everyCatalogueOutput() -> [OutputSpec] {
    var out: [OutputSpec] = []
    for imu in ChipTable.known.imuNames {
        for mag in [imu] + ChipTable.known.magnetometerNames {
            out += OutputCatalogue.all(OutputOptions(uid: "record", imuChip: imu, magnetometerChip: mag))
        }
    }
    return out
}
