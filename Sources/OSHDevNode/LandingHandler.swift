// The API root's landing page, /conformance, and the read-only collections the node keeps empty.
import OSHCore

extension RequestHandler {
    func conformanceResource() throws -> HTTPResponse {
        guard method == "GET" else { throw NodeFailure.unsupported("Resource type is read-only") }
        return json(conformance())
    }

    /// procedures, properties, deployments, features, collections: none here.
    func emptyCollection(_ rest: [String]) throws -> HTTPResponse {
        guard method == "GET" else { throw NodeFailure.unsupported("Resource type is read-only") }
        if rest.isEmpty { return json(list { _ in }) }
        throw NodeFailure.notFound(rest[0])
    }

    func landingPage() -> [UInt8] {
        jsonBytes { w in
            w.beginObject()
            w.key("title"); w.string("osh-edge development node")
            w.key("description"); w.string("In-memory OGC API - Connected Systems server that follows OpenSensorHub's rules")
            w.key("links"); w.beginArray()
            for (rel, path, title) in [
                ("self", "/", "This document"), ("conformance", "/conformance", "Conformance"),
                ("systems", "/systems", "Systems"), ("datastreams", "/datastreams", "Datastreams"),
                ("controlstreams", "/controlstreams", "Control streams"),
                ("samplingFeatures", "/samplingFeatures", "Sampling features"),
            ] {
                w.beginObject()
                w.key("rel"); w.string(rel)
                w.key("title"); w.string(title)
                w.key("type"); w.string(MediaType.json)
                w.key("href"); w.string(apiRoot + path)
                w.endObject()
            }
            w.endArray()
            w.endObject()
        }
    }

    func conformance() -> [UInt8] {
        jsonBytes { w in
            w.beginObject()
            w.key("conformsTo"); w.beginArray()
            for c in [
                "http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/core",
                "http://www.opengis.net/spec/ogcapi-connectedsystems-1/1.0/conf/core",
                "http://www.opengis.net/spec/ogcapi-connectedsystems-1/1.0/conf/system-features",
                "http://www.opengis.net/spec/ogcapi-connectedsystems-1/1.0/conf/create-replace-delete",
                "http://www.opengis.net/spec/ogcapi-connectedsystems-2/1.0/conf/datastreams",
                "http://www.opengis.net/spec/ogcapi-connectedsystems-2/1.0/conf/controlstreams",
            ] {
                w.string(c)
            }
            w.endArray()
            w.endObject()
        }
    }
}
