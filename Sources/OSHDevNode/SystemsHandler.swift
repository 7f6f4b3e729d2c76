// /systems and what hangs below a system (its datastreams, control streams, sampling features,
// history): SensorML or GeoJSON in, idempotent by UID, GeoJSON or SensorML out.
import OSHCore

extension RequestHandler {
    func systems(_ rest: [String]) throws -> HTTPResponse {
        switch target(rest) {
        case .collection:
            return try onCollection(get: { try listSystems() }, post: { try createSystems() })
        case .item(let id):
            route = method + " /systems/{id}"
            return try onItem(
                id,
                get: {
                    guard let i = store.systemIndex(id) else {
                        // osh-core's in-memory store: an id it never gave out past its newest is a
                        // NullPointerException (InMemoryBaseFeatureStore.entryStream reads the ceiling
                        // entry's key before checking it for null), answered 500 — what a board with a
                        // cached id meets after the node restarted empty (here: any id the node does not hold).
                        if config.oshInMemoryStore {
                            throw NodeFailure(
                                status: 500,
                                message: "java.lang.NullPointerException: Cannot invoke "
                                    + "\"java.util.Map$Entry.getKey()\" because \"entry\" is null")
                        }
                        throw NodeFailure.notFound(id)
                    }
                    return try systemResponse(store.systems[i])
                },
                put: {
                    guard let i = store.systemIndex(id) else { throw NodeFailure.notFound(id) }
                    let inputs = try systemInputs()
                    guard let input = inputs.first else { throw NodeFailure.noData }
                    apply(input, to: &store.systems[i])
                    return HTTPResponse(status: 204, contentType: nil)
                },
                delete: {
                    guard let i = store.systemIndex(id) else { throw NodeFailure.notFound(id) }
                    store.systems.remove(at: i)
                    for d in store.datastreams where d.systemID == id {
                        store.ledger?.deleted(at: now, outputName: d.outputName, datastreamID: d.id)
                    }
                    store.datastreams.removeAll { $0.systemID == id }
                    store.controlStreams.removeAll { $0.systemID == id }
                    store.features.removeAll { $0.systemID == id }
                    return HTTPResponse(status: 204, contentType: nil)
                })
        case .nested(let id, let name, let sub):
            route = method + " /systems/{id}/" + name
            let known = ["datastreams", "controlstreams", "samplingFeatures", "fois", "subsystems", "members", "history"]
            guard known.contains(name) else { throw NodeFailure.invalidName(name) }
            guard let si = store.systemIndex(id) else { throw NodeFailure.notFound(id) }
            let system = store.systems[si]
            if let child = sub.first {
                route += "/{id}"
                guard sub.count == 1, method == "GET" else { throw NodeFailure.badRequest("Invalid resource URI") }
                switch name {
                case "datastreams":
                    guard let d = store.datastreams.first(where: { $0.id == child && $0.systemID == id }) else {
                        throw NodeFailure.notFound(child)
                    }
                    return json(jsonBytes { writeDatastream(d, &$0) })
                case "controlstreams":
                    guard let c = store.controlStreams.first(where: { $0.id == child && $0.systemID == id }) else {
                        throw NodeFailure.notFound(child)
                    }
                    return json(jsonBytes { writeControlStream(c, &$0) })
                case "samplingFeatures", "fois":
                    guard let f = store.features.first(where: { $0.id == child && $0.systemID == id }) else {
                        throw NodeFailure.notFound(child)
                    }
                    return json(jsonBytes { writeFeature(f, &$0) })
                default:
                    throw NodeFailure.notFound(child)
                }
            }
            switch name {
            case "datastreams":
                return try onCollection(
                    get: {
                        let items = store.datastreams.filter { $0.systemID == id }
                        return json(page(items) { d, w in writeDatastream(d, &w) })
                    }, post: { try createDatastreams(systemID: id) })
            case "controlstreams":
                return try onCollection(
                    get: {
                        let items = store.controlStreams.filter { $0.systemID == id }
                        return json(page(items) { c, w in writeControlStream(c, &w) })
                    }, post: { try createControlStreams(systemID: id) })
            case "samplingFeatures", "fois":
                return try onCollection(
                    get: {
                        let items = store.features.filter { $0.systemID == id }
                        return json(featurePage(items))
                    }, post: { try createFeatures(systemID: id) })
            case "history":
                return try onCollection(
                    get: { json(featureCollection([system]) { s, w in writeSystem(s, &w) }) },
                    post: { throw NodeFailure.unsupported("Resource type is read-only") })
            default:  // subsystems, members: the dev node has none
                return try onCollection(
                    get: { json(list { _ in }) },
                    post: { throw NodeFailure.unsupported("Subsystems are not supported by the development node") })
            }
        }
    }

    /// A system is a feature (from GeoJSON, or SensorML's uniqueId/label/description/definition)
    /// and, when posted as SensorML, that description.
    struct SystemInput {
        var feature: GeoFeature
        var sml: JSONValue?
    }

    func listSystems() throws -> HTTPResponse {
        var items = filteredByUIDOrID(store.systems, uid: \.uid, id: \.id)
        if let q = param("q")?.lowercased(), !q.isEmpty {
            items = items.filter { $0.name.lowercased().contains(q) || ($0.description ?? "").lowercased().contains(q) }
        }
        return json(featureCollection(items) { s, w in writeSystem(s, &w) })
    }

    func createSystems() throws -> HTTPResponse {
        let inputs = try systemInputs()
        return try upsert(
            inputs.count, read: { inputs[$0] }, into: \.systems, urlPrefix: "/systems/", id: \.id,
            matches: { $0.uid == $1.feature.uid }, update: { apply($1, to: &$0) },
            make: { input in
                let f = input.feature
                let id = store.mint()
                store.ledger?.system(at: now, uid: f.uid, id: id)
                return SystemRecord(
                    id: id, uid: f.uid, name: f.name, description: f.description,
                    featureType: f.featureType, validFrom: now, sml: input.sml,
                    geometry: f.geometry, versions: 1)
            })
    }

    func apply(_ input: SystemInput, to s: inout SystemRecord) {
        s.uid = input.feature.uid
        s.name = input.feature.name
        s.description = input.feature.description
        s.featureType = input.feature.featureType
        s.sml = input.sml
        s.geometry = input.feature.geometry
        s.versions += 1
    }

    /// Reads a POST/PUT /systems body: SensorML JSON (type first everywhere it matters) or GeoJSON.
    func systemInputs() throws -> [SystemInput] {
        let ct = try contentType(allowed: [MediaType.smlJSON, MediaType.geoJSON, MediaType.json])
        let (items, base) = try jsonItems(malformedPrefix: "Invalid JSON: ")
        var out: [SystemInput] = []
        for (i, item) in items.enumerated() {
            let p = base(i)
            if ct == MediaType.smlJSON {
                do throws(BodyError) {
                    try TypeFirst.smlProcess(item, at: p)
                } catch {
                    throw NodeFailure.badRequest("Invalid payload: Invalid JSON: " + error.message)
                }
                let f = GeoFeature(
                    uid: item["uniqueId"]?.string ?? "", name: item["label"]?.string ?? "",
                    description: item["description"]?.string, featureType: item["definition"]?.string,
                    geometry: nil)
                try validateFeature(uid: f.uid, name: f.name)
                out.append(SystemInput(feature: f, sml: item))
            } else {
                out.append(SystemInput(feature: try geoJSONFeature(item, at: p), sml: nil))
            }
        }
        return out
    }

    /// AbstractFeatureHandler.validate.
    func validateFeature(uid: String, name: String) throws {
        if uid.isEmpty { throw NodeFailure.badRequest("Invalid payload: Missing feature UID") }
        if uid.count < 12 { throw NodeFailure.badRequest("Invalid payload: Feature UID should be at least 12 characters") }
        if name.isEmpty { throw NodeFailure.badRequest("Invalid payload: Missing feature name") }
    }

    struct GeoFeature {
        var uid: String
        var name: String
        var description: String?
        var featureType: String?
        var geometry: JSONValue?
    }

    /// A GeoJSON Feature; keys in any order (GeoJsonBindings buffers them).
    func geoJSONFeature(_ v: JSONValue, at p: GsonPath) throws -> GeoFeature {
        guard case .object = v else {
            throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Expected BEGIN_OBJECT but was \(gsonToken(v)) at path " + p.text)
        }
        if let t = v["type"], t.string != "Feature" {
            throw NodeFailure.badRequest("Invalid payload: Invalid JSON: The type of a GeoJSON feature must be 'Feature'")
        }
        let props = v["properties"]
        if let pr = props, pr.object == nil, !pr.isNull {
            throw NodeFailure.badRequest(
                "Invalid payload: Invalid JSON: Expected BEGIN_OBJECT but was \(gsonToken(pr)) at path " + p.key("properties").text)
        }
        let f = GeoFeature(
            uid: props?["uid"]?.string ?? "", name: props?["name"]?.string ?? "",
            description: props?["description"]?.string, featureType: props?["featureType"]?.string,
            geometry: v["geometry"].flatMap { $0.isNull ? nil : $0 })
        try validateFeature(uid: f.uid, name: f.name)
        return f
    }

    func systemResponse(_ s: SystemRecord) throws -> HTTPResponse {
        switch try responseFormat(default: MediaType.geoJSON) {
        case MediaType.geoJSON, MediaType.json:
            return json(jsonBytes { writeSystem(s, &$0) })
        case MediaType.smlJSON:
            var r = json(jsonBytes { writeSML(s, &$0) })
            r.contentType = MediaType.smlJSON
            return r
        case let f:
            throw NodeFailure.unsupportedFormat(f)
        }
    }

    func writeSystem(_ s: SystemRecord, _ w: inout JSONWriter) {
        w.beginObject()
        w.key("type"); w.string("Feature")
        w.key("id"); w.string(s.id)
        if let g = s.geometry { w.key("geometry"); w.value(g) }
        w.key("properties"); w.beginObject()
        w.key("uid"); w.string(s.uid)
        if let t = s.featureType { w.key("featureType"); w.string(t) }
        w.key("name"); w.string(s.name)
        if let d = s.description { w.key("description"); w.string(d) }
        writeValidTime(s.validFrom, &w)
        w.endObject()
        w.endObject()
    }

    /// The SensorML description as stored (outputs hidden, as the node does), with the node's id.
    func writeSML(_ s: SystemRecord, _ w: inout JSONWriter) {
        w.beginObject()
        if case .object(let m)? = s.sml {
            var wroteID = false
            for (k, x) in m where k != "outputs" {
                if k == "id" { w.key("id"); w.string(s.id); wroteID = true; continue }
                w.key(k); w.value(x)
                if k == "type", !m.contains(where: { $0.0 == "id" }) { w.key("id"); w.string(s.id); wroteID = true }
            }
            if !wroteID { w.key("id"); w.string(s.id) }
        } else {
            w.key("type"); w.string("PhysicalSystem")
            w.key("id"); w.string(s.id)
            if let t = s.featureType { w.key("definition"); w.string(t) }
            w.key("uniqueId"); w.string(s.uid)
            w.key("label"); w.string(s.name)
            if let d = s.description { w.key("description"); w.string(d) }
            writeValidTime(s.validFrom, &w)
        }
        w.endObject()
    }
}
