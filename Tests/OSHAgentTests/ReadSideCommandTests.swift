import Foundation
import OSHAgent
import OSHCore
import OSHPlatform
import XCTest

/// `osh-edge command` against a canned loopback HTTP peer that answers as OSH does (200 with
/// the first status report, the status listing, 202 when no receiver answered, 500 on a
/// rejection), while the development node's command side is being built elsewhere.
final class ReadSideCommandTests: XCTestCase {
    /// A minimal HTTP/1.1 server on 127.0.0.1: one thread per connection, keep-alive, canned answers.
    final class CannedNode: @unchecked Sendable {
        let fd: Int32
        private(set) var port: UInt16 = 0
        private let lock = NSLock()
        private var seen: [(head: String, body: String)] = []
        let answer: @Sendable (_ requestLine: String) -> (status: Int, body: String)

        init(answer: @escaping @Sendable (String) -> (status: Int, body: String)) throws {
            self.answer = answer
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            var len = socklen_t(MemoryLayout<sockaddr_in>.size)
            let ok = withUnsafeMutablePointer(to: &addr) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                    bind(fd, sa, len) == 0 && listen(fd, 8) == 0 && getsockname(fd, sa, &len) == 0
                }
            }
            guard ok else { throw POSIXError(.EADDRINUSE) }
            port = UInt16(bigEndian: addr.sin_port)
            Thread.detachNewThread { [self] in
                while true {
                    let c = accept(fd, nil, nil)
                    if c < 0 { return }
                    Thread.detachNewThread { [self] in serve(c) }
                }
            }
        }

        var apiRoot: String { "http://127.0.0.1:\(port)/sensorhub/api" }
        var requests: [(head: String, body: String)] { lock.lock(); defer { lock.unlock() }; return seen }

        func stop() { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }

        private func serve(_ c: Int32) {
            defer { close(c) }
            var buf = [UInt8]()
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                // A whole request in buf? Serve it; else read more.
                if let end = buf.indices.dropLast(3).first(where: {
                    buf[$0] == 13 && buf[$0 + 1] == 10 && buf[$0 + 2] == 13 && buf[$0 + 3] == 10
                }) {
                    let head = String(decoding: buf[..<end], as: UTF8.self)
                    let length =
                        head.split(separator: "\r\n").compactMap { line -> Int? in
                            let parts = line.split(separator: ":", maxSplits: 1)
                            return parts.count == 2 && parts[0].lowercased() == "content-length"
                                ? Int(parts[1].trimmingCharacters(in: .whitespaces)) : nil
                        }.first ?? 0
                    if buf.count >= end + 4 + length {
                        let body = String(decoding: buf[(end + 4)..<(end + 4 + length)], as: UTF8.self)
                        buf.removeFirst(end + 4 + length)
                        lock.lock(); seen.append((head, body)); lock.unlock()
                        let line = String(head.split(separator: "\r\n").first ?? "")
                        let (status, text) = answer(line)
                        let payload = Array(text.utf8)
                        var reply = "HTTP/1.1 \(status) X\r\nContent-Length: \(payload.count)\r\n"
                        if !payload.isEmpty { reply += "Content-Type: application/json\r\n" }
                        let bytes = Array((reply + "\r\n").utf8) + payload
                        _ = bytes.withUnsafeBytes { write(c, $0.baseAddress, $0.count) }
                        continue
                    }
                }
                let n = read(c, &chunk, chunk.count)
                if n <= 0 { return }
                buf += chunk[0..<n]
            }
        }
    }

    static func answer(_ line: String) -> (status: Int, body: String) {
        switch line {
        case "POST /sensorhub/api/controlstreams/cs1/commands HTTP/1.1":
            return (200, #"{"command@id":"cmd7","reportTime":"2026-11-29T10:00:05Z","statusCode":"PENDING"}"#)
        case "GET /sensorhub/api/controlstreams/cs1/commands/cmd7/status HTTP/1.1":
            return (
                200,
                #"{"items":[{"id":"s1","command@id":"cmd7","reportTime":"2026-11-29T10:00:05Z","statusCode":"PENDING"},"#
                    + #"{"id":"s2","command@id":"cmd7","reportTime":"2026-11-29T10:00:07Z","statusCode":"COMPLETED","message":"pan 3°, tilt 0°"}]}"#
            )
        case "POST /sensorhub/api/controlstreams/cs2/commands HTTP/1.1":
            return (202, "")
        case "POST /sensorhub/api/controlstreams/cs3/commands HTTP/1.1":
            return (500, #"{"status":500,"message":"Command rejected: unknown output 'warp'"}"#)
        default:
            return (404, #"{"status":404,"message":"Resource not found"}"#)
        }
    }

    func testCommandIDThenTheStatusTheNodeEndsUpHolding() throws {
        Log.muted = true
        let node = try CannedNode(answer: { Self.answer($0) })
        defer { node.stop() }
        let r = try NodeReader(server: NodeEndpoint(apiRoot: node.apiRoot, credentials: .basic(username: "op", password: "pw")))

        let o = try ReadSide.command(r, controlStream: "cs1", json: #"{"rpan":3.0}"#)
        XCTAssertEqual(o.httpStatus, 200)
        XCTAssertEqual(o.commandID, "cmd7")
        XCTAssertEqual(o.firstReport?.statusCode, "PENDING")
        XCTAssertEqual(o.status, "COMPLETED", "the newest report the node holds, not the POST's PENDING")
        XCTAssertEqual(
            ReadSideRender.commandText(o),
            "command cmd7 on control stream cs1\nstatus: COMPLETED at 2026-11-29T10:00:07.000Z — pan 3°, tilt 0°\n"
                + "(the node answered PENDING when its window ended — an OSH node does not hand a status posted over "
                + "HTTP back to the sender — and the outcome was read from its status reports after 0 s)")
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(ReadSideRender.commandJSON(o).utf8)) as? [String: Any])
        XCTAssertEqual(json["command@id"] as? String, "cmd7")
        XCTAssertEqual(json["statusCode"] as? String, "COMPLETED")

        let post = try XCTUnwrap(node.requests.first)
        XCTAssertEqual(post.body, #"{"parameters":{"rpan":3.0}}"#)
        XCTAssertTrue(post.head.contains("\r\nContent-Type: application/json\r\n"), post.head)
        XCTAssertTrue(post.head.contains("\r\nAccept: application/json\r\n"), post.head)
        XCTAssertTrue(post.head.contains("\r\nAuthorization: Basic "), post.head)

        let silent = try ReadSide.command(r, controlStream: "cs2", json: #"{"rpan":3.0}"#)
        XCTAssertEqual(silent.httpStatus, 202)
        XCTAssertNil(silent.commandID)
        XCTAssertTrue(ReadSideRender.commandText(silent).contains("no receiver acknowledged it"), ReadSideRender.commandText(silent))

        XCTAssertThrowsError(try ReadSide.command(r, controlStream: "cs3", json: #"{"warp":1}"#)) { e in
            XCTAssertTrue("\(e)".contains("HTTP 500: Command rejected: unknown output 'warp'"), "\(e)")
        }
    }

    func testCommandThroughTheBinary() throws {
        let node = try CannedNode(answer: { Self.answer($0) })
        defer { node.stop() }
        let exe = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("osh-edge")
        let p = Process()
        p.executableURL = exe
        p.arguments = ["command", "cs1", #"{"parameters":{"rpan":3.0}}"#, "--node", node.apiRoot, "--json"]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        XCTAssertEqual(json["command@id"] as? String, "cmd7")
        XCTAssertEqual(json["statusCode"] as? String, "COMPLETED")
        XCTAssertEqual(node.requests.first?.body, #"{"parameters":{"rpan":3.0}}"#)
    }
}
