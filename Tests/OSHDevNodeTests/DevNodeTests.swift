// Size (~590 lines): one test per rule of the node's strictness, each naming the node's message.
import Foundation
import XCTest
import OSHCore
@testable import OSHDevNode

final class DevNodeTests: XCTestCase {
    // MARK: Fixtures

    let api = "/sensorhub/api"
    let uid = "urn:osh:rpi:test0001"

    func startNode(_ config: DevNodeConfig = DevNodeConfig()) throws -> DevNode {
        var config = config
        if ProcessInfo.processInfo.environment["OSH_DEVNODE_LOG"] != nil {
            config.log = { FileHandle.standardError.write(Data(("[node] " + $0 + "\n").utf8)) }
        }
        let node = DevNode(config: config)
        try node.start()
        addTeardownBlock { node.stop() }
        return node
    }

    func get(_ node: DevNode, _ path: String, headers: [(String, String)] = [("Accept", "application/json")]) throws -> TestResponse {
        try TestHTTP.request(port: node.port, "GET", api + path, headers: headers)
    }

    func send(
        _ node: DevNode, _ method: String, _ path: String, _ contentType: String?, _ body: String,
        headers: [(String, String)] = [("Accept", "application/json")]
    ) throws -> TestResponse {
        var h = headers
        if let ct = contentType { h.append(("Content-Type", ct)) }
        return try TestHTTP.request(port: node.port, method, api + path, headers: h, body: Array(body.utf8))
    }

    func post(_ node: DevNode, _ path: String, _ contentType: String?, _ body: String) throws -> TestResponse {
        try send(node, "POST", path, contentType, body)
    }

    func postBytes(_ node: DevNode, _ path: String, _ contentType: String, _ body: [UInt8]) throws -> TestResponse {
        try TestHTTP.request(
            port: node.port, "POST", api + path,
            headers: [("Accept", "application/json"), ("Content-Type", contentType)], body: body)
    }

    func smlSystem(uid: String? = nil) -> String {
        SystemBody.string(
            SystemDescription(
                uid: uid ?? self.uid, label: "Test Pi", serial: "0001", validFrom: 1_773_853_378,
                outputs: [OutputCatalogue.gps(OutputOptions(uid: uid ?? self.uid))]))
    }

    func createSystem(_ node: DevNode) throws -> String {
        let r = try post(node, "/systems", "application/sml+json", smlSystem())
        XCTAssertEqual(r.status, 201, r.text)
        return try XCTUnwrap(r.locationID)
    }

    let omDatastream = """
        {"name":"Weather","outputName":"weather","schema":{"obsFormat":"application/om+json","resultSchema":\
        {"type":"DataRecord","name":"weather","fields":[\
        {"type":"Quantity","name":"temp","definition":"http://x/temp","uom":{"code":"Cel"}},\
        {"type":"Quantity","name":"hum","definition":"http://x/hum","uom":{"code":"%"}}]}}}
        """

    func createDatastream(_ node: DevNode, system: String, body: String? = nil) throws -> String {
        let r = try post(node, "/systems/\(system)/datastreams", "application/json", body ?? omDatastream)
        XCTAssertEqual(r.status, 201, r.text)
        return try XCTUnwrap(r.locationID)
    }

    // MARK: Landing page, systems

    func testLandingPage() throws {
        let node = try startNode()
        XCTAssertNotEqual(node.port, 0)
        XCTAssertEqual(node.apiRoot, "http://127.0.0.1:\(node.port)/sensorhub/api")
        for path in ["", "/"] {
            let r = try get(node, path)
            XCTAssertEqual(r.status, 200)
            XCTAssertEqual(r.header("Content-Type"), "application/json")
            let links = (r.json as? [String: Any])?["links"] as? [[String: Any]]
            XCTAssertTrue(links?.contains { ($0["href"] as? String) == node.apiRoot + "/conformance" } ?? false, r.text)
        }
        XCTAssertEqual(try TestHTTP.request(port: node.port, "GET", "/nothing").status, 404)
        let unknown = try get(node, "/bogus")
        XCTAssertEqual(unknown.status, 400)
        XCTAssertEqual(unknown.message, "Invalid resource name: 'bogus'")
    }

    func testCreateSystemTwiceGivesTheSameID() throws {
        let node = try startNode()
        let r1 = try post(node, "/systems", "application/sml+json", smlSystem())
        XCTAssertEqual(r1.status, 201, r1.text)
        let location = try XCTUnwrap(r1.header("Location"))
        XCTAssertTrue(location.hasPrefix("/systems/"), location)
        let r2 = try post(node, "/systems", "application/sml+json", smlSystem())
        XCTAssertEqual(r2.status, 201)
        XCTAssertEqual(r2.header("Location"), location)

        let id = try XCTUnwrap(r1.locationID)
        for query in ["?uid=", "?id="] {
            let found = try get(node, "/systems" + query + CSURL.percentEncode(uid))
            let items = (found.json as? [String: Any])?["items"] as? [[String: Any]]
            XCTAssertEqual(items?.count, 1, found.text)
            XCTAssertEqual(items?.first?["id"] as? String, id)
        }
        XCTAssertEqual(((try get(node, "/systems?uid=urn:none:xxxxxxxxxx").json as? [String: Any])?["items"] as? [Any])?.count, 0)
        XCTAssertEqual(try get(node, "/systems/\(id)").status, 200)
        let sml = try get(node, "/systems/\(id)?f=sml3")
        XCTAssertEqual(sml.header("Content-Type"), "application/sml+json")
        XCTAssertTrue(sml.text.hasPrefix("{\"type\":\"PhysicalSystem\""), sml.text)
        XCTAssertEqual(try send(node, "PUT", "/systems/\(id)", "application/sml+json", smlSystem()).status, 204)
        XCTAssertEqual(try get(node, "/systems/nosuchid").status, 404)
        XCTAssertEqual(try get(node, "/systems/nosuchid").message, "Resource not found: nosuchid")
        XCTAssertEqual(node.systemID(uid: uid), id)
    }

    func testSystemBodyRules() throws {
        let node = try startNode()
        // SensorML: type must be the first member.
        let noType = try post(node, "/systems", "application/sml+json", #"{"uniqueId":"urn:x:1234567890","type":"PhysicalSystem"}"#)
        XCTAssertEqual(noType.status, 400)
        XCTAssertEqual(
            noType.message, "Invalid payload: Invalid JSON: Required 'type' property as first member of JSON object @ $.uniqueId")
        // Outputs: type and name before anything else.
        let io = try post(
            node, "/systems", "application/sml+json",
            """
            {"type":"PhysicalSystem","uniqueId":"urn:x:1234567890","label":"x","outputs":[{"name":"o","definition":"d","type":"Quantity"}]}
            """)
        XCTAssertEqual(
            io.message,
            "Invalid payload: Invalid JSON: JSON object must contain a 'type' property before the other members @ $.outputs[0].definition")
        // GeoJSON: type may be anywhere, but uid ≥ 12 characters and name are required.
        let geo = try post(
            node, "/systems", "application/geo+json", #"{"properties":{"uid":"urn:x:geo-system-1","name":"G"},"type":"Feature"}"#)
        XCTAssertEqual(geo.status, 201, geo.text)
        XCTAssertEqual(
            try post(node, "/systems", "application/json", #"{"type":"Feature","properties":{"uid":"urn:short","name":"G"}}"#).message,
            "Invalid payload: Feature UID should be at least 12 characters")
        XCTAssertEqual(
            try post(node, "/systems", "application/geo+json", #"{"type":"Feature","properties":{"uid":"urn:x:long-enough-uid"}}"#).message,
            "Invalid payload: Missing feature name")
        XCTAssertEqual(
            try post(node, "/systems", "application/sml+json; charset=utf-8", smlSystem()).message,
            "Unsupported format: application/sml+json; charset=utf-8")
        XCTAssertEqual(try post(node, "/systems", nil, smlSystem()).message, "Missing content type")
    }

    // MARK: Datastreams

    func testDatastreamRegistration() throws {
        let node = try startNode()
        let sys = try createSystem(node)
        let ds1 = try createDatastream(node, system: sys)
        let again = try post(node, "/systems/\(sys)/datastreams", "application/json", omDatastream)
        XCTAssertEqual(again.status, 201)
        XCTAssertEqual(again.header("Location"), "/datastreams/\(ds1)")
        XCTAssertEqual(node.stats.datastream(outputName: "weather")?.schemaVersions, 1)

        // A changed schema replaces the stored one, same id.
        let changed = omDatastream.replacingOccurrences(of: "\"hum\"", with: "\"humidity\"")
        XCTAssertEqual(try post(node, "/systems/\(sys)/datastreams", "application/json", changed).locationID, ds1)
        XCTAssertEqual(node.stats.datastream(outputName: "weather")?.schemaVersions, 2)

        // The om+json schema got the node's own time field; GET …/schema shows both views.
        let om = try get(node, "/datastreams/\(ds1)/schema?obsFormat=application%2Fom%2Bjson")
        XCTAssertEqual(om.status, 200, om.text)
        XCTAssertFalse(om.text.contains("PhenomenonTime"), om.text)
        let swe = try get(node, "/datastreams/\(ds1)/schema?obsFormat=application%2Fswe%2Bjson")
        XCTAssertTrue(swe.text.contains("http://www.opengis.net/def/property/OGC/0/PhenomenonTime"), swe.text)
        // A raw '+' is form-decoded to a space.
        let plus = try get(node, "/datastreams/\(ds1)/schema?obsFormat=application/om+json")
        XCTAssertEqual(plus.status, 400)
        XCTAssertEqual(plus.message, "Unsupported format: application/om json")

        let list = try get(node, "/systems/\(sys)/datastreams")
        XCTAssertEqual(((list.json as? [String: Any])?["items"] as? [Any])?.count, 1)
        XCTAssertEqual(try get(node, "/datastreams/\(ds1)").status, 200)
        XCTAssertEqual(try send(node, "PUT", "/datastreams/\(ds1)", "application/json", omDatastream).status, 204)
        XCTAssertEqual(try send(node, "DELETE", "/datastreams/\(ds1)", nil, "").status, 204)
        XCTAssertEqual(try get(node, "/datastreams/\(ds1)").status, 404)
    }

    func testDatastreamTypeNotFirstIsRefused() throws {
        let node = try startNode()
        let sys = try createSystem(node)
        let body = omDatastream.replacingOccurrences(of: #"{"type":"Quantity","name":"hum""#, with: #"{"name":"hum","type":"Quantity""#)
        let r = try post(node, "/systems/\(sys)/datastreams", "application/json", body)
        XCTAssertEqual(r.status, 400)
        XCTAssertEqual(
            r.message, "Invalid JSON: Required 'type' property as first member of JSON object @ $.schema.resultSchema.fields[1].name")
        // In an encoding's members too.
        let video = DatastreamBody.string(OutputCatalogue.video(OutputOptions(uid: uid)), systemLabel: "Pi", scalarFormat: .omJSON)
        let bad = video.replacingOccurrences(of: #"{"type":"Block","ref":"/img""#, with: #"{"ref":"/img","type":"Block""#)
        XCTAssertNotEqual(bad, video)
        XCTAssertEqual(
            try post(node, "/systems/\(sys)/datastreams", "application/json", bad).message,
            "Invalid JSON: Required 'type' property as first member of JSON object @ $.schema.recordEncoding.members[1].ref")
    }

    func testDatastreamSchemaRules() throws {
        let node = try startNode()
        let sys = try createSystem(node)
        let notFirst =
            #"{"outputName":"x","schema":{"resultSchema":{"type":"Quantity","name":"v","uom":{"code":"m"}},"obsFormat":"application/om+json"}}"#
        let r1 = try post(node, "/systems/\(sys)/datastreams", "application/json", notFirst)
        XCTAssertEqual(r1.status, 400)
        XCTAssertEqual(r1.message, "Invalid payload: Missing property: schema/obsFormat")
        let jsonFormat =
            #"{"outputName":"x","schema":{"obsFormat":"application/json","resultSchema":{"type":"Quantity","name":"v","uom":{"code":"m"}}}}"#
        XCTAssertEqual(
            try post(node, "/systems/\(sys)/datastreams", "application/json", jsonFormat).message,
            "Unsupported format: application/json")
        let noOutput =
            #"{"name":"x","schema":{"obsFormat":"application/om+json","resultSchema":{"type":"Quantity","name":"v","uom":{"code":"m"}}}}"#
        XCTAssertEqual(
            try post(node, "/systems/\(sys)/datastreams", "application/json", noOutput).message,
            "Invalid payload: Missing property: outputName")
        XCTAssertEqual(
            try post(node, "/systems/\(sys)/datastreams", "application/json; charset=utf-8", omDatastream).message,
            "Unsupported format: application/json; charset=utf-8")
        XCTAssertEqual(try post(node, "/systems/nosuchsys/datastreams", "application/json", omDatastream).status, 404)
        // Creating outside a system is not allowed.
        let root = try post(node, "/datastreams", "application/json", omDatastream)
        XCTAssertEqual(root.status, 405)
        XCTAssertEqual(root.message, "Datastreams can only be created within a System resource")
        XCTAssertEqual(try post(node, "/observations", "application/om+json", "{}").status, 405)
        XCTAssertEqual(try post(node, "/systems/\(sys)", "application/json", "{}").message, "Can only POST on collections")
    }

    // MARK: Observations

    func testOMObservationsSingleAndArray() throws {
        let node = try startNode()
        let sys = try createSystem(node)
        let ds = try createDatastream(node, system: sys)
        let one = #"{"phenomenonTime":"2026-03-18T17:05:35.951Z","resultTime":"2026-03-18T17:05:35.951Z","result":{"temp":21.5,"hum":40}}"#
        let r1 = try post(node, "/datastreams/\(ds)/observations", "application/om+json", one)
        XCTAssertEqual(r1.status, 201, r1.text)
        XCTAssertTrue(r1.header("Location")?.hasPrefix("/observations/") ?? false)
        let batch = """
            [{"phenomenonTime":"2026-03-18T17:05:36Z","result":{"temp":21.6,"hum":41}},\
            {"phenomenonTime":"2026-03-18T17:05:37+01:00","result":{"temp":21.7,"hum":42}}]
            """
        let r2 = try post(node, "/datastreams/\(ds)/observations", "application/json", batch)
        XCTAssertEqual(r2.status, 201, r2.text)
        XCTAssertNil(r2.header("Location"))
        XCTAssertEqual((r2.json as? [String])?.count, 2, r2.text)
        XCTAssertTrue((r2.json as? [String])?.allSatisfy { $0.hasPrefix("/observations/") } ?? false)

        let s = try XCTUnwrap(node.stats.datastream(id: ds))
        XCTAssertEqual(s.observationCount, 3)
        XCTAssertEqual(s.phenomenonTimes, [1_773_853_535.951, 1_773_853_536, 1_773_853_537.0 - 3600])
        XCTAssertEqual(s.lastValues?["/hum"], .number(42))
        let obs = node.observations(datastreamID: ds)
        XCTAssertEqual(obs.count, 3)
        XCTAssertEqual(obs[0]["/temp"], .number(21.5))
        XCTAssertEqual(obs[0]["/time"], .time(1_773_853_535.951))
        XCTAssertEqual(node.stats.count("POST /datastreams/{id}/observations", status: 201), 2)

        // Listed in phenomenon-time order; latest first with order=desc.
        let listed = try get(node, "/datastreams/\(ds)/observations?limit=1&order=desc")
        let items = (listed.json as? [String: Any])?["items"] as? [[String: Any]]
        XCTAssertEqual(items?.count, 1)
        XCTAssertEqual(items?.first?["phenomenonTime"] as? String, "2026-03-18T17:05:36.000Z")
        XCTAssertEqual((items?.first?["result"] as? [String: Any])?["temp"] as? Double, 21.6)
        XCTAssertNotNil(items?.first?["resultTime"])
    }

    func testOMObservationRules() throws {
        let node = try startNode()
        let sys = try createSystem(node)
        let ds = try createDatastream(node, system: sys)
        let path = "/datastreams/\(ds)/observations"
        let good = #"{"phenomenonTime":"2026-03-18T17:05:35Z","result":{"temp":1,"hum":2}}"#
        let charset = try post(node, path, "application/om+json; charset=utf-8", good)
        XCTAssertEqual(charset.status, 400)
        XCTAssertEqual(charset.message, "Unsupported format: application/om+json; charset=utf-8")
        XCTAssertEqual(try post(node, path, nil, good).message, "Missing content type")
        let order = try post(node, path, "application/om+json", #"{"phenomenonTime":"2026-03-18T17:05:35Z","result":{"hum":2,"temp":1}}"#)
        XCTAssertEqual(order.status, 400)
        XCTAssertEqual(order.message, "Invalid payload: Invalid JSON: Expected field 'temp' but was 'hum'")
        let badValue = try post(
            node, path, "application/om+json", #"{"phenomenonTime":"2026-03-18T17:05:35Z","result":{"temp":"warm","hum":2}}"#)
        XCTAssertEqual(badValue.status, 400)
        XCTAssertTrue(badValue.message?.hasSuffix(" at $.result.temp") ?? false, badValue.text)
        let noZone = try post(node, path, "application/om+json", #"{"phenomenonTime":"2026-03-18T17:05:35","result":{"temp":1,"hum":2}}"#)
        XCTAssertEqual(noZone.message, "Invalid payload: Invalid JSON: Invalid ISO8601 date/time at $.phenomenonTime")
        let foi = try post(
            node, path, "application/om+json",
            #"{"foi@id":"not-an-id!","phenomenonTime":"2026-03-18T17:05:35Z","result":{"temp":1,"hum":2}}"#)
        XCTAssertEqual(foi.status, 400)
        XCTAssertEqual(foi.message, "Invalid FOI ID")
        let unknownFoi = try post(
            node, path, "application/om+json", #"{"foi@id":"0k0g","phenomenonTime":"2026-03-18T17:05:35Z","result":{"temp":1,"hum":2}}"#)
        XCTAssertEqual(unknownFoi.message, "Ingest Error: Invalid FOI ID")
        // Without phenomenonTime osh-core trips over its own null check: 500.
        XCTAssertEqual(try post(node, path, "application/om+json", #"{"result":{"temp":1,"hum":2}}"#).status, 500)
        XCTAssertEqual(try post(node, path, "application/om+json", "[]").message, "No data provided")
        XCTAssertEqual(node.stats.datastream(id: ds)?.observationCount, 0)

        // A registered sampling feature is a valid foi@id.
        let f = try post(
            node, "/systems/\(sys)/samplingFeatures", "application/geo+json",
            SamplingFeature.string(systemUID: uid))
        XCTAssertEqual(f.status, 201, f.text)
        let foiID = try XCTUnwrap(f.locationID)
        XCTAssertEqual(
            try post(
                node, "/systems/\(sys)/samplingFeatures", "application/geo+json",
                SamplingFeature.string(systemUID: uid)
            ).locationID, foiID)
        let found = try get(node, "/samplingFeatures?uid=" + CSURL.percentEncode(SamplingFeature.foiUID(forSystemUID: uid)))
        XCTAssertEqual((((found.json as? [String: Any])?["items"] as? [[String: Any]])?.first?["id"] as? String), foiID)
        XCTAssertEqual(try get(node, "/samplingFeatures/\(foiID)").status, 200)
        let withFoi = try post(
            node, path, "application/om+json",
            #"{"foi@id":"\#(foiID)","phenomenonTime":"2026-03-18T17:05:35Z","result":{"temp":1,"hum":2}}"#)
        XCTAssertEqual(withFoi.status, 201, withFoi.text)
        XCTAssertEqual(node.observations(datastreamID: ds).first?.foiID, foiID)
        let shortUID = try post(
            node, "/systems/\(sys)/samplingFeatures", "application/geo+json",
            #"{"type":"Feature","properties":{"uid":"urn:x","name":"n"}}"#)
        XCTAssertEqual(shortUID.message, "Invalid payload: Feature UID should be at least 12 characters")
    }

    func testAgentBodiesAreAccepted() throws {
        let node = try startNode()
        let sys = try createSystem(node)
        let gps = OutputCatalogue.gps(OutputOptions(uid: uid))
        for format in [ScalarFormat.omJSON, .sweJSON] {
            let body = DatastreamBody.string(gps, systemLabel: "Test Pi", scalarFormat: format)
            let dsResponse = try post(node, "/systems/\(sys)/datastreams", "application/json", body)
            XCTAssertEqual(dsResponse.status, 201, dsResponse.text)
            let ds = try XCTUnwrap(dsResponse.locationID)
            let enc = try ObservationEncoder(spec: gps, format: format)
            let buf = ByteBuffer()
            try enc.encode(time: 1_773_853_535.951, values: [31.2, -89.1, 58.4], into: buf)
            let r = try postBytes(node, "/datastreams/\(ds)/observations", format.mediaType, buf.array)
            XCTAssertEqual(r.status, 201, "\(format): \(r.text) for \(buf.string)")
            XCTAssertEqual(node.observations(datastreamID: ds).last?["/location/lat"], .number(31.2))
            XCTAssertEqual(node.observations(datastreamID: ds).last?.phenomenonTime, 1_773_853_535.951)
        }
    }

    /// The SWE Common 3 members our bodies add (labels, definitions, Part 2's `encoding`) are
    /// accepted and the labels kept; `encoding` is skipped as osh-core skips any member it does not
    /// know: a swe+binary body with `encoding` alone gets the node's default binary layout.
    func testSWECommon3MembersAreAcceptedAndEncodingIsIgnored() throws {
        let node = try startNode()
        let sys = try createSystem(node)
        let video = OutputCatalogue.video(OutputOptions(uid: uid))
        let body = DatastreamBody.string(video, systemLabel: "Test Pi", scalarFormat: .omJSON)
        let encodingOnly = body.replacingOccurrences(of: "\"recordEncoding\":", with: "\"unused\":")
        XCTAssertNotEqual(encodingOnly, body)
        let v = try createDatastream(node, system: sys, body: encodingOnly)
        let binary = "/datastreams/\(v)/schema?obsFormat=application%2Fswe%2Bbinary"
        var schema = try get(node, binary)
        XCTAssertTrue(schema.text.contains(#"{"type":"Block","ref":"/img"}"#), "default layout, no H264: \(schema.text)")
        XCTAssertFalse(schema.text.contains("\"encoding\""), schema.text)

        // Every body as the agent sends it (the video's re-registration replaces the layout).
        for spec in OutputCatalogue.all(OutputOptions(uid: uid)) {
            for format in ScalarFormat.allCases {
                let r = try post(
                    node, "/systems/\(sys)/datastreams", "application/json",
                    DatastreamBody.string(spec, systemLabel: "Test Pi", scalarFormat: format))
                XCTAssertEqual(r.status, 201, "\(spec.outputName) \(format): \(r.text)")
                guard spec.outputName.hasSuffix("_Magnetometer_data"), format == .sweJSON, let ds = r.locationID else { continue }
                let stored = try get(node, "/datastreams/\(ds)/schema?obsFormat=application%2Fswe%2Bjson")
                XCTAssertTrue(stored.text.contains(#""label":"Magnetic Field X""#), stored.text)
            }
        }
        schema = try get(node, binary)
        XCTAssertTrue(schema.text.contains(#"{"type":"Block","ref":"/img","compression":"H264"}"#), schema.text)
    }

    func testSweJSONRules() throws {
        let node = try startNode()
        let sys = try createSystem(node)
        let body =
            #"{"outputName":"baro","schema":{"obsFormat":"application/swe+json","recordSchema":{"type":"DataRecord","fields":[{"type":"Time","name":"time","definition":"http://www.opengis.net/def/property/OGC/0/SamplingTime","uom":{"href":"http://www.opengis.net/def/uom/ISO-8601/0/Gregorian"}},{"type":"Quantity","name":"pressure","uom":{"code":"hPa"}}]}}}"#
        let ds = try createDatastream(node, system: sys, body: body)
        let path = "/datastreams/\(ds)/observations"
        let ok = try post(node, path, "application/swe+json", #"{"time":"2026-03-18T17:05:36.000Z","pressure":1013.25}"#)
        XCTAssertEqual(ok.status, 201, ok.text)
        XCTAssertEqual(node.stats.datastream(id: ds)?.phenomenonTimes, [1_773_853_536])
        let array = try post(node, path, "application/swe+json", #"[{"time":"2026-03-18T17:05:36.000Z","pressure":1013.25}]"#)
        XCTAssertEqual(array.status, 400)
        XCTAssertEqual(
            array.message,
            "Invalid payload: java.lang.IllegalStateException: Expected BEGIN_OBJECT but was BEGIN_ARRAY at line 1 column 2 path $")
        let order = try post(node, path, "application/swe+json", #"{"pressure":1013.25,"time":"2026-03-18T17:05:36.000Z"}"#)
        XCTAssertEqual(order.message, "Invalid payload: Expected field 'time' but was 'pressure'")
        let two = try post(
            node, path, "application/swe+json",
            #"{"time":"2026-03-18T17:05:36.000Z","pressure":1}{"time":"2026-03-18T17:05:37.000Z","pressure":2}"#)
        XCTAssertEqual(two.status, 400)
        XCTAssertTrue(two.message?.hasPrefix("Invalid payload: Malformed JSON") ?? false, two.text)
        XCTAssertEqual(node.stats.datastream(id: ds)?.observationCount, 1)
    }

    func testBinaryVideoObservation() throws {
        let node = try startNode()
        let sys = try createSystem(node)
        let video = OutputCatalogue.video(OutputOptions(uid: uid))
        let ds = try createDatastream(
            node, system: sys,
            body: DatastreamBody.string(video, systemLabel: "Test Pi", scalarFormat: .omJSON))
        let frame1: [UInt8] = [0, 0, 0, 1, 0x67, 0x42, 0, 0x1e, 0, 0, 0, 1, 0x65, 0x88, 0x84]
        let frame2: [UInt8] = [0, 0, 0, 1, 0x41, 0x9a, 0x02]
        let buf = ByteBuffer()
        try frame1.withUnsafeBytes { try VideoRecord.write(time: 1_773_853_535.951, frame: $0, to: buf) }
        let r = try postBytes(node, "/datastreams/\(ds)/observations", "application/swe+binary", buf.array)
        XCTAssertEqual(r.status, 201, r.text)
        // Records are read to the end of the body: two frames in one POST.
        buf.reset()
        try frame1.withUnsafeBytes { try VideoRecord.write(time: 1_773_853_536.0, frame: $0, to: buf) }
        try frame2.withUnsafeBytes { try VideoRecord.write(time: 1_773_853_536.1, frame: $0, to: buf) }
        let r2 = try postBytes(node, "/datastreams/\(ds)/observations", "application/swe+binary", buf.array)
        XCTAssertEqual((r2.json as? [String])?.count, 2, r2.text)
        let obs = node.observations(datastreamID: ds)
        XCTAssertEqual(obs.count, 3)
        XCTAssertEqual(obs[0]["/img"], .block(frame1))
        XCTAssertEqual(obs[2]["/img"], .block(frame2))
        XCTAssertEqual(obs[2].phenomenonTime, 1_773_853_536.1)
        // A 3 MB access unit arrives in many upload chunks.
        let big = (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let bigBuf = ByteBuffer()
        try big.withUnsafeBytes { try VideoRecord.write(time: 1_773_853_537.0, frame: $0, to: bigBuf) }
        XCTAssertEqual(try postBytes(node, "/datastreams/\(ds)/observations", "application/swe+binary", bigBuf.array).status, 201)
        XCTAssertEqual(node.observations(datastreamID: ds).last?["/img"], .block(big))
        // A truncated record is refused; a JSON body for a compressed stream is an unsupported format.
        XCTAssertEqual(
            try postBytes(node, "/datastreams/\(ds)/observations", "application/swe+binary", Array(buf.array.dropLast())).status, 400)
        XCTAssertEqual(
            try post(node, "/datastreams/\(ds)/observations", "application/swe+json", "{}").message,
            "Unsupported format: application/swe+json")
        let listed = try get(node, "/datastreams/\(ds)/observations")
        XCTAssertTrue(listed.text.contains("Compressed binary result not shown in JSON"), listed.text)
        let schema = try get(node, "/datastreams/\(ds)/schema?obsFormat=application%2Fswe%2Bbinary")
        XCTAssertTrue(schema.text.contains("\"recordEncoding\":{\"type\":\"BinaryEncoding\""), schema.text)
    }

    func testConcurrentPosts() throws {
        let node = try startNode()
        let sys = try createSystem(node)
        let ds = try createDatastream(node, system: sys)
        let port = node.port, path = api + "/datastreams/\(ds)/observations"
        let failures = Counter()
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for k in 0..<20 {
                let body = #"{"phenomenonTime":"2026-03-18T17:05:\#(String(format: "%02d", k))Z","result":{"temp":\#(worker),"hum":\#(k)}}"#
                let r = try? TestHTTP.request(
                    port: port, "POST", path,
                    headers: [("Accept", "application/json"), ("Content-Type", "application/om+json")],
                    body: Array(body.utf8))
                if r?.status != 201 { failures.increment() }
            }
        }
        XCTAssertEqual(failures.value, 0)
        XCTAssertEqual(node.stats.datastream(id: ds)?.observationCount, 160)
        XCTAssertEqual(node.observations(datastreamID: ds).count, 160)
    }

    // MARK: Control streams

    func testControlStreamsAndStatus() throws {
        let node = try startNode()
        let sys = try createSystem(node)
        let body =
            #"{"name":"Pan","inputName":"ptz","schema":{"commandFormat":"application/json","parametersSchema":{"type":"DataRecord","name":"ptz","fields":[{"type":"Quantity","name":"rpan","uom":{"code":"deg"}}]}}}"#
        let r = try post(node, "/systems/\(sys)/controlstreams", "application/json", body)
        XCTAssertEqual(r.status, 201, r.text)
        let cs = try XCTUnwrap(r.locationID)
        XCTAssertEqual(r.header("Location"), "/controlstreams/\(cs)")
        XCTAssertEqual(try post(node, "/systems/\(sys)/controlstreams", "application/json", body).locationID, cs)
        XCTAssertEqual((((try get(node, "/systems/\(sys)/controlstreams")).json as? [String: Any])?["items"] as? [Any])?.count, 1)
        let noInput = try post(node, "/systems/\(sys)/controlstreams", "application/json", #"{"name":"x","schema":{}}"#)
        XCTAssertEqual(noInput.message, "Invalid payload: Missing property: inputName")
        let typeLate = body.replacingOccurrences(of: #"{"type":"Quantity","name":"rpan""#, with: #"{"name":"rpan","type":"Quantity""#)
        XCTAssertEqual(
            try post(node, "/systems/\(sys)/controlstreams", "application/json", typeLate).message,
            "Invalid JSON: Required 'type' property as first member of JSON object @ $.schema.parametersSchema.fields[0].name")

        let status = try post(node, "/controlstreams/\(cs)/status", "application/json", #"{"command@id":"0abc","statusCode":"COMPLETED"}"#)
        XCTAssertEqual(status.status, 201, status.text)
        let missing = try post(node, "/controlstreams/\(cs)/status", "application/json", #"{"statusCode":"COMPLETED"}"#)
        XCTAssertEqual(missing.status, 400)
        XCTAssertEqual(missing.message, "Invalid payload: Missing property: command@id")
        let arrayTime = try post(
            node, "/controlstreams/\(cs)/status", "application/json",
            #"{"command@id":"0abc","statusCode":"COMPLETED","executionTime":["2026-03-18T17:05:35Z","2026-03-18T17:05:36Z"]}"#)
        XCTAssertEqual(arrayTime.status, 400)
        XCTAssertEqual(try post(node, "/controlstreams", "application/json", body).status, 405)
    }

    // MARK: Authentication, limits, routing

    func testBasicAuthentication() throws {
        let node = try startNode(DevNodeConfig(users: [("admin", "admin")]))
        let none = try get(node, "")
        XCTAssertEqual(none.status, 401)
        XCTAssertEqual(none.header("WWW-Authenticate"), "Basic realm=\"OSH\"")
        let wrong = try get(
            node, "", headers: [("Accept", "application/json"), ("Authorization", "Basic " + Base64.encode(Array("admin:nope".utf8)))])
        XCTAssertEqual(wrong.status, 401)
        let right = try get(
            node, "", headers: [("Accept", "application/json"), ("Authorization", "Basic " + Base64.encode(Array("admin:admin".utf8)))])
        XCTAssertEqual(right.status, 200)
    }

    func testBodyLimitAndAcceptHandling() throws {
        let node = try startNode(DevNodeConfig(maxBodyBytes: 1000))
        let sys = try createSystem(node)
        let big = try post(node, "/systems/\(sys)/datastreams", "application/json", String(repeating: " ", count: 5000))
        XCTAssertEqual(big.status, 413)
        // An Accept without "json" gets Jetty's HTML error page, not the JSON error.
        let html = try get(node, "/systems/nosuch", headers: [("Accept", "*/*")])
        XCTAssertEqual(html.status, 404)
        XCTAssertTrue(html.header("Content-Type")?.hasPrefix("text/html") ?? false)

        let landing = try startNode(DevNodeConfig(adminLandingPage: true))
        let redirect = try get(landing, "/systems/nosuch", headers: [("Accept", "*/*")])
        XCTAssertEqual(redirect.status, 302)
        XCTAssertEqual(redirect.header("Location"), "/sensorhub")
    }

    func testForgetEverything() throws {
        let node = try startNode()
        let sys = try createSystem(node)
        let ds = try createDatastream(node, system: sys)
        node.forgetEverything()
        XCTAssertEqual(try get(node, "/systems/\(sys)").status, 404)
        XCTAssertEqual(try get(node, "/datastreams/\(ds)").status, 404)
        XCTAssertEqual(try post(node, "/datastreams/\(ds)/observations", "application/om+json", "{}").status, 404)
        let sys2 = try createSystem(node)
        let ds2 = try createDatastream(node, system: sys2)
        XCTAssertNotEqual(sys2, sys)
        XCTAssertNotEqual(ds2, ds)
        XCTAssertNotEqual(ds2, sys)
    }

    // MARK: Misbehaviour

    func testStatusModes() throws {
        let node = try startNode()
        let sys = try createSystem(node)
        let ds = try createDatastream(node, system: sys)
        node.mode = .status(503)
        let r = try get(node, "")
        XCTAssertEqual(r.status, 503)
        XCTAssertEqual(r.message, "Service unavailable")
        node.mode = .status(302)
        let redirect = try get(node, "/systems")
        XCTAssertEqual(redirect.status, 302)
        XCTAssertEqual(redirect.header("Location"), "/sensorhub")
        node.mode = .rejectObservations
        let obs = #"{"phenomenonTime":"2026-03-18T17:05:35Z","result":{"temp":1,"hum":2}}"#
        XCTAssertEqual(try post(node, "/datastreams/\(ds)/observations", "application/om+json", obs).status, 400)
        XCTAssertEqual(try get(node, "/systems/\(sys)").status, 200)
        node.mode = .rejectObservations(status: 500)
        XCTAssertEqual(try post(node, "/datastreams/\(ds)/observations", "application/om+json", obs).status, 500)
        node.mode = .normal
        XCTAssertEqual(try post(node, "/datastreams/\(ds)/observations", "application/om+json", obs).status, 201)
        XCTAssertEqual(node.stats.datastream(id: ds)?.observationCount, 1)
        XCTAssertEqual(node.requests.last?.status, 201)
        XCTAssertEqual(node.requests.last?.route, "POST /datastreams/{id}/observations")
        node.mode = .acceptObservationsThenReject(remaining: 2, status: 503)
        let statuses = try (0..<4).map { _ in try post(node, "/datastreams/\(ds)/observations", "application/om+json", obs).status }
        XCTAssertEqual(statuses, [201, 201, 503, 503])
        XCTAssertEqual(node.stats.datastream(id: ds)?.observationCount, 3, "the refused ones are not stored")
        XCTAssertEqual(try get(node, "/systems/\(sys)").status, 200, "only observations are refused")
    }

    func testPauseResumeKeepsThePort() throws {
        let node = try startNode()
        let port = node.port
        XCTAssertEqual(try get(node, "").status, 200)
        node.pause()
        XCTAssertThrowsError(try TestHTTP.request(port: port, "GET", api)) { error in
            XCTAssertEqual((error as? TestHTTPError)?.errno, ECONNREFUSED, "\(error)")
        }
        try node.resume()
        XCTAssertEqual(node.port, port)
        XCTAssertEqual(try get(node, "").status, 200)
        node.mode = .refuseConnections
        XCTAssertThrowsError(try TestHTTP.request(port: port, "GET", api))
        node.mode = .normal
        XCTAssertEqual(try get(node, "").status, 200)
    }

    func testDelayAndResetMidBody() throws {
        let node = try startNode()
        node.mode = .delay(0.3)
        let t0 = Date()
        XCTAssertEqual(try get(node, "").status, 200)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(t0), 0.29)

        node.mode = .resetMidBody
        let r = try get(node, "")
        let declared = try XCTUnwrap(r.header("Content-Length").flatMap { Int($0) })
        XCTAssertLessThan(r.body.count, declared, "the body must be cut short")
        XCTAssertLessThanOrEqual(r.body.count, DevNode.resetAfterBytes)
        node.mode = .normal
        XCTAssertEqual(try get(node, "").status, 200)
    }

    // MARK: HTTPS

    func testHTTPSWithCurl() throws {
        guard toolAvailable("openssl"), toolAvailable("curl") else { throw XCTSkip("openssl or curl missing") }
        guard DevNode.tlsSupported else { throw XCTSkip("libmicrohttpd without TLS") }
        let cert = try makeSelfSignedCertificate()
        let node = try startNode(DevNodeConfig(tls: (certPEM: cert.certPEM, keyPEM: cert.keyPEM)))
        XCTAssertTrue(node.apiRoot.hasPrefix("https://127.0.0.1:"))
        let insecure = try runTool("curl", ["-sS", "-k", "-o", "/dev/null", "-w", "%{http_code}", node.apiRoot])
        XCTAssertEqual(insecure.status, 0, insecure.output)
        XCTAssertEqual(insecure.output, "200")
        let verified = try runTool("curl", ["-sS", "-o", "/dev/null", node.apiRoot])
        XCTAssertEqual(verified.status, 60, verified.output)  // peer certificate cannot be authenticated
        let pinned = try runTool("curl", ["-sS", "--cacert", cert.certPath, "-o", "/dev/null", "-w", "%{http_code}", node.apiRoot])
        XCTAssertEqual(pinned.output, "200", pinned.output)
        // Plain HTTP to the TLS port does not get an API answer.
        let plain = try? TestHTTP.request(port: node.port, "GET", api, timeout: 2)
        XCTAssertNotEqual(plain?.status, 200)
    }
}

/// A thread-safe counter for tests.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func increment() { lock.lock(); n += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return n }
}
