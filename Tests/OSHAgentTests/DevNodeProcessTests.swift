// `osh-edge-dev node` as the soak runs it: a process of its own, steered through standard input,
// killed with connections open and started again on the same port.
import Foundation
import XCTest

final class DevNodeProcessTests: XCTestCase {
    private let port = 18410
    private var ledger = ""
    private var nodes: [Process] = []

    override func setUp() {
        ledger = NSTemporaryDirectory() + "osh-devnode-process-ledger-\(UUID().uuidString)"
    }

    override func tearDown() {
        for p in nodes where p.isRunning { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() }
        try? FileManager.default.removeItem(atPath: ledger)
    }

    private struct Node {
        let process: Process
        let input: FileHandle
        let output: FileHandle

        /// The next line the node printed (empty at end of output).
        func line() -> String {
            var bytes: [UInt8] = []
            while true {
                let d = output.readData(ofLength: 1)
                guard let b = d.first, b != UInt8(ascii: "\n") else { return String(decoding: bytes, as: UTF8.self) }
                bytes.append(b)
            }
        }

        func send(_ line: String) -> String {
            input.write(Data((line + "\n").utf8))
            return self.line()
        }
    }

    private func startNode() throws -> Node {
        let p = Process()
        p.executableURL = builtBinary("osh-edge-dev")
        p.arguments = ["node", "--port", String(port), "--ledger", ledger, "--control-stdin"]
        let input = Pipe(), output = Pipe()
        p.standardInput = input
        p.standardOutput = output
        try p.run()
        nodes.append(p)
        return Node(process: p, input: input.fileHandleForWriting, output: output.fileHandleForReading)
    }

    /// A connection to the node, with a request begun and never finished.
    private func openConnection() -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var sa = sockaddr_in()
        sa.sin_family = sa_family_t(AF_INET)
        sa.sin_port = UInt16(port).bigEndian
        sa.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &sa) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if rc != 0 { close(fd); return -1 }
        let head = Array("GET /sensorhub/api HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8)
        _ = head.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return fd
    }

    func testSteeredThroughStdinKilledWithConnectionsOpenAndRestartedOnTheSamePort() throws {
        let first = try startNode()
        XCTAssertEqual(first.line(), "development node listening at http://127.0.0.1:\(port)/sensorhub/api")
        XCTAssertEqual(first.send("stats"), "stats systems=0 datastreams=0 observations=0")
        XCTAssertEqual(first.send("mode status 503"), "ok mode status 503")
        XCTAssertTrue(first.send("mode sideways").hasPrefix("error "))
        XCTAssertEqual(first.send("mode refuse"), "ok mode refuse")
        XCTAssertEqual(openConnection(), -1, "refused")
        XCTAssertEqual(first.send("mode normal"), "ok mode normal")

        // Only one node listens on a port (no SO_REUSEPORT): a second one is refused.
        let second = Process()
        second.executableURL = builtBinary("osh-edge-dev")
        second.arguments = ["node", "--port", String(port)]
        second.standardOutput = FileHandle.nullDevice
        second.standardError = FileHandle.nullDevice
        try second.run()
        nodes.append(second)
        let deadline = Date().addingTimeInterval(5)
        while second.isRunning, Date() < deadline { usleep(20_000) }
        XCTAssertFalse(second.isRunning, "a second node started on a port in use")
        if !second.isRunning { XCTAssertEqual(second.terminationStatus, 1) }

        // End of input: the node keeps serving.
        try first.input.close()
        var open: [Int32] = []
        for _ in 0..<4 {
            let fd = openConnection()
            XCTAssertGreaterThanOrEqual(fd, 0, "still listening after its input ended")
            open.append(fd)
        }
        defer { open.forEach { close($0) } }
        kill(first.process.processIdentifier, SIGKILL)
        first.process.waitUntilExit()

        let restarted = try startNode()
        XCTAssertEqual(
            restarted.line(), "development node listening at http://127.0.0.1:\(port)/sensorhub/api",
            "SO_REUSEADDR: the port is free again at once")
        XCTAssertEqual(restarted.send("stats"), "stats systems=0 datastreams=0 observations=0")
        let starts = try String(contentsOfFile: ledger, encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(starts.map { $0.split(separator: " ").first }, ["node-start", "node-start"])
        XCTAssertEqual(
            starts.map { $0.split(separator: " ").last.map(String.init) },
            [first.process, restarted.process].map { "pid=\($0.processIdentifier)" })
    }
}
