import Foundation
import OSHAgent
import OSHCore
import XCTest
import OSHDevTools

/// `osh-edge levels` through the real binary, and the file metering it calls.
final class AudioLevelsCommandTests: XCTestCase {
    private static let audio = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("OSHCoreTests/Fixtures/audio")

    private func run(_ args: [String]) throws -> (status: Int32, out: String, err: String) { try runOSHEdge(args) }

    func testJSONLinesMatchTheReference() throws {
        let r = try run(["levels", "--json", Self.audio.appendingPathComponent("pinknoise_vol-20dB.wav").path])
        XCTAssertEqual(r.status, 0, r.err)
        let lines = r.out.split(separator: "\n")
        XCTAssertEqual(lines.count, 10)
        // The 100 ms rows of the SoX reference for this file.
        let csv = try String(contentsOf: Self.audio.appendingPathComponent("audio_levels.csv"), encoding: .utf8)
        let ref = csv.split(whereSeparator: \.isNewline).map { $0.split(separator: ",") }
            .filter { $0[0] == "pinknoise_vol-20dB.wav" && $0[1] != "whole" }
        XCTAssertEqual(ref.count, 10)
        for (i, (line, row)) in zip(lines, ref).enumerated() {
            let obj = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Double], String(line))
            XCTAssertEqual(obj.keys.sorted(), ["peakdB", "rmsdB", "time"])
            XCTAssertEqual(obj["time"] ?? 0, Double(i + 1) * 0.1, accuracy: 1e-9)
            XCTAssertEqual(obj["rmsdB"] ?? 0, Double(row[4]) ?? .nan, accuracy: 0.05)
            XCTAssertEqual(obj["peakdB"] ?? 0, Double(row[5]) ?? .nan, accuracy: 0.05)
        }
    }

    func testTableWindowAndErrors() throws {
        let r = try run(["levels", "--window", "0.5", Self.audio.appendingPathComponent("silence.wav").path])
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertEqual(r.out, "  time s    rmsdB   peakdB\n   0.500  -160.00  -160.00\n   1.000  -160.00  -160.00\n")

        let bad = try run(["levels", "--window", "2", "x.wav"])
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.err.contains("--window must be seconds from 0.1 to 1"), bad.err)

        let missing = try run(["levels", "/nonexistent/osh.wav"])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.err.contains("/nonexistent/osh.wav: no such file"), missing.err)

        let notWAV = try run(["levels", Self.audio.appendingPathComponent("audio_levels.csv").path])
        XCTAssertEqual(notWAV.status, 1)
        XCTAssertTrue(notWAV.err.contains("not a WAV file"), notWAV.err)

        // A name that is not a file is an ALSA device; one that does not exist fails at once, saying what to do.
        let device = try run(["levels", "--duration", "1", "osh_no_such_pcm"])
        XCTAssertEqual(device.status, 1)
        XCTAssertTrue(device.err.contains("'osh_no_such_pcm'") && device.err.contains("arecord -L"), device.err)
    }

    func testFileMeteringFunction() throws {
        var rows: [AudioLevels.Row] = []
        let h = try AudioLevels.meterFile(Self.audio.appendingPathComponent("sine_1k_0dBFS.wav").path, window: 1) { rows.append($0) }
        XCTAssertEqual(h.frames, 48000)
        XCTAssertEqual(rows.count, 1)
        XCTAssertEqual(rows[0].rmsdB, -3.010463, accuracy: 1e-5)
        XCTAssertEqual(rows[0].peakdB, -0.000265, accuracy: 1e-5)
    }

    func testBenchRunsBothPaths() throws {
        let meter = AudioBench.runMeter(seconds: 2)
        XCTAssertEqual(meter.windows, 20)
        let dir = NSTemporaryDirectory() + "osh-audio-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let alsa = try AudioBench.runALSA(seconds: 1, directory: dir)
        XCTAssertTrue((10...11).contains(alsa.windows), "\(alsa.windows)")  // the last tick may read a few periods more
    }
}
