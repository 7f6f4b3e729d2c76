// RFC 6455 §5 framing: an incremental frame parser over a byte stream and a frame writer.
// Pure (no I/O) and allocation-free once constructed: the parser reassembles messages in one
// buffer allocated up front (`maxMessageBytes`), control payloads in a 125-byte one, and hands
// payloads out as buffer views valid only during the callback. The transport (OSHPlatform's
// WebSocketClient, the development node) feeds it whatever the socket gave.

public enum WebSocketOpcode: UInt8, Sendable, Equatable {
    case continuation = 0x0, text = 0x1, binary = 0x2, close = 0x8, ping = 0x9, pong = 0xA

    public var isControl: Bool { rawValue & 0x8 != 0 }
}

/// Which end of the connection this parser sits at: it decides whether incoming frames must be
/// masked (a server receives masked frames; a client must refuse them, RFC 6455 §5.1).
public enum WebSocketRole: Sendable, Equatable {
    case client, server
}

/// Close status codes (RFC 6455 §7.4.1) used here.
public enum WebSocketCloseCode {
    public static let normal: UInt16 = 1000
    public static let goingAway: UInt16 = 1001
    public static let protocolError: UInt16 = 1002
    public static let unsupportedData: UInt16 = 1003
    /// Never on the wire: "no status code was present".
    public static let noStatus: UInt16 = 1005
    /// Never on the wire: "closed without a close frame".
    public static let abnormal: UInt16 = 1006
    public static let invalidPayload: UInt16 = 1007
    public static let policyViolation: UInt16 = 1008
    public static let messageTooBig: UInt16 = 1009
    public static let internalError: UInt16 = 1011

    /// May this code appear in a close frame? (1004–1006, 1015 and anything below 1000 or in
    /// 1016–2999 are reserved or unassigned; 3000–4999 are for libraries and applications.)
    public static func isValidOnWire(_ c: UInt16) -> Bool {
        switch c {
        case 1000...1003, 1007...1011: return true
        case 3000...4999: return true
        default: return false
        }
    }
}

/// Why a byte stream is not valid RFC 6455; each maps to the close code to answer with.
public enum WebSocketFrameError: Error, Sendable, Equatable, CustomStringConvertible {
    case reservedBitsSet
    case unknownOpcode(UInt8)
    case controlFrameTooLong(Int)
    case controlFrameFragmented
    case lengthTooLarge
    case unexpectedContinuation
    case expectedContinuation
    case maskedFrameFromServer
    case unmaskedFrameFromClient
    case messageTooLarge(limit: Int)
    case invalidUTF8
    case badClosePayload(String)

    public var closeCode: UInt16 {
        switch self {
        case .messageTooLarge: return WebSocketCloseCode.messageTooBig
        case .invalidUTF8: return WebSocketCloseCode.invalidPayload
        default: return WebSocketCloseCode.protocolError
        }
    }

    public var description: String {
        switch self {
        case .reservedBitsSet: return "WebSocket frame has reserved bits set (no extension was negotiated)"
        case .unknownOpcode(let o): return "WebSocket frame has unknown opcode 0x" + String(o, radix: 16)
        case .controlFrameTooLong(let n): return "WebSocket control frame carries \(n) bytes (at most 125 allowed)"
        case .controlFrameFragmented: return "WebSocket control frame is fragmented"
        case .lengthTooLarge: return "WebSocket frame length has its most significant bit set"
        case .unexpectedContinuation: return "WebSocket continuation frame without a message to continue"
        case .expectedContinuation: return "WebSocket data frame inside a fragmented message (continuation expected)"
        case .maskedFrameFromServer: return "WebSocket server sent a masked frame"
        case .unmaskedFrameFromClient: return "WebSocket client sent an unmasked frame"
        case .messageTooLarge(let l): return "WebSocket message larger than the \(l)-byte limit"
        case .invalidUTF8: return "WebSocket text is not valid UTF-8"
        case .badClosePayload(let why): return "WebSocket close frame is malformed: " + why
        }
    }
}

/// One complete event from the parser. Payload views are only valid inside the callback.
public enum WebSocketEvent {
    case text(UnsafeRawBufferPointer)
    case binary(UnsafeRawBufferPointer)
    case ping(UnsafeRawBufferPointer)
    case pong(UnsafeRawBufferPointer)
    /// `code` is 1005 when the frame had no payload; `reason` is "" then.
    case close(code: UInt16, reason: String)
}

/// Incremental RFC 6455 frame parser. Feed bytes as they arrive; complete messages and control
/// frames come out through the handler. After an error the parser stays failed (the connection
/// must be closed with `error.closeCode`).
public final class WebSocketFrameParser {
    public let role: WebSocketRole
    public let maxMessageBytes: Int

    private enum State { case head0, head1, extLength, maskKey, payload }

    private var state = State.head0
    private var fin = false
    private var opcode = WebSocketOpcode.continuation
    private var masked = false
    private var lengthBytesLeft = 0
    private var length: UInt64 = 0
    private var mask: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0)
    private var maskBytesRead = 0
    private var payloadLeft = 0
    private var payloadIndex = 0  // bytes of this frame's payload read so far (mask phase)

    /// The message being reassembled (text or binary), if any.
    private var messageOpcode: WebSocketOpcode?
    private let message: UnsafeMutableRawBufferPointer
    private var messageCount = 0
    private let control: UnsafeMutableRawBufferPointer
    private var controlCount = 0
    public private(set) var failed: WebSocketFrameError?

    public init(role: WebSocketRole, maxMessageBytes: Int = 1 << 20) {
        self.role = role
        self.maxMessageBytes = max(125, maxMessageBytes)
        message = .allocate(byteCount: self.maxMessageBytes, alignment: 8)
        control = .allocate(byteCount: 125, alignment: 8)
    }

    deinit {
        message.deallocate()
        control.deallocate()
    }

    /// Forgets any partial frame or message (a new connection).
    public func reset() {
        state = .head0
        messageOpcode = nil
        messageCount = 0
        controlCount = 0
        failed = nil
    }

    public func feed(_ bytes: [UInt8], _ handler: (WebSocketEvent) -> Void) throws(WebSocketFrameError) {
        var err: WebSocketFrameError?
        bytes.withUnsafeBytes { b in
            do throws(WebSocketFrameError) { try feed(b, handler) } catch { err = error }
        }
        if let e = err { throw e }
    }

    /// Consumes all of `bytes`. Throws at the first violation (and keeps throwing it).
    public func feed(_ bytes: UnsafeRawBufferPointer, _ handler: (WebSocketEvent) -> Void) throws(WebSocketFrameError) {
        if let f = failed { throw f }
        var i = 0
        let n = bytes.count
        do throws(WebSocketFrameError) {
            while i < n {
                switch state {
                case .head0:
                    let b = bytes[i]; i += 1
                    guard b & 0x70 == 0 else { throw .reservedBitsSet }
                    guard let op = WebSocketOpcode(rawValue: b & 0x0F) else { throw .unknownOpcode(b & 0x0F) }
                    fin = b & 0x80 != 0
                    opcode = op
                    if op.isControl {
                        guard fin else { throw .controlFrameFragmented }
                    } else if op == .continuation {
                        guard messageOpcode != nil else { throw .unexpectedContinuation }
                    } else {
                        guard messageOpcode == nil else { throw .expectedContinuation }
                    }
                    state = .head1
                case .head1:
                    let b = bytes[i]; i += 1
                    masked = b & 0x80 != 0
                    if role == .client, masked { throw .maskedFrameFromServer }
                    if role == .server, !masked { throw .unmaskedFrameFromClient }
                    let l = b & 0x7F
                    length = 0
                    if l == 126 {
                        lengthBytesLeft = 2; state = .extLength
                    } else if l == 127 {
                        lengthBytesLeft = 8; state = .extLength
                    } else {
                        length = UInt64(l); try lengthKnown(handler)
                    }
                case .extLength:
                    let b = bytes[i]; i += 1
                    if lengthBytesLeft == 8, b & 0x80 != 0 { throw .lengthTooLarge }
                    length = length << 8 | UInt64(b)
                    lengthBytesLeft -= 1
                    if lengthBytesLeft == 0 { try lengthKnown(handler) }
                case .maskKey:
                    let b = bytes[i]; i += 1
                    switch maskBytesRead {
                    case 0: mask.0 = b
                    case 1: mask.1 = b
                    case 2: mask.2 = b
                    default: mask.3 = b
                    }
                    maskBytesRead += 1
                    if maskBytesRead == 4 { try startPayload(handler) }
                case .payload:
                    let take = min(payloadLeft, n - i)
                    let dest: UnsafeMutableRawBufferPointer
                    let at: Int
                    if opcode.isControl {
                        dest = control; at = controlCount; controlCount += take
                    } else {
                        dest = message; at = messageCount; messageCount += take
                    }
                    let target = UnsafeMutableRawBufferPointer(rebasing: dest[at..<(at + take)])
                    target.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[i..<(i + take)]))
                    if masked { unmask(target, from: payloadIndex) }
                    i += take
                    payloadIndex += take
                    payloadLeft -= take
                    if payloadLeft == 0 { try frameDone(handler) }
                }
            }
        } catch {
            failed = error
            throw error
        }
    }

    /// XORs with the key, starting at key byte `from & 3`: a byte at a time up to a word boundary
    /// of the key, then 8 bytes at a time.
    @inline(__always)
    private func unmask(_ p: UnsafeMutableRawBufferPointer, from: Int) {
        var k = from & 3
        var j = 0
        let n = p.count
        @inline(__always) func keyByte(_ i: Int) -> UInt8 {
            switch i {
            case 0: return mask.0
            case 1: return mask.1
            case 2: return mask.2
            default: return mask.3
            }
        }
        while j < n, k != 0 {
            p[j] ^= keyByte(k)
            k = (k + 1) & 3
            j += 1
        }
        let j0 = j  // key byte 0 applies at j0, j0 + 4, …
        // Key bytes in memory order, twice: a little- or big-endian load of 8 payload bytes XORs right.
        var word: UInt64 = 0
        withUnsafeMutableBytes(of: &word) { w in
            for x in 0..<8 { w[x] = keyByte(x & 3) }
        }
        while j + 8 <= n {
            let v = p.loadUnaligned(fromByteOffset: j, as: UInt64.self)
            p.storeBytes(of: v ^ word, toByteOffset: j, as: UInt64.self)
            j += 8
        }
        while j < n {
            p[j] ^= keyByte((j - j0) & 3)
            j += 1
        }
    }

    private func lengthKnown(_ handler: (WebSocketEvent) -> Void) throws(WebSocketFrameError) {
        if opcode.isControl {
            guard length <= 125 else { throw .controlFrameTooLong(Int(clamping: length)) }
        } else if length > UInt64(maxMessageBytes - messageCount) {
            throw .messageTooLarge(limit: maxMessageBytes)
        }
        payloadLeft = Int(length)
        payloadIndex = 0
        if masked { maskBytesRead = 0; state = .maskKey } else { try startPayload(handler) }
    }

    /// A zero-length frame is complete as soon as its header is.
    private func startPayload(_ handler: (WebSocketEvent) -> Void) throws(WebSocketFrameError) {
        state = .payload
        if payloadLeft == 0 { try frameDone(handler) }
    }

    private func frameDone(_ handler: (WebSocketEvent) -> Void) throws(WebSocketFrameError) {
        state = .head0
        if opcode.isControl {
            let p = UnsafeRawBufferPointer(rebasing: control[0..<controlCount])
            controlCount = 0
            switch opcode {
            case .ping: handler(.ping(p))
            case .pong: handler(.pong(p))
            default:
                let (code, reason) = try Self.closePayload(p)
                handler(.close(code: code, reason: reason))
            }
            return
        }
        if opcode != .continuation { messageOpcode = opcode }
        guard fin, let op = messageOpcode else { return }
        let p = UnsafeRawBufferPointer(rebasing: message[0..<messageCount])
        messageOpcode = nil
        messageCount = 0
        if op == .text {
            guard UTF8Check.isValid(p) else { throw .invalidUTF8 }
            handler(.text(p))
        } else {
            handler(.binary(p))
        }
    }

    /// Code and reason of a close frame's payload (RFC 6455 §5.5.1, §7.4).
    public static func closePayload(_ p: UnsafeRawBufferPointer) throws(WebSocketFrameError) -> (UInt16, String) {
        if p.isEmpty { return (WebSocketCloseCode.noStatus, "") }
        guard p.count >= 2 else { throw .badClosePayload("a 1-byte body") }
        let code = UInt16(p[0]) << 8 | UInt16(p[1])
        guard WebSocketCloseCode.isValidOnWire(code) else { throw .badClosePayload("status code \(code) is not allowed") }
        let r = UnsafeRawBufferPointer(rebasing: p[2...])
        guard UTF8Check.isValid(r) else { throw .invalidUTF8 }
        return (code, String(decoding: r, as: UTF8.self))
    }
}
