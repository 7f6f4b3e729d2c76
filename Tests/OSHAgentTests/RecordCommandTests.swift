import Foundation
import Glibc
import OSHCore
import OSHPlatform
import XCTest

/// `osh-edge record status|export` on recordings made by RecordingStore: a real x264 recording
/// exported and counted by ffprobe, CSV with the catalogue's leaf names, and the errors.
final class RecordCommandTests: XCTestCase {
    private var dir = ""
    private var recordDir: String { dir + "/state/record" }
    private let t0 = 1_796_181_300.0  // 2026-12-02T03:15:00Z

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "osh-record-cmd-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    private func store(_ names: [String]) throws -> RecordingStore {
        try RecordingStore(options: RecordingOptions(directory: recordDir, maxBytes: 64 << 20, maxAge: 86_400), outputNames: names)
    }

    private static func tool(_ name: String) -> String? {
        ["/usr/bin/", "/usr/local/bin/"].map { $0 + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    private func iso(_ t: Double) -> String { ISOTime.string(epochSeconds: t) }

    /// 100 frames of the reference clip (cycled) at 25 fps, a key frame every 25, recorded as encoded;
    /// a window from 1.5 s to 2.5 s exported starts at the key frame at 1 s and decodes whole.
    func testExportOfARealX264RecordingDecodesEveryFrame() throws {
        guard let ffprobe = Self.tool("ffprobe") else { throw XCTSkip("ffprobe not installed (scripts/bootstrap.sh installs it)") }
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../OSHPlatformTests/Fixtures/video/testsrc_320x240_10f_yuv420p.yuv")
        let clip = try [UInt8](Data(contentsOf: fixture))
        let w = 320, h = 240, frameBytes = w * h * 3 / 2
        let enc = try X264Encoder(X264Settings(width: w, height: h, fps: 25, keyFrameInterval: 25, bitrateKbps: 1000, threads: 1))
        let s = try store(["camera0_H264"])
        var keys: [Double] = [], recorded = 0, bytes = 0
        try clip.withUnsafeBytes { all in
            for i in 0..<100 {
                let k = i % 10
                let f = VideoFrame(
                    format: .i420, width: w, height: h, bytesPerLine: w, monotonicTime: Double(i) / 25,
                    bytes: UnsafeRawBufferPointer(rebasing: all[(k * frameBytes)..<((k + 1) * frameBytes)]))
                try enc.encode(f) { e in
                    let t = t0 + Double(i) * 0.04
                    if e.isKeyFrame { keys.append(t) }
                    XCTAssertTrue(s.append(output: 0, epochTime: t, accessUnit: e.bytes, keyFrame: e.isKeyFrame))
                    recorded += 1
                    bytes += e.bytes.count
                }
            }
        }
        s.close()
        XCTAssertEqual(recorded, 100)
        XCTAssertEqual(keys.count, 4)
        print(
            "x264 320x240 25 fps, key frame every 25, 1000 kbit/s: \(bytes / 4) bytes/s of access units, "
                + "\(bytes / 4 + 25 * RecordingRecord.size(payload: 0)) bytes/s and 25 writes/s recorded")

        let file = dir + "/window.h264"
        let r = try runOSHEdge([
            "record", "export", "--from", iso(t0 + 1.5), "--to", iso(t0 + 2.5), "--output", "camera0_H264",
            file, "--dir", recordDir,
        ])
        XCTAssertEqual(r.status, 0, r.err)
        // From the key frame at 1.0 s (frame 25) through 2.5 s (frame 62): 38 access units.
        XCTAssertTrue(r.out.contains("38 access units"), r.out)
        XCTAssertTrue(r.out.contains(iso(t0 + 1)), r.out)
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: ffprobe)
        probe.arguments = [
            "-v", "error", "-count_frames", "-select_streams", "v", "-show_entries",
            "stream=codec_name,width,height,nb_read_frames", "-of", "default=nw=1", file,
        ]
        let pipe = Pipe()
        probe.standardOutput = pipe
        try probe.run()
        let out = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        probe.waitUntilExit()
        XCTAssertEqual(probe.terminationStatus, 0)
        for line in ["codec_name=h264", "width=320", "height=240", "nb_read_frames=38"] {
            XCTAssertTrue(out.contains(line), out)
        }

        let status = try runOSHEdge(["record", "status", "--dir", recordDir])
        XCTAssertEqual(status.status, 0, status.err)
        XCTAssertTrue(
            status.out.contains("camera0_H264 (video): \(iso(t0)) … \(iso(t0 + 99 * 0.04)), 100 records, 1 segment(s)"),
            status.out)
        XCTAssertTrue(status.out.contains("of 64.0 MiB (bound), at most 24.0 h old"), status.out)
        // The state directory ([paths] state_directory) is understood as well as its record/.
        let viaState = try runOSHEdge(["record", "status", "--dir", dir + "/state"])
        XCTAssertEqual(viaState.out, status.out)
    }

    func testCSVExportHasTheLeafNamesAndExactlyTheWindow() throws {
        let s = try store(["quat_orientation_data", "mystery"])
        for i in 0..<300 {
            let t = t0 + Double(i) * 0.01
            _ = [0.5, -0.5, Double(i), 1].withUnsafeBufferPointer { s.append(output: 0, epochTime: t, values: $0) }
            if i % 100 == 0 { _ = [Double(i), .nan].withUnsafeBufferPointer { s.append(output: 1, epochTime: t, values: $0) } }
        }
        s.close()
        let file = dir + "/quat.csv"
        let r = try runOSHEdge([
            "record", "export", "--from", "2026-12-02T04:15:01+01:00", "--to", iso(t0 + 1.095),
            "--output", "quat_orientation_data", file, "--dir", recordDir,
        ])
        XCTAssertEqual(r.status, 0, r.err)
        let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 1 + 10)
        XCTAssertTrue(lines[0].hasPrefix("time,"), lines[0])
        XCTAssertEqual(lines[0].split(separator: ",").count, 5, lines[0])
        XCTAssertFalse(lines[0].contains("value1"), "the catalogue's names: \(lines[0])")
        XCTAssertEqual(lines[1], "2026-12-02T03:15:01.000Z,0.5,-0.5,100.0,1.0")
        XCTAssertEqual(lines[10], "2026-12-02T03:15:01.090Z,0.5,-0.5,109.0,1.0")
        // The file is not replaced by surprise; --force does; - is standard output (the summary
        // then goes to standard error).
        let again = [
            "record", "export", "--from", "2026-12-02T04:15:01+01:00", "--to", iso(t0 + 1.095),
            "--output", "quat_orientation_data", "--dir", recordDir,
        ]
        let refused = try runOSHEdge(again + [file])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.err.contains("\(file) exists; give --force to replace it"), refused.err)
        XCTAssertEqual(try runOSHEdge(again + [file, "--force"]).status, 0)
        let piped = try runOSHEdge(again + ["-"])
        XCTAssertEqual(piped.status, 0, piped.err)
        XCTAssertEqual(piped.out.split(separator: "\n").map(String.init), lines)
        XCTAssertTrue(piped.err.hasPrefix("standard output: 10 records (CSV) of quat_orientation_data"), piped.err)

        let m = try runOSHEdge([
            "record", "export", "--from", iso(t0), "--to", iso(t0 + 10), "--output", "mystery",
            dir + "/m.csv", "--dir", recordDir,
        ])
        XCTAssertEqual(m.status, 0, m.err)
        XCTAssertEqual(
            try String(contentsOfFile: dir + "/m.csv", encoding: .utf8),
            "time,value1,value2\n2026-12-02T03:15:00.000Z,0.0,\n2026-12-02T03:15:01.000Z,100.0,\n2026-12-02T03:15:02.000Z,200.0,\n")

        let json = try runOSHEdge(["record", "status", "--dir", recordDir, "--json"])
        XCTAssertEqual(json.status, 0, json.err)
        let doc = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
        let outputs = try XCTUnwrap(doc["outputs"] as? [[String: Any]])
        XCTAssertEqual(outputs.compactMap { $0["name"] as? String }, ["mystery", "quat_orientation_data"])
        XCTAssertEqual(outputs[1]["records"] as? Int, 300)
        XCTAssertEqual(outputs[1]["first"] as? String, iso(t0))
        XCTAssertEqual(doc["maxBytes"] as? Int, 64 << 20)
    }

    func testErrorsSayWhatToDo() throws {
        let s = try store(["barometer", "gps_data"])
        _ = [1013.0, 20].withUnsafeBufferPointer { s.append(output: 0, epochTime: t0, values: $0) }
        _ = [1013.5, 20].withUnsafeBufferPointer { s.append(output: 0, epochTime: t0 + 60, values: $0) }
        s.close()
        let unknown = try runOSHEdge([
            "record", "export", "--from", iso(t0), "--to", iso(t0 + 1), "--output", "camera0_H264",
            dir + "/x.h264", "--dir", recordDir,
        ])
        XCTAssertEqual(unknown.status, 1)
        XCTAssertTrue(
            unknown.err.contains("no recording of 'camera0_H264'") && unknown.err.contains("recorded: barometer, gps_data"),
            unknown.err)
        let empty = try runOSHEdge([
            "record", "export", "--from", iso(t0 + 1), "--to", iso(t0 + 2), "--output", "barometer",
            dir + "/x.csv", "--dir", recordDir,
        ])
        XCTAssertEqual(empty.status, 1)
        XCTAssertTrue(empty.err.contains("recorded: \(iso(t0)) … \(iso(t0 + 60))"), empty.err)
        let never = try runOSHEdge([
            "record", "export", "--from", iso(t0), "--to", iso(t0 + 1), "--output", "gps_data",
            dir + "/x.csv", "--dir", recordDir,
        ])
        XCTAssertTrue(never.err.contains("nothing is recorded of it yet"), never.err)
        let badTime = try runOSHEdge([
            "record", "export", "--from", "yesterday", "--to", iso(t0), "--output", "barometer",
            dir + "/x.csv", "--dir", recordDir,
        ])
        XCTAssertEqual(badTime.status, 2)
        XCTAssertTrue(badTime.err.contains("ISO-8601"), badTime.err)
        let noDir = try runOSHEdge(["record", "status", "--dir", dir + "/nowhere"])
        XCTAssertEqual(noDir.status, 1)
        XCTAssertTrue(noDir.err.contains("is [record] enabled"), noDir.err)
        let status = try runOSHEdge(["record", "status", "--dir", recordDir])
        XCTAssertTrue(status.out.contains("gps_data: nothing recorded, 0 records"), status.out)
        XCTAssertTrue(status.out.contains("barometer: \(iso(t0)) … \(iso(t0 + 60)), 2 records, 1 segment(s)"), status.out)
    }

    /// A full card shows in `record status`: the running service's counters file says its writes
    /// are paused (and how many records it did not keep); `status` says it too.
    func testRecordStatusShowsThatTheServiceCannotWrite() throws {
        let s = try store(["barometer"])
        _ = [1013.0, 20].withUnsafeBufferPointer { s.append(output: 0, epochTime: t0, values: $0) }
        s.close()
        let counters = dir + "/counters"
        let now = String(format: "%.6f", Date().timeIntervalSince1970)
        try
            ("counters pid=\(getpid()) written=\(now) started=1 registered=1 link=online clock=synchronised recording=paused\n"
            + "barometer produced=10 sent=10 recorded=4 record_dropped=6\n").write(toFile: counters, atomically: true, encoding: .utf8)
        let text = try runOSHEdge(["record", "status", "--dir", recordDir, "--counters", counters])
        XCTAssertEqual(text.status, 0, text.err)
        XCTAssertTrue(text.out.contains("writes paused: the state filesystem is full"), text.out)
        XCTAssertTrue(text.out.contains("6 record(s) not kept since it started"), text.out)
        let json = try runOSHEdge(["record", "status", "--dir", recordDir, "--counters", counters, "--json"])
        let doc = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
        let service = try XCTUnwrap(doc["service"] as? [String: Any])
        XCTAssertEqual(service["writes"] as? String, "paused")
        XCTAssertEqual(service["recordDropped"] as? Int, 6)
        let status = try runOSHEdge(["status", "--counters", counters])
        XCTAssertTrue(status.out.contains("recording: paused — the state filesystem is full"), status.out)
    }
}
