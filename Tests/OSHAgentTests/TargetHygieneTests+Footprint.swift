import Foundation
import XCTest

/// scripts/footprint.sh without running the benchmark: its usage, its argument checks, and the
/// arm64 column it reads from a virtual Pi summary (--dry-run starts nothing and builds nothing).
final class FootprintScriptTests: XCTestCase {
    private let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    private func script(_ args: [String]) throws -> (status: Int32, out: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["bash", repo + "/scripts/footprint.sh"] + args
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    func testUsageAndArgumentErrors() throws {
        let help = try script(["--help"])
        XCTAssertEqual(help.status, 0, help.out)
        XCTAssertTrue(help.out.hasPrefix("The footprint benchmark"), help.out)
        XCTAssertTrue(help.out.contains("QUICK=1 scripts/footprint.sh"), help.out)
        let bad = try script(["--bogus"])
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.out.contains("unknown argument '--bogus'"), bad.out)
        let missing = try script(["--vpi-summary", "/nonexistent/summary.json"])
        XCTAssertEqual(missing.status, 2)
        XCTAssertTrue(missing.out.contains("/nonexistent/summary.json: cannot read it"), missing.out)
    }

    func testDryRunPrintsThePlanAndTheArm64Column() throws {
        guard ["/usr/bin/python3", "/bin/python3"].contains(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw XCTSkip("no python3 for scripts/measure/footprint-report.py")
        }
        let path = NSTemporaryDirectory() + "footprint-vpi-\(UUID().uuidString).json"
        defer { try? FileManager.default.removeItem(atPath: path) }
        // The shape board/virtual-pi/host/checks.py writes; rss_anon_kb and rss_file_kb are newer and optional.
        try """
        {"package": ["Package: osh-edge", "Version: 0.1.0", "Architecture: arm64"],
         "measured": {"window_s": 60.0, "rss_kb": 31192, "pss_kb": 25779, "cpu_s_per_min": 22.63,
                      "ctx_switches_per_s": 129.1, "threads": 5, "note": "QEMU TCG"}}
        """.write(toFile: path, atomically: true, encoding: .utf8)
        let r = try script(["--dry-run", "--vpi-summary", path])
        XCTAssertEqual(r.status, 0, r.out)
        XCTAssertTrue(r.out.contains("warm-up 20 s, window 60 s"), r.out)
        XCTAssertTrue(r.out.contains("CPU 37.72 % of a core, VmRSS 31,192 kB, PSS 25,779 kB, RssAnon n/a kB"), r.out)
        XCTAssertTrue(r.out.contains("129.1 voluntary switches/s, 5 threads"), r.out)
    }
}
