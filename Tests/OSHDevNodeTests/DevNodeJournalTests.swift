import Foundation
import XCTest
import OSHCore
@testable import OSHDevNode

/// `osh-edge node --journal FILE`: resources and their ids survive a restart of the node.
final class DevNodeJournalTests: XCTestCase {
    let api = "/sensorhub/api"
    let uid = "urn:osh:rpi:journal0001"
    var dir = ""
    var journal: String { dir + "/node.journal" }

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "osh-devnode-journal-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { [dir] in try? FileManager.default.removeItem(atPath: dir) }
    }

    private func makeNode(_ path: String? = nil) -> DevNode {
        var config = DevNodeConfig()
        config.journalPath = path ?? journal
        let node = DevNode(config: config)
        addTeardownBlock { node.stop() }
        return node
    }

    private func startNode(_ path: String? = nil) throws -> DevNode {
        let node = makeNode(path)
        try node.start()
        return node
    }

    private func send(
        _ node: DevNode, _ method: String, _ path: String, _ contentType: String? = nil, _ body: String? = nil
    ) throws -> TestResponse {
        var h = [("Accept", "application/json")]
        if let ct = contentType { h.append(("Content-Type", ct)) }
        return try TestHTTP.request(port: node.port, method, api + path, headers: h, body: body.map { Array($0.utf8) })
    }

    private func created(_ node: DevNode, _ path: String, _ contentType: String, _ body: String) throws -> String {
        let r = try send(node, "POST", path, contentType, body)
        XCTAssertEqual(r.status, 201, r.text)
        return try XCTUnwrap(r.locationID)
    }

    private var system: String {
        SystemBody.string(
            SystemDescription(
                uid: uid, label: "Journal Pi", serial: "0001", validFrom: 1_773_853_378,
                outputs: [OutputCatalogue.gps(OutputOptions(uid: uid))]))
    }

    private func datastream(_ output: String) -> String {
        #"{"name":"Weather","outputName":""# + output + #"","schema":{"obsFormat":"application/om+json","resultSchema":"#
            + #"{"type":"DataRecord","name":""# + output
            + #"","fields":[{"type":"Quantity","name":"temp","definition":"http://x/temp","uom":{"code":"Cel"}}]}}}"#
    }

    private let controlStream =
        #"{"name":"Pan","inputName":"ptz","schema":{"commandFormat":"application/json","parametersSchema":{"type":"DataRecord","name":"ptz","fields":[{"type":"Quantity","name":"rpan","uom":{"code":"deg"}}]}}}"#

    private func systemCount(_ node: DevNode) throws -> Int? {
        ((try send(node, "GET", "/systems").json as? [String: Any])?["items"] as? [Any])?.count
    }

    private func lines() throws -> [String] {
        try String(contentsOfFile: journal, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// A node that registered a system, datastreams, a control stream and a sampling feature.
    private func registered() throws -> (sys: String, ds: [String], cs: String, foi: String, deleted: String, bodies: [String: String]) {
        let node = try startNode()
        XCTAssertEqual(node.journalNotes.count, 1)
        XCTAssertTrue(node.journalNotes[0].hasSuffix("new; resources created from now on are kept across restarts"), "\(node.journalNotes)")
        let sys = try created(node, "/systems", "application/sml+json", system)
        let ds1 = try created(node, "/systems/\(sys)/datastreams", "application/json", datastream("weather"))
        // Observations are not journaled, but they mint ids: the replay must not depend on them.
        let obs = #"{"phenomenonTime":"2026-03-18T17:05:35Z","result":{"temp":21.5}}"#
        XCTAssertEqual(try send(node, "POST", "/datastreams/\(ds1)/observations", "application/om+json", obs).status, 201)
        let gone = try created(node, "/systems/\(sys)/datastreams", "application/json", datastream("gone"))
        let ds2 = try created(node, "/systems/\(sys)/datastreams", "application/json", datastream("climate"))
        XCTAssertEqual(try send(node, "DELETE", "/datastreams/\(gone)").status, 204)
        let cs = try created(node, "/systems/\(sys)/controlstreams", "application/json", controlStream)
        let foi = try created(
            node, "/systems/\(sys)/samplingFeatures", "application/geo+json",
            #"{"type":"Feature","properties":{"uid":"urn:osh:foi:journal-site","name":"Site"},"geometry":null}"#)
        XCTAssertEqual(try send(node, "PUT", "/systems/\(sys)", "application/sml+json", system).status, 204)
        XCTAssertEqual(try send(node, "POST", "/datastreams/\(ds2)/observations", "application/om+json", obs).status, 201)
        var bodies: [String: String] = [:]
        for path in ["/systems/\(sys)", "/datastreams/\(ds1)", "/datastreams/\(ds2)", "/controlstreams/\(cs)", "/samplingFeatures/\(foi)"] {
            bodies[path] = try send(node, "GET", path).text
        }
        node.stop()
        return (sys, [ds1, ds2], cs, foi, gone, bodies)
    }

    func testResourcesAndTheirIDsSurviveARestart() throws {
        let before = try registered()
        // Header, start, system, datastream, datastream, datastream, delete, control stream, feature, put.
        let written = try lines()
        XCTAssertEqual(written.count, 11, written.joined(separator: "\n"))
        XCTAssertEqual(written.last, "", "every record ends with its newline")

        let node = try startNode()
        XCTAssertEqual(
            node.journalNotes,
            ["journal \(journal): 8 changes replayed — systems: 1, datastreams: 2, control streams: 1, sampling features: 1"])
        XCTAssertEqual(node.systemID(uid: uid), before.sys)
        XCTAssertEqual(node.datastreamIDs(systemID: before.sys), before.ds)
        XCTAssertEqual(try systemCount(node), 1)
        for (path, body) in before.bodies {
            // Same id, same validTime, same everything — but the observations' time ranges (none kept).
            func resource(_ text: String) -> NSDictionary? {
                (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])?
                    .filter { $0.key != "phenomenonTime" && $0.key != "resultTime" } as NSDictionary?
            }
            XCTAssertEqual(resource(try send(node, "GET", path).text), resource(body), path)
            XCTAssertNotNil(resource(body))
        }
        XCTAssertEqual(try send(node, "GET", "/datastreams/\(before.deleted)").status, 404, "a deletion is replayed too")
        XCTAssertEqual(node.stats.observationCount, 0, "observations are not kept")
        XCTAssertEqual(node.stats.datastream(id: before.ds[0])?.schemaVersions, 1)

        // The agent re-registers after the power cycle: nothing new at the node.
        let again = try send(node, "POST", "/systems", "application/sml+json", system)
        XCTAssertEqual(again.status, 201)
        XCTAssertEqual(again.locationID, before.sys)
        XCTAssertEqual(
            try send(node, "POST", "/systems/\(before.sys)/datastreams", "application/json", datastream("weather")).locationID, before.ds[0]
        )
        XCTAssertEqual(try systemCount(node), 1)
        XCTAssertEqual(node.datastreamIDs(systemID: before.sys), before.ds)

        // Ids minted now are new, the deleted datastream's included, and they survive the next restart too.
        let ds3 = try created(node, "/systems/\(before.sys)/datastreams", "application/json", datastream("wind"))
        XCTAssertFalse(([before.sys, before.cs, before.foi, before.deleted] + before.ds).contains(ds3))
        node.stop()
        let third = try startNode()
        XCTAssertEqual(third.datastreamIDs(systemID: before.sys), before.ds + [ds3])
        XCTAssertEqual(try systemCount(third), 1)
    }

    func testForgetEverythingIsJournaled() throws {
        let first = try startNode()
        let sys = try created(first, "/systems", "application/sml+json", system)
        first.forgetEverything()
        let sys2 = try created(first, "/systems", "application/sml+json", system)
        XCTAssertNotEqual(sys, sys2)
        first.stop()
        let second = try startNode()
        XCTAssertEqual(second.systemID(uid: uid), sys2)
        XCTAssertEqual(try systemCount(second), 1)
    }

    func testTornLastRecordIsIgnoredWithAWarningAndCutOff() throws {
        let before = try registered()
        let whole = try Data(contentsOf: URL(fileURLWithPath: journal))
        let h = try XCTUnwrap(FileHandle(forWritingAtPath: journal))
        h.seekToEndOfFile()
        h.write(Data(#"{"type":"request","counter":40,"time":1773853378.5,"method":"POST","uri":"/sensorhub/api/sys"#.utf8))
        h.closeFile()

        let node = try startNode()
        XCTAssertEqual(
            node.journalNotes.first, "journal \(journal):11: the last record was cut short (a power cut while writing?); ignored")
        XCTAssertEqual(node.systemID(uid: uid), before.sys)
        XCTAssertEqual(node.datastreamIDs(systemID: before.sys), before.ds)
        let now = try Data(contentsOf: URL(fileURLWithPath: journal))
        XCTAssertEqual(now.prefix(whole.count), whole, "the torn bytes are cut off, the complete records kept")
        XCTAssertEqual(now.last, UInt8(ascii: "\n"))
        // What comes next is appended after the last complete record, so it replays.
        let ds3 = try created(node, "/systems/\(before.sys)/datastreams", "application/json", datastream("wind"))
        node.stop()
        let next = try startNode()
        XCTAssertEqual(next.datastreamIDs(systemID: before.sys), before.ds + [ds3])
        XCTAssertEqual(next.journalNotes.count, 1, "nothing torn any more: \(next.journalNotes)")

        // A header cut short: the journal starts afresh.
        let headerOnly = dir + "/torn-header.journal"
        _ = FileManager.default.createFile(atPath: headerOnly, contents: Data(#"{"type":"header","jour"#.utf8))
        let fresh = try startNode(headerOnly)
        XCTAssertEqual(
            fresh.journalNotes.first, "journal \(headerOnly):1: the header was cut short (a power cut while writing?); starting empty")
        XCTAssertEqual(try systemCount(fresh), 0)
    }

    func testDamagedOrForeignJournalIsRefusedWithFileAndLine() throws {
        _ = try registered()
        var text = try lines()

        func refused(_ content: String, _ file: String = "bad.journal") throws -> String {
            let path = dir + "/" + file
            try content.write(toFile: path, atomically: false, encoding: .utf8)
            let node = makeNode(path)
            var message = ""
            XCTAssertThrowsError(try node.start()) { message = "\($0)" }
            XCTAssertFalse(node.isRunning, "nothing listens on a refused journal")
            XCTAssertEqual(node.port, 0)
            return message
        }

        // A complete line that does not read back: a damaged record, not a torn one.
        let good = text
        text[4] = #"{"type":"request","counter":"#
        var m = try refused(text.joined(separator: "\n"))
        XCTAssertTrue(m.hasPrefix(dir + "/bad.journal:5: damaged journal record (invalid JSON"), m)
        XCTAssertTrue(m.hasSuffix("delete the file to start empty"), m)

        text = good
        text[2] = #"{"type":"mystery","counter":3}"#
        m = try refused(text.joined(separator: "\n"))
        XCTAssertEqual(m, dir + "/bad.journal:3: damaged journal record (unknown record type); delete the file to start empty")

        // Another version of the node wrote it.
        text = good
        text[0] = text[0].replacingOccurrences(of: #""version":1"#, with: #""version":2"#)
        m = try refused(text.joined(separator: "\n"))
        XCTAssertEqual(
            m,
            dir + "/bad.journal:1: written by a different development node (journal version 2, this node reads version 1); "
                + "delete the file to start empty")

        // A record the handlers now answer differently (a node whose rules changed).
        text = good
        text[2] = text[2].replacingOccurrences(of: #""status":201"#, with: #""status":200"#)
        m = try refused(text.joined(separator: "\n"))
        XCTAssertTrue(m.hasPrefix(dir + "/bad.journal:3: replaying POST /sensorhub/api/systems answered 201 /systems/"), m)
        XCTAssertTrue(m.hasSuffix("delete the file to start empty"), m)

        // Not a journal at all.
        m = try refused("[server]\nnode = \"x\"\n", "osh-edge.conf")
        XCTAssertEqual(m, dir + "/osh-edge.conf:1: not a development node journal; name another file, or delete this one to start empty")

        // Empty is new; cannot be opened, or not a file, is said.
        _ = FileManager.default.createFile(atPath: dir + "/empty.journal", contents: Data())
        XCTAssertEqual(try startNode(dir + "/empty.journal").journalNotes.count, 1, "an empty file is a new journal")
        let node = makeNode(dir + "/no/such/dir/node.journal")
        XCTAssertThrowsError(try node.start()) {
            XCTAssertEqual(
                "\($0)",
                "cannot open the journal \(self.dir)/no/such/dir/node.journal: No such file or directory — "
                    + "check that its directory exists and this user may write there")
        }
        XCTAssertThrowsError(try makeNode(dir).start()) {
            XCTAssertEqual("\($0)", "cannot open the journal \(self.dir): it is a directory; name a file (it is created if missing)")
        }
        XCTAssertThrowsError(try makeNode("/dev/null").start()) {
            XCTAssertEqual("\($0)", "the journal /dev/null is not a regular file; name a file (it is created if missing)")
        }
    }

    func testRecordsRoundTripAndIDsFollowFromSaltAndCounter() throws {
        let binary = JournalRequest(
            counter: 7, time: 1_773_853_378.123456, method: "PUT", uri: "/sensorhub/api/systems/x?f=1",
            contentType: nil, body: [0xff, 0x00, 0x0a], status: 204, answer: "")
        let text = JournalText.line(.request(binary))
        XCTAssertEqual(text.last, UInt8(ascii: "\n"))
        XCTAssertEqual(text.filter { $0 == UInt8(ascii: "\n") }.count, 1, "one line, whatever the body holds")
        XCTAssertEqual(try JournalText.parseEntry(Array(text.dropLast()), at: "f:2"), .request(binary))
        var json = binary
        json.body = Array("{\"a\":\"é\n\"}".utf8)  // a real newline inside: escaped, still one line
        json.contentType = "application/json"
        XCTAssertTrue(String(decoding: JournalText.line(.request(json)), as: UTF8.self).contains(#""body":"{\"a\":\"é\n\"}""#))
        XCTAssertEqual(try JournalText.parseEntry(Array(JournalText.line(.request(json)).dropLast()), at: "f:2"), .request(json))
        let header = JournalText.headerLine(salt: 0x00ab_cdef_0123_4567)
        XCTAssertEqual(try JournalText.parseHeader(Array(header.dropLast()), path: "f"), 0x00ab_cdef_0123_4567)

        // Minting is a function of (salt, counter): restoring both mints the same id again.
        var a = IDMinter(salt: 42)
        let ids = (0..<5).map { _ in a.next() }
        var b = IDMinter(salt: 42)
        b.counter = 3
        XCTAssertEqual(b.next(), ids[3])
        XCTAssertTrue(DevNodeJournal.changesResources(method: "POST", path: "/sensorhub/api/systems/a/fois", apiPath: "/sensorhub/api"))
        XCTAssertFalse(
            DevNodeJournal.changesResources(method: "POST", path: "/sensorhub/api/datastreams/a/observations", apiPath: "/sensorhub/api"))
        XCTAssertFalse(
            DevNodeJournal.changesResources(method: "POST", path: "/sensorhub/api/controlstreams/a/status", apiPath: "/sensorhub/api"))
        XCTAssertTrue(DevNodeJournal.changesResources(method: "DELETE", path: "/sensorhub/api/controlstreams/a", apiPath: "/sensorhub/api"))
    }
}
