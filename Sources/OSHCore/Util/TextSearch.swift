// Substring search in the standard library proper. `String.contains(String)` is defined in
// _StringProcessing: one call links that module and _RegexParser (≈ 1.3 MB of code) into the
// service binary, which otherwise uses neither.

extension StringProtocol {
    /// Whether `needle`'s UTF-8 bytes occur in this text (byte-wise: meant for ASCII needles such
    /// as path parts and protocol words; "" is in every text).
    public func hasSubstring(_ needle: String) -> Bool {
        let bytes = utf8
        var start = bytes.startIndex
        while true {
            if bytes[start...].starts(with: needle.utf8) { return true }
            if start == bytes.endIndex { return false }
            bytes.formIndex(after: &start)
        }
    }
}
