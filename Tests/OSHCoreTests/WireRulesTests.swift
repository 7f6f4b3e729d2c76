import OSHCore
import XCTest

/// The node's structural rules, checked over every body osh-edge generates:
/// `type` first in every typed object, `obsFormat` first in `schema`, and
/// observation keys in exactly the schema's leaf order.
final class WireRulesTests: XCTestCase {
    /// Every body the agent can send for one board, over all options that change a body.
    private func allBodies() -> [(String, String)] {
        var out: [(String, String)] = []
        for north in NorthReference.allCases {
            let o = OutputOptions(
                uid: "urn:osh:rpi:10000000abcdef12:mast", north: north, videoWidth: 1280, videoHeight: 720,
                imuChip: "ICM20948", magnetometerChip: "AK09916", barometerChip: "BMP390")
            for spec in OutputCatalogue.all(o) {
                for f in ScalarFormat.allCases {
                    out.append(("\(spec.outputName) \(f) \(north)", DatastreamBody.string(spec, systemLabel: "Pi [x]", scalarFormat: f)))
                }
            }
            out.append(
                (
                    "system",
                    SystemBody.string(
                        SystemDescription(
                            uid: o.uid, label: "Pi [x]", serial: "10000000abcdef12",
                            validFrom: 1_773_853_535, outputs: OutputCatalogue.all(o)))
                ))
        }
        out.append(("feature", SamplingFeature.string(systemUID: "urn:osh:rpi:10000000abcdef12")))
        let choice = DataComponent(
            .choice(
                DataChoice(items: [
                    DataComponent(
                        .quantity(Quantity(uom: .code("Hz"), constraint: AllowedValues(intervals: [ClosedInterval(0.1, 100)]))),
                        name: "setRate"),
                    DataComponent(.boolean(BooleanComponent()), name: "enable"),
                    DataComponent(.category(Category(constraint: AllowedTokens(values: ["a", "b"]))), name: "output"),
                ])), name: "device_control", definition: SWE.property("DeviceControl"))
        out.append(("control", ControlStreamBody.string(name: "Pi - device_control", inputName: "device_control", parameters: choice)))
        return out
    }

    /// Walks a parsed document; calls `visit` with each object and its JSON path.
    private func walk(_ v: JSONValue, _ path: String, _ visit: (JSONValue, String) -> Void) {
        switch v {
        case .object(let members):
            visit(v, path)
            for (k, child) in members { walk(child, path + "/" + k, visit) }
        case .array(let items):
            for (i, child) in items.enumerated() { walk(child, path + "/\(i)", visit) }
        default: break
        }
    }

    func testTypeIsFirstAndObsFormatIsFirstEverywhere() throws {
        let bodies = allBodies()
        XCTAssertGreaterThan(bodies.count, 40)
        for (what, body) in bodies {
            let doc = try JSONValue.parse(body)
            var typed = 0
            walk(doc, "") { obj, path in
                let keys = obj.objectKeys ?? []
                if keys.contains("type") {
                    typed += 1
                    XCTAssertEqual(keys.first, "type", "\(what): 'type' is not the first member at \(path)")
                }
                if path == "/schema" {
                    // Datastreams: the node reads obsFormat first or fails; control streams lead with commandFormat.
                    let first = what == "control" ? "commandFormat" : "obsFormat"
                    XCTAssertEqual(keys.first, first, "\(what): '\(first)' is not first in \(path)")
                }
            }
            XCTAssertGreaterThan(typed, 0, what)
        }
    }

    /// The scanner must catch what the node rejects — checked on bodies broken on purpose.
    func testScannerCatchesMisorderedBodies() throws {
        let good = DatastreamBody.string(OutputCatalogue.gps(androidOptions()), systemLabel: "L", scalarFormat: .omJSON)
        let typeSecond = good.replacingOccurrences(
            of: "{\"type\":\"Quantity\",\"name\":\"lat\"", with: "{\"name\":\"lat\",\"type\":\"Quantity\"")
        var violations = 0
        walk(try JSONValue.parse(typeSecond), "") { obj, _ in
            if let keys = obj.objectKeys, keys.contains("type"), keys.first != "type" { violations += 1 }
        }
        XCTAssertEqual(violations, 1)
    }

    func testObservationKeysFollowLeafOrder() throws {
        let o = OutputOptions(uid: "urn:osh:rpi:10000000abcdef12")
        for spec in OutputCatalogue.all(o) where spec.binaryEncoding == nil {
            for format in ScalarFormat.allCases {
                let enc = try ObservationEncoder(spec: spec, format: format, foiID: "f1")
                let out = ByteBuffer()
                let values = (0..<enc.layout.valueCount).map { Double($0) + 0.5 }
                try enc.encode(time: 1_773_853_535.951, values: values, into: out)
                let doc = try JSONValue.parse(out.string)
                var leafPaths: [String] = []
                func collect(_ v: JSONValue, _ path: String) {
                    guard case .object(let members) = v else { leafPaths.append(path); return }
                    for (k, child) in members { collect(child, path + "/" + k) }
                }
                let expected = spec.leaves.map(\.path)
                switch format {
                case .sweJSON:
                    collect(doc, "")
                    XCTAssertEqual(leafPaths, expected, "\(spec.outputName) swe+json")
                case .omJSON:
                    XCTAssertEqual(doc.objectKeys, ["foi@id", "phenomenonTime", "resultTime", "result"])
                    collect(try XCTUnwrap(doc["result"]), "")
                    XCTAssertEqual(leafPaths, Array(expected.dropFirst()), "\(spec.outputName) om+json")
                }
            }
        }
    }
}
