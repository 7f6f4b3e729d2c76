// The development node's command channel at the byte level: a raw TCP client doing the RFC 6455
// handshake and frames by hand (with OSHCore's codec), as a strict peer would.
import Foundation
import OSHCore
@testable import OSHDevNode
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class CommandChannelTests: XCTestCase {
    let api = "/sensorhub/api"

    private func startNode() throws -> (DevNode, String) {
        var c = DevNodeConfig()
        c.commandAckSeconds = 0.1
        c.noReceiverWaitSeconds = 0.1
        let node = DevNode(config: c)
        try node.start()
        addTeardownBlock { node.stop() }
        let sys = try TestHTTP.request(
            port: node.port, "POST", api + "/systems",
            headers: [("Accept", "application/json"), ("Content-Type", "application/sml+json")],
            body: SystemBody.bytes(
                SystemDescription(
                    uid: "urn:osh:rpi:chan", label: "Chan", serial: "c",
                    validFrom: 1.7e9, components: [])))
        let sysID = try XCTUnwrap(sys.locationID, sys.text)
        let cs = try TestHTTP.request(
            port: node.port, "POST", api + "/systems/\(sysID)/controlstreams",
            headers: [("Accept", "application/json"), ("Content-Type", "application/json")],
            body: DeviceControl.body(systemLabel: "Chan", outputNames: ["gps_data"]))
        return (node, try XCTUnwrap(cs.locationID, cs.text))
    }

    /// Connects and upgrades; returns the socket and any bytes read past the 101 head.
    private func upgrade(_ node: DevNode, _ csID: String, version: String = "13") throws -> (Int32, HTTPHead, [UInt8]) {
        let fd = try TestHTTP.connect(port: node.port, timeout: 5)
        let key = WebSocketHandshake.key(randomBytes: Array("0123456789abcdef".utf8))
        var req = WebSocketHandshake.request(path: api + "/controlstreams/\(csID)/commands", host: "127.0.0.1", key: key)
        if version != "13" {
            req = Array(String(decoding: req, as: UTF8.self).replacingOccurrences(of: "Version: 13", with: "Version: " + version).utf8)
        }
        try TestHTTP.sendAll(fd, req)
        var got: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while WebSocketHandshake.headEnd(got) == nil {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            got += buf[0..<n]
        }
        let end = try XCTUnwrap(WebSocketHandshake.headEnd(got))
        let head = try WebSocketHandshake.parseHead(got[0..<end])
        if head.status == 101 { try WebSocketHandshake.checkResponse(head, key: key) }
        return (fd, head, Array(got[end...]))
    }

    /// Reads frames until `count` events arrived or the peer closed.
    private func events(_ fd: Int32, _ leftover: [UInt8], count: Int) throws -> [String] {
        let p = WebSocketFrameParser(role: .client)
        var out: [String] = []
        let sink: (WebSocketEvent) -> Void = { e in
            switch e {
            case .text(let b): out.append("text " + String(decoding: b, as: UTF8.self))
            case .binary(let b): out.append("binary " + String(decoding: b, as: UTF8.self))
            case .ping(let b): out.append("ping " + String(decoding: b, as: UTF8.self))
            case .pong(let b): out.append("pong " + String(decoding: b, as: UTF8.self))
            case .close(let c, let r): out.append("close \(c) \(r)")
            }
        }
        try p.feed(leftover, sink)
        var buf = [UInt8](repeating: 0, count: 4096)
        while out.count < count {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            try p.feed(Array(buf[0..<n]), sink)
        }
        return out
    }

    private func frame(_ op: WebSocketOpcode, _ text: String, mask: UInt32? = 0xA1B2C3D4) -> [UInt8] {
        let b = ByteBuffer(capacity: 256)
        WebSocketFrameWriter.write(op, payload: Array(text.utf8), mask: mask, to: b)
        return b.array
    }

    func testHandshakePingAndPushedCommandShape() throws {
        let (node, csID) = try startNode()
        let (fd, head, rest) = try upgrade(node, csID)
        defer { close(fd) }
        XCTAssertEqual(head.status, 101)
        XCTAssertTrue(head.headerHasToken("Connection", "upgrade"))
        try TestHTTP.sendAll(fd, frame(.ping, "hi"))
        XCTAssertEqual(try events(fd, rest, count: 1), ["pong hi"])
        XCTAssertTrue(node.hasCommandReceiver(controlStreamID: csID))

        // An operator's POST is answered only after the node's ack window: send it, read the
        // pushed command on the WebSocket, then the POST's answer.
        let op = try TestHTTP.connect(port: node.port, timeout: 5)
        defer { close(op) }
        let body = Array(#"{"parameters":{"identify":{"duration":3}}}"#.utf8)
        let postHead =
            "POST \(api)/controlstreams/\(csID)/commands HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            + "Accept: application/json\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
        try TestHTTP.sendAll(op, Array(postHead.utf8) + body)
        let got = try events(fd, [], count: 1)
        var raw: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buf.withUnsafeMutableBytes { recv(op, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            raw += buf[0..<n]
        }
        let answer = try TestHTTP.parse(raw, readError: nil)
        XCTAssertEqual(answer.status, 200)
        XCTAssertEqual((answer.json as? [String: Any])?["statusCode"] as? String, "PENDING")
        // osh-core pushes commands as binary frames (WebSocketOutputStream.send → sendBytes).
        let frameText = try XCTUnwrap(got.first)
        XCTAssertTrue(frameText.hasPrefix("binary {"), frameText)
        let pushed = try JSONValue.parse(String(frameText.dropFirst(7)))
        XCTAssertEqual(pushed.objectKeys, ["id", "controlstream@id", "issueTime", "sender", "parameters"])
        XCTAssertEqual(pushed["controlstream@id"]?.string, csID)
        XCTAssertEqual(pushed["sender"]?.string, "anonymous")
        XCTAssertEqual(pushed["parameters"]?["identify"]?["duration"]?.double, 3)
        let commands = node.commands(controlStreamID: csID)
        XCTAssertEqual(commands.map(\.id), [pushed["id"]?.string ?? ""])
        XCTAssertEqual(commands.first?.currentStatus, "PENDING")
    }

    /// No receiver: osh-core answers 202 once its window ends — its JSON error to a client that
    /// accepts JSON, Jetty's HTML error page (with the MESSAGE cell) to one that does not.
    func testACommandNobodyReceivesIs202AsOSHCoreWritesIt() throws {
        let (node, csID) = try startNode()
        let message = "Command accepted but request timed out before command was acknowledged by receiving system"
        let body = Array(#"{"parameters":{"setRate":{"outputName":"gps_data","rate":1}}}"#.utf8)
        let json = try TestHTTP.request(
            port: node.port, "POST", api + "/controlstreams/\(csID)/commands",
            headers: [("Accept", "application/json"), ("Content-Type", "application/json")], body: body)
        XCTAssertEqual(json.status, 202)
        XCTAssertEqual(json.header("Content-Type"), "application/json")
        XCTAssertEqual(NodeError.parse(json.body).message, message)
        let html = try TestHTTP.request(
            port: node.port, "POST", api + "/controlstreams/\(csID)/commands",
            headers: [("Accept", "text/html"), ("Content-Type", "application/json")], body: body)
        XCTAssertEqual(html.status, 202)
        XCTAssertEqual(html.header("Content-Type"), "text/html;charset=iso-8859-1")
        XCTAssertTrue(html.text.contains("<tr><th>MESSAGE:</th><td>\(message)</td></tr>"), html.text)
    }

    func testProtocolViolationsCloseTheReceiver() throws {
        let (node, csID) = try startNode()
        // Unmasked frame from a client: 1002.
        let (a, _, restA) = try upgrade(node, csID)
        try TestHTTP.sendAll(a, frame(.ping, "x", mask: nil))
        XCTAssertEqual(try events(a, restA, count: 1), ["close 1002 WebSocket client sent an unmasked frame"])
        close(a)
        // Data from the receiver: 1007 as OSH's WebSocketOut.
        XCTAssertTrue(waitFor { !node.hasCommandReceiver(controlStreamID: csID) })
        let (b, _, restB) = try upgrade(node, csID)
        try TestHTTP.sendAll(b, frame(.text, "hello"))
        XCTAssertEqual(try events(b, restB, count: 1), ["close 1007 Incoming data is not supported"])
        close(b)
        // A bad version is refused before any upgrade.
        let (c, head, _) = try upgrade(node, csID, version: "8")
        close(c)
        XCTAssertEqual(head.status, 400)
        // Unknown control stream: 404.
        let (d, head404, _) = try upgrade(node, "zzzz")
        close(d)
        XCTAssertEqual(head404.status, 404)
    }

    func testClientCloseIsEchoedAndTheStreamIsFreed() throws {
        let (node, csID) = try startNode()
        let (fd, _, rest) = try upgrade(node, csID)
        defer { close(fd) }
        let b = ByteBuffer(capacity: 64)
        WebSocketFrameWriter.writeClose(code: 1000, reason: "bye", mask: 7, to: b)
        try TestHTTP.sendAll(fd, b.array)
        XCTAssertEqual(try events(fd, rest, count: 1), ["close 1000 "])
        XCTAssertTrue(waitFor { !node.hasCommandReceiver(controlStreamID: csID) })
    }

    private func waitFor(_ condition: () -> Bool) -> Bool {
        for _ in 0..<500 {
            if condition() { return true }
            usleep(2000)
        }
        return condition()
    }
}
