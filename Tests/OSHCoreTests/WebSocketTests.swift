import XCTest
@testable import OSHCore

/// What a parser produced, copied out of the callback.
private enum Got: Equatable {
    case text(String), binary([UInt8]), ping([UInt8]), pong([UInt8]), close(UInt16, String)
}

private func parse(
    _ bytes: [UInt8], role: WebSocketRole = .client, max: Int = 1 << 20,
    chunk: Int = Int.max
) throws -> [Got] {
    let p = WebSocketFrameParser(role: role, maxMessageBytes: max)
    var out: [Got] = []
    var i = 0
    while i < bytes.count {
        let j = Swift.min(bytes.count, i + chunk)
        try p.feed(Array(bytes[i..<j])) { e in
            switch e {
            case .text(let b): out.append(.text(String(decoding: b, as: UTF8.self)))
            case .binary(let b): out.append(.binary(Array(b)))
            case .ping(let b): out.append(.ping(Array(b)))
            case .pong(let b): out.append(.pong(Array(b)))
            case .close(let c, let r): out.append(.close(c, r))
            }
        }
        i = j
    }
    return out
}

private func frameError(_ bytes: [UInt8], role: WebSocketRole = .client, max: Int = 1 << 20) -> WebSocketFrameError? {
    do {
        _ = try parse(bytes, role: role, max: max)
        return nil
    } catch let e as WebSocketFrameError {
        return e
    } catch {
        return nil
    }
}

final class WebSocketFrameTests: XCTestCase {
    // RFC 6455 §5.7 examples.
    let unmaskedHello: [UInt8] = [0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f]
    let maskedHello: [UInt8] = [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]
    let fragmented: [UInt8] = [0x01, 0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f]
    let ping: [UInt8] = [0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f]
    let maskedPong: [UInt8] = [0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]

    func testRFCExamplesParse() throws {
        XCTAssertEqual(try parse(unmaskedHello), [.text("Hello")])
        XCTAssertEqual(try parse(maskedHello, role: .server), [.text("Hello")])
        XCTAssertEqual(try parse(fragmented), [.text("Hello")])
        XCTAssertEqual(try parse(ping), [.ping(Array("Hello".utf8))])
        XCTAssertEqual(try parse(maskedPong, role: .server), [.pong(Array("Hello".utf8))])
        // Byte by byte gives the same.
        XCTAssertEqual(try parse(fragmented, chunk: 1), [.text("Hello")])
        XCTAssertEqual(try parse(maskedHello, role: .server, chunk: 1), [.text("Hello")])
        // A ping between fragments is delivered at once; the message after it.
        let interleaved = Array(fragmented[0..<5]) + ping + Array(fragmented[5...])
        XCTAssertEqual(try parse(interleaved, chunk: 2), [.ping(Array("Hello".utf8)), .text("Hello")])
    }

    func testRFCExamplesWrite() {
        let out = ByteBuffer(capacity: 64)
        WebSocketFrameWriter.write(.text, payload: Array("Hello".utf8), mask: nil, to: out)
        XCTAssertEqual(out.array, unmaskedHello)
        out.reset()
        WebSocketFrameWriter.write(.text, payload: Array("Hello".utf8), mask: 0x37fa213d, to: out)
        XCTAssertEqual(out.array, maskedHello)
        out.reset()
        WebSocketFrameWriter.write(.text, payload: Array("Hel".utf8), fin: false, mask: nil, to: out)
        WebSocketFrameWriter.write(.continuation, payload: Array("lo".utf8), mask: nil, to: out)
        XCTAssertEqual(out.array, fragmented)
        out.reset()
        // The pong answering the RFC's ping, as a client sends it (masked).
        WebSocketFrameWriter.write(.pong, payload: Array("Hello".utf8), mask: 0x37fa213d, to: out)
        XCTAssertEqual(out.array, maskedPong)
    }

    func testLengths256And64KiB() throws {
        let out = ByteBuffer(capacity: 70_000)
        let b256 = (0..<256).map { UInt8($0 & 0xFF) }
        WebSocketFrameWriter.write(.binary, payload: b256, mask: nil, to: out)
        XCTAssertEqual(Array(out.array[0..<4]), [0x82, 0x7E, 0x01, 0x00])
        XCTAssertEqual(try parse(out.array), [.binary(b256)])
        out.reset()
        let b64k = (0..<65536).map { UInt8(($0 * 7) & 0xFF) }
        WebSocketFrameWriter.write(.binary, payload: b64k, mask: nil, to: out)
        XCTAssertEqual(Array(out.array[0..<10]), [0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0])
        XCTAssertEqual(try parse(out.array, chunk: 1000), [.binary(b64k)])
        out.reset()
        WebSocketFrameWriter.write(.binary, payload: b64k, mask: 0xA1B2C3D4, to: out)
        XCTAssertEqual(try parse(out.array, role: .server, chunk: 777), [.binary(b64k)])
    }

    func testEmptyFramesAndClose() throws {
        XCTAssertEqual(try parse([0x81, 0x00]), [.text("")])
        XCTAssertEqual(try parse([0x88, 0x00]), [.close(1005, "")])
        let out = ByteBuffer(capacity: 200)
        WebSocketFrameWriter.writeClose(code: 1007, reason: "Incoming data is not supported", mask: nil, to: out)
        XCTAssertEqual(try parse(out.array), [.close(1007, "Incoming data is not supported")])
        out.reset()
        WebSocketFrameWriter.writeClose(code: 1000, reason: String(repeating: "é", count: 100), mask: 1, to: out)
        let got = try parse(out.array, role: .server)
        guard case .close(1000, let r) = got.first else { return XCTFail("\(got)") }
        XCTAssertEqual(r.utf8.count, 122)  // cut on a character boundary within 123 bytes
    }

    func testMalformedFramesRejected() {
        XCTAssertEqual(frameError([0xC1, 0x00]), .reservedBitsSet)  // RSV1
        XCTAssertEqual(frameError([0x91, 0x00]), .reservedBitsSet)  // RSV3... (0x10)
        XCTAssertEqual(frameError([0x83, 0x00]), .unknownOpcode(3))
        XCTAssertEqual(frameError([0x8B, 0x00]), .unknownOpcode(0xB))
        XCTAssertEqual(frameError([0x89, 0x7E, 0x00, 0x7E] + [UInt8](repeating: 0, count: 126)), .controlFrameTooLong(126))
        XCTAssertEqual(frameError([0x09, 0x00]), .controlFrameFragmented)
        XCTAssertEqual(frameError([0x82, 0x7F, 0x80, 0, 0, 0, 0, 0, 0, 1]), .lengthTooLarge)
        XCTAssertEqual(frameError([0x80, 0x00]), .unexpectedContinuation)
        XCTAssertEqual(frameError([0x01, 0x01, 0x41, 0x81, 0x01, 0x42]), .expectedContinuation)
        XCTAssertEqual(frameError(maskedHello), .maskedFrameFromServer)
        XCTAssertEqual(frameError(unmaskedHello, role: .server), .unmaskedFrameFromClient)
        XCTAssertEqual(frameError([0x82, 0x7E, 0x01, 0x00], max: 255), .messageTooLarge(limit: 255))
        // Oversize by fragments: 200 + 200 > 300.
        let f = [0x02, 0x7E, 0x00, 0xC8] + [UInt8](repeating: 1, count: 200) + [0x80, 0x7E, 0x00, 0xC8]
        XCTAssertEqual(frameError(f, max: 300), .messageTooLarge(limit: 300))
        XCTAssertEqual(frameError([0x81, 0x02, 0xC3, 0x28]), .invalidUTF8)
        XCTAssertEqual(frameError([0x81, 0x03, 0xED, 0xA0, 0x80]), .invalidUTF8)  // surrogate
        XCTAssertEqual(frameError([0x81, 0x02, 0xC0, 0x80]), .invalidUTF8)  // overlong
        XCTAssertEqual(frameError([0x81, 0x01, 0xE2]), .invalidUTF8)  // truncated
        XCTAssertEqual(frameError([0x88, 0x01, 0x03]), .badClosePayload("a 1-byte body"))
        XCTAssertEqual(frameError([0x88, 0x02, 0x03, 0xED]), .badClosePayload("status code 1005 is not allowed"))
        XCTAssertEqual(WebSocketFrameError.invalidUTF8.closeCode, 1007)
        XCTAssertEqual(WebSocketFrameError.messageTooLarge(limit: 1).closeCode, 1009)
        XCTAssertEqual(WebSocketFrameError.reservedBitsSet.closeCode, 1002)
        // Once failed, stays failed.
        let p = WebSocketFrameParser(role: .client)
        XCTAssertThrowsError(try p.feed([0xC1, 0x00]) { _ in })
        XCTAssertThrowsError(try p.feed(unmaskedHello) { _ in })
    }

    func testUTF8Check() {
        XCTAssertTrue(UTF8Check.isValid(Array("κόσμε 𝄞 ok".utf8)))
        XCTAssertFalse(UTF8Check.isValid([0xF4, 0x90, 0x80, 0x80]))  // > U+10FFFF
        XCTAssertFalse(UTF8Check.isValid([0xFF]))
        XCTAssertFalse(UTF8Check.isValid([0xE0, 0x80, 0x80]))  // overlong 3-byte
    }

    /// libFuzzer-style robustness: seeded mutations of valid frame streams, 20 000 cases, both roles,
    /// random chunking. The parser must only ever return events or throw, never crash or hang.
    func testRandomMutationsNeverCrash() {
        var rng = SplitMix64(seed: 0x5EED_6455)
        let seeds: [[UInt8]] = [
            unmaskedHello, maskedHello, fragmented, ping, maskedPong,
            [0x82, 0x7E, 0x01, 0x00] + [UInt8](repeating: 7, count: 256),
            [0x88, 0x02, 0x03, 0xE8], [0x81, 0x00],
        ]
        let parsers = [
            WebSocketFrameParser(role: .client, maxMessageBytes: 4096),
            WebSocketFrameParser(role: .server, maxMessageBytes: 4096),
        ]
        var events = 0, errors = 0
        for _ in 0..<20_000 {
            var b: [UInt8] = []
            for _ in 0..<(1 + Int(rng.next() % 3)) { b += seeds[Int(rng.next() % UInt64(seeds.count))] }
            for _ in 0..<(1 + Int(rng.next() % 4)) {
                let i = Int(rng.next() % UInt64(b.count))
                switch rng.next() % 4 {
                case 0: b[i] ^= UInt8(1 << (rng.next() % 8))
                case 1: b[i] = UInt8(truncatingIfNeeded: rng.next())
                case 2: b.insert(UInt8(truncatingIfNeeded: rng.next()), at: i)
                default: if b.count > 1 { b.remove(at: i) }
                }
            }
            let p = parsers[Int(rng.next() % 2)]
            p.reset()
            var i = 0
            do {
                while i < b.count {
                    let j = Swift.min(b.count, i + 1 + Int(rng.next() % 16))
                    try p.feed(Array(b[i..<j])) { _ in events += 1 }
                    i = j
                }
            } catch {
                errors += 1
            }
        }
        XCTAssertGreaterThan(events, 1000)
        XCTAssertGreaterThan(errors, 1000)
    }
}

final class WebSocketHandshakeTests: XCTestCase {
    func testSHA1Vectors() {
        XCTAssertEqual(Hex.string(SHA1.hash("")), "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        XCTAssertEqual(Hex.string(SHA1.hash("abc")), "a9993e364706816aba3e25717850c26c9cd0d89d")
        XCTAssertEqual(
            Hex.string(SHA1.hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        var s = SHA1()
        for _ in 0..<1000 { s.update([UInt8](repeating: 0x61, count: 1000)) }
        XCTAssertEqual(Hex.string(s.finalize()), "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
    }

    /// RFC 6455 §1.3 / §4.2.2 example (checked against Python hashlib: the accept value is
    /// s3pPLMBiTxaQ9kYGzzhZRbK+xOo=, as the RFC prints it).
    func testRFCAcceptExample() {
        XCTAssertEqual(WebSocketHandshake.accept(key: "dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        XCTAssertEqual(WebSocketHandshake.key(randomBytes: Array("the sample nonce".utf8)), "dGhlIHNhbXBsZSBub25jZQ==")
    }

    func testRequestAndResponseCheck() throws {
        let req = WebSocketHandshake.request(
            path: "/sensorhub/api/controlstreams/abc/commands", host: "127.0.0.1:8181",
            key: "dGhlIHNhbXBsZSBub25jZQ==",
            extraHeaders: [HTTPHeader("Authorization", "Basic YTpi")])
        let text = String(decoding: req, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("GET /sensorhub/api/controlstreams/abc/commands HTTP/1.1\r\nHost: 127.0.0.1:8181\r\n"))
        XCTAssertTrue(
            text.contains(
                "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n")
        )
        XCTAssertTrue(text.hasSuffix("Authorization: Basic YTpi\r\n\r\n"))
        let parsedReq = try WebSocketHandshake.parseHead(req[...])
        XCTAssertEqual(parsedReq.method, "GET")
        XCTAssertEqual(
            try WebSocketHandshake.checkRequest(
                method: "GET", upgrade: parsedReq.header("upgrade"),
                connection: parsedReq.header("connection"),
                key: parsedReq.header("sec-websocket-key"),
                version: parsedReq.header("Sec-WebSocket-Version")),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")

        let ok = Array(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n\u{81}"
                .utf8)
        let end = try XCTUnwrap(WebSocketHandshake.headEnd(ok))
        XCTAssertEqual(end, ok.count - 2)  // "\u{81}" is two UTF-8 bytes
        let head = try WebSocketHandshake.parseHead(ok[0..<end])
        XCTAssertNoThrow(try WebSocketHandshake.checkResponse(head, key: "dGhlIHNhbXBsZSBub25jZQ=="))
        XCTAssertThrowsError(try WebSocketHandshake.checkResponse(head, key: "AAAAAAAAAAAAAAAAAAAAAA==")) {
            guard case WebSocketHandshakeError.acceptMismatch = $0 else { return XCTFail("\($0)") }
        }
        let refused = try WebSocketHandshake.parseHead(Array("HTTP/1.1 409 Conflict\r\nContent-Length: 2\r\n\r\n".utf8)[...])
        XCTAssertThrowsError(try WebSocketHandshake.checkResponse(refused, key: "x", body: "{}")) {
            XCTAssertEqual($0 as? WebSocketHandshakeError, .status(code: 409, reason: "Conflict", body: "{}"))
        }
        let noUpgrade = try WebSocketHandshake.parseHead(Array("HTTP/1.1 101 OK\r\nConnection: Upgrade\r\n\r\n".utf8)[...])
        XCTAssertThrowsError(try WebSocketHandshake.checkResponse(noUpgrade, key: "x")) {
            XCTAssertEqual($0 as? WebSocketHandshakeError, .missingUpgradeHeader)
        }
        XCTAssertThrowsError(
            try WebSocketHandshake.checkRequest(
                method: "GET", upgrade: "websocket", connection: "Upgrade",
                key: "short", version: "13"))
    }
}
