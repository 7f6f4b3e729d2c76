/// The typed readers every section uses (each reports a wrong value with its line and what is
/// allowed), the checks of paths and URLs, and the "did you mean" suggestions.
extension SettingsReader {
    // MARK: Typed values

    /// Set in the file, even if its line had a syntax error (so "missing" is not reported twice).
    func present(_ s: ConfigSection, _ key: String) -> Bool {
        s.entry(key) != nil || s.damagedKeys.contains(key)
    }

    mutating func string(_ s: ConfigSection, _ key: String) -> (String, Int)? {
        guard let e = s.entry(key) else { return nil }
        guard case .string(let v) = e.value else {
            let hint = e.value.rendered.contains(" ") ? "" : ": write \(ConfigValue.quote(e.value.rendered))"
            fail(
                e.line,
                "'\(key)' in \(s.title) must be a quoted string; got \(e.value.kindName)"
                    + (e.value.kindName == "a list" ? "" : hint))
            return nil
        }
        return (v, e.line)
    }

    mutating func bool(_ s: ConfigSection, _ key: String) -> Bool? {
        guard let e = s.entry(key) else { return nil }
        guard case .boolean(let v) = e.value else {
            var m = "'\(key)' in \(s.title) must be true or false; got \(e.value.kindName)"
            if case .string(let t) = e.value, t == "true" || t == "false" { m += ": remove the quotes" }
            fail(e.line, m)
            return nil
        }
        return v
    }

    mutating func integer(_ s: ConfigSection, _ key: String, _ range: ClosedRange<Int>) -> Int? {
        guard let e = s.entry(key) else { return nil }
        let allowed = "\(range.lowerBound) to \(range.upperBound)"
        guard case .integer(let v) = e.value else {
            var m = "'\(key)' in \(s.title) must be a whole number from \(allowed); got \(e.value.kindName)"
            if case .string(let t) = e.value, Int(t) != nil { m += ": remove the quotes" }
            fail(e.line, m)
            return nil
        }
        guard range.contains(v) else {
            fail(e.line, "\(key) = \(v) in \(s.title) is out of range; allowed: \(allowed)")
            return nil
        }
        return v
    }

    mutating func number(
        _ s: ConfigSection, _ key: String, _ range: ClosedRange<Double>,
        lowerExclusive: Bool = false, unit: String
    ) -> Double? {
        guard let e = s.entry(key) else { return nil }
        let allowed =
            lowerExclusive
            ? "more than \(Self.format(range.lowerBound)), up to \(Self.format(range.upperBound)) \(unit)"
            : "\(Self.format(range.lowerBound)) to \(Self.format(range.upperBound)) \(unit)"
        let v: Double
        switch e.value {
        case .integer(let i): v = Double(i)
        case .decimal(let d): v = d
        default:
            var m = "'\(key)' in \(s.title) must be a number, \(allowed); got \(e.value.kindName)"
            if case .string(let t) = e.value, Double(t) != nil { m += ": remove the quotes" }
            fail(e.line, m)
            return nil
        }
        let low = lowerExclusive ? v > range.lowerBound : v >= range.lowerBound
        guard low, v <= range.upperBound else {
            fail(e.line, "\(key) = \(e.value.rendered) in \(s.title) is out of range; allowed: \(allowed)")
            return nil
        }
        return v
    }

    mutating func choice<T>(_ s: ConfigSection, _ key: String, _ options: [(String, T)]) -> T? {
        guard let e = s.entry(key) else { return nil }
        let names = options.map(\.0)
        let allowed = names.map(ConfigValue.quote).joined(separator: ", ")
        guard case .string(let v) = e.value else {
            var m = "'\(key)' in \(s.title) must be one of \(allowed); got \(e.value.kindName)"
            if names.contains(e.value.rendered) { m += ": write it in quotes, \(ConfigValue.quote(e.value.rendered))" }
            fail(e.line, m)
            return nil
        }
        guard let hit = options.first(where: { $0.0 == v }) else {
            fail(
                e.line,
                "\(key) = \(ConfigValue.quote(v)) in \(s.title) is not allowed"
                    + "\(Self.hint(v, names, quoted: true)); allowed: \(allowed)")
            return nil
        }
        return hit.1
    }

    // MARK: Checks

    static func urlProblem(_ u: String) -> String? {
        let lower = u.lowercased()
        let scheme = lower.hasPrefix("http://") ? 7 : lower.hasPrefix("https://") ? 8 : 0
        guard scheme > 0 else {
            return "must start with http:// or https://, as \"https://node.example.org/sensorhub/api\""
        }
        let bytes = Array(u.utf8)
        if bytes.contains(where: { $0 <= 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "\"") }) {
            return "cannot contain spaces, quotes or control characters"
        }
        var end = scheme
        while end < bytes.count, bytes[end] != UInt8(ascii: "/"), bytes[end] != UInt8(ascii: "?"),
            bytes[end] != UInt8(ascii: "#")
        {
            if bytes[end] == UInt8(ascii: "@") {
                return "cannot hold a user name or password: put the user in 'user' and the password in "
                    + Secrets.defaultPath
            }
            end += 1
        }
        if end == scheme { return "has no host name after the scheme" }
        // host[:port]: a port is 1 to 65535 (IPv6 literals in brackets keep their colons).
        let authority = String(decoding: bytes[scheme..<end], as: UTF8.self)
        let hostEnd = authority.hasPrefix("[") ? authority.firstIndex(of: "]").map { authority.index(after: $0) } : nil
        if let colon = authority[(hostEnd ?? authority.startIndex)...].lastIndex(of: ":") {
            let port = authority[authority.index(after: colon)...]
            guard let n = Int(port), n >= 1, n <= 65535, port.allSatisfy(\.isASCII) else {
                return "has port \(ConfigValue.quote(String(port))): a port is a number from 1 to 65535 (OSH listens on 8181)"
            }
        }
        // The API root is a path on the node; a bare host answers 404 to every request.
        if end == bytes.count {
            return "has no API path: an OSH node's API root is http://HOST:8181/sensorhub/api "
                + "(end the URL with / if this node's API really is at the root)"
        }
        return nil
    }

    static func pathProblem(_ p: String) -> String? {
        if !p.hasPrefix("/") { return "must be an absolute path (starting with /)" }
        if p.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            return "cannot contain control characters"
        }
        return nil
    }

    static func format(_ d: Double) -> String {
        if d == d.rounded(), abs(d) < 1e15 { return String(Int(d)) }
        return String(d)
    }

    // MARK: Suggestions

    /// ` (did you mean 'x'?)` when a known word is close to `word`, else "".
    static func hint(_ word: String, _ known: [String], bracket: Bool = false, quoted: Bool = false) -> String {
        guard let s = suggestion(word, known) else { return "" }
        let shown =
            bracket
            ? (s == "server" ? "[server.NAME]" : s == "outputs" ? "[outputs.NAME]" : "[\(s)]")
            : quoted ? ConfigValue.quote(s) : "'\(s)'"
        return " (did you mean \(shown)?)"
    }

    static func suggestion(_ word: String, _ known: [String]) -> String? {
        let w = Array(word.lowercased().unicodeScalars)
        guard !w.isEmpty, w.count <= 64 else { return nil }
        var best: (String, Int)?
        for k in known {
            let c = Array(k.lowercased().unicodeScalars)
            if c == w { return k }
            guard abs(c.count - w.count) <= 2 else { continue }
            let d = distance(w, c)
            let limit = min(c.count, w.count) <= 4 ? 1 : 2
            if d <= limit, best.map({ d < $0.1 }) ?? true { best = (k, d) }
        }
        if let best { return best.0 }
        // A prefix of exactly one known word: `gps` → `gps_data`.
        let word = word.lowercased()
        let prefixed = known.filter { $0.lowercased().hasPrefix(word) }
        return word.count >= 3 && prefixed.count == 1 ? prefixed[0] : nil
    }

    /// Edit distance counting an adjacent transposition as one edit.
    static func distance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        let w = b.count + 1
        var d = [Int](repeating: 0, count: (a.count + 1) * w)
        for i in 0...a.count { d[i * w] = i }
        for j in 0...b.count { d[j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var v = min(d[(i - 1) * w + j] + 1, d[i * w + j - 1] + 1, d[(i - 1) * w + j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    v = min(v, d[(i - 2) * w + j - 2] + 1)
                }
                d[i * w + j] = v
            }
        }
        return d[a.count * w + b.count]
    }
}
