import Foundation

/// Runs the `osh-edge` (or `binary`: osh-edge-dev) SwiftPM built beside the test bundle (the test target depends on both),
/// with `stdin` as its input and `env` added to the environment. Standard error goes to a file
/// so a chatty child cannot stall on a full pipe while we read its standard output.
func runOSHEdge(
    _ args: [String], stdin: String? = nil, env: [String: String] = [:],
    binary: String = "osh-edge"
) throws -> (status: Int32, out: String, err: String) {
    let exe = builtBinary(binary)
    guard FileManager.default.isExecutableFile(atPath: exe.path) else {
        struct MissingBinary: Error { let path: String }
        throw MissingBinary(path: exe.path)  // a build problem: the test target depends on both executables
    }
    let p = Process()
    p.executableURL = exe
    p.arguments = args
    if !env.isEmpty {
        var e = ProcessInfo.processInfo.environment
        for (k, v) in env { e[k] = v }
        p.environment = e
    }
    let errPath = NSTemporaryDirectory() + "osh-edge-stderr-\(UUID().uuidString)"
    FileManager.default.createFile(atPath: errPath, contents: nil)
    defer { try? FileManager.default.removeItem(atPath: errPath) }
    let errFile = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
    let out = Pipe()
    p.standardOutput = out
    p.standardError = errFile
    let input = Pipe()
    if stdin != nil { p.standardInput = input }
    try p.run()
    if let stdin {
        input.fileHandleForWriting.write(Data(stdin.utf8))
        try input.fileHandleForWriting.close()
    }
    let o = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    try errFile.close()
    let e = FileManager.default.contents(atPath: errPath) ?? Data()
    return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
}

/// An executable SwiftPM built beside the test bundle.
func builtBinary(_ name: String) -> URL {
    URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name)
}

/// Runs `argv` through /usr/bin/env with `env` added to the environment; standard output and
/// error together (for scripts, whose output is short).
func runTool(_ argv: [String], env: [String: String] = [:]) throws -> (status: Int32, out: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = argv
    var e = ProcessInfo.processInfo.environment
    for (k, v) in env { e[k] = v }
    p.environment = e
    let pipe = Pipe()
    p.standardOutput = pipe
    p.standardError = pipe
    try p.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (p.terminationStatus, String(decoding: data, as: UTF8.self))
}
