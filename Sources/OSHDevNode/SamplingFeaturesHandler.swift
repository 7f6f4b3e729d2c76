// /samplingFeatures (alias /fois): GeoJSON features, created only within a system.
import OSHCore

extension RequestHandler {
    func samplingFeatures(_ rest: [String], name: String) throws -> HTTPResponse {
        switch target(rest) {
        case .collection:
            route = method + " /samplingFeatures"
            return try onCollection(
                get: {
                    json(featurePage(filteredByUIDOrID(store.features, uid: \.uid, id: \.id)))
                }, post: { throw NodeFailure.unsupported("Sampling features can only be created within a System resource") })
        case .item(let id):
            route = method + " /samplingFeatures/{id}"
            return try onItem(
                id,
                get: {
                    guard let f = store.features.first(where: { $0.id == id }) else { throw NodeFailure.notFound(id) }
                    return json(jsonBytes { writeFeature(f, &$0) })
                },
                put: {
                    guard let i = store.featureIndex(id) else { throw NodeFailure.notFound(id) }
                    let (item, at) = try replacementItem(allowed: [MediaType.geoJSON, MediaType.json])
                    let f = try geoJSONFeature(item, at: at)
                    apply(f, to: &store.features[i])
                    return HTTPResponse(status: 204, contentType: nil)
                },
                delete: {
                    guard let i = store.featureIndex(id) else { throw NodeFailure.notFound(id) }
                    store.features.remove(at: i)
                    return HTTPResponse(status: 204, contentType: nil)
                })
        case .nested(let id, let sub, _):
            route = method + " /samplingFeatures/{id}/" + sub
            throw store.featureIndex(id) == nil ? NodeFailure.notFound(id) : NodeFailure.invalidName(sub)
        }
    }

    func createFeatures(systemID: String) throws -> HTTPResponse {
        _ = try contentType(allowed: [MediaType.geoJSON, MediaType.json])
        let (items, base) = try jsonItems(malformedPrefix: "Invalid JSON: ")
        return try upsert(
            items.count, read: { try geoJSONFeature(items[$0], at: base($0)) },
            into: \.features, urlPrefix: "/samplingFeatures/", id: \.id,
            matches: { $0.uid == $1.uid }, update: { apply($1, to: &$0) },
            make: { f in
                FeatureRecord(
                    id: store.mint(), systemID: systemID, uid: f.uid, name: f.name,
                    description: f.description, featureType: f.featureType, geometry: f.geometry)
            })
    }

    /// A PUT, or a re-POST matched by UID.
    func apply(_ f: GeoFeature, to r: inout FeatureRecord) {
        r.uid = f.uid
        r.name = f.name
        r.description = f.description
        r.featureType = f.featureType
        r.geometry = f.geometry
    }

    func featurePage(_ items: [FeatureRecord]) -> [UInt8] { featureCollection(items) { f, w in writeFeature(f, &w) } }

    func writeFeature(_ f: FeatureRecord, _ w: inout JSONWriter) {
        w.beginObject()
        w.key("type"); w.string("Feature")
        w.key("id"); w.string(f.id)
        w.key("geometry")
        if let g = f.geometry { w.value(g) } else { w.null() }
        w.key("properties"); w.beginObject()
        w.key("uid"); w.string(f.uid)
        if let t = f.featureType { w.key("featureType"); w.string(t) }
        w.key("name"); w.string(f.name)
        if let d = f.description { w.key("description"); w.string(d) }
        w.endObject()
        w.endObject()
    }
}
