// The secrets file (`/etc/osh-edge/secrets`): passwords and tokens, kept out of the main
// configuration and out of every message and log line.

/// A credential from the secrets file. Its description never shows the value.
public enum Secret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// HTTP Basic password (the user name is `user` in osh-edge.conf).
    case password(String)
    /// Bearer token (OAuth-fronted nodes).
    case token(String)

    public var description: String {
        switch self {
        case .password: return "password (hidden)"
        case .token: return "token (hidden)"
        }
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}

/// The secrets file (`/etc/osh-edge/secrets`, root-only): same syntax,
/// `[server.NAME]` sections holding `password = "…"` or `token = "…"`.
public enum Secrets {
    public static let defaultPath = "/etc/osh-edge/secrets"

    /// Server name → secret. Values never appear in error messages.
    public static func parse(bytes: [UInt8], path: String) throws(ConfigErrors) -> [String: Secret] {
        let (doc, syntax) = ConfigParser.parseRecovering(bytes: bytes, path: path, redactValues: true)
        var errors = syntax
        var out: [String: Secret] = [:]
        func fail(_ line: Int?, _ m: String) { errors.append(ConfigError(path: path, line: line, message: m)) }
        let known = ["password", "token"]
        for s in doc.sections where !s.isDamaged {
            guard s.name.count == 2, s.name[0] == "server" else {
                if s.name.isEmpty {
                    for e in s.entries {
                        fail(
                            e.line,
                            "key '\(e.key)' is outside any section; put it under [server.NAME], "
                                + "NAME being the server's name in \(AgentSettings.defaultPath)")
                    }
                } else {
                    fail(
                        s.line,
                        "section \(s.title) is not known in the secrets file; it holds only "
                            + "[server.NAME] sections, each with password = \"…\" or token = \"…\"")
                }
                continue
            }
            for e in s.entries where !known.contains(e.key) {
                fail(
                    e.line,
                    "key '\(e.key)' is not known in \(s.title)\(SettingsReader.hint(e.key, known)); "
                        + "known keys: password, token")
            }
            let p = s.entry("password"), t = s.entry("token")
            if let p, let t {
                fail(
                    max(p.line, t.line),
                    "\(s.title) has both password and token; keep one "
                        + "(password for HTTP Basic with 'user', token for a Bearer token)")
                continue
            }
            guard let e = p ?? t else {
                if s.damagedKeys.isEmpty, s.entries.isEmpty {
                    fail(s.line, "\(s.title) has no password or token; add one, or remove the section")
                }
                continue
            }
            guard case .string(let v) = e.value else {
                fail(e.line, "\(e.key) in \(s.title) must be a quoted string; got \(e.value.kindName)")
                continue
            }
            if v.isEmpty {
                fail(e.line, "\(e.key) in \(s.title) is empty; remove the section if the server needs none")
            } else if v.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                fail(e.line, "\(e.key) in \(s.title) contains a control character (\\n, \\t or \\u escape)")
            } else {
                out[s.name[1]] = e.key == "password" ? .password(v) : .token(v)
            }
        }
        if !errors.isEmpty { throw ConfigErrors(AgentSettings.ordered(errors)) }
        return out
    }
}
