// How HTTPClient sets up a request on an easy handle: options, the URL from the API root, headers,
// the body; and the configuration helpers (the API root, pins). The transfer table and libcurl's
// socket and timer callbacks are in HTTPClient.swift.
import CCurl
import CShim
import OSHCore
#if canImport(Glibc)
import Glibc
#endif

extension HTTPClient {
    // MARK: Request set-up

    func obtainTransfer() -> HTTPTransfer? {
        if let t = idle.popLast() {
            t.bodyLimit = maxResponseBody
            return t
        }
        return HTTPTransfer(bodyLimit: maxResponseBody)
    }

    func start(_ t: HTTPTransfer, _ completion: @escaping (HTTPResult) -> Void) {
        t.completion = completion
        if active.count >= maxActive {
            waiting.append(t)
            return
        }
        handOver(t)
    }

    /// Adds a started transfer to libcurl.
    func handOver(_ t: HTTPTransfer) {
        guard let completion = t.completion else { return }
        var rc = CURLM_OK
        callCurl { rc = curl_multi_add_handle(multi, t.easy) }
        guard rc == CURLM_OK else {
            t.completion = nil
            recycle(t)
            fail(completion, .other, "curl_multi_add_handle failed: " + String(cString: curl_multi_strerror(rc)))
            return
        }
        active.append(t)
        // The first step ran inside callCurl; what it finished (a refused connection) completes
        // from the loop, never inside send.
        drainCompletions(deliver: false)
    }

    /// Hands waiting transfers to libcurl while there is room.
    func handOverWaiting() {
        while active.count < maxActive, !waiting.isEmpty {
            handOver(waiting.removeFirst())
        }
    }

    /// Sets every option of one request on a blank handle. Returns what is wrong with the request, if anything.
    func configure(_ t: HTTPTransfer, _ request: CSRequest, _ body: UnsafeRawBufferPointer?) -> String? {
        if let problem = buildURL(request.path) { return problem }
        var s = OptionSetter(t.easy)
        commonOptions(&s, t)
        urlScratch.withUnsafeBufferPointer { u in
            u.withMemoryRebound(to: CChar.self) { s.cstr(CURLOPT_URL, $0.baseAddress, "CURLOPT_URL") }
        }
        s.long(CURLOPT_TIMEOUT_MS, requestTimeoutMs, "CURLOPT_TIMEOUT_MS")
        if let low = server.lowSpeed, low.bytesPerSecond > 0, low.seconds > 0 {
            s.long(CURLOPT_LOW_SPEED_LIMIT, low.bytesPerSecond, "CURLOPT_LOW_SPEED_LIMIT")
            s.long(CURLOPT_LOW_SPEED_TIME, low.seconds, "CURLOPT_LOW_SPEED_TIME")
        }
        s.long(CURLOPT_TCP_KEEPALIVE, 1, "CURLOPT_TCP_KEEPALIVE")
        s.ptr(CURLOPT_WRITEDATA, Unmanaged.passUnretained(t).toOpaque(), "CURLOPT_WRITEDATA")
        s.writeCallback(
            CURLOPT_WRITEFUNCTION,
            { data, size, count, userdata -> Int in
                let n = size &* count
                guard let data, let userdata else { return n }
                Unmanaged<HTTPTransfer>.fromOpaque(userdata).takeUnretainedValue()
                    .onBody(UnsafeRawBufferPointer(start: data, count: n))
                return n
            }, "CURLOPT_WRITEFUNCTION")
        s.ptr(CURLOPT_HEADERDATA, Unmanaged.passUnretained(t).toOpaque(), "CURLOPT_HEADERDATA")
        s.writeCallback(
            CURLOPT_HEADERFUNCTION,
            { data, size, count, userdata -> Int in
                let n = size &* count
                guard let data, let userdata else { return n }
                Unmanaged<HTTPTransfer>.fromOpaque(userdata).takeUnretainedValue()
                    .onHeader(UnsafeRawBufferPointer(start: data, count: n))
                return n
            }, "CURLOPT_HEADERFUNCTION")

        if isHTTPS {
            switch server.tls {
            case .verify:
                s.long(CURLOPT_SSL_VERIFYPEER, 1, "CURLOPT_SSL_VERIFYPEER")
                s.long(CURLOPT_SSL_VERIFYHOST, 2, "CURLOPT_SSL_VERIFYHOST")
            case .trustCertificate(let path):
                // This file only: the self-signed certificate is trusted for this server and
                // nothing else, and the system CAs play no part for it.
                s.long(CURLOPT_SSL_VERIFYPEER, 1, "CURLOPT_SSL_VERIFYPEER")
                s.long(CURLOPT_SSL_VERIFYHOST, 2, "CURLOPT_SSL_VERIFYHOST")
                s.str(CURLOPT_CAINFO, path, "CURLOPT_CAINFO")
                s.str(CURLOPT_CAPATH, nil, "CURLOPT_CAPATH")
            case .pinnedKey:
                // The pinned key is the identity; chain and name checks would refuse a self-signed node.
                s.long(CURLOPT_SSL_VERIFYPEER, 0, "CURLOPT_SSL_VERIFYPEER")
                s.long(CURLOPT_SSL_VERIFYHOST, 0, "CURLOPT_SSL_VERIFYHOST")
                s.str(CURLOPT_PINNEDPUBLICKEY, pin, "CURLOPT_PINNEDPUBLICKEY")
                pinReporting(&s, t)
            }
        }

        switch request.method {
        case .get:
            s.long(CURLOPT_HTTPGET, 1, "CURLOPT_HTTPGET")
        case .post:
            break
        case .put:
            s.str(CURLOPT_CUSTOMREQUEST, "PUT", "CURLOPT_CUSTOMREQUEST")
        case .delete:
            s.str(CURLOPT_CUSTOMREQUEST, "DELETE", "CURLOPT_CUSTOMREQUEST")
        }
        let hasBody = setBody(&s, t, request, body)
        t.preparedWithBody = hasBody

        if let problem = buildHeaders(t, request, hasBody: hasBody) { return problem }
        s.slist(CURLOPT_HTTPHEADER, t.headers, "CURLOPT_HTTPHEADER")
        return s.problem
    }

    /// Whether `request` sends a body (the header list differs): not GET, and for DELETE only a non-empty one.
    static func hasBody(_ request: CSRequest, _ body: UnsafeRawBufferPointer?) -> Bool {
        switch request.method {
        case .get: return false
        case .post, .put: return true
        case .delete: return (body.map { $0.count } ?? request.body?.count ?? 0) > 0
        }
    }

    /// The body options: the caller's memory as is, or our copy of request.body. Returns whether
    /// the request has a body.
    @discardableResult
    func setBody(
        _ s: inout OptionSetter, _ t: HTTPTransfer, _ request: CSRequest,
        _ body: UnsafeRawBufferPointer?
    ) -> Bool {
        // For the debug line at completion: a copy of the path's reference, no text built here.
        t.method = request.method
        t.path = request.path
        t.sentBytes = body?.count ?? request.body?.count ?? 0
        guard Self.hasBody(request, body) else { return false }
        var bodyPointer: UnsafeRawPointer = UnsafeRawPointer(t.ownedBody)
        var bodyCount = 0
        if let b = body {
            if let base = b.baseAddress, b.count > 0 {
                bodyPointer = base
                bodyCount = b.count
            }
        } else if let owned = request.body, !owned.isEmpty {
            bodyPointer = t.own(owned)
            bodyCount = owned.count
        }
        // POSTFIELDS points at the bytes (never COPYPOSTFIELDS); an empty body still needs a
        // valid pointer, or libcurl would read the body from stdin.
        s.off(CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(bodyCount), "CURLOPT_POSTFIELDSIZE_LARGE")
        s.ptr(CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: bodyPointer), "CURLOPT_POSTFIELDS")
        return true
    }

    /// Options every transfer gets, probes included.
    func commonOptions(_ s: inout OptionSetter, _ t: HTTPTransfer) {
        t.errorBuffer[0] = 0
        s.ptr(CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(t.errorBuffer), "CURLOPT_ERRORBUFFER")
        s.long(CURLOPT_NOSIGNAL, 1, "CURLOPT_NOSIGNAL")
        s.str(CURLOPT_PROTOCOLS_STR, "http,https", "CURLOPT_PROTOCOLS_STR")
        s.long(CURLOPT_CONNECTTIMEOUT_MS, connectTimeoutMs, "CURLOPT_CONNECTTIMEOUT_MS")
    }

    /// libcurl prints the server's key hash only in verbose mode; keep that one line, drop the rest.
    func pinReporting(_ s: inout OptionSetter, _ t: HTTPTransfer) {
        s.ptr(CURLOPT_DEBUGDATA, Unmanaged.passUnretained(t).toOpaque(), "CURLOPT_DEBUGDATA")
        s.debugCallback({ _, type, data, size, userdata -> Int32 in
            guard type == CURLINFO_TEXT, let data, let userdata else { return 0 }
            Unmanaged<HTTPTransfer>.fromOpaque(userdata).takeUnretainedValue()
                .onDebugText(UnsafeRawBufferPointer(start: data, count: size))
            return 0
        })
        s.long(CURLOPT_VERBOSE, 1, "CURLOPT_VERBOSE")
    }

    /// Fills `urlScratch` with the NUL-terminated URL for `path`, or says why it cannot be sent.
    func buildURL(_ path: String) -> String? {
        urlScratch.removeAll(keepingCapacity: true)
        let u = path.utf8
        for b in u where b <= 0x20 || b == 0x7F {
            return "the path contains a space or a control character; percent-encode it (CSURL.percentEncode)"
        }
        if Self.hasSchemePrefix(u) {
            // An absolute URL is allowed only to this node: the credentials go with every request.
            var i = u.startIndex
            for o in originLower {
                guard i != u.endIndex, HTTPBytes.lower(u[i]) == o else { return Self.foreign(path) }
                i = u.index(after: i)
            }
            if i != u.endIndex, u[i] != UInt8(ascii: "/"), u[i] != UInt8(ascii: "?") { return Self.foreign(path) }
            urlScratch.append(contentsOf: u)
        } else {
            urlScratch.append(contentsOf: root)
            if let first = u.first, first != UInt8(ascii: "/"), first != UInt8(ascii: "?") {
                urlScratch.append(UInt8(ascii: "/"))
            }
            urlScratch.append(contentsOf: u)
        }
        urlScratch.append(0)
        return nil
    }

    static func foreign(_ path: String) -> String {
        "absolute URL '\(path)' is not on the configured node; refusing to send credentials elsewhere"
    }

    /// Builds the request's curl_slist in order, plus the lines that switch libcurl's defaults off.
    func buildHeaders(_ t: HTTPTransfer, _ request: CSRequest, hasBody: Bool) -> String? {
        var hasAccept = false, hasContentType = false, hasAuthorization = false, hasUserAgent = false
        for h in request.headers {
            let name = h.name.utf8
            if name.isEmpty { return "a header has an empty name" }
            for b in name where b <= 0x20 || b == UInt8(ascii: ":") || b >= 0x7F {
                return "header name '\(h.name)' contains a space, a colon or a non-ASCII byte"
            }
            for b in h.value.utf8 where b == 13 || b == 10 || b == 0 {
                return "the value of header '\(h.name)' contains a line break"
            }
            if Self.equalsIgnoringCase(name, "accept") { hasAccept = true }
            if Self.equalsIgnoringCase(name, "content-type") { hasContentType = true }
            if Self.equalsIgnoringCase(name, "authorization") { hasAuthorization = true }
            if Self.equalsIgnoringCase(name, "user-agent") { hasUserAgent = true }
            lineScratch.removeAll(keepingCapacity: true)
            lineScratch.append(contentsOf: name)
            if h.value.utf8.contains(where: { !HTTPBytes.isSpace($0) }) {
                lineScratch.append(UInt8(ascii: ":"))
                lineScratch.append(UInt8(ascii: " "))
                lineScratch.append(contentsOf: h.value.utf8)
            } else {
                // "Name:" would remove the header; "Name;" sends it with an empty value.
                lineScratch.append(UInt8(ascii: ";"))
            }
            lineScratch.append(0)
            if !appendLine(t) { return "out of memory building the header list" }
        }
        if !hasAuthorization, let auth = authorizationLine, !appendLine(t, auth) {
            return "out of memory building the header list"
        }
        if !hasUserAgent, let ua = userAgentLine, !appendLine(t, ua) { return "out of memory building the header list" }
        // Without these libcurl adds `Accept: */*` (which turns node errors into HTML or a redirect),
        // `Expect: 100-continue` for large bodies, and a form Content-Type for POSTFIELDS.
        if !hasAccept, !appendLine(t, "Accept:") { return "out of memory building the header list" }
        if hasBody {
            if !appendLine(t, "Expect:") { return "out of memory building the header list" }
            if !hasContentType, !appendLine(t, "Content-Type:") { return "out of memory building the header list" }
        }
        return nil
    }

    func appendLine(_ t: HTTPTransfer) -> Bool {
        let list = lineScratch.withUnsafeBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { curl_slist_append(t.headers, $0.baseAddress) }
        }
        guard let list else { return false }
        t.headers = list
        return true
    }

    func appendLine(_ t: HTTPTransfer, _ line: String) -> Bool {
        guard let list = curl_slist_append(t.headers, line) else { return false }
        t.headers = list
        return true
    }

    static func equalsIgnoringCase(_ u: String.UTF8View, _ word: StaticString) -> Bool {
        guard u.count == word.utf8CodeUnitCount else { return false }
        var i = 0
        for b in u {
            if HTTPBytes.lower(b) != HTTPBytes.lower(word.utf8Start[i]) { return false }
            i += 1
        }
        return true
    }

    static func hasSchemePrefix(_ u: String.UTF8View) -> Bool {
        for scheme: StaticString in ["http://", "https://"] {
            let n = scheme.utf8CodeUnitCount
            guard u.count >= n else { continue }
            var i = 0
            var match = true
            for b in u.prefix(n) {
                if HTTPBytes.lower(b) != scheme.utf8Start[i] { match = false; break }
                i += 1
            }
            if match { return true }
        }
        return false
    }

    // MARK: Configuration helpers

    static func parseRoot(_ apiRoot: String) -> (root: [UInt8], origin: [UInt8], https: Bool)? {
        var bytes = Array(apiRoot.utf8)
        while let f = bytes.first, HTTPBytes.isSpace(f) { bytes.removeFirst() }
        while let l = bytes.last, HTTPBytes.isSpace(l) { bytes.removeLast() }
        while bytes.last == UInt8(ascii: "/") { bytes.removeLast() }
        let u = String(decoding: bytes, as: UTF8.self).utf8
        guard hasSchemePrefix(u) else { return nil }
        let https = HTTPBytes.lower(bytes[4]) == UInt8(ascii: "s")
        let authorityStart = https ? 8 : 7
        var end = authorityStart
        while end < bytes.count, bytes[end] != UInt8(ascii: "/"), bytes[end] != UInt8(ascii: "?"),
            bytes[end] != UInt8(ascii: "#")
        {
            let b = bytes[end]
            // Credentials belong in NodeEndpoint.credentials, not in the URL (they would end up in logs).
            if b == UInt8(ascii: "@") || b <= 0x20 || b == 0x7F { return nil }
            end += 1
        }
        guard end > authorityStart else { return nil }
        for b in bytes[end...] where b <= 0x20 || b == 0x7F { return nil }
        return (bytes, Array(bytes[..<end]), https)
    }

    /// Seconds as libcurl milliseconds; 0 (or less, or not finite) stays 0, libcurl's "default / no limit".
    static func milliseconds(_ seconds: Double) -> Int {
        guard seconds.isFinite, seconds > 0 else { return 0 }
        return max(1, Int(min(seconds, 86_400) * 1000))
    }
}

/// Sets options on one easy handle and keeps the first refusal, named, for the error message.
struct OptionSetter {
    let easy: UnsafeMutableRawPointer
    var problem: String?

    init(_ easy: UnsafeMutableRawPointer) { self.easy = easy }

    private mutating func check(_ rc: CURLcode, _ name: StaticString) {
        guard rc != CURLE_OK, problem == nil else { return }
        problem =
            "libcurl refused \(name): \(String(cString: curl_easy_strerror(rc)))"
            + (rc == CURLE_NOT_BUILT_IN || rc == CURLE_UNKNOWN_OPTION
                ? " (this libcurl lacks the feature; osh-edge needs libcurl 7.88 or later built with OpenSSL)" : "")
    }

    mutating func long(_ o: CURLoption, _ v: Int, _ name: StaticString) {
        check(osh_curl_easy_setopt_long(easy, o, v), name)
    }

    mutating func off(_ o: CURLoption, _ v: curl_off_t, _ name: StaticString) {
        check(osh_curl_easy_setopt_off(easy, o, v), name)
    }

    mutating func cstr(_ o: CURLoption, _ v: UnsafePointer<CChar>?, _ name: StaticString) {
        check(osh_curl_easy_setopt_str(easy, o, v), name)
    }

    mutating func str(_ o: CURLoption, _ v: String?, _ name: StaticString) {
        if let v {
            check(osh_curl_easy_setopt_str(easy, o, v), name)
        } else {
            check(osh_curl_easy_setopt_str(easy, o, nil), name)
        }
    }

    mutating func ptr(_ o: CURLoption, _ v: UnsafeMutableRawPointer?, _ name: StaticString) {
        check(osh_curl_easy_setopt_ptr(easy, o, v), name)
    }

    mutating func slist(_ o: CURLoption, _ v: UnsafeMutablePointer<curl_slist>?, _ name: StaticString) {
        check(osh_curl_easy_setopt_slist(easy, o, v), name)
    }

    mutating func writeCallback(_ o: CURLoption, _ cb: curl_write_callback?, _ name: StaticString) {
        check(osh_curl_easy_setopt_write_cb(easy, o, cb), name)
    }

    mutating func debugCallback(_ cb: curl_debug_callback?) {
        check(osh_curl_easy_setopt_debug_cb(easy, cb), "CURLOPT_DEBUGFUNCTION")
    }
}
