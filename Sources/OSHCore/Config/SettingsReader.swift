// Decodes a parsed osh-edge.conf into AgentSettings: the schema (sections, keys, types,
// ranges), the cross-checks, and the messages with their suggestions. Collects every problem.

struct SettingsReader {
    let path: String
    /// The chips this build drives (the driver table's), for `[barometer]` and `[imu]`.
    let chips: KnownChips
    var errors: [ConfigError] = []
    /// AgentSettings.parse's `fileProblem`.
    var fileProblem: ((String) -> String?)?

    init(path: String, chips: KnownChips) {
        self.path = path
        self.chips = chips
    }

    static let sectionKinds = [
        "server", "node", "system", "publisher", "time", "outputs", "record", "orientation", "gps",
        "i2c", "barometer", "hygrometer", "imu", "audio", "camera", "led", "ptz", "log", "paths",
    ]
    static let sectionList =
        "[server.NAME], [node], [system], [publisher], [time], [outputs.NAME], "
        + "[record], [record.NAME], [orientation], [gps], [i2c], [barometer], [hygrometer], [imu], [audio], [camera], [led], "
        + "[ptz], [log], [paths]"
    static let keys: [String: [String]] = [
        "server": [
            "url", "user", "tls", "certificate", "pin_sha256", "connect_timeout", "request_timeout", "transport", "broker",
            "mqtt_topics", "mqtt_topic_root", "commands",
        ],
        "node": ["active"],
        "system": ["uid", "uid_extension", "label", "hostname", "profile"],
        "publisher": ["format", "ring_capacity", "flush_interval", "batch_max", "spool", "spool_max_mb", "spool_fsync"],
        "time": ["require_sync", "not_before"],
        "outputs": ["enabled", "rate", "source"],
        "record": ["enabled", "max_mb", "max_hours", "fsync", "upload_share"],
        "orientation": SettingsReader.orientationKeys,
        "gps": ["device", "baud", "gpsd"],
        "log": ["level"],
        "paths": ["state_directory", "counters_file"],
    ].merging(SettingsReader.deviceKeys) { a, _ in a }
    /// `[record.NAME]`'s keys (`[record]` alone takes `keys["record"]`).
    static let recordOutputKeys = ["rate"]
    static let tlsModes = ["verify", "trust-certificate", "pin"]

    /// The board profile merged under the file (`BoardProfile.merge`): its lines are negative.
    var profilePaths: [String] = []

    mutating func fail(_ line: Int?, _ message: String) {
        if let line, line < 0, let (index, profileLine) = Optional(BoardProfile.decodeLine(line)), index < profilePaths.count {
            errors.append(ConfigError(path: profilePaths[index], line: profileLine, message: message))
        } else {
            errors.append(ConfigError(path: path, line: line, message: message))
        }
    }

    // MARK: The document

    mutating func read(_ doc: ConfigDocument) -> AgentSettings? {
        var servers: [ServerSettings] = []
        var serverSections: [ConfigSection] = []
        var nodeSection: ConfigSection?
        var unnamedServer = false
        var system = SystemSettings()
        var publisher = PublisherSettings()
        var ringCapacity = 1000
        var spool = SpoolSettings()
        var requireSync = true
        var notBefore = AgentSettings.defaultNotBefore
        var outputs = AgentSettings.defaultOutputs
        var north = NorthReference.true
        var logLevel = "info"
        var stateDirectory = "/var/lib/osh-edge"
        var countersFile: String?
        var gps = GPSSettings()
        var devices = DeviceConfig()
        var record = RecordSettings()
        // [record.NAME] sections read, checked against [outputs.NAME] once every section is read.
        var recordOutputs: [(name: String, section: ConfigSection, rate: Double?)] = []

        for s in doc.sections where !s.isDamaged {
            guard let kind = s.name.first else {
                topLevel(s)
                continue
            }
            guard Self.sectionKinds.contains(kind) else {
                fail(
                    s.line,
                    "section \(s.title) is not known\(Self.hint(kind, Self.sectionKinds, bracket: true)); "
                        + "known sections: \(Self.sectionList)")
                continue
            }
            let named = kind == "server" || kind == "outputs"
            if named, s.name.count == 1 {
                if kind == "server" {
                    unnamedServer = true
                    fail(s.line, "[server] needs a name, as [server.main]: one [server.NAME] section per node")
                } else {
                    fail(
                        s.line,
                        "[outputs] needs an output name, as [outputs.gps_data]; outputs: "
                            + AgentSettings.outputNames.joined(separator: ", "))
                }
                continue
            }
            if !named, kind != "record", s.name.count == 2 {
                fail(s.line, "[\(kind)] takes no name: write [\(kind)]")
                continue
            }
            checkKeys(s, known: kind == "record" && s.name.count == 2 ? Self.recordOutputKeys : Self.keys[kind] ?? [])
            switch kind {
            case "server":
                serverSections.append(s)
                if let server = readServer(s) { servers.append(server) }
            case "node":
                nodeSection = s
            case "system":
                system = readSystem(s)
            case "publisher":
                if let f = choice(s, "format", ScalarFormat.allCases.map { ($0.rawValue, $0) }) { publisher.format = f }
                if let v = integer(s, "ring_capacity", 100...1_000_000) { ringCapacity = v }
                if let v = number(s, "flush_interval", 0.05...10, unit: "seconds") { publisher.flushInterval = v }
                if let v = integer(s, "batch_max", 1...500) { publisher.batchMax = v }
                if let v = bool(s, "spool") { spool.enabled = v }
                if let v = integer(s, "spool_max_mb", 1...16_384) { spool.maxMegabytes = v }
                if let v = choice(s, "spool_fsync", SpoolSync.allCases.map { ($0.rawValue, $0) }) { spool.sync = v }
            case "time":
                if let v = bool(s, "require_sync") { requireSync = v }
                if let (text, line) = string(s, "not_before") {
                    if let t = ISOTime.parse(text) {
                        notBefore = t
                    } else {
                        fail(
                            line,
                            "not_before = \(ConfigValue.quote(text)) in [time] is not an ISO-8601 time "
                                + "with a zone; write it as \"2026-01-01T00:00:00Z\"")
                    }
                }
            case "outputs":
                guard let name = knownOutput(s) else { continue }
                var o = OutputSettings.defaults(for: name)
                if let v = bool(s, "enabled") { o.enabled = v }
                let (range, exclusive, unit) = OutputSettings.rateRange(for: name)
                if let v = number(s, "rate", range, lowerExclusive: exclusive, unit: unit) { o.rate = v }
                if let v = choice(s, "source", OutputSource.allCases.map { ($0.rawValue, $0) }) { o.source = v }
                outputs[name] = o
            case "record":
                if s.name.count == 1 {
                    readRecord(s, into: &record)
                } else if let name = knownOutput(s) {
                    let (range, exclusive, unit) = RecordSettings.rateRange(for: name)
                    recordOutputs.append((name, s, number(s, "rate", range, lowerExclusive: exclusive, unit: unit)))
                }
            case "orientation":
                if let v = choice(s, "north", NorthReference.allCases.map { ($0.rawValue, $0) }) { north = v }
                readDevices(s, kind: kind, into: &devices)
            case "i2c", "barometer", "hygrometer", "imu", "audio", "camera", "led", "ptz":
                readDevices(s, kind: kind, into: &devices)
            case "gps":
                readGPS(s, into: &gps)
            case "log":
                if let v = choice(s, "level", AgentSettings.logLevels.map { ($0, $0) }) { logLevel = v }
            case "paths":
                readPaths(s, stateDirectory: &stateDirectory, countersFile: &countersFile)
            default:
                break
            }
        }

        for r in recordOutputs {
            guard let o = outputs[r.name], o.enabled else {
                fail(
                    r.section.line,
                    "\(r.section.title) records an output that is not enabled: set enabled = true "
                        + "in [outputs.\(r.name)], or remove \(r.section.title)")
                continue
            }
            // Without a rate of its own, the output is recorded at its live rate.
            record.rates[r.name] = r.rate ?? o.rate
        }

        let active = activeServer(
            servers, serverSections, nodeSection,
            anyDamaged: unnamedServer || doc.sections.contains { $0.isDamaged })
        guard let active else { return nil }
        var settings = AgentSettings(server: active)
        settings.servers = servers
        settings.system = system
        settings.publisher = publisher
        settings.ringCapacity = ringCapacity
        settings.spool = spool
        settings.requireClockSync = requireSync
        settings.notBefore = notBefore
        settings.outputs = outputs
        settings.north = north
        settings.logLevel = logLevel
        settings.stateDirectory = stateDirectory
        settings.countersFile = countersFile
        settings.gps = gps
        settings.devices = devices
        settings.record = record
        return settings
    }

    /// `[paths]`: where the state lives and where the counters go.
    mutating func readPaths(_ s: ConfigSection, stateDirectory: inout String, countersFile: inout String?) {
        if let (dir, line) = string(s, "state_directory") {
            if let problem = Self.pathProblem(dir) {
                fail(line, "state_directory in [paths] \(problem)")
            } else {
                stateDirectory = dir
            }
        }
        if let (file, line) = string(s, "counters_file") {
            // "" turns it off (unset, it follows systemd's RuntimeDirectory).
            if !file.isEmpty, let problem = Self.pathProblem(file) {
                fail(line, "counters_file in [paths] \(problem), or \"\" for none")
            } else {
                countersFile = file
            }
        }
    }

    mutating func topLevel(_ s: ConfigSection) {
        for e in s.entries {
            if Self.isSecretKey(e.key) {
                secretKey(e, s)
                continue
            }
            let homes = Self.sectionKinds.filter { Self.keys[$0]?.contains(e.key) == true }
            let home =
                homes.isEmpty
                ? "put it under the [section] it belongs to"
                : "it belongs under "
                    + homes.map { $0 == "server" ? "[server.NAME]" : $0 == "outputs" ? "[outputs.NAME]" : "[\($0)]" }
                    .joined(separator: " or ")
            fail(e.line, "key '\(e.key)' is outside any section (before the first [section] header); \(home)")
        }
    }

    static func isSecretKey(_ key: String) -> Bool {
        let k = key.lowercased()
        return k == "password" || k == "token"
    }

    mutating func secretKey(_ e: ConfigEntry, _ s: ConfigSection) {
        let section = s.name.first == "server" && s.name.count == 2 ? s.title : "[server.NAME]"
        fail(
            e.line,
            "'\(e.key)' does not belong in this file (others can read it): put \(e.key.lowercased()) = \"…\" "
                + "under \(section) in \(Secrets.defaultPath) (root-only)")
    }

    /// Refuses passwords and tokens, and keys the section does not know (with a suggestion).
    mutating func checkKeys(_ s: ConfigSection, known: [String]) {
        for e in s.entries where !known.contains(e.key) {
            if Self.isSecretKey(e.key) {
                secretKey(e, s)
            } else {
                fail(
                    e.line,
                    "key '\(e.key)' is not known in \(s.title)\(Self.hint(e.key, known)); "
                        + "known keys: \(known.joined(separator: ", "))")
            }
        }
    }

    // MARK: Sections

    mutating func readServer(_ s: ConfigSection) -> ServerSettings? {
        let name = s.name[1]
        var ok = true
        var url = ""
        if let (u, line) = string(s, "url") {
            if let problem = Self.urlProblem(u) {
                fail(line, "url = \(ConfigValue.quote(u)) in \(s.title) \(problem)")
                ok = false
            } else {
                url = u
                while url.hasSuffix("/") { url.removeLast() }
            }
        } else {
            if !present(s, "url") {
                fail(s.line, "\(s.title) needs url = \"https://HOST/sensorhub/api\" (the node's API root)")
            }
            ok = false
        }
        var server = ServerSettings(name: name, url: url)
        if let (user, line) = string(s, "user") {
            if user.contains(":") {
                fail(line, "user in \(s.title) cannot contain ':' (HTTP Basic authentication)")
            } else if user.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                fail(line, "user in \(s.title) cannot contain control characters")
            } else {
                server.user = user
            }
        }
        if let v = number(s, "connect_timeout", 1...120, unit: "seconds") { server.connectTimeout = v }
        if let v = number(s, "request_timeout", 1...300, unit: "seconds") { server.requestTimeout = v }

        let tlsEntry = s.entry("tls")
        let mode: String? = tlsEntry == nil && !present(s, "tls") ? "verify" : choice(s, "tls", Self.tlsModes.map { ($0, $0) })
        var certificate: String?
        if let (c, line) = string(s, "certificate") {
            if let problem = Self.pathProblem(c) {
                fail(line, "certificate in \(s.title) \(problem)")
                ok = false
            } else if let mode, mode != "trust-certificate" {
                fail(
                    line,
                    "certificate in \(s.title) is only used with tls = \"trust-certificate\"; "
                        + "set that, or remove certificate")
                ok = false
            } else if let problem = fileProblem?(c) {
                fail(line, "certificate = \(ConfigValue.quote(c)) in \(s.title): \(problem)")
                ok = false
            } else {
                certificate = c
            }
        }
        var pin: String?
        if let (p, line) = string(s, "pin_sha256") {
            if let normalised = KeyPins.parse(p)?.joined(separator: ";") {
                if let mode, mode != "pin" {
                    fail(line, "pin_sha256 in \(s.title) is only used with tls = \"pin\"; set that, or remove pin_sha256")
                    ok = false
                } else {
                    pin = normalised
                }
            } else {
                fail(
                    line,
                    "pin_sha256 in \(s.title) must be the base64 SHA-256 of the node's public key "
                        + "(44 characters ending in '=', several separated by ';'; `osh-edge check` prints it)")
                ok = false
            }
        }
        switch mode {
        case "verify"?:
            server.tls = .verify
        case "trust-certificate"?:
            if let certificate {
                server.tls = .trustCertificate(path: certificate)
            } else {
                if !present(s, "certificate") {
                    fail(
                        tlsEntry?.line ?? s.line,
                        "tls = \"trust-certificate\" in \(s.title) needs "
                            + "certificate = \"/etc/osh-edge/node.pem\" (the node's certificate, PEM)")
                }
                ok = false
            }
        case "pin"?:
            if let pin {
                server.tls = .pin(sha256Base64: pin)
            } else {
                if !present(s, "pin_sha256") {
                    fail(
                        tlsEntry?.line ?? s.line,
                        "tls = \"pin\" in \(s.title) needs pin_sha256 = \"BASE64\" "
                            + "(the SHA-256 of the node's public key; `osh-edge check` prints it)")
                }
                ok = false
            }
        default:
            ok = false
        }
        if !readMQTT(s, into: &server) { ok = false }
        return ok ? server : nil
    }

    /// The output a `[outputs.NAME]` or `[record.NAME]` names, or nil (reported) when it is not one.
    mutating func knownOutput(_ s: ConfigSection) -> String? {
        let name = s.name[1]
        guard AgentSettings.outputNames.contains(name) else {
            fail(
                s.line,
                "output '\(name)' in \(s.title) is not known"
                    + "\(Self.hint(name, AgentSettings.outputNames)); known outputs: "
                    + AgentSettings.outputNames.joined(separator: ", "))
            return nil
        }
        return name
    }

    mutating func readRecord(_ s: ConfigSection, into r: inout RecordSettings) {
        if let v = bool(s, "enabled") { r.enabled = v }
        if let v = integer(s, "max_mb", 16...1_048_576) { r.maxMegabytes = v }
        if let v = number(s, "max_hours", 0...8760, lowerExclusive: true, unit: "hours") { r.maxHours = v }
        if let v = choice(s, "fsync", SpoolSync.allCases.map { ($0.rawValue, $0) }) { r.sync = v }
        if let v = number(s, "upload_share", 0...1, lowerExclusive: true, unit: "(a share of the link)") { r.uploadShare = v }
    }

    mutating func readSystem(_ s: ConfigSection) -> SystemSettings {
        var out = SystemSettings()
        if let (uid, line) = string(s, "uid") {
            if uid.isEmpty || SystemUID.isValid(uid) {
                out.uid = uid
            } else {
                fail(
                    line,
                    "uid = \(ConfigValue.quote(uid)) in [system] is not a usable UID: at least "
                        + "\(SystemUID.minimumLength) characters, no spaces, URN characters only, as "
                        + "\"urn:osh:rpi:garden-01\"; \"\" uses the board's serial")
            }
        }
        if let (ext, line) = string(s, "uid_extension") {
            if !ext.utf8.allSatisfy(SystemUID.isAllowed) {
                fail(
                    line,
                    "uid_extension = \(ConfigValue.quote(ext)) in [system] may hold only letters, digits and "
                        + "-._~!$&()*+,;=:@/#% (no spaces)")
            } else if !ext.isEmpty, s.entry("uid").map({ $0.value != .string("") }) == true {
                fail(
                    line,
                    "uid_extension in [system] is only used when uid is empty "
                        + "(the UID is then urn:osh:rpi:<serial>:<uid_extension>); remove one of them")
            } else {
                out.uidExtension = ext
            }
        }
        if let (label, line) = string(s, "label") {
            if label.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                fail(line, "label in [system] must be one line of text, without control characters")
            } else {
                out.label = label
            }
        }
        if let (name, line) = string(s, "hostname") {
            if name.isEmpty || SystemSettings.isValidHostname(name) {
                out.hostname = name
            } else {
                fail(
                    line,
                    "hostname = \(ConfigValue.quote(name)) in [system] is not a usable hostname: 1 to 63 "
                        + "lower-case letters, digits and '-', not starting or ending with '-', as \"garden-01\"; "
                        + "\"\" keeps the board's own")
            }
        }
        return out
    }

    mutating func activeServer(
        _ servers: [ServerSettings], _ sections: [ConfigSection],
        _ node: ConfigSection?, anyDamaged: Bool
    ) -> ServerSettings? {
        let names = sections.map { $0.name[1] }
        let list = names.joined(separator: ", ")
        if names.isEmpty {
            // A header that could not be read (or [server] without a name) may have been the server:
            // that error is enough.
            if !anyDamaged {
                fail(
                    nil,
                    "no [server.NAME] section: add one with url = \"https://HOST/sensorhub/api\" "
                        + "(the node to stream to)")
            }
            return nil
        }
        if let node, let (active, line) = string(node, "active") {
            guard names.contains(active) else {
                fail(
                    line,
                    "active = \(ConfigValue.quote(active)) in [node] does not name a server"
                        + "\(Self.hint(active, names, quoted: true)); servers: \(list)")
                return nil
            }
            return servers.first { $0.name == active }
        }
        if let node, present(node, "active") { return nil }  // already reported
        if names.count > 1 {
            fail(
                node?.line ?? sections[1].line,
                "\(names.count) servers are defined (\(list)); choose one with "
                    + "active = \(ConfigValue.quote(names[0])) in [node]")
            return nil
        }
        return servers.first
    }
}
