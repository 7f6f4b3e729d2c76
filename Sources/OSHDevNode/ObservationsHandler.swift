// Observations: POST …/datastreams/{id}/observations in O&M JSON, swe+json or swe+binary, stored
// in the datastream's bounded log; /observations/{id}; listing is ReadSideObservations.swift.
import OSHCore

extension RequestHandler {
    func observations(_ rest: [String]) throws -> HTTPResponse {
        switch target(rest) {
        case .collection:
            return try onCollection(
                get: { try listObservations(of: Array(store.datastreams.indices)) },
                post: { throw NodeFailure.unsupported("Observations can only be created within a Datastream") })
        case .item(let id):
            route = method + " /observations/{id}"
            return try onItem(
                id,
                get: {
                    for d in store.datastreams {
                        if let o = d.observations.first(where: { $0.id == id }) {
                            return json(jsonBytes { writeObservation(o, d, &$0) })
                        }
                    }
                    throw NodeFailure.notFound(id)
                },
                delete: {
                    for k in store.datastreams.indices {
                        if let j = store.datastreams[k].observations.firstIndex(where: { $0.id == id }) {
                            store.datastreams[k].observations.remove(at: j)
                            return HTTPResponse(status: 204, contentType: nil)
                        }
                    }
                    throw NodeFailure.notFound(id)
                })
        case .nested(_, let name, _):
            route = method + " /observations/{id}/" + name
            throw NodeFailure.invalidName(name)
        }
    }

    /// Filters, order, paging and formats: ReadSideObservations.swift.
    func listObservations(of indices: [Int]) throws -> HTTPResponse { try readSideListObservations(of: indices) }

    func postObservations(datastream i: Int) throws -> HTTPResponse {
        if case .rejectObservations(let status) = store.mode {
            throw NodeFailure(
                status: status,
                message: status == 400
                    ? "Ingest Error: observations rejected by the development node"
                    : statusMessage(status))
        }
        if case .acceptObservationsThenReject(let remaining, let status) = store.mode {
            guard remaining > 0 else { throw NodeFailure(status: status, message: statusMessage(status)) }
            store.mode = .acceptObservationsThenReject(remaining: remaining - 1, status: status)
        }
        guard let ct = req.contentType else { throw NodeFailure.badRequest("Missing content type") }
        var foiFromQuery: String?
        if let foi = param("foi") {
            guard IDMinter.isWellFormed(foi) else { throw NodeFailure.notFound(foi) }
            guard store.featureIndex(foi) != nil else { throw NodeFailure.badRequest("Invalid FOI ID") }
            foiFromQuery = foi
        }
        let d = store.datastreams[i]
        var records: [SWERecordValue]
        switch ct {
        case MediaType.omJSON, MediaType.json:
            guard !d.binaryOnly else { throw NodeFailure.unsupportedFormat(ct) }
            records = try omObservations(d)
        case MediaType.sweJSON:
            guard !d.binaryOnly else { throw NodeFailure.unsupportedFormat(ct) }
            records = [try sweJSONRecord(d)]
        case MediaType.sweBinary:
            records = try sweBinaryRecords(d)
        default:
            throw NodeFailure.unsupportedFormat(ct)
        }
        guard !records.isEmpty else { throw NodeFailure.noData }
        for r in records {
            if let foi = r.foiID, store.featureIndex(foi) == nil { throw NodeFailure.badRequest("Ingest Error: Invalid FOI ID") }
        }
        var urls: [String] = []
        let timeLeaf = Self.observationTimePath(d.record)
        let now = wallClock()
        for var r in records {
            let t: Double
            if let pt = r.phenomenonTime {
                t = pt
            } else if let path = timeLeaf, case .time(let x)? = r[path], x.isFinite {
                t = x
            } else {
                t = now  // no time field: the node stamps its own clock
            }
            r.phenomenonTime = t
            if r.resultTime == nil { r.resultTime = t }
            if r.foiID == nil { r.foiID = foiFromQuery }
            let o = StoredObservation(
                id: store.mint(), phenomenonTime: t, resultTime: r.resultTime ?? t,
                foiID: r.foiID, record: r)
            store.datastreams[i].observations.append(o)
            store.datastreams[i].observationCount += 1
            store.datastreams[i].phenomenonTimes.append(t)
            store.ledger?.observation(arrival: now, outputName: d.outputName, phenomenonTime: t, datastreamID: d.id)
            urls.append("/observations/" + o.id)
        }
        return created(urls)
    }

    /// The leaf path of the record's observation time (SamplingTime / PhenomenonTime), if any.
    static func observationTimePath(_ record: DataComponent) -> String? {
        SchemaWalker.leaves(of: record).first { $0.component.isObservationTime }?.path
    }

    /// ObsBindingOmJson.deserialize: one object or an array; `phenomenonTime` with a zone offset;
    /// `foi@id` must be an id; `result` fields in schema order.
    func omObservations(_ d: DatastreamRecord) throws -> [SWERecordValue] {
        let (items, base) = try jsonItems(malformedPrefix: "Invalid payload: Invalid JSON: ")
        var out: [SWERecordValue] = []
        for (i, item) in items.enumerated() {
            let p = base(i)
            guard case .object(let m) = item else {
                throw NodeFailure.badRequest(
                    "Invalid payload: Invalid JSON: Expected BEGIN_OBJECT but was \(gsonToken(item)) at path " + p.text)
            }
            var hasTime = false, hasResult = false
            for (k, x) in m {
                switch k {
                case "phenomenonTime", "resultTime":
                    guard case .string(let s) = x else {
                        if case .number = x {
                            throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Invalid ISO8601 date/time at " + p.key(k).text)
                        }
                        throw NodeFailure.badRequest(
                            "Invalid payload: Invalid JSON: Expected a string but was \(gsonToken(x)) at path " + p.key(k).text)
                    }
                    guard ISOTime.parse(s) != nil else {
                        throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Invalid ISO8601 date/time at " + p.key(k).text)
                    }
                    if k == "phenomenonTime" { hasTime = true }
                case "foi@id":
                    guard let s = x.string, IDMinter.isWellFormed(s) else { throw NodeFailure.badRequest("Invalid FOI ID") }
                case "result":
                    hasResult = true
                default:
                    continue
                }
            }
            // osh-core builds the observation with null phenomenonTime/result and fails its own
            // assertion (NullPointerException), which the servlet answers as 500.
            guard hasTime, hasResult else { throw NodeFailure.internalError }
            do throws(SWEDecodingError) {
                out.append(try d.reader.decodeObservation(item, path: p.text == "$" ? "" : "/" + String(i)))
            } catch {
                throw NodeFailure.badRequest("Invalid payload: Invalid JSON: " + Self.readerMessage(error))
            }
        }
        return out
    }

    /// ObsBindingSweCommon with JsonDataParserGson: exactly one record object per request.
    func sweJSONRecord(_ d: DatastreamRecord) throws -> SWERecordValue {
        let v = try jsonBody { l, c, _ in "Invalid payload: Malformed JSON at line \(l) column \(c) path $" }
        guard case .object = v else {
            let (l, c) = firstTokenPosition(req.body)
            throw NodeFailure.badRequest(
                "Invalid payload: java.lang.IllegalStateException: Expected BEGIN_OBJECT but was \(gsonToken(v)) at line \(l) column \(c) path $"
            )
        }
        do throws(SWEDecodingError) {
            return try d.reader.decodeRecord(v)
        } catch {
            throw NodeFailure.badRequest("Invalid payload: " + Self.readerMessage(error))
        }
    }

    /// swe+binary: records back to back until the end of the body, in the datastream's
    /// BinaryEncoding or, without one, the node's default (raw, big-endian, each scalar's type).
    func sweBinaryRecords(_ d: DatastreamRecord) throws -> [SWERecordValue] {
        guard !req.body.isEmpty else { throw NodeFailure.noData }
        let reader: RecordReader
        if d.encoding != nil {
            reader = d.reader
        } else {
            do throws(SWEDecodingError) {
                reader = try RecordReader(record: d.record, encoding: BinaryEncoding.default(for: d.record))
            } catch {
                throw NodeFailure.unsupportedFormat(MediaType.sweBinary)
            }
        }
        let decoded = reader.decodeBinary(req.body)
        if let e = decoded.error { throw NodeFailure.badRequest("Invalid payload: " + e.description) }
        return decoded.records
    }

    /// A reader error in the node's words: field-order errors exactly as JsonDataParserGson words them.
    static func readerMessage(_ e: SWEDecodingError) -> String {
        switch e {
        case .record(let path, let message):
            if message.hasPrefix("Expected field") { return message }
            return message + " at " + GsonPath.fromPointer(path).text
        default:
            return e.description
        }
    }

    /// An O&M JSON observation as the node lists it.
    func writeObservation(_ o: StoredObservation, _ d: DatastreamRecord, _ w: inout JSONWriter) {
        w.beginObject()
        w.key("id"); w.string(o.id)
        w.key("datastream@id"); w.string(d.id)
        if let f = o.foiID { w.key("foi@id"); w.string(f) }
        w.key("phenomenonTime"); w.isoTime(o.phenomenonTime)
        w.key("resultTime"); w.isoTime(o.resultTime)
        w.key("result")
        if d.binaryOnly {
            w.string("Compressed binary result not shown in JSON")
        } else {
            let values = Dictionary(o.record.fields.map { ($0.path, $0.value) }, uniquingKeysWith: { a, _ in a })
            let root = d.record
            switch root.kind {
            case .record, .vector: ResultWriter.group(root, path: "", values, omitTimes: true, &w)
            default: ResultWriter.component(root, path: "/", values, &w)
            }
        }
        w.endObject()
    }
}

/// Writes decoded values back as an O&M `result` object, nested as the schema nests them.
enum ResultWriter {
    static func group(_ c: DataComponent, path: String, _ values: [String: SWEValue], omitTimes: Bool, _ w: inout JSONWriter) {
        w.beginObject()
        for child in c.children {
            if omitTimes && child.isObservationTime { continue }
            let name = child.name ?? ""
            w.key(name)
            component(child, path: path + "/" + name, values, &w)
        }
        w.endObject()
    }

    static func component(_ c: DataComponent, path: String, _ values: [String: SWEValue], _ w: inout JSONWriter) {
        switch c.kind {
        case .record, .vector:
            group(c, path: path, values, omitTimes: false, &w)
        default:
            value(values[path] ?? .absent, c, &w)
        }
    }

    static func value(_ v: SWEValue, _ c: DataComponent, _ w: inout JSONWriter) {
        switch v {
        case .time(let t):
            if case .time(let tc) = c.kind, tc.isISO { w.isoTime(t) } else { w.number(t) }
        case .number(let d): w.number(d)
        case .count(let n): w.int(n)
        case .bool(let b): w.bool(b)
        case .text(let s): w.string(s)
        case .block: w.string("Compressed binary result not shown in JSON")
        case .absent: w.null()
        case .array(let items):
            let element: DataComponent
            if case .array(let a) = c.kind { element = a.elementType } else { element = c }
            w.beginArray()
            for x in items { value(x, element, &w) }
            w.endArray()
        case .record(let r):
            let vs = Dictionary(r.fields.map { ($0.path, $0.value) }, uniquingKeysWith: { a, _ in a })
            component(c, path: "", vs, &w)
        case .choice(let item, let r):
            w.beginObject()
            w.key(item)
            let vs = Dictionary(r.fields.map { ($0.path, $0.value) }, uniquingKeysWith: { a, _ in a })
            if let ic = c.children.first(where: { $0.name == item }) {
                switch ic.kind {
                case .record, .vector: group(ic, path: "", vs, omitTimes: false, &w)
                default: value(vs["/"] ?? .absent, ic, &w)
                }
            } else {
                w.null()
            }
            w.endObject()
        }
    }
}
