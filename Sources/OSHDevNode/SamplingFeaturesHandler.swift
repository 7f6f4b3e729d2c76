// /samplingFeatures (alias /fois): GeoJSON features, created only within a system.
import OSHCore

extension RequestHandler {
    func samplingFeatures(_ rest: [String], name: String) throws -> HTTPResponse {
        switch target(rest) {
        case .collection:
            route = method + " /samplingFeatures"
            return try onCollection(get: {
                json(featurePage(filteredByUIDOrID(store.features, uid: \.uid, id: \.id)))
            }, post: { throw NodeFailure.unsupported("Sampling features can only be created within a System resource") })
        case .item(let id):
            route = method + " /samplingFeatures/{id}"
            return try onItem(id, get: {
                guard let f = store.features.first(where: { $0.id == id }) else { throw NodeFailure.notFound(id) }
                return json(jsonBytes { writeFeature(f, &$0) })
            }, put: {
                guard let i = store.featureIndex(id) else { throw NodeFailure.notFound(id) }
                _ = try contentType(allowed: [MediaType.geoJSON, MediaType.json])
                let (items, base) = try jsonItems(malformedPrefix: "Invalid JSON: ")
                guard let item = items.first else { throw NodeFailure.noData }
                let f = try geoJSONFeature(item, at: base(0))
                store.features[i].uid = f.uid
                store.features[i].name = f.name
                store.features[i].description = f.description
                store.features[i].featureType = f.featureType
                store.features[i].geometry = f.geometry
                return HTTPResponse(status: 204, contentType: nil)
            }, delete: {
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
        var urls: [String] = []
        for (i, item) in items.enumerated() {
            let f = try geoJSONFeature(item, at: base(i))
            if let k = store.features.firstIndex(where: { $0.uid == f.uid }) {
                store.features[k].name = f.name
                store.features[k].description = f.description
                store.features[k].featureType = f.featureType
                store.features[k].geometry = f.geometry
                urls.append("/samplingFeatures/" + store.features[k].id)
            } else {
                let r = FeatureRecord(id: store.mint(), systemID: systemID, uid: f.uid, name: f.name,
                                      description: f.description, featureType: f.featureType, geometry: f.geometry)
                store.features.append(r)
                urls.append("/samplingFeatures/" + r.id)
            }
        }
        return created(urls)
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
