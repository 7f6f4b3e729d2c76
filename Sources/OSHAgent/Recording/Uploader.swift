// `uploadTimeRange`: the node asks for one window of the on-board recording and the
// agent posts it to the outputs' datastreams beside the live data — scalars as O&M batches,
// video as swe+binary access units from the key frame at or before the start — at most
// `share` of the link's time, pausing while the node is unreachable. One upload at a time (a
// second is REJECTED). What the live stream already sent is left out, so the node ends up with
// each recorded observation of the window once. Progress goes to the command's status.
//
// A restart ends an upload: the job file left in the recording directory makes the next start
// report it FAILED with what was sent, and the node can ask again for the rest.
#if canImport(Glibc)
import Glibc
#endif
import OSHCore
import OSHPlatform

final class Uploader {
    struct Settings {
        /// The recording directory (STATE/record).
        var directory: String
        /// Recorded outputs by recording index: the runtime's datastreams, then the camera.
        var outputNames: [String]
        var recorded: [Bool]
        /// The camera's recording index, when it is recorded.
        var videoIndex: Int?
        /// Of the link's time, the share the upload may take: after a request that took d seconds,
        /// the next waits d × (1 − share) / share.
        var share: Double
        /// The publisher's: om+json batches of up to batchMax, or swe+json one record per POST.
        var format: ScalarFormat
        var batchMax: Int
        /// Seconds between EXECUTING reports.
        var progressInterval = 2.0
    }

    /// What the uploader needs of the runtime: ids, encoders, the link and the command status.
    struct Hooks {
        var datastreamID: (Int) -> String?
        var encoder: (Int) -> ObservationEncoder
        var linkOnline: () -> Bool
        var linkFailed: () -> Void
        /// 404: the node lost the output's datastream; registering again makes a new one.
        var datastreamLost: (Int) -> Void
        var report: (String, CommandOutcome) -> Void
    }

    private struct Job {
        var commandID: String
        var start: Double
        var stop: Double
        var outputs: [Int]
        var total: Int
        var position = 0
        var window: RecordingWindow?
        var sent = 0
        var skippedLive = 0
        var rejected = 0
        var invalid = 0
        var perOutput: [Int: Int] = [:]
        var droppedBefore = false
    }

    private let loop: EventLoop
    private let settings: Settings
    private let hooks: Hooks
    private let scalarTransport: PublisherTransport
    private let videoTransport: VideoTransport
    private let body = ByteBuffer(capacity: 64 * 1024)
    private var job: Job?
    /// The body holds a batch that still has to reach the node (after a failure, or a pause).
    private var pendingCount = 0
    private var pendingOutput = -1
    private var inFlight = false
    private var postedAt: UInt64 = 0
    private var lastReport: UInt64 = 0
    private lazy var next = LoopDeadline(loop: loop) { [unowned self] in self.step() }
    private var stopped = false

    init(loop: EventLoop, settings: Settings, hooks: Hooks, scalarTransport: PublisherTransport, videoTransport: VideoTransport) {
        self.loop = loop
        self.settings = settings
        self.hooks = hooks
        self.scalarTransport = scalarTransport
        self.videoTransport = videoTransport
    }

    var jobPath: String { settings.directory + "/upload-job" }

    /// A line for the demo's table and logs: the running upload's progress, or the last result.
    private(set) var statusLine: String?

    // MARK: Starting

    /// The command arrived: EXECUTING when the upload starts, REJECTED or FAILED saying why not.
    func start(commandID: String, start: Double, stop requested: Double, outputs names: [String]) -> CommandOutcome {
        if let j = job {
            return .rejected(
                "an upload is running (\(percent(j)) % of \(j.total) observations, command \(j.commandID)); "
                    + "send this one again when it completes")
        }
        var outputs: [Int] = []
        let recordedNames = settings.outputNames.indices.filter { settings.recorded[$0] }.map { settings.outputNames[$0] }
        if names.isEmpty {
            outputs = settings.outputNames.indices.filter { settings.recorded[$0] }
        } else {
            for n in names {
                guard let i = settings.outputNames.firstIndex(of: n), settings.recorded[i] else {
                    return .rejected("'\(n)' is not recorded on this board; recorded outputs: " + recordedNames.joined(separator: ", "))
                }
                if !outputs.contains(i) { outputs.append(i) }
            }
        }
        guard !outputs.isEmpty else { return .rejected("nothing is recorded on this board: add [record.NAME] sections") }
        // A window reaching into the future is cut at now: what is not recorded yet cannot be sent.
        let stop = min(requested, Clock.realtimeSeconds())
        guard stop >= start else {
            return .failed(
                "the window starts at \(ISOTime.string(epochSeconds: start)), after the board's clock "
                    + "(\(ISOTime.string(epochSeconds: stop))): nothing is recorded there yet")
        }
        var total = 0
        var droppedBefore = false
        for i in outputs {
            do {
                let w = try RecordingWindow(directory: settings.directory, outputName: settings.outputNames[i], from: start, to: stop)
                total += w.total
                droppedBefore = droppedBefore || w.startsBeforeRecording
            } catch {
                return .failed("cannot read the recording of \(settings.outputNames[i]): \(error)")
            }
        }
        let window = "\(ISOTime.string(epochSeconds: start)) to \(ISOTime.string(epochSeconds: stop))"
        guard total > 0 else {
            return .failed(
                droppedBefore
                    ? "the window \(window) is older than the recording (it began later, or its bound, [record] max_mb "
                        + "or max_hours, dropped that part); "
                        + recordedRange(outputs)
                    : "nothing recorded from \(window) for " + outputs.map { settings.outputNames[$0] }.joined(separator: ", ")
                        + "; " + recordedRange(outputs))
        }
        job = Job(commandID: commandID, start: start, stop: stop, outputs: outputs, total: total, droppedBefore: droppedBefore)
        saveJob()
        lastReport = Clock.monotonicNanoseconds()
        let m =
            "uploading \(total) recorded observations from \(window)"
            + (droppedBefore ? " (its start is older than the recording)" : "")
        statusLine = m
        Log.notice("upload \(commandID): \(m)")
        schedule(after: 0)
        return CommandOutcome(.executing, "0 %: " + m)
    }

    private func recordedRange(_ outputs: [Int]) -> String {
        guard let all = try? RecordingCatalog.inspect(directory: settings.directory) else { return "nothing is recorded yet" }
        let parts = outputs.compactMap { i -> String? in
            guard let o = all.first(where: { $0.name == settings.outputNames[i] }), let f = o.first, let l = o.last else { return nil }
            return "\(o.name) is recorded from \(ISOTime.string(epochSeconds: f)) to \(ISOTime.string(epochSeconds: l))"
        }
        return parts.isEmpty ? "nothing is recorded yet" : parts.joined(separator: "; ")
    }

    /// The runtime stops: what is in flight is cancelled with the HTTP client; the job file stays
    /// for the next start to report.
    func stop() {
        stopped = true
        next.cancel()
    }

    // MARK: Sending

    private func schedule(after seconds: Double) {
        guard !stopped else { return }
        do { try next.arm(after: max(seconds, 0.000_001)) } catch {
            finish(.failed("the upload cannot be timed on the event loop (\(error)); send the command again"))
        }
    }

    private func step() {
        guard var j = job, !inFlight, !stopped else { return }
        reportProgressIfDue(j)
        // Paused: the node is unreachable (the publisher probes) or the datastream is being registered.
        guard hooks.linkOnline() else { return schedule(after: 1) }
        if pendingCount == 0 {
            do {
                guard try fill(&j) else {
                    job = j
                    return finish(completedOutcome(j))
                }
            } catch {
                job = j
                return finish(
                    .failed(
                        "reading the recording of \(settings.outputNames[j.outputs[0]]) failed: \(error); "
                            + "\(j.sent) of \(j.total) observations were sent"))
            }
            job = j
            if pendingCount == 0 { return schedule(after: 0) }
        }
        guard let id = hooks.datastreamID(pendingOutput) else { return schedule(after: 1) }
        inFlight = true
        postedAt = Clock.monotonicNanoseconds()
        if pendingOutput == settings.videoIndex {
            videoTransport.postVideo(datastreamID: id, body: body) { [unowned self] in self.completed($0) }
        } else {
            scalarTransport.postObservations(datastreamID: id, contentType: settings.format.mediaType, body: body) {
                [unowned self] in self.completed($0)
            }
        }
    }

    /// Reads the next batch into the body: up to batchMax scalar records as one O&M array, or one
    /// access unit. Records the live stream took are counted and left out. False when done.
    private func fill(_ j: inout Job) throws -> Bool {
        while let i = j.outputs.first {
            if j.window == nil {
                j.window = try RecordingWindow(
                    directory: settings.directory, outputName: settings.outputNames[i],
                    from: j.start, to: j.stop)
            }
            guard let w = j.window else { return false }
            let video = i == settings.videoIndex
            let array = !video && settings.format == .omJSON
            body.reset()
            if array { ObservationEncoder.beginBatch(body) }
            var n = 0
            while n < (array ? settings.batchMax : 1), let item = try w.next() {
                j.position += 1
                if item.live { j.skippedLive += 1; continue }
                // A record that does not fit (the output's schema changed since) is counted and left out.
                let mark = body.count
                do {
                    if video {
                        try VideoRecord.write(time: item.time, frame: item.accessUnit, to: body)
                    } else {
                        if n > 0 { ObservationEncoder.batchSeparator(body) }
                        try hooks.encoder(i).encode(time: item.time, values: item.values, into: body)
                    }
                } catch {
                    body.truncate(to: mark)
                    j.invalid += 1
                    continue
                }
                n += 1
            }
            if array { ObservationEncoder.endBatch(body) }
            if n > 0 {
                pendingCount = n
                pendingOutput = i
                return true
            }
            // This output's window is done.
            j.outputs.removeFirst()
            j.window = nil
        }
        return false
    }

    private func completed(_ outcome: TransportOutcome) {
        inFlight = false
        guard var j = job, !stopped else { return }
        let took = Double(Clock.monotonicNanoseconds() &- postedAt) / 1e9
        let share = min(max(settings.share, 0.01), 1)
        var wait = took * (1 - share) / share
        switch DeliveryVerdict.classify(outcome) {
        case .delivered:
            j.sent += pendingCount
            j.perOutput[pendingOutput, default: 0] += pendingCount
            pendingCount = 0
        case .rejected:
            j.rejected += pendingCount
            pendingCount = 0
        case .keep:
            // Kept and sent again once the publisher's probe finds the node (the link is shared).
            hooks.linkFailed()
        case .datastreamLost:
            // Registered again (the output's live stream may be off, and would not notice); the
            // batch goes to the new id, tried at most once a second meanwhile.
            hooks.datastreamLost(pendingOutput)
            wait = max(wait, 1)
        }
        job = j
        schedule(after: wait)
    }

    // MARK: Reporting

    private func percent(_ j: Job) -> Int { j.total == 0 ? 100 : min(100, j.position * 100 / j.total) }

    private func reportProgressIfDue(_ j: Job) {
        let now = Clock.monotonicNanoseconds()
        guard Double(now &- lastReport) / 1e9 >= settings.progressInterval else { return }
        lastReport = now
        let m =
            "\(percent(j)) %: \(j.position) of \(j.total) recorded observations read, \(j.sent) sent"
            + (hooks.linkOnline() ? "" : "; paused, the node is unreachable")
        statusLine = "upload " + m
        hooks.report(j.commandID, CommandOutcome(.executing, m))
    }

    private func completedOutcome(_ j: Job) -> CommandOutcome {
        let per = j.perOutput.keys.sorted().map { "\(settings.outputNames[$0]) \(j.perOutput[$0] ?? 0)" }.joined(separator: ", ")
        var m = "uploaded \(j.sent) observations from \(ISOTime.string(epochSeconds: j.start)) to \(ISOTime.string(epochSeconds: j.stop))"
        if !per.isEmpty { m += " (\(per))" }
        if j.skippedLive > 0 { m += "; \(j.skippedLive) were already sent live" }
        if j.rejected > 0 { m += "; the node rejected \(j.rejected)" }
        if j.invalid > 0 { m += "; \(j.invalid) no longer fit the output's schema" }
        if j.droppedBefore { m += "; the window's start is older than the recording" }
        return .completed(m)
    }

    private func finish(_ outcome: CommandOutcome) {
        guard let j = job else { return }
        job = nil
        pendingCount = 0
        next.disarm()
        unlink(jobPath)
        statusLine = "upload \(outcome.status.rawValue.lowercased()): " + (outcome.message ?? "")
        Log.notice("upload \(j.commandID): \(outcome.status.rawValue) — \(outcome.message ?? "")")
        hooks.report(j.commandID, outcome)
    }

    // MARK: Surviving a restart (as FAILED)

    private func saveJob() {
        guard let j = job else { return }
        let text = "\(j.commandID)\n\(j.start)\n\(j.stop)\n" + j.outputs.map { settings.outputNames[$0] }.joined(separator: ",") + "\n"
        do { try StateFiles.write(Array(text.utf8), to: jobPath) } catch {
            Log.warning("upload: cannot write \(jobPath) (\(error)); a restart during this upload will not be reported to the node")
        }
    }

    /// After a restart: the command id of an upload the previous process did not finish, and the
    /// message its FAILED status carries. The job file is removed.
    func interruptedJob() -> (commandID: String, message: String)? {
        guard let bytes = try? StateFiles.read(jobPath) else { return nil }
        unlink(jobPath)
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard lines.count >= 3, !lines[0].isEmpty, let start = Double(lines[1]), let stop = Double(lines[2]) else { return nil }
        let window = "\(ISOTime.string(epochSeconds: start)) to \(ISOTime.string(epochSeconds: stop))"
        return (
            lines[0],
            "the agent restarted during this upload (\(window)); what was sent is at the node, "
                + "send uploadTimeRange again for the rest"
        )
    }
}

/// The recording tap writes into the store.
extension RecordingStore: RecordingSink {}
