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

    /// `doc` with `profile`'s sections under it. A profile's lines are stored negated, so an
    /// error in one of its keys names the profile's file and line (`SettingsReader.fail`).
    public static func merge(_ doc: ConfigDocument, under profile: ConfigDocument) -> ConfigDocument {
        var out = doc
        for ps in profile.sections where !ps.isDamaged && !ps.name.isEmpty {
            let entries = ps.entries.map { ConfigEntry(key: $0.key, value: $0.value, line: -$0.line) }
            if let i = out.sections.firstIndex(where: { $0.name == ps.name }) {
                let have = Set(out.sections[i].entries.map(\.key))
                out.sections[i].entries += entries.filter { !have.contains($0.key) }
            } else {
                var s = ps
                s.line = -ps.line
                s.entries = entries
                out.sections.append(s)
            }
        }
        return out
    }

    /// `doc` (the file at `path`) with the profile its `[system] profile` names merged under it,
    /// read by `read` from `directory` (nil: no way to read one, so a named profile is refused);
    /// the profile's path when one was merged, and what was wrong with the key or the profile.
    static func apply(to doc: ConfigDocument, path: String, directory: String,
                      read: ((String) throws -> [UInt8]?)?) -> (doc: ConfigDocument, path: String?, errors: [ConfigError]) {
        guard let entry = named(in: doc), entry.value != .string("") else { return (doc, nil, []) }
        func refused(_ message: String) -> (doc: ConfigDocument, path: String?, errors: [ConfigError]) {
            (doc, nil, [ConfigError(path: path, line: entry.line, message: message)])
        }
        guard case .string(let name) = entry.value else {
            return refused("profile in [system] must be a board name in quotes (\"pi4\", \"pi3\", \"pi5\", \"pi-zero-2w\") or a file's path")
        }
        let p = self.path(name, directory: directory)
        let bytes: [UInt8]?
        do { bytes = try read?(p) } catch {
            return refused("profile = \(ConfigValue.quote(name)) in [system]: \(p) cannot be read (\(error))")
        }
        guard let bytes else {
            return refused("profile = \(ConfigValue.quote(name)) in [system]: there is no \(p); the board profiles are "
                           + "pi3, pi4, pi5 and pi-zero-2w (in \(directory)), or give a profile file's path")
        }
        let (profile, errors) = ConfigParser.parseRecovering(bytes: bytes, path: p)
        return (merge(doc, under: profile), p, errors)
    }

    /// The `profile` entry of `[system]`, if the file has one.
    static func named(in doc: ConfigDocument) -> ConfigEntry? {
        doc.sections.first { $0.name == ["system"] }?.entry("profile")
    }
}
