// `osh-edge-dev node --control-stdin`: a soak's orchestrator steers a node in another process, one
// line in, one line out (`ok <line>` or `error <why>`):
//   mode normal | mode refuse | mode status N | mode delay S | mode reset | mode reject N
//   delete OUTPUT   the output's current datastream, as a DELETE would (journal and ledger too)
//   stats           `stats systems=N datastreams=N observations=N`
#if canImport(Glibc)
import Glibc
#endif
import OSHCore

extension DevNode {
    /// Answers one control line, having acted on it.
    public func control(_ line: String) -> String {
        let words = line.split(separator: " ", omittingEmptySubsequences: true)
        switch words.first {
        case "mode":
            switch Self.controlMode(words.dropFirst()) {
            case .success(let m):
                mode = m
                // Leaving .refuseConnections listens again; if that failed, say so.
                if m != .refuseConnections, !isRunning { return "error the node could not listen again on port \(port)" }
                return "ok " + line
            case .failure(let why):
                return "error " + why.message
            }
        case "delete":
            guard words.count == 2 else { return "error delete needs one output name: delete OUTPUT" }
            let name = String(words[1])
            guard deleteDatastream(outputName: name) != nil else { return "error no datastream has the output name '\(name)'" }
            return "ok " + line
        case "stats":
            guard words.count == 1 else { return "error stats takes no argument" }
            return controlStats
        default:
            return "error unknown command '\(line)': mode normal|refuse|status N|delay S|reset|reject N, delete OUTPUT, stats"
        }
    }

    struct ControlError: Error { let message: String }

    static func controlMode(_ words: ArraySlice<Substring>) -> Result<DevNodeMode, ControlError> {
        let args = Array(words.dropFirst())
        func status(_ range: ClosedRange<Int>) -> Result<Int, ControlError> {
            guard args.count == 1, let n = Int(args[0]), range.contains(n) else {
                return .failure(
                    ControlError(message: "\(words.first ?? "") needs one HTTP status from \(range.lowerBound) to \(range.upperBound)"))
            }
            return .success(n)
        }
        func none(_ m: DevNodeMode) -> Result<DevNodeMode, ControlError> {
            args.isEmpty ? .success(m) : .failure(ControlError(message: "mode \(words.first ?? "") takes no argument"))
        }
        switch words.first {
        case "normal": return none(.normal)
        case "refuse": return none(.refuseConnections)
        case "reset": return none(.resetMidBody)
        case "status": return status(100...599).map { .status($0) }
        case "reject": return status(400...599).map { .rejectObservations(status: $0) }
        case "delay":
            guard args.count == 1, let s = Double(args[0]), s >= 0, s <= 3600 else {
                return .failure(ControlError(message: "delay needs seconds from 0 to 3600"))
            }
            return .success(.delay(s))
        default:
            return .failure(ControlError(message: "mode must be normal, refuse, status N, delay S, reset or reject N"))
        }
    }

    /// Deletes the current datastream of an output (the newest with that name) as a DELETE request
    /// would, journal and ledger included, whatever the mode. Returns its id, nil when there is none.
    @discardableResult
    public func deleteDatastream(outputName: String) -> String? {
        withStore { store in
            guard let id = store.datastreams.last(where: { $0.outputName == outputName })?.id else { return nil }
            let req = HTTPRequest(
                method: "DELETE", uri: config.apiPrefix + "/datastreams/" + id, contentType: nil,
                accept: MediaType.json, authorization: nil, body: [])
            let (response, _) = handleLocked(req, root: Self.apiRoot(config: config, port: store.port))
            return response.status == 204 ? id : nil
        }
    }

    /// `stats systems=N datastreams=N observations=N` (observations accepted by the datastreams the
    /// node holds), then `ledger_write_errors=N` when a ledger write failed.
    public var controlStats: String {
        withStore { store in
            var s =
                "stats systems=\(store.systems.count) datastreams=\(store.datastreams.count) "
                + "observations=\(store.datastreams.reduce(0) { $0 + $1.observationCount })"
            if let e = store.ledger?.writeErrors, e > 0 { s += " ledger_write_errors=\(e)" }
            return s
        }
    }

    /// Reads control lines from `fd` until end of file (or a read error), answering each through `reply`.
    public func serveControl(fd: Int32, reply: (String) -> Void) {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            if n <= 0 { return }
            buffer.append(contentsOf: chunk[0..<n])
            while let nl = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                var line = buffer[..<nl]
                if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
                buffer.removeSubrange(...nl)
                reply(control(String(decoding: line, as: UTF8.self)))
            }
        }
    }
}
