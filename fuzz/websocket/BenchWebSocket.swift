// Throughput of the RFC 6455 frame parser, built with swiftc -O together with the WebSocket
// sources (one module, no import):
//   swiftc -O -parse-as-library -module-name BenchWS -o /tmp/bench-ws fuzz/websocket/BenchWebSocket.swift \
//     fuzz/websocket/Stubs.swift Sources/OSHCore/WebSocket/*.swift Sources/OSHCore/Util/{SHA1,Base64,SHA256}.swift \
//     Sources/OSHCore/JSON/ByteBuffer.swift && /tmp/bench-ws
// Prints frames/s and MB/s for masked 200-byte text frames (a command's size, server role: every
// byte unmasked and UTF-8 checked) and unmasked 64 KiB binary frames fed in 16 KiB reads.
#if canImport(Glibc)
import Glibc
#endif

@main
struct BenchWS {
    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    static func run(_ name: String, frame: [UInt8], copies: Int, role: WebSocketRole) {
        let stream = ByteBuffer(capacity: frame.count * copies)
        for _ in 0..<copies { stream.append(frame) }
        let p = WebSocketFrameParser(role: role, maxMessageBytes: 1 << 20)
        var events = 0, bytes = 0
        let t0 = now()
        for _ in 0..<10 {
            var i = 0
            while i < stream.count {
                let n = min(16 * 1024, stream.count - i)
                do {
                    try p.feed(UnsafeRawBufferPointer(start: stream.base + i, count: n)) { e in
                        if case .text(let b) = e { bytes += b.count } else if case .binary(let b) = e { bytes += b.count }
                        events += 1
                    }
                } catch {
                    print("error: \(error)")
                    return
                }
                i += n
            }
        }
        let dt = now() - t0
        print(
            "\(name): \(events) frames in \(String(Int(dt * 1000))) ms = \(Int(Double(events) / dt)) frames/s, \(Int(Double(bytes) / dt / 1e6)) MB/s"
        )
    }

    static func main() {
        let out = ByteBuffer(capacity: 70_000)
        let text = Array(String(repeating: "{\"setRate\":{\"outputName\":\"gps_data\",\"rate\":2}} ", count: 4).utf8.prefix(200))
        WebSocketFrameWriter.write(.text, payload: text, mask: 0x12345678, to: out)
        run("masked 200-byte text (server role)", frame: out.array, copies: 50_000, role: .server)
        out.reset()
        WebSocketFrameWriter.write(.binary, payload: [UInt8](repeating: 0xA5, count: 65536), mask: nil, to: out)
        run("unmasked 64 KiB binary (client role)", frame: out.array, copies: 200, role: .client)
    }
}
