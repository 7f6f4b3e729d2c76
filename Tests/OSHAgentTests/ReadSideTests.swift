import Foundation
import OSHAgent
import OSHCore
import OSHDevNode
import OSHPlatform
import XCTest

/// The read side against the development node on loopback: three systems (live, stale, offline),
/// a barometer datastream read back as O&M JSON, swe+json and swe+binary, a native swe+binary
/// video datastream, and each CLI command through the built binary.
final class ReadSideTests: XCTestCase {
    struct Fixture {
        var node: DevNode
        var reader: NodeReader
        var liveSystem: String
        var staleSystem: String
        var quietSystem: String
        var barometer: String
        var video: String
        var controlStream: String
        var times: [Double]
        var frame: [UInt8]
    }

    static let liveUID = "urn:osh:rpi:readside-live-0001"
    let label = "ReadSide Pi"

    private func created(_ r: NodeReader, _ req: CSRequest, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let res = try r.exchange(req, what: "setup")
        XCTAssertEqual(res.status, 201, String(decoding: res.body, as: UTF8.self), file: file, line: line)
        return try XCTUnwrap(CSResponse.resourceID(fromLocation: res.location), file: file, line: line)
    }

    private func system(_ r: NodeReader, uid: String, name: String) throws -> String {
        let body = "{\"type\":\"Feature\",\"properties\":{\"uid\":\"\(uid)\",\"name\":\"\(name)\"}}"
        return try created(r, r.builder.request(.post, "/systems", contentType: MediaType.geoJSON, body: Array(body.utf8)))
    }

    private func omBarometer(_ times: [Double], pressure: (Int) -> Double, altitude: (Int) -> Double) -> [UInt8] {
        var s = "["
        for (i, t) in times.enumerated() {
            if i > 0 { s += "," }
            s +=
                "{\"phenomenonTime\":\"\(ISOTime.string(epochSeconds: t))\",\"result\":{\"pressure\":\(pressure(i)),\"relativeAltitude\":\(altitude(i))}}"
        }
        return Array((s + "]").utf8)
    }

    private func makeFixture() throws -> Fixture {
        Log.muted = true
        var nc = DevNodeConfig()
        nc.noReceiverWaitSeconds = 0.3  // OSH: 29.5 s before it answers 202 with no receiver
        let node = DevNode(config: nc)
        _ = try node.start()
        let r = try NodeReader(server: NodeEndpoint(apiRoot: node.apiRoot))
        let b = r.builder
        let now = Clock.realtimeSeconds()
        let opts = OutputOptions(uid: Self.liveUID)

        let live = try system(r, uid: Self.liveUID, name: label)
        let stale = try system(r, uid: "urn:osh:rpi:readside-stale-0002", name: "Stale Pi")
        let quiet = try system(r, uid: "urn:osh:rpi:readside-quiet-0003", name: "Quiet Pi")

        let baro = try created(
            r,
            b.createDatastream(
                systemID: live,
                body: Array(
                    DatastreamBody.string(
                        OutputCatalogue.barometer(opts), systemLabel: label, scalarFormat: .omJSON
                    ).utf8)))
        let video = try created(
            r,
            b.createDatastream(
                systemID: live,
                body: Array(
                    DatastreamBody.string(
                        OutputCatalogue.video(opts), systemLabel: label, scalarFormat: .omJSON
                    ).utf8)))
        let staleBaro = try created(
            r,
            b.createDatastream(
                systemID: stale,
                body: Array(
                    DatastreamBody.string(
                        OutputCatalogue.barometer(opts), systemLabel: "Stale Pi", scalarFormat: .sweJSON
                    ).utf8)))

        // Five barometer records, 10 s apart, the newest 20 s ago; values with fractions.
        let times = (0..<5).map { now - 60 + Double($0) * 10 }
        let res = try r.exchange(
            b.postObservations(
                datastreamID: baro, format: .omJSON,
                body: omBarometer(times, pressure: { 1000.25 + Double($0) }, altitude: { Double($0) * 1.5 - 0.75 })),
            what: "post")
        XCTAssertEqual(res.status, 201, String(decoding: res.body, as: UTF8.self))
        // The stale system's one record, 10 minutes old, as swe+json.
        let old = "{\"time\":\"\(ISOTime.string(epochSeconds: now - 600))\",\"pressure\":990.5,\"relativeAltitude\":3.25}"
        XCTAssertEqual(
            try r.exchange(b.postObservations(datastreamID: staleBaro, format: .sweJSON, body: Array(old.utf8)), what: "post").status, 201)
        // One "frame" on the video datastream.
        let frame: [UInt8] = [0, 0, 0, 1, 0x67, 0x42, 0xC0, 0x1E] + (0..<200).map { UInt8($0 & 0xFF) }
        let buf = ByteBuffer(capacity: 512)
        try frame.withUnsafeBytes { try VideoRecord.write(time: now - 5, frame: $0, to: buf) }
        XCTAssertEqual(try r.exchange(b.postVideo(datastreamID: video, body: buf.array), what: "post").status, 201)

        // A control stream (a PTZ-like choice) for the command test.
        let rpan = DataComponent(
            .quantity(Quantity(uom: .code("deg"))), name: "rpan",
            definition: "http://sensorml.com/ont/swe/property/RelativePan")
        let params = DataComponent(.choice(DataChoice(items: [rpan])), name: "ptzControl")
        let cs = try created(
            r,
            b.createControlStream(
                systemID: live,
                body: ControlStreamBody.bytes(
                    name: "ReadSide PTZ", inputName: "ptz_control", parameters: params)))
        return Fixture(
            node: node, reader: r, liveSystem: live, staleSystem: stale, quietSystem: quiet, barometer: baro,
            video: video, controlStream: cs, times: times, frame: frame)
    }

    // MARK: Systems and datastreams

    func testSystemsCarryActivityLiveFirst() throws {
        let f = try makeFixture()
        defer { f.node.stop() }
        let now = Clock.realtimeSeconds()
        let rows = try ReadSide.systems(f.reader, now: now)
        XCTAssertEqual(rows.map(\.system.id), [f.liveSystem, f.staleSystem, f.quietSystem])
        XCTAssertEqual(rows.map(\.activity), [.live, .stale, .offline])
        XCTAssertEqual(rows.map(\.datastreamCount), [2, 1, 0])
        XCTAssertEqual(rows[0].system.uid, Self.liveUID)
        XCTAssertEqual(rows[0].system.name, label)
        // --limit is passed to the node.
        XCTAssertEqual(try ReadSide.systems(f.reader, limit: 1, now: now).count, 1)

        let json = try JSONSerialization.jsonObject(with: Data(ReadSideRender.systemsJSON(rows, now: now).utf8)) as? [String: Any]
        let systems = try XCTUnwrap(json?["systems"] as? [[String: Any]])
        XCTAssertEqual(systems.map { $0["activity"] as? String }, ["live", "stale", "offline"])
        XCTAssertEqual(systems[0]["uid"] as? String, Self.liveUID)
        XCTAssertTrue(systems[2]["newest"] is NSNull)
        let table = ReadSideRender.systemsTable(rows, now: now)
        XCTAssertTrue(table.contains("live") && table.contains(Self.liveUID), table)
    }

    func testDatastreamsByIDOrUID() throws {
        let f = try makeFixture()
        defer { f.node.stop() }
        let now = Clock.realtimeSeconds()
        let byID = try ReadSide.datastreams(f.reader, system: f.liveSystem, now: now)
        let byUID = try ReadSide.datastreams(f.reader, system: Self.liveUID, now: now)
        XCTAssertEqual(byID.system, byUID.system)
        XCTAssertEqual(byID.rows, byUID.rows)
        XCTAssertEqual(byID.rows.map(\.datastream.outputName), ["barometer", "camera0_H264"])
        XCTAssertEqual(byID.rows.map(\.activity), [.live, .live])
        guard case .at(let newest)? = byID.rows[0].datastream.newest else { return XCTFail("the node reports the newest time") }
        XCTAssertEqual(newest, f.times[4], accuracy: 0.001)
        XCTAssertEqual(byID.rows[1].datastream.preferredFormat, MediaType.sweBinary, "video is binary only")

        XCTAssertThrowsError(try ReadSide.datastreams(f.reader, system: "urn:osh:rpi:nobody-here-000", now: now)) { e in
            XCTAssertTrue("\(e)".contains("not on the node"), "\(e)")
        }
        let json =
            try JSONSerialization.jsonObject(with: Data(ReadSideRender.datastreamsJSON(byID.system, byID.rows).utf8)) as? [String: Any]
        XCTAssertEqual((json?["datastreams"] as? [[String: Any]])?.count, 2)
    }

    // MARK: Schema and observations

    func testRemoteSchemaIsTheSameTreeInEveryFormat() throws {
        let f = try makeFixture()
        defer { f.node.stop() }
        let om = try ReadSide.schema(f.reader, datastream: f.barometer)
        XCTAssertEqual(om.obsFormat, MediaType.omJSON)
        for fmt in [MediaType.sweJSON, MediaType.sweBinary] {
            let s = try ReadSide.schema(f.reader, datastream: f.barometer, format: fmt)
            XCTAssertEqual(s.leaves.map(\.path), om.leaves.map(\.path), fmt)
        }
        XCTAssertEqual(om.leaves.map(\.path), ["/time", "/pressure", "/relativeAltitude"])
        let table = ReadSideRender.schemaTable(try ReadSide.schema(f.reader, datastream: f.barometer, format: MediaType.sweBinary))
        XCTAssertTrue(table.contains("pressure") && table.contains("hPa") && table.contains("(double)"), table)
        let video = try ReadSide.schema(f.reader, datastream: f.video)
        XCTAssertEqual(video.obsFormat, MediaType.sweBinary)
        XCTAssertNotNil(video.schema.encoding)
    }

    func testNewestObservationsDecodeIdenticallyFromOMJSONSweJSONAndSweBinary() throws {
        let f = try makeFixture()
        defer { f.node.stop() }
        var pages: [String: ReadSide.ObservationPage] = [:]
        for fmt in [MediaType.omJSON, MediaType.sweJSON, MediaType.sweBinary] {
            let p = try ReadSide.observations(f.reader, datastream: f.barometer, query: .newest(3), format: fmt)
            XCTAssertNil(p.decodeError, fmt)
            XCTAssertEqual(p.records.count, 3, fmt)
            pages[fmt] = p
        }
        let om = try XCTUnwrap(pages[MediaType.omJSON])
        // The three newest, oldest first, with the values posted.
        for (k, rec) in om.records.enumerated() {
            let i = k + 2
            XCTAssertEqual(try XCTUnwrap(om.time(of: rec)), f.times[i], accuracy: 0.001)
            XCTAssertEqual(rec["/pressure"], .number(1000.25 + Double(i)))
            XCTAssertEqual(rec["/relativeAltitude"], .number(Double(i) * 1.5 - 0.75))
        }
        for fmt in [MediaType.sweJSON, MediaType.sweBinary] {
            let p = try XCTUnwrap(pages[fmt])
            XCTAssertEqual(p.records.map(\.fields.count), om.records.map(\.fields.count), fmt)
            for (a, b) in zip(p.records, om.records) {
                XCTAssertEqual(a.fields.map(\.path), b.fields.map(\.path), fmt)
                XCTAssertEqual(a.fields.map(\.value), b.fields.map(\.value), fmt)
            }
            XCTAssertEqual(
                ReadSideRender.observationsTable(p).split(separator: "\n").dropFirst(),
                ReadSideRender.observationsTable(om).split(separator: "\n").dropFirst(), fmt)
        }
        // resultTime=latest: the newest record only.
        let current = try ReadSide.observations(f.reader, datastream: f.barometer, query: .latestResultTime)
        XCTAssertEqual(current.records.count, 1)
        XCTAssertEqual(try XCTUnwrap(current.time(of: current.records[0])), f.times[4], accuracy: 0.001)
        // More than the node holds: all five, still oldest first.
        let all = try ReadSide.observations(f.reader, datastream: f.barometer, query: .newest(50), format: MediaType.sweBinary)
        XCTAssertEqual(all.records.compactMap { all.time(of: $0) }.map { ($0 * 1000).rounded() }, f.times.map { ($0 * 1000).rounded() })
    }

    func testVideoFramesComeBackAsTheirBlock() throws {
        let f = try makeFixture()
        defer { f.node.stop() }
        let p = try ReadSide.observations(f.reader, datastream: f.video, query: .newest(1))
        XCTAssertEqual(p.format, MediaType.sweBinary)
        XCTAssertEqual(p.records.count, 1)
        XCTAssertEqual(p.records.first?["/img"], .block(f.frame))
        XCTAssertTrue(ReadSideRender.observationsTable(p).contains("<\(f.frame.count) bytes>"))
        // O&M JSON of a binary-only datastream is refused by the node, and said so.
        XCTAssertThrowsError(try ReadSide.observations(f.reader, datastream: f.video, query: .newest(1), format: MediaType.omJSON)) { e in
            XCTAssertTrue("\(e)".contains("Unsupported format"), "\(e)")
        }
    }

    // MARK: Commands

    /// The client's own refusals, in words; a command the node accepts is covered end to end with a
    /// real receiver by CommandReceiverTests.testTheCLIPrintsTheOutcomeNotTheNodesPending.
    func testCommandIsPostedAndTheNodesAnswerReported() throws {
        let f = try makeFixture()
        defer { f.node.stop() }
        XCTAssertThrowsError(try ReadSide.command(f.reader, controlStream: f.controlStream, json: "not json")) { e in
            XCTAssertTrue("\(e)".contains("not valid JSON"), "\(e)")
        }
        XCTAssertThrowsError(try ReadSide.command(f.reader, controlStream: "nosuchstream", json: "{\"rpan\":3.0}")) { e in
            XCTAssertTrue("\(e)".contains("not on the node"), "\(e)")
        }
    }

    // MARK: The CLI

    private func run(_ args: [String], env: [String: String] = [:]) throws -> (status: Int32, out: String, err: String) {
        try runOSHEdge(args, env: env)
    }

    private func jsonObject(_ s: String) throws -> [String: Any] {
        try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(s.utf8)) as? [String: Any], s)
    }

    func testEachCommandThroughTheBinary() throws {
        let f = try makeFixture()
        defer { f.node.stop() }
        let node = ["--node", f.node.apiRoot]

        let systems = try run(["systems", "--json"] + node)
        XCTAssertEqual(systems.status, 0, systems.err)
        let sj = try jsonObject(systems.out)
        XCTAssertEqual((sj["systems"] as? [[String: Any]])?.compactMap { $0["activity"] as? String }, ["live", "stale", "offline"])
        let table = try run(["systems", "--limit", "2"] + node)
        XCTAssertEqual(table.status, 0, table.err)
        XCTAssertEqual(table.out.split(separator: "\n").count, 3, table.out)  // header + 2

        let ds = try run(["datastreams", Self.liveUID, "--json"] + node)
        XCTAssertEqual(ds.status, 0, ds.err)
        let dj = try jsonObject(ds.out)
        let items = try XCTUnwrap(dj["datastreams"] as? [[String: Any]])
        XCTAssertEqual(items.compactMap { $0["id"] as? String }, [f.barometer, f.video])

        let remote = try run(["schema", "--remote", f.barometer, "--format", "swe+binary", "--json"] + node)
        XCTAssertEqual(remote.status, 0, remote.err)
        XCTAssertEqual(try jsonObject(remote.out)["obsFormat"] as? String, MediaType.sweBinary)
        // The local mode is unchanged.
        let local = try run(["schema", "barometer", "--uid", Self.liveUID])
        XCTAssertEqual(local.status, 0, local.err)
        XCTAssertTrue(local.out.contains("\"outputName\":\"barometer\""), local.out)

        var values: [[Double]] = []
        for fmt in ["om+json", "swe+json", "swe+binary"] {
            let obs = try run(["observations", f.barometer, "--latest", "2", "--format", fmt, "--json"] + node)
            XCTAssertEqual(obs.status, 0, obs.err)
            let oj = try jsonObject(obs.out)
            XCTAssertEqual(oj["format"] as? String, ReadSide.mediaType(fmt))
            let recs = try XCTUnwrap(oj["records"] as? [[String: Any]])
            XCTAssertEqual(recs.count, 2)
            XCTAssertEqual(recs.last?["time"] as? String, ISOTime.string(epochSeconds: f.times[4]))
            values.append(
                recs.flatMap { r -> [Double] in
                    let v = r["values"] as? [String: Any]
                    return [v?["pressure"] as? Double ?? .nan, v?["relativeAltitude"] as? Double ?? .nan]
                })
        }
        XCTAssertEqual(values[0], [1003.25, 3.75, 1004.25, 5.25])
        XCTAssertEqual(values[1], values[0])
        XCTAssertEqual(values[2], values[0])
        let obsTable = try run(["observations", f.barometer, "--latest", "2"] + node)
        XCTAssertEqual(obsTable.status, 0, obsTable.err)
        XCTAssertTrue(obsTable.out.contains("pressure") && obsTable.out.contains("1004.25"), obsTable.out)

        let missing = try run(["observations", "nosuchid"] + node)
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.err.contains("not on the node"), missing.err)
        XCTAssertTrue(missing.err.contains("give --system SYSTEM or --config FILE"), missing.err)
        // By output name within the board's system, as a field engineer thinks of it.
        let byName = try run(["observations", "barometer", "--system", Self.liveUID, "--latest", "2"] + node)
        XCTAssertEqual(byName.status, 0, byName.err)
        XCTAssertEqual(byName.out, obsTable.out)
        let wrongName = try run(["observations", "thermometer", "--system", Self.liveUID] + node)
        XCTAssertTrue(wrongName.err.contains("neither a datastream id nor an output of system \(Self.liveUID)"), wrongName.err)
        let bad = try run(["observations", f.barometer, "--latest", "0"] + node)
        XCTAssertEqual(bad.status, 2)
        let noNode = try run(["systems", "--config", "/nonexistent/osh-edge.conf"])
        XCTAssertEqual(noNode.status, 1)
        XCTAssertTrue(noNode.err.contains("--node URL"), noNode.err)
    }

    /// Without --node: the configured node, its user, and the password from the secrets file.
    func testTheConfiguredNodeAndItsSecrets() throws {
        Log.muted = true
        let node = DevNode(config: DevNodeConfig(users: [("sensor", "pwd")]))
        _ = try node.start()
        defer { node.stop() }
        let dir = NSTemporaryDirectory() + "osh-readside-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "[server.main]\nurl = \"\(node.apiRoot)\"\nuser = \"sensor\"\n".write(
            toFile: dir + "/osh-edge.conf", atomically: true, encoding: .utf8)
        try "[server.main]\npassword = \"pwd\"\n".write(toFile: dir + "/secrets", atomically: true, encoding: .utf8)
        chmod(dir + "/secrets", 0o600)
        let server = try ReadSide.configuredServer(configPath: dir + "/osh-edge.conf", secretsPath: dir + "/secrets")
        XCTAssertEqual(server.apiRoot, node.apiRoot)
        XCTAssertEqual(server.credentials, .basic(username: "sensor", password: "pwd"))
        let ok = try run(["systems", "--config", dir + "/osh-edge.conf", "--secrets", dir + "/secrets", "--json"])
        XCTAssertEqual(ok.status, 0, ok.err)
        XCTAssertEqual((try jsonObject(ok.out)["systems"] as? [Any])?.count, 0)
    }

    func testCredentialsComeFromTheEnvironment() throws {
        Log.muted = true
        let node = DevNode(config: DevNodeConfig(users: [("sensor", "pwd")]))
        _ = try node.start()
        defer { node.stop() }
        let denied = try run(["systems", "--node", node.apiRoot])
        XCTAssertEqual(denied.status, 1)
        XCTAssertTrue(denied.err.contains("401"), denied.err)
        let ok = try run(["systems", "--node", node.apiRoot, "--user", "sensor", "--json"], env: ["OSH_EDGE_PASSWORD": "pwd"])
        XCTAssertEqual(ok.status, 0, ok.err)
        XCTAssertEqual((try jsonObject(ok.out)["systems"] as? [Any])?.count, 0)
    }
}
