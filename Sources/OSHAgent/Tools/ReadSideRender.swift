import OSHCore

/// Tables for a person at a terminal and JSON (`--json`) for scripts, from ReadSide's values.
/// JSON documents are one line each; times are ISO-8601 UTC strings.
public enum ReadSideRender {
    // MARK: Systems

    public static func systemsTable(_ rows: [ReadSide.SystemRow], now: Double) -> String {
        var t = Table(["activity", "id", "uid", "name", "datastreams", "newest", "age"])
        for r in rows {
            t.add([
                r.activity.rawValue, r.system.id, r.system.uid, r.system.name, String(r.datastreamCount),
                timeText(r.newest), Activity.ageText(r.newest, now: now),
            ])
        }
        return rows.isEmpty ? "the node holds no systems" : t.render()
    }

    public static func systemsJSON(_ rows: [ReadSide.SystemRow], now: Double) -> String {
        document { w in
            w.beginObject()
            w.key("systems"); w.beginArray()
            for r in rows {
                w.beginObject()
                w.key("id"); w.string(r.system.id)
                w.key("uid"); w.string(r.system.uid)
                w.key("name"); w.string(r.system.name)
                if let d = r.system.description { w.key("description"); w.string(d) }
                w.key("datastreams"); w.int(r.datastreamCount)
                w.key("newest"); observed(r.newest, &w)
                w.key("activity"); w.string(r.activity.rawValue)
                w.endObject()
            }
            w.endArray()
            w.endObject()
        }
    }

    // MARK: Datastreams

    public static func datastreamsTable(_ system: NodeSystem, _ rows: [ReadSide.DatastreamRow], now: Double) -> String {
        var t = Table(["activity", "id", "output", "formats", "newest", "age"])
        for r in rows {
            let d = r.datastream
            t.add([
                r.activity.rawValue, d.id, d.outputName, d.formats.map(shortFormat).joined(separator: ","),
                timeText(d.newest), Activity.ageText(d.newest, now: now),
            ])
        }
        let head = "system \(system.id) \(system.uid) \(system.name)"
        return rows.isEmpty ? head + "\nno datastreams" : head + "\n" + t.render()
    }

    public static func datastreamsJSON(_ system: NodeSystem, _ rows: [ReadSide.DatastreamRow]) -> String {
        document { w in
            w.beginObject()
            w.key("system"); w.beginObject()
            w.key("id"); w.string(system.id)
            w.key("uid"); w.string(system.uid)
            w.key("name"); w.string(system.name)
            w.endObject()
            w.key("datastreams"); w.beginArray()
            for r in rows {
                let d = r.datastream
                w.beginObject()
                w.key("id"); w.string(d.id)
                w.key("name"); w.string(d.name)
                w.key("outputName"); w.string(d.outputName)
                w.key("formats"); w.beginArray(); for f in d.formats { w.string(f) }; w.endArray()
                w.key("newest"); observed(d.newest, &w)
                w.key("activity"); w.string(r.activity.rawValue)
                w.endObject()
            }
            w.endArray()
            w.endObject()
        }
    }

    // MARK: Schema

    public static func schemaTable(_ s: ReadSide.RemoteSchema) -> String {
        var t = Table(["field", "type", "unit", "definition"])
        for leaf in s.leaves {
            let c = leaf.component
            var unit = ""
            switch c.kind {
            case .quantity(let q): unit = uomText(q.uom)
            case .time(let x): unit = x.isISO ? "ISO 8601" : uomText(x.uom)
            default: break
            }
            var type = c.typeName
            if let e = s.schema.encoding, let m = e.members.first(where: { $0.ref == leaf.path }) {
                switch m {
                case .component(_, let dt): type += " (" + dt.rawValue + ")"
                case .block(_, let compression, _): type += " (block" + (compression.map { ", " + $0 } ?? "") + ")"
                }
            }
            t.add([fieldName(leaf.path, s.datastream), type, unit, c.definition ?? ""])
        }
        return "datastream \(s.datastream.id) \(s.datastream.outputName), \(s.obsFormat)\n" + t.render()
    }

    /// The node's schema document as it came.
    public static func schemaJSON(_ s: ReadSide.RemoteSchema) -> String { ReadSideJSON.string(s.body) }

    // MARK: Observations

    public static func observationsTable(_ p: ReadSide.ObservationPage) -> String {
        let fields = p.leaves.filter { $0.path != p.timePath }
        var t = Table(["time"] + fields.map { fieldName($0.path, p.datastream) })
        for r in p.records {
            var row = [p.time(of: r).map { ISOTime.string(epochSeconds: $0) } ?? "-"]
            for f in fields { row.append(valueText(r[f.path] ?? .absent)) }
            t.add(row)
        }
        var out = "datastream \(p.datastream.id) \(p.datastream.outputName), \(p.records.count) record(s) as \(p.format)"
        if !p.records.isEmpty { out += "\n" + t.render() }
        if let e = p.decodeError { out += "\nwarning: decoding stopped: \(e)" }
        if let note = fewerNote(p) { out += "\n" + note }
        return out
    }

    /// Fewer records than asked for, and no next page: say that the node holds no more (osh-core's
    /// in-memory store keeps only each datastream's newest observation), so a reader does not
    /// take one record for the board sending one.
    static func fewerNote(_ p: ReadSide.ObservationPage) -> String? {
        guard let n = p.asked, p.records.count < n, !p.nodePages, p.decodeError == nil else { return nil }
        return "note: asked for the newest \(n), the node returned \(p.records.count) and offers no next page: it holds no more"
            + (p.records.count == 1 ? " (an OSH node running its in-memory store keeps only the newest observation per datastream)" : "")
    }

    public static func observationsJSON(_ p: ReadSide.ObservationPage) -> String {
        document { w in
            w.beginObject()
            w.key("datastream"); w.string(p.datastream.id)
            w.key("outputName"); w.string(p.datastream.outputName)
            w.key("format"); w.string(p.format)
            w.key("records"); w.beginArray()
            for r in p.records {
                w.beginObject()
                if let id = r.id { w.key("id"); w.string(id) }
                w.key("time")
                if let t = p.time(of: r), t.isFinite { w.string(ISOTime.string(epochSeconds: t)) } else { w.null() }
                if let rt = r.resultTime, rt.isFinite { w.key("resultTime"); w.string(ISOTime.string(epochSeconds: rt)) }
                w.key("values"); w.beginObject()
                for f in r.fields where f.path != p.timePath {
                    w.key(fieldName(f.path, p.datastream))
                    value(f.value, &w)
                }
                w.endObject()
                w.endObject()
            }
            w.endArray()
            if let e = p.decodeError { w.key("decodeError"); w.string(e.description) }
            w.endObject()
        }
    }

    // MARK: Control streams

    public static func controlStreamsTable(_ s: NodeSystem, _ rows: [ReadSide.ControlStreamRow]) -> String {
        var t = Table(["id", "input", "name", "commands"])
        for r in rows { t.add([r.id, r.inputName, r.name, r.commands.joined(separator: ", ")]) }
        let head = "system \(s.id) \(s.uid), \(rows.count) control stream\(rows.count == 1 ? "" : "s")"
        return rows.isEmpty
            ? head + " (osh-edge creates device_control when it registers with commands on)"
            : head + "\n" + t.render() + "\nsend one: osh-edge command ID '{\"COMMAND\":{…}}'"
    }

    public static func controlStreamsJSON(_ s: NodeSystem, _ rows: [ReadSide.ControlStreamRow]) -> String {
        document { w in
            w.beginObject()
            w.key("system"); w.string(s.id)
            w.key("controlstreams"); w.beginArray()
            for r in rows {
                w.beginObject()
                w.key("id"); w.string(r.id)
                w.key("inputName"); w.string(r.inputName)
                w.key("name"); w.string(r.name)
                w.key("commands"); w.beginArray(); for c in r.commands { w.string(c) }; w.endArray()
                w.endObject()
            }
            w.endArray()
            w.endObject()
        }
    }

    // MARK: Commands

    public static func commandText(_ o: ReadSide.CommandOutcome) -> String {
        let secs = "\(Int(o.seconds.rounded())) s"
        guard let id = o.commandID else {
            var lines = ["command on control stream \(o.controlStream): the node kept no command (HTTP \(o.httpStatus) after \(secs))"]
            if o.httpStatus == 202 {
                lines.append(
                    "the node accepted it but no receiver acknowledged it in its window"
                        + (o.nodeMessage.map { " (\"\($0)\")" } ?? "") + ": nothing is listening on this control stream — "
                        + "is osh-edge running on the board, and does its log say \"commands: listening on control stream "
                        + "\(o.controlStream)\"? (an OSH node stores a command only when a receiver is connected)")
            } else {
                lines.append("the node's answer had no status report" + (o.nodeMessage.map { ": \($0)" } ?? ""))
            }
            return lines.joined(separator: "\n")
        }
        var lines = ["command \(id) on control stream \(o.controlStream)"]
        guard let r = o.latestReport ?? o.firstReport else {
            lines.append(
                "status: the node returned HTTP \(o.httpStatus) without a status report"
                    + (o.listingError.map { "; its status reports could not be read: \($0)" } ?? ""))
            return lines.joined(separator: "\n")
        }
        var s = "status: \(r.statusCode.isEmpty ? "(none)" : r.statusCode)"
        if let t = r.reportTime { s += " at \(ISOTime.string(epochSeconds: t))" }
        if let m = r.message, !m.isEmpty { s += " — \(m)" }
        lines.append(s)
        if !r.isFinal {
            lines.append(
                "no final status within \(secs): the board has the command but reported no outcome yet — see its log"
                    + (o.listingError.map { " (its status reports could not be read: \($0))" } ?? ""))
        } else if let first = o.firstReport, !first.isFinal {
            lines.append(
                "(the node answered \(first.statusCode) when its window ended — an OSH node does not hand a status "
                    + "posted over HTTP back to the sender — and the outcome was read from its status reports after \(secs))")
        }
        return lines.joined(separator: "\n")
    }

    public static func commandJSON(_ o: ReadSide.CommandOutcome) -> String {
        document { w in
            w.beginObject()
            w.key("controlstream"); w.string(o.controlStream)
            w.key("httpStatus"); w.int(o.httpStatus)
            w.key("command@id"); if let id = o.commandID { w.string(id) } else { w.null() }
            w.key("statusCode"); if let s = o.status, !s.isEmpty { w.string(s) } else { w.null() }
            if let m = (o.latestReport ?? o.firstReport)?.message { w.key("message"); w.string(m) }
            if let first = o.firstReport { w.key("firstStatusCode"); w.string(first.statusCode) }
            if let m = o.nodeMessage { w.key("nodeMessage"); w.string(m) }
            w.key("seconds"); w.number((o.seconds * 10).rounded() / 10)
            w.endObject()
        }
    }

    // MARK: Pieces

    /// A leaf path as a column / key name: `location/lat`; a scalar root takes the output's name.
    static func fieldName(_ path: String, _ d: NodeDatastream) -> String {
        if path == "/" { return d.outputName.isEmpty ? "value" : d.outputName }
        return path.hasPrefix("/") ? String(path.dropFirst()) : path
    }

    static func shortFormat(_ f: String) -> String { f.hasPrefix("application/") ? String(f.dropFirst("application/".count)) : f }

    static func uomText(_ u: UnitOfMeasure) -> String {
        switch u {
        case .code(let c): return c
        case .href(let h): return h
        }
    }

    static func timeText(_ t: ObservedTime?) -> String {
        switch t {
        case nil: return "-"
        case .now?: return "now"
        case .at(let s)?: return ISOTime.string(epochSeconds: s)
        }
    }

    static func valueText(_ v: SWEValue) -> String {
        switch v {
        case .time(let t): return t.isFinite && abs(t) > 1e8 ? ISOTime.string(epochSeconds: t) : number(t)
        case .number(let d): return number(d)
        case .count(let n): return String(n)
        case .bool(let b): return b ? "true" : "false"
        case .text(let s): return s
        case .block(let b): return "<\(b.count) bytes>"
        case .array(let a): return "[\(a.count) items]"
        case .record(let r): return "{" + r.fields.map { "\($0.path.dropFirst())=\(valueText($0.value))" }.joined(separator: " ") + "}"
        case .choice(let item, let r): return item + "(" + r.fields.map { valueText($0.value) }.joined(separator: ",") + ")"
        case .absent: return "-"
        }
    }

    /// Shortest text that reads back as the same Double (Swift's description), NaN as "NaN".
    static func number(_ d: Double) -> String {
        if d.isNaN { return "NaN" }
        if d == d.rounded(), abs(d) < 1e15 { return String(Int(d)) }
        return String(d)
    }

    static func observed(_ t: ObservedTime?, _ w: inout JSONWriter) {
        switch t {
        case nil: w.null()
        case .now?: w.string("now")
        case .at(let s)?: if s.isFinite { w.string(ISOTime.string(epochSeconds: s)) } else { w.null() }
        }
    }

    /// A decoded value as JSON: numbers as numbers (non-finite as null), ISO times as strings,
    /// a Block as `{"bytes": N}`, arrays, records and choices nested.
    static func value(_ v: SWEValue, _ w: inout JSONWriter) {
        switch v {
        case .time(let t):
            if !t.isFinite { w.null() } else if abs(t) > 1e8 { w.string(ISOTime.string(epochSeconds: t)) } else { w.number(t) }
        case .number(let d): if d.isFinite { w.number(d) } else { w.null() }
        case .count(let n): w.int(n)
        case .bool(let b): w.bool(b)
        case .text(let s): w.string(s)
        case .block(let b): w.beginObject(); w.key("bytes"); w.int(b.count); w.endObject()
        case .array(let a): w.beginArray(); for x in a { value(x, &w) }; w.endArray()
        case .record(let r): record(r, &w)
        case .choice(let item, let r): w.beginObject(); w.key(item); record(r, &w); w.endObject()
        case .absent: w.null()
        }
    }

    static func record(_ r: SWERecordValue, _ w: inout JSONWriter) {
        if r.fields.count == 1, r.fields[0].path == "/" { return value(r.fields[0].value, &w) }
        w.beginObject()
        for f in r.fields {
            w.key(f.path.hasPrefix("/") ? String(f.path.dropFirst()) : f.path)
            value(f.value, &w)
        }
        w.endObject()
    }

    static func document(_ build: (inout JSONWriter) -> Void) -> String {
        let b = ByteBuffer(capacity: 1024)
        var w = JSONWriter(b)
        build(&w)
        return b.string
    }

    /// Left-aligned columns, two spaces apart; cells cut at 48 characters except in the last
    /// column (a definition URI is read whole, and nothing follows it to misalign).
    struct Table {
        var rows: [[String]]
        init(_ header: [String]) { rows = [header] }
        mutating func add(_ r: [String]) {
            rows.append(r.enumerated().map { i, c in i < r.count - 1 && c.count > 48 ? String(c.prefix(47)) + "…" : c })
        }
        func render() -> String {
            let n = rows.map(\.count).max() ?? 0
            var widths = [Int](repeating: 0, count: n)
            for r in rows { for (i, c) in r.enumerated() { widths[i] = Swift.max(widths[i], c.count) } }
            return rows.map { r in
                var line = ""
                for (i, c) in r.enumerated() {
                    line += c
                    if i < r.count - 1 { line += String(repeating: " ", count: widths[i] - c.count + 2) }
                }
                return line
            }.joined(separator: "\n")
        }
    }
}
