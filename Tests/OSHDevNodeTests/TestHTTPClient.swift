// A blocking HTTP/1.1 client over a POSIX TCP socket to 127.0.0.1, good enough to drive the
// development node from tests (one request per connection, `Connection: close`), plus helpers
// that shell out to `openssl` (self-signed certificates) and `curl` (HTTPS).
import Foundation
#if canImport(Glibc)
import Glibc
#endif

struct TestHTTPError: Error, CustomStringConvertible {
    var call: String
    var errno: Int32
    var description: String { "\(call) failed: errno \(errno) (\(String(cString: strerror(errno))))" }
}

struct TestResponse {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]
    /// The whole answer as received.
    var raw: [UInt8]
    /// The read ended with an error (e.g. ECONNRESET) instead of a clean end of stream.
    var readError: Int32?

    var text: String { String(decoding: body, as: UTF8.self) }

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// The error body's `message`.
    var message: String? {
        guard let obj = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { return nil }
        return obj["message"] as? String
    }

    var json: Any? { try? JSONSerialization.jsonObject(with: Data(body)) }

    /// The last path segment of `Location`.
    var locationID: String? { header("Location").flatMap { $0.split(separator: "/").last.map(String.init) } }
}

enum TestHTTP {
    /// Sends one request to 127.0.0.1:`port` and reads the answer until the server closes.
    static func request(
        port: UInt16, _ method: String, _ target: String, headers: [(String, String)] = [],
        body: [UInt8]? = nil, timeout: Double = 10
    ) throws -> TestResponse {
        let fd = try connect(port: port, timeout: timeout)
        defer { close(fd) }
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        if let b = body { head += "Content-Length: \(b.count)\r\n" }
        head += "\r\n"
        try sendAll(fd, Array(head.utf8) + (body ?? []))
        var raw: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        var readError: Int32?
        while true {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { raw.append(contentsOf: buf[0..<n]); continue }
            if n < 0 {
                if errno == EINTR { continue }
                readError = errno
            }
            break
        }
        return try parse(raw, readError: readError)
    }

    static func connect(port: UInt16, timeout: Double) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestHTTPError(call: "socket", errno: errno) }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var sa = sockaddr_in()
        sa.sin_family = sa_family_t(AF_INET)
        sa.sin_port = port.bigEndian
        sa.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &sa) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if rc != 0 {
            let e = errno
            close(fd)
            throw TestHTTPError(call: "connect", errno: e)
        }
        return fd
    }

    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) throws {
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + off, bytes.count - off, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw TestHTTPError(call: "send", errno: errno)
            }
            off += n
        }
    }

    static func parse(_ raw: [UInt8], readError: Int32?) throws -> TestResponse {
        let sep: [UInt8] = [13, 10, 13, 10]
        var end = -1
        if raw.count >= 4 {
            for i in 0...(raw.count - 4) where Array(raw[i..<i + 4]) == sep { end = i; break }
        }
        guard end >= 0 else { throw TestHTTPError(call: "parse (no header end)", errno: readError ?? 0) }
        let lines = String(decoding: raw[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw TestHTTPError(call: "parse status", errno: 0) }
        var headers: [(String, String)] = []
        for l in lines.dropFirst() {
            guard let c = l.firstIndex(of: ":") else { continue }
            headers.append((String(l[..<c]), l[l.index(after: c)...].trimmingCharacters(in: .whitespaces)))
        }
        var body = Array(raw[(end + 4)...])
        if let cl = headers.first(where: { $0.0.lowercased() == "content-length" }).flatMap({ Int($0.1) }), body.count > cl {
            body = Array(body.prefix(cl))
        }
        return TestResponse(status: status, headers: headers, body: body, raw: raw, readError: readError)
    }
}

/// Runs a command-line tool and returns its exit status and output.
@discardableResult
func runTool(_ tool: String, _ args: [String]) throws -> (status: Int32, output: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = [tool] + args
    let pipe = Pipe()
    p.standardOutput = pipe
    p.standardError = pipe
    try p.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (p.terminationStatus, String(decoding: data, as: UTF8.self))
}

func toolAvailable(_ tool: String) -> Bool {
    (try? runTool(tool, [tool == "openssl" ? "version" : "--version"]).status == 0) ?? false
}

/// A self-signed certificate for CN=localhost, SAN DNS:localhost and IP:127.0.0.1, made with the
/// `openssl` CLI (Debian package `openssl`). Returns PEM strings and the certificate's file path.
func makeSelfSignedCertificate() throws -> (certPEM: String, keyPEM: String, certPath: String) {
    let dir = NSTemporaryDirectory() + "osh-devnode-tls-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let key = dir + "/key.pem", cert = dir + "/cert.pem"
    let r = try runTool(
        "openssl",
        [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
            "-days", "2", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ])
    guard r.status == 0 else { throw TestHTTPError(call: "openssl req: " + r.output, errno: 0) }
    return (try String(contentsOfFile: cert, encoding: .utf8), try String(contentsOfFile: key, encoding: .utf8), cert)
}
