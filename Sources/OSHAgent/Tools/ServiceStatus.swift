#if canImport(Glibc)
import Glibc
#endif
import OSHCore
import OSHPlatform

/// `osh-edge status`: what the running service is doing, read from its counters file (written
/// once a second by the service, `[paths] counters_file`; no socket, nothing listening).
public struct ServiceStatus: Sendable, Equatable {
    public struct Output: Sendable, Equatable {
        public var name: String
        public var counters: [String: Int]
        public func value(_ key: String) -> Int { counters[key] ?? 0 }
        /// The drop reasons that are not zero, `reason=count`.
        public var dropReasons: [String] {
            counters.filter { $0.key.hasPrefix("dropped_") && $0.value > 0 }.sorted { $0.key < $1.key }
                .map { "\($0.key.dropFirst("dropped_".count))=\($0.value)" }
        }
    }

    public var path: String
    public var header: [String: String]
    public var outputs: [Output]

    public var pid: Int? { header["pid"].flatMap { Int($0) } }
    public var written: Double? { header["written"].flatMap { Double($0) } }
    public var started: Double? { header["started"].flatMap { Double($0) } }

    /// The counters file's text (`CountersFile.swift`); nil when it is not one.
    public static func parse(_ text: String, path: String) -> ServiceStatus? {
        var lines = text.split(separator: "\n")
        guard let first = lines.first, first.hasPrefix("counters ") else { return nil }
        lines.removeFirst()
        var header: [String: String] = [:]
        for kv in first.split(separator: " ").dropFirst() {
            let p = kv.split(separator: "=", maxSplits: 1)
            if p.count == 2 { header[String(p[0])] = String(p[1]) }
        }
        var outputs: [Output] = []
        for line in lines {
            var fields = line.split(separator: " ")
            guard !fields.isEmpty else { continue }
            let name = String(fields.removeFirst())
            var c: [String: Int] = [:]
            for f in fields {
                let p = f.split(separator: "=", maxSplits: 1)
                if p.count == 2, let v = Int(p[1]) { c[String(p[0])] = v }
            }
            outputs.append(Output(name: name, counters: c))
        }
        return ServiceStatus(path: path, header: header, outputs: outputs)
    }

    public enum Failure: Error, CustomStringConvertible {
        case missing(String)
        case unreadable(String, String)

        public var description: String {
            switch self {
            case .missing(let p):
                return "no counters file at \(p): the service is not running, or writes it elsewhere — systemctl status osh-edge "
                    + "shows whether it runs; give --counters FILE, or --config FILE to use its [paths] counters_file"
            case .unreadable(let p, let why): return "\(p): \(why)"
            }
        }
    }

    public static func read(_ path: String) throws -> ServiceStatus {
        let bytes: [UInt8]?
        do { bytes = try StateFiles.read(path, limit: 1 << 20) } catch { throw Failure.unreadable(path, "\(error)") }
        guard let bytes else { throw Failure.missing(path) }
        guard let s = parse(String(decoding: bytes, as: UTF8.self), path: path) else {
            throw Failure.unreadable(path, "not an osh-edge counters file (its first line does not start with \"counters \")")
        }
        return s
    }

    /// Whether the writer still runs (kill(pid, 0)); nil when the file names no PID.
    public var writerRuns: Bool? {
        guard let pid else { return nil }
        return kill(pid_t(pid), 0) == 0 || errno == EPERM
    }

    /// The writer runs and wrote the file in the last 10 s (it writes once a second).
    public func isLive(now: Double) -> Bool { writerRuns != false && (written.map { now - $0 <= 10 } ?? true) }

    /// Where the service writes its counters: `[paths] counters_file`, else the unit's
    /// /run/osh-edge/counters; nil when the configuration turns the file off.
    public static func countersPath(_ settings: AgentSettings?) -> String? {
        guard let c = settings?.countersFile else { return "/run/osh-edge/counters" }
        return c.isEmpty ? nil : c
    }

    public func text(now: Double) -> String {
        var lines: [String] = []
        let age = written.map { Int((now - $0).rounded()) }
        if writerRuns == false || (age ?? 0) > 10 {
            lines.append(
                "the service is not running: \(path) was last written \(age.map { "\($0) s" } ?? "at an unknown time") ago"
                    + (pid.map { " by PID \($0)" } ?? "") + "; the counters below are its last")
        } else {
            let up = started.map { Int(now - $0) }
            lines.append("osh-edge PID \(pid.map(String.init) ?? "?")" + (up.map { ", up \($0) s" } ?? ""))
        }
        let link = header["link"] ?? "?"
        let node =
            header["registered"] == "0"
            ? "not registered yet (\(link == "online" ? "registering" : "node \(link)"))"
            : link == "online" ? "registered, node reachable" : "registered, node \(link)"
        lines.append("node: " + node)
        // With transport = "mqtt" the observations' link is the broker (the node is for registration).
        switch header["broker"] {
        case "connected"?: lines.append("MQTT broker: connected")
        case "connecting"?: lines.append("MQTT broker: connecting")
        case "unreachable"?: lines.append("MQTT broker: unreachable, retrying (the log says why)")
        default: break
        }
        if header["clock"] == "held" {
            lines.append(
                "clock: not synchronised for \(header["held_seconds"] ?? "?") s: observations are held "
                    + "(timedatectl; or [time] require_sync = false)")
        } else if header["clock"] != nil {
            lines.append("clock: synchronised")
        }
        switch header["recording"] {
        case "paused":
            lines.append(
                "recording: paused — the state filesystem is full (room is kept for the spool); free space or lower [record] max_mb")
        case "failing": lines.append("recording: writes failing — see the log (journalctl -u osh-edge)")
        case "writing": lines.append("recording: writing")
        default: break
        }
        var t = ReadSideRender.Table(["output", "produced", "sent", "queued", "spooled", "dropped", "why dropped"])
        for o in outputs {
            t.add([
                o.name, String(o.value("produced")), String(o.value("sent")), String(o.value("pending")),
                String(o.value("spooled")), String(o.value("dropped")), o.dropReasons.joined(separator: " "),
            ])
        }
        lines.append(t.render())
        return lines.joined(separator: "\n")
    }

    public func json(now: Double) -> String {
        let b = ByteBuffer()
        var w = JSONWriter(b)
        w.beginObject()
        w.key("path"); w.string(path)
        w.key("running"); w.bool(isLive(now: now))
        for (k, v) in header.sorted(by: { $0.key < $1.key }) {
            w.key(k)
            if let n = Double(v) { w.number(n) } else { w.string(v) }
        }
        w.key("outputs"); w.beginArray()
        for o in outputs {
            w.beginObject()
            w.key("name"); w.string(o.name)
            for (k, v) in o.counters.sorted(by: { $0.key < $1.key }) { w.key(k); w.int(v) }
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return String(decoding: b.array, as: UTF8.self)
    }
}
