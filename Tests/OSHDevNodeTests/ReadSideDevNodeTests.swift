import Foundation
import XCTest
import OSHCore
@testable import OSHDevNode

/// GET …/observations as the read side uses it: time filters, `latest`, order and the
/// swe+json / swe+binary response formats.
final class ReadSideDevNodeTests: XCTestCase {
    let api = "/sensorhub/api"

    func get(_ node: DevNode, _ path: String) throws -> TestResponse {
        try TestHTTP.request(port: node.port, "GET", api + path, headers: [("Accept", "application/json")])
    }

    func post(_ node: DevNode, _ path: String, _ ct: String, _ body: String) throws -> TestResponse {
        try TestHTTP.request(
            port: node.port, "POST", api + path, headers: [("Accept", "application/json"), ("Content-Type", ct)],
            body: Array(body.utf8))
    }

    func testFiltersOrderAndFormats() throws {
        let node = DevNode(config: DevNodeConfig())
        try node.start()
        defer { node.stop() }
        let sys = try post(
            node, "/systems", MediaType.geoJSON, #"{"type":"Feature","properties":{"uid":"urn:osh:rpi:rsdn-0001","name":"N"}}"#)
        let sid = try XCTUnwrap(sys.locationID)
        let ds = try post(
            node, "/systems/\(sid)/datastreams", MediaType.json,
            """
            {"name":"W","outputName":"w","schema":{"obsFormat":"application/om+json","resultSchema":\
            {"type":"DataRecord","name":"w","fields":[{"type":"Quantity","name":"temp","definition":"http://x/temp","uom":{"code":"Cel"}},\
            {"type":"Count","name":"n","definition":"http://x/n"},{"type":"Text","name":"note","definition":"http://x/note"}]}}}
            """)
        let id = try XCTUnwrap(ds.locationID, ds.text)
        // Posted out of order: the node sorts by phenomenon time.
        let obs = [("2026-11-29T10:00:20Z", 3.5, 3, "c"), ("2026-11-29T10:00:00Z", 1.25, 1, "a"), ("2026-11-29T10:00:10Z", -2.0, 2, "b")]
        let body =
            "["
            + obs.map { #"{"phenomenonTime":"\#($0.0)","result":{"temp":\#($0.1),"n":\#($0.2),"note":"\#($0.3)"}}"# }
            .joined(separator: ",") + "]"
        XCTAssertEqual(try post(node, "/datastreams/\(id)/observations", MediaType.omJSON, body).status, 201)

        func notes(_ query: String) throws -> [String] {
            let r = try get(node, "/datastreams/\(id)/observations?" + query)
            XCTAssertEqual(r.status, 200, r.text)
            let items = (r.json as? [String: Any])?["items"] as? [[String: Any]] ?? []
            return items.compactMap { ($0["result"] as? [String: Any])?["note"] as? String }
        }
        XCTAssertEqual(try notes("limit=10"), ["a", "b", "c"])
        XCTAssertEqual(try notes("order=desc&limit=2"), ["c", "b"])
        XCTAssertEqual(try notes("resultTime=latest"), ["c"])
        XCTAssertEqual(try notes("phenomenonTime=latest"), ["c"])
        XCTAssertEqual(try notes("phenomenonTime=2026-11-29T10:00:05Z/2026-11-29T10:00:15Z"), ["b"])
        XCTAssertEqual(try notes("phenomenonTime=../2026-11-29T10:00:10Z"), ["a", "b"])
        XCTAssertEqual(try notes("phenomenonTime=2026-11-29T10:00:10Z/.."), ["b", "c"])
        XCTAssertEqual(try notes("phenomenonTime=2026-11-29T10:00:10Z"), ["b"])
        let bad = try get(node, "/datastreams/\(id)/observations?phenomenonTime=yesterday")
        XCTAssertEqual(bad.status, 400)
        XCTAssertEqual(bad.message, "Invalid time parameter: yesterday")

        // swe+json: a JSON array of full records, time first.
        let sj = try get(node, "/datastreams/\(id)/observations?order=desc&limit=1&f=application%2Fswe%2Bjson")
        XCTAssertEqual(sj.header("Content-Type"), MediaType.sweJSON)
        XCTAssertEqual(sj.text, #"[{"time":"2026-11-29T10:00:20.000Z","temp":3.5,"n":3,"note":"c"}]"#)
        // swe+binary in the default encoding (big-endian, each scalar's type; text with a 2-byte length).
        let sb = try get(node, "/datastreams/\(id)/observations?limit=1&f=application%2Fswe%2Bbinary")
        XCTAssertEqual(sb.header("Content-Type"), MediaType.sweBinary)
        let schema = try SchemaDecoder.datastreamSchema(
            json: try get(node, "/datastreams/\(id)/schema?obsFormat=application%2Fswe%2Bbinary").body)
        let decoded = try schema.reader().decodeBinary(sb.body)
        XCTAssertNil(decoded.error)
        XCTAssertEqual(decoded.records.first?["/temp"], .number(1.25))
        XCTAssertEqual(decoded.records.first?["/n"], .count(1))
        XCTAssertEqual(decoded.records.first?["/note"], .text("a"))
        // SWE formats need one datastream (the root collection spans two now); unknown formats are
        // refused in the node's words.
        let other = try post(
            node, "/systems/\(sid)/datastreams", MediaType.json,
            """
            {"name":"V","outputName":"v","schema":{"obsFormat":"application/om+json","resultSchema":\
            {"type":"DataRecord","name":"v","fields":[{"type":"Quantity","name":"x","definition":"http://x/x","uom":{"code":"m"}}]}}}
            """)
        XCTAssertEqual(other.status, 201, other.text)
        XCTAssertEqual(try get(node, "/observations?f=application%2Fswe%2Bbinary").message, "Unsupported format: application/swe+binary")
        XCTAssertEqual(try get(node, "/datastreams/\(id)/observations?f=text%2Fcsv").message, "Unsupported format: text/csv")
        // The datastream reports its range as min…max whatever the arrival order.
        let d = try XCTUnwrap(try get(node, "/datastreams/\(id)").json as? [String: Any])
        XCTAssertEqual(d["phenomenonTime"] as? [String], ["2026-11-29T10:00:00.000Z", "2026-11-29T10:00:20.000Z"])
    }
}
