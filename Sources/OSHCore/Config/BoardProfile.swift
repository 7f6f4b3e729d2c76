/// `[system] profile = "pi4"`: a board profile (the board's UART, LED chip, camera) under the
/// user's file. The profile's keys fill what the file leaves unset, section by section; the
/// file's own keys always win, so pasting a profile's section is never needed and never clashes.
public enum BoardProfile {
    /// Where the package installs the profiles (board/profiles in the repository).
    public static let installedDirectory = "/usr/share/osh-edge/profiles"

    /// The file a `profile` value names: a path as given, else `NAME.conf` in `directory`.
    public static func path(_ value: String, directory: String) -> String {
        value.hasPrefix("/") || value.hasPrefix(".") ? value : directory + "/" + value + ".conf"
    }

    /// `doc` with `profile`'s sections under it. A profile's lines are stored negated and tagged
    /// with its place in the list (`encodeLine`), so an error in one of its keys names the
    /// profile's file and line (`SettingsReader.fail`).
    public static func merge(_ doc: ConfigDocument, under profile: ConfigDocument, index: Int = 0) -> ConfigDocument {
        var out = doc
        for ps in profile.sections where !ps.isDamaged && !ps.name.isEmpty {
            let entries = ps.entries.map { ConfigEntry(key: $0.key, value: $0.value, line: encodeLine($0.line, index)) }
            if let i = out.sections.firstIndex(where: { $0.name == ps.name }) {
                let have = Set(out.sections[i].entries.map(\.key))
                out.sections[i].entries += entries.filter { !have.contains($0.key) }
            } else {
                var s = ps
                s.line = encodeLine(ps.line, index)
                s.entries = entries
                out.sections.append(s)
            }
        }
        return out
    }

    /// Lines of a file are under 10 million (the reader's size limit keeps them far below).
    static let linesPerProfile = 10_000_000
    static func encodeLine(_ line: Int, _ index: Int) -> Int { -(index * linesPerProfile + line) }
    /// The profile's place in the list and its own line, for a line `merge` stored.
    static func decodeLine(_ stored: Int) -> (index: Int, line: Int) { (-stored / linesPerProfile, -stored % linesPerProfile) }

    /// `doc` (the file at `path`) with the profiles its `[system] profile` names merged under it —
    /// one name, or a list (a board and a HAT: `["pi4", "sense-hat"]`), earlier ones winning over
    /// later ones and the file over all — read by `read` from `directory` (nil: no way to read
    /// one, so a named profile is refused); the profiles' paths, and what was wrong with the key or
    /// the profiles.
    static func apply(
        to doc: ConfigDocument, path: String, directory: String,
        read: ((String) throws -> [UInt8]?)?
    ) -> (doc: ConfigDocument, paths: [String], errors: [ConfigError]) {
        guard let entry = named(in: doc), entry.value != .string("") else { return (doc, [], []) }
        func refused(_ message: String) -> (doc: ConfigDocument, paths: [String], errors: [ConfigError]) {
            (doc, [], [ConfigError(path: path, line: entry.line, message: message)])
        }
        let names: [String]
        switch entry.value {
        case .string(let n): names = [n]
        case .array(let items):
            var list: [String] = []
            for item in items {
                guard case .string(let n) = item, !n.isEmpty else {
                    return refused("profile in [system] must be board names in quotes, as [\"pi4\", \"sense-hat\"]")
                }
                list.append(n)
            }
            names = list
        default:
            return refused(
                "profile in [system] must be a board name in quotes (\"pi4\", \"pi3\", \"pi5\", \"pi-zero-2w\", "
                    + "\"sense-hat\"), a list of them, or a file's path")
        }
        var out = doc
        var paths: [String] = []
        var errors: [ConfigError] = []
        for (i, name) in names.enumerated() {
            let p = self.path(name, directory: directory)
            let bytes: [UInt8]?
            do { bytes = try read?(p) } catch {
                return refused("profile = \(ConfigValue.quote(name)) in [system]: \(p) cannot be read (\(error))")
            }
            guard let bytes else {
                return refused(
                    "profile = \(ConfigValue.quote(name)) in [system]: there is no \(p); the board profiles are "
                        + "pi3, pi4, pi5, pi-zero-2w and sense-hat (in \(directory)), or give a profile file's path")
            }
            let (profile, e) = ConfigParser.parseRecovering(bytes: bytes, path: p)
            out = merge(out, under: profile, index: i)
            paths.append(p)
            errors += e
        }
        return (out, paths, errors)
    }

    /// The `profile` entry of `[system]`, if the file has one.
    static func named(in doc: ConfigDocument) -> ConfigEntry? {
        doc.sections.first { $0.name == ["system"] }?.entry("profile")
    }
}
