// The agent's settings, read from `/etc/osh-edge/osh-edge.conf`: typed, with
// defaults, validated before anything starts. Unknown sections and keys and bad values are
// refused; every problem in the file is reported at once, each naming file, line, key and
// what is allowed. `deploy/osh-edge.conf.example` documents every key.

/// How the agent trusts a node's TLS certificate.
public enum ServerTLS: Sendable, Equatable {
    /// Checked against the system's CA store (the default).
    case verify
    /// Checked against this PEM file only (a self-signed certificate or a private CA).
    case trustCertificate(path: String)
    /// The node's public key must hash to this base64 SHA-256 (of the DER SubjectPublicKeyInfo),
    /// without a `sha256//` prefix.
    case pin(sha256Base64: String)
}

/// One `[server.NAME]` section: a node the agent can stream to.
public struct ServerSettings: Sendable, Equatable {
    public var name: String
    /// The CS API root, e.g. `https://node.example.org/sensorhub/api`, without a trailing `/`.
    public var url: String
    /// Empty: no credentials are sent. The password or token is in the secrets file.
    public var user: String
    public var tls: ServerTLS
    /// Seconds.
    public var connectTimeout: Double
    /// Seconds.
    public var requestTimeout: Double
    /// How observations reach this node; registration and commands' control streams are HTTP.
    public var transport = ObservationTransportKind.http
    /// With `transport = "mqtt"`: the broker the observations go to.
    public var broker: MQTTBroker?
    /// With `transport = "mqtt"`: the broker's topic names.
    public var mqttTopics = MQTTTopics(scheme: .osh)
    /// Where the node's commands come from.
    public var commands = CommandChannelKind.websocket

    public init(
        name: String, url: String, user: String = "", tls: ServerTLS = .verify,
        connectTimeout: Double = 10, requestTimeout: Double = 30
    ) {
        self.name = name
        self.url = url
        self.user = user
        self.tls = tls
        self.connectTimeout = connectTimeout
        self.requestTimeout = requestTimeout
    }

    /// The credentials to send to this server, given the secrets file's entries:
    /// a token → Bearer; a user name → Basic (with the password, if any); else none.
    public func credentials(from secrets: [String: Secret]) -> CSCredentials {
        switch secrets[name] {
        case .token(let t)?: return .bearer(token: t)
        case .password(let p)?: return user.isEmpty ? .none : .basic(username: user, password: p)
        case nil: return user.isEmpty ? .none : .basic(username: user, password: "")
        }
    }
}

/// `[system]`: how the board names itself on the node. Empty strings mean "the default".
public struct SystemSettings: Sendable, Equatable {
    /// The whole UID; empty = `urn:osh:rpi:<board serial>`.
    public var uid: String
    /// Appended as `urn:osh:rpi:<serial>:<extension>` when `uid` is empty.
    public var uidExtension: String
    /// Empty = `Raspberry Pi Sensors [<hostname>]` (`Linux Sensors [...]` off a Pi: SystemIdentity.defaultLabel).
    public var label: String
    /// Empty = leave the board's hostname alone; otherwise the image's first boot sets it.
    public var hostname: String

    public init(uid: String = "", uidExtension: String = "", label: String = "", hostname: String = "") {
        self.uid = uid
        self.uidExtension = uidExtension
        self.label = label
        self.hostname = hostname
    }

    /// One RFC 1123 label in lower case: 1–63 of a–z, 0–9 and '-', not starting or ending with '-'.
    public static func isValidHostname(_ name: String) -> Bool {
        let b = Array(name.utf8)
        guard (1...63).contains(b.count), b.first != UInt8(ascii: "-"), b.last != UInt8(ascii: "-") else { return false }
        return b.allSatisfy {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                || $0 == UInt8(ascii: "-")
        }
    }
}

/// Where an output's values come from.
public enum OutputSource: String, Sendable, CaseIterable {
    case hardware
    /// The demo's simulated sensor: try a node before wiring hardware.
    case simulated
}

/// One `[outputs.NAME]` section.
public struct OutputSettings: Sendable, Equatable {
    public var enabled: Bool
    /// Hz (frames per second for the camera).
    public var rate: Double
    public var source: OutputSource

    public init(enabled: Bool, rate: Double, source: OutputSource = .hardware) {
        self.enabled = enabled
        self.rate = rate
        self.source = source
    }

    /// The output's declared defaults (`OutputDeclarations`): only `device_health` is on.
    public static func defaults(for output: String) -> OutputSettings {
        guard let d = OutputDeclarations.declaration(settingsKey: output) else { return OutputSettings(enabled: false, rate: 10) }
        return OutputSettings(enabled: d.enabledByDefault, rate: d.defaultRate)
    }

    /// Allowed live rates, as the output declares them (the camera 1 to 25 fps).
    static func rateRange(for output: String) -> (ClosedRange<Double>, lowerExclusive: Bool, unit: String) {
        let r = OutputDeclarations.declaration(settingsKey: output)?.liveRates ?? .upTo(100)
        return (r.range, r.lowerExclusive, r.unit)
    }
}

/// Everything in `osh-edge.conf`.
public struct AgentSettings: Sendable, Equatable {
    public static let defaultPath = "/etc/osh-edge/osh-edge.conf"
    /// The `[outputs.NAME]` names, as `OutputDeclarations` lists them. The raw inertial outputs
    /// are published as `<chip>_Accelerometer_data` etc.
    public static let outputNames = OutputDeclarations.all.map(\.settingsKey)
    static let defaultOutputs = Dictionary(uniqueKeysWithValues: outputNames.map { ($0, OutputSettings.defaults(for: $0)) })
    public static let logLevels = ["error", "warning", "notice", "info", "debug"]
    /// 2026-01-01T00:00:00Z.
    public static let defaultNotBefore: Double = 1_767_225_600

    /// Every `[server.NAME]`, in file order.
    public var servers: [ServerSettings]
    /// The one `[node] active` names (or the only one).
    public var activeServer: ServerSettings
    public var system: SystemSettings
    /// format, batch_max, flush_interval (backoff and jitter keep their defaults).
    public var publisher: PublisherSettings
    /// Scalar observations held while the node is unreachable.
    public var ringCapacity: Int
    /// Store-and-forward to the state directory during outages (off by default: SD-card wear).
    public var spool = SpoolSettings()
    /// `[record]`, `[record.NAME]`: the board's own recording for the node to pull (off by default).
    public var record = RecordSettings()
    /// Hold observations until the clock is synchronised.
    public var requireClockSync: Bool
    /// Never stamp a time before this (epoch seconds).
    public var notBefore: Double
    /// Every name in `outputNames`, with defaults filled in.
    public var outputs: [String: OutputSettings]
    public var north: NorthReference
    /// error, warning, notice, info or debug.
    public var logLevel: String
    public var stateDirectory: String
    /// `[paths] counters_file`: every datastream's counters for scripts, rewritten once a second.
    /// Nil (unset): `$RUNTIME_DIRECTORY/counters` when systemd gives one, else none; "" = none.
    public var countersFile: String?
    /// `[gps]`: the receiver behind gps_data.
    public var gps = GPSSettings()
    /// `[i2c]`, `[barometer]`, `[imu]`, fusion keys of `[orientation]`, `[audio]`, `[camera]`, `[led]`.
    public var devices = DeviceConfig()

    /// All defaults, streaming to `server`.
    public init(server: ServerSettings) {
        servers = [server]
        activeServer = server
        system = SystemSettings()
        publisher = PublisherSettings()
        ringCapacity = 1000
        requireClockSync = true
        notBefore = Self.defaultNotBefore
        outputs = Self.defaultOutputs
        north = .true
        logLevel = "info"
        stateDirectory = "/var/lib/osh-edge"
    }

    /// Reads the file's bytes; `path` is only used in messages. Throws every problem at once.
    /// `fileProblem` says what is wrong with a file the configuration names (a TLS certificate)
    /// as it would be found at start, nil when it is fine; `run` and `config check` pass the
    /// real one, so the check refuses what the start would (this target does no I/O itself).
    /// `readProfile` reads the board profile `[system] profile` names (its path) — the file's
    /// bytes, or nil when there is none; without it a `profile` key is refused.
    /// `chips`: the chips this build drives (OSHPlatform's `ChipTable.known`).
    public static func parse(
        bytes: [UInt8], path: String, chips: KnownChips,
        fileProblem: ((String) -> String?)? = nil,
        profileDirectory: String = BoardProfile.installedDirectory,
        readProfile: ((String) throws -> [UInt8]?)? = nil
    ) throws(ConfigErrors) -> AgentSettings {
        let (doc, syntax) = ConfigParser.parseRecovering(bytes: bytes, path: path)
        // The reader gave up (far too many errors): what it read is incomplete, check no more.
        if syntax.count > ConfigParser.maxErrors || syntax.contains(where: { $0.line == nil }) {
            throw ConfigErrors(syntax)
        }
        let profile = BoardProfile.apply(to: doc, path: path, directory: profileDirectory, read: readProfile)
        var r = SettingsReader(path: path, chips: chips)
        r.fileProblem = fileProblem
        r.profilePaths = profile.paths
        let settings = r.read(profile.doc)
        let all = Self.ordered(syntax + r.errors) + profile.errors
        if !all.isEmpty { throw ConfigErrors(all) }
        guard let settings else { throw ConfigErrors([ConfigError(path: path, line: nil, message: "no usable server")]) }
        return settings
    }

    /// The `[led]` section of a file that is refused as a whole, when that section itself is sound
    /// and names a line: the agent can still show "configuration error" on the LED.
    public static func ledSettings(bytes: [UInt8], path: String) -> LEDSettings? {
        let (doc, _) = ConfigParser.parseRecovering(bytes: bytes, path: path)
        let sections = doc.sections.filter { $0.name == ["led"] }
        guard sections.count == 1, let s = sections.first, !s.isDamaged else { return nil }
        // Only [led] is read: no chip names are checked.
        var r = SettingsReader(path: path, chips: KnownChips(barometers: [], imus: [], magnetometers: []))
        var d = DeviceConfig()
        r.checkKeys(s, known: LEDSettings.keys)
        r.readDevices(s, kind: "led", into: &d)
        guard r.errors.isEmpty, d.led.enabled else { return nil }
        return d.led
    }

    /// By line (whole-file problems last), keeping the order found within a line; capped.
    static func ordered(_ errors: [ConfigError]) -> [ConfigError] {
        let sorted = errors.enumerated().sorted { a, b in
            let la = a.element.line ?? Int.max, lb = b.element.line ?? Int.max
            return la != lb ? la < lb : a.offset < b.offset
        }.map(\.element)
        guard sorted.count > ConfigParser.maxErrors else { return sorted }
        return Array(sorted.prefix(ConfigParser.maxErrors)) + [
            ConfigError(
                path: sorted[0].path, line: nil,
                message: "… and \(sorted.count - ConfigParser.maxErrors) more errors")
        ]
    }
}

/// `[gps]`: a receiver on a serial port (automatic baud by default), or a running gpsd.
public struct GPSSettings: Sendable, Equatable {
    public static let bauds = [4800, 9600, 19_200, 38_400, 57_600, 115_200, 230_400, 460_800, 921_600]
    /// `/dev/serial0` is the Pi's primary UART, whichever chip it maps to.
    public var device = "/dev/serial0"
    /// 0 = try 9600, 38400, 115200, 4800, 57600, 230400 until valid NMEA arrives.
    public var baud = 0
    /// A gpsd to read instead of the device (nil = read the device), parsed once by the reader.
    public var gpsd: GPSDAddress?
    public init() {}
}

/// `[gps] gpsd = "HOST:PORT"` with a numeric address (or localhost), as the reader checked it.
public struct GPSDAddress: Sendable, Equatable {
    public var host: String
    public var port: UInt16

    /// nil when `text` is not HOST:PORT with a numeric host ("[::1]:2947" and "localhost:2947" are).
    public init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]), port > 0 else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard host == "localhost" || host.allSatisfy({ $0.isHexDigit || $0 == "." || $0 == ":" }), !host.isEmpty else { return nil }
        self.host = host == "localhost" ? "127.0.0.1" : host
        self.port = port
    }
}
