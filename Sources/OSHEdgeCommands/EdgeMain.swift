// osh-edge's command line, as a library so that osh-edge and osh-edge-sim (the same commands
// with the simulated sources installed first) run one main. Parses arguments, calls one
// function in OSHAgent, prints.
#if canImport(Glibc)
import Glibc
#endif
import OSHAgent
import OSHCore
import OSHPlatform

let usage = """
    usage: \(programName) <command> [options]

    commands:
      schema [OUTPUT]      print the datastream body the agent POSTs for OUTPUT
             --all         every output, one JSON document per line (the default)
             --list        the output names and their observation formats
             --system      the SensorML system body   --feature   the sampling feature body
             --uid UID  --uid-extension EXT  --label LABEL  --north true|magnetic
             --format om+json|swe+json  --video-size WxH  --imu CHIP  --baro CHIP
             --valid-from ISO-TIME  --pretty
      run                  the agent as a service  --config FILE (default /etc/osh-edge/osh-edge.conf)
                           --secrets FILE (default /etc/osh-edge/secrets)
      config check [FILE]  validate a configuration file (every error with file:line)
      status               what the running service is doing: per output produced, sent, queued, spooled,
                           dropped and why; the node link; the clock — from its counters file
                           (--counters FILE, or --config FILE's [paths] counters_file; default
                           /run/osh-edge/counters)  --json; exit 3 when the service is not running
      nmea [FILE|-]        decode NMEA 0183 (a log, stdin or a serial device) into one JSON line per
                           fix and a final counts line   --baud N (for a device, default 9600)
      levels FILE.wav|DEVICE  per window, the rmsdB/peakdB audio_level would publish (a WAV read
                           directly, or an ALSA capture device until Ctrl-C)
             --window S (0.1–1, default 0.1)  --json (one object per line)  --duration S (device)
      check                can this board reach the node, are the credentials right, is it registered with
                           the datastreams its configuration publishes  --config FILE --secrets FILE (defaults
                           as for run) | --node URL [--user NAME] [--insecure-trust-cert PEM | --pin-sha256 BASE64]
             [--uid UID]
      systems              the node's systems, live (newest observation ≤ 5 min) / stale (≤ 30 min) / offline
             [--limit N]
      datastreams SYSTEM   a system's datastreams (SYSTEM: id or UID) with their newest observation time
      controlstreams SYSTEM   its control streams: the ids `command` takes and the commands each offers
      schema --remote DATASTREAM   a datastream's schema as the node holds it  [--format om+json|swe+json|swe+binary]
      observations DATASTREAM      its newest records whatever their age, decoded with its schema (DATASTREAM:
                           an id, or an output name with --system SYSTEM or --config FILE)
             [--latest N] (default 10) | --current (resultTime=latest)  [--format om+json|swe+json|swe+binary]
      command CONTROLSTREAM '{"rpan":3.0}'   send a command; prints its id and its outcome, read back from
                           the node's status reports (--wait S, default 12: how long to wait for a final one);
                           exit 1 when nobody received it or it ended REJECTED, FAILED or CANCELED
                           these six: --node URL [--user NAME] (password from OSH_EDGE_PASSWORD), TLS options as
                           for check, or the configured node (--config FILE --secrets FILE); --json for JSON
      decode CHIP CALIBRATION_HEX RAW_HEX   a barometer's values from register bytes as i2cdump shows
                           them (\(BarometerDrivers.names.joined(separator: " ")); run without bytes for the layouts)
             --json        one JSON object instead of the table
      probe                the I²C chips (by address + ID register), ALSA capture devices and V4L2
                           cameras/encoders on this board, and the config sections that would use them
             --bus N  --dump (each barometer's register bytes and decoded values)  --json
      calibrate mag        turn the board through every orientation; prints mag_offset/mag_matrix for
                           [orientation]   --seconds S (default 60)  --json  --config FILE
                           --bus N --chip NAME --address 0xNN
      declination LAT LON [ALT_KM] [DATE]   WMM2025 field (D, I, H, X, Y, Z, F) like NOAA's calculator
                           DATE: decimal year or YYYY-MM-DD (default today)   --json
      fuse < samples.csv   orientation fusion over recorded raw samples (t,gx,gy,gz,ax,ay,az[,mx,my,mz])
             --algorithm madgwick|mahony  --gain G  --ki KI  --rate HZ  --mag-unit uT|nT
             --mounting x=-y,y=x,z=z|z90|…  --no-bias  --json
      led                  show a status-LED pattern to check the wiring  --chip C (default gpiochip0)
             --line N (default 17)  --active-low  --show identify|STATE  --seconds S (default 10)
             --config FILE (its [led] section, even if the rest of the file is refused)
      spool [status|dump]  what the store-and-forward spool holds (read only; safe while running)
             --config FILE (its state_directory) | --dir DIR   --json
      record status        the on-board recording: per output its time range, records, segments, size;
                           the total and the bound; whether the running service's writes work (its
                           counters file, --counters FILE) (read only; safe while running)   --json
      record export --from TIME --to TIME --output NAME FILE   one output's recorded window: video as an
                           Annex-B .h264 (from the key frame at or before --from), scalars as CSV
                           (TIME: ISO-8601 with a zone); FILE - is standard output; an existing FILE needs
                           --force   both: --config FILE (its state_directory) | --dir DIR (the state
                           directory or its record/)
      version (--version)  this build and the C libraries it is linked with
      help                 this text

    demo, node, bench and calibrate mag --simulated: in osh-edge-dev, the development executable
    (not in the .deb): swift run osh-edge-dev demo   (try a node without hardware)
    """

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
        identity = try Agent.localIdentity(
            uid: a.value("--uid"), uidExtension: a.value("--uid-extension") ?? "",
            label: a.value("--label"))
    } catch {
        fail("\(error)", code: 1)
    }
    if let name = a.positional() { what = .output(name) }
    a.finish()
    var request = SchemaRequest(
        what: what, identity: identity,
        options: OutputOptions(
            uid: identity.uid, north: north, videoWidth: width, videoHeight: height,
            imuChip: imu, magnetometerChip: ChipTable.known.builtInMagnetometer(imu) ?? imu,
            barometerChip: baro),
        validFrom: validFrom)
    request.format = format
    request.pretty = pretty
    do {
        for doc in try SchemaCommand.documents(request) { print(doc) }
    } catch {
        fail("\(error)", code: 1)
    }
}

func check(_ a: inout Arguments) {
    let node = NodeArguments(&a)
    let url = node.url
    let uid = a.value("--uid")
    let configPath = a.value("--config")
    let secrets = a.value("--secrets")
    a.finish()
    do {
        // Like the read-side commands: the configured node, board and outputs (what `run` publishes),
        // --node and --uid overriding; with --node and no readable configuration, every output.
        let path = configPath ?? Daemon.defaultConfigPath
        let loaded =
            configPath != nil || url == nil || access(path, R_OK) == 0
            ? try Daemon.load(configPath: path, secretsPath: secrets, forRunning: false) : nil
        let server: NodeEndpoint
        if let url {
            server = node.server(url)
        } else if let loaded {
            server = loaded.config.server
        } else {
            fail("check needs --node URL (the node's API root, e.g. http://host:8181/sensorhub/api) or --config FILE")
        }
        let identity: SystemIdentity
        if uid == nil, let loaded {
            identity = loaded.config.identity
        } else {
            identity = try Agent.localIdentity(uid: uid, uidExtension: "", label: nil)
        }
        // Without a configuration the board's outputs are unknown: what the node holds is listed, not judged.
        let outputs = loaded.map(Check.configuredOutputs)
        // The broker too when the configuration sends observations over MQTT (not with --node alone).
        let mqtt = url == nil ? loaded?.config.mqtt : nil
        var lines = try Check.run(server: server, identity: identity, outputs: outputs, mqtt: mqtt)
        if let loaded {
            let service = ServiceStatus.countersPath(loaded.settings).flatMap { try? ServiceStatus.read($0) }
            lines.append(Check.clockLine(loaded.settings, service: service, now: Clock.realtimeSeconds()))
        }
        for l in lines { print((l.ok ? "ok    " : "FAIL  ") + l.text) }
        exit(lines.allSatisfy(\.ok) ? 0 : 1)
    } catch {
        fail("\(error)", code: 1)
    }
}

/// osh-edge's main: the command named on the command line, then exit.
public func runOSHEdgeCommandLine() {
    let line = commandLine(usage: usage)
    let command = line.command
    var args = line.arguments
    switch command {
    case "schema": schema(&args)
    case "run": runServiceCommand(&args)
    case "config": runConfigCommand(&args)
    case "nmea":
        let baud = args.value("--baud").map { Int($0) ?? 0 }
        if let b = baud, b <= 0 { fail("--baud must be a positive integer") }
        let path = args.positional()
        args.finish()
        exit(NMEACommand.run(path: path, baud: baud, notBefore: AgentSettings.defaultNotBefore))
    case "levels": runLevelsCommand(args.rest)
    case "declination": runDeclinationCommand(args.rest)
    case "fuse": runFuseCommand(args.rest)
    case "demo", "node", "bench":
        // Development commands live in the development executable, not in the binary the .deb ships.
        fail("\(command) is in the development executable: osh-edge-dev \(command) (swift run osh-edge-dev \(command))")
    case "decode": runDecodeCommand(args.rest)
    case "probe": runProbeCommand(args.rest)
    case "calibrate": runCalibrateCommand(args.rest)
    case "check": check(&args)
    case "systems": runSystemsCommand(&args)
    case "datastreams": runDatastreamsCommand(&args)
    case "controlstreams": runControlStreamsCommand(&args)
    case "status": runStatusCommand(&args)
    case "observations": runObservationsCommand(&args)
    case "command": runCommandCommand(&args)
    case "led": runLEDCommand(&args)
    case "spool": runSpoolCommand(&args)
    case "record": runRecordCommand(&args)
    case "version", "--version": printVersion(&args)
    case "help", "--help", "-h": print(usage)
    default: fail("unknown command '\(command)'\n\(usage)")
    }
}
