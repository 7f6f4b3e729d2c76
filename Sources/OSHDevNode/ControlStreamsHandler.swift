// /controlstreams: created within a system (keyed by input name), their schema and status reports.
// Commands and their WebSocket receivers: CommandsChannel.swift.
import OSHCore

extension RequestHandler {
    func controlStreams(_ rest: [String]) throws -> HTTPResponse {
        switch target(rest) {
        case .collection:
            return try onCollection(
                get: { json(page(store.controlStreams) { c, w in writeControlStream(c, &w) }) },
                post: { throw NodeFailure.unsupported("Command streams can only be created within a System resource") })
        case .item(let id):
            route = method + " /controlstreams/{id}"
            return try onItem(
                id,
                get: {
                    guard let i = store.controlStreamIndex(id) else { throw NodeFailure.notFound(id) }
                    return json(jsonBytes { writeControlStream(store.controlStreams[i], &$0) })
                },
                put: {
                    guard let i = store.controlStreamIndex(id) else { throw NodeFailure.notFound(id) }
                    let (item, at) = try replacementItem(allowed: [MediaType.json])
                    let input = try controlStreamInput(item, at: at)
                    apply(input, to: &store.controlStreams[i])
                    return HTTPResponse(status: 204, contentType: nil)
                },
                delete: {
                    guard let i = store.controlStreamIndex(id) else { throw NodeFailure.notFound(id) }
                    store.controlStreams.remove(at: i)
                    return HTTPResponse(status: 204, contentType: nil)
                })
        case .nested(let id, let name, let sub):
            route = method + " /controlstreams/{id}/" + name
            guard ["commands", "status", "schema"].contains(name) else { throw NodeFailure.invalidName(name) }
            guard let i = store.controlStreamIndex(id) else { throw NodeFailure.notFound(id) }
            // `…/commands/{cmdId}/status`: the reports held for one command (CommandStatusHandler,
            // nested under CommandHandler); list only — a POST there is 405 as on osh-core.
            if name == "commands", sub.count == 2, sub[1] == "status" {
                route = method + " /controlstreams/{id}/commands/{cmdId}/status"
                return try onCollection(
                    get: {
                        let reports = store.controlStreams[i].statuses.filter { $0.body["command@id"]?.string == sub[0] }
                        return json(
                            page(reports) { s, w in
                                w.beginObject()
                                w.key("id"); w.string(s.id)
                                if case .object(let m) = s.body { for (k, x) in m { w.key(k); w.value(x) } }
                                w.endObject()
                            })
                    }, post: { throw NodeFailure.unsupported("Observations can only be created within a Datastream") })
            }
            guard sub.isEmpty else { throw NodeFailure.badRequest("Invalid resource URI") }
            switch name {
            case "status":
                return try onCollection(
                    get: {
                        json(
                            page(Array(store.controlStreams[i].statuses)) { s, w in
                                w.beginObject()
                                w.key("id"); w.string(s.id)
                                if case .object(let m) = s.body { for (k, x) in m { w.key(k); w.value(x) } }
                                w.endObject()
                            })
                    }, post: { try postStatus(controlStream: i) })
            case "commands":
                return try onCollection(
                    get: { json(list { _ in }) },
                    post: { throw NodeFailure.unsupported("Sending commands is not supported by the development node") })
            default:
                guard method == "GET" else { throw NodeFailure.unsupported("Resource type is read-only") }
                let c = store.controlStreams[i]
                return json(
                    jsonBytes { w in
                        w.beginObject()
                        w.key("commandFormat"); w.string(MediaType.json)
                        if case .object(let m) = c.schemaJSON {
                            for (k, x) in m where k != "commandFormat" { w.key(k); w.value(x) }
                        }
                        w.endObject()
                    })
            }
        }
    }

    struct ControlStreamInput {
        var name: String?
        var description: String?
        var inputName: String
        var schema: JSONValue
        var parameters: JSONValue
    }

    func createControlStreams(systemID: String) throws -> HTTPResponse {
        _ = try contentType(allowed: [MediaType.json])
        let (items, base) = try jsonItems(malformedPrefix: "Invalid JSON: ")
        // Keyed by (system, inputName).
        return try upsert(
            items.count, read: { try controlStreamInput(items[$0], at: base($0)) },
            into: \.controlStreams, urlPrefix: "/controlstreams/", id: \.id,
            matches: { $0.systemID == systemID && $0.inputName == $1.inputName },
            update: { apply($1, to: &$0) },
            make: { input in
                ControlStreamRecord(
                    id: store.mint(), systemID: systemID, name: input.name ?? input.inputName,
                    description: input.description, inputName: input.inputName,
                    schemaJSON: input.schema, parameters: input.parameters,
                    statuses: BoundedLog(capacity: config.maxStoredCommands), validFrom: now)
            })
    }

    /// A PUT, or a re-POST matched by (system, inputName).
    func apply(_ input: ControlStreamInput, to c: inout ControlStreamRecord) {
        c.name = input.name ?? input.inputName
        c.description = input.description
        c.inputName = input.inputName
        c.schemaJSON = input.schema
        c.parameters = input.parameters
    }

    /// CommandStreamBindingJson / CommandStreamSchemaBindingJson: `inputName` required; in `schema`,
    /// `parametersSchema` (and result/feasibility schemas, encodings) type first.
    func controlStreamInput(_ v: JSONValue, at p: GsonPath) throws -> ControlStreamInput {
        guard case .object(let members) = v else {
            throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Expected BEGIN_OBJECT but was \(gsonToken(v)) at path " + p.text)
        }
        var name: String?, description: String?, inputName: String?, schema: JSONValue?
        for (k, x) in members {
            switch k {
            case "name": name = try stringValue(x, p.key(k))
            case "description": description = try stringValue(x, p.key(k))
            case "inputName": inputName = try stringValue(x, p.key(k))
            case "schema":
                let sp = p.key(k)
                guard case .object(let sm) = x else {
                    throw NodeFailure.badRequest(
                        "Invalid payload: Invalid JSON: Expected BEGIN_OBJECT but was \(gsonToken(x)) at path " + sp.text)
                }
                do throws(BodyError) {
                    for (sk, sx) in sm {
                        switch sk {
                        case "parametersSchema", "resultSchema", "feasibilityResultSchema":
                            try TypeFirst.component(sx, at: sp.key(sk))
                        case "paramsEncoding", "resultEncoding", "feasibilityResultEncoding":
                            try TypeFirst.encoding(sx, at: sp.key(sk))
                        default:
                            continue
                        }
                    }
                } catch {
                    throw NodeFailure.badRequest("Invalid JSON: " + error.message)
                }
                schema = x
            default:
                continue
            }
        }
        guard let inputName else { throw NodeFailure.badRequest("Invalid payload: Missing property: inputName") }
        guard let schema else { throw NodeFailure.badRequest("Invalid payload: Missing property: schema") }
        guard let parameters = schema["parametersSchema"] else {
            throw NodeFailure.badRequest("Invalid payload: Missing property: schema/parametersSchema")
        }
        do throws(SWEDecodingError) {
            _ = try SchemaDecoder.component(parameters, path: "/schema/parametersSchema")
        } catch {
            throw NodeFailure.badRequest("Invalid JSON: " + error.description)
        }
        return ControlStreamInput(name: name, description: description, inputName: inputName, schema: schema, parameters: parameters)
    }

    static let statusCodes: Set<String> = [
        "PENDING", "ACCEPTED", "REJECTED", "SCHEDULED", "UPDATED", "CANCELED",
        "EXECUTING", "FAILED", "COMPLETED",
    ]

    /// CommandStatusBindingJson: `command@id` (an id), `statusCode` (enum), times as ISO strings,
    /// `executionTime` as a "t1/t2" string.
    func postStatus(controlStream i: Int) throws -> HTTPResponse {
        _ = try contentType(allowed: [MediaType.json])
        let (items, base) = try jsonItems(malformedPrefix: "Invalid JSON: ")
        var accepted: [(String, JSONValue)] = []
        for (n, item) in items.enumerated() {
            let p = base(n)
            guard case .object(let m) = item else {
                throw NodeFailure.badRequest(
                    "Invalid payload: Invalid JSON: Expected BEGIN_OBJECT but was \(gsonToken(item)) at path " + p.text)
            }
            var commandID: String?, code: String?
            for (k, x) in m {
                switch k {
                case "command@id":
                    let s = try stringValue(x, p.key(k), prefix: "Invalid payload: Invalid JSON: ")
                    guard IDMinter.isWellFormed(s) else {
                        throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Invalid resource ID: " + s)
                    }
                    commandID = s
                case "statusCode":
                    let s = try stringValue(x, p.key(k), prefix: "Invalid payload: Invalid JSON: ")
                    guard Self.statusCodes.contains(s) else {
                        throw NodeFailure.badRequest(
                            "Invalid payload: Invalid JSON: No enum constant org.sensorhub.api.command.CommandStatusCode." + s)
                    }
                    code = s
                case "reportTime":
                    let s = try stringValue(x, p.key(k), prefix: "Invalid payload: Invalid JSON: ")
                    guard ISOTime.parse(s) != nil else {
                        throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Invalid ISO8601 date/time at " + p.key(k).text)
                    }
                case "executionTime":
                    let s = try stringValue(x, p.key(k), prefix: "Invalid payload: Invalid JSON: ")
                    let parts = s.split(separator: "/")
                    guard parts.count == 2, parts.allSatisfy({ ISOTime.parse(String($0)) != nil || $0 == "now" }) else {
                        throw NodeFailure.badRequest("Invalid payload: Invalid JSON: Invalid ISO8601 date/time at " + p.key(k).text)
                    }
                case "percentCompletion":
                    guard x.int != nil else {
                        throw NodeFailure.badRequest(
                            "Invalid payload: Invalid JSON: Expected an int but was \(gsonToken(x)) at path " + p.key(k).text)
                    }
                default:
                    continue
                }
            }
            guard commandID != nil else { throw NodeFailure.badRequest("Invalid payload: Missing property: command@id") }
            guard code != nil else { throw NodeFailure.internalError }  // CommandStatus asserts a non-null statusCode
            accepted.append((store.mint(), item))
        }
        guard !accepted.isEmpty else { throw NodeFailure.noData }
        var urls: [String] = []
        for (id, body) in accepted {
            store.controlStreams[i].statuses.append((id, body))
            urls.append("/status/" + id)
        }
        return created(urls)
    }

    func writeControlStream(_ c: ControlStreamRecord, _ w: inout JSONWriter) {
        w.beginObject()
        writeStreamHead(
            id: c.id, name: c.name, description: c.description, systemID: c.systemID,
            port: ("inputName", c.inputName), validFrom: c.validFrom, &w)
        w.key("live"); w.bool(false)
        w.key("async"); w.bool(true)
        w.key("formats"); w.beginArray(); w.string(MediaType.json); w.string(MediaType.sweJSON); w.endArray()
        w.endObject()
    }
}
