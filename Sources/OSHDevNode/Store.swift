// The node's in-memory database. One instance per DevNode, touched only under the node's lock.
import OSHCore

struct SystemRecord {
    var id: String
    var uid: String
    var name: String
    var description: String?
    var featureType: String?
    var validFrom: Double
    /// The SensorML body as posted (application/sml+json), when it came that way.
    var sml: JSONValue?
    /// The GeoJSON geometry as posted, when it came as GeoJSON.
    var geometry: JSONValue?
    /// 1 on creation, +1 per re-POST or PUT (OSH adds a history version).
    var versions: Int
}

struct FeatureRecord {
    var id: String
    var systemID: String
    var uid: String
    var name: String
    var description: String?
    var featureType: String?
    var geometry: JSONValue?
}

struct StoredObservation {
    var id: String
    var phenomenonTime: Double
    var resultTime: Double
    var foiID: String?
    var record: SWERecordValue
}

struct DatastreamRecord {
    var id: String
    var systemID: String
    var name: String
    var description: String?
    var outputName: String
    var obsFormat: String
    /// The full record (observation time field included), named after `outputName`.
    var record: DataComponent
    /// The native BinaryEncoding, when the schema came with one.
    var encoding: BinaryEncoding?
    /// The `recordEncoding` object as posted (echoed by GET …/schema).
    var encodingJSON: JSONValue?
    /// The `schema` object as posted, to tell a changed schema from a re-registration.
    var schemaJSON: JSONValue
    var reader: RecordReader
    var validFrom: Double
    var schemaVersions: Int
    /// The newest `maxStoredObservations`; older ones are evicted and counted.
    var observations: BoundedLog<StoredObservation>
    /// Every observation accepted, evicted or not.
    var observationCount = 0
    /// Their phenomenon times, as many as `observations` keeps (but not removed by a DELETE).
    var phenomenonTimes: BoundedLog<Double>

    /// True when a Block (compressed payload) sits in the binary encoding: only swe+binary then.
    var binaryOnly: Bool {
        guard let e = encoding else { return false }
        return e.members.contains { if case .block = $0 { return true } else { return false } }
    }

    var formats: [String] {
        binaryOnly
            ? [MediaType.sweBinary]
            : [MediaType.omJSON, MediaType.sweJSON, MediaType.sweCSV, "application/swe+xml", MediaType.sweBinary]
    }
}

struct ControlStreamRecord {
    var id: String
    var systemID: String
    var name: String
    var description: String?
    var inputName: String
    var schemaJSON: JSONValue
    var parameters: JSONValue
    /// The newest `maxStoredCommands` status reports; older ones are evicted and counted.
    var statuses: BoundedLog<(id: String, body: JSONValue)>
    var validFrom: Double
}

/// Oldest-first storage of at most `capacity` elements: an append beyond it evicts the oldest and
/// counts it, so a long soak does not grow the node without bound. Evicting is O(1) amortised:
/// the evicted prefix is cut off once it is as long as the capacity.
struct BoundedLog<Element>: RandomAccessCollection {
    private var storage: [Element] = []
    /// Where the kept elements begin in `storage`.
    private var head = 0
    let capacity: Int
    /// Elements evicted so far.
    private(set) var evicted = 0

    init(capacity: Int) { self.capacity = Swift.max(1, capacity) }

    var startIndex: Int { 0 }
    var endIndex: Int { storage.count - head }
    subscript(i: Int) -> Element { storage[head + i] }

    mutating func append(_ e: Element) {
        storage.append(e)
        guard count > capacity else { return }
        head += 1
        evicted += 1
        if head >= capacity {
            storage.removeFirst(head)
            head = 0
        }
    }

    /// A deletion (not an eviction: not counted).
    mutating func remove(at i: Int) { storage.remove(at: head + i) }
}

final class NodeStore {
    var minter: IDMinter
    var systems: [SystemRecord] = []
    var features: [FeatureRecord] = []
    var datastreams: [DatastreamRecord] = []
    var controlStreams: [ControlStreamRecord] = []
    var requestLog: [DevNodeRequestRecord] = []
    var requestsByRoute: [String: [Int: Int]] = [:]
    var totalRequests = 0
    var mode: DevNodeMode = .normal
    /// The bound port, for absolute links (kept here so handlers never need the lifecycle lock).
    var port: UInt16 = 0
    /// `--journal FILE`: where changes to resources are appended (Journal.swift).
    var journal: DevNodeJournal?
    /// `--ledger FILE`: handlers add lines of what they accepted (Ledger.swift).
    var ledger: DevNodeLedger?

    init(salt: UInt64) { minter = IDMinter(salt: salt) }

    func mint() -> String { minter.next() }

    /// A node restart without a database: every resource is gone. The minter keeps counting, so
    /// no id minted afterwards equals an old one. Request statistics are kept.
    func forget() {
        systems = []
        features = []
        datastreams = []
        controlStreams = []
    }

    /// The resources and the minter, to undo a change the journal could not record. Cheap: the
    /// arrays are shared until the change writes to them.
    struct Snapshot {
        var minter: IDMinter
        var systems: [SystemRecord]
        var features: [FeatureRecord]
        var datastreams: [DatastreamRecord]
        var controlStreams: [ControlStreamRecord]
    }

    func snapshot() -> Snapshot {
        Snapshot(minter: minter, systems: systems, features: features, datastreams: datastreams, controlStreams: controlStreams)
    }

    func restore(_ s: Snapshot) {
        minter = s.minter
        systems = s.systems
        features = s.features
        datastreams = s.datastreams
        controlStreams = s.controlStreams
    }

    func systemIndex(_ id: String) -> Int? { systems.firstIndex { $0.id == id } }
    func featureIndex(_ id: String) -> Int? { features.firstIndex { $0.id == id } }
    func datastreamIndex(_ id: String) -> Int? { datastreams.firstIndex { $0.id == id } }
    func controlStreamIndex(_ id: String) -> Int? { controlStreams.firstIndex { $0.id == id } }

    func logRequest(_ r: DevNodeRequestRecord, cap: Int) {
        totalRequests += 1
        requestsByRoute[r.route, default: [:]][r.status, default: 0] += 1
        requestLog.append(r)
        if requestLog.count > max(cap, 1) { requestLog.removeFirst(requestLog.count - max(cap, 1)) }
    }

    func stats() -> DevNodeStats {
        DevNodeStats(
            datastreams: datastreams.map {
                DevNodeDatastreamStats(
                    id: $0.id, systemID: $0.systemID, outputName: $0.outputName,
                    obsFormat: $0.obsFormat, schemaVersions: $0.schemaVersions,
                    observationCount: $0.observationCount, phenomenonTimes: Array($0.phenomenonTimes),
                    lastValues: $0.observations.last?.record, evictedObservations: $0.observations.evicted)
            },
            systemCount: systems.count, samplingFeatureCount: features.count,
            controlStreamCount: controlStreams.count, requestsByRoute: requestsByRoute, totalRequests: totalRequests,
            evictedCommands: 0, evictedCommandStatuses: controlStreams.reduce(0) { $0 + $1.statuses.evicted })
    }
}
