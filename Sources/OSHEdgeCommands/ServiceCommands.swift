// The commands both executables take the same way: the service, its config check, the version,
// and the leading `--version`/`--help` spellings.
#if canImport(Glibc)
import Glibc
#endif
import OSHAgent
import OSHCore

/// The command and its arguments; `--version`/`--help` first are the usual spellings of those
/// commands (positional() skips options). No command: `usage` and exit 2.
public func commandLine(usage: String) -> (command: String, arguments: Arguments) {
    var args = Arguments(rest: Array(CommandLine.arguments.dropFirst()))
    let leadingOption = args.rest.first.flatMap { ["--version", "--help", "-h"].contains($0) ? $0 : nil }
    if leadingOption != nil { args.rest.removeFirst() }
    guard let command = leadingOption ?? args.positional() else {
        print(usage)
        exit(2)
    }
    // `COMMAND --help` (or -h) anywhere after the command: that command's lines of the usage.
    if leadingOption == nil, args.rest.contains("--help") || args.rest.contains("-h") {
        print(usageLines(usage, for: command))
        exit(0)
    }
    return (command, args)
}

/// The usage entry of `command` (its line and the deeper-indented lines under it), with the
/// usage's first line; the whole text when the command has no entry of its own.
public func usageLines(_ usage: String, for command: String) -> String {
    let lines = usage.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    var out = [lines.first ?? ""]
    var inEntry = false
    for l in lines.dropFirst() {
        if l.hasPrefix("  " + command + " ") || l == "  " + command {
            inEntry = true; out.append(l)
        } else if inEntry, l.hasPrefix("   ") {
            out.append(l)
        } else {
            inEntry = false
        }
    }
    return out.count > 1 ? out.joined(separator: "\n") : usage
}

/// `run [--config FILE] [--secrets FILE]`: the agent until SIGTERM.
public func runServiceCommand(_ args: inout Arguments) -> Never {
    let config = args.value("--config") ?? Daemon.defaultConfigPath
    let secrets = args.value("--secrets")
    args.finish()
    exit(Daemon.run(configPath: config, secretsPath: secrets))
}

/// `config check [FILE]`.
public func runConfigCommand(_ args: inout Arguments) {
    guard args.positional() == "check" else { fail("usage: \(programName) config check [FILE]") }
    let path = args.positional() ?? Daemon.defaultConfigPath
    args.finish()
    do {
        let loaded = try Daemon.load(configPath: path, secretsPath: nil)
        print("\(path): OK — node \(loaded.config.server.apiRoot), outputs \(loaded.config.outputs?.joined(separator: ", ") ?? "")")
    } catch {
        fail("\(error)", code: 1)
    }
}

/// `version`: this build and the C libraries it is linked with (`extra`: the dev node's).
public func printVersion(_ args: inout Arguments, extra: [(name: String, version: String)] = []) {
    args.finish()
    print("\(programName) \(Agent.version)")
    for (name, version) in Agent.linkedLibraries() + extra { print("  \(name) \(version)") }
}
