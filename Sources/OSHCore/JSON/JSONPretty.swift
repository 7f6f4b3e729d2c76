// Re-indents compact JSON for people (the CLI). Works on the bytes as written,
// so key order is exactly what goes on the wire.
public enum JSONPretty {
    public static func format(_ compact: String, indent: String = "  ") -> String {
        var out = ""
        var level = 0
        var inString = false
        var escaped = false
        var chars = Array(compact)
        var i = 0
        func newline() { out.append("\n"); for _ in 0..<level { out.append(indent) } }
        while i < chars.count {
            let c = chars[i]
            if inString {
                out.append(c)
                if escaped { escaped = false } else if c == "\\" { escaped = true } else if c == "\"" { inString = false }
                i += 1
                continue
            }
            switch c {
            case "\"": inString = true; out.append(c)
            case "{", "[":
                // Keep empty containers on one line.
                if i + 1 < chars.count, chars[i + 1] == (c == "{" ? "}" : "]") {
                    out.append(c); out.append(chars[i + 1]); i += 1
                } else {
                    out.append(c); level += 1; newline()
                }
            case "}", "]": level -= 1; newline(); out.append(c)
            case ",": out.append(c); newline()
            case ":": out.append(": ")
            case " ", "\n", "\t", "\r": break
            default: out.append(c)
            }
            i += 1
        }
        chars.removeAll()
        return out
    }
}
