import Foundation
import OSHCore
import XCTest

/// Bodies, requests and response parsing for the CS API, as the Android driver sends them and an OSH node takes them.
final class ConSysTests: XCTestCase {
    // MARK: Helpers

    /// Every object key in document order (a string followed by `:`), for key-order comparisons.
    private static func keySequence(_ json: String) -> [String] {
        let b = Array(json.utf8)
        var keys: [String] = []
        var i = 0
        while i < b.count {
            if b[i] == UInt8(ascii: "\"") {
                var j = i + 1
                var s = [UInt8]()
                while j < b.count, b[j] != UInt8(ascii: "\"") {
                    if b[j] == UInt8(ascii: "\\") { s.append(b[j]); j += 1 }
                    s.append(b[j]); j += 1
                }
                var k = j + 1
                while k < b.count, b[k] == 0x20 || b[k] == 0x0A { k += 1 }
                if k < b.count, b[k] == UInt8(ascii: ":") { keys.append(String(decoding: s, as: UTF8.self)) }
                i = j + 1
            } else {
                i += 1
            }
        }
        return keys
    }

    private static func str(_ bytes: [UInt8]?) -> String { String(decoding: bytes ?? [], as: UTF8.self) }

    private static let rotation = SystemComponentInfo(id: "SENSOR_ROTATION_VECTOR", label: "Rotation Vector")

    /// Outputs whose sources mirror the Android example of §2.1 (quat + euler share the rotation vector).
    private static func androidLikeOutputs() -> [OutputSpec] {
        let o = OutputOptions(uid: "urn:osh:rpi:10000000a1b2c3d4")
        var quat = OutputCatalogue.quatOrientation(o); quat.source = rotation
        var euler = OutputCatalogue.eulerOrientation(o); euler.source = rotation
        var gps = OutputCatalogue.gps(o); gps.source = SystemComponentInfo(id: "LOC_GPS", label: "gps")
        var cam = OutputCatalogue.video(o); cam.source = SystemComponentInfo(id: "CAM_0", label: "Android Camera #0")
        return [quat, euler, gps, cam]
    }

    // MARK: System body (§2.1)

    func testSystemBodyHasAndroidKeysInOrder() throws {
        // The Android driver's system body, compact.
        let android =
            #"{"type":"PhysicalSystem","id":"ANDROID_SENSORS_unknown","uniqueId":"urn:osh:android:7ae57419dd427e4c:droid2","definition":"http://www.w3.org/ns/sosa/Sensor","label":"Android Sensors [Android2-0253]","validTime":["2026-03-18T16:02:58.497Z","now"],"localReferenceFrames":[{"id":"LOCAL_FRAME","origin":"Center of the device screen","axes":[{"name":"x","description":"The X axis is in the plane of the screen and points to the right"},{"name":"y","description":"The Y axis is in the plane of the screen and points up"},{"name":"z","description":"The Z axis points towards the outside of the front face of the screen"}]}],"components":[{"type":"PhysicalComponent","name":"sensor0","id":"SENSOR_ROTATION_VECTOR","label":"Rotation Vector"},{"type":"PhysicalComponent","name":"sensor1","id":"SENSOR_ROTATION_VECTOR","label":"Rotation Vector"},{"type":"PhysicalComponent","name":"sensor2","id":"LOC_GPS","label":"gps"},{"type":"PhysicalComponent","name":"sensor3","id":"CAM_0","label":"Android Camera #0"}]}"#
        let t = try XCTUnwrap(ISOTime.parse("2026-03-18T16:02:58.497Z"))
        let d = SystemDescription(
            uid: "urn:osh:rpi:10000000a1b2c3d4", label: "Raspberry Pi Sensors [pi-lab]",
            serial: "10000000a1b2c3d4", validFrom: t, outputs: Self.androidLikeOutputs())
        let body = SystemBody.string(d)
        XCTAssertEqual(Self.keySequence(body), Self.keySequence(android))

        let expected =
            #"{"type":"PhysicalSystem","id":"RPI_SENSORS_10000000a1b2c3d4","uniqueId":"urn:osh:rpi:10000000a1b2c3d4","definition":"http://www.w3.org/ns/sosa/Sensor","label":"Raspberry Pi Sensors [pi-lab]","validTime":["2026-03-18T16:02:58.497Z","now"],"localReferenceFrames":[{"id":"LOCAL_FRAME","origin":"Center of the sensor board","axes":[{"name":"x","description":"The X axis is in the plane of the board and points to the right when the board is seen from its component side with the GPIO header along the top edge"},{"name":"y","description":"The Y axis is in the plane of the board and points up, towards the GPIO header, in that same view"},{"name":"z","description":"The Z axis is perpendicular to the board and points out of its component side"}]}],"components":[{"type":"PhysicalComponent","name":"sensor0","id":"SENSOR_ROTATION_VECTOR","label":"Rotation Vector"},{"type":"PhysicalComponent","name":"sensor1","id":"SENSOR_ROTATION_VECTOR","label":"Rotation Vector"},{"type":"PhysicalComponent","name":"sensor2","id":"LOC_GPS","label":"gps"},{"type":"PhysicalComponent","name":"sensor3","id":"CAM_0","label":"Android Camera #0"}]}"#
        XCTAssertEqual(body, expected)
        // Same bytes through the convenience entry point.
        let b = ByteBuffer()
        SystemBody.write(uid: d.uid, label: d.label, serial: d.serial, validFrom: t, outputs: Self.androidLikeOutputs(), to: b)
        XCTAssertEqual(b.string, expected)
    }

    func testSystemBodyDescriptionPlacementAndID() {
        let d = SystemDescription(
            uid: "urn:osh:rpi:00000000abcdef01", label: "Pi", serial: " 00000000ABCDEF01\n",
            validFrom: 0, description: "Roof \"north\" mast", components: [])
        let body = SystemBody.string(d)
        XCTAssertEqual(
            Self.keySequence(body).prefix(7),
            ["type", "id", "uniqueId", "definition", "label", "description", "validTime"])
        XCTAssertTrue(body.contains(#""description":"Roof \"north\" mast""#))
        XCTAssertTrue(body.contains(#""validTime":["1970-01-01T00:00:00.000Z","now"]"#))
        XCTAssertFalse(body.contains("components"), "no components key without sources")
        XCTAssertEqual(SystemBody.xmlID(serial: " 00000000ABCDEF01\n"), "RPI_SENSORS_00000000ABCDEF01")
        XCTAssertEqual(SystemBody.xmlID(serial: ""), "RPI_SENSORS_unknown")
        XCTAssertEqual(SystemBody.xmlID(serial: "ab:cd ef"), "RPI_SENSORS_ab_cd_ef")
        // An empty description is left out.
        var d2 = d; d2.description = ""
        XCTAssertFalse(SystemBody.string(d2).contains("description\":\"\""))
    }

    func testSystemBodyFromCatalogueListsEveryOutputInOrder() {
        let o = OutputOptions(uid: "urn:osh:rpi:10000000a1b2c3d4")
        let outputs = OutputCatalogue.all(o)
        let body = SystemBody.string(SystemDescription(uid: o.uid, label: "L", serial: "s", validFrom: 1.0e9, outputs: outputs))
        XCTAssertEqual(body.components(separatedBy: "\"type\":\"PhysicalComponent\"").count - 1, outputs.count)
        for (i, spec) in outputs.enumerated() {
            let entry = #"{"type":"PhysicalComponent","name":"sensor\#(i)","id":"\#(spec.source.id)","label":"\#(spec.source.label)"}"#
            XCTAssertTrue(body.contains(entry), entry)
        }
        XCTAssertFalse(body.contains("\"outputs\""), "outputs would make the node create datastreams itself")
    }

    // MARK: Sampling feature (§2.3)

    func testFOIUIDRule() {
        XCTAssertEqual(SamplingFeature.foiUID(forSystemUID: "urn:osh:rpi:10000000a1b2c3d4"), "urn:rpi:foi:10000000a1b2c3d4")
        XCTAssertEqual(
            SamplingFeature.foiUID(forSystemUID: "urn:osh:rpi:10000000a1b2c3d4:roof"),
            "urn:rpi:foi:10000000a1b2c3d4:roof")
        XCTAssertEqual(SamplingFeature.foiUID(forSystemUID: "urn:example:station:42"), "urn:example:station:42:foi")
        XCTAssertEqual(SamplingFeature.foiUID(forSystemUID: " urn:osh:rpi:abc|d'ef \n"), "urn:rpi:foi:abcdef")
    }

    func testSamplingFeatureBody() {
        XCTAssertEqual(
            SamplingFeature.string(systemUID: "urn:osh:rpi:10000000a1b2c3d4:roof"),
            #"{"type":"Feature","geometry":null,"properties":{"uid":"urn:rpi:foi:10000000a1b2c3d4:roof","name":"Raspberry Pi Sensors"}}"#)
        XCTAssertEqual(
            SamplingFeature.string(systemUID: "urn:x:board:0001", name: "Mast", description: "run 3"),
            #"{"type":"Feature","geometry":null,"properties":{"uid":"urn:x:board:0001:foi","name":"Mast","description":"run 3"}}"#)
    }

    // MARK: System UID

    func testSystemUID() throws {
        XCTAssertEqual(try SystemUID.make(boardID: "10000000A1B2C3D4"), "urn:osh:rpi:10000000a1b2c3d4")
        XCTAssertEqual(
            try SystemUID.make(boardID: "00000000a1b2c3d4\0\n", extension: " roof "),
            "urn:osh:rpi:00000000a1b2c3d4:roof")
        XCTAssertEqual(try SystemUID.make(boardID: "00000000a1b2c3d4", extension: ""), "urn:osh:rpi:00000000a1b2c3d4")
        XCTAssertEqual(try SystemUID.make(boardID: "", override: "  urn:example:my-station-01 "), "urn:example:my-station-01")
        XCTAssertEqual(try SystemUID.make(boardID: "abc", override: "   "), "urn:osh:rpi:abc")  // blank override ignored
        XCTAssertThrowsError(try SystemUID.make(boardID: "")) { XCTAssertEqual($0 as? SystemUIDError, .empty) }
        XCTAssertThrowsError(try SystemUID.make(boardID: "abc def")) {
            XCTAssertEqual($0 as? SystemUIDError, .invalidCharacter("abc def"))
        }
        XCTAssertThrowsError(try SystemUID.make(boardID: "abc", extension: "two words"))
        XCTAssertThrowsError(try SystemUID.make(boardID: "x", override: "urn:a:b")) {
            XCTAssertEqual($0 as? SystemUIDError, .tooShort("urn:a:b"))
        }
        XCTAssertTrue(SystemUID.isValid("urn:osh:rpi:10000000a1b2c3d4"))
        XCTAssertFalse(SystemUID.isValid("urn:osh:rpi:1 0"))
        XCTAssertFalse(SystemUID.isValid("short"))
        XCTAssertEqual(SystemUID.boardID(fromSerial: " 0000ABCD\0"), "0000abcd")
    }

    // MARK: Requests

    private static let root = "http://pi-node.local:8181/sensorhub/api"

    private static func allRequests(_ b: CSRequestBuilder) -> [CSRequest] {
        let body = Array("{}".utf8)
        return [
            b.landingPage(), b.findSystem(uid: "urn:osh:rpi:10000000a1b2c3d4"), b.listSystems(), b.getSystem(id: "0e2b"),
            b.createSystem(body: body), b.updateSystem(id: "0e2b", body: body),
            b.listDatastreams(systemID: "0e2b"), b.getDatastream(id: "ds1"), b.createDatastream(systemID: "0e2b", body: body),
            b.updateDatastream(id: "ds1", body: body), b.datastreamSchema(id: "ds1"),
            b.findSamplingFeature(uid: "urn:rpi:foi:10000000a1b2c3d4"), b.getSamplingFeature(id: "f1"),
            b.createSamplingFeature(systemID: "0e2b", body: body), b.updateSamplingFeature(id: "f1", body: body),
            b.postObservations(datastreamID: "ds1", format: .omJSON, body: body),
            b.postObservations(datastreamID: "ds1", format: .sweJSON), b.postVideo(datastreamID: "ds2", body: [1, 2, 3]),
            b.listObservations(datastreamID: "ds1", limit: 5, descending: true, format: MediaType.omJSON),
            b.listControlStreams(systemID: "0e2b"), b.createControlStream(systemID: "0e2b", body: body),
            b.updateControlStream(id: "cs1", body: body), b.commandChannel(controlStreamID: "cs1"),
            b.postCommandStatus(controlStreamID: "cs1", body: body),
        ]
    }

    func testEveryRequestAcceptsJSONAndBodiesHaveBareContentTypes() {
        for r in Self.allRequests(CSRequestBuilder()) {
            XCTAssertEqual(r.headers.first, HTTPHeader("Accept", "application/json"), r.description)
            XCTAssertEqual(r.headers.filter { $0.name == "Accept" }.count, 1)
            if r.body != nil || r.method == .post || r.method == .put {
                let ct = r.contentType
                XCTAssertNotNil(ct, r.description)
                XCTAssertFalse(ct?.contains(";") ?? true, "bare media type: \(r.description)")
                XCTAssertFalse(ct?.contains(" ") ?? true)
            } else {
                XCTAssertNil(r.contentType, r.description)
            }
            XCTAssertNil(r.header("Authorization"))
            XCTAssertFalse(r.path.contains("+"), "a raw + is form-decoded to a space: \(r.path)")
            XCTAssertTrue(r.path.hasPrefix("/"))
        }
    }

    func testMethodsPathsAndContentTypes() {
        let b = CSRequestBuilder()
        let body = Array("{}".utf8)
        func check(_ r: CSRequest, _ m: HTTPMethod, _ p: String, _ ct: String?, line: UInt = #line) {
            XCTAssertEqual(r.method, m, line: line)
            XCTAssertEqual(r.path, p, line: line)
            XCTAssertEqual(r.contentType, ct, line: line)
        }
        check(b.landingPage(), .get, "/?f=json", nil)
        check(b.findSystem(uid: "urn:osh:rpi:10000000a1b2c3d4"), .get, "/systems?uid=urn%3Aosh%3Arpi%3A10000000a1b2c3d4", nil)
        check(
            CSRequestBuilder(uidQuery: .id).findSystem(uid: "urn:osh:rpi:ab:x/y"), .get,
            "/systems?id=urn%3Aosh%3Arpi%3Aab%3Ax%2Fy", nil)
        check(b.listSystems(limit: 10), .get, "/systems?limit=10&offset=0", nil)
        check(b.getSystem(id: "0e2b7shpqb3g"), .get, "/systems/0e2b7shpqb3g", nil)
        check(b.createSystem(body: body), .post, "/systems", "application/sml+json")
        check(b.updateSystem(id: "0e2b", body: body), .put, "/systems/0e2b", "application/sml+json")
        check(b.listDatastreams(systemID: "0e2b"), .get, "/systems/0e2b/datastreams?limit=100&offset=0", nil)
        check(b.getDatastream(id: "ds1"), .get, "/datastreams/ds1", nil)
        check(b.createDatastream(systemID: "0e2b", body: body), .post, "/systems/0e2b/datastreams", "application/json")
        check(b.updateDatastream(id: "ds1", body: body), .put, "/datastreams/ds1", "application/json")
        check(b.datastreamSchema(id: "ds1"), .get, "/datastreams/ds1/schema?obsFormat=application%2Fswe%2Bjson", nil)
        check(
            b.datastreamSchema(id: "ds1", obsFormat: MediaType.sweBinary), .get,
            "/datastreams/ds1/schema?obsFormat=application%2Fswe%2Bbinary", nil)
        check(
            b.findSamplingFeature(uid: "urn:rpi:foi:10000000a1b2c3d4"), .get,
            "/samplingFeatures?uid=urn%3Arpi%3Afoi%3A10000000a1b2c3d4", nil)
        check(
            CSRequestBuilder(uidQuery: .id).findSamplingFeature(uid: "urn:rpi:foi:1"), .get,
            "/samplingFeatures?id=urn%3Arpi%3Afoi%3A1", nil)
        check(
            b.createSamplingFeature(systemID: "0e2b", body: body), .post, "/systems/0e2b/samplingFeatures",
            "application/geo+json")
        check(b.updateSamplingFeature(id: "f1", body: body), .put, "/samplingFeatures/f1", "application/geo+json")
        check(
            b.postObservations(datastreamID: "ds1", format: .omJSON, body: body), .post,
            "/datastreams/ds1/observations", "application/om+json")
        check(
            b.postObservations(datastreamID: "ds1", format: .sweJSON), .post, "/datastreams/ds1/observations",
            "application/swe+json")
        check(b.postVideo(datastreamID: "ds2", body: [0]), .post, "/datastreams/ds2/observations", "application/swe+binary")
        check(
            b.listObservations(datastreamID: "ds1", limit: 5, descending: true, format: MediaType.omJSON), .get,
            "/datastreams/ds1/observations?limit=5&order=desc&f=application%2Fom%2Bjson", nil)
        check(b.listObservations(datastreamID: "ds1"), .get, "/datastreams/ds1/observations?limit=100", nil)
        check(b.listControlStreams(systemID: "0e2b"), .get, "/systems/0e2b/controlstreams", nil)
        check(b.createControlStream(systemID: "0e2b", body: body), .post, "/systems/0e2b/controlstreams", "application/json")
        check(b.updateControlStream(id: "cs1", body: body), .put, "/controlstreams/cs1", "application/json")
        check(b.commandChannel(controlStreamID: "cs1"), .get, "/controlstreams/cs1/commands", nil)
        check(
            b.postCommandStatus(controlStreamID: "cs1", body: body), .post, "/controlstreams/cs1/status",
            "application/json")
        // Ids are path segments: anything odd is escaped, never spliced in raw.
        check(b.getSystem(id: "a/b c"), .get, "/systems/a%2Fb%20c", nil)
        XCTAssertEqual(b.createSystem(body: body).body, body)
        XCTAssertNil(b.postObservations(datastreamID: "ds1", format: .omJSON).body)
    }

    func testBasicAuthOnlyWithUsername() {
        let withUser = CSRequestBuilder(credentials: .basic(username: "admin", password: "admin"))
        for r in Self.allRequests(withUser) {
            XCTAssertEqual(r.header("Authorization"), "Basic YWRtaW46YWRtaW4=", r.path)
            XCTAssertEqual(r.headers.last?.name, "Authorization")
        }
        XCTAssertEqual(CSCredentials.basic(username: "sensor", password: "pwd").authorization, "Basic c2Vuc29yOnB3ZA==")
        XCTAssertEqual(CSCredentials.basic(username: "josé", password: "päss").authorization, "Basic am9zw6k6cMOkc3M=")
        XCTAssertEqual(CSCredentials.basic(username: "u", password: "").authorization, "Basic dTo=")
        let noUser = CSRequestBuilder(credentials: .basic(username: "", password: "secret"))
        for r in Self.allRequests(noUser) { XCTAssertNil(r.header("Authorization"), r.path) }
        XCTAssertNil(CSCredentials.none.authorization)
    }

    func testBearerToken() {
        let b = CSRequestBuilder(credentials: .bearer(token: "eyJhbGciOi.x.y"))
        let r = b.createSystem(body: [0x7B, 0x7D])
        XCTAssertEqual(r.headers.map(\.name), ["Accept", "Content-Type", "Authorization"])
        XCTAssertEqual(r.header("authorization"), "Bearer eyJhbGciOi.x.y")
        XCTAssertNil(CSCredentials.bearer(token: " ").authorization)
        // Logs never show credentials.
        XCTAssertTrue(r.description.contains("Authorization: Bearer <redacted>"))
        XCTAssertFalse(r.description.contains("eyJhbGciOi"))
        let basic = CSRequestBuilder(credentials: .basic(username: "admin", password: "admin")).getSystem(id: "x")
        XCTAssertFalse(basic.description.contains("YWRtaW46YWRtaW4="))
    }

    func testBase64RFC4648Vectors() {
        let vectors = [
            "": "", "f": "Zg==", "fo": "Zm8=", "foo": "Zm9v", "foob": "Zm9vYg==", "fooba": "Zm9vYmE=",
            "foobar": "Zm9vYmFy",
        ]
        for (plain, encoded) in vectors { XCTAssertEqual(Base64.encode(Array(plain.utf8)), encoded, plain) }
        let all = (0...255).map { UInt8($0) }
        XCTAssertEqual(Base64.encode(all), Data(all).base64EncodedString())
    }

    func testPercentEncodingOfQueryValues() {
        XCTAssertEqual(CSURL.percentEncode("application/swe+json"), "application%2Fswe%2Bjson")
        XCTAssertEqual(CSURL.percentEncode("application/om+json"), "application%2Fom%2Bjson")
        XCTAssertEqual(CSURL.percentEncode("urn:osh:rpi:ab"), "urn%3Aosh%3Arpi%3Aab")
        XCTAssertEqual(CSURL.percentEncode("a b&c=d?e#f%g"), "a%20b%26c%3Dd%3Fe%23f%25g")
        XCTAssertEqual(CSURL.percentEncode("AZaz09-._~"), "AZaz09-._~")
        XCTAssertEqual(CSURL.percentEncode("é"), "%C3%A9")
        XCTAssertEqual(
            CSURL.queryString([("obsFormat", "application/swe+binary"), ("limit", "1")]),
            "obsFormat=application%2Fswe%2Bbinary&limit=1")
        XCTAssertEqual(CSURL.percentDecode("a%2Fb%2Bc%zz+%4"), "a/b+c%zz+%4")
        let r = CSRequestBuilder().request(.get, "systems", query: [("q", "a+b")])
        XCTAssertEqual(r.path, "/systems?q=a%2Bb")
    }

    func testURLJoining() {
        let expected = "http://pi-node.local:8181/sensorhub/api/systems"
        XCTAssertEqual(CSURL.join(apiRoot: Self.root, path: "/systems"), expected)
        XCTAssertEqual(CSURL.join(apiRoot: Self.root + "/", path: "/systems"), expected)
        XCTAssertEqual(CSURL.join(apiRoot: Self.root + "//", path: "systems"), expected)
        XCTAssertEqual(CSURL.join(apiRoot: " " + Self.root + "\n", path: "/systems"), expected)
        XCTAssertEqual(CSURL.join(apiRoot: Self.root, path: ""), Self.root)
        XCTAssertEqual(
            CSURL.join(apiRoot: "https://osh.example.org", path: "/systems?uid=x"),
            "https://osh.example.org/systems?uid=x")
        XCTAssertEqual(CSURL.join(apiRoot: Self.root, path: "https://other/api/systems/1"), "https://other/api/systems/1")
        XCTAssertEqual(
            CSRequestBuilder().datastreamSchema(id: "ds1").url(apiRoot: Self.root + "/"),
            "http://pi-node.local:8181/sensorhub/api/datastreams/ds1/schema?obsFormat=application%2Fswe%2Bjson")
        XCTAssertEqual(CSRequestBuilder().landingPage().url(apiRoot: Self.root), Self.root + "/?f=json")
    }

    // MARK: Responses

    func testLocationParsing() throws {
        XCTAssertEqual(CSResponse.resourceID(fromLocation: "/systems/0e2b7shpqb3g"), "0e2b7shpqb3g")
        XCTAssertEqual(CSResponse.resourceID(fromLocation: "/datastreams/a1b2/"), "a1b2")
        XCTAssertEqual(CSResponse.resourceID(fromLocation: "  /controlstreams/cs9 \r\n"), "cs9")
        XCTAssertEqual(CSResponse.resourceID(fromLocation: "http://h:8181/sensorhub/api/systems/0e2b7shpqb3g"), "0e2b7shpqb3g")
        XCTAssertEqual(CSResponse.resourceID(fromLocation: "https://h/api/systems/abc?f=json#top"), "abc")
        XCTAssertEqual(CSResponse.resourceID(fromLocation: "/systems/abc/?x=1"), "abc")
        XCTAssertEqual(CSResponse.resourceID(fromLocation: "0e2b7shpqb3g"), "0e2b7shpqb3g")
        XCTAssertEqual(CSResponse.resourceID(fromLocation: "/samplingFeatures/a%3Ab"), "a:b")
        XCTAssertNil(CSResponse.resourceID(fromLocation: nil))
        XCTAssertNil(CSResponse.resourceID(fromLocation: ""))
        XCTAssertNil(CSResponse.resourceID(fromLocation: "/"))
        XCTAssertNil(CSResponse.resourceID(fromLocation: "http://host:8181"))
        XCTAssertNil(CSResponse.resourceID(fromLocation: "http://host:8181/"))
        XCTAssertNil(CSResponse.resourceID(fromLocation: "?a=b"))
        XCTAssertNil(CSResponse.resourceID(fromLocation: "/systems/", collection: "systems"))
        XCTAssertEqual(CSResponse.resourceID(fromLocation: "/systems/x1", collection: "systems"), "x1")
        XCTAssertThrowsError(try CSResponse.requireResourceID(fromLocation: "  ")) {
            XCTAssertEqual($0 as? LocationError, .missing)
        }
        XCTAssertThrowsError(try CSResponse.requireResourceID(fromLocation: "/")) {
            XCTAssertEqual($0 as? LocationError, .noID("/"))
        }
        XCTAssertEqual(try CSResponse.requireResourceID(fromLocation: "/observations/o1"), "o1")
    }

    func testErrorBodyJSON() {
        let e = NodeError.parse(#"{"status":400,"message":"Unsupported format: application/om json"}"#)
        XCTAssertEqual(e.status, 400)
        XCTAssertEqual(e.message, "Unsupported format: application/om json")
        XCTAssertEqual(e.summary, "Unsupported format: application/om json")
        XCTAssertEqual(e.description, "400 Unsupported format: application/om json")

        let reordered = NodeError.parse(
            " \n{ \"extra\": {\"a\": [1, {\"b\": \"}\"}], \"c\": null}, \"message\" : \"Invalid payload: \\\"x\\\"\\n at \\u00e9 \\ud83d\\ude00\", \"status\" : 404 }"
        )
        XCTAssertEqual(reordered.status, 404)
        XCTAssertEqual(reordered.message, "Invalid payload: \"x\"\n at é 😀")
        XCTAssertEqual(reordered.summary, "Invalid payload: \"x\" at é 😀")

        let onlyStatus = NodeError.parse(#"{"status":500}"#)
        XCTAssertEqual(onlyStatus.status, 500)
        XCTAssertNil(onlyStatus.message)
        XCTAssertEqual(onlyStatus.summary, #"{"status":500}"#)

        let onlyMessage = NodeError.parse(#"{"message":"Missing property: outputName"}"#)
        XCTAssertNil(onlyMessage.status)
        XCTAssertEqual(onlyMessage.summary, "Missing property: outputName")

        let truncated = NodeError.parse(#"{"status":400,"message":"Invalid JSON: unterminated"#)
        XCTAssertEqual(truncated.status, 400)
        XCTAssertNil(truncated.message)

        let long = NodeError.parse(#"{"status":400,"message":""# + String(repeating: "x", count: 1000) + #""}"#)
        XCTAssertEqual(long.message?.count, 1000)
        XCTAssertEqual(long.summary.count, NodeError.summaryLimit)
        XCTAssertTrue(long.summary.hasSuffix("…"))

        XCTAssertEqual(NodeError.parse(Array("\u{FEFF}{\"status\":401}".utf8)).status, 401)
        XCTAssertEqual(NodeError.parse(#"{"status":"bad","message":"m"}"#).message, "m")
    }

    func testErrorBodyNotJSON() {
        let html = """
            <html>\n<head>\n<meta http-equiv="Content-Type" content="text/html;charset=ISO-8859-1"/>
            <title>Error 401 Unauthorized</title><style>body { color: red }</style>
            </head>\n<body><h2>HTTP ERROR 401 Unauthorized</h2>
            <table><tr><th>URI:</th><td>/sensorhub/api/systems</td></tr></table>
            <script>var x = "<b>";</script></body></html>
            """
        let e = NodeError.parse(html)
        XCTAssertNil(e.status)
        XCTAssertNil(e.message)
        XCTAssertEqual(e.summary, "Error 401 Unauthorized HTTP ERROR 401 Unauthorized URI: /sensorhub/api/systems")

        XCTAssertEqual(NodeError.parse("").summary, "(empty body)")
        XCTAssertEqual(NodeError.parse("   \n ").summary, "(empty body)")
        XCTAssertEqual(NodeError.parse("Bad Gateway\r\n").summary, "Bad Gateway")
        let garbage = NodeError.parse([0xFF, 0xFE, 0x00, 0x41, 0x7B, 0x22, 0xC3])
        XCTAssertNil(garbage.status)
        XCTAssertFalse(garbage.summary.isEmpty)
        let big = NodeError.parse(String(repeating: "word ", count: 10_000))
        XCTAssertLessThanOrEqual(big.summary.count, NodeError.summaryLimit)
        // Deep nesting must not recurse without bound.
        let deep = NodeError.parse("{\"a\":" + String(repeating: "[", count: 100_000) + "}")
        XCTAssertNil(deep.status)
        // Random bytes never crash.
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let n = Int.random(in: 0..<64, using: &rng)
            let bytes = (0..<n).map { _ in
                [
                    UInt8(ascii: "{"), UInt8(ascii: "\""), UInt8(ascii: ":"), UInt8(ascii: "\\"),
                    UInt8(ascii: "["), UInt8(ascii: "}"), UInt8(ascii: "s"), UInt8(ascii: "1"),
                    UInt8.random(in: 0...255, using: &rng),
                ].randomElement(using: &rng)!
            }
            _ = NodeError.parse(bytes)
        }
    }

    // MARK: Commands

    func testCommandStatusBody() throws {
        let t = try XCTUnwrap(ISOTime.parse("2026-09-04T10:00:01.250Z"))
        let done = CommandStatus(
            commandID: "c0ffee", statusCode: .completed, reportTime: t,
            executionTime: (t - 1, t), message: "blinked \"LED\"")
        XCTAssertEqual(
            CommandStatusBody.string(done),
            #"{"command@id":"c0ffee","reportTime":"2026-09-04T10:00:01.250Z","statusCode":"COMPLETED","executionTime":"2026-09-04T10:00:00.250Z/2026-09-04T10:00:01.250Z","message":"blinked \"LED\""}"#
        )
        let rejected = CommandStatus(commandID: "c1", statusCode: .rejected, reportTime: t, message: "unknown command 'x'")
        XCTAssertEqual(
            CommandStatusBody.string(rejected),
            #"{"command@id":"c1","reportTime":"2026-09-04T10:00:01.250Z","statusCode":"REJECTED","message":"unknown command 'x'"}"#)
        let running = CommandStatus(commandID: "c2", statusCode: .executing, reportTime: t, percentCompletion: 140)
        XCTAssertEqual(
            CommandStatusBody.string(running),
            #"{"command@id":"c2","reportTime":"2026-09-04T10:00:01.250Z","statusCode":"EXECUTING","percentCompletion":100}"#)
        XCTAssertEqual(
            CommandStatusCode.allCases.map(\.rawValue),
            ["PENDING", "ACCEPTED", "REJECTED", "SCHEDULED", "UPDATED", "CANCELED", "EXECUTING", "FAILED", "COMPLETED"])
        XCTAssertTrue(CommandStatusCode.failed.isFinal)
        XCTAssertFalse(CommandStatusCode.accepted.isFinal)
        XCTAssertFalse(
            CommandStatusBody.string(CommandStatus(commandID: "c", statusCode: .failed, reportTime: .nan))
                .contains("reportTime"))
        XCTAssertEqual(done, done)
    }

    func testControlStreamBodyTypeFirstEverywhere() {
        let params = DataComponent(
            .choice(
                DataChoice(items: [
                    DataComponent(
                        .record([
                            DataComponent(.text(Text()), name: "output", label: "Output Name"),
                            DataComponent(
                                .quantity(Quantity(uom: .code("Hz"), constraint: AllowedValues(intervals: [ClosedInterval(0.1, 50)]))),
                                name: "rate", definition: SWE.property("SamplingRate"), label: "Rate"),
                        ]), name: "setRate", label: "Set Output Rate"),
                    DataComponent(
                        .count(Count(constraint: AllowedValues(intervals: [ClosedInterval(1, 10)]))),
                        name: "identify", label: "Blink LED"),
                    DataComponent(.boolean(BooleanComponent()), name: "enable"),
                ])), name: "device_control", label: "Device Control")
        let body = ControlStreamBody.string(
            name: ControlStreamBody.name(systemLabel: "Pi", inputName: "device_control"),
            description: "Board control", inputName: "device_control", parameters: params)
        let expected =
            #"{"name":"Pi - device_control","description":"Board control","inputName":"device_control","schema":{"commandFormat":"application/json","parametersSchema":{"type":"DataChoice","name":"device_control","label":"Device Control","items":[{"type":"DataRecord","name":"setRate","label":"Set Output Rate","fields":[{"type":"Text","name":"output","label":"Output Name"},{"type":"Quantity","name":"rate","definition":"http://sensorml.com/ont/swe/property/SamplingRate","label":"Rate","uom":{"code":"Hz"},"constraint":{"intervals":[[0.1,50.0]]}}]},{"type":"Count","name":"identify","label":"Blink LED","constraint":{"intervals":[[1,10]]}},{"type":"Boolean","name":"enable"}]}}}"#
        XCTAssertEqual(body, expected)
        // Wherever a "type" member appears it opens its object.
        var search = body[...]
        var count = 0
        while let r = search.range(of: #""type":"#) {
            XCTAssertEqual(body[body.index(before: r.lowerBound)], "{")
            count += 1
            search = search[r.upperBound...]
        }
        XCTAssertEqual(count, 6)
        XCTAssertEqual(Self.keySequence(body).prefix(5), ["name", "description", "inputName", "schema", "commandFormat"])
        XCTAssertFalse(ControlStreamBody.string(name: "n", inputName: "i", parameters: params).contains("description"))
    }

    // MARK: SHA-256 / HMAC (FIPS 180-4 examples, RFC 4231)

    func testSHA256NISTVectors() {
        XCTAssertEqual(Hex.string(SHA256.hash("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(Hex.string(SHA256.hash("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(
            Hex.string(SHA256.hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        XCTAssertEqual(
            Hex.string(
                SHA256.hash(
                    "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu")),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
        var million = SHA256()
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 1000)
        for _ in 0..<1000 { million.update(chunk) }
        XCTAssertEqual(Hex.string(million.finalize()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    func testSHA256IncrementalMatchesOneShotAtEveryPaddingBoundary() {
        let data = (0..<200).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        for n in [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 200] {
            let whole = SHA256.hash(data[0..<n])
            var parts = SHA256()
            var i = 0
            while i < n { let j = min(n, i + 13); parts.update(data[i..<j]); i = j }
            XCTAssertEqual(parts.finalize(), whole, "n=\(n)")
        }
    }

    func testHMACSHA256RFC4231() {
        XCTAssertEqual(
            Hex.string(
                HMACSHA256.authenticationCode(
                    key: [UInt8](repeating: 0x0b, count: 20),
                    message: Array("Hi There".utf8))),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        XCTAssertEqual(
            Hex.string(
                HMACSHA256.authenticationCode(
                    key: Array("Jefe".utf8),
                    message: Array("what do ya want for nothing?".utf8))),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // Test case 6: a key longer than the block is hashed first.
        XCTAssertEqual(
            Hex.string(
                HMACSHA256.authenticationCode(
                    key: [UInt8](repeating: 0xaa, count: 131),
                    message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8))),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    func testHex() {
        XCTAssertEqual(Hex.bytes("00ff10Ab"), [0x00, 0xFF, 0x10, 0xAB])
        XCTAssertNil(Hex.bytes("abc"))
        XCTAssertNil(Hex.bytes("zz"))
        XCTAssertEqual(Hex.string([0x00, 0xFF, 0x10, 0xAB]), "00ff10ab")
    }
}
