// libFuzzer target for the RFC 6455 frame parser (OSHCore/WebSocket) and the handshake head parser.
// Built by fuzz/run-websocket.sh together with the OSHCore sources it needs (one module, no import).
//
// Each input is checked for:
//  * no crash, no out-of-bounds access (AddressSanitizer), no trap, in both roles;
//  * chunking invariance: the same events and the same error whether fed whole or in pieces whose
//    sizes come from the input itself (1–16 bytes);
//  * events within limits: control payloads ≤ 125 bytes, messages ≤ maxMessageBytes, text valid UTF-8;
//  * round trip: every message re-written with WebSocketFrameWriter parses back to itself.

private enum Ev: Equatable {
    case text([UInt8]), binary([UInt8]), ping([UInt8]), pong([UInt8]), close(UInt16, String)
}

private func run(_ input: UnsafeRawBufferPointer, role: WebSocketRole, pieces: UnsafeRawBufferPointer?) -> ([Ev], WebSocketFrameError?) {
    let p = WebSocketFrameParser(role: role, maxMessageBytes: 4096)
    var out: [Ev] = []
    let handler: (WebSocketEvent) -> Void = { e in
        switch e {
        case .text(let b):
            precondition(b.count <= 4096 && UTF8Check.isValid(b))
            out.append(.text(Array(b)))
        case .binary(let b):
            precondition(b.count <= 4096)
            out.append(.binary(Array(b)))
        case .ping(let b): precondition(b.count <= 125); out.append(.ping(Array(b)))
        case .pong(let b): precondition(b.count <= 125); out.append(.pong(Array(b)))
        case .close(let c, let r): out.append(.close(c, r))
        }
    }
    do throws(WebSocketFrameError) {
        if let sizes = pieces, !sizes.isEmpty {
            var i = 0, k = 0
            while i < input.count {
                let n = Swift.min(input.count - i, Int(sizes[k % sizes.count] & 15) + 1)
                try p.feed(UnsafeRawBufferPointer(rebasing: input[i..<(i + n)]), handler)
                i += n
                k += 1
            }
        } else {
            try p.feed(input, handler)
        }
    } catch {
        return (out, error)
    }
    return (out, nil)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWebSocket(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    for role in [WebSocketRole.client, .server] {
        let (a, ea) = run(input, role: role, pieces: nil)
        let (b, eb) = run(input, role: role, pieces: input)
        precondition(a == b && ea == eb, "chunking changed the result")
        // Round trip of the data messages.
        let buf = ByteBuffer(capacity: 8192)
        for e in a {
            buf.reset()
            switch e {
            case .text(let t): WebSocketFrameWriter.write(.text, payload: t, mask: role == .server ? 0x01020304 : nil, to: buf)
            case .binary(let t): WebSocketFrameWriter.write(.binary, payload: t, mask: role == .server ? 0x01020304 : nil, to: buf)
            default: continue
            }
            let (c, ec) = run(UnsafeRawBufferPointer(start: buf.base, count: buf.count), role: role, pieces: nil)
            precondition(ec == nil && c == [e], "a written frame did not parse back")
        }
    }
    // The handshake head parser takes anything without trapping.
    let bytes = Array(input)
    if let end = WebSocketHandshake.headEnd(bytes) {
        if let h = try? WebSocketHandshake.parseHead(bytes[0..<end]) {
            _ = try? WebSocketHandshake.checkResponse(h, key: "dGhlIHNhbXBsZSBub25jZQ==")
        }
    }
    return 0
}
