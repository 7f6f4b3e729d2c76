import OSHCore
import OSHPlatform
#if canImport(Glibc)
import Glibc
#endif

/// `[paths] counters_file`: every datastream's counters for the whole process, rewritten once a
/// second and at every stop or reload, for scripts (the chaos soak's accounting). A SIGHUP reload
/// replaces the runtime and its publisher: the finished runtime's counters are carried into the
/// process totals by output name, so the file only ever grows. Written whole (tmp + rename) without
/// fsync — it belongs on tmpfs (/run), where a reader sees the old file or the new one.
///
///     counters pid=1234 written=1767225600.250000 started=1767225000
///     barometer produced=600 sent=590 sent_from_spool=0 spooled=0 dropped_ring_full=0 … pending=10 last_produced=…
///
/// Per output, in one process: produced = sent + dropped (`dropped` sums every reason) + what of
/// it the spool still holds + pending (RAM: what a kill -9 loses). `unknown_outcome` counts
/// observations posted with no answer or a 5xx: the node may hold them, and scalars are sent again,
/// so duplicates at the node are at most that — plus, after a kill -9, the spool batch that was
/// `in_flight` (sent again by the next process). `dropped_unknown` (video frames, a stop without a
/// spool) were given up after such an outcome and may be at the node all the same.
final class ProcessCounters {
    let path: String
    private let pid = Int(getpid())
    private let started = Int(Clock.realtimeSeconds())
    /// Finished runtimes' counters by output name, in first-seen order.
    private var totals: [String: StreamCounters] = [:]
    private var order: [String] = []
    /// The running runtime's counters (nil between a stop and the next start).
    var live: (() -> [(outputName: String, counters: StreamCounters)])?
    /// The running runtime's state as header tokens (`registered=1 link=online clock=synchronised`),
    /// for `osh-edge status`.
    var state: (() -> String)?
    /// Write failures are logged once, not every second.
    private var failureLogged = false

    init(path: String) { self.path = path }

    /// The configured path: `""` turns it off; unset, it goes to systemd's RuntimeDirectory when
    /// the unit has one ($RUNTIME_DIRECTORY), else it is off.
    static func resolve(_ configured: String?) -> String? {
        if let configured { return configured.isEmpty ? nil : configured }
        guard let dir = getenv("RUNTIME_DIRECTORY").map({ String(cString: $0) }), !dir.isEmpty else { return nil }
        // systemd lists several directories separated by colons when the unit names several.
        return String(dir.split(separator: ":").first ?? "") + "/counters"
    }

    /// The runtime stopped: its counters join the totals, and the file says so at once.
    func carryLive() {
        if let rows = live?() {
            for (name, c) in rows {
                if totals[name] == nil { order.append(name) }
                totals[name, default: StreamCounters()].add(c)
            }
        }
        live = nil
        state = nil
        write()
    }

    /// The file's text: the totals plus the running runtime's counters.
    func text(now: Double) -> String {
        var merged = totals
        var names = order
        for (name, c) in live?() ?? [] {
            if merged[name] == nil { names.append(name) }
            merged[name, default: StreamCounters()].add(c)
        }
        var out = "counters pid=\(pid) written=\(fixed(now, 6)) started=\(started)"
        if let st = state?() { out += " " + st }
        out += "\n"
        for name in names {
            guard let c = merged[name] else { continue }
            out += name
            for (key, v) in Self.fields(c) { out += " \(key)=\(v)" }
            out += " last_produced=\(fixed(c.lastProduced, 6))\n"
        }
        return out
    }

    static func fields(_ c: StreamCounters) -> KeyValuePairs<String, Int> {
        [
            "produced": c.produced, "sent": c.sent, "sent_from_spool": c.sentFromSpool, "spooled": c.spooled,
            "dropped_ring_full": c.droppedRingFull, "dropped_rejected": c.droppedRejected, "dropped_no_slot": c.droppedNoSlot,
            "dropped_spool_failed": c.droppedSpoolFailed, "dropped_spool_bound": c.droppedSpoolBound,
            "dropped_invalid": c.droppedInvalid, "dropped_not_ready": c.droppedNotReady, "dropped_failed": c.droppedFailed,
            "dropped_lost": c.droppedLost, "dropped_unknown": c.droppedUnknown, "dropped_stop": c.droppedAtStop,
            "dropped_untimed": c.droppedUntimed,
            "dropped": c.dropped, "unknown_outcome": c.unknownOutcome, "pending": c.pending, "in_flight": c.inFlight,
            "recorded": c.recorded, "record_dropped": c.recordDropped,
        ]
    }

    func write() {
        do {
            try StateFiles.write(Array(text(now: Clock.realtimeSeconds()).utf8), to: path, durable: false)
            failureLogged = false
        } catch {
            guard !failureLogged else { return }
            failureLogged = true
            Log.warning(
                "counters file not written: \(error); check that its directory is writable by the service user, "
                    + "or set counters_file = \"\" in [paths]")
        }
    }
}
