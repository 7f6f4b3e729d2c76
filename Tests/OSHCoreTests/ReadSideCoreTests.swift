import OSHCore
import XCTest

/// The read side's pure parts: activity classification, request building, answer parsing, command bodies.
final class ReadSideCoreTests: XCTestCase {
    func testActivityThresholdsAreInclusiveAndNothingObservedIsOffline() {
        let now = 1_800_000_000.0
        XCTAssertEqual(Activity.classify(newest: .at(now), now: now), .live)
        XCTAssertEqual(Activity.classify(newest: .at(now - 300), now: now), .live)
        XCTAssertEqual(Activity.classify(newest: .at(now - 300.001), now: now), .stale)
        XCTAssertEqual(Activity.classify(newest: .at(now - 1800), now: now), .stale)
        XCTAssertEqual(Activity.classify(newest: .at(now - 1800.001), now: now), .offline)
        XCTAssertEqual(Activity.classify(newest: nil, now: now), .offline)
        XCTAssertEqual(Activity.classify(newest: .at(.nan), now: now), .offline)
        // A clock ahead of ours is still sending; a range ending "now" is flowing.
        XCTAssertEqual(Activity.classify(newest: .at(now + 3600), now: now), .live)
        XCTAssertEqual(Activity.classify(newest: .now, now: now), .live)
        // Thresholds are a parameter (they will become a setting).
        XCTAssertEqual(Activity.classify(newest: .at(now - 60), now: now, thresholds: ActivityThresholds(live: 30, stale: 90)), .stale)
        XCTAssertEqual([SystemActivity.offline, .live, .stale].sorted(), [.live, .stale, .offline])
    }

    func testNewestOverDatastreams() {
        XCTAssertNil(Activity.newest([nil, nil]))
        XCTAssertEqual(Activity.newest([.at(5), nil, .at(9), .at(7)]), .at(9))
        XCTAssertEqual(Activity.newest([.at(5), .now, .at(9)]), .now)
        XCTAssertEqual(Activity.ageText(.at(100), now: 130), "30 s")
        XCTAssertEqual(Activity.ageText(.at(0), now: 600), "10 min")
        XCTAssertEqual(Activity.ageText(nil, now: 600), "-")
    }

    func testReadRequests() {
        let b = CSRequestBuilder(credentials: .basic(username: "u", password: "p"))
        let newest = b.observations(datastreamID: "ds1", query: .newest(3), format: MediaType.sweBinary)
        XCTAssertEqual(newest.method, .get)
        XCTAssertEqual(newest.path, "/datastreams/ds1/observations?order=desc&limit=3&f=application%2Fswe%2Bbinary")
        XCTAssertEqual(newest.header("Accept"), MediaType.json)
        XCTAssertNotNil(newest.header("Authorization"))
        XCTAssertEqual(
            b.observations(datastreamID: "ds1", query: .latestResultTime).path,
            "/datastreams/ds1/observations?resultTime=latest")
        XCTAssertEqual(b.observations(datastreamID: "d", query: .newest(0)).path, "/datastreams/d/observations?order=desc&limit=1")
        let cmd = b.postCommand(controlStreamID: "cs1", body: Array("{}".utf8))
        XCTAssertEqual(cmd.method, .post)
        XCTAssertEqual(cmd.path, "/controlstreams/cs1/commands")
        XCTAssertEqual(cmd.contentType, "application/json")
        XCTAssertEqual(b.commandStatusReports(controlStreamID: "cs1", commandID: "c/1").path, "/controlstreams/cs1/commands/c%2F1/status")
        XCTAssertEqual(b.controlStreamSchema(id: "cs1").path, "/controlstreams/cs1/schema")
    }

    func testDatastreamAndSystemItemsAsTheNodeListsThem() throws {
        let ds = try JSONValue.parse(
            """
            {"id":"abc","name":"Pi - barometer","system@id":"sys","outputName":"barometer",
             "phenomenonTime":["2026-11-29T10:00:00Z","2026-11-29T10:05:00.500Z"],"resultTime":["2026-11-29T10:00:00Z","now"],
             "formats":["application/om+json","application/swe+binary"]}
            """)
        let d = try XCTUnwrap(NodeDatastream(ds))
        XCTAssertEqual(d.newest, .at(try XCTUnwrap(ISOTime.parse("2026-11-29T10:05:00.500Z"))))
        XCTAssertEqual(d.newestResultTime, .now)
        XCTAssertEqual(d.preferredFormat, MediaType.omJSON)
        XCTAssertEqual(
            NodeDatastream(try JSONValue.parse(#"{"id":"v","formats":["application/swe+binary"]}"#))?.preferredFormat, MediaType.sweBinary)
        XCTAssertNil(NodeDatastream(try JSONValue.parse(#"{"name":"no id"}"#)))
        XCTAssertNil(NodeDatastream(try JSONValue.parse(#"{"id":"x"}"#))?.newest)

        let geo = try XCTUnwrap(
            NodeSystem(try JSONValue.parse(#"{"type":"Feature","id":"s1","properties":{"uid":"urn:x:1","name":"One"}}"#)))
        XCTAssertEqual(geo, NodeSystem(id: "s1", uid: "urn:x:1", name: "One"))
        let sml = try XCTUnwrap(NodeSystem(try JSONValue.parse(#"{"type":"PhysicalSystem","id":"s2","uniqueId":"urn:x:2","label":"Two"}"#)))
        XCTAssertEqual(sml, NodeSystem(id: "s2", uid: "urn:x:2", name: "Two"))
        XCTAssertEqual(NodeCollection.items(try JSONValue.parse(#"{"type":"FeatureCollection","features":[{"id":"a"}]}"#)).count, 1)
        XCTAssertEqual(
            NodeCollection.nextLink(try JSONValue.parse(#"{"items":[],"links":[{"rel":"next","href":"/systems?offset=100"}]}"#)),
            "/systems?offset=100")
    }

    func testCommandBodyWrapsParametersAndKeepsOrder() throws {
        func text(_ s: String) throws -> String { String(decoding: try CommandBody.bytes(fromUserJSON: s), as: UTF8.self) }
        XCTAssertEqual(try text(#"{"rpan":3.0}"#), #"{"parameters":{"rpan":3.0}}"#)
        XCTAssertEqual(try text(#"{"ptzPos":{"pan":10,"tilt":-5.5}}"#), #"{"parameters":{"ptzPos":{"pan":10,"tilt":-5.5}}}"#)
        XCTAssertEqual(
            try text(#"{"issueTime":"2026-11-29T10:00:00Z","parameters":{"rtilt":1}}"#),
            #"{"issueTime":"2026-11-29T10:00:00Z","parameters":{"rtilt":1}}"#)
        // A parameter that happens to be called "parameters" next to others is still wrapped.
        XCTAssertEqual(try text(#"{"parameters":1,"x":2}"#), #"{"parameters":{"parameters":1,"x":2}}"#)
        XCTAssertThrowsError(try CommandBody.bytes(fromUserJSON: "[1]")) { XCTAssertEqual($0 as? CommandBodyError, .notAnObject) }
        XCTAssertThrowsError(try CommandBody.bytes(fromUserJSON: "{rpan:3}")) { e in
            XCTAssertTrue("\(e)".contains("not valid JSON"), "\(e)")
        }
    }

    func testCommandReports() throws {
        let first = try XCTUnwrap(
            CommandReport(
                try JSONValue.parse(
                    #"{"command@id":"c1","reportTime":"2026-11-29T10:00:05Z","statusCode":"PENDING"}"#)))
        XCTAssertEqual(first.commandID, "c1")
        XCTAssertEqual(first.statusCode, "PENDING")
        XCTAssertFalse(first.isFinal)
        let listing = try JSONValue.parse(
            """
            {"items":[{"id":"s1","command@id":"c1","reportTime":"2026-11-29T10:00:01Z","statusCode":"COMPLETED","message":"done"},
                      {"id":"s2","command@id":"c1","reportTime":"2026-11-29T10:00:05Z","statusCode":"PENDING"},
                      {"id":"s3","command@id":"c1","reportTime":"2026-11-29T10:00:07Z","statusCode":"COMPLETED","message":"again"}]}
            """)
        let newest = try XCTUnwrap(CommandReport.newest(in: listing))
        XCTAssertEqual(newest.statusCode, "COMPLETED")
        XCTAssertEqual(newest.message, "again")
        XCTAssertTrue(newest.isFinal)
        XCTAssertNil(CommandReport.newest(in: try JSONValue.parse(#"{"items":[]}"#)))
        // The command resource itself (as pushed to a receiver) still yields its id.
        XCTAssertEqual(CommandReport(try JSONValue.parse(#"{"id":"c9","controlstream@id":"cs","parameters":{}}"#))?.commandID, "c9")
    }

    /// Found by fuzz/om: an empty id was taken as an id, and `/systems/` + "" addresses the collection.
    func testAnEmptyIDIsNoID() throws {
        let item = try JSONValue.parse(
            #"{"id":"","command@id":"","reportTime":"2026-11-29T10:00:01Z","stde":"COMPLETED","mes@sage":"done"}"#)
        XCTAssertNil(NodeSystem(item))
        XCTAssertNil(NodeDatastream(item))
        XCTAssertNil(CommandReport(item))
        XCTAssertNil(CommandReport.newest(in: try JSONValue.parse(#"{"items":[{"command@id":"","statusCode":"COMPLETED"}]}"#)))
    }
}
