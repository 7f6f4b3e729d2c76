/// `pin_sha256` (and `--pin-sha256`): the SHA-256 of a server's SubjectPublicKeyInfo, base64,
/// with or without `sha256//`; several separated by ';' (a node and its broker with different
/// keys, or a key being replaced). One parser for the config reader, HTTPS and the MQTT broker.
public enum KeyPins {
    /// Each pin as bare base64 (44 characters, 32 bytes), in order; nil when one is not a pin.
    public static func parse(_ value: String) -> [String]? {
        var out: [String] = []
        for var part in value.split(separator: ";", omittingEmptySubsequences: false) {
            while let f = part.first, f == " " || f == "\t" || f == "\n" || f == "\r" { part.removeFirst() }
            while let l = part.last, l == " " || l == "\t" || l == "\n" || l == "\r" { part.removeLast() }
            if part.hasPrefix("sha256//") { part = part.dropFirst(8) }
            let u = Array(part.utf8)
            guard u.count == 44, u.last == UInt8(ascii: "="), u[42] != UInt8(ascii: "="),
                !u.contains(where: { $0 <= 0x20 }), Base64.decode(u)?.count == 32
            else { return nil }
            out.append(String(part))
        }
        return out.isEmpty ? nil : out
    }

    /// `sha256//<base64>` for each pin, joined by ';', as libcurl's CURLOPT_PINNEDPUBLICKEY takes
    /// them; nil when one is not a pin.
    public static func curlForm(_ value: String) -> String? {
        parse(value).map { $0.map { "sha256//" + $0 }.joined(separator: ";") }
    }
}
