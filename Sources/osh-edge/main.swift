// osh-edge — the command line. Parses arguments, calls one function in OSHAgent,
// prints. Nothing else lives here.
#if canImport(Glibc)
import Glibc
#endif
import OSHAgent
import OSHCore
import OSHPlatform

let usage = """
usage: osh-edge <command> [options]

commands:
  schema [OUTPUT]      print the datastream body the agent POSTs for OUTPUT
         --all         every output, one JSON document per line (the default)
         --list        the output names and their observation formats
         --system      the SensorML system body   --feature   the sampling feature body
         --uid UID  --uid-extension EXT  --label LABEL  --north true|magnetic
         --format om+json|swe+json  --video-size WxH  --imu CHIP  --baro CHIP
         --valid-from ISO-TIME  --pretty
  bench encode         encode each scalar output (O&M single, O&M batch of 50, swe+json)
         --count N (default 200000)  --output NAME  --format om+json|swe+json  --batch 1|50
  bench baro           barometer compensation and driver read, ns/sample  --count N (default 1000000)
  bench audio          CPU per second of 48 kHz audio metered: the meter alone, and ALSA capture
                       (file plugin) + meter   --seconds N  --path meter|alsa  --format S16_LE|S32_LE
                       --channels N
  bench video          libx264 frames/s and bytes/frame at 640x480 and 1280x720, 1 thread and auto
         --frames N (default 200)  --size WxH  --threads N|auto  --keyint N  --fps F  --bitrate KBPS
  bench imu            one IMU sample through each driver on the simulated bus [--chip NAME] [--count N]
  run                  the agent as a service  --config FILE (default /etc/osh-edge/osh-edge.conf)
                       --secrets FILE (default /etc/osh-edge/secrets)
  config check [FILE]  validate a configuration file (every error with file:line)
  nmea [FILE|-]        decode NMEA 0183 (a log, stdin or a serial device) into one JSON line per
                       fix and a final counts line   --baud N (for a device, default 9600)
  levels FILE.wav|DEVICE  per window, the rmsdB/peakdB audio_level would publish (a WAV read
                       directly, or an ALSA capture device until Ctrl-C)
         --window S (0.1–1, default 0.1)  --json (one object per line)  --duration S (device)
  demo                 the whole agent on this machine: the built-in development node on
                       loopback, a simulated board (I²C chips read by the real drivers, a WAV through
                       ALSA, a test pattern through libx264), commands sent to itself through the node,
                       a live table of what each datastream sent
         --duration S  --format om+json|swe+json  --state-dir DIR  --uid UID  --label LABEL
         --audio-wav FILE|none  the simulated microphone (default: pink noise from the fixtures)
         --no-camera  --camera-fps F (default 5)  --no-commands
         --gps-log FILE  an NMEA log replayed through a pseudo-terminal for gps_data
                       (default: the u-blox NEO-M9N log in Tests/…/Fixtures/nmea; none = simulated)
         --node URL [--user NAME]  use an external node (password from OSH_EDGE_PASSWORD)
         --insecure-trust-cert PEM | --pin-sha256 BASE64   TLS for that node
  check                can this board reach the node, are the credentials right, is it registered with
                       the datastreams its configuration publishes  --config FILE --secrets FILE (defaults
                       as for run) | --node URL [--user NAME] [--insecure-trust-cert PEM | --pin-sha256 BASE64]
         [--uid UID]
  systems              the node's systems, live (newest observation ≤ 5 min) / stale (≤ 30 min) / offline
         [--limit N]
  datastreams SYSTEM   a system's datastreams (SYSTEM: id or UID) with their newest observation time
  schema --remote DATASTREAM   a datastream's schema as the node holds it  [--format om+json|swe+json|swe+binary]
  observations DATASTREAM      its newest records whatever their age, decoded with its schema
         [--latest N] (default 10) | --current (resultTime=latest)  [--format om+json|swe+json|swe+binary]
  command CONTROLSTREAM '{"rpan":3.0}'   send a command; prints its id and the status the node reports
                       these five: --node URL [--user NAME] (password from OSH_EDGE_PASSWORD), TLS options as
                       for check, or the configured node (--config FILE --secrets FILE); --json for JSON
  decode CHIP CALIBRATION_HEX RAW_HEX   a barometer's values from register bytes as i2cdump shows
                       them (BMP280 BME280 BMP388 BMP390 LPS22HB; run without bytes for the layouts)
         --json        one JSON object instead of the table
  probe                the I²C chips (by address + ID register), ALSA capture devices and V4L2
                       cameras/encoders on this board, and the config sections that would use them
         --bus N  --dump (each barometer's register bytes and decoded values)  --json
  calibrate mag        turn the board through every orientation; prints mag_offset/mag_matrix for
                       [orientation]   --seconds S (default 60)  --json  --config FILE
                       --bus N --chip NAME --address 0xNN  --simulated (a simulated MPU-9250)
  node                 run the development node alone  --port N (default 8181)  --user NAME:PASS
         --journal FILE  keep systems, datastreams, control streams and sampling features (and
                       their ids) across restarts: changes are appended to FILE, replayed at start
  declination LAT LON [ALT_KM] [DATE]   WMM2025 field (D, I, H, X, Y, Z, F) like NOAA's calculator
                       DATE: decimal year or YYYY-MM-DD (default today)   --json
  fuse < samples.csv   orientation fusion over recorded raw samples (t,gx,gy,gz,ax,ay,az[,mx,my,mz])
         --algorithm madgwick|mahony  --gain G  --ki KI  --rate HZ  --mag-unit uT|nT
         --mounting x=-y,y=x,z=z|z90|…  --no-bias  --json
  bench fusion         fusion updates/s and allocations  --count N  --algorithm madgwick|mahony
  bench spool          an outage's overflow into the spool and its drain, obs/s and bytes/obs
         --count N  --sync record|second|never  --dir DIR (default under /tmp)
  led                  show a status-LED pattern to check the wiring  --chip C (default gpiochip0)
         --line N (default 17)  --active-low  --show identify|STATE  --seconds S (default 10)
  spool [status|dump]  what the store-and-forward spool holds (read only; safe while running)
         --config FILE (its state_directory) | --dir DIR   --json
  version (--version)  this build and the C libraries it is linked with
  help                 this text
"""

/// Writes to standard error through the fd: Glibc's `stderr` is a mutable global Swift 6 will not share.
func printError(_ message: String) {
    var line = message + "\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

func fail(_ message: String, code: Int32 = 2) -> Never {
    printError("osh-edge: \(message)")
    exit(code)
}

/// A tiny option reader: `--name value` pairs and flags, in any order.
struct Arguments {
    var rest: [String]
    mutating func flag(_ name: String) -> Bool {
        guard let i = rest.firstIndex(of: name) else { return false }
        rest.remove(at: i)
        return true
    }
    mutating func value(_ name: String) -> String? {
        guard let i = rest.firstIndex(of: name) else { return nil }
        guard i + 1 < rest.count else { fail("\(name) needs a value") }
        let v = rest[i + 1]
        rest.removeSubrange(i...(i + 1))
        return v
    }
    mutating func positional() -> String? {
        guard let i = rest.firstIndex(where: { !$0.hasPrefix("--") }) else { return nil }
        return rest.remove(at: i)
    }
    func finish() {
        if let extra = rest.first { fail("unexpected argument '\(extra)' (see osh-edge help)") }
    }
}

func parseFormat(_ s: String?) -> ScalarFormat? {
    guard let s else { return nil }
    guard let f = ScalarFormat(rawValue: s) else { fail("--format must be om+json or swe+json, not '\(s)'") }
    return f
}

func schema(_ a: inout Arguments) {
    if a.flag("--remote") { return runRemoteSchemaCommand(&a) }
    var what: SchemaRequest.What = .all
    if a.flag("--system") { what = .system } else if a.flag("--feature") { what = .feature } else if a.flag("--list") { what = .list }
    _ = a.flag("--all")
    let pretty = a.flag("--pretty")
    let format = parseFormat(a.value("--format")) ?? .omJSON
    let north: NorthReference
    switch a.value("--north") {
    case nil, "true": north = .true
    case "magnetic": north = .magnetic
    case let other?: fail("--north must be true or magnetic, not '\(other)'")
    }
    var width = 640, height = 480
    if let size = a.value("--video-size") {
        let parts = size.split(separator: "x")
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), (16...7680).contains(w), (16...4320).contains(h) else {
            fail("--video-size must be WIDTHxHEIGHT, e.g. 1280x720, not '\(size)'")
        }
        width = w
        height = h
    }
    let imu = a.value("--imu") ?? "MPU9250"
    let baro = a.value("--baro") ?? "BMP280"
    var validFrom = Agent.now()
    if let t = a.value("--valid-from") {
        guard let v = ISOTime.parse(t) else { fail("--valid-from must be an ISO-8601 time with a zone, e.g. 2026-03-18T16:02:58.497Z") }
        validFrom = v
    }
    let identity: SystemIdentity
    do {
        identity = try Agent.localIdentity(uid: a.value("--uid"), uidExtension: a.value("--uid-extension") ?? "",
                                           label: a.value("--label"))
    } catch {
        fail("\(error)", code: 1)
    }
    if let name = a.positional() { what = .output(name) }
    a.finish()
    var request = SchemaRequest(what: what, identity: identity,
                                options: OutputOptions(uid: identity.uid, north: north, videoWidth: width, videoHeight: height,
                                                       imuChip: imu, barometerChip: baro),
                                validFrom: validFrom)
    request.format = format
    request.pretty = pretty
    do {
        for doc in try SchemaCommand.documents(request) { print(doc) }
    } catch {
        fail("\(error)", code: 1)
    }
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
            print("\(name)\(fmt)\(String(r.case.batch).leftPadding(6))\(format1(r.nanosPerObservation).leftPadding(10))\(format1(r.bytesPerObservation).leftPadding(11))")
        }
        print("observations per case: \(count); peak RSS: \(Agent.peakRSSKiB()) KiB")
    } catch {
        fail("\(error)", code: 1)
    }
}

func benchPublish(_ a: inout Arguments) {
    guard let url = a.value("--node") else {
        fail("bench publish needs --node URL (start one with: osh-edge node --port 18181), or --node none for the publisher alone")
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
            let r = url == "none" ? try PublishBench.runWithoutNetwork(format: f, count: count, output: output)
                : try PublishBench.run(apiRoot: url, format: f, count: count, backlog: backlog, output: output)
            if quiet { continue }
            print("\(output) \(f.rawValue): \(r.observations) obs in \(format1(r.seconds)) s = \(Int(r.observationsPerSecond)) obs/s; "
                  + "\(r.requests) requests; body \(format1(Double(r.bodyBytes) / Double(max(r.observations, 1)))) B/obs; "
                  + "\(backlog)-obs backlog drained in \(Int(r.backlogDrainSeconds * 1000)) ms")
        }
        if !quiet { print("peak RSS: \(Agent.peakRSSKiB()) KiB") }
    } catch {
        fail("\(error)", code: 1)
    }
}

func format1(_ v: Double) -> String {
    let tenths = Int((v * 10).rounded())
    return "\(tenths / 10).\(abs(tenths % 10))"
}

extension String {
    func padding(_ n: Int) -> String { count >= n ? self + " " : self + String(repeating: " ", count: n - count) }
    func leftPadding(_ n: Int) -> String { count >= n ? " " + self : String(repeating: " ", count: n - count) + self }
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
    if let wav = a.value("--audio-wav") { o.audioWAV = wav == "none" ? nil : wav }
    if a.flag("--no-camera") { o.video = false }
    if a.flag("--no-commands") { o.commands = false }
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

func check(_ a: inout Arguments) {
    let url = a.value("--node")
    let user = a.value("--user") ?? ""
    var tls = TLSPolicy.verify
    if let pem = a.value("--insecure-trust-cert") { tls = .trustCertificate(pemPath: pem) }
    if let pin = a.value("--pin-sha256") { tls = .pinnedKey(sha256Base64: pin) }
    let uid = a.value("--uid")
    let configPath = a.value("--config")
    let secrets = a.value("--secrets")
    a.finish()
    do {
        // Like the read-side commands: the configured node, board and outputs (what `run` publishes),
        // --node and --uid overriding; with --node and no readable configuration, every output.
        let path = configPath ?? Daemon.defaultConfigPath
        let loaded = configPath != nil || url == nil || access(path, R_OK) == 0
            ? try Daemon.load(configPath: path, secretsPath: secrets) : nil
        let server: HTTPServer
        if let url {
            let password = user.isEmpty ? "" : password(for: user)
            server = HTTPServer(apiRoot: url, credentials: user.isEmpty ? .none : .basic(username: user, password: password), tls: tls)
        } else if let loaded {
            server = loaded.config.server
        } else {
            fail("check needs --node URL (the node's API root, e.g. http://host:8181/sensorhub/api) or --config FILE")
        }
        let identity: SystemIdentity
        if uid == nil, let loaded { identity = loaded.config.identity }
        else { identity = try Agent.localIdentity(uid: uid, uidExtension: "", label: nil) }
        let outputs = loaded.map(Check.configuredOutputs)
            ?? OutputCatalogue.all(OutputOptions(uid: identity.uid)).filter { $0.binaryEncoding == nil }
        let lines = try Check.run(server: server, identity: identity, outputs: outputs)
        for l in lines { print((l.ok ? "ok    " : "FAIL  ") + l.text) }
        exit(lines.allSatisfy(\.ok) ? 0 : 1)
    } catch {
        fail("\(error)", code: 1)
    }
}

/// The node password: OSH_EDGE_PASSWORD, else a prompt on the terminal (never an argument,
/// which `ps` would show).
func password(for user: String) -> String {
    if let p = getenv("OSH_EDGE_PASSWORD") { return String(cString: p) }
    guard isatty(0) != 0, let typed = getpass("password for \(user): ") else { return "" }
    return String(cString: typed)
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
    a.finish()
    do {
        // Flushed (fflush(nil): every stream): the node never exits normally and its stdout is often a pipe.
        try Agent.runDevelopmentNode(port: port, users: users, journal: journal) { print($0); fflush(nil) }
    } catch {
        fail("\(error)", code: 1)
    }
}

var args = Arguments(rest: Array(CommandLine.arguments.dropFirst()))
// `--version`/`--help` first are the usual spellings of those commands; positional() skips options.
let leadingOption = args.rest.first.flatMap { ["--version", "--help", "-h"].contains($0) ? $0 : nil }
if leadingOption != nil { args.rest.removeFirst() }
guard let command = leadingOption ?? args.positional() else {
    print(usage)
    exit(2)
}
switch command {
case "schema": schema(&args)
case "bench": bench(&args)
case "run":
    let config = args.value("--config") ?? Daemon.defaultConfigPath
    let secrets = args.value("--secrets")
    args.finish()
    exit(Daemon.run(configPath: config, secretsPath: secrets))
case "config":
    guard args.positional() == "check" else { fail("usage: osh-edge config check [FILE]") }
    let path = args.positional() ?? Daemon.defaultConfigPath
    args.finish()
    do {
        let loaded = try Daemon.load(configPath: path, secretsPath: nil)
        print("\(path): OK — node \(loaded.config.server.apiRoot), outputs \(loaded.config.outputs?.joined(separator: ", ") ?? "")")
    } catch {
        fail("\(error)", code: 1)
    }
case "nmea":
    let baud = args.value("--baud").map { Int($0) ?? 0 }
    if let b = baud, b <= 0 { fail("--baud must be a positive integer") }
    let path = args.positional()
    args.finish()
    exit(NMEACommand.run(path: path, baud: baud, notBefore: AgentSettings.defaultNotBefore))
case "levels": runLevelsCommand(args.rest)
case "declination": runDeclinationCommand(args.rest)
case "fuse": runFuseCommand(args.rest)
case "demo": demo(&args)
case "decode": runDecodeCommand(args.rest)
case "probe": runProbeCommand(args.rest)
case "calibrate": runCalibrateCommand(args.rest)
case "node": node(&args)
case "check": check(&args)
case "systems": runSystemsCommand(&args)
case "datastreams": runDatastreamsCommand(&args)
case "observations": runObservationsCommand(&args)
case "command": runCommandCommand(&args)
case "led": runLEDCommand(&args)
case "spool": runSpoolCommand(&args)
case "version", "--version":
    args.finish()
    print("osh-edge \(Agent.version)")
    for (name, version) in Agent.linkedLibraries() { print("  \(name) \(version)") }
case "help", "--help", "-h": print(usage)
default: fail("unknown command '\(command)'\n\(usage)")
}
