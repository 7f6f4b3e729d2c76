import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Debian's mosquitto on 127.0.0.1 for a test: its own port, configuration and persistence file
/// in a scratch directory; stopped with SIGTERM, started again on the same port (the broker
/// restart and outage faults). Skips the test when mosquitto is not installed.
final class MosquittoBroker {
    static let binary = "/usr/sbin/mosquitto"
    let port: Int
    let directory: String
    private var process: Process?

    /// `tls`: the PEM certificate and key files of a TLS listener (mqtts://); `extra`: more
    /// configuration lines (a message size limit, a password file).
    init(persistence: Bool = true, tls: (cert: String, key: String)? = nil, extra: String = "") throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            throw XCTSkip("mosquitto is not installed (apt install mosquitto; .ci/run installs it)")
        }
        port = try Self.freePort()
        directory = scratchPath("osh-mosquitto")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var conf = "listener \(port) 127.0.0.1\n" + (extra.contains("password_file") ? "" : "allow_anonymous true\n") + extra
        // Started as root, mosquitto drops to the `mosquitto` user, which cannot write this
        // directory (its persistence, its log): it stays the user the tests run as.
        if let pw = getpwuid(geteuid()) { conf += "user \(String(cString: pw.pointee.pw_name))\n" }
        if let tls { conf += "certfile \(tls.cert)\nkeyfile \(tls.key)\n" }
        if persistence { conf += "persistence true\npersistence_location \(directory)/\nautosave_interval 1\n" }
        conf += "log_dest file \(directory)/mosquitto.log\nlog_type all\n"
        try conf.write(toFile: directory + "/mosquitto.conf", atomically: true, encoding: .utf8)
        try start()
    }

    deinit {
        stop()
        // OSH_KEEP_BROKER=1 keeps the configuration, the log and the persistence file for a look.
        if getenv("OSH_KEEP_BROKER") == nil { try? FileManager.default.removeItem(atPath: directory) }
    }

    var url: String { "mqtt://127.0.0.1:\(port)" }
    var tlsURL: String { "mqtts://127.0.0.1:\(port)" }

    func start() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.binary)
        p.arguments = ["-c", directory + "/mosquitto.conf"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        process = p
        // Listening once a connect succeeds.
        for _ in 0..<100 {
            if Self.accepts(port) { return }
            usleep(20_000)
        }
        throw XCTSkip("mosquitto did not listen on 127.0.0.1:\(port) within 2 s")
    }

    /// The broker frozen (SIGSTOP) or thawed (SIGCONT): a slow broker, its socket still open.
    func freeze(_ frozen: Bool) {
        guard let p = process, p.isRunning else { return }
        kill(p.processIdentifier, frozen ? SIGSTOP : SIGCONT)
    }

    /// The broker's log so far (it logs every connection, CONNECT and refusal).
    var log: String { (try? String(contentsOfFile: directory + "/mosquitto.log", encoding: .utf8)) ?? "" }

    func stop() {
        guard let p = process else { return }
        process = nil
        if p.isRunning {
            kill(p.processIdentifier, SIGCONT)
            p.terminate()
            p.waitUntilExit()
        }
    }

    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in bind(fd, sa, len) == 0 && getsockname(fd, sa, &len) == 0 }
        }
        guard ok else { throw XCTSkip("no free port on 127.0.0.1") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }
}
