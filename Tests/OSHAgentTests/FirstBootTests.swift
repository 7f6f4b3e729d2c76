import Foundation
import Glibc
import XCTest

/// board/image/firstboot/osh-edge-firstboot against a temporary ROOT and BOOT, with the built
/// osh-edge for `config check` and stand-ins that record their arguments for systemctl,
/// hostname and the LED. Nothing outside the temporary directory is touched.
final class FirstBootTests: XCTestCase {
    private let script =
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path + "/board/image/firstboot/osh-edge-firstboot"
    private var dir = ""
    private var root: String { dir + "/root" }
    private var boot: String { root + "/boot/firmware" }
    private let goodConfig = "[server.main]\nurl = \"http://127.0.0.1:8181/sensorhub/api\"\n[system]\nhostname = \"garden-01\"\n"

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "osh-firstboot-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: boot, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir + "/bin", withIntermediateDirectories: true)
        // Each stand-in appends its arguments, one call a line, to dir/NAME.log.
        for name in ["systemctl", "sethostname", "led"] {
            let path = dir + "/bin/" + name
            try "#!/bin/sh\necho \"$*\" >>'\(dir)/\(name).log'\n".write(toFile: path, atomically: false, encoding: .utf8)
            chmod(path, 0o755)
        }
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    private func runScript(grow: String = "true", sethostname: Bool = true) throws -> (status: Int32, out: String) {
        try runTool(
            ["bash", script],
            env: [
                "ROOT": root, "BOOT": boot, "OSH_EDGE": builtBinary("osh-edge").path,
                "SYSTEMCTL": dir + "/bin/systemctl", "SETHOSTNAME": sethostname ? dir + "/bin/sethostname" : "",
                "LED": dir + "/bin/led", "GROW": grow,
            ])
    }

    private func put(_ name: String, _ text: String) throws {
        try text.write(toFile: boot + "/" + name, atomically: false, encoding: .utf8)
    }

    private func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    private func read(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    private func mode(_ path: String) -> Int {
        var st = stat()
        return stat(path, &st) == 0 ? Int(st.st_mode & 0o7777) : -1
    }

    func testGoodConfigIsInstalledSecretsLeaveTheBootPartitionAndARerunIsANoOp() throws {
        try put("osh-edge.conf", goodConfig)
        try put("osh-edge-secrets", "main = hunter2\n")
        try put("osh-edge-error.txt", "an old error\n")
        try put("authorized_keys", "ssh-ed25519 AAAA test\n")
        var r = try runScript()
        XCTAssertEqual(r.status, 0, r.out)
        XCTAssertEqual(read(root + "/etc/osh-edge/osh-edge.conf"), goodConfig)
        XCTAssertEqual(mode(root + "/etc/osh-edge"), 0o750)
        XCTAssertEqual(mode(root + "/etc/osh-edge/osh-edge.conf"), 0o640)
        XCTAssertEqual(read(root + "/etc/osh-edge/secrets"), "main = hunter2\n")
        XCTAssertEqual(mode(root + "/etc/osh-edge/secrets"), 0o600)
        XCTAssertFalse(exists(boot + "/osh-edge-secrets"), "the secrets stay on the FAT partition")
        XCTAssertFalse(exists(boot + "/osh-edge-error.txt"), "the old error file is left")
        XCTAssertFalse(exists(boot + "/osh-edge.conf"))
        XCTAssertEqual(read(boot + "/osh-edge.conf.applied"), goodConfig)
        XCTAssertEqual(read(root + "/root/.ssh/authorized_keys"), "ssh-ed25519 AAAA test\n")
        XCTAssertEqual(mode(root + "/root/.ssh/authorized_keys"), 0o600)
        XCTAssertEqual(read(dir + "/sethostname.log"), "garden-01\n")
        XCTAssertEqual(read(root + "/etc/hostname"), "garden-01\n")
        // Without BOOT/ssh, sshd is left alone; the service is enabled and queued.
        XCTAssertEqual(read(dir + "/systemctl.log"), "enable osh-edge.service\nstart --no-block osh-edge.service\n")
        XCTAssertFalse(exists(dir + "/led.log"))
        XCTAssertTrue(r.out.contains("config check passed"), r.out)

        // The next boot: nothing new on BOOT, nothing changes, nothing is called.
        try FileManager.default.removeItem(atPath: dir + "/systemctl.log")
        try FileManager.default.removeItem(atPath: dir + "/sethostname.log")
        r = try runScript()
        XCTAssertEqual(r.status, 0, r.out)
        XCTAssertTrue(r.out.contains("keeping \(root)/etc/osh-edge/osh-edge.conf"), r.out)
        XCTAssertFalse(exists(dir + "/systemctl.log"), read(dir + "/systemctl.log"))
        XCTAssertFalse(exists(dir + "/sethostname.log"))
        XCTAssertFalse(exists(boot + "/osh-edge-error.txt"))
        XCTAssertEqual(read(root + "/etc/osh-edge/secrets"), "main = hunter2\n")
    }

    func testSSHIsEnabledOnlyWithTheFlagFile() throws {
        try put("osh-edge.conf", goodConfig)
        try put("ssh", "")
        let r = try runScript()
        XCTAssertEqual(r.status, 0, r.out)
        XCTAssertFalse(exists(boot + "/ssh"))
        XCTAssertTrue(
            read(dir + "/systemctl.log").hasPrefix("enable ssh.service\nstart --no-block ssh.service\n"),
            read(dir + "/systemctl.log"))
    }

    func testHostnameGoesToEtcHostnameAndHostsWithoutARunningSystem() throws {
        try put("osh-edge.conf", goodConfig)
        try FileManager.default.createDirectory(atPath: root + "/etc", withIntermediateDirectories: true)
        try "127.0.0.1\tlocalhost\n127.0.1.1\tdebian\n".write(toFile: root + "/etc/hosts", atomically: false, encoding: .utf8)
        let r = try runScript(sethostname: false)
        XCTAssertEqual(r.status, 0, r.out)
        XCTAssertEqual(read(root + "/etc/hostname"), "garden-01\n")
        XCTAssertEqual(read(root + "/etc/hosts"), "127.0.0.1\tlocalhost\n127.0.1.1\tgarden-01\n")
    }

    func testBrokenConfigLeavesAnErrorFileInstallsNothingAndFails() throws {
        let broken = "[server.main]\nurl = \"http://127.0.0.1:8181/sensorhub/api\"\n[system]\nhostname = \"Bad_Name\"\n"
        try put("osh-edge.conf", broken)
        try put("osh-edge-secrets", "main = hunter2\n")
        let r = try runScript()
        XCTAssertNotEqual(r.status, 0, r.out)
        let error = read(boot + "/osh-edge-error.txt")
        XCTAssertTrue(error.contains("osh-edge.conf:4: hostname = \"Bad_Name\" in [system] is not a usable hostname"), error)
        XCTAssertTrue(error.contains("Fix it on this partition"), error)
        XCTAssertFalse(exists(root + "/etc/osh-edge/osh-edge.conf"))
        XCTAssertFalse(exists(root + "/etc/osh-edge/secrets"))
        XCTAssertEqual(read(boot + "/osh-edge.conf"), broken, "the refused file stays for the user to fix")
        XCTAssertTrue(exists(boot + "/osh-edge-secrets"), "the secrets wait for a valid config")
        XCTAssertEqual(read(dir + "/led.log"), "\(boot)/osh-edge.conf\n")
        XCTAssertFalse(exists(dir + "/systemctl.log"))
    }

    func testNoConfigLeavesAnErrorFileAndKeepsTheServiceOff() throws {
        let r = try runScript()
        XCTAssertEqual(r.status, 0, r.out)
        XCTAssertTrue(read(boot + "/osh-edge-error.txt").contains("no osh-edge.conf on this partition"))
        XCTAssertTrue(exists(root + "/run/osh-edge-firstboot/no-config"), "the drop-in's condition")
        XCTAssertFalse(exists(root + "/etc/osh-edge"))
        // The .deb's untouched example counts as no configuration.
        let example = root + "/usr/share/doc/osh-edge/examples/osh-edge.conf.example"
        try FileManager.default.createDirectory(atPath: root + "/etc/osh-edge", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            atPath: (example as NSString).deletingLastPathComponent,
            withIntermediateDirectories: true)
        try goodConfig.write(toFile: example, atomically: false, encoding: .utf8)
        try goodConfig.write(toFile: root + "/etc/osh-edge/osh-edge.conf", atomically: false, encoding: .utf8)
        try FileManager.default.removeItem(atPath: boot + "/osh-edge-error.txt")
        XCTAssertEqual(try runScript().status, 0)
        XCTAssertTrue(exists(boot + "/osh-edge-error.txt"))
        XCTAssertTrue(exists(root + "/run/osh-edge-firstboot/no-config"))
    }

    func testGrowingIsTriedUntilItWorksThenNeverAgain() throws {
        var r = try runScript(grow: "false")
        XCTAssertEqual(r.status, 0, "never fatal: \(r.out)")
        XCTAssertTrue(r.out.contains("could not grow the root filesystem"), r.out)
        r = try runScript(grow: "true")
        XCTAssertTrue(r.out.contains("root filesystem grown"), r.out)
        XCTAssertTrue(exists(root + "/var/lib/osh-edge-firstboot/root-grown"))
        r = try runScript(grow: "false")
        XCTAssertFalse(r.out.contains("grow"), "already grown: not tried again\n\(r.out)")
    }
}
