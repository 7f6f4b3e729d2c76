// Public configuration, misbehaviour switches and observability types of the development node.
import OSHCore

/// How a DevNode is set up. Everything has a default: `DevNodeConfig()` is an anonymous node on
/// 127.0.0.1 at a free port under `/sensorhub/api`.
public struct DevNodeConfig: Sendable {
    /// IPv4 address to bind (loopback by default).
    public var host: String
    /// 0 picks a free port; `DevNode.start()` returns the one it got.
    public var port: UInt16
    /// Where the API lives, as on an OSH node (`/sensorhub/api`).
    public var apiPath: String
    /// `apiPath` without a trailing `/`: what request paths start with.
    var apiPrefix: String { apiPath.hasSuffix("/") ? String(apiPath.dropLast()) : apiPath }
    /// Basic-auth users as (name, password). Empty: no authentication at all.
    public var users: [(String, String)]
    /// PEM certificate chain and private key; set, the node speaks HTTPS only (GnuTLS through libmicrohttpd).
    public var tls: (certPEM: String, keyPEM: String)?
    /// Largest accepted request body; a larger one is answered 413.
    public var maxBodyBytes: Int
    /// Observations kept per datastream, and their times in `stats`: older ones are evicted and
    /// counted (`DevNodeDatastreamStats.evictedObservations`); `observationCount` counts them all.
    public var maxStoredObservations: Int
    /// Commands, and command status reports, kept per control stream: older ones are evicted and
    /// counted (`DevNodeStats.evictedCommands`, `evictedCommandStatuses`).
    public var maxStoredCommands = 1_000
    /// Entries kept in the request log.
    public var maxLoggedRequests: Int
    /// With an `Accept` header that does not contain "json", OSH answers errors through Jetty: an HTML
    /// page, or — when the admin landing page is enabled — a 302 to `/sensorhub`. True imitates the latter.
    public var adminLandingPage: Bool
    /// Idle connection timeout (OSH/Jetty: 300 s).
    public var connectionTimeoutSeconds: UInt32
    /// How long a command POST waits for a correlated status before the node stores PENDING and
    /// answers it (OSH: 5 s; status POSTs over HTTP never correlate). Tests shorten it.
    public var commandAckSeconds: Double = 5
    /// How long a command POST with no connected receiver waits before 202 (OSH: ~29.5 s).
    public var noReceiverWaitSeconds: Double = 29.5
    /// Reproduces osh-core's in-memory datastore (what a node without the H2 module runs): every
    /// PUT of a datastream is answered 500 (InMemoryDataStreamStore.put finds the datastream itself
    /// under the same system, output and validTime). False: a PUT is refused only for a changed
    /// structure once observations exist, as with the H2 store.
    public var oshInMemoryStore = false
    /// Set: each command receiver is closed with 1011 and this reason right after the upgrade, as
    /// osh-core 4c87a65 does with security on (the receiver's permission check in
    /// CommandHandler.startRealTimeStream runs where no user is known: "Permission denied: …
    /// No user specified"). Observations are not affected.
    public var refuseReceivers: String?
    /// `--journal FILE`: every change to a system, datastream, control stream or sampling feature
    /// is appended here, and the first `start()` replays the file, so resources and their ids
    /// survive a restart (as an OSH node's database does). nil: everything lives in memory only.
    public var journalPath: String?
    /// `--ledger FILE`: every system, datastream and observation accepted and every datastream
    /// deleted is appended here as a line of text before the answer is sent (Ledger.swift).
    public var ledgerPath: String?
    /// Called with one line per request (and lifecycle events). Nothing is printed otherwise.
    public var log: (@Sendable (String) -> Void)?

    /// osh-core's close reason when its permission check refuses a receiver (with security on).
    public static let oshSecuredReceiverRefusal = "Permission denied: csapi[default]/create/status: No user specified"

    public init(
        host: String = "127.0.0.1", port: UInt16 = 0, apiPath: String = "/sensorhub/api",
        users: [(String, String)] = [], tls: (certPEM: String, keyPEM: String)? = nil,
        maxBodyBytes: Int = 16 << 20, maxStoredObservations: Int = 10_000, maxLoggedRequests: Int = 1_000,
        adminLandingPage: Bool = false, connectionTimeoutSeconds: UInt32 = 300,
        log: (@Sendable (String) -> Void)? = nil
    ) {
        self.host = host
        self.port = port
        self.apiPath = apiPath
        self.users = users
        self.tls = tls
        self.maxBodyBytes = maxBodyBytes
        self.maxStoredObservations = maxStoredObservations
        self.maxLoggedRequests = maxLoggedRequests
        self.adminLandingPage = adminLandingPage
        self.connectionTimeoutSeconds = connectionTimeoutSeconds
        self.log = log
    }
}

/// Misbehaviour switches, settable while the node runs.
public enum DevNodeMode: Sendable, Equatable {
    /// Behave like an OSH node.
    case normal
    /// Close the listening socket (the daemon is stopped; connects are refused). Leaving this mode
    /// listens again on the same port. Same as `pause()` / `resume()`.
    case refuseConnections
    /// Answer every request with this status and an OSH-style JSON error (302: `Location: /sensorhub`,
    /// 401: `WWW-Authenticate`), without looking at it.
    case status(Int)
    /// Answer observation POSTs only with this status and an OSH-style error; nothing is stored.
    case rejectObservations(status: Int)
    /// Accept the next `remaining` observation POSTs normally, then answer the rest with `status`
    /// (nothing stored) — a node that goes away at a known point, e.g. halfway through a backlog.
    case acceptObservationsThenReject(remaining: Int, status: Int)
    /// Handle requests normally but answer each one only after this many seconds (the connection's
    /// own thread sleeps; other connections are not held up).
    case delay(Double)
    /// Handle requests normally (state changes happen), then send the headers and at most a few
    /// bytes of the body and close the connection abruptly (libmicrohttpd content reader
    /// returning MHD_CONTENT_READER_END_WITH_ERROR). The declared Content-Length is never met.
    case resetMidBody

    /// `.rejectObservations(status: 400)`.
    public static var rejectObservations: DevNodeMode { .rejectObservations(status: 400) }
}

public enum DevNodeError: Error, Equatable, CustomStringConvertible {
    /// libmicrohttpd could not start (port in use, bad address, TLS setup failed); errno when known.
    case startFailed(host: String, port: UInt16, errno: Int32)
    /// TLS was configured but this libmicrohttpd has no TLS support.
    case tlsUnsupported
    /// `resume()` before the node was ever started.
    case notStarted
    /// The journal cannot be read, replayed or written: the file (and line) and what to do.
    case journal(String)
    /// The ledger cannot be opened or written: the file, why, and what to do.
    case ledger(String)
    /// The MQTT side cannot reach its broker: which, and why.
    case mqtt(String)

    public var description: String {
        switch self {
        case .startFailed(let h, let p, let e): return "could not start the development node on \(h):\(p) (errno \(e))"
        case .tlsUnsupported: return "this libmicrohttpd was built without TLS support"
        case .notStarted: return "the development node was never started"
        case .journal(let message), .ledger(let message), .mqtt(let message): return message
        }
    }
}

/// What one datastream received.
public struct DevNodeDatastreamStats: Sendable, Equatable {
    public var id: String
    public var systemID: String
    public var outputName: String
    public var obsFormat: String
    /// 1 on creation, +1 each time a POST/PUT brought a different schema.
    public var schemaVersions: Int
    /// Observations accepted so far (including ones no longer stored).
    public var observationCount: Int
    /// Phenomenon times (epoch seconds) of the accepted observations, in arrival order: the newest
    /// `maxStoredObservations`.
    public var phenomenonTimes: [Double]
    /// The last accepted observation, decoded.
    public var lastValues: SWERecordValue?
    /// Observations evicted to keep `maxStoredObservations`.
    public var evictedObservations: Int
}

/// One line of the request log.
public struct DevNodeRequestRecord: Sendable, Equatable {
    public var method: String
    /// Path and query as sent.
    public var path: String
    /// Route template, e.g. `POST /datastreams/{id}/observations`.
    public var route: String
    public var contentType: String?
    public var status: Int
    /// Wall-clock time the request was answered.
    public var time: Double
}

/// A snapshot of what the node saw.
public struct DevNodeStats: Sendable, Equatable {
    /// Datastreams in creation order.
    public var datastreams: [DevNodeDatastreamStats]
    public var systemCount: Int
    public var samplingFeatureCount: Int
    public var controlStreamCount: Int
    /// Requests answered, keyed by route template, then by status.
    public var requestsByRoute: [String: [Int: Int]]
    public var totalRequests: Int
    /// Commands and status reports evicted to keep `maxStoredCommands` per control stream.
    public var evictedCommands: Int
    public var evictedCommandStatuses: Int

    /// The datastream registered with this output name (the most recent one if several systems have it).
    public func datastream(outputName: String) -> DevNodeDatastreamStats? {
        datastreams.last { $0.outputName == outputName }
    }

    public func datastream(id: String) -> DevNodeDatastreamStats? { datastreams.first { $0.id == id } }

    /// How many requests on `route` were answered with `status` (any status when nil).
    public func count(_ route: String, status: Int? = nil) -> Int {
        guard let byStatus = requestsByRoute[route] else { return 0 }
        if let s = status { return byStatus[s] ?? 0 }
        return byStatus.values.reduce(0, +)
    }

    /// Total observations accepted over all datastreams.
    public var observationCount: Int { datastreams.reduce(0) { $0 + $1.observationCount } }
}
