// /datastreams: created within a system (keyed by output name), their schema as posted and as
// each format shows it, and the observation count.
import OSHCore

extension RequestHandler {
    func datastreams(_ rest: [String]) throws -> HTTPResponse {
        switch target(rest) {
        case .collection:
            return try onCollection(
                get: { json(page(store.datastreams) { d, w in writeDatastream(d, &w) }) },
                post: { throw NodeFailure.unsupported("Datastreams can only be created within a System resource") })
        case .item(let id):
            route = method + " /datastreams/{id}"
            return try onItem(
                id,
                get: {
                    guard let i = store.datastreamIndex(id) else { throw NodeFailure.notFound(id) }
                    return json(jsonBytes { writeDatastream(store.datastreams[i], &$0) })
                },
                put: {
                    guard let i = store.datastreamIndex(id) else { throw NodeFailure.notFound(id) }
                    let (item, at) = try replacementItem(allowed: [MediaType.json])
                    let input = try datastreamInput(item, at: at)
                    // osh-core's in-memory store refuses every replacement: its put() finds the datastream
                    // itself under the same system, output and validTime (InMemoryDataStreamStore.java:228).
                    if config.oshInMemoryStore {
                        throw NodeFailure(
                            status: 500,
                            message: "org.sensorhub.api.datastore.DataStoreException: "
                                + "Datastore already contains datastream for the same system, output and validTime")
                    }
                    // DataStreamTransactionHandler.update: no structure change once observations exist
                    // (names, types and order — DataComponentChecks.checkStructCompatible), answered 400 by
                    // BaseResourceHandler.update.
                    let d = store.datastreams[i]
                    if d.observationCount > 0, input.record.structureSignature != d.record.structureSignature {
                        throw NodeFailure.badRequest(
                            "Cannot update '\(id)': Cannot update the record structure or encoding "
                                + "of a datastream if it already has observations")
                    }
                    update(&store.datastreams[i], with: input)
                    return HTTPResponse(status: 204, contentType: nil)
                },
                delete: {
                    guard let i = store.datastreamIndex(id) else { throw NodeFailure.notFound(id) }
                    store.ledger?.deleted(at: now, outputName: store.datastreams[i].outputName, datastreamID: id)
                    store.datastreams.remove(at: i)
                    return HTTPResponse(status: 204, contentType: nil)
                })
        case .nested(let id, let name, let sub):
            route = method + " /datastreams/{id}/" + name
            guard ["observations", "schema", "stats"].contains(name) else { throw NodeFailure.invalidName(name) }
            guard let i = store.datastreamIndex(id) else { throw NodeFailure.notFound(id) }
            guard sub.isEmpty else { throw NodeFailure.badRequest("Invalid resource URI") }
            switch name {
            case "observations":
                return try onCollection(get: { try listObservations(of: [i]) }, post: { try postObservations(datastream: i) })
            case "schema":
                guard method == "GET" else { throw NodeFailure.unsupported("Resource type is read-only") }
                return try schemaResponse(store.datastreams[i])
            default:
                guard method == "GET" else { throw NodeFailure.unsupported("Resource type is read-only") }
                let d = store.datastreams[i]
                return json(
                    jsonBytes { w in
                        w.beginObject()
                        w.key("count"); w.int(d.observationCount)
                        w.endObject()
                    })
            }
        }
    }

    struct DatastreamInput {
        var name: String?
        var description: String?
        var outputName: String
        var obsFormat: String
        var record: DataComponent
        var encoding: BinaryEncoding?
        var encodingJSON: JSONValue?
        var schemaJSON: JSONValue
        var reader: RecordReader
    }

    func createDatastreams(systemID: String) throws -> HTTPResponse {
        _ = try contentType(allowed: [MediaType.json])
        let (items, base) = try jsonItems(malformedPrefix: "Invalid JSON: ")
        // Keyed by (system, outputName): re-registering returns the same datastream.
        return try upsert(
            items.count, read: { try datastreamInput(items[$0], at: base($0)) },
            into: \.datastreams, urlPrefix: "/datastreams/", id: \.id,
            matches: { $0.systemID == systemID && $0.outputName == $1.outputName },
            update: { update(&$0, with: $1) },
            make: { input in
                let id = store.mint()
                store.ledger?.datastream(at: now, outputName: input.outputName, id: id, systemID: systemID)
                return DatastreamRecord(
                    id: id, systemID: systemID,
                    name: input.name ?? input.outputName, description: input.description,
                    outputName: input.outputName, obsFormat: input.obsFormat, record: input.record,
                    encoding: input.encoding, encodingJSON: input.encodingJSON,
                    schemaJSON: input.schemaJSON, reader: input.reader, validFrom: now,
                    schemaVersions: 1, observations: BoundedLog(capacity: config.maxStoredObservations),
                    phenomenonTimes: BoundedLog(capacity: config.maxStoredObservations))
            })
    }

    func update(_ d: inout DatastreamRecord, with input: DatastreamInput) {
        if let n = input.name { d.name = n }
        d.description = input.description
        d.outputName = input.outputName
        if input.schemaJSON != d.schemaJSON {
            d.obsFormat = input.obsFormat
            d.record = input.record
            d.encoding = input.encoding
            d.encodingJSON = input.encodingJSON
            d.schemaJSON = input.schemaJSON
            d.reader = input.reader
            d.schemaVersions += 1
        }
    }

    /// DataStreamBindingJson.deserialize: keys in any order, `obsFormat` first in `schema`,
    /// om+json → `resultSchema`, swe+* → `recordSchema` + `recordEncoding`, `type` first in every
    /// SWE object, `outputName` required.
    func datastreamInput(_ v: JSONValue, at p: GsonPath) throws -> DatastreamInput {
        guard case .object(let members) = v else {
            throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Expected BEGIN_OBJECT but was \(gsonToken(v)) at path " + p.text)
        }
        var name: String?, description: String?, outputName: String?
        var schema: (format: String, record: DataComponent, encoding: BinaryEncoding?, encodingJSON: JSONValue?, json: JSONValue)?
        for (k, x) in members {
            switch k {
            case "name": name = try stringValue(x, p.key(k))
            case "description": description = try stringValue(x, p.key(k))
            case "outputName": outputName = try stringValue(x, p.key(k))
            case "schema": schema = try datastreamSchema(x, at: p.key(k))
            default: continue
            }
        }
        guard let outputName else { throw NodeFailure.badRequest("Invalid payload: Missing property: outputName") }
        guard let schema else { throw NodeFailure.badRequest("Invalid payload: Missing property: schema") }
        var record = schema.record
        record.name = outputName  // the node names the record after the output
        let reader: RecordReader
        do throws(SWEDecodingError) {
            reader = try RecordReader(record: record, encoding: schema.encoding)
        } catch {
            throw NodeFailure.badRequest("Invalid JSON: " + error.description)
        }
        return DatastreamInput(
            name: name, description: description, outputName: outputName, obsFormat: schema.format,
            record: record, encoding: schema.encoding, encodingJSON: schema.encodingJSON,
            schemaJSON: schema.json, reader: reader)
    }

    func datastreamSchema(
        _ v: JSONValue, at p: GsonPath
    ) throws
        -> (format: String, record: DataComponent, encoding: BinaryEncoding?, encodingJSON: JSONValue?, json: JSONValue)
    {
        guard case .object(let m) = v else {
            throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Expected BEGIN_OBJECT but was \(gsonToken(v)) at path " + p.text)
        }
        // "obsFormat must come first!"
        guard let first = m.first, first.0 == "obsFormat" else {
            throw NodeFailure.badRequest("Invalid payload: Missing property: schema/obsFormat")
        }
        let format = try stringValue(first.1, p.key("obsFormat"))
        let isOM = format == MediaType.omJSON
        guard isOM || format.hasPrefix("application/swe+") else { throw NodeFailure.unsupportedFormat(format) }
        var resultSchema: JSONValue?, recordSchema: JSONValue?, recordEncoding: JSONValue?
        do throws(BodyError) {
            for (k, x) in m.dropFirst() {
                switch (isOM, k) {
                case (true, "resultSchema"):
                    try TypeFirst.component(x, at: p.key(k)); resultSchema = x
                case (false, "recordSchema"):
                    try TypeFirst.component(x, at: p.key(k)); recordSchema = x
                case (false, "recordEncoding"):
                    try TypeFirst.encoding(x, at: p.key(k)); recordEncoding = x
                default:
                    continue
                }
            }
        } catch {
            throw NodeFailure.badRequest("Invalid JSON: " + error.message)
        }
        // What SchemaDecoder reads: only a BinaryEncoding matters to the decoders (others are
        // text/JSON/XML layouts the node converts); a swe+binary datastream without one falls
        // back to the node's default binary layout when observations come in.
        var decoderInput: [(String, JSONValue)]
        let binary = recordEncoding?["type"]?.string == "BinaryEncoding"
        if isOM {
            guard let rs = resultSchema else { throw NodeFailure.badRequest("Invalid payload: Missing property: schema/resultSchema") }
            decoderInput = [("obsFormat", .string(format)), ("resultSchema", rs)]
        } else {
            guard let rs = recordSchema else { throw NodeFailure.badRequest("Invalid payload: Missing property: schema/recordSchema") }
            decoderInput = [("obsFormat", .string(binary ? MediaType.sweBinary : MediaType.sweJSON)), ("recordSchema", rs)]
            if binary, let e = recordEncoding { decoderInput.append(("recordEncoding", e)) }
        }
        let decoded: DatastreamSchema
        do throws(SWEDecodingError) {
            decoded = try SchemaDecoder.datastreamSchema(.object(decoderInput), path: "")
        } catch {
            throw NodeFailure.badRequest("Invalid JSON: " + error.description)
        }
        return (format, decoded.record, decoded.encoding, recordEncoding, v)
    }

    func schemaResponse(_ d: DatastreamRecord) throws -> HTTPResponse {
        let format = try param("obsFormat") ?? responseFormat(default: MediaType.omJSON)
        let body: [UInt8]
        switch format {
        case MediaType.omJSON, MediaType.json:
            guard !d.binaryOnly else { throw NodeFailure.unsupportedFormat(format) }
            body = jsonBytes { w in
                w.beginObject()
                w.key("obsFormat"); w.string(MediaType.omJSON)
                w.key("resultSchema"); SWEJSON.write(DatastreamBody.resultSchema(d.record), to: &w)
                w.endObject()
            }
        case MediaType.sweJSON, MediaType.sweCSV, "application/swe+xml", MediaType.sweBinary:
            if format != MediaType.sweBinary && d.binaryOnly { throw NodeFailure.unsupportedFormat(format) }
            body = jsonBytes { w in
                w.beginObject()
                w.key("obsFormat"); w.string(format)
                w.key("recordSchema"); SWEJSON.write(d.record, to: &w)
                switch format {
                case MediaType.sweBinary:
                    w.key("recordEncoding")
                    if let e = d.encoding { SWEJSON.write(e, to: &w) } else { SWEJSON.write(BinaryEncoding.default(for: d.record), to: &w) }
                case MediaType.sweCSV:
                    w.key("recordEncoding"); w.beginObject()
                    w.key("type"); w.string("TextEncoding")
                    w.key("collapseWhiteSpaces"); w.bool(true)
                    w.key("decimalSeparator"); w.string(".")
                    w.key("tokenSeparator"); w.string(",")
                    w.key("blockSeparator"); w.string("\n")
                    w.endObject()
                case "application/swe+xml":
                    w.key("recordEncoding"); w.beginObject()
                    w.key("type"); w.string("XMLEncoding")
                    w.endObject()
                default:
                    break  // JSON encoding: omitted, as the node does
                }
                w.endObject()
            }
        default:
            throw NodeFailure.unsupportedFormat(format)
        }
        return json(body)
    }

    func writeDatastream(_ d: DatastreamRecord, _ w: inout JSONWriter) {
        w.beginObject()
        writeStreamHead(
            id: d.id, name: d.name, description: d.description, systemID: d.systemID,
            port: ("outputName", d.outputName), validFrom: d.validFrom, &w)
        // The ranges span what is held, whatever order it arrived in (a backlog replays old times last).
        if let p0 = d.observations.map(\.phenomenonTime).min(), let p1 = d.observations.map(\.phenomenonTime).max(),
            let r0 = d.observations.map(\.resultTime).min(), let r1 = d.observations.map(\.resultTime).max()
        {
            w.key("phenomenonTime"); w.beginArray(); w.isoTime(p0); w.isoTime(p1); w.endArray()
            w.key("resultTime"); w.beginArray(); w.isoTime(r0); w.isoTime(r1); w.endArray()
        }
        w.key("resultType"); w.string("record")
        w.key("live"); w.bool(false)
        w.key("formats"); w.beginArray()
        for f in d.formats { w.string(f) }
        w.endArray()
        w.endObject()
    }
}
