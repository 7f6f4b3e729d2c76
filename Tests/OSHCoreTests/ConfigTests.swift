// Size (~690 lines): one test per grammar rule and settings check, with the message it must say.
import Foundation
import OSHCore
import OSHPlatform
import XCTest

/// The configuration reader: syntax, schema, messages (exact `file:line:` text), secrets,
/// the example file, and a randomized robustness loop.
final class ConfigTests: XCTestCase {
    private let path = "osh-edge.conf"
    private let server = "[server.main]\nurl = \"http://node:8181/sensorhub/api\"\n"

    private func settings(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> AgentSettings? {
        do {
            return try AgentSettings.parse(bytes: Array(text.utf8), path: path, chips: ChipTable.known)
        } catch {
            XCTFail("unexpected errors:\n\(error)", file: file, line: line)
            return nil
        }
    }

    /// The error lines for a file that must be refused.
    private func errors(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> [String] {
        errors(bytes: Array(text.utf8), file: file, line: line)
    }

    private func errors(bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> [String] {
        do {
            _ = try AgentSettings.parse(bytes: bytes, path: path, chips: ChipTable.known)
            XCTFail("accepted a bad file", file: file, line: line)
            return []
        } catch {
            return Self.lines(error)
        }
    }

    private static func configErrors(_ error: any Error) -> ConfigErrors? { error as? ConfigErrors }

    private static func lines(_ error: any Error) -> [String] {
        guard let e = configErrors(error) else { return ["not a ConfigErrors: \(error)"] }
        return e.errors.map(\.description)
    }

    private func secretsErrors(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> [String] {
        do {
            _ = try Secrets.parse(bytes: Array(text.utf8), path: "secrets")
            XCTFail("accepted a bad secrets file", file: file, line: line)
            return []
        } catch {
            return Self.lines(error)
        }
    }

    private func document(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> ConfigDocument? {
        do {
            return try ConfigParser.parse(bytes: Array(text.utf8), path: path)
        } catch {
            XCTFail("unexpected errors:\n\(error)", file: file, line: line)
            return nil
        }
    }

    private func example() throws -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("deploy/osh-edge.conf.example")
        return try String(contentsOf: url, encoding: .utf8)
    }

    private var exampleServer: ServerSettings {
        ServerSettings(name: "main", url: "http://192.0.2.10:8181/sensorhub/api")
    }

    // MARK: The example file

    func testExampleParsesToTheDefaults() throws {
        let s = try AgentSettings.parse(bytes: Array(try example().utf8), path: "osh-edge.conf.example", chips: ChipTable.known)
        XCTAssertEqual(s, AgentSettings(server: exampleServer))
        XCTAssertEqual(s.activeServer.tls, .verify)
        XCTAssertEqual(s.activeServer.connectTimeout, 10)
        XCTAssertEqual(s.activeServer.requestTimeout, 30)
        XCTAssertEqual(s.publisher, PublisherSettings())
        XCTAssertEqual(s.ringCapacity, 1000)
        XCTAssertTrue(s.requireClockSync)
        XCTAssertEqual(s.notBefore, ISOTime.parse("2026-01-01T00:00:00Z"))
        XCTAssertEqual(s.north, .true)
        XCTAssertEqual(s.logLevel, "info")
        XCTAssertEqual(s.stateDirectory, "/var/lib/osh-edge")
        XCTAssertEqual(Set(s.outputs.keys), Set(AgentSettings.outputNames))
        XCTAssertEqual(s.outputs.filter { $0.value.enabled }.map(\.key), ["device_health"])
        XCTAssertEqual(s.outputs["device_health"]?.rate, 1.0 / 60)
        XCTAssertEqual(s.outputs["gps_data"]?.rate, 1)
        XCTAssertEqual(s.outputs["euler_orientation_data"]?.rate, 10)
        XCTAssertEqual(s.outputs["audio_level"]?.source, .hardware)
    }

    /// Every `#key = value` line of the example, uncommented, gives the same settings: the
    /// documented defaults are the real ones.
    func testExampleDocumentedDefaultsAreTheRealOnes() throws {
        var uncommented = 0
        let lines = try example().split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard line.hasPrefix("#"), let second = line.dropFirst().first, second.isLetter, line.contains(" = ")
            else { return String(line) }
            uncommented += 1
            return String(line.dropFirst())
        }
        XCTAssertGreaterThanOrEqual(uncommented, 35)
        let s = try AgentSettings.parse(bytes: Array(lines.joined(separator: "\n").utf8), path: "example", chips: ChipTable.known)
        XCTAssertEqual(s, AgentSettings(server: exampleServer))
    }

    func testExampleDocumentsEveryKeyAndOutput() throws {
        let text = try example()
        for key in [
            "url", "user", "tls", "certificate", "pin_sha256", "connect_timeout", "request_timeout", "transport", "broker",
            "mqtt_topics", "mqtt_topic_root", "commands", "active",
            "uid", "uid_extension", "label", "hostname", "format", "ring_capacity", "flush_interval", "batch_max",
            "spool", "spool_max_mb", "spool_fsync",
            "require_sync", "not_before", "enabled", "rate", "source", "north", "level", "state_directory", "counters_file",
            "max_mb", "max_hours", "#fsync", "upload_share",
        ] {
            XCTAssertTrue(text.contains(key + " = "), key)
        }
        XCTAssertTrue(text.contains("[record]\n"))
        XCTAssertTrue(text.contains("[record.camera0_H264]"))
        for name in AgentSettings.outputNames { XCTAssertTrue(text.contains("[outputs.\(name)]"), name) }
    }

    // MARK: Syntax

    func testSyntaxElements() throws {
        let text =
            "\u{FEFF}# whole-line comment\r\n"
            + "\n"
            + "top = 1\r\n"
            + "[alpha]   # trailing comment\n"
            + "\ts = \"a \\\"q\\\" \\\\ \\n \\t \\u00E9 é\"  # comment\n"
            + "i = -42\n"
            + "j = +1_000_000\n"
            + "z = 0\n"
            + "d = 0.25\n"
            + "e = -2.5e-3\n"
            + "f = 1E6\n"
            + "b = true\n"
            + "c = false\n"
            + "empty = \"\"\n"
            + "hash = \"a # not a comment\"\n"
            + "list = [1, 2.5, \"x\", true, ]\n"
            + "none = []\n"
            + "[beta.gamma-1_x]\n"
            + "key-with_dash = [\"a\",\"b\"]\n"
        guard let doc = document(text) else { return }
        XCTAssertEqual(doc.sections.map(\.name), [[], ["alpha"], ["beta", "gamma-1_x"]])
        XCTAssertEqual(doc.sections[0].entries, [ConfigEntry(key: "top", value: .integer(1), line: 3)])
        XCTAssertEqual(doc.sections[1].line, 4)
        let a = doc.sections[1]
        XCTAssertEqual(a.entry("s"), ConfigEntry(key: "s", value: .string("a \"q\" \\ \n \t é é"), line: 5))
        XCTAssertEqual(a.entry("i")?.value, .integer(-42))
        XCTAssertEqual(a.entry("j")?.value, .integer(1_000_000))
        XCTAssertEqual(a.entry("z")?.value, .integer(0))
        XCTAssertEqual(a.entry("d")?.value, .decimal(0.25))
        XCTAssertEqual(a.entry("e")?.value, .decimal(-0.0025))
        XCTAssertEqual(a.entry("f")?.value, .decimal(1e6))
        XCTAssertEqual(a.entry("b")?.value, .boolean(true))
        XCTAssertEqual(a.entry("c")?.value, .boolean(false))
        XCTAssertEqual(a.entry("empty")?.value, .string(""))
        XCTAssertEqual(a.entry("hash")?.value, .string("a # not a comment"))
        XCTAssertEqual(
            a.entry("list"), ConfigEntry(key: "list", value: .array([.integer(1), .decimal(2.5), .string("x"), .boolean(true)]), line: 16))
        XCTAssertEqual(a.entry("none")?.value, .array([]))
        XCTAssertEqual(doc.sections[2].entries, [ConfigEntry(key: "key-with_dash", value: .array([.string("a"), .string("b")]), line: 19)])
        XCTAssertEqual(doc.sections[2].title, "[beta.gamma-1_x]")
        XCTAssertEqual(ConfigValue.string("a\"\n\u{1}").rendered, "\"a\\\"\\n\\u0001\"")
    }

    /// One bad line each; the parser's exact message.
    func testSyntaxErrorMessages() {
        let cases: [(String, String)] = [
            ("k = \"abc", "the string is not closed: missing '\"' (strings fit on one line)"),
            ("k = \"a\\qb\"", "unknown escape \\q in a string; allowed: \\\" \\\\ \\n \\t \\uXXXX (a Windows path is written C:\\\\dir)"),
            ("k = \"\\u12\"", "\\u needs exactly four hexadecimal digits, as \\u00E9"),
            ("k = \"\\uD800\"", "\\uD800 is not a Unicode character (surrogates are not allowed)"),
            ("k = \"\\u0000\"", "\\u0000 (NUL) is not allowed in a string"),
            ("k = \"\"\"", "multi-line strings (\"\"\") are not supported; write \\n inside one quoted line"),
            ("k = 'abc'", "strings use double quotes (\"…\"); single quotes are not supported"),
            ("k = om+json", "text values must be in double quotes: write \"om+json\""),
            ("k = 007", "'007': leading zeros are not allowed in numbers"),
            ("k = .5", "'.5' needs a digit before the '.' (write 0.5, not .5)"),
            ("k = 5.", "'5.' needs a digit after the '.' (write 5.0, not 5.)"),
            ("k = 1e", "'1e' has an exponent without digits"),
            ("k = 0x1F", "'0x1F': hexadecimal, octal and binary numbers are not supported; write a decimal number"),
            ("k = nan", "nan and inf are not allowed; write a finite number"),
            ("k = -inf", "nan and inf are not allowed; write a finite number"),
            ("k = 1e999", "'1e999' is too large"),
            (
                "k = 99999999999999999999",
                "'99999999999999999999' is too large; whole numbers go from -9223372036854775808 to 9223372036854775807"
            ),
            ("k = 1.2.3", "'1.2.3' is not a number; text values must be in double quotes: \"1.2.3\""),
            ("k = 2026-01-01T00:00:00Z", "dates and times are written as quoted strings, as \"2026-01-01T00:00:00Z\""),
            ("k = True", "true and false are written in lower case, without quotes: true or false"),
            ("k = [1, [2]]", "lists cannot contain lists"),
            ("k = [1, 2", "the list is not closed: missing ']' (lists fit on one line)"),
            ("k = [1 2]", "expected ',' or ']' in the list; found '2'"),
            ("k = [, 1]", "missing value before ',' in the list"),
            ("k = 1 2", "unexpected '2' after the value of 'k'; comments start with '#'"),
            ("k =", "key 'k' has no value; write key = value (an empty string is \"\")"),
            ("k = # nothing", "key 'k' has no value; write key = value (an empty string is \"\")"),
            ("k", "expected '=' and a value after key 'k'"),
            ("k : 1", "expected '=' after key 'k'; found ':' (keys are letters, digits, _ and -)"),
            ("a.b = 1", "dotted keys ('a.…') are not supported; put the key under its [section] header"),
            ("\"k\" = 1", "keys are bare words (letters, digits, _ and -), without quotes"),
            ("= 1", "missing key before '='"),
            ("é = 1", "expected a key (letters, digits, _ and -) or a [section] header; found 'é'"),
            ("k = ,", "expected a value for 'k'; found ','. A value is a \"quoted string\", a number, true, false, or a [list] of those"),
            ("[a", "section header is not closed: missing ']'"),
            ("[]", "empty section header []; write [section] or [section.NAME]"),
            ("[a.]", "a section name cannot end with '.'"),
            ("[a b]", "unexpected 'b' in the section header; write [section] or [section.NAME]"),
            ("[a.b.c]", "a section header has one or two parts, as [section] or [section.NAME]; [a.b.c] has 3"),
            ("[\"a\"]", "section names are bare words (letters, digits, _ and -), without quotes"),
            ("[[a]]", "[[...]] (arrays of tables) is not supported; use one [section.NAME] header per item"),
            ("[a] x", "unexpected 'x' after the section header; comments start with '#'"),
            ("[/a]", "section names are bare words (letters, digits, _ and -); found '/' in the header"),
            ("[a/b]", "unexpected '/' in the section header; write [section] or [section.NAME]"),
        ]
        for (line, message) in cases {
            do {
                _ = try ConfigParser.parse(bytes: Array(("# first\n" + line + "\n").utf8), path: path)
                XCTFail("accepted: \(line)")
            } catch {
                XCTAssertEqual(Self.lines(error), ["osh-edge.conf:2: " + message], line)
            }
        }
    }

    func testBytesThatAreNotText() {
        XCTAssertEqual(
            errors(bytes: Array((server + "k = \"a").utf8) + [0xFF] + Array("\"\n".utf8)),
            ["osh-edge.conf:3: invalid UTF-8 (byte 0xFF) at column 7; save the file as UTF-8"])
        XCTAssertEqual(
            errors(bytes: Array(server.utf8) + [0x23, 0xC3, 0x28, 0x0A]),
            ["osh-edge.conf:3: invalid UTF-8 (byte 0xC3) at column 2; save the file as UTF-8"])
        XCTAssertEqual(
            errors(bytes: Array(server.utf8) + [0x23, 0xED, 0xA0, 0x80]),  // an encoded surrogate
            ["osh-edge.conf:3: invalid UTF-8 (byte 0xED) at column 2; save the file as UTF-8"])
        XCTAssertEqual(
            errors(bytes: Array(server.utf8) + [0x23, 0xF4, 0x90, 0x80, 0x80]),  // above U+10FFFF
            ["osh-edge.conf:3: invalid UTF-8 (byte 0xF4) at column 2; save the file as UTF-8"])
        XCTAssertEqual(
            errors(bytes: Array((server + "k = \"a").utf8) + [0] + Array("\"".utf8)),
            ["osh-edge.conf:3: control character 0x00 at column 7 is not allowed (write \\n or \\t inside a quoted string)"])
        XCTAssertEqual(
            errors(bytes: Array((server + "# a\rb\n").utf8)),
            ["osh-edge.conf:3: a carriage return (CR) at column 4 is not allowed (write \\n or \\t inside a quoted string)"])
        let long = server + "[system]\nlabel = \"" + String(repeating: "x", count: 5000) + "\"\n"
        XCTAssertEqual(errors(long), ["osh-edge.conf:4: the line is 5010 bytes long; the limit is 4096"])
        XCTAssertEqual(
            errors(bytes: [UInt8](repeating: 0x23, count: ConfigParser.maxFileSize + 1)),
            ["osh-edge.conf: the file is 1048577 bytes long; the limit is 1048576 bytes"])
    }

    func testDuplicates() {
        XCTAssertEqual(
            errors(server + "url = \"http://b\"\n"),
            ["osh-edge.conf:3: key 'url' is already set on line 2 in [server.main]; set each key once"])
        XCTAssertEqual(
            errors(server + "[log]\nlevel = \"debug\"\n[log]\nlevel = \"info\"\n"),
            ["osh-edge.conf:5: section [log] is already defined on line 3; put all its keys under that one header"])
        XCTAssertEqual(
            errors(server + "user = 5 5\nuser = \"x\"\n"),
            [
                "osh-edge.conf:3: unexpected '5' after the value of 'user'; comments start with '#'",
                "osh-edge.conf:4: key 'user' is set twice in [server.main]; set each key once",
            ])
    }

    // MARK: Schema: sections and keys

    /// A file refused as a whole still lends its sound `[led]` section to the config-error pattern.
    func testTheLEDOfARefusedFileIsStillFound() {
        let broken = server + "[publisher]\nformat = \"xml\"\n[led]\nchip = \"gpiochip0\"\nline = 27\nactive_low = true\n"
        XCTAssertFalse(errors(broken).isEmpty)
        let led = AgentSettings.ledSettings(bytes: Array(broken.utf8), path: "osh-edge.conf")
        XCTAssertEqual(led?.chip, "gpiochip0")
        XCTAssertEqual(led?.line, 27)
        XCTAssertEqual(led?.activeLow, true)
        for bad in [
            "[led]\nchip = \"gpiochip0\"\nline = 4096\n", "[led]\nchip = \"gpiochip0\"\nlin = 3\n",
            "[led]\nline = 3\n", "[led]\nchip = \"gpiochip0\"\nline = 3\n[led]\nline = 4\n", "[led\n",
        ] {
            XCTAssertNil(AgentSettings.ledSettings(bytes: Array((server + bad).utf8), path: "c"), bad)
        }
    }

    func testUnknownKeyNamesTheAllowedKeys() {
        XCTAssertEqual(
            errors(server + "[publisher]\nfromat = \"om+json\"\n"),
            [
                "osh-edge.conf:4: key 'fromat' is not known in [publisher] (did you mean 'format'?); "
                    + "known keys: format, ring_capacity, flush_interval, batch_max, spool, spool_max_mb, spool_fsync"
            ])
        XCTAssertEqual(
            errors(server + "[publisher]\ncolour = 1\n"),
            [
                "osh-edge.conf:4: key 'colour' is not known in [publisher]; known keys: format, ring_capacity, flush_interval, batch_max, spool, spool_max_mb, spool_fsync"
            ])
        XCTAssertEqual(
            errors(server + "[outputs.gps_data]\nrte = 1\n"),
            [
                "osh-edge.conf:4: key 'rte' is not known in [outputs.gps_data] (did you mean 'rate'?); known keys: enabled, rate, source"
            ])
        XCTAssertEqual(
            errors("format = \"om+json\"\n" + server),
            [
                "osh-edge.conf:1: key 'format' is outside any section (before the first [section] header); it belongs under [publisher]"
            ])
    }

    func testUnknownSectionsAndNames() {
        let sections =
            "known sections: [server.NAME], [node], [system], [publisher], [time], [outputs.NAME], [record], [record.NAME], [orientation], [gps], [i2c], [barometer], [hygrometer], [imu], [audio], [camera], [led], [ptz], [log], [paths]"
        let outputs =
            "quat_orientation_data, euler_orientation_data, accelerometer, gyroscope, magnetometer, barometer, "
            + "temperature, humidity, gps_data, camera0_H264, audio_level, device_health"
        XCTAssertEqual(
            errors(server + "[publsher]\n"), ["osh-edge.conf:3: section [publsher] is not known (did you mean [publisher]?); " + sections])
        XCTAssertEqual(
            errors(server + "[output.gps_data]\n"),
            ["osh-edge.conf:3: section [output.gps_data] is not known (did you mean [outputs.NAME]?); " + sections])
        XCTAssertEqual(errors(server + "[video]\n"), ["osh-edge.conf:3: section [video] is not known; " + sections])
        XCTAssertEqual(
            errors(server + "[outputs.gps]\n"),
            ["osh-edge.conf:3: output 'gps' in [outputs.gps] is not known (did you mean 'gps_data'?); known outputs: " + outputs])
        XCTAssertEqual(
            errors(server + "[outputs.camera0_h264]\n"),
            [
                "osh-edge.conf:3: output 'camera0_h264' in [outputs.camera0_h264] is not known (did you mean 'camera0_H264'?); known outputs: "
                    + outputs
            ])
        XCTAssertEqual(
            errors(server + "[outputs]\n"), ["osh-edge.conf:3: [outputs] needs an output name, as [outputs.gps_data]; outputs: " + outputs])
        XCTAssertEqual(
            errors("[server]\nurl = \"http://a\"\n"),
            ["osh-edge.conf:1: [server] needs a name, as [server.main]: one [server.NAME] section per node"])
        XCTAssertEqual(errors(server + "[log.x]\n"), ["osh-edge.conf:3: [log] takes no name: write [log]"])
    }

    func testPasswordsAndTokensAreRefused() {
        XCTAssertEqual(
            errors(server + "password = \"hunter2\"\n"),
            [
                "osh-edge.conf:3: 'password' does not belong in this file (others can read it): put password = \"…\" "
                    + "under [server.main] in /etc/osh-edge/secrets (root-only)"
            ])
        XCTAssertEqual(
            errors("token = \"abc\"\n" + server + "[publisher]\nPassword = \"x\"\n"),
            [
                "osh-edge.conf:1: 'token' does not belong in this file (others can read it): put token = \"…\" under [server.NAME] in /etc/osh-edge/secrets (root-only)",
                "osh-edge.conf:5: 'Password' does not belong in this file (others can read it): put password = \"…\" under [server.NAME] in /etc/osh-edge/secrets (root-only)",
            ])
        XCTAssertFalse(errors(server + "password = \"hunter2\"\n").joined().contains("hunter2"))
    }

    // MARK: Servers

    func testServersAndActive() {
        let two = server + "[server.lab]\nurl = \"https://lab.example.org/sensorhub/api/\"\nuser = \"pi\"\n"
        XCTAssertEqual(errors(two), ["osh-edge.conf:3: 2 servers are defined (main, lab); choose one with active = \"main\" in [node]"])
        XCTAssertEqual(
            errors("[node]\n" + two), ["osh-edge.conf:1: 2 servers are defined (main, lab); choose one with active = \"main\" in [node]"])
        XCTAssertEqual(
            errors(two + "[node]\nactive = \"lob\"\n"),
            ["osh-edge.conf:7: active = \"lob\" in [node] does not name a server (did you mean \"lab\"?); servers: main, lab"])
        guard let s = settings(two + "[node]\nactive = \"lab\"\n") else { return }
        XCTAssertEqual(s.servers.map(\.name), ["main", "lab"])
        XCTAssertEqual(s.activeServer, ServerSettings(name: "lab", url: "https://lab.example.org/sensorhub/api", user: "pi"))
        XCTAssertEqual(settings(server + "[node]\nactive = \"main\"\n")?.activeServer.name, "main")
        XCTAssertEqual(
            errors("[log]\n"),
            ["osh-edge.conf: no [server.NAME] section: add one with url = \"https://HOST/sensorhub/api\" (the node to stream to)"])
        XCTAssertEqual(
            errors("[server.a]\nuser = \"x\"\n"),
            ["osh-edge.conf:1: [server.a] needs url = \"https://HOST/sensorhub/api\" (the node's API root)"])
    }

    func testServerURL() {
        func url(_ u: String) -> [String] { errors("[server.main]\nurl = \"\(u)\"\n") }
        XCTAssertEqual(
            url("ftp://node/api"),
            [
                "osh-edge.conf:2: url = \"ftp://node/api\" in [server.main] must start with http:// or https://, as \"https://node.example.org/sensorhub/api\""
            ])
        XCTAssertEqual(
            url("node:8181/sensorhub/api"),
            [
                "osh-edge.conf:2: url = \"node:8181/sensorhub/api\" in [server.main] must start with http:// or https://, as \"https://node.example.org/sensorhub/api\""
            ])
        XCTAssertEqual(url("http:///api"), ["osh-edge.conf:2: url = \"http:///api\" in [server.main] has no host name after the scheme"])
        XCTAssertEqual(
            url("http://a b/api"),
            ["osh-edge.conf:2: url = \"http://a b/api\" in [server.main] cannot contain spaces, quotes or control characters"])
        XCTAssertEqual(
            url("http://me:pw@node/api"),
            [
                "osh-edge.conf:2: url = \"http://me:pw@node/api\" in [server.main] cannot hold a user name or password: put the user in 'user' and the password in /etc/osh-edge/secrets"
            ])
        XCTAssertEqual(
            errors("[server.main]\nurl = 5\n"),
            ["osh-edge.conf:2: 'url' in [server.main] must be a quoted string; got a whole number: write \"5\""])
        XCTAssertEqual(settings("[server.main]\nurl = \"HTTPS://node/api//\"\n")?.activeServer.url, "HTTPS://node/api")
        XCTAssertEqual(
            errors(server + "user = \"a:b\"\n"), ["osh-edge.conf:3: user in [server.main] cannot contain ':' (HTTP Basic authentication)"])
    }

    func testServerTLS() {
        let pin = Base64.encode([UInt8](repeating: 7, count: 32))
        XCTAssertEqual(
            settings(server + "tls = \"trust-certificate\"\ncertificate = \"/etc/osh-edge/node.pem\"\n")?.activeServer.tls,
            .trustCertificate(path: "/etc/osh-edge/node.pem"))
        XCTAssertEqual(settings(server + "tls = \"pin\"\npin_sha256 = \"\(pin)\"\n")?.activeServer.tls, .pin(sha256Base64: pin))
        XCTAssertEqual(settings(server + "tls = \"pin\"\npin_sha256 = \"sha256//\(pin)\"\n")?.activeServer.tls, .pin(sha256Base64: pin))
        XCTAssertEqual(
            errors(server + "tls = \"trust-certificate\"\n"),
            [
                "osh-edge.conf:3: tls = \"trust-certificate\" in [server.main] needs certificate = \"/etc/osh-edge/node.pem\" (the node's certificate, PEM)"
            ])
        XCTAssertEqual(
            errors(server + "tls = \"pin\"\n"),
            [
                "osh-edge.conf:3: tls = \"pin\" in [server.main] needs pin_sha256 = \"BASE64\" (the SHA-256 of the node's public key; `osh-edge check` prints it)"
            ])
        XCTAssertEqual(
            errors(server + "certificate = \"/etc/n.pem\"\n"),
            ["osh-edge.conf:3: certificate in [server.main] is only used with tls = \"trust-certificate\"; set that, or remove certificate"]
        )
        XCTAssertEqual(
            errors(server + "tls = \"trust-certificate\"\ncertificate = \"node.pem\"\n"),
            ["osh-edge.conf:4: certificate in [server.main] must be an absolute path (starting with /)"])
        XCTAssertEqual(
            errors(server + "tls = \"pin\"\npin_sha256 = \"abc=\"\n"),
            [
                "osh-edge.conf:4: pin_sha256 in [server.main] must be the base64 SHA-256 of the node's public key (44 characters ending in '=', several separated by ';'; `osh-edge check` prints it)"
            ])
        XCTAssertEqual(
            errors(server + "pin_sha256 = \"\(pin)\"\n"),
            ["osh-edge.conf:3: pin_sha256 in [server.main] is only used with tls = \"pin\"; set that, or remove pin_sha256"])
        XCTAssertEqual(
            errors(server + "tls = \"insecure\"\n"),
            ["osh-edge.conf:3: tls = \"insecure\" in [server.main] is not allowed; allowed: \"verify\", \"trust-certificate\", \"pin\""])
        XCTAssertEqual(
            errors(server + "tls = \"Verify\"\n"),
            [
                "osh-edge.conf:3: tls = \"Verify\" in [server.main] is not allowed (did you mean \"verify\"?); allowed: \"verify\", \"trust-certificate\", \"pin\""
            ])
    }

    // MARK: Values

    func testValueRanges() {
        func one(_ section: String, _ line: String) -> [String] { errors(server + "[\(section)]\n" + line + "\n") }
        XCTAssertEqual(
            one("publisher", "ring_capacity = 99"),
            ["osh-edge.conf:4: ring_capacity = 99 in [publisher] is out of range; allowed: 100 to 1000000"])
        XCTAssertEqual(
            one("publisher", "ring_capacity = 1_000_001"),
            ["osh-edge.conf:4: ring_capacity = 1000001 in [publisher] is out of range; allowed: 100 to 1000000"])
        XCTAssertEqual(
            one("publisher", "ring_capacity = 1000.0"),
            ["osh-edge.conf:4: 'ring_capacity' in [publisher] must be a whole number from 100 to 1000000; got a decimal number"])
        XCTAssertEqual(
            one("publisher", "ring_capacity = \"1000\""),
            ["osh-edge.conf:4: 'ring_capacity' in [publisher] must be a whole number from 100 to 1000000; got a string: remove the quotes"])
        XCTAssertEqual(
            one("publisher", "flush_interval = 0.04"),
            ["osh-edge.conf:4: flush_interval = 0.04 in [publisher] is out of range; allowed: 0.05 to 10 seconds"])
        XCTAssertEqual(
            one("publisher", "spool_fsync = \"always\""),
            ["osh-edge.conf:4: spool_fsync = \"always\" in [publisher] is not allowed; allowed: \"record\", \"second\", \"never\""])
        XCTAssertEqual(
            one("publisher", "spool_max_mb = 0"), ["osh-edge.conf:4: spool_max_mb = 0 in [publisher] is out of range; allowed: 1 to 16384"])
        XCTAssertEqual(one("publisher", "spool = 1"), ["osh-edge.conf:4: 'spool' in [publisher] must be true or false; got a whole number"])
        XCTAssertEqual(
            one("publisher", "batch_max = 0"), ["osh-edge.conf:4: batch_max = 0 in [publisher] is out of range; allowed: 1 to 500"])
        XCTAssertEqual(
            one("publisher", "format = \"om-json\""),
            [
                "osh-edge.conf:4: format = \"om-json\" in [publisher] is not allowed (did you mean \"om+json\"?); allowed: \"om+json\", \"swe+json\""
            ])
        XCTAssertEqual(
            one("outputs.gps_data", "rate = 0"),
            ["osh-edge.conf:4: rate = 0 in [outputs.gps_data] is out of range; allowed: more than 0, up to 100 Hz"])
        XCTAssertEqual(
            one("outputs.gps_data", "rate = 100.5"),
            ["osh-edge.conf:4: rate = 100.5 in [outputs.gps_data] is out of range; allowed: more than 0, up to 100 Hz"])
        XCTAssertEqual(
            one("outputs.camera0_H264", "rate = 30"),
            ["osh-edge.conf:4: rate = 30 in [outputs.camera0_H264] is out of range; allowed: 1 to 25 frames per second"])
        XCTAssertEqual(
            one("outputs.gps_data", "enabled = \"true\""),
            ["osh-edge.conf:4: 'enabled' in [outputs.gps_data] must be true or false; got a string: remove the quotes"])
        XCTAssertEqual(
            one("outputs.gps_data", "source = \"fake\""),
            ["osh-edge.conf:4: source = \"fake\" in [outputs.gps_data] is not allowed; allowed: \"hardware\", \"simulated\""])
        XCTAssertEqual(
            one("orientation", "north = true"),
            [
                "osh-edge.conf:4: 'north' in [orientation] must be one of \"true\", \"magnetic\"; got true/false: write it in quotes, \"true\""
            ])
        XCTAssertEqual(
            one("log", "level = \"warn\""),
            [
                "osh-edge.conf:4: level = \"warn\" in [log] is not allowed (did you mean \"warning\"?); allowed: \"error\", \"warning\", \"notice\", \"info\", \"debug\""
            ])
        XCTAssertEqual(
            one("paths", "state_directory = \"state\""),
            ["osh-edge.conf:4: state_directory in [paths] must be an absolute path (starting with /)"])
        XCTAssertEqual(
            one("paths", "counters_file = \"counters\""),
            ["osh-edge.conf:4: counters_file in [paths] must be an absolute path (starting with /), or \"\" for none"])
        XCTAssertEqual(settings(server + "[paths]\ncounters_file = \"\"\n")?.countersFile, "", "\"\" is none, not an error")
        XCTAssertEqual(
            one("time", "not_before = \"2026-01-01T00:00:00\""),
            [
                "osh-edge.conf:4: not_before = \"2026-01-01T00:00:00\" in [time] is not an ISO-8601 time with a zone; write it as \"2026-01-01T00:00:00Z\""
            ])
        XCTAssertEqual(
            one("time", "require_sync = 1"), ["osh-edge.conf:4: 'require_sync' in [time] must be true or false; got a whole number"])
        XCTAssertEqual(
            errors(server + "connect_timeout = 121\nrequest_timeout = 0.5\n"),
            [
                "osh-edge.conf:3: connect_timeout = 121 in [server.main] is out of range; allowed: 1 to 120 seconds",
                "osh-edge.conf:4: request_timeout = 0.5 in [server.main] is out of range; allowed: 1 to 300 seconds",
            ])
        XCTAssertEqual(
            one("system", "uid = \"my pi\""),
            [
                "osh-edge.conf:4: uid = \"my pi\" in [system] is not a usable UID: at least 12 characters, no spaces, URN characters only, as \"urn:osh:rpi:garden-01\"; \"\" uses the board's serial"
            ])
        XCTAssertEqual(
            one("system", "uid_extension = \"a b\""),
            ["osh-edge.conf:4: uid_extension = \"a b\" in [system] may hold only letters, digits and -._~!$&()*+,;=:@/#% (no spaces)"])
        XCTAssertEqual(
            errors(server + "[system]\nuid = \"urn:osh:rpi:garden-01\"\nuid_extension = \"x\"\n"),
            [
                "osh-edge.conf:5: uid_extension in [system] is only used when uid is empty (the UID is then urn:osh:rpi:<serial>:<uid_extension>); remove one of them"
            ])
        XCTAssertEqual(
            one("system", "label = \"two\\nlines\""),
            ["osh-edge.conf:4: label in [system] must be one line of text, without control characters"])
        XCTAssertEqual(one("system", "label = [\"a\"]"), ["osh-edge.conf:4: 'label' in [system] must be a quoted string; got a list"])
        let badName =
            "is not a usable hostname: 1 to 63 lower-case letters, digits and '-', not starting or ending with '-', as \"garden-01\"; \"\" keeps the board's own"
        for name in ["Garden", "-garden", "garden-", "gar.den", "gar den", String(repeating: "a", count: 64)] {
            XCTAssertEqual(
                one("system", "hostname = \"\(name)\""), ["osh-edge.conf:4: hostname = \"\(name)\" in [system] \(badName)"], name)
        }
        XCTAssertEqual(
            one("system", "hostname = 1"),
            ["osh-edge.conf:4: 'hostname' in [system] must be a quoted string; got a whole number: write \"1\""])
    }

    func testHostnameAcceptsRFC1123LabelsInLowerCase() {
        for name in ["", "a", "garden-01", "0pi", String(repeating: "a", count: 63)] {
            XCTAssertEqual(settings(server + "[system]\nhostname = \"\(name)\"\n")?.system.hostname, name, name)
        }
    }

    func testEverySettingIsRead() {
        let text =
            server + """
                user = "pi"
                connect_timeout = 5
                request_timeout = 60.5
                [system]
                uid_extension = "garden"
                label = "Garden Pi"
                hostname = "garden-01"
                [publisher]
                format = "swe+json"
                ring_capacity = 5_000
                flush_interval = 1
                batch_max = 10
                [time]
                require_sync = false
                not_before = "2027-06-01T12:00:00+02:00"
                [outputs.gps_data]
                enabled = true
                rate = 5
                source = "simulated"
                [outputs.device_health]
                enabled = false
                [orientation]
                north = "magnetic"
                [log]
                level = "debug"
                [paths]
                state_directory = "/srv/osh"
                counters_file = "/run/osh/counters"

                """
        guard let s = settings(text) else { return }
        XCTAssertEqual(
            s.activeServer,
            ServerSettings(
                name: "main", url: "http://node:8181/sensorhub/api", user: "pi",
                connectTimeout: 5, requestTimeout: 60.5))
        XCTAssertEqual(
            s.system,
            SystemSettings(
                uid: "", uidExtension: "garden", label: "Garden Pi",
                hostname: "garden-01"))
        XCTAssertEqual(s.publisher.format, .sweJSON)
        XCTAssertEqual(s.publisher.flushInterval, 1)
        XCTAssertEqual(s.publisher.batchMax, 10)
        XCTAssertEqual(s.ringCapacity, 5000)
        XCTAssertFalse(s.requireClockSync)
        XCTAssertEqual(s.notBefore, ISOTime.parse("2027-06-01T10:00:00Z"))
        XCTAssertEqual(s.outputs["gps_data"], OutputSettings(enabled: true, rate: 5, source: .simulated))
        XCTAssertEqual(s.outputs["device_health"], OutputSettings(enabled: false, rate: 1.0 / 60))
        XCTAssertEqual(s.outputs["barometer"], OutputSettings(enabled: false, rate: 1))
        XCTAssertEqual(s.north, .magnetic)
        XCTAssertEqual(s.logLevel, "debug")
        XCTAssertEqual(s.stateDirectory, "/srv/osh")
        XCTAssertEqual(s.countersFile, "/run/osh/counters")
    }

    // MARK: [record]

    func testRecordDefaults() {
        let r = AgentSettings(server: ServerSettings(name: "main", url: "http://node")).record
        XCTAssertEqual(r, RecordSettings())
        XCTAssertFalse(r.enabled)
        XCTAssertEqual(r.maxMegabytes, 1024)
        XCTAssertEqual(r.maxHours, 24)
        XCTAssertEqual(r.sync, .second)
        XCTAssertEqual(r.uploadShare, 0.5)
        XCTAssertEqual(r.rates, [:])
        XCTAssertEqual(settings(server + "[record]\n")?.record, RecordSettings(), "[record] alone is valid")
        XCTAssertEqual(
            settings(server + "[record]\nenabled = true\n")?.record.rates, [:], "no [record.NAME]: every output at its live rate")
    }

    func testEveryRecordKeyIsRead() {
        // [record.NAME] may come before its [outputs.NAME].
        let text =
            server + """
                [record]
                enabled = true
                max_mb = 4096
                max_hours = 0.5
                fsync = "never"
                upload_share = 1
                [record.camera0_H264]
                rate = 25
                [record.accelerometer]
                rate = 1000
                [record.gps_data]
                [outputs.camera0_H264]
                enabled = true
                rate = 2
                [outputs.accelerometer]
                enabled = true
                [outputs.gps_data]
                enabled = true
                rate = 0.5
                [outputs.barometer]
                enabled = true

                """
        guard let r = settings(text)?.record else { return }
        XCTAssertTrue(r.enabled)
        XCTAssertEqual(r.maxMegabytes, 4096)
        XCTAssertEqual(r.maxHours, 0.5)
        XCTAssertEqual(r.sync, .never)
        XCTAssertEqual(r.uploadShare, 1)
        // gps_data without a rate of its own: its live rate; barometer has no [record.NAME]: not recorded.
        XCTAssertEqual(r.rates, ["camera0_H264": 25, "accelerometer": 1000, "gps_data": 0.5])
        XCTAssertEqual(
            settings(server + "[record]\nmax_mb = 1_048_576\nmax_hours = 8760\nfsync = \"record\"\n")?.record.maxMegabytes, 1_048_576)
    }

    func testRecordErrorsSayWhatIsAllowed() {
        func one(_ section: String, _ line: String, enable output: String = "") -> [String] {
            errors(server + "[\(section)]\n" + line + "\n" + (output.isEmpty ? "" : "[outputs.\(output)]\nenabled = true\n"))
        }
        let outputs = AgentSettings.outputNames.joined(separator: ", ")
        XCTAssertEqual(one("record", "enabled = \"yes\""), ["osh-edge.conf:4: 'enabled' in [record] must be true or false; got a string"])
        XCTAssertEqual(one("record", "max_mb = 15"), ["osh-edge.conf:4: max_mb = 15 in [record] is out of range; allowed: 16 to 1048576"])
        XCTAssertEqual(
            one("record", "max_mb = 1_048_577"), ["osh-edge.conf:4: max_mb = 1048577 in [record] is out of range; allowed: 16 to 1048576"])
        XCTAssertEqual(
            one("record", "max_hours = 0"),
            ["osh-edge.conf:4: max_hours = 0 in [record] is out of range; allowed: more than 0, up to 8760 hours"])
        XCTAssertEqual(
            one("record", "max_hours = 8761"),
            ["osh-edge.conf:4: max_hours = 8761 in [record] is out of range; allowed: more than 0, up to 8760 hours"])
        XCTAssertEqual(
            one("record", "fsync = \"always\""),
            ["osh-edge.conf:4: fsync = \"always\" in [record] is not allowed; allowed: \"record\", \"second\", \"never\""])
        XCTAssertEqual(
            one("record", "upload_share = 0"),
            ["osh-edge.conf:4: upload_share = 0 in [record] is out of range; allowed: more than 0, up to 1 (a share of the link)"])
        XCTAssertEqual(
            one("record", "upload_share = 1.5"),
            ["osh-edge.conf:4: upload_share = 1.5 in [record] is out of range; allowed: more than 0, up to 1 (a share of the link)"])
        XCTAssertEqual(
            one("record", "max_mib = 64"),
            [
                "osh-edge.conf:4: key 'max_mib' is not known in [record] (did you mean 'max_mb'?); "
                    + "known keys: enabled, max_mb, max_hours, fsync, upload_share"
            ])
        XCTAssertEqual(
            one("record", "rate = 5"),
            [
                "osh-edge.conf:4: key 'rate' is not known in [record]; "
                    + "known keys: enabled, max_mb, max_hours, fsync, upload_share"
            ])
        XCTAssertEqual(
            one("record.gps_data", "rte = 5", enable: "gps_data"),
            ["osh-edge.conf:4: key 'rte' is not known in [record.gps_data] (did you mean 'rate'?); known keys: rate"])
        XCTAssertEqual(
            one("record.gps", "rate = 5"),
            ["osh-edge.conf:3: output 'gps' in [record.gps] is not known (did you mean 'gps_data'?); known outputs: " + outputs])
        XCTAssertEqual(
            one("record.camera0_H264", "rate = 30", enable: "camera0_H264"),
            ["osh-edge.conf:4: rate = 30 in [record.camera0_H264] is out of range; allowed: 1 to 25 frames per second"])
        XCTAssertEqual(
            one("record.accelerometer", "rate = 1001", enable: "accelerometer"),
            ["osh-edge.conf:4: rate = 1001 in [record.accelerometer] is out of range; allowed: more than 0, up to 1000 Hz"])
        XCTAssertEqual(
            one("record.magnetometer", "rate = 0", enable: "magnetometer"),
            ["osh-edge.conf:4: rate = 0 in [record.magnetometer] is out of range; allowed: more than 0, up to 1000 Hz"])
        XCTAssertEqual(
            one("record.barometer", "rate = 101", enable: "barometer"),
            ["osh-edge.conf:4: rate = 101 in [record.barometer] is out of range; allowed: more than 0, up to 100 Hz"])
        XCTAssertEqual(
            one("record.barometer", "rate = \"5\"", enable: "barometer"),
            ["osh-edge.conf:4: 'rate' in [record.barometer] must be a number, more than 0, up to 100 Hz; got a string: remove the quotes"])
        XCTAssertEqual(
            one("record.barometer", "rate = 5"),
            [
                "osh-edge.conf:3: [record.barometer] records an output that is not enabled: "
                    + "set enabled = true in [outputs.barometer], or remove [record.barometer]"
            ])
        XCTAssertEqual(
            errors(server + "[record.barometer]\n[outputs.barometer]\nenabled = false\n"),
            [
                "osh-edge.conf:3: [record.barometer] records an output that is not enabled: "
                    + "set enabled = true in [outputs.barometer], or remove [record.barometer]"
            ])
        XCTAssertEqual(
            errors("max_hours = 1\n" + server),
            ["osh-edge.conf:1: key 'max_hours' is outside any section (before the first [section] header); it belongs under [record]"])
        XCTAssertEqual(
            errors(server + "[records]\n").first?.hasPrefix(
                "osh-edge.conf:3: section [records] is not known (did you mean [record]?); known sections: "), true)
    }

    /// A user fixes the whole file in one go: syntax and schema errors together, in line order.
    func testAllErrorsAreCollected() {
        let text = """
            [server.main]
            url = "ftp://node"
            tls = "pin"
            [publisher]
            format = om+json
            ring_capacity = 10
            [outputs.gps_data]
            rate = -1
            [colour]
            password = "x"

            """
        let e = errors(text)
        XCTAssertEqual(
            e,
            [
                "osh-edge.conf:2: url = \"ftp://node\" in [server.main] must start with http:// or https://, as \"https://node.example.org/sensorhub/api\"",
                "osh-edge.conf:3: tls = \"pin\" in [server.main] needs pin_sha256 = \"BASE64\" (the SHA-256 of the node's public key; `osh-edge check` prints it)",
                "osh-edge.conf:5: text values must be in double quotes: write \"om+json\"",
                "osh-edge.conf:6: ring_capacity = 10 in [publisher] is out of range; allowed: 100 to 1000000",
                "osh-edge.conf:8: rate = -1 in [outputs.gps_data] is out of range; allowed: more than 0, up to 100 Hz",
                "osh-edge.conf:9: section [colour] is not known; known sections: [server.NAME], [node], [system], [publisher], [time], [outputs.NAME], [record], [record.NAME], [orientation], [gps], [i2c], [barometer], [hygrometer], [imu], [audio], [camera], [led], [ptz], [log], [paths]",
            ])
        do {
            _ = try AgentSettings.parse(bytes: Array(text.utf8), path: "/etc/osh-edge/osh-edge.conf", chips: ChipTable.known)
        } catch {
            XCTAssertEqual(String(describing: error).split(separator: "\n").count, 6)
            XCTAssertTrue(String(describing: error).hasPrefix("/etc/osh-edge/osh-edge.conf:2: url"))
        }
    }

    /// A header or key whose line is broken is reported once, not again as missing or misplaced.
    func testBrokenLinesDoNotCascade() {
        XCTAssertEqual(
            errors("[server.main]\nurl = \"http://a\n"),
            ["osh-edge.conf:2: the string is not closed: missing '\"' (strings fit on one line)"])
        XCTAssertEqual(errors(server + "[publisher\nformat = 1\n"), ["osh-edge.conf:3: section header is not closed: missing ']'"])
        XCTAssertEqual(
            errors("[server main]\nurl = \"http://a\"\n"),
            ["osh-edge.conf:1: unexpected 'm' in the section header; write [section] or [section.NAME]"])
    }

    func testTooManyErrorsStops() {
        let text = String(repeating: "k = ?\n", count: 500)
        let e = errors(text)
        XCTAssertEqual(e.count, ConfigParser.maxErrors + 1)
        XCTAssertEqual(e.last, "osh-edge.conf: too many errors (more than 100); stopped reading")
        let schema = errors(server + String(repeating: "[log]\n", count: 1) + (0..<300).map { "k\($0) = 1\n" }.joined())
        XCTAssertEqual(schema.count, ConfigParser.maxErrors + 1)
        XCTAssertEqual(schema.last, "osh-edge.conf: … and 200 more errors")
    }

    // MARK: Secrets

    func testSecrets() throws {
        let text = "# root-only\n[server.main]\npassword = \"p\\\"w\"\n[server.lab]\ntoken = \"abc.def\"\n"
        let s = try Secrets.parse(bytes: Array(text.utf8), path: "secrets")
        XCTAssertEqual(s, ["main": .password("p\"w"), "lab": .token("abc.def")])
        XCTAssertEqual("\(s["main"]!)", "password (hidden)")
        XCTAssertFalse(String(reflecting: s).contains("p\"w"))
        var dumped = ""
        dump(s, to: &dumped)
        XCTAssertFalse(dumped.contains("abc.def"))

        XCTAssertEqual(
            secretsErrors("[server.main]\npasword = \"x\"\n"),
            ["secrets:2: key 'pasword' is not known in [server.main] (did you mean 'password'?); known keys: password, token"])
        XCTAssertEqual(
            secretsErrors("[server.main]\npassword = \"x\"\ntoken = \"y\"\n"),
            [
                "secrets:3: [server.main] has both password and token; keep one (password for HTTP Basic with 'user', token for a Bearer token)"
            ])
        XCTAssertEqual(
            secretsErrors("[node]\n"),
            [
                "secrets:1: section [node] is not known in the secrets file; it holds only [server.NAME] sections, each with password = \"…\" or token = \"…\""
            ])
        XCTAssertEqual(
            secretsErrors("password = \"x\"\n"),
            [
                "secrets:1: key 'password' is outside any section; put it under [server.NAME], NAME being the server's name in /etc/osh-edge/osh-edge.conf"
            ])
        XCTAssertEqual(
            secretsErrors("[server.main]\n"), ["secrets:1: [server.main] has no password or token; add one, or remove the section"])
        XCTAssertEqual(
            secretsErrors("[server.main]\npassword = \"\"\n"),
            ["secrets:2: password in [server.main] is empty; remove the section if the server needs none"])
        XCTAssertEqual(
            secretsErrors("[server.main]\npassword = 1234\n"),
            ["secrets:2: password in [server.main] must be a quoted string; got a whole number"])
        // Values never reach a message.
        for bad in [
            "password = hunter2", "password = \"hunter2", "password = \"hunter2\" x", "password = \"hunt\\qer2\"",
            "password = [hunter2]", "password = 'hunter2'", "password = 12hunter2",
        ] {
            let e = secretsErrors("[server.main]\n" + bad + "\n")
            XCTAssertEqual(e.count, 1, bad)
            XCTAssertFalse(e.joined().contains("hunter2"), "\(bad) → \(e)")
            XCTAssertFalse(e.joined().contains("x'"), "\(bad) → \(e)")
        }
    }

    func testCredentials() {
        let plain = ServerSettings(name: "main", url: "http://a")
        var withUser = plain
        withUser.user = "pi"
        XCTAssertEqual(plain.credentials(from: [:]), CSCredentials.none)
        XCTAssertEqual(plain.credentials(from: ["main": .token("t")]), .bearer(token: "t"))
        XCTAssertEqual(withUser.credentials(from: ["main": .password("pw")]), .basic(username: "pi", password: "pw"))
        XCTAssertEqual(withUser.credentials(from: ["other": .password("pw")]), .basic(username: "pi", password: ""))
    }

    // MARK: Robustness

    /// 20,000 mutated pieces of the example (bytes flipped, inserted, deleted, lines duplicated):
    /// every one is accepted or refused with ConfigErrors whose lines exist — never a trap.
    /// Most rounds mutate a window of a few lines after the server section (a debug build parses
    /// the whole 4 KB example in ~0.2 ms); every 50th round mutates the whole file.
    func testMutatedInputsNeverCrash() throws {
        let original = Array(try example().utf8)
        let lines = original.split(separator: 0x0A, omittingEmptySubsequences: false).map { Array($0) + [0x0A] }
        var offsets = [0]  // offsets[k] = where line k starts; lines are sliced from `original`
        for l in lines { offsets.append(offsets[offsets.count - 1] + l.count) }
        offsets[offsets.count - 1] = original.count
        let serverEnd = lines.firstIndex { $0.starts(with: Array("[node]".utf8)) } ?? 0
        let prefix = Array(lines[..<serverEnd].filter { !$0.starts(with: [0x23]) }.joined())  // [server.main], no comments
        var rng = SplitMix64(seed: 0x05E_ED6E)
        let interesting: [UInt8] = Array("\"[]=#\\.,_-+e0 \t\nu".utf8) + [0, 0x0D, 0x7F, 0x80, 0xC3, 0xE2, 0xED, 0xF4, 0xFF]
        let start = Date()
        var accepted = 0, refused = 0
        for round in 0..<20_000 {
            var b: [UInt8]
            if round % 50 == 0 {
                b = original
            } else {
                let from = Int(rng.next() % UInt64(lines.count))
                let to = min(lines.count, from + 1 + Int(rng.next() % 8))
                b = prefix
                b.append(contentsOf: original[offsets[from]..<offsets[to]])
            }
            for _ in 0..<(1 + Int(rng.next() % 4)) {
                let at = Int(rng.next() % UInt64(b.count + 1))
                switch rng.next() % 5 {
                case 0 where at < b.count: b[at] ^= UInt8(truncatingIfNeeded: 1 << (rng.next() % 8))
                case 1: b.insert(interesting[Int(rng.next() % UInt64(interesting.count))], at: at)
                case 2: b.insert(UInt8(truncatingIfNeeded: rng.next()), at: at)
                case 3 where at < b.count: b.remove(at: at)
                default:
                    // Duplicate a line: duplicate keys and sections.
                    var s = at, e = at
                    while s > 0, b[s - 1] != 0x0A { s -= 1 }
                    while e < b.count, b[e] != 0x0A { e += 1 }
                    b.insert(contentsOf: b[s..<min(e + 1, b.count)], at: s)
                }
            }
            do {
                _ = try AgentSettings.parse(bytes: b, path: "f", chips: ChipTable.known)
                accepted += 1
            } catch {
                refused += 1
                guard let e = Self.configErrors(error), !e.errors.isEmpty else {
                    XCTFail("round \(round): \(error)")
                    return
                }
                var lineCount = 1
                for byte in b where byte == 0x0A { lineCount += 1 }
                for x in e.errors {
                    XCTAssertFalse(x.message.isEmpty)
                    if let l = x.line { XCTAssertTrue((1...lineCount).contains(l), "round \(round): \(x)") }
                }
            }
            if round % 8 == 0 { _ = try? Secrets.parse(bytes: b, path: "s") }
        }
        XCTAssertGreaterThan(accepted, 1000)
        XCTAssertGreaterThan(refused, 1000)
        print("config fuzz: \(accepted) accepted, \(refused) refused in \(Date().timeIntervalSince(start)) s")
    }
}
