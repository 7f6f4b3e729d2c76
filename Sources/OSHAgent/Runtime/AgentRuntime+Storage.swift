import OSHCore
import OSHPlatform

/// The board's own storage: the spool that keeps what an outage would lose, and the recording
/// that `uploadTimeRange` sends from.
extension AgentRuntime {
    /// Store-and-forward in `stateDirectory/spool`; without it the agent still streams, and only
    /// what a long outage overflows is lost.
    func openSpool() {
        let dir = config.stateDirectory + "/spool"
        do {
            let spool = try FileSpool(
                options: FileSpoolOptions(
                    directory: dir, maxBytes: config.spool.maxMegabytes << 20,
                    sync: config.spool.sync),
                outputNames: specs.map(\.outputName), maxValues: publisher.ring.maxValues)
            spool.onProblem = { Log.warning($0) }
            if spool.pendingBytes > 0 {
                Log.notice(
                    "spool: \(spool.pendingBytes) bytes of observations from an earlier outage wait in \(dir); "
                        + "they are sent after the ring once the node answers")
            }
            publisher.spool = spool
            fileSpool = spool
        } catch {
            Log.error("spool disabled: \(error); check that \(config.stateDirectory) is writable by the service user")
        }
    }

    /// The recording in `stateDirectory/record`, at each output's `[record.NAME]` rate; without it
    /// the agent streams as before and `uploadTimeRange` is refused.
    func openRecording() {
        let names = specs.map(\.outputName) + (videoSpec.map { [$0.outputName] } ?? [])
        let rates = names.map { config.recordRates[$0] ?? 0 }
        guard rates.contains(where: { $0 > 0 }) else {
            Log.warning("recording: none of the recorded outputs is published here; nothing is recorded")
            return
        }
        let dir = config.stateDirectory + "/record"
        let store: RecordingStore
        do {
            // The recording leaves the spool room for two of its segments (and the state files a MiB).
            let keepFree = (fileSpool.map { 2 * $0.options.segmentBytes } ?? 0) + (1 << 20)
            store = try RecordingStore(
                options: RecordingOptions(
                    directory: dir, maxBytes: config.record.maxMegabytes << 20,
                    maxAge: config.record.maxHours * 3600, sync: config.record.sync,
                    keepFreeBytes: keepFree),
                outputNames: names.indices.filter { rates[$0] > 0 }.map { names[$0] })
        } catch {
            Log.error("recording disabled: \(error); check that \(config.stateDirectory) is writable by the service user")
            return
        }
        store.onProblem = { Log.warning($0) }
        if let w = store.boundWarning { Log.warning(w) }
        // A full card: the spool (the live backlog) comes first, the recording gives back room.
        fileSpool?.onNoSpace = { [weak store] bytes in (store?.yieldSpace(bytes) ?? 0) > 0 }
        let r = Recorder(rates: rates, sink: store)
        r.clockOffset = publisher.clockOffset
        gate.recorder = r
        recorder = r
        recording = store
        if let v = video {
            v.recorder = r
            v.liveKeyFramesOnly = rates[specs.count] > (config.rates[v.spec.outputName] ?? v.spec.defaultRate)
        }
        let publisher = publisher
        let videoPublisher = video?.publisher
        let scalarCount = specs.count
        let registration = registration
        let up = Uploader(
            loop: loop,
            settings: .init(
                directory: dir, outputNames: names, recorded: rates.map { $0 > 0 },
                videoIndex: videoSpec == nil ? nil : specs.count, share: config.record.uploadShare,
                format: config.publisher.format, batchMax: config.publisher.batchMax),
            hooks: .init(
                datastreamID: { i in i < scalarCount ? publisher.datastreamID(i) : videoPublisher?.datastreamID },
                encoder: { publisher.encoder($0) },
                linkOnline: { publisher.connectivity == .online },
                linkFailed: { publisher.requestFailed() },
                datastreamLost: { i in
                    Log.warning("upload: the node no longer knows \(names[i])'s datastream; registering again")
                    registration.schedule(after: 0)
                },
                report: { [weak commands] id, outcome in commands?.uploadProgress(commandID: id, outcome) }),
            scalarTransport: node, videoTransport: node)
        commands.interruptedUpload = up.interruptedJob()
        commands.uploader = up
        uploader = up
        Log.notice(
            "recording \(zip(names, rates).filter { $0.1 > 0 }.map { "\($0.0) " + Self.rateText($0.1) }.joined(separator: ", ")) in \(dir)")
    }

    /// "at 25 Hz", "at 2.5 Hz", "every 60 s" (device_health's once a minute).
    static func rateText(_ hz: Double) -> String {
        if hz < 1 { return "every \(Int((1 / hz).rounded())) s" }
        return hz == hz.rounded() ? "at \(Int(hz)) Hz" : "at \(hz) Hz"
    }

    /// The running upload's progress or the last one's result (status line, the demo's table).
    public var uploadStatus: String? { uploader?.statusLine }

    /// What the recording holds and lost, one line (the demo's table); nil when not recording.
    public var recordingSummary: String? {
        guard let store = recording, let r = recorder else { return nil }
        var records = 0, dropped = 0
        for (_, c) in counterRows {
            records += c.recorded
            dropped += c.recordDropped
        }
        let parts = r.rates.indices.filter(r.isRecording).map { i in
            "\(i < specs.count ? specs[i].outputName : video?.spec.outputName ?? "camera") " + Self.rateText(r.rates[i])
        }
        return parts.joined(separator: ", ")
            + "; \(records) records this run, \(Double(store.storedBytes * 10 / (1 << 20)) / 10) MiB on the card"
            + (dropped > 0 ? ", \(dropped) not kept (bound, clock, disk)" : "")
    }

}
