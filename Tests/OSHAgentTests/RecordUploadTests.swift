import Foundation
import OSHAgent
import OSHCore
import OSHDevNode
import OSHDevTools
import OSHPlatform
import OSHSimulation
import XCTest

/// Issue 18 through the development node: record at full rate while streaming at a lower one,
/// then `uploadTimeRange` for a window in the middle. The node must end up holding every
/// recorded observation of the window exactly once (the live ones from the live stream, the rest
/// from the upload), video decodable from the key frame at or before the start, nothing else
/// added, and the live data untouched; across an outage; and reported FAILED after a restart.
final class RecordUploadTests: XCTestCase {
    override class func setUp() { super.setUp(); DemoSimulation.install() }

    fileprivate struct Rig {
        let node: DevNode
        let dir: String
        let loop: EventLoop
        var agent: AgentRuntime
        var video: VideoInput?
        let http: HTTPClient
        let builder = CSRequestBuilder(credentials: .none)
        var config: AgentConfig

        func run(_ seconds: Double, until: () -> Bool = { false }) throws -> Bool { try loop.run(for: seconds, until: until) }

        var controlStreamID: String { agent.commandReceiver?.controlStreamID ?? "" }

        func command(_ parameters: String) {
            http.send(
                builder.request(
                    .post, "/controlstreams/" + controlStreamID + "/commands", contentType: MediaType.json,
                    body: Array(("{\"parameters\":" + parameters + "}").utf8))
            ) { _ in }
        }

        func upload(from: Double, to: Double, outputs: String = "") {
            command(
                #"{"uploadTimeRange":{"start":""# + ISOTime.string(epochSeconds: from) + #"","stop":""#
                    + ISOTime.string(epochSeconds: to) + #"","outputs":""# + outputs + #""}}"#)
        }

        var commands: [DevNodeCommand] { node.commands(controlStreamID: controlStreamID) }

        func observations(_ output: String) -> [SWERecordValue] {
            guard let sys = node.systemID(uid: agent.config.identity.uid) else { return [] }
            for id in node.datastreamIDs(systemID: sys) where node.stats.datastreams.first(where: { $0.id == id })?.outputName == output {
                return node.observations(datastreamID: id)
            }
            return []
        }
    }

    fileprivate func makeRig(
        _ name: String, serial: String, video: Bool, share: Double = 1, batchMax: Int = 50,
        dir existing: String? = nil, node existingNode: DevNode? = nil
    ) throws -> Rig {
        Log.muted = true
        var nc = DevNodeConfig()
        nc.commandAckSeconds = 0.3
        nc.noReceiverWaitSeconds = 0.2
        nc.maxStoredObservations = 100_000
        let node = try existingNode ?? startedNode(nc)
        let dir = existing ?? scratchPath(name)
        var c = agentConfig(node, serial: serial, label: "Recording Pi", stateDirectory: dir)
        c.outputs = ["barometer"]
        c.rates = ["barometer": 2, "camera0_H264": 5]
        c.trustHostClock = true
        c.commands = true
        c.video = video
        c.record.enabled = true
        c.record.uploadShare = share
        c.publisher.batchMax = batchMax
        c.record.maxMegabytes = 64
        c.recordRates = ["barometer": 20].merging(video ? ["camera0_H264": 25] : [:]) { a, _ in a }
        c.commandOptions = CommandReceiver.Options(
            ackWindow: 0.3, repostMargin: 0.2,
            websocket: WebSocketClient.Options(backoff: Backoff(initial: 0.1, maximum: 0.3), pingInterval: 0))
        let loop = try EventLoop()
        let agent = try AgentRuntime(config: c, loop: loop)
        try agent.start()
        var input: VideoInput?
        if video {
            // The test pattern through libx264 at the recording's rate, a key frame every live interval.
            input = try VideoInput(loop: loop, settings: VideoSettings(width: 160, height: 120, fps: 25, keyFrameInterval: 5, threads: 1)) {
                [unowned agent] t, au, key in agent.offerVideo(monotonicTime: t, accessUnit: au, keyFrame: key)
            }
            try input?.start()
        }
        let rig = Rig(
            node: node, dir: dir, loop: loop, agent: agent, video: input,
            http: try HTTPClient(loop: loop, server: NodeEndpoint(apiRoot: node.apiRoot)), config: c)
        XCTAssertTrue(try rig.run(10) { agent.commandReceiver?.channel.state == .open }, "command channel open")
        return rig
    }

    /// The recorded items of the window as the agent sees it: `from` and `to` go through the
    /// command's ISO text (milliseconds), as `upload` sends them — with the raw doubles, a record
    /// within a millisecond of `to` is in this window but not in the agent's.
    fileprivate func recorded(
        _ dir: String, _ output: String, _ from: Double, _ to: Double
    ) throws -> [(time: Double, live: Bool, bytes: [UInt8])] {
        func sent(_ t: Double) -> Double { ISOTime.parse(Array(ISOTime.string(epochSeconds: t).utf8)) ?? t }
        let w = try RecordingWindow(directory: dir + "/record", outputName: output, from: sent(from), to: sent(to))
        var out: [(Double, Bool, [UInt8])] = []
        while let item = try w.next() { out.append((item.time, item.live, Array(item.accessUnit))) }
        return out
    }

    fileprivate func ms(_ t: Double) -> Int64 { Int64((t * 1000).rounded()) }

    func testAnUploadedWindowIsAtTheNodeExactlyOnceBesideTheLiveStream() throws {
        let rig = try makeRig("osh-record", serial: "10000000cafe0018", video: true)
        defer { rig.node.stop(); try? FileManager.default.removeItem(atPath: rig.dir) }
        let t0 = Clock.realtimeSeconds()
        _ = try rig.run(6)
        let from = t0 + 2, to = t0 + 4
        let liveBefore = rig.agent.publisher.counters(0).sent
        rig.upload(from: from, to: to)
        XCTAssertTrue(try rig.run(20) { rig.commands.last?.currentStatus == "COMPLETED" }, "\(rig.commands)")
        let message = rig.commands.last?.current?.message ?? ""
        XCTAssertTrue(message.hasPrefix("uploaded "), message)
        XCTAssertTrue(rig.commands.last?.reports.contains { $0.statusCode == "EXECUTING" } ?? false)
        // The counters file's recording columns: 20 Hz for the run, nothing lost.
        let row = rig.agent.counterRows.first { $0.outputName == "barometer" }?.counters
        XCTAssertGreaterThan(row?.recorded ?? 0, 100)
        XCTAssertEqual(row?.recordDropped, 0)
        XCTAssertGreaterThan(rig.agent.counterRows.first { $0.outputName == "camera0_H264" }?.counters.recorded ?? 0, 100)
        rig.video?.stop()
        try rig.agent.stop(flushUntil: EventLoop.deadline(after: 2))

        // Scalars: every recorded observation of the window once; outside it only the live stream.
        let baro = try recorded(rig.dir, "barometer", from, to)
        XCTAssertGreaterThan(baro.count, 30, "20 Hz for 2 s")
        XCTAssertGreaterThan(baro.filter(\.live).count, 2)
        let atNode = rig.observations("barometer").compactMap(\.phenomenonTime).map(ms)
        XCTAssertEqual(Set(atNode).count, atNode.count, "no duplicate times at the node")
        let inWindow = Set(atNode.filter { $0 >= ms(from) && $0 <= ms(to) })
        XCTAssertEqual(inWindow, Set(baro.map { ms($0.time) }))
        XCTAssertEqual(atNode.count, rig.agent.publisher.counters(0).sent + baro.filter { !$0.live }.count)
        XCTAssertGreaterThanOrEqual(rig.agent.publisher.counters(0).sent, liveBefore)
        XCTAssertEqual(rig.agent.publisher.counters(0).dropped, 0)

        // Video: from the key frame at or before the start, every access unit once, decodable.
        let frames = try recorded(rig.dir, "camera0_H264", from, to)
        XCTAssertTrue((frames.first?.bytes ?? []).withUnsafeBytes { AnnexB.summarize($0).hasIDR })
        let nodeVideo = rig.observations("camera0_H264")
        let times = nodeVideo.compactMap(\.phenomenonTime).map(ms)
        XCTAssertEqual(Set(times).count, times.count, "no duplicate frames at the node")
        let first = ms(frames.first?.time ?? 0)
        let window = nodeVideo.filter { ($0.phenomenonTime.map(ms) ?? 0) >= first && ($0.phenomenonTime.map(ms) ?? 0) <= ms(to) }
            .sorted { ($0.phenomenonTime ?? 0) < ($1.phenomenonTime ?? 0) }
        XCTAssertEqual(window.count, frames.count)
        var stream: [UInt8] = []
        for o in window { for f in o.fields { if case .block(let b) = f.value { stream += b } } }
        XCTAssertEqual(stream, frames.flatMap(\.bytes), "the node holds the recorded access units as encoded")
        let file = rig.dir + "/window.h264"
        FileManager.default.createFile(atPath: file, contents: Data(stream))
        XCTAssertEqual(try ffprobeFrameCount(file), frames.count)
    }

    func testAnUploadPausesThroughAnOutageAndCompletes() throws {
        var rig = try makeRig("osh-record-outage", serial: "10000000cafe0019", video: false, share: 0.02)
        defer { rig.node.stop(); try? FileManager.default.removeItem(atPath: rig.dir) }
        let t0 = Clock.realtimeSeconds()
        _ = try rig.run(5)
        rig.upload(from: t0, to: t0 + 5)
        XCTAssertTrue(try rig.run(5) { rig.commands.last?.reports.contains { $0.statusCode == "EXECUTING" } ?? false })
        // A second upload while one runs is refused, saying why.
        rig.upload(from: t0, to: t0 + 1)
        XCTAssertTrue(try rig.run(5) { rig.commands.count == 2 && rig.commands.last?.currentStatus == "REJECTED" }, "\(rig.commands)")
        XCTAssertTrue(rig.commands.last?.current?.message?.contains("an upload is running") ?? false)
        rig.node.pause()
        _ = try rig.run(3)
        XCTAssertNotEqual(rig.agent.publisher.connectivity, .online)
        try rig.node.resume()
        XCTAssertTrue(try rig.run(40) { rig.commands.first?.currentStatus == "COMPLETED" }, "\(rig.commands.first as Any)")
        try rig.agent.stop(flushUntil: EventLoop.deadline(after: 2))
        let baro = try recorded(rig.dir, "barometer", t0, t0 + 5)
        let atNode = rig.observations("barometer").compactMap(\.phenomenonTime).map(ms)
        let inWindow = atNode.filter { $0 >= ms(t0) && $0 <= ms(t0 + 5) }
        XCTAssertEqual(Set(inWindow), Set(baro.map { ms($0.time) }))
        // A node that stops mid-request may have stored the batch whose answer never came: it is
        // sent again (at least once; OSH does not deduplicate). So at most that one batch twice.
        XCTAssertGreaterThanOrEqual(inWindow.count, baro.count, "each at least once")
        XCTAssertLessThanOrEqual(inWindow.count - baro.count, rig.config.publisher.batchMax, "at most the batch in flight twice")
        _ = rig
    }

    func testARestartDuringAnUploadIsReportedFailedAndNothingRecordedFails() throws {
        var rig = try makeRig("osh-record-restart", serial: "10000000cafe001a", video: false, share: 0.01)
        defer { rig.node.stop(); try? FileManager.default.removeItem(atPath: rig.dir) }
        let t0 = Clock.realtimeSeconds()
        _ = try rig.run(4)
        rig.upload(from: t0, to: t0 + 4)
        XCTAssertTrue(try rig.run(5) { rig.commands.last?.currentStatus == "EXECUTING" }, "\(rig.commands)")
        let csID = rig.controlStreamID
        try rig.agent.stop(flushUntil: EventLoop.deadline(after: 1))
        // The next process on the same state directory (a restart, or a SIGHUP reload).
        rig.agent = try AgentRuntime(config: rig.config, loop: rig.loop)
        try rig.agent.start()
        XCTAssertTrue(
            try rig.run(10) { rig.node.commands(controlStreamID: csID).first?.currentStatus == "FAILED" },
            "\(rig.node.commands(controlStreamID: csID))")
        XCTAssertTrue(rig.node.commands(controlStreamID: csID).first?.current?.message?.contains("restarted during this upload") ?? false)
        // A window before anything was recorded: FAILED, saying what is recorded.
        XCTAssertTrue(try rig.run(10) { rig.agent.commandReceiver?.channel.state == .open })
        rig.upload(from: t0 - 3600, to: t0 - 3000)
        XCTAssertTrue(try rig.run(5) { rig.commands.count == 2 && rig.commands.last?.currentStatus == "FAILED" }, "\(rig.commands)")
        XCTAssertTrue(rig.commands.last?.current?.message?.contains("barometer is recorded from") ?? false, "\(rig.commands.last as Any)")
        // An output that is not recorded: REJECTED with the recorded ones.
        rig.upload(from: t0, to: t0 + 1, outputs: "gps_data")
        XCTAssertTrue(try rig.run(5) { rig.commands.count == 3 && rig.commands.last?.currentStatus == "REJECTED" })
        XCTAssertTrue(rig.commands.last?.current?.message?.contains("recorded outputs: barometer") ?? false)
        try rig.agent.stop(flushUntil: EventLoop.deadline(after: 1))
    }
}

extension RecordUploadTests {
    /// The node restarted empty mid-upload while the output's live stream is off (nothing else
    /// would notice): the upload registers again, goes on into the new datastream, and completes —
    /// 404s at most once a second, no duplicates.
    func testAnUploadRegistersAgainWhenTheNodeForgetsItsDatastreams() throws {
        let rig = try makeRig(
            "osh-record-forget", serial: "10000000cafe001b", video: false, share: 0.01,
            batchMax: 4)
        defer { rig.node.stop(); try? FileManager.default.removeItem(atPath: rig.dir) }
        _ = try rig.run(1)
        try rig.agent.setEnabled("barometer", false)
        let t0 = Clock.realtimeSeconds()
        _ = try rig.run(4)
        rig.upload(from: t0, to: t0 + 4)
        XCTAssertTrue(try rig.run(5) { rig.commands.last?.currentStatus == "EXECUTING" }, "\(rig.commands)")
        _ = try rig.run(0.3)
        rig.node.forgetEverything()
        XCTAssertTrue(
            try rig.run(30) { rig.agent.uploadStatus?.hasPrefix("upload completed") ?? false },
            rig.agent.uploadStatus ?? "no upload status")
        let notFound = rig.node.requests.filter { $0.route.hasSuffix("/observations") && $0.status == 404 }.count
        XCTAssertLessThanOrEqual(notFound, 3, "404s at most once a second while registering again")
        let recorded = Set(try recorded(rig.dir, "barometer", t0, t0 + 4).map { ms($0.time) })
        let atNode = rig.observations("barometer").compactMap(\.phenomenonTime).map(ms)
        XCTAssertGreaterThan(atNode.count, 0)
        XCTAssertEqual(Set(atNode).count, atNode.count, "no duplicates")
        XCTAssertTrue(Set(atNode).isSubset(of: recorded))
        XCTAssertTrue(atNode.contains(recorded.max() ?? -1), "the window's end reached the new datastream")
        try rig.agent.stop(flushUntil: EventLoop.deadline(after: 1))
    }
}

/// Frames ffprobe decodes in an Annex-B file.
func ffprobeFrameCount(_ path: String) throws -> Int {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
    p.arguments = [
        "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames",
        "-of", "csv=p=0", path,
    ]
    let out = Pipe()
    p.standardOutput = out
    try p.run()
    p.waitUntilExit()
    let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    return Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
}
