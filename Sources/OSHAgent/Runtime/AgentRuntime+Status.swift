import OSHCore
import OSHPlatform

/// What people and tools read of a running agent: the status line, the counters file's state
/// tokens and rows, the demo's table.
extension AgentRuntime {
    // MARK: Status

    /// What `osh-edge status` reads from the counters file's header: registered, the node link,
    /// the clock (and for how long observations have been held), as `key=value` tokens.
    public var stateTokens: String {
        let link: String
        switch publisher.connectivity {
        case .online: link = "online"
        case .backoff: link = "unreachable"
        case .probing: link = "probing"
        }
        var t = "registered=\(registered ? 1 : 0) link=\(link) clock=" + (clock.heldSeconds == nil ? "synchronised" : "held")
        if let h = clock.heldSeconds { t += " held_seconds=\(h)" }
        if let r = recording { t += " recording=\(r.writeState.rawValue)" }
        if let m = mqtt {
            switch m.state {
            case .connected: t += " broker=connected"
            case .connecting, .idle: t += " broker=connecting"
            case .waiting, .stopped: t += " broker=unreachable"
            }
        }
        return t
    }

    public var streamingStatus: String {
        let host = config.server.apiRoot.split(separator: "/").dropFirst().first.map(String.init) ?? config.server.apiRoot
        if let held = clock.heldSeconds {
            return "holding \(specs.count) output\(specs.count == 1 ? "" : "s"): clock not synchronised for \(held) s "
                + "(timedatectl; or [time] require_sync = false)"
        }
        return "streaming \(specs.count) output\(specs.count == 1 ? "" : "s") to \(host)"
    }

    public struct Row: Sendable {
        public var outputName: String
        public var counters: StreamCounters
        public var datastreamID: String?
        /// The first field of the latest observation, with its name (e.g. `pressure`).
        public var lastValue: Double
        public var lastField: String
    }

    public var rows: [Row] {
        specs.indices.map { i in
            let leaves = specs[i].leaves
            return Row(
                outputName: specs[i].outputName, counters: publisher.counters(i), datastreamID: publisher.datastreamID(i),
                lastValue: gate.lastValues[i], lastField: leaves.count > 1 ? leaves[1].names.last ?? "" : "")
        }
    }

    /// Every datastream's counters by output name, the camera's included (the counters file).
    public var counterRows: [(outputName: String, counters: StreamCounters)] {
        var rows = specs.indices.map { (specs[$0].outputName, publisher.counters($0)) }
        if let v = video?.publisher, let spec = videoSpec {
            rows.append((spec.outputName, v.counters.streamCounters(clockOffset: publisher.clockOffset, inFlight: v.inFlight)))
        }
        if let r = recorder, let store = recording {
            for i in rows.indices {
                guard let k = r.sinkIndex(i) else { continue }
                let c = store.counters(k)
                rows[i].1.recorded = c.recorded
                rows[i].1.recordDropped = c.dropped + r.counters[i].droppedNoClock
            }
        }
        return rows
    }
}
