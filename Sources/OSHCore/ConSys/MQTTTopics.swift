/// `[server.NAME] transport`: how observations reach the node. Registration (systems,
/// datastreams, control streams) is HTTP either way: MQTT has no way to create them.
public enum ObservationTransportKind: String, Sendable, CaseIterable {
    case http
    case mqtt
}

/// `[server.NAME] commands`: the channel the node's commands come on.
public enum CommandChannelKind: String, Sendable, CaseIterable {
    /// The node's WebSocket (`GET …/controlstreams/{id}/commands` upgraded), as OSH's Android app.
    case websocket
    /// An MQTT 5 subscription to the commands topic, the status published back with the command's
    /// correlation data (needs `transport = "mqtt"`).
    case mqtt
}

/// `[server.NAME] mqtt_topics`: which topic names the broker expects.
public enum MQTTTopicScheme: String, Sendable, CaseIterable {
    /// OSH's MQTT service as it is in osh-addons' master: the topic is the CS API resource path
    /// under the API endpoint, `/api/datastreams/{id}/observations`, and the payload is O&M JSON
    /// (one object or an array) or SWE binary for a binary datastream.
    case osh
    /// The CS API Part 3 draft as OSH's open MQTT pull requests and OSHConnect read it:
    /// `api/datastreams/{id}/observations:data/{format}`, the format a topic level
    /// (`om-json`, `swe-json`, `swe-binary`).
    case part3

    /// The topic root when `mqtt_topic_root` is not set.
    public var defaultRoot: String { self == .osh ? "/api" : "api" }
}

/// `[server.NAME] broker`: `mqtt://HOST:PORT` (1883 when no port is given) or `mqtts://HOST:PORT`
/// (TLS, 8883).
public struct MQTTBroker: Sendable, Equatable {
    public var host: String
    public var port: Int
    public var tls: Bool

    public init(host: String, port: Int, tls: Bool) {
        self.host = host
        self.port = port
        self.tls = tls
    }

    /// Nil when `url` is not an mqtt:// or mqtts:// URL with a host and an optional port (no path).
    public init?(url: String) {
        let tls: Bool
        let rest: Substring
        if url.hasPrefix("mqtt://") {
            tls = false
            rest = url.dropFirst("mqtt://".count)
        } else if url.hasPrefix("mqtts://") {
            tls = true
            rest = url.dropFirst("mqtts://".count)
        } else {
            return nil
        }
        var hostPart = rest
        if hostPart.hasSuffix("/") { hostPart = hostPart.dropLast() }
        guard !hostPart.isEmpty, !hostPart.contains("/"), !hostPart.contains("@"), !hostPart.contains("?") else { return nil }
        var host: Substring
        var port = tls ? 8883 : 1883
        if hostPart.hasPrefix("[") {
            // [IPv6]:port
            guard let close = hostPart.firstIndex(of: "]") else { return nil }
            host = hostPart[hostPart.index(after: hostPart.startIndex)..<close]
            let after = hostPart[hostPart.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let p = Int(after.dropFirst()) else { return nil }
                port = p
            }
        } else if let colon = hostPart.lastIndex(of: ":") {
            host = hostPart[..<colon]
            guard let p = Int(hostPart[hostPart.index(after: colon)...]) else { return nil }
            port = p
        } else {
            host = hostPart
        }
        guard !host.isEmpty, (1...65535).contains(port) else { return nil }
        self.init(host: String(host), port: port, tls: tls)
    }

    public var url: String { (tls ? "mqtts://" : "mqtt://") + (host.contains(":") ? "[\(host)]" : host) + ":\(port)" }
}

/// The topics the agent publishes to and, for commands, listens on.
public struct MQTTTopics: Sendable, Equatable {
    public var scheme: MQTTTopicScheme
    /// Without a trailing `/`: `/api` or `api`.
    public var root: String

    public init(scheme: MQTTTopicScheme, root: String? = nil) {
        self.scheme = scheme
        var r = root ?? scheme.defaultRoot
        while r.hasSuffix("/") { r.removeLast() }
        self.root = r
    }

    /// Where a datastream's observations go; `mediaType` is the body's (O&M JSON, SWE JSON, SWE binary).
    public func observations(datastreamID: String, mediaType: String) -> String {
        let path = "\(root)/datastreams/\(datastreamID)/observations"
        switch scheme {
        case .osh: return path
        case .part3: return path + ":data/" + Self.formatToken(mediaType)
        }
    }

    /// Where the node sends a control stream's commands (the receiver subscribes to it).
    public func commands(controlStreamID: String) -> String {
        "\(root)/controlstreams/\(controlStreamID)/commands" + (scheme == .part3 ? ":data" : "")
    }

    /// Where the receiver reports a command's status (the command's correlation data echoed).
    public func status(controlStreamID: String) -> String {
        "\(root)/controlstreams/\(controlStreamID)/status" + (scheme == .part3 ? ":data" : "")
    }

    /// Part 3's format level: the media type with `-` for `+` (MQTT, NATS and Kafka names alike).
    static func formatToken(_ mediaType: String) -> String {
        switch mediaType {
        case MediaType.sweJSON: return "swe-json"
        case MediaType.sweBinary: return "swe-binary"
        default: return "om-json"
        }
    }
}
