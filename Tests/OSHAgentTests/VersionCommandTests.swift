import Foundation
import OSHAgent
import XCTest

/// `osh-edge --version` is the spelling packagers and CI reach for first; it must equal `version`.
final class VersionCommandTests: XCTestCase {
    func testDashDashVersionIsTheVersionCommand() throws {
        let plain = try runOSHEdge(["version"])
        let dashed = try runOSHEdge(["--version"])
        XCTAssertEqual(plain.status, 0, plain.err)
        XCTAssertEqual(dashed.status, 0, dashed.err)
        XCTAssertTrue(dashed.out.hasPrefix("osh-edge "), dashed.out)
        XCTAssertEqual(dashed.out, plain.out)
        XCTAssertEqual(try runOSHEdge(["--version", "extra"]).status, 2, "extra words are refused as for `version`")
    }

    func testDashDashHelpPrintsTheUsageAndSucceeds() throws {
        let r = try runOSHEdge(["--help"])
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertTrue(r.out.contains("usage: osh-edge <command>"), r.out)
    }
    /// `COMMAND --help` used to answer "unexpected argument '--help'": it prints that command's
    /// entry of the usage and succeeds; no command at all is a usage error.
    func testHelpAfterACommandPrintsItsEntry() throws {
        let r = try runOSHEdge(["command", "--help"])
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertTrue(r.out.hasPrefix("usage: osh-edge <command> [options]\n  command CONTROLSTREAM"), r.out)
        XCTAssertTrue(r.out.contains("--wait S"), r.out)
        XCTAssertFalse(r.out.contains("  datastreams SYSTEM"), r.out)
        let rec = try runOSHEdge(["record", "status", "-h"])
        XCTAssertEqual(rec.status, 0, rec.err)
        XCTAssertTrue(rec.out.contains("  record status") && rec.out.contains("  record export"), rec.out)
        XCTAssertEqual(try runOSHEdge([]).status, 2)
    }
}

/// What the README says of defaults is what the code does.
final class ReadmeDefaultsTests: XCTestCase {
    func testTheLabelDefaultTheReadmeGivesIsTheCodes() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
            .replacingOccurrences(of: "\n", with: " ")
        let pi = SystemIdentity.defaultLabel(model: "Raspberry Pi 4 Model B Rev 1.4", hostname: "<hostname>", serial: "1")
        let other = SystemIdentity.defaultLabel(model: "Generic board", hostname: "<hostname>", serial: "1")
        XCTAssertTrue(readme.contains("The label defaults to `\(pi)` on a Raspberry Pi"), pi)
        XCTAssertTrue(readme.contains("(`\(other)` on another board"), other)
        XCTAssertEqual(
            SystemIdentity.defaultLabel(model: nil, hostname: "", serial: "abc"), "Linux Sensors [abc]",
            "the serial when there is no host name")
    }
}
