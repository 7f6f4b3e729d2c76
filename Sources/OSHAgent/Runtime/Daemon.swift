import OSHCore
import OSHPlatform
#if canImport(Glibc)
import Glibc
#endif

/// `osh-edge run --config FILE`: the agent as a service. The file is checked whole before
/// anything starts; SIGHUP re-reads it (a bad file is refused and the agent keeps running
/// with the old one); SIGTERM/SIGINT stop after flushing what the node takes within 5 s.
public enum Daemon {
    public static let defaultConfigPath = "/etc/osh-edge/osh-edge.conf"
    public static let defaultSecretsPath = "/etc/osh-edge/secrets"

    /// Outputs that are published only when their device answers.
    /// Outputs published only when their device answered.
    static let deviceKinds = Set(
        OutputDeclarations.all.filter { [.imu, .barometer, .climate, .audio, .camera].contains($0.device) }.map(\.kind))

    public struct Loaded {
        public var settings: AgentSettings
        /// Outputs and rates as configured; `open` narrows them to the devices found.
        public var config: AgentConfig
        public var plan: HardwarePlan
    }

    /// Reads and validates everything `run` needs; the error text names file, line and key.
    /// `forRunning: false` (`check`) reads what is configured even when this binary could not
    /// run it (simulated sources without a linked simulation).
    public static func load(configPath: String, secretsPath: String?, forRunning: Bool = true) throws -> Loaded {
        let read: [UInt8]?
        do { read = try StateFiles.read(configPath, limit: ConfigParser.maxFileSize) } catch let e as StateFiles.TooLarge {
            throw DaemonError.message("\(e) (a configuration is a few kilobytes: is this the right file?)")
        }
        guard let bytes = read else {
            throw DaemonError.message(
                "\(configPath): no such file; start from the example the package installs, "
                    + "/usr/share/doc/osh-edge/examples/osh-edge.conf.example (deploy/ in the source)")
        }
        let settings = try AgentSettings.parseFile(bytes: bytes, path: configPath, fileProblem: Self.unreadableFile)
        if forRunning { try SimulationHooks.check(settings, path: configPath, bytes: bytes) }
        let server = try configuredServer(settings, secretsPath: secretsPath)
        let identity = try Agent.localIdentity(
            uid: settings.system.uid.isEmpty ? nil : settings.system.uid,
            uidExtension: settings.system.uidExtension,
            label: settings.system.label.isEmpty ? nil : settings.system.label)
        // Named for the configured chips (what `run` finds may rename them: "auto" found an ICM-20948).
        let d = settings.devices
        func named(_ chip: String) -> String? { chip == "auto" || chip == "none" ? nil : chip }
        let imu = named(d.imu.chip) ?? "MPU9250"
        let options = OutputOptions(
            uid: identity.uid, north: settings.north, imuChip: imu,
            magnetometerChip: named(d.imu.magnetometer) ?? ChipTable.known.builtInMagnetometer(imu) ?? imu,
            barometerChip: named(d.barometer.chip) ?? "BMP280")
        var config = AgentConfig(server: server, identity: identity, options: options, stateDirectory: settings.stateDirectory)
        let active = settings.activeServer
        if active.transport == .mqtt, let broker = active.broker {
            if active.mqttTopics.scheme == .osh, settings.publisher.format != .omJSON {
                throw DaemonError.message(
                    "[server.\(active.name)] mqtt_topics = \"osh\": OSH's MQTT service reads O&M JSON observations only; "
                        + "set [publisher] format = \"om+json\", or mqtt_topics = \"part3\" (its topics name the format)")
            }
            config.mqtt = MQTTTransportConfig(
                broker: broker, topics: active.mqttTopics, clientID: identity.uid, credentials: server.credentials,
                tls: server.tls)
            config.mqtt?.commands = active.commands == .mqtt
        }
        config.publisher = settings.publisher
        config.ringCapacity = settings.ringCapacity
        config.spool = settings.spool
        config.trustHostClock = !settings.requireClockSync
        config.notBefore = settings.notBefore
        config.record = settings.record
        var enabled: [String] = []
        for spec in OutputCatalogue.all(options) {
            guard let o = settings.outputs[spec.kind.settingsKey], o.enabled else { continue }
            enabled.append(spec.outputName)
            config.rates[spec.outputName] = o.rate
            config.recordRates[spec.outputName] = recordRate(settings, spec.kind)
        }
        if enabled.isEmpty { throw DaemonError.message("\(configPath): no output is enabled; enable at least [outputs.device_health]") }
        config.outputs = enabled
        return Loaded(settings: settings, config: config, plan: plan(settings))
    }

    /// What keeps this process from reading `path`, in the words the start would fail with.
    static func unreadableFile(_ path: String) -> String? {
        guard access(path, R_OK) != 0 else { return nil }
        let e = Errno(errno)
        return e.text
            + (e == .noSuchFile
                ? "; copy the node's certificate (PEM) there, or set the right path"
                : "; the service user must be able to read it (chmod 644, or chgrp osh-edge)")
    }

    /// An enabled output's recording rate: its `[record.NAME] rate`, or with no `[record.NAME]`
    /// sections at all its live rate; nil when it is not recorded (or recording is off).
    static func recordRate(_ settings: AgentSettings, _ kind: OutputKind) -> Double? {
        let r = settings.record
        guard r.enabled, let o = settings.outputs[kind.settingsKey], o.enabled else { return nil }
        return r.rates.isEmpty ? o.rate : r.rates[kind.settingsKey]
    }

    /// The active `[server.*]` section as libcurl's client takes it: the one place the parsed TLS
    /// choice becomes a policy and the secrets become credentials (`run`, `check`, the read side).
    static func configuredServer(_ settings: AgentSettings, secretsPath: String?) throws -> NodeEndpoint {
        let server = settings.activeServer
        let tls: TLSPolicy
        switch server.tls {
        case .verify: tls = .verify
        case .trustCertificate(let path): tls = .trustCertificate(pemPath: path)
        case .pin(let b64): tls = .pinnedKey(sha256Base64: b64)
        }
        let (secrets, secretsFile) = try loadSecrets(path: secretsPath)
        // Each of these used to end in the node's 401 with no word of the real cause.
        if let file = secretsFile {
            let names = Set(settings.servers.map(\.name))
            for name in secrets.keys.sorted() where !names.contains(name) {
                Log.warning(
                    "\(file): [server.\(name)] names no server in the configuration (its servers: "
                        + settings.servers.map { "[server.\($0.name)]" }.joined(separator: ", ") + "); that secret is not used")
            }
        }
        if case .password? = secrets[server.name], server.user.isEmpty {
            throw DaemonError.message(
                "\(secretsFile ?? "the secrets file") has a password for [server.\(server.name)], but the configuration "
                    + "sets no user: add user = \"NAME\" to [server.\(server.name)]")
        }
        return NodeEndpoint(
            apiRoot: server.url, credentials: server.credentials(from: secrets), tls: tls,
            connectTimeout: server.connectTimeout, requestTimeout: server.requestTimeout)
    }

    /// Which device groups run, and from what: a group runs when any of its outputs is enabled,
    /// with that output's source (hardware = the board's device, simulated = the demo's).
    static func plan(_ settings: AgentSettings) -> HardwarePlan {
        var p = HardwarePlan()
        p.devices = settings.devices
        p.north = settings.north
        p.scratchDirectory = settings.stateDirectory
        func output(_ k: OutputKind) -> OutputSettings? { settings.outputs[k.settingsKey] }
        func source(_ kinds: [OutputKind]) -> HardwarePlan.Source? {
            guard let o = kinds.compactMap(output).first(where: { $0.enabled }) else { return nil }
            return o.source == .hardware ? .board : .simulated
        }
        // A device recorded faster than it streams runs at the recording's rate; the gate thins the live stream.
        func recorded(_ k: OutputKind) -> Double { settings.record.enabled ? settings.record.rates[k.settingsKey] ?? 0 : 0 }
        // Temperature and humidity come from a hygrometer when one answers ([hygrometer] chip, "auto"
        // by default: looked for only when they are on), else from the barometer.
        let climate = OutputDeclarations.kinds(of: .climate)
        if settings.devices.hygrometer.chip != "none" {
            p.hygrometer = source(climate)
            p.hygrometerRate = max(climate.compactMap(output).filter(\.enabled).map(\.rate).max() ?? 1, climate.map(recorded).max() ?? 0)
        }
        let fromBarometer = OutputDeclarations.kinds(of: .barometer) + climate
        p.barometer = source(fromBarometer)
        p.barometerOutputs = fromBarometer.filter { output($0)?.enabled ?? false }.map(\.settingsKey)
        p.barometerRate = max(
            fromBarometer.compactMap(output).filter(\.enabled).map(\.rate).max() ?? 1,
            fromBarometer.map(recorded).max() ?? 0)
        p.imu = source(OutputKind.inertial)
        // The filter runs at 100 Hz whatever the outputs' rates (they are thinned), faster if asked.
        p.imuRate = max(
            100, OutputKind.inertial.compactMap(output).filter(\.enabled).map(\.rate).max() ?? 100,
            OutputKind.inertial.map(recorded).max() ?? 0)
        p.flushInterval = settings.publisher.flushInterval
        if let m = output(.magnetometer), m.enabled { p.magnetometerRate = max(m.rate, recorded(.magnetometer)) }
        p.audio = source([.audioLevel])
        // A simulated microphone replays the WAV [audio] device names (looped, in real time).
        if p.audio == .simulated, settings.devices.audio.device.lowercased().hasSuffix(".wav") {
            p.audioWAV = settings.devices.audio.device
        }
        p.camera = source([.video])
        p.cameraFPS = output(.video)?.rate ?? 10
        p.recordCamera(liveFPS: p.cameraFPS, recordFPS: recorded(.video))
        p.ptz = settings.devices.ptz.chip == "none" ? nil : .board
        if let o = output(.gps), o.enabled, o.source == .hardware {
            let g = settings.gps
            p.gps = g.gpsd.map { .gpsd(host: $0.host, port: $0.port) } ?? .serial(path: g.device, baud: g.baud == 0 ? nil : g.baud)
        }
        p.notBefore = settings.notBefore
        return p
    }

    /// Opens the devices, narrows the outputs to what was found, and builds the runtime.
    static func startAgent(_ loaded: Loaded, loop: EventLoop) throws -> (AgentRuntime, Hardware) {
        let hardware = Hardware(loop: loop, plan: loaded.plan)
        hardware.open()
        for n in hardware.notes { Log.warning(n) }
        var config = loaded.config
        config.options = hardware.options(config.options)
        let found = Set(hardware.catalogueNames(config.options))
        let feeds = Set(hardware.feeds)
        let wanted = Set(config.outputs ?? [])
        let wantedKinds = Set(OutputCatalogue.all(loaded.config.options).filter { wanted.contains($0.outputName) }.map(\.kind))
        let catalogue = OutputCatalogue.all(config.options)
        // Device outputs only when their device answered; renamed for the chip found (MPU9250_… → ICM20948_…).
        config.outputs = catalogue.filter { spec in
            deviceKinds.contains(spec.kind)
                ? feeds.contains(spec.kind) && wantedKinds.contains(spec.kind) : wanted.contains(spec.outputName)
        }.map(\.outputName)
        // Outputs renamed for the chip found take the rate configured under their config key.
        for spec in catalogue where config.rates[spec.outputName] == nil && (config.outputs ?? []).contains(spec.outputName) {
            config.rates[spec.outputName] = loaded.settings.outputs[spec.kind.settingsKey]?.rate
            config.recordRates[spec.outputName] = recordRate(loaded.settings, spec.kind)
        }
        config.externalOutputs = found
        config.video = hardware.hasVideo && wantedKinds.contains(.video)
        config.extraSpecs = hardware.extraSpecs
        config.commands = true
        let agent: AgentRuntime
        do { agent = try AgentRuntime(config: config, loop: loop) } catch {
            hardware.stop()
            throw error
        }
        agent.extraControls = hardware.extraControls(systemLabel: config.identity.label)
        return (agent, hardware)
    }

    /// Configured device files that are not there: each said with its fix (the agent still
    /// starts — the GPS source retries, a USB receiver may be plugged in later). Returns the
    /// fatal ones: a board device the config names that is not there is a configuration error,
    /// refused before anything starts (systemd retries).
    static func checkDevices(_ settings: AgentSettings) -> [String] {
        let findings = DeviceCheck.run(DeviceRequirement.list(settings, led: settings.devices.led))
        for f in findings where !f.fatal { Log.warning(f.message) }
        return findings.filter(\.fatal).map(\.message)
    }

    /// Builds what a configuration needs that takes no device — the node's HTTP client (URL,
    /// TLS certificate, pinned key) and an encoder per configured output — so that a reload that
    /// cannot work is refused while the running agent still runs. The runtime itself cannot be
    /// built ahead: it needs the devices found and the spool directory the running agent holds.
    static func preflight(_ loaded: Loaded, loop: EventLoop) throws {
        _ = try HTTPClient(loop: loop, server: loaded.config.server)
        let wanted = loaded.config.outputs.map(Set.init)
        for spec in OutputCatalogue.all(loaded.config.options)
        where spec.binaryEncoding == nil && wanted?.contains(spec.outputName) ?? true {
            _ = try ObservationEncoder(spec: spec, format: loaded.config.publisher.format)
        }
    }

    /// Secrets from the systemd credential (`$CREDENTIALS_DIRECTORY/osh-edge-secrets`) or the root-only
    /// file; a file others can read is refused rather than used.
    /// The secrets and the file they came from (nil: none found). A file named on the command line
    /// must exist.
    static func loadSecrets(path: String?) throws -> ([String: Secret], String?) {
        if let path, access(path, F_OK) != 0, getenv("CREDENTIALS_DIRECTORY") == nil {
            throw DaemonError.message(
                "--secrets \(path): no such file; give the file that holds the node's password "
                    + "(default \(defaultSecretsPath))")
        }
        var candidates: [String] = []
        if let dir = getenv("CREDENTIALS_DIRECTORY").map({ String(cString: $0) }), !dir.isEmpty {
            candidates.append(dir + "/osh-edge-secrets")
        }
        candidates.append(path ?? defaultSecretsPath)
        for p in candidates {
            guard let bytes = try StateFiles.read(p) else { continue }
            var st = stat()
            if stat(p, &st) == 0, st.st_mode & 0o077 != 0 {
                throw DaemonError.message(
                    "\(p) is readable by group or others (mode \(String(st.st_mode & 0o777, radix: 8))); "
                        + "run: chmod 600 \(p)")
            }
            return (try Secrets.parse(bytes: bytes, path: p), p)
        }
        return ([:], nil)
    }

    /// Runs until SIGTERM/SIGINT. Returns the process exit code.
    public static func run(configPath: String, secretsPath: String?) -> Int32 {
        // Before the devices start library threads (they inherit the mask).
        EventLoop.blockSignals([SIGTERM, SIGINT, SIGHUP])
        let loaded: Loaded
        do {
            loaded = try load(configPath: configPath, secretsPath: secretsPath)
        } catch {
            Log.error("\(error)")
            let bytes = (try? StateFiles.read(configPath)).flatMap { $0 }
            StatusLED.showConfigError(bytes.flatMap { AgentSettings.ledSettings(bytes: $0, path: configPath) })
            return 2
        }
        Log.threshold = logLevel(loaded.settings.logLevel)
        CameraStart.restartForLibcameraIfNeeded(loaded.settings.devices.camera, plan: loaded.plan)
        // Held for the whole process (reloads included); the kernel releases it at exit.
        let stateLock: StateDirectoryLock
        do {
            stateLock = try StateDirectoryLock.acquire(directory: loaded.settings.stateDirectory)
        } catch {
            Log.error("\(error)")
            return 1
        }
        defer { withExtendedLifetime(stateLock) {} }
        let fatal = checkDevices(loaded.settings)
        if !fatal.isEmpty {
            for m in fatal { Log.error(m) }
            StatusLED.showConfigError(loaded.settings.devices.led)
            return 2
        }
        do {
            let session = try DaemonSession(loaded: loaded, configPath: configPath, secretsPath: secretsPath)
            let code = try session.run(loaded)
            if session.restartRequested, code == 0, let layer = LibcameraLayer.restartedWith ?? LibcameraLayer.find() {
                Log.notice("starting again, with libcamera's V4L2 layer, to wait for the camera")
                Log.error("camera: \(LibcameraLayer.restart(with: layer))")
                return 1
            }
            return code
        } catch {
            Log.error("\(error)")
            return 1
        }
    }

    /// SIGHUP's configuration: read, its devices checked, and built as far as it can be without
    /// them, all before the running agent is touched. Throws what is wrong with it.
    static func reload(configPath: String, secretsPath: String?, loop: EventLoop, running: AgentSettings) throws -> Loaded {
        let fresh = try load(configPath: configPath, secretsPath: secretsPath)
        let fatal = checkDevices(fresh.settings)
        if !fatal.isEmpty { throw DaemonError.message(fatal.joined(separator: "; ")) }
        try preflight(fresh, loop: loop)
        let changed = changes(from: running, to: fresh.settings)
        Log.notice("reloading \(configPath): " + (changed.isEmpty ? "nothing changed" : "changed " + changed.joined(separator: "; ")))
        return fresh
    }

    /// What a reload changes, for its log line: each output whose settings differ (enabled, rate,
    /// source), then the other settings by name (`publisher`, `servers`, `devices` …).
    static func changes(from a: AgentSettings, to b: AgentSettings) -> [String] {
        var out: [String] = []
        for name in Set(a.outputs.keys).union(b.outputs.keys).sorted() where a.outputs[name] != b.outputs[name] {
            let was = a.outputs[name], now = b.outputs[name]
            if was?.enabled != now?.enabled {
                out.append("\(name) \(now?.enabled == true ? "enabled" : "disabled")")
            } else if was?.rate != now?.rate {
                out.append("\(name) rate \(was.map { "\($0.rate)" } ?? "-") → \(now.map { "\($0.rate)" } ?? "-") Hz")
            } else {
                out.append("[outputs.\(name)]")
            }
        }
        let old = Dictionary(
            Mirror(reflecting: a).children.compactMap { c in c.label.map { ($0, String(describing: c.value)) } },
            uniquingKeysWith: { x, _ in x })
        for c in Mirror(reflecting: b).children {
            guard let label = c.label, label != "outputs", old[label] != String(describing: c.value) else { continue }
            out.append(label)
        }
        return out
    }

    /// What runs for one configuration.
    struct Running {
        let agent: AgentRuntime
        let hardware: Hardware
    }

    static func logLevel(_ s: String) -> Log.Level {
        switch s {
        case "error": return .error
        case "warning": return .warning
        case "notice": return .notice
        case "debug": return .debug
        default: return .info
        }
    }
}

public enum DaemonError: Error, CustomStringConvertible {
    case message(String)
    public var description: String { if case .message(let m) = self { return m }; return "" }
}
