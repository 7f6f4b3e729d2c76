extension SettingsReader {
    /// `transport`, `broker`, `mqtt_topics`, `mqtt_topic_root`: false when what is set cannot run.
    mutating func readMQTT(_ s: ConfigSection, into server: inout ServerSettings) -> Bool {
        var ok = true
        if let t = choice(s, "transport", ObservationTransportKind.allCases.map { ($0.rawValue, $0) }) { server.transport = t }
        if let (b, line) = string(s, "broker") {
            if let broker = MQTTBroker(url: b) {
                server.broker = broker
            } else {
                fail(
                    line,
                    "broker = \(ConfigValue.quote(b)) in \(s.title) must be \"mqtt://HOST:PORT\" or \"mqtts://HOST:PORT\" "
                        + "(1883 and 8883 when no port is given)")
                ok = false
            }
        }
        var scheme = MQTTTopicScheme.osh
        if let v = choice(s, "mqtt_topics", MQTTTopicScheme.allCases.map { ($0.rawValue, $0) }) { scheme = v }
        var root: String?
        if let (r, line) = string(s, "mqtt_topic_root") {
            if r.isEmpty || r.contains("+") || r.contains("#") || r.unicodeScalars.contains(where: { $0.value < 0x20 }) {
                fail(line, "mqtt_topic_root in \(s.title) must be a topic prefix without wildcards, as \"/api\"")
                ok = false
            } else {
                root = r
            }
        }
        server.mqttTopics = MQTTTopics(scheme: scheme, root: root)
        if let c = choice(s, "commands", CommandChannelKind.allCases.map { ($0.rawValue, $0) }) {
            if c == .mqtt, server.transport != .mqtt {
                fail(
                    s.entry("commands")?.line ?? s.line,
                    "commands = \"mqtt\" in \(s.title) needs transport = \"mqtt\" and its broker; or commands = \"websocket\"")
                ok = false
            } else {
                server.commands = c
            }
        }
        let mqttKeys = ["broker", "mqtt_topics", "mqtt_topic_root"]
        if server.transport == .mqtt {
            if server.broker == nil, !present(s, "broker") {
                fail(
                    s.entry("transport")?.line ?? s.line,
                    "transport = \"mqtt\" in \(s.title) needs broker = \"mqtt://HOST:1883\" (OSH's MQTT service listens on "
                        + "1883 beside the node, or a broker of your own)")
                ok = false
            }
        } else {
            for key in mqttKeys where present(s, key) {
                fail(
                    s.entry(key)?.line ?? s.line,
                    "\(key) in \(s.title) is only used with transport = \"mqtt\"; set that, or remove \(key)")
                ok = false
            }
        }
        return ok
    }
}
