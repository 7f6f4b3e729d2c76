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

    /// The `profile` entry of `[system]`, if the file has one.
    static func named(in doc: ConfigDocument) -> ConfigEntry? {
        doc.sections.first { $0.name == ["system"] }?.entry("profile")
    }
}
