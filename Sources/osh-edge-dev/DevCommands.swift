// osh-edge-dev's benches and the development node: parsing and printing; the work is OSHDevTools'.
#if canImport(Glibc)
import Glibc
#endif
import OSHAgent
import OSHEdgeCommands
import OSHCore
import OSHDevTools
import OSHPlatform

/// osh-edge-dev bench baro [--count N] [--quiet]
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

/// `osh-edge-dev bench fusion [--count N] [--algorithm madgwick|mahony] [--quiet]`.
func runFusionBench(_ a: inout Arguments) {
    let count = Int(a.value("--count") ?? "1000000") ?? 0
    guard count > 0 else { fail("--count must be a positive integer") }
    var algorithms = FusionAlgorithm.allCases
    if let name = a.value("--algorithm") {
        guard let alg = FusionAlgorithm(rawValue: name) else { fail("--algorithm must be madgwick or mahony, not '\(name)'") }
        algorithms = [alg]
    }
    let quiet = a.flag("--quiet")
    a.finish()
    let results = FusionBench.run(count: count, algorithms: algorithms)
    if quiet { return }
    print("algorithm  input      updates/s   ns/update")
    for r in results {
        print(
            r.algorithm.rawValue.padding(11) + (r.magnetometer ? "MARG" : "IMU-only").padding(9)
                + String(Int(r.updatesPerSecond)).leftPadding(11) + format1(r.nanosPerUpdate).leftPadding(12))
    }
    let wmm = FusionBench.runWMM(count: max(count / 100, 1000))
    print("WMM2025 evaluations/s: \(Int(wmm)); updates per case: \(count)")
}

/// `osh-edge-dev bench audio [--seconds N] [--path meter|alsa] [--format S16_LE|S32_LE] [--channels N] [--quiet]`.
func benchAudio(_ a: inout Arguments) {
    let seconds = a.value("--seconds").map { Double($0) ?? 0 }
    if let s = seconds, !(s > 0) { fail("--seconds must be a positive number") }
    let paths: [AudioBench.Path]
    switch a.value("--path") {
    case nil: paths = [.meter, .alsa]
    case let p?:
        guard let v = AudioBench.Path(rawValue: p) else { fail("--path must be meter or alsa, not '\(p)'") }
        paths = [v]
    }
    var format = PCMSampleFormat.s16
    if let f = a.value("--format") {
        guard let v = PCMSampleFormat(rawValue: f.uppercased()) else { fail("--format must be S16_LE or S32_LE, not '\(f)'") }
        format = v
    }
    let channels = Int(a.value("--channels") ?? "1") ?? 0
    guard (1...8).contains(channels) else { fail("--channels must be 1 to 8") }
    let quiet = a.flag("--quiet")
    a.finish()
    Log.muted = true
    var template = Array("/tmp/osh-edge-bench-XXXXXX".utf8CString)
    guard let dirp = mkdtemp(&template) else { fail("cannot create a temporary directory in /tmp", code: 1) }
    let dir = String(cString: dirp)
    defer { rmdir(dir) }
    do {
        for p in paths {
            let r =
                p == .meter
                ? AudioBench.runMeter(seconds: seconds ?? 3600, format: format, channels: channels)
                : try AudioBench.runALSA(seconds: seconds ?? 600, format: format, channels: channels, directory: dir)
            if quiet { continue }
            print(
                "audio \(p.rawValue) \(format.rawValue) \(channels) ch, period \(r.periodFrames): "
                    + "\(fixed(r.audioSeconds, 0)) s of 48 kHz audio in \(fixed(r.cpuSeconds * 1000, 1)) ms CPU "
                    + "= \(fixed(r.cpuMicrosPerAudioSecond, 1)) µs CPU per audio second (\(fixed(r.coreShare * 100, 4)) % of a core), "
                    + "\(fixed(r.framesPerCPUSecond / 1e6, 1)) M frames/CPU-s; \(r.windows) windows")
        }
    } catch {
        fail("\(error)", code: 1)
    }
}

/// `osh-edge-dev bench spool [--count N] [--sync record|second|never] [--dir DIR] [--quiet]`
func benchSpool(_ a: inout Arguments) {
    let count = Int(a.value("--count") ?? "100000") ?? 0
    guard count > 100 else { fail("--count must be more than 100 (the ring holds the first 100)") }
    let modes: [SpoolSync]
    if let s = a.value("--sync") {
        guard let m = SpoolSync(rawValue: s) else { fail("--sync must be record, second or never") }
        modes = [m]
    } else {
        modes = [.never, .second]
    }
    let base = a.value("--dir") ?? "/tmp/osh-edge-bench-spool-\(getpid())"
    let quiet = a.flag("--quiet")
    a.finish()
    Log.muted = true
    for mode in modes {
        let dir = base + "/" + mode.rawValue
        do {
            let r = try SpoolBench.run(directory: dir, count: count, sync: mode)
            if !quiet {
                print(
                    "spool_fsync=\(mode.rawValue): \(r.observations) obs spooled at \(Int(r.spooledPerSecond)) obs/s, "
                        + "drained at \(Int(r.drainedPerSecond)) obs/s; \(format1(r.bytesPerObservation)) B/obs on disk")
            }
        } catch {
            fail("\(error)", code: 1)
        }
        // The drained spool left only its cursor behind.
        unlink(dir + "/cursor")
        rmdir(dir)
    }
    rmdir(base)
    if !quiet { print("peak RSS: \(Agent.peakRSSKiB()) KiB (\(base) on the filesystem measured)") }
}

func bench(_ a: inout Arguments) {
    let which = a.positional()
    if which == "publish" { return benchPublish(&a) }
    if which == "baro" { return runBaroBench(&a) }
    if which == "audio" { return benchAudio(&a) }
    if which == "video" { return benchVideo(&a) }
    if which == "fusion" { return runFusionBench(&a) }
    if which == "imu" { return runIMUBenchCommand(&a) }
    if which == "spool" { return benchSpool(&a) }
    guard which == "encode" else { fail("bench needs a benchmark name: encode, publish, baro, imu, fusion, audio, video or spool") }
    let count = Int(a.value("--count") ?? "200000") ?? 0
    guard count > 0 else { fail("--count must be a positive integer") }
    let output = a.value("--output")
    let format = parseFormat(a.value("--format"))
    let batch = a.value("--batch").map { Int($0) ?? 0 }
    let quiet = a.flag("--quiet")
    a.finish()
    let cases = EncodeBench.cases(output: output, format: format, batch: batch)
    guard !cases.isEmpty else { fail("no benchmark case matches those filters (see osh-edge schema --list)") }
    do {
        let results = try EncodeBench.run(cases, count: count)
        if quiet { return }
        print("output                          format    batch    ns/obs  bytes/obs")
        for r in results {
            let name = r.case.output.padding(32)
            let fmt = r.case.format.rawValue.padding(9)
            print(
                "\(name)\(fmt)\(String(r.case.batch).leftPadding(6))\(format1(r.nanosPerObservation).leftPadding(10))\(format1(r.bytesPerObservation).leftPadding(11))"
            )
        }
        print("observations per case: \(count); peak RSS: \(Agent.peakRSSKiB()) KiB")
    } catch {
        fail("\(error)", code: 1)
    }
}

func benchPublish(_ a: inout Arguments) {
    guard let url = a.value("--node") else {
        fail("bench publish needs --node URL (start one with: osh-edge-dev node --port 18181), or --node none for the publisher alone")
    }
    let count = Int(a.value("--count") ?? "20000") ?? 0
    let backlog = Int(a.value("--backlog") ?? "1000") ?? 1000
    let formats = parseFormat(a.value("--format")).map { [$0] } ?? ScalarFormat.allCases
    let output = a.value("--output") ?? "barometer"
    let quiet = a.flag("--quiet")
    a.finish()
    Log.muted = true
    do {
        for f in formats {
            let r =
                url == "none"
                ? try PublishBench.runWithoutNetwork(format: f, count: count, output: output)
                : try PublishBench.run(apiRoot: url, format: f, count: count, backlog: backlog, output: output)
            if quiet { continue }
            print(
                "\(output) \(f.rawValue): \(r.observations) obs in \(format1(r.seconds)) s = \(Int(r.observationsPerSecond)) obs/s; "
                    + "\(r.requests) requests; body \(format1(Double(r.bodyBytes) / Double(max(r.observations, 1)))) B/obs; "
                    + "\(backlog)-obs backlog drained in \(Int(r.backlogDrainSeconds * 1000)) ms")
        }
        if !quiet { print("peak RSS: \(Agent.peakRSSKiB()) KiB") }
    } catch {
        fail("\(error)", code: 1)
    }
}

func demo(_ a: inout Arguments) {
    var o = DemoOptions()
    if let d = a.value("--duration") {
        guard let v = Double(d), v > 0 else { fail("--duration must be a positive number of seconds") }
        o.duration = v
    }
    o.format = parseFormat(a.value("--format")) ?? .omJSON
    o.stateDirectory = a.value("--state-dir")
    o.uid = a.value("--uid")
    o.label = a.value("--label")
    o.nodeURL = a.value("--node")
    if let log = a.value("--gps-log") { o.gpsLog = log == "none" ? nil : log }
    if let wav = a.value("--audio-wav") {
        if wav == "none" { o.audio = false } else { o.audioWAV = wav }
    }
    if a.flag("--no-camera") { o.video = false }
    if a.flag("--no-commands") { o.commands = false }
    if a.flag("--no-record") { o.record = false }
    if let f = a.value("--camera-fps") {
        guard let v = Double(f), (1...25).contains(v) else { fail("--camera-fps must be 1 to 25") }
        o.videoFPS = v
    }
    o.user = a.value("--user")
    if let pem = a.value("--insecure-trust-cert") { o.tls = .trustCertificate(pemPath: pem) }
    if let pin = a.value("--pin-sha256") { o.tls = .pinnedKey(sha256Base64: pin) }
    if o.user != nil { o.password = password(for: o.user ?? "") }
    a.finish()
    do {
        try Demo.run(o) { text in print(text) }
    } catch {
        fail("\(error)", code: 1)
    }
}

func node(_ a: inout Arguments) {
    let port = UInt16(a.value("--port") ?? "8181") ?? 0
    var users: [(String, String)] = []
    if let u = a.value("--user") {
        let parts = u.split(separator: ":", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { fail("--user must be NAME:PASSWORD") }
        users.append((parts[0], parts[1]))
    }
    let journal = a.value("--journal")
    let ledger = a.value("--ledger")
    let control = a.flag("--control-stdin")
    let inMemory = a.flag("--osh-in-memory-store")
    let refuse = a.flag("--refuse-receivers")
    var broker: MQTTBroker?
    if let b = a.value("--mqtt-broker") {
        guard let parsed = MQTTBroker(url: b), !parsed.tls else {
            fail("--mqtt-broker \(b): give the broker the node's MQTT side reads, as mqtt://127.0.0.1:1883")
        }
        broker = parsed
    }
    a.finish()
    do {
        // Flushed (fflush(nil): every stream): the node never exits normally and its stdout is often a pipe.
        try Agent.runDevelopmentNode(
            port: port, users: users, journal: journal, ledger: ledger,
            controlStdin: control, oshInMemoryStore: inMemory,
            refuseReceivers: refuse, mqttBroker: broker
        ) {
            print($0); fflush(nil)
        }
    } catch {
        fail("\(error)", code: 1)
    }
}
