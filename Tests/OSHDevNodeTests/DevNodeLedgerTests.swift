// The soak's view of the node: `--ledger` lines for what was accepted and deleted, and the
// `--control-stdin` lines, each observed by a client.
import Foundation
import XCTest
import OSHCore
@testable import OSHDevNode

extension DevNodeTests {
    func ledgerNode() throws -> (DevNode, String) {
        let path = NSTemporaryDirectory() + "osh-devnode-ledger-\(UUID().uuidString)"
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        var config = DevNodeConfig()
        config.ledgerPath = path
        return (try startNode(config), path)
    }

    func ledgerLines(_ path: String) throws -> [[String]] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
    }

    func testLedgerHasALineForEachSystemDatastreamObservationAndDelete() throws {
        let (node, path) = try ledgerNode()
        let sys = try createSystem(node)
        let weather = try createDatastream(node, system: sys)
        let batch =
            #"[{"phenomenonTime":"2026-03-18T17:05:36.951Z","result":{"temp":1,"hum":2}},"#
            + #"{"phenomenonTime":"2026-03-18T17:05:37Z","result":{"temp":3,"hum":4}}]"#
        XCTAssertEqual(try post(node, "/datastreams/\(weather)/observations", "application/om+json", batch).status, 201)
        // Refused: no line.
        XCTAssertEqual(try post(node, "/datastreams/\(weather)/observations", "application/om+json", "[{}]").status, 500)
        let camera = OutputCatalogue.video(OutputOptions(uid: uid))
        let video = try createDatastream(
            node, system: sys, body: DatastreamBody.string(camera, systemLabel: "Test Pi", scalarFormat: .omJSON))
        let buf = ByteBuffer()
        let frame: [UInt8] = [0, 0, 0, 1, 0x65, 0x88, 0x84]
        try frame.withUnsafeBytes { try VideoRecord.write(time: 1_773_853_538.5, frame: $0, to: buf) }
        try frame.withUnsafeBytes { try VideoRecord.write(time: 1_773_853_538.7, frame: $0, to: buf) }
        XCTAssertEqual(try postBytes(node, "/datastreams/\(video)/observations", "application/swe+binary", buf.array).status, 201)
        XCTAssertEqual(try send(node, "DELETE", "/datastreams/\(weather)", nil, "").status, 204)

        let lines = try ledgerLines(path)
        XCTAssertEqual(lines.map { $0[0] }, ["node-start", "system", "datastream", "obs", "obs", "datastream", "obs", "obs", "deleted"])
        XCTAssertEqual(lines[0].last, "pid=\(getpid())")
        XCTAssertEqual(Array(lines[1].dropFirst(2)), [uid, sys])
        XCTAssertEqual(Array(lines[2].dropFirst(2)), ["weather", weather, sys])
        XCTAssertEqual(Array(lines[3].dropFirst(2)), ["weather", "1773853536.951000", weather])
        XCTAssertEqual(Array(lines[4].dropFirst(2)), ["weather", "1773853537.000000", weather])
        XCTAssertEqual(lines[3][1], lines[4][1], "one arrival time per POST")
        XCTAssertEqual(Array(lines[6].dropFirst(2)), [camera.outputName, "1773853538.500000", video])
        XCTAssertEqual(Array(lines[7].dropFirst(2)), [camera.outputName, "1773853538.700000", video])
        XCTAssertEqual(Array(lines[8].dropFirst(2)), ["datastream", "weather", weather])
        for l in lines { XCTAssertNotNil(Double(l[1]), "epoch in \(l)"); XCTAssertEqual(l[1].split(separator: ".").last?.count, 6) }
    }

    func testLedgerEpochsHaveSixDecimals() {
        func text(_ t: Double) -> String {
            var out: [UInt8] = []
            DevNodeLedger.appendFixed6(t, to: &out)
            return String(decoding: out, as: UTF8.self)
        }
        XCTAssertEqual(text(1_773_853_535.951), "1773853535.951000")
        XCTAssertEqual(text(1_773_853_535.123_456_7), "1773853535.123457")
        XCTAssertEqual(text(0), "0.000000")
        XCTAssertEqual(text(-1.5), "-1.500000")
        XCTAssertEqual(text(.nan), "nan")
    }

    func testControlLinesChangeTheNodeAsAClientSeesIt() throws {
        let (node, path) = try ledgerNode()
        let port = node.port
        let sys = try createSystem(node)
        let weather = try createDatastream(node, system: sys)
        let obs = #"{"phenomenonTime":"2026-03-18T17:05:36Z","result":{"temp":1,"hum":2}}"#
        XCTAssertEqual(try post(node, "/datastreams/\(weather)/observations", "application/om+json", obs).status, 201)
        XCTAssertEqual(node.control("stats"), "stats systems=1 datastreams=1 observations=1")

        XCTAssertEqual(node.control("mode refuse"), "ok mode refuse")
        XCTAssertThrowsError(try get(node, "")) { XCTAssertEqual(($0 as? TestHTTPError)?.errno, ECONNREFUSED) }
        XCTAssertEqual(node.control("mode normal"), "ok mode normal")
        XCTAssertEqual(node.port, port)
        XCTAssertEqual(try get(node, "").status, 200, "listening again on the same port")

        XCTAssertEqual(node.control("mode status 503"), "ok mode status 503")
        XCTAssertEqual(try get(node, "").status, 503)

        XCTAssertEqual(node.control("mode reset"), "ok mode reset")
        let cut = try get(node, "")
        XCTAssertLessThan(cut.body.count, try XCTUnwrap(cut.header("Content-Length").flatMap { Int($0) }), "the body is cut short")

        XCTAssertEqual(node.control("mode reject 400"), "ok mode reject 400")
        XCTAssertEqual(try post(node, "/datastreams/\(weather)/observations", "application/om+json", obs).status, 400)
        XCTAssertEqual(try get(node, "").status, 200, "only observations are rejected")

        XCTAssertEqual(node.control("mode delay 0.3"), "ok mode delay 0.3")
        let t0 = Date()
        XCTAssertEqual(try get(node, "").status, 200)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(t0), 0.29)

        XCTAssertEqual(node.control("mode normal"), "ok mode normal")
        XCTAssertEqual(node.control("delete weather"), "ok delete weather")
        XCTAssertEqual(try get(node, "/datastreams/\(weather)").status, 404)
        XCTAssertEqual(try ledgerLines(path).last, ["deleted", try ledgerLines(path).last?[1] ?? "", "datastream", "weather", weather])
        XCTAssertEqual(node.control("stats"), "stats systems=1 datastreams=0 observations=0")

        XCTAssertEqual(node.control("delete weather"), "error no datastream has the output name 'weather'")
        for bad in ["mode status 99", "mode delay -1", "mode reject 200", "mode normal now", "mode", "delete", "stats 1", "", "frobnicate"]
        {
            XCTAssertTrue(node.control(bad).hasPrefix("error "), bad)
        }
        XCTAssertEqual(node.mode, .normal, "a refused line changes nothing")
    }

    func testServeControlAnswersEachLineAndReturnsAtEndOfInput() throws {
        let node = try startNode()
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        let input = Array("stats\r\nmode status 401\nbogus\nmode normal".utf8) + Array("\n".utf8)
        XCTAssertEqual(input.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }, input.count)
        close(fds[1])
        var replies: [String] = []
        node.serveControl(fd: fds[0]) { replies.append($0) }
        close(fds[0])
        XCTAssertEqual(replies.count, 4)
        XCTAssertEqual(replies[0], "stats systems=0 datastreams=0 observations=0")
        XCTAssertEqual(replies[1], "ok mode status 401")
        XCTAssertTrue(replies[2].hasPrefix("error unknown command 'bogus'"), replies[2])
        XCTAssertEqual(replies[3], "ok mode normal")
        XCTAssertEqual(try get(node, "").status, 200)
    }
}
