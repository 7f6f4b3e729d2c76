import Foundation
import OSHCore
import OSHPlatform
import XCTest

/// `osh-edge config check` refuses what `run` would refuse at start (the SD card's first boot and
/// install.sh trust it), each with file:line, and never judges a file by a truncated read.
final class ConfigCheckTests: XCTestCase {
    private var dir = ""

    override func setUpWithError() throws {
        dir = scratchPath("osh-config-check")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    private func check(_ text: String) throws -> (Int32, String) {
        let path = dir + "/osh-edge.conf"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let r = try runOSHEdge(["config", "check", path])
        return (r.status, r.out + r.err)
    }

    private let outputs = "\n[outputs.device_health]\nenabled = true\n"

    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    func testABoardProfileNamedInTheFileAppliesUnderItAndItsOwnKeysWin() throws {
        // What the profiles used to say (paste profile-pi4.conf after the example) gave "section [gps] is
        // already defined"; now the file names the profile, as the SD card's first boot checks it.
        let profiles = Self.root + "/board/profiles"
        var example = try String(contentsOfFile: Self.root + "/deploy/osh-edge.conf.example", encoding: .utf8)
        example = example.replacingOccurrences(of: "#profile = \"\"", with: "profile = \"pi4\"")
        example = example.replacingOccurrences(of: "#device = \"/dev/serial0\"", with: "device = \"/dev/ttyUSB0\"")
        let path = dir + "/osh-edge.conf"
        try example.write(toFile: path, atomically: true, encoding: .utf8)
        let env = ["OSH_EDGE_PROFILE_DIR": profiles]
        let r = try runOSHEdge(["config", "check", path], env: env)
        XCTAssertEqual(r.status, 0, r.out + r.err)
        let settings = try AgentSettings.parse(
            bytes: Array(example.utf8), path: path, chips: ChipTable.known, profileDirectory: profiles,
            readProfile: { FileManager.default.contents(atPath: $0).map(Array.init) })
        XCTAssertEqual(settings.gps.device, "/dev/ttyUSB0", "the file's own [gps] device wins over the profile's")
        XCTAssertEqual(settings.devices.led.chip, "pinctrl-bcm2711", "the profile's [led] applies where the file sets nothing")
        XCTAssertEqual(settings.devices.led.line, 17)
        // Every shipped profile checks under the example.
        for name in ["pi3", "pi4", "pi5", "pi-zero-2w", "sense-hat"] {
            try """
            [server.main]
            url = "http://node.example.org:8181/sensorhub/api"
            [system]
            profile = "\(name)"
            """.write(toFile: path, atomically: true, encoding: .utf8)
            let c = try runOSHEdge(["config", "check", path], env: env)
            XCTAssertEqual(c.status, 0, "\(name): " + c.out + c.err)
        }
        // A name that is no profile, and a profile file with a mistake: each named where it is.
        try "[server.main]\nurl = \"http://n:8181/sensorhub/api\"\n[system]\nprofile = \"pi6\"\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        let unknown = try runOSHEdge(["config", "check", path], env: env)
        XCTAssertNotEqual(unknown.status, 0)
        XCTAssertTrue(
            unknown.err.contains("osh-edge.conf:4:") && unknown.err.contains("pi3, pi4, pi5, pi-zero-2w and sense-hat"), unknown.err)
        try "# mine\n[led]\nline = \"seventeen\"\n".write(toFile: dir + "/board.conf", atomically: true, encoding: .utf8)
        try "[server.main]\nurl = \"http://n:8181/sensorhub/api\"\n[system]\nprofile = \"\(dir)/board.conf\"\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        let bad = try runOSHEdge(["config", "check", path], env: env)
        XCTAssertNotEqual(bad.status, 0)
        XCTAssertTrue(bad.err.contains("board.conf:3:"), "the profile's own file and line: \(bad.err)")

        // A board and a HAT: a list of profiles, the earlier winning, the file over both; a mistake
        // in the second is named in its own file.
        try "# a HAT\n[led]\nline = 27\n[hygrometer]\nchip = \"SHT41\"\n[barometer]\nchip = \"BMP3990\"\n"
            .write(toFile: dir + "/hat.conf", atomically: true, encoding: .utf8)
        try "[server.main]\nurl = \"http://n:8181/sensorhub/api\"\n[system]\nprofile = [\"pi4\", \"\(dir)/hat.conf\"]\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        let both = try runOSHEdge(["config", "check", path], env: env)
        XCTAssertNotEqual(both.status, 0)
        XCTAssertTrue(both.err.contains("hat.conf:7: chip = \"BMP3990\" in [barometer] is not a chip osh-edge drives"), both.err)
        try "# a HAT\n[led]\nline = 27\n[hygrometer]\nchip = \"SHT41\"\n[barometer]\nchip = \"BMP390\"\n"
            .write(toFile: dir + "/hat.conf", atomically: true, encoding: .utf8)
        let merged = try AgentSettings.parse(
            bytes: Array(try String(contentsOfFile: path, encoding: .utf8).utf8), path: path,
            chips: ChipTable.known, profileDirectory: profiles,
            readProfile: { FileManager.default.contents(atPath: $0).map { [UInt8]($0) } })
        XCTAssertEqual(merged.devices.led.line, 17, "pi4 comes first in the list: its line wins")
        XCTAssertEqual(merged.devices.hygrometer.chip, "SHT41", "the HAT's section where pi4 has none")
        XCTAssertEqual(merged.devices.barometer.chip, "BMP390")

        // The Sense HAT on a Pi 4: one line configures its three chips.
        try "[server.main]\nurl = \"http://n:8181/sensorhub/api\"\n[system]\nprofile = [\"pi4\", \"sense-hat\"]\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        let hat = try AgentSettings.parse(
            bytes: Array(try String(contentsOfFile: path, encoding: .utf8).utf8), path: path,
            chips: ChipTable.known, profileDirectory: profiles,
            readProfile: { FileManager.default.contents(atPath: $0).map { [UInt8]($0) } })
        XCTAssertEqual(hat.devices.barometer.chip, "LPS25H")
        XCTAssertEqual(hat.devices.barometer.address, 0x5C)
        XCTAssertEqual(hat.devices.hygrometer.chip, "HTS221")
        XCTAssertEqual(hat.devices.imu.chip, "LSM9DS1")
        XCTAssertEqual(hat.devices.imu.magnetometerAddress, 0x1C)
        XCTAssertEqual(hat.devices.led.chip, "pinctrl-bcm2711", "the Pi's own profile still applies")
    }

    func testAMissingTrustedCertificateIsRefusedWithItsLine() throws {
        let (status, said) = try check(
            """
            [server.main]
            url = "https://node.example.org/sensorhub/api"
            tls = "trust-certificate"
            certificate = "\(dir)/node.pem"
            """ + outputs)
        XCTAssertEqual(status, 1, said)
        XCTAssertTrue(
            said.contains(
                "osh-edge.conf:4: certificate = \"\(dir)/node.pem\" in [server.main]: No such file or directory; "
                    + "copy the node's certificate (PEM) there"), said)
        try "-----BEGIN CERTIFICATE-----\n".write(toFile: dir + "/node.pem", atomically: true, encoding: .utf8)
        let (ok, okSaid) = try check(
            """
            [server.main]
            url = "https://node.example.org/sensorhub/api"
            tls = "trust-certificate"
            certificate = "\(dir)/node.pem"
            """ + outputs)
        XCTAssertEqual(ok, 0, okSaid)
    }

    func testAPortOutOfRangeAndAURLWithoutAnAPIPathAreRefused() throws {
        let (s1, port) = try check("[server.main]\nurl = \"http://127.0.0.1:99999/sensorhub/api\"\n" + outputs)
        XCTAssertEqual(s1, 1)
        XCTAssertTrue(
            port.contains(
                "osh-edge.conf:2: url = \"http://127.0.0.1:99999/sensorhub/api\" in [server.main] has port \"99999\": "
                    + "a port is a number from 1 to 65535"), port)
        let (s2, bare) = try check("[server.main]\nurl = \"http://127.0.0.1:18555\"\n" + outputs)
        XCTAssertEqual(s2, 1)
        XCTAssertTrue(
            bare.contains(
                "osh-edge.conf:2: url = \"http://127.0.0.1:18555\" in [server.main] has no API path: "
                    + "an OSH node's API root is http://HOST:8181/sensorhub/api"), bare)
        let (s3, root) = try check("[server.main]\nurl = \"http://[::1]:8181/\"\n" + outputs)
        XCTAssertEqual(s3, 0, root)
    }

    /// A 2.2 MB file whose tail is wrong used to pass: the read stopped at 1 MiB.
    func testAFileOverTheLimitIsRefusedWithItsSizeNotCutShort() throws {
        var text = "[server.main]\nurl = \"http://127.0.0.1:8181/sensorhub/api\"\n" + outputs
        text += String(repeating: "# padding padding padding padding padding padding padding padding\n", count: 34_000)
        text += "[bogus]\nenabled = maybe\n"
        let size = text.utf8.count
        XCTAssertGreaterThan(size, 2_000_000)
        let (status, said) = try check(text)
        XCTAssertEqual(status, 1)
        XCTAssertTrue(said.contains("osh-edge.conf: the file is \(size) bytes long; the limit is 1048576 bytes"), said)
    }
    /// Four ways of sending no credentials used to end alike in the node's "HTTP 401 … check the
    /// user name and password"; each now has its own message before any request.
    func testCredentialMistakesAreNamedBeforeAnyRequest() throws {
        let conf = dir + "/osh-edge.conf"
        let base = "[server.main]\nurl = \"http://127.0.0.1:1/sensorhub/api\"\n"
        try (base + outputs).write(toFile: conf, atomically: true, encoding: .utf8)
        let missing = try runOSHEdge(["check", "--config", conf, "--secrets", dir + "/nonexistent"])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.err.contains("--secrets \(dir)/nonexistent: no such file"), missing.err)

        let secrets = dir + "/secrets"
        FileManager.default.createFile(
            atPath: secrets, contents: Data("[server.main]\npassword = \"pw\"\n".utf8),
            attributes: [.posixPermissions: 0o600])
        let noUser = try runOSHEdge(["check", "--config", conf, "--secrets", secrets])
        XCTAssertEqual(noUser.status, 1)
        XCTAssertTrue(
            noUser.err.contains(
                "\(secrets) has a password for [server.main], but the configuration sets no user: "
                    + "add user = \"NAME\" to [server.main]"), noUser.err)

        try (base + "user = \"pi\"\n" + outputs).write(toFile: conf, atomically: true, encoding: .utf8)
        FileManager.default.createFile(
            atPath: secrets, contents: Data("[server.other]\npassword = \"pw\"\n".utf8),
            attributes: [.posixPermissions: 0o600])
        let unmatched = try runOSHEdge(["check", "--config", conf, "--secrets", secrets])
        XCTAssertTrue(
            unmatched.err.contains(
                "\(secrets): [server.other] names no server in the configuration "
                    + "(its servers: [server.main]); that secret is not used"), unmatched.err)

        let noPassword = try runOSHEdge(
            ["check", "--node", "http://127.0.0.1:1/sensorhub/api", "--user", "pi"],
            env: ["OSH_EDGE_PASSWORD": ""])
        XCTAssertNotEqual(noPassword.status, 0)
        XCTAssertTrue(noPassword.err.contains("--user pi needs a password: set OSH_EDGE_PASSWORD"), noPassword.err)
    }
}
