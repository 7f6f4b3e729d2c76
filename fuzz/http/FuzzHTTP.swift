// libFuzzer target for the response side of HTTP: the header callback that keeps Location and
// Content-Type (OSHPlatform/HTTP/HTTPTransfer.swift, fed line by line as libcurl does), the
// Location → resource id extraction and the node's error-body parser (OSHCore/ConSys/Responses.swift).
// Built by fuzz/run.sh http against all of OSHCore, with the two HTTP files in its own module (libcurl
// linked, never called beyond curl_easy_init).
//
// Input: header lines up to the first empty line, then the body.
// Each input is checked for:
//  * no crash, no out-of-bounds access (AddressSanitizer), no trap;
//  * the kept Location is the trimmed value of the last `Location:` line after the last status line;
//  * an id taken from a Location is non-empty and comes back from `/systems/<percent-encoded id>`;
//  * the error summary is one line of at most NodeError.summaryLimit characters, never empty.

@testable import OSHCore

/// libcurl's handle is made once; a transfer is reused for every input as the client's pool does.
nonisolated(unsafe) private let transfer: HTTPTransfer? = HTTPTransfer(bodyLimit: 1 << 20)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    guard let t = transfer else { preconditionFailure("curl_easy_init failed") }
    t.clearResponse()

    // Header lines, each with its line end, as libcurl hands them over; a blank line ends them.
    var expected: String?
    var pos = 0
    while pos < input.count {
        var end = pos
        while end < input.count, input[end] != 0x0A { end += 1 }
        if end < input.count { end += 1 }
        let line = UnsafeRawBufferPointer(rebasing: input[pos..<end])
        pos = end
        if line.allSatisfy({ $0 == 0x0D || $0 == 0x0A }) { break }
        t.onHeader(line)
        let text = Array(line)
        if text.starts(with: Array("HTTP/".utf8)) {
            expected = nil
        } else if let colon = text.firstIndex(of: UInt8(ascii: ":")),
            String(decoding: text[..<colon], as: UTF8.self).lowercased() == "location"
        {
            expected = trimmed(text[(colon + 1)...])
        }
    }
    precondition(t.location == expected, "kept Location \(String(describing: t.location)), expected \(String(describing: expected))")
    if let ct = t.contentType { precondition(trimmed(Array(ct.utf8)[...]) == ct, "Content-Type not trimmed") }

    // Location → id, from the header and from the whole input as one string.
    for location in [t.location, String(decoding: input, as: UTF8.self)] {
        for collection in [nil, "systems"] {
            guard let id = CSResponse.resourceID(fromLocation: location, collection: collection) else { continue }
            precondition(!id.isEmpty && id != "." && id != ".." && id != collection)
            let back = CSResponse.resourceID(fromLocation: "/systems/" + CSURL.percentEncode(id))
            precondition(back == id, "id \(id) came back as \(String(describing: back))")
        }
    }

    // The error body.
    let body = Array(input[pos...])
    for b in [body, Array(input)] {
        let e = NodeError.parse(b)
        precondition(!e.summary.isEmpty && e.summary.count <= NodeError.summaryLimit, "summary length \(e.summary.count)")
        precondition(!e.summary.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "summary not one line")
        precondition(e.summary.first != " " && e.summary.last != " ", "summary not trimmed")
    }
    return 0
}

/// HTTP header whitespace (space, tab, CR, LF) off both ends.
private func trimmed(_ b: ArraySlice<UInt8>) -> String {
    var s = b
    while let f = s.first, f == 0x20 || f == 0x09 || f == 0x0D || f == 0x0A { s = s.dropFirst() }
    while let l = s.last, l == 0x20 || l == 0x09 || l == 0x0D || l == 0x0A { s = s.dropLast() }
    return String(decoding: s, as: UTF8.self)
}
