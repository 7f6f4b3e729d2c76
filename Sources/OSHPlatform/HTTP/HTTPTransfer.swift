import CCurl
import OSHCore

/// One libcurl easy handle and everything a request on it needs, kept in the client's pool and
/// reused: the error buffer, the response buffer and the copy of an owned body survive from one
/// request to the next, so a steady stream of requests allocates nothing of ours.
final class HTTPTransfer {
    let easy: UnsafeMutableRawPointer
    /// CURLOPT_ERRORBUFFER: libcurl writes its message here when a transfer fails.
    let errorBuffer: UnsafeMutablePointer<CChar>
    /// Holds `request.body` when the caller passed no buffer (see HTTPClient.send).
    private(set) var ownedBody: UnsafeMutableRawPointer
    private(set) var ownedBodyCapacity: Int

    var responseBody: [UInt8] = []
    var bodyLimit: Int
    var bodyTruncated = false
    var location: String?
    var contentType: String?
    /// The previous response's Content-Type, kept across requests (`onHeader`).
    private var lastContentType: String?
    /// `sha256//<base64>` from libcurl's verbose pin line (pinned servers and probes only).
    var peerPublicKey: String?
    var headers: UnsafeMutablePointer<curl_slist>?
    var completion: ((HTTPResult) -> Void)?
    /// The request's method, path and body size, for the debug line at completion.
    var method: HTTPMethod = .get
    var path = ""
    var sentBytes = 0
    var id: UInt64 = 0
    /// Owned by a `PreparedRequest`: its options stay set between requests and it never enters the pool.
    var isPrepared = false
    /// Whether the configured request sends a body (its header list says so).
    var preparedWithBody = false

    init?(bodyLimit: Int) {
        guard let h = curl_easy_init() else { return nil }
        easy = h
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        ownedBodyCapacity = 256
        ownedBody = .allocate(byteCount: ownedBodyCapacity, alignment: 16)
        self.bodyLimit = bodyLimit
    }

    deinit {
        curl_slist_free_all(headers)
        curl_easy_cleanup(easy)
        errorBuffer.deallocate()
        ownedBody.deallocate()
    }

    /// Copies `bytes` into the owned buffer (grown when needed) and returns where they are.
    func own(_ bytes: [UInt8]) -> UnsafeRawPointer {
        if bytes.count > ownedBodyCapacity {
            var c = ownedBodyCapacity
            while c < bytes.count { c *= 2 }
            ownedBody.deallocate()
            ownedBody = .allocate(byteCount: c, alignment: 16)
            ownedBodyCapacity = c
        }
        bytes.withUnsafeBytes { src in
            if let s = src.baseAddress { ownedBody.copyMemory(from: s, byteCount: src.count) }
        }
        return UnsafeRawPointer(ownedBody)
    }

    /// Back to a blank handle for the pool. Connections stay in the multi handle's cache.
    func recycle() {
        curl_slist_free_all(headers)
        headers = nil
        clearResponse()
        curl_easy_reset(easy)
    }

    /// Forgets the last response but keeps every option and the header list: the next request
    /// of a `PreparedRequest` then only sets its body.
    func clearResponse() {
        completion = nil
        location = nil
        contentType = nil
        peerPublicKey = nil
        bodyTruncated = false
        id = 0
        errorBuffer[0] = 0
        // A one-off large answer or body should not stay pinned in the pool.
        if responseBody.capacity > 64 << 10 { responseBody = [] } else { responseBody.removeAll(keepingCapacity: true) }
        if ownedBodyCapacity > 1 << 20 {
            ownedBody.deallocate()
            ownedBodyCapacity = 256
            ownedBody = .allocate(byteCount: ownedBodyCapacity, alignment: 16)
        }
    }

    // MARK: Callbacks (called by libcurl on the loop's thread, inside curl_multi_socket_action)

    func onBody(_ chunk: UnsafeRawBufferPointer) {
        let room = bodyLimit - responseBody.count
        if chunk.count <= room {
            responseBody.append(contentsOf: chunk)
        } else {
            if room > 0 { responseBody.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[..<room])) }
            bodyTruncated = true
        }
    }

    /// One header line, CRLF included. A status line starts a new response (after a 100 Continue or a
    /// proxy's CONNECT answer), so what was collected before belongs to another response.
    func onHeader(_ line: UnsafeRawBufferPointer) {
        if HTTPBytes.hasPrefix(line, "HTTP/") {
            location = nil
            contentType = nil
            return
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
        let name = UnsafeRawBufferPointer(rebasing: line[..<colon])
        if HTTPBytes.equalsIgnoringCase(name, "location") {
            location = HTTPBytes.trimmedString(UnsafeRawBufferPointer(rebasing: line[(colon + 1)...]))
        } else if HTTPBytes.equalsIgnoringCase(name, "content-type") {
            let value = HTTPBytes.trimmed(UnsafeRawBufferPointer(rebasing: line[(colon + 1)...]))
            // A node answers with the same type again and again: keep the one String made for it.
            if let last = lastContentType, last.utf8.elementsEqual(value) {
                contentType = last
            } else {
                contentType = String(decoding: value, as: UTF8.self)
                lastContentType = contentType
            }
        }
    }

    /// libcurl's informational text; only the pin line (" public key hash: sha256//…") is kept.
    func onDebugText(_ text: UnsafeRawBufferPointer) {
        guard let start = HTTPBytes.find(text, "sha256//") else { return }
        guard HTTPBytes.find(text, "public key hash") != nil else { return }
        var end = start
        while end < text.count, !HTTPBytes.isSpace(text[end]) { end += 1 }
        peerPublicKey = String(decoding: UnsafeRawBufferPointer(rebasing: text[start..<end]), as: UTF8.self)
    }
}

/// Byte helpers for header lines and URLs: ASCII only, no allocation.
enum HTTPBytes {
    @inline(__always) static func lower(_ b: UInt8) -> UInt8 {
        (b >= 65 && b <= 90) ? b + 32 : b
    }

    @inline(__always) static func isSpace(_ b: UInt8) -> Bool {
        b == 32 || b == 9 || b == 10 || b == 13
    }

    static func hasPrefix(_ bytes: UnsafeRawBufferPointer, _ prefix: StaticString) -> Bool {
        let n = prefix.utf8CodeUnitCount
        guard bytes.count >= n else { return false }
        let p = prefix.utf8Start
        for i in 0..<n where bytes[i] != p[i] { return false }
        return true
    }

    static func equalsIgnoringCase(_ bytes: UnsafeRawBufferPointer, _ word: StaticString) -> Bool {
        let n = word.utf8CodeUnitCount
        guard bytes.count == n else { return false }
        let p = word.utf8Start
        for i in 0..<n where lower(bytes[i]) != lower(p[i]) { return false }
        return true
    }

    static func find(_ bytes: UnsafeRawBufferPointer, _ needle: StaticString) -> Int? {
        let n = needle.utf8CodeUnitCount
        guard n > 0, bytes.count >= n else { return nil }
        let p = needle.utf8Start
        var i = 0
        outer: while i + n <= bytes.count {
            for j in 0..<n where bytes[i + j] != p[j] {
                i += 1
                continue outer
            }
            return i
        }
        return nil
    }

    static func trimmed(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        var lo = 0
        var hi = bytes.count
        while lo < hi, isSpace(bytes[lo]) { lo += 1 }
        while hi > lo, isSpace(bytes[hi - 1]) { hi -= 1 }
        return UnsafeRawBufferPointer(rebasing: bytes[lo..<hi])
    }

    static func trimmedString(_ bytes: UnsafeRawBufferPointer) -> String {
        String(decoding: trimmed(bytes), as: UTF8.self)
    }
}
