import Foundation
import Glibc
import XCTest

/// The deploy/ and toolchain/ scripts, run only in ways that touch nothing outside a temporary
/// directory: syntax and shellcheck, install.sh into a DESTDIR (and its dry run), deploy.sh
/// --dry-run / --stage, and a .deb built from a stand-in binary. No host is ever contacted.
final class DeployTests: XCTestCase {
    private let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    private var dir = ""

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "osh-deploy-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    @discardableResult
    private func run(_ argv: [String], env: [String: String] = [:]) throws -> (status: Int32, out: String) {
        try runTool(argv, env: env)
    }

    private func which(_ tool: String) -> Bool {
        ["/usr/bin/", "/bin/", "/usr/local/bin/"].contains { FileManager.default.isExecutableFile(atPath: $0 + tool) }
    }

    private var scripts: [String] {
        [
            "deploy/install.sh", "deploy/deploy.sh", "deploy/build-deb.sh",
            "toolchain/make-sdk.sh", "toolchain/cross-build.sh", "toolchain/lib-chroot.sh", "toolchain/swift60-check.sh",
            "toolchain/ci-aarch64.sh",
            "fuzz/run-config.sh",
            "board/virtual-pi/vpi", "board/virtual-pi/image/lib.sh", "board/virtual-pi/image/build-base.sh",
            "board/virtual-pi/image/assemble.sh", "board/virtual-pi/modules/build-modules.sh",
            "board/virtual-pi/modules/selftest.sh", "board/virtual-pi/guest/vpi-board.sh",
            "board/virtual-pi/guest/vpi-scenario.sh", "board/virtual-pi/guest/vpi-led.sh",
            "board/virtual-pi/i2c/i2c-load.sh", "board/virtual-pi/i2c/i2c-steps.sh",
            "board/image/firstboot/osh-edge-firstboot", "board/image/build-image.sh", "board/image/root-base.sh",
            "board/virtual-pi/guest/image/image-start.sh", "board/virtual-pi/guest/image/image-observe.sh",
        ]
        .map { repo + "/" + $0 }
    }

    private func mode(_ path: String) -> Int {
        var st = stat()
        return stat(path, &st) == 0 ? Int(st.st_mode & 0o7777) : -1
    }

    func testScriptsParseAndPassShellcheck() throws {
        for s in scripts {
            // These run on a Pi's (or the virtual Pi's) /bin/sh.
            let shell = ["install.sh", "i2c-load.sh", "i2c-steps.sh"].contains { s.hasSuffix("/" + $0) } ? "sh" : "bash"
            let r = try run([shell, "-n", s])
            XCTAssertEqual(r.status, 0, "\(s): \(r.out)")
        }
        // The virtual Pi's host side and register planner (Python 3, standard library only).
        if which("python3") {
            let py = [
                "board/virtual-pi/host/vpi_host.py", "board/virtual-pi/host/checks.py",
                "board/virtual-pi/host/image_test.py",
                "board/virtual-pi/i2c/registers.py",
            ].map { repo + "/" + $0 }
            let c = try run(["python3", "-c", "import ast, sys\nfor f in sys.argv[1:]: ast.parse(open(f).read(), f)"] + py)
            XCTAssertEqual(c.status, 0, c.out)
        }
        guard which("shellcheck") else { throw XCTSkip("shellcheck is not installed") }
        let r = try run(["shellcheck", "-x", "-S", "warning"] + scripts)
        XCTAssertEqual(r.status, 0, r.out)
    }

    /// A bundle as deploy.sh copies it: install.sh beside the binary, unit, example and rules.
    private func bundle() throws -> String {
        let b = dir + "/bundle"
        try FileManager.default.createDirectory(atPath: b + "/udev", withIntermediateDirectories: true)
        for f in ["install.sh", "osh-edge.service", "osh-edge.conf.example"] {
            try FileManager.default.copyItem(atPath: repo + "/deploy/" + f, toPath: b + "/" + f)
        }
        try FileManager.default.copyItem(atPath: repo + "/deploy/udev/99-osh-edge.rules", toPath: b + "/udev/99-osh-edge.rules")
        try FileManager.default.copyItem(atPath: "/bin/true", toPath: b + "/osh-edge")
        return b
    }

    func testInstallDryRunChangesNothing() throws {
        let b = try bundle()
        let root = dir + "/root"
        let r = try run(["sh", b + "/install.sh", "--dry-run"], env: ["DESTDIR": root])
        XCTAssertEqual(r.status, 0, r.out)
        XCTAssertFalse(FileManager.default.fileExists(atPath: root), "a dry run creates nothing:\n\(r.out)")
        for step in [
            "+ install -m 0755 \(b)/osh-edge \(root)/usr/bin/osh-edge",
            "+ install -m 0640 \(b)/osh-edge.conf.example \(root)/etc/osh-edge/osh-edge.conf",
            "+ install -m 0600 /dev/null \(root)/etc/osh-edge/secrets",
            "~ skipped in DESTDIR: useradd --system --user-group",
            "~ skipped in DESTDIR: systemctl enable osh-edge.service",
            "(dry run: nothing changed)",
        ] {
            XCTAssertTrue(r.out.contains(step), "missing \(step) in\n\(r.out)")
        }
        // Without DESTDIR, a dry run lists the live-system steps (and still runs none of them).
        let live = try run(["sh", b + "/install.sh", "--dry-run"])
        XCTAssertEqual(live.status, 0, live.out)
        XCTAssertTrue(live.out.contains("+ systemctl enable osh-edge.service"), live.out)
        XCTAssertTrue(live.out.contains("osh-edge config check /etc/osh-edge/osh-edge.conf && systemctl restart"), live.out)
    }

    func testInstallIntoDestdirIsIdempotentAndKeepsTheConfig() throws {
        let b = try bundle()
        let root = dir + "/root"
        var r = try run(["sh", b + "/install.sh", "--destdir", root])
        XCTAssertEqual(r.status, 0, r.out)
        XCTAssertEqual(mode(root + "/usr/bin/osh-edge"), 0o755)
        XCTAssertEqual(mode(root + "/etc/systemd/system/osh-edge.service"), 0o644)
        XCTAssertEqual(mode(root + "/etc/udev/rules.d/99-osh-edge.rules"), 0o644)
        XCTAssertEqual(mode(root + "/etc/osh-edge"), 0o750)
        XCTAssertEqual(mode(root + "/etc/osh-edge/osh-edge.conf"), 0o640)
        XCTAssertEqual(mode(root + "/etc/osh-edge/secrets"), 0o600)
        XCTAssertEqual(
            try String(contentsOfFile: root + "/etc/osh-edge/osh-edge.conf", encoding: .utf8),
            try String(contentsOfFile: repo + "/deploy/osh-edge.conf.example", encoding: .utf8))

        // An edited config and secrets survive a second run; loosened secrets are re-tightened.
        try "# edited\n".write(toFile: root + "/etc/osh-edge/osh-edge.conf", atomically: false, encoding: .utf8)
        try "main = hunter2\n".write(toFile: root + "/etc/osh-edge/secrets", atomically: false, encoding: .utf8)
        chmod(root + "/etc/osh-edge/secrets", 0o644)
        r = try run(["sh", b + "/install.sh", "--destdir", root])
        XCTAssertEqual(r.status, 0, r.out)
        XCTAssertTrue(r.out.contains("kept \(root)/etc/osh-edge/osh-edge.conf"), r.out)
        XCTAssertEqual(try String(contentsOfFile: root + "/etc/osh-edge/osh-edge.conf", encoding: .utf8), "# edited\n")
        XCTAssertEqual(try String(contentsOfFile: root + "/etc/osh-edge/secrets", encoding: .utf8), "main = hunter2\n")
        XCTAssertEqual(mode(root + "/etc/osh-edge/secrets"), 0o600)
    }

    func testInstallRefusesAnIncompleteBundle() throws {
        let b = try bundle()
        try FileManager.default.removeItem(atPath: b + "/osh-edge.service")
        let r = try run(["sh", b + "/install.sh", "--destdir", dir + "/root"])
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.out.contains("osh-edge.service is missing"), r.out)
    }

    func testDeployDryRunContactsNothingAndStageInstalls() throws {
        let script = repo + "/deploy/deploy.sh"
        // Tripwires: an ssh/scp/cross-build that ran would leave a mark (and contact nothing:
        // they are these stubs, first on PATH, and the host is a TEST-NET address).
        let bin = dir + "/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        for tool in ["ssh", "scp", "rsync", "sudo"] {
            try "#!/bin/sh\necho \"$0 $*\" >> \(dir)/ran\nexit 1\n".write(toFile: bin + "/" + tool, atomically: false, encoding: .utf8)
            chmod(bin + "/" + tool, 0o755)
        }
        let path = bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        var r = try run(["bash", script, "--dry-run", "pi@192.0.2.1"], env: ["PATH": path])
        XCTAssertEqual(r.status, 0, r.out)
        XCTAssertTrue(r.out.contains("+ \(repo)/toolchain/cross-build.sh trixie --out"), r.out)
        XCTAssertTrue(r.out.contains("+ scp -r "), r.out)
        XCTAssertTrue(r.out.contains("+ ssh pi@192.0.2.1 sudo sh /tmp/osh-edge-deploy/install.sh"), r.out)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/ran"), "a dry run executed a remote command")
        // Something that is not a host is refused before anything runs.
        r = try run(["bash", script, "--dry-run", "--binary", "/bin/true", "-oProxyCommand=x"], env: ["PATH": path])
        XCTAssertEqual(r.status, 2, r.out)
        r = try run(["bash", script, "--dry-run", "--binary", "/bin/true", "pi@host;reboot"], env: ["PATH": path])
        XCTAssertEqual(r.status, 2, r.out)

        let stage = dir + "/stage"
        r = try run(["bash", script, "--binary", "/bin/true", "--stage", stage], env: ["PATH": path])
        XCTAssertEqual(r.status, 0, r.out)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/ran"), "staging ran a remote command")
        XCTAssertEqual(mode(stage + "/usr/bin/osh-edge"), 0o755)
        XCTAssertEqual(mode(stage + "/etc/osh-edge/secrets"), 0o600)
    }

    /// The package installed into an image or a chroot (no systemd running, as the virtual Pi's
    /// image build does it) must still enable the unit: the first postinst enabled it only under
    /// a running systemd, so a flashed image never started osh-edge. The postinst runs here with
    /// every command it calls stubbed, "/run/systemd/system" pointed at a missing directory.
    private func checkPostinstEnablesWithoutSystemd(_ postinst: String) throws {
        let bin = dir + "/postinst-bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        for tool in [
            "getent", "addgroup", "adduser", "chown", "chmod", "install", "udevadm", "systemctl",
            "deb-systemd-helper", "osh-edge",
        ] {
            try "#!/bin/sh\necho \"\(tool) $*\" >> \(dir)/postinst-calls\nexit 0\n"
                .write(toFile: bin + "/" + tool, atomically: false, encoding: .utf8)
            chmod(bin + "/" + tool, 0o755)
        }
        let script = dir + "/postinst"
        try postinst.replacingOccurrences(of: "/run/systemd/system", with: dir + "/no-systemd-running")
            .write(toFile: script, atomically: false, encoding: .utf8)
        let r = try run(["sh", script, "configure", ""], env: ["PATH": bin + ":/usr/bin:/bin"])
        XCTAssertEqual(r.status, 0, r.out)
        let calls = (try? String(contentsOfFile: dir + "/postinst-calls", encoding: .utf8)) ?? ""
        XCTAssertTrue(calls.contains("deb-systemd-helper enable osh-edge.service"), calls)
        XCTAssertFalse(calls.contains("systemctl restart"), "started without a running systemd:\n\(calls)")
    }

    /// build-deb.sh with a stand-in amd64 binary (/bin/true: it needs only libc): the package's
    /// metadata and tree; lintian when installed. Never installed here.
    func testDebianPackageLayout() throws {
        guard which("dpkg-deb"), which("readelf") else { throw XCTSkip("dpkg-deb/readelf missing") }
        let r = try run(
            ["bash", repo + "/deploy/build-deb.sh", "amd64", "/bin/true", "--out", dir],
            env: ["OSH_DEB_MAINTAINER": "Test Builder <builder@example.org>"])
        XCTAssertEqual(r.status, 0, r.out)
        let deb = r.out.split(separator: "\n").last.map(String.init) ?? ""
        XCTAssertTrue(deb.hasSuffix("_amd64.deb") && deb.contains("/osh-edge_"), deb)

        let info = try run(["dpkg-deb", "--info", deb]).out
        for field in [
            "Package: osh-edge", "Architecture: amd64", "Depends: libc6 (>= 2.", "adduser",
            "conffiles", "md5sums", "postinst", "prerm", "postrm",
        ] {
            XCTAssertTrue(info.contains(field), "\(field) missing:\n\(info)")
        }
        XCTAssertEqual(try run(["dpkg-deb", "-I", deb, "conffiles"]).out, "/etc/osh-edge/osh-edge.conf\n")
        let postinst = try run(["dpkg-deb", "-I", deb, "postinst"]).out
        XCTAssertTrue(postinst.contains("adduser --system --group"), postinst)
        XCTAssertTrue(postinst.contains("osh-edge config check"), postinst)
        try checkPostinstEnablesWithoutSystemd(postinst)

        let contents = try run(["dpkg-deb", "--contents", deb]).out
        for entry in [
            "-rwxr-xr-x root/root", "./usr/bin/osh-edge", "./lib/systemd/system/osh-edge.service",
            "./etc/osh-edge/osh-edge.conf", "./lib/udev/rules.d/99-osh-edge.rules",
            "./usr/share/doc/osh-edge/copyright", "./usr/share/man/man1/osh-edge.1.gz",
        ] {
            XCTAssertTrue(contents.contains(entry), "\(entry) missing:\n\(contents)")
        }
        // A binary of the wrong architecture is refused.
        let wrong = try run(["bash", repo + "/deploy/build-deb.sh", "arm64", "/bin/true", "--out", dir])
        XCTAssertEqual(wrong.status, 2)
        XCTAssertTrue(wrong.out.contains("is not an arm64 binary"), wrong.out)

        // Built as a user builds it (no OSH_DEB_MAINTAINER): a maintainer whose mail host lintian
        // accepts (`osh-edge@localhost` was bogus-mail-host, in the control file and the changelog).
        let plain = try run(["bash", repo + "/deploy/build-deb.sh", "amd64", "/bin/true", "--out", dir + "/plain"])
        XCTAssertEqual(plain.status, 0, plain.out)
        let maintainer = try run(["dpkg-deb", "-f", plain.out.split(separator: "\n").last.map(String.init) ?? "", "Maintainer"]).out
        XCTAssertEqual(maintainer, "osh-edge maintainers <osh-edge@users.noreply.github.com>\n")

        // lintian takes about a minute on a loaded 2-core machine: opt in with OSH_TEST_LINTIAN=1.
        guard ProcessInfo.processInfo.environment["OSH_TEST_LINTIAN"] == "1" else { return }
        guard which("lintian") else { throw XCTSkip("lintian is not installed") }
        let l = try run(["lintian", "--allow-root", "--fail-on", "error,warning", deb])
        XCTAssertEqual(l.status, 0, l.out)
    }

    /// build-deb.sh as run from a terminal or CI shell, SIGPIPE at its default action (this test
    /// runner may ignore it, and exec passes that on), on a host whose library cache is more than
    /// a pipe holds: `ldconfig -p | awk '… exit'` under pipefail exited 141 without a word.
    /// Also: a library the cache lacks is an error, and any other failure names its command.
    func testDebianPackageWithSIGPIPEAtItsDefaultAction() throws {
        guard which("dpkg-deb"), which("readelf") else { throw XCTSkip("dpkg-deb/readelf missing") }
        guard ["/usr/sbin/ldconfig", "/sbin/ldconfig"].contains(where: FileManager.default.isExecutableFile) else {
            throw XCTSkip("ldconfig missing")
        }
        guard try run(["--default-signal=PIPE", "true"]).status == 0 else { throw XCTSkip("env has no --default-signal") }
        let bin = dir + "/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        func fake(_ name: String, _ body: String) throws {
            try ("#!/bin/sh\n" + body).write(toFile: bin + "/" + name, atomically: false, encoding: .utf8)
            XCTAssertEqual(chmod(bin + "/" + name, 0o755), 0)
        }
        // The cache's libc line first, then 4 × the cache: awk is done long before ldconfig is.
        let cache = """
            for real in /usr/sbin/ldconfig /sbin/ldconfig; do [ -x "$real" ] && break; done
            out=$("$real" -p) || exit 1
            printf '%s\\n' "$out" | grep ' libc\\.so\\.6 '
            for i in 1 2 3 4; do printf '%s\\n' "$out"; done 2>/dev/null
            exit 0

            """
        try fake("ldconfig", cache)
        let env = ["PATH": bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")]
        let build = ["--default-signal=PIPE", "bash", repo + "/deploy/build-deb.sh", "amd64", "/bin/true", "--out", dir]
        let r = try run(build, env: env)
        XCTAssertEqual(r.status, 0, r.out)
        XCTAssertTrue(r.out.hasSuffix("_amd64.deb\n"), r.out)

        // A library the cache lacks maps to no package (it used to map to /usr's first owner).
        try fake("ldconfig", "echo '1 libs found in cache'\n")
        let missing = try run(build, env: env)
        XCTAssertEqual(missing.status, 2, missing.out)
        XCTAssertTrue(missing.out.contains("no package provides libc.so.6"), missing.out)

        // Any other failure says what failed.
        try fake("ldconfig", cache)
        try fake("gzip", "exit 3\n")
        let failed = try run(build, env: env)
        XCTAssertEqual(failed.status, 3, failed.out)
        XCTAssertTrue(
            failed.out.contains("build-deb.sh: error: line ") && failed.out.contains("`gzip -9n < ")
                && failed.out.contains("failed (exit 3)"),
            failed.out)
    }

    func testUdevRulesAreWellFormed() throws {
        let text = try String(contentsOfFile: repo + "/deploy/udev/99-osh-edge.rules", encoding: .utf8)
        var rules = 0
        for line in text.split(separator: "\n") where !line.hasPrefix("#") && !line.allSatisfy(\.isWhitespace) {
            rules += 1
            // Every rule matches something (==) and assigns something (= or +=), and quotes balance.
            XCTAssertTrue(line.contains("==\""), String(line))
            XCTAssertTrue(line.contains("GROUP=\"") || line.contains("SYMLINK+=\""), String(line))
            XCTAssertEqual(line.filter { $0 == "\"" }.count % 2, 0, String(line))
        }
        XCTAssertGreaterThanOrEqual(rules, 8)
        for group in ["\"i2c\"", "\"gpio\"", "\"dialout\"", "\"video\"", "\"audio\""] {
            XCTAssertTrue(text.contains("GROUP=\(group)"), group)
        }
    }
}
