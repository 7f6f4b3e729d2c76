// What both executables' command lines share: option reading, failing with a message, number
// formatting. Parsing and printing only.
#if canImport(Glibc)
import Glibc
#endif
import OSHCore

/// The running program's name (osh-edge or osh-edge-dev), for messages.
public let programName: String = CommandLine.arguments.first.flatMap { $0.split(separator: "/").last.map(String.init) } ?? "osh-edge"

/// Writes to standard error through the fd: Glibc's `stderr` is a mutable global Swift 6 will not share.
public func printError(_ message: String) {
    var line = message + "\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

public func fail(_ message: String, code: Int32 = 2) -> Never {
    printError("\(programName): \(message)")
    exit(code)
}

/// A tiny option reader: `--name value` pairs and flags, in any order.
public struct Arguments {
    public var rest: [String]
    public init(rest: [String]) { self.rest = rest }
    public mutating func flag(_ name: String) -> Bool {
        guard let i = rest.firstIndex(of: name) else { return false }
        rest.remove(at: i)
        return true
    }
    public mutating func value(_ name: String) -> String? {
        guard let i = rest.firstIndex(of: name) else { return nil }
        guard i + 1 < rest.count else { fail("\(name) needs a value") }
        let v = rest[i + 1]
        rest.removeSubrange(i...(i + 1))
        return v
    }
    public mutating func positional() -> String? {
        guard let i = rest.firstIndex(where: { !$0.hasPrefix("--") }) else { return nil }
        return rest.remove(at: i)
    }
    public func finish() {
        if let extra = rest.first { fail("unexpected argument '\(extra)' (see \(programName) help)") }
    }
}

public func parseFormat(_ s: String?) -> ScalarFormat? {
    guard let s else { return nil }
    guard let f = ScalarFormat(rawValue: s) else { fail("--format must be om+json or swe+json, not '\(s)'") }
    return f
}

/// The node password: OSH_EDGE_PASSWORD (set and not empty), else a prompt on the terminal (never
/// an argument, which `ps` would show).
public func password(for user: String) -> String {
    if let p = getenv("OSH_EDGE_PASSWORD"), p.pointee != 0 { return String(cString: p) }
    // With no terminal to ask on, sending no password would only end in the node's 401.
    guard isatty(0) != 0, let typed = getpass("password for \(user): ") else {
        fail("--user \(user) needs a password: set OSH_EDGE_PASSWORD (export OSH_EDGE_PASSWORD=…), or run this on a terminal to be asked")
    }
    return String(cString: typed)
}

public func format1(_ v: Double) -> String {
    let tenths = Int((v * 10).rounded())
    return "\(tenths / 10).\(abs(tenths % 10))"
}

extension String {
    public func padding(_ n: Int) -> String { count >= n ? self + " " : self + String(repeating: " ", count: n - count) }
    public func leftPadding(_ n: Int) -> String { count >= n ? " " + self : String(repeating: " ", count: n - count) + self }
}
