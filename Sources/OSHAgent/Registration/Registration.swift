import OSHCore

/// Sends CS API requests on the event loop.
public protocol NodeClient: AnyObject {
    func send(_ request: CSRequest, completion: @escaping (TransportOutcome) -> Void)
}

public struct RegistrationError: Error, Equatable, CustomStringConvertible {
    public var step: String
    public var status: Int
    public var detail: String
    /// True for failures worth retrying later (node unreachable, 5xx, 401/408/429).
    public var retryable: Bool { DeliveryVerdict.classify(TransportOutcome(status: status)) == .keep }

    public var description: String {
        if status == 0 { return "\(step): the node did not answer (\(detail)); check the URL and the network" }
        if status == 401 { return "\(step): HTTP 401 — the node refused the credentials; check the user name and password" }
        return "\(step): HTTP \(status): \(detail)"
    }
}

/// What registration leaves behind: the node's ids for this board (cached per server).
public struct RegistrationState: Sendable, Equatable {
    public var server: String
    public var uid: String
    public var systemID: String?
    /// Start of the system's validTime: kept across restarts while the description is unchanged.
    public var validFrom: Double
    public var descriptionHash: String
    public var foiID: String?
    /// outputName → (id, schema hash).
    public var datastreams: [String: (id: String, schemaHash: String)]

    public init(server: String, uid: String) {
        self.server = server
        self.uid = uid
        validFrom = 0
        descriptionHash = ""
        datastreams = [:]
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.server == b.server && a.uid == b.uid && a.systemID == b.systemID && a.validFrom == b.validFrom
            && a.descriptionHash == b.descriptionHash && a.foiID == b.foiID
            && a.datastreams.mapValues { $0.id + " " + $0.schemaHash } == b.datastreams.mapValues { $0.id + " " + $0.schemaHash }
    }

    // MARK: Cache file (JSON, written by our ordered writer, read by JSONValue)

    public func encoded() -> [UInt8] {
        let b = ByteBuffer()
        var w = JSONWriter(b)
        w.beginObject()
        w.key("server"); w.string(server)
        w.key("uid"); w.string(uid)
        if let s = systemID { w.key("systemID"); w.string(s) }
        w.key("validFrom"); w.number(validFrom)
        w.key("descriptionHash"); w.string(descriptionHash)
        if let f = foiID { w.key("foiID"); w.string(f) }
        w.key("datastreams"); w.beginArray()
        for name in datastreams.keys.sorted() {
            guard let d = datastreams[name] else { continue }
            w.beginObject()
            w.key("outputName"); w.string(name)
            w.key("id"); w.string(d.id)
            w.key("schemaHash"); w.string(d.schemaHash)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        b.append(UInt8(ascii: "\n"))
        return b.array
    }

    /// Nil for a file that is not ours or is damaged (then registration starts afresh).
    public static func decode(_ bytes: [UInt8]) -> RegistrationState? {
        guard let v = try? JSONValue.parse(bytes), let server = v["server"]?.string, let uid = v["uid"]?.string else { return nil }
        var s = RegistrationState(server: server, uid: uid)
        s.systemID = v["systemID"]?.string
        s.validFrom = v["validFrom"]?.double ?? 0
        s.descriptionHash = v["descriptionHash"]?.string ?? ""
        s.foiID = v["foiID"]?.string
        for d in v["datastreams"]?.array ?? [] {
            if let n = d["outputName"]?.string, let id = d["id"]?.string {
                s.datastreams[n] = (id, d["schemaHash"]?.string ?? "")
            }
        }
        return s
    }

    /// File name for a server's cache: ids minted by node A are never sent to node B.
    public static func fileName(server: String, uid: String) -> String {
        "ids-" + String(Hex.string(SHA256.hash(Array((server + "\n" + uid).utf8))).prefix(16)) + ".json"
    }
}

/// Idempotent registration: verify the node, find or create the system by UID,
/// the sampling feature, then each datastream by outputName. Cached ids are re-verified.
public final class Registrar {
    public let client: NodeClient
    public let builder: CSRequestBuilder
    public let identity: SystemIdentity
    public let specs: [OutputSpec]
    public let format: ScalarFormat
    private let now: () -> Double
    public private(set) var state: RegistrationState
    /// Requests made by the last run, for tests and the status line.
    public private(set) var created: [String] = []
    /// What the last run decided off the plain path, a line each, for the log (once per text): a
    /// datastream the node would not update, and which way out was taken.
    public private(set) var notices: [String] = []

    public init(
        client: NodeClient, builder: CSRequestBuilder, server: String, identity: SystemIdentity,
        specs: [OutputSpec], format: ScalarFormat, cached: RegistrationState?, now: @escaping () -> Double
    ) {
        self.client = client
        self.builder = builder
        self.identity = identity
        self.specs = specs
        self.format = format
        self.now = now
        if let c = cached, c.server == server, c.uid == identity.uid {
            state = c
        } else {
            state = RegistrationState(server: server, uid: identity.uid)
        }
    }

    /// The ids per spec index (nil where not registered).
    public var datastreamIDs: [String?] { specs.map { state.datastreams[$0.outputName]?.id } }

    public func register(_ done: @escaping (Result<RegistrationState, RegistrationError>) -> Void) {
        created.removeAll()
        notices.removeAll()
        send(builder.landingPage(), step: "reaching the node's API root") { [self] r in
            guard case .success = r else { return done(r.map { _ in state }) }
            system { [self] r in
                guard case .success = r else { return done(r.map { _ in state }) }
                feature { [self] r in
                    guard case .success = r else { return done(r.map { _ in state }) }
                    datastreams { [self] r in done(r.map { _ in state }) }
                }
            }
        }
    }

    /// Re-registers one datastream whose id the node no longer knows.
    public func reregister(output index: Int, _ done: @escaping (Result<String, RegistrationError>) -> Void) {
        let spec = specs[index]
        state.datastreams[spec.outputName] = nil
        // The node may have forgotten everything (restarted without a database): start from the system.
        register { [self] r in
            switch r {
            case .success(let s):
                if let id = s.datastreams[spec.outputName]?.id {
                    done(.success(id))
                } else {
                    done(.failure(RegistrationError(step: "re-registering \(spec.outputName)", status: 0, detail: "no id")))
                }
            case .failure(let e): done(.failure(e))
            }
        }
    }

    // MARK: Steps

    private typealias Step = (Result<TransportOutcome, RegistrationError>) -> Void

    private func send(_ r: CSRequest, step: String, accept: ClosedRange<Int> = 200...299, _ k: @escaping Step) {
        client.send(r) { resp in
            if accept.contains(resp.status) { return k(.success(resp)) }
            let detail = resp.transportError ?? NodeError.parse(resp.body).summary
            k(.failure(RegistrationError(step: step, status: resp.status, detail: detail)))
        }
    }

    private func systemBody(validFrom: Double) -> [UInt8] {
        SystemBody.bytes(
            SystemDescription(
                uid: identity.uid, label: identity.label, serial: identity.serial,
                validFrom: validFrom, outputs: specs))
    }

    private func system(_ k: @escaping Step) {
        // The description's hash leaves validTime out, so an unchanged description keeps its start.
        let hash = Hex.string(SHA256.hash(systemBody(validFrom: 0)))
        let unchanged = hash == state.descriptionHash && state.validFrom > 0
        if !unchanged {
            state.validFrom = now()
            state.descriptionHash = hash
        }
        let body = systemBody(validFrom: state.validFrom)
        let createOrUpdate: (String?) -> Void = { [self] existing in
            if let id = existing {
                state.systemID = id
                if unchanged { return k(.success(TransportOutcome(status: 200))) }
                send(builder.updateSystem(id: id, body: body), step: "updating system \(identity.uid)", k)
            } else {
                state.datastreams.removeAll()
                state.foiID = nil
                send(builder.createSystem(body: body), step: "creating system \(identity.uid)") { [self] r in
                    guard case .success(let resp) = r else { return k(r) }
                    guard let id = CSResponse.resourceID(fromLocation: resp.location) else {
                        return k(.failure(RegistrationError(step: "creating system", status: resp.status, detail: "no Location header")))
                    }
                    state.systemID = id
                    created.append("system")
                    k(r)
                }
            }
        }
        if let cached = state.systemID {
            client.send(builder.getSystem(id: cached)) { [self] resp in
                if resp.status == 200 { return createOrUpdate(cached) }
                if resp.status == 404 { state.systemID = nil; return lookupSystem(createOrUpdate, k) }
                // osh-core's in-memory store answers 500 for an id past its newest (a node restarted
                // empty: InMemoryBaseFeatureStore.entryStream dereferences a null entry) where it means
                // 404. The board's UID decides: found, it is the board; not found, the board is new there.
                if (500...599).contains(resp.status) {
                    return lookupSystem(
                        { [self] id in
                            if id != cached { state.systemID = nil }
                            createOrUpdate(id)
                        }, k)
                }
                k(
                    .failure(
                        RegistrationError(
                            step: "checking system \(cached)", status: resp.status,
                            detail: resp.transportError ?? NodeError.parse(resp.body).summary)))
            }
        } else {
            lookupSystem(createOrUpdate, k)
        }
    }

    private func lookupSystem(_ then: @escaping (String?) -> Void, _ k: @escaping Step) {
        send(builder.findSystem(uid: identity.uid), step: "looking up system \(identity.uid)") { r in
            guard case .success(let resp) = r else { return k(r) }
            then(Registrar.firstID(resp.body))
        }
    }

    private func feature(_ k: @escaping Step) {
        guard let sys = state.systemID else { return k(.success(TransportOutcome(status: 200))) }
        let uid = SamplingFeature.foiUID(forSystemUID: identity.uid)
        let create: () -> Void = { [self] in
            send(
                builder.createSamplingFeature(systemID: sys, body: SamplingFeature.bytes(systemUID: identity.uid)),
                step: "creating sampling feature \(uid)"
            ) { [self] r in
                guard case .success(let resp) = r else { return k(r) }
                state.foiID = CSResponse.resourceID(fromLocation: resp.location)
                created.append("samplingFeature")
                k(r)
            }
        }
        send(builder.findSamplingFeature(uid: uid), step: "looking up sampling feature \(uid)") { [self] r in
            guard case .success(let resp) = r else { return k(r) }
            if let id = Registrar.firstID(resp.body) { state.foiID = id; return k(r) }
            create()
        }
    }

    private func datastreams(_ k: @escaping Step) {
        guard let sys = state.systemID else { return k(.success(TransportOutcome(status: 200))) }
        send(builder.listDatastreams(systemID: sys, limit: 1000), step: "listing datastreams") { [self] r in
            guard case .success(let resp) = r else { return k(r) }
            var onNode: [String: String] = [:]
            for item in Registrar.items(resp.body) {
                if let id = item["id"]?.string, let name = item["outputName"]?.string { onNode[name] = id }
            }
            next(0, onNode, k)
        }
    }

    private func next(_ i: Int, _ onNode: [String: String], _ k: @escaping Step) {
        guard i < specs.count, let sys = state.systemID else { return k(.success(TransportOutcome(status: 200))) }
        let spec = specs[i]
        let body = Array(DatastreamBody.string(spec, systemLabel: identity.label, scalarFormat: format).utf8)
        let hash = Hex.string(SHA256.hash(body))
        let step = "registering datastream \(spec.outputName)"
        if let id = onNode[spec.outputName] {
            if state.datastreams[spec.outputName]?.id == id, state.datastreams[spec.outputName]?.schemaHash == hash {
                return next(i + 1, onNode, k)
            }
            // On the node but new to us, or its schema changed: update it in place.
            client.send(builder.updateDatastream(id: id, body: body)) { [self] resp in
                if (200...299).contains(resp.status) {
                    state.datastreams[spec.outputName] = (id, hash)
                    return next(i + 1, onNode, k)
                }
                let refusal = RegistrationError(
                    step: step, status: resp.status,
                    detail: resp.transportError ?? NodeError.parse(resp.body).summary)
                // The node went away or refuses us: the whole registration is retried.
                if [0, 401, 403, 408, 429].contains(resp.status) { return k(.failure(refusal)) }
                refusedUpdate(i, id: id, body: body, hash: hash, refusal: refusal, onNode, k)
            }
        } else {
            send(builder.createDatastream(systemID: sys, body: body), step: step) { [self] r in
                guard case .success(let resp) = r else { return k(r) }
                guard let id = CSResponse.resourceID(fromLocation: resp.location) else {
                    return k(.failure(RegistrationError(step: step, status: resp.status, detail: "no Location header")))
                }
                state.datastreams[spec.outputName] = (id, hash)
                created.append("datastream:" + spec.outputName)
                next(i + 1, onNode, k)
            }
        }
    }

    /// The node would not update datastream `id` in place: osh-core refuses a changed structure
    /// once observations exist (DataStreamTransactionHandler.update), and its in-memory store
    /// refuses every update (InMemoryDataStreamStore.put: "Datastore already contains datastream
    /// for the same system, output and validTime"). One datastream must not stop the others:
    /// 1. if the node's structure is compatible with ours — the same names, types and order at
    ///    every depth, osh-core's own rule (DataComponentChecks.checkStructCompatible) — keep it:
    ///    our observations parse against it;
    /// 2. otherwise create it again (POST): osh-core then adds a new datastream with a later
    ///    validTime, as it does itself when an output's structure changes
    ///    (SystemTransactionHandler.addOrUpdateDataStream), and the old one keeps its observations;
    /// 3. if the node refuses that too, this output waits for the next registration.
    private func refusedUpdate(
        _ i: Int, id: String, body: [UInt8], hash: String, refusal: RegistrationError,
        _ onNode: [String: String], _ k: @escaping Step
    ) {
        let name = specs[i].outputName
        let said = "the node would not update datastream \(name) (\(id)) (HTTP \(refusal.status): \(refusal.detail))"
        let ours = (try? JSONValue.parse(body))?["schema"].flatMap { try? SchemaDecoder.datastreamSchema($0) }
        let obsFormat = ours?.obsFormat ?? format.mediaType
        // The node going away now fails the whole registration, to be retried like any outage.
        let away = { (r: TransportOutcome) in
            RegistrationError(step: refusal.step, status: 0, detail: r.transportError ?? "no answer")
        }
        client.send(builder.datastreamSchema(id: id, obsFormat: obsFormat)) { [self] resp in
            if resp.status == 0 { return k(.failure(away(resp))) }
            let theirs = resp.status == 200 ? try? SchemaDecoder.datastreamSchema(json: resp.body) : nil
            if let ours, let theirs, ours.record.structureSignature == theirs.record.structureSignature {
                state.datastreams[name] = (id, hash)
                notices.append(said + "; its structure is the same as ours (fields, types and order), so \(name) keeps streaming into it")
                return next(i + 1, onNode, k)
            }
            guard let sys = state.systemID else { return k(.success(TransportOutcome(status: 200))) }
            client.send(builder.createDatastream(systemID: sys, body: body)) { [self] resp in
                if resp.status == 0 { return k(.failure(away(resp))) }
                if (200...299).contains(resp.status), let newID = CSResponse.resourceID(fromLocation: resp.location) {
                    state.datastreams[name] = (newID, hash)
                    if newID != id {
                        created.append("datastream:" + name)
                        notices.append(
                            said + "; its structure differs from ours, so a new datastream \(newID) was created "
                                + "(the old one keeps its observations)")
                    } else {
                        notices.append(said + "; created again, the node kept the same datastream")
                    }
                    return next(i + 1, onNode, k)
                }
                state.datastreams[name] = nil
                notices.append(
                    said + "; its structure differs from ours and the node refused a new one too (HTTP \(resp.status): "
                        + NodeError.parse(resp.body).summary + "): \(name) is not streamed until the next registration "
                        + "(a restart, or the reregister command); the other outputs are")
                next(i + 1, onNode, k)
            }
        }
    }

    // MARK: Response parsing

    /// Members of a collection response: `{"items":[…]}`, a GeoJSON `{"features":[…]}`, or a bare array.
    static func items(_ body: [UInt8]) -> [JSONValue] {
        guard let v = try? JSONValue.parse(body) else { return [] }
        if let a = v["items"]?.array ?? v["features"]?.array { return a }
        return v.array ?? []
    }

    static func firstID(_ body: [UInt8]) -> String? { items(body).first?["id"]?.string }
}
