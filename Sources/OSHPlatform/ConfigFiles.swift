#if canImport(Glibc)
import Glibc
#endif
import OSHCore

extension AgentSettings {
    /// The board profiles' directory: the package's, or `OSH_EDGE_PROFILE_DIR` (a source tree's
    /// board/profiles, tests).
    public static var profileDirectory: String {
        getenv("OSH_EDGE_PROFILE_DIR").map { String(cString: $0) } ?? BoardProfile.installedDirectory
    }

    /// `parse` with the board profile `[system] profile` names read from disk: every command that
    /// reads a configuration reads it as `run` does.
    public static func parseFile(
        bytes: [UInt8], path: String,
        fileProblem: ((String) -> String?)? = nil
    ) throws(ConfigErrors) -> AgentSettings {
        try parse(
            bytes: bytes, path: path, chips: ChipTable.known, fileProblem: fileProblem, profileDirectory: profileDirectory,
            readProfile: { try StateFiles.read($0, limit: ConfigParser.maxFileSize) })
    }
}
