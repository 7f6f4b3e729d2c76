// Size (~580 lines): the outcome types, the counters and one state machine whose rules (batching,
// backoff, the spool, the clock hold) read the same per-datastream state; split, each part would
// reach into the others' private state.
//
// The publisher: drains the ring to the node, one batch in flight per datastream,
// and applies the failure rules (`DeliveryVerdict`, docs/RELIABILITY.md). Pure policy — the transport is a protocol the
// agent implements over libcurl, and time comes in through `tick(now:)` — so every
// rule is testable without a network.

/// What came back for one request to the node (registration's, the publishers' and probes alike).
public struct TransportOutcome: Sendable, Equatable {
    /// HTTP status, or 0 when no response arrived (refused, reset, timeout, TLS, DNS).
    public var status: Int
    /// The transport's own error message when status is 0.
    public var transportError: String?
    /// The response body (error messages, registration's lookups).
    public var body: [UInt8]
    /// The Location header of a 201 (the created resource).
    public var location: String?
    /// What answered or did not, when it is not the node itself: "MQTT broker 10.0.0.5:1883"
    /// (its status is then a PUBACK's reason code as the HTTP status the verdicts read).
    public var peer: String?

    public init(status: Int, transportError: String? = nil, body: [UInt8] = [], location: String? = nil, peer: String? = nil) {
        self.status = status
        self.transportError = transportError
        self.body = body
        self.location = location
        self.peer = peer
    }

    /// A failed outcome in a user's words: the transport's error, what a broker answered (its
    /// PUBACK reason code, not an HTTP status it never sent), or the node's status and message.
    public var failureText: String {
        if let t = transportError { return t }
        if peer != nil, !body.isEmpty { return String(decoding: body, as: UTF8.self) }
        return "HTTP \(status): \(NodeError.parse(body).summary)"
    }
}

/// What to do with a batch after its request completed.
public enum DeliveryVerdict: Sendable, Equatable {
    /// 2xx: delivered.
    case delivered
    /// Transport error, 5xx, 401, 408, 429: keep the observations, back off, probe, resend in order.
    case keep
    /// 404 on an observation POST: the node lost the datastream (e.g. restarted without a database).
    /// Re-register and resend — not a payload rejection.
    case datastreamLost
    /// Any other 3xx/4xx: the node refused this payload; resending it unchanged can never succeed.
    case rejected

    public static func classify(_ o: TransportOutcome) -> DeliveryVerdict {
        switch o.status {
        case 200..<300: return .delivered
        case 0, 401, 408, 429, 500..<600: return .keep
        case 404: return .datastreamLost
        default: return .rejected
        }
    }

    /// No response, or a 5xx (a proxy's, or the node failing after it stored part of a batch):
    /// the node may have stored what was posted, so a resend may duplicate it.
    public static func outcomeUnknown(_ o: TransportOutcome) -> Bool {
        o.status == 0 || (500..<600).contains(o.status)
    }
}

public protocol PublisherTransport: AnyObject {
    /// POSTs `body` (valid until completion) to `/datastreams/{datastreamID}/observations`.
    func postObservations(
        datastreamID: String, contentType: String, body: ByteBuffer,
        completion: @escaping (TransportOutcome) -> Void)
    /// A cheap request that tells whether the node answers again (GET of the API root).
    func probe(completion: @escaping (TransportOutcome) -> Void)
}

/// Per-datastream counters (shown by `osh-edge-dev demo` and device_health, written to the
/// counters file). Every observation produced ends up sent, dropped for one counted reason, in the
/// spool, or `pending` in RAM; `unknownOutcome` counts what may have reached the node unacknowledged.
public struct StreamCounters: Sendable, Equatable {
    public var produced = 0
    public var sent = 0
    public var bytes = 0
    public var requests = 0
    public var droppedRingFull = 0
    public var droppedRejected = 0
    /// No slot for it: the ring was all in flight (scalars), or the previous frame was (video).
    public var droppedNoSlot = 0
    /// The spool could not write it (disk full, I/O error).
    public var droppedSpoolFailed = 0
    /// The spool reached its size bound and dropped its oldest segment with it.
    public var droppedSpoolBound = 0
    /// Its values did not fit the output's schema (e.g. a spooled record from an older schema).
    public var droppedInvalid = 0
    /// Video: not registered yet, no trusted clock, or the node link down.
    public var droppedNotReady = 0
    /// Video: the node said no in a way a resend may fix (401, 408, 429) — frames are not kept.
    public var droppedFailed = 0
    /// Video: the node lost the datastream (404) — frames are not kept.
    public var droppedLost = 0
    /// Given up after an unknown outcome (a video frame, or a runtime stopping without a spool):
    /// it may be at the node all the same.
    public var droppedUnknown = 0
    /// Left in RAM when the runtime stopped (reload, SIGTERM) and not spooled.
    public var droppedAtStop = 0
    /// Spooled while the clock was not trusted, and the board rebooted before it was: their times
    /// were lost with that boot, and they are not sent with made-up ones.
    public var droppedUntimed = 0
    /// Posted and answered with no response or a 5xx: the node may have stored it. Scalars are sent
    /// again (the only source of duplicates at the node); video counts it in `droppedUnknown` too.
    public var unknownOutcome = 0
    public var errors = 0
    /// Written to the spool during an outage instead of being dropped.
    public var spooled = 0
    /// Of `sent`, how many came from the spool.
    public var sentFromSpool = 0
    /// In RAM now (ring: waiting or in flight): what a kill -9 would lose.
    public var pending = 0
    /// Posted and not answered yet (ring and spool): at a kill -9 these may be at the node, and a
    /// spool batch is sent again by the next process.
    public var inFlight = 0
    /// Epoch seconds of the newest produced observation (0: none, or no trusted clock yet).
    public var lastProduced = 0.0
    /// The on-board recording, apart from the live books above: records written, and records
    /// not kept (no trusted clock yet, a disk error, the bound's oldest segment, video before a key frame).
    public var recorded = 0
    public var recordDropped = 0
    public var lastError: String?
    public var dropped: Int {
        droppedRingFull + droppedRejected + droppedNoSlot + droppedSpoolFailed + droppedSpoolBound + droppedInvalid
            + droppedNotReady + droppedFailed + droppedLost + droppedUnknown + droppedAtStop + droppedUntimed
    }

    public init() {}

    /// Adds a finished runtime's counters (process totals across reloads); `pending` and
    /// `lastProduced` are states, not sums: the newest wins.
    public mutating func add(_ o: StreamCounters) {
        produced += o.produced; sent += o.sent; bytes += o.bytes; requests += o.requests
        droppedRingFull += o.droppedRingFull; droppedRejected += o.droppedRejected; droppedNoSlot += o.droppedNoSlot
        droppedSpoolFailed += o.droppedSpoolFailed; droppedSpoolBound += o.droppedSpoolBound
        droppedInvalid += o.droppedInvalid; droppedNotReady += o.droppedNotReady; droppedFailed += o.droppedFailed
        droppedLost += o.droppedLost; droppedUnknown += o.droppedUnknown; droppedAtStop += o.droppedAtStop
        droppedUntimed += o.droppedUntimed
        unknownOutcome += o.unknownOutcome; errors += o.errors; spooled += o.spooled; sentFromSpool += o.sentFromSpool
        recorded += o.recorded; recordDropped += o.recordDropped
        pending = o.pending
        inFlight = o.inFlight
        lastProduced = max(lastProduced, o.lastProduced)
        if o.lastError != nil { lastError = o.lastError }
    }
}

public struct PublisherSettings: Sendable, Equatable {
    public var format: ScalarFormat = .omJSON
    /// Records per O&M batch (swe+json always sends one per POST).
    public var batchMax = 50
    public var flushInterval = 0.25
    public var backoffInitial = 1.0
    public var backoffMax = 30.0
    /// ± fraction of the backoff delay, so many boards do not probe in step.
    public var jitter = 0.2
    public init() {}
}

public final class Publisher {
    public enum Connectivity: Sendable, Equatable {
        case online
        /// Waiting to probe at `nextProbe` (monotonic seconds); `delay` is the current backoff step.
        case backoff(nextProbe: Double, delay: Double)
        case probing(delay: Double)
    }

    public let settings: PublisherSettings
    public let ring: ObservationRing
    public private(set) var connectivity: Connectivity = .online
    /// Why the publisher backs off, in words: a node that answers 500 is not unreachable.
    public private(set) var backoffCause = "node unreachable"

    /// The cause an outcome the publisher keeps for (`DeliveryVerdict.keep`) gives to the backoff.
    public static func backoffCause(_ o: TransportOutcome) -> String {
        if let peer = o.peer {
            guard o.status != 0 else { return "\(peer) unreachable" + (o.transportError.map { " (\($0))" } ?? "") }
            return String(decoding: o.body, as: UTF8.self)
        }
        switch o.status {
        case 0: return "node unreachable"
        case 401: return "the node refused the credentials (HTTP 401)"
        case 408, 429: return "the node is busy (HTTP \(o.status))"
        default: return "the node answered HTTP \(o.status)"
        }
    }
    /// Wall-clock offset: epoch seconds = monotonic seconds + offset. Nil while the clock is not
    /// trustworthy — observations are then held, never stamped with a wrong time, and
    /// what the ring cannot hold goes to the spool with its monotonic time.
    public var clockOffset: Double? {
        didSet { spool?.heldTimeOffset = clockOffset }
    }

    /// Set by the runtime before it cancels its requests at the end: their outcomes are not the node's.
    public var stopping = false
    /// A datastream's node id went stale (404): the agent re-registers and calls `setDatastreamID`.
    public var onDatastreamLost: ((Int) -> Void)?
    /// First rejection of a datastream's payload: the node's message, logged once per datastream.
    public var onFirstRejection: ((Int, String) -> Void)?
    /// Connectivity changed (status line, LED).
    public var onConnectivity: ((Connectivity) -> Void)?

    /// Store-and-forward (off when nil): observations a full ring would drop during an outage go
    /// there, and are sent oldest first once the node answers and the ring's backlog is out.
    /// Nothing is written to it while the node is reachable (SD-card wear).
    public var spool: ObservationSpool? {
        didSet {
            // The spool's bound drops its oldest segment: counted against each record's datastream.
            spool?.onBoundDrop = { [unowned self] d, n in
                if self.streams.indices.contains(d) { self.streams[d].counters.droppedSpoolBound += n }
            }
            spool?.onUntimedDrop = { [unowned self] d, n in
                if self.streams.indices.contains(d) { self.streams[d].counters.droppedUntimed += n }
            }
            spool?.heldTimeOffset = clockOffset
        }
    }
    /// Spooled observations that could not be written (disk error), all datastreams: logged by the spool.
    public var spoolWriteFailures: Int { streams.reduce(0) { $0 + $1.counters.droppedSpoolFailed } }
    private var spoolInFlight = false
    private var spoolDatastream = 0
    private var spoolEncoded = 0
    private let spoolBody = ByteBuffer(capacity: 16 * 1024)
    private var spoolCompletion: (TransportOutcome) -> Void = { _ in }

    private let transport: PublisherTransport
    /// CLOCK_MONOTONIC seconds (injected so tests control time).
    private let monotonicNow: () -> Double
    private var streams: [Stream]
    /// The node link's backoff (jittered, so many boards do not probe in step).
    private lazy var outage = ReconnectPolicy(
        backoff: Backoff(
            initial: settings.backoffInitial, maximum: settings.backoffMax,
            jitter: settings.jitter))

    private final class Stream {
        let outputName: String
        let encoder: ObservationEncoder
        var datastreamID: String?
        var counters = StreamCounters()
        var rejectionLogged = false
        var inFlight = false
        /// CLOCK_MONOTONIC time of the newest observation recorded (nil: none yet).
        var lastProducedMonotonic: Double?
        var batch: [Int] = []
        /// Of `batch`, how many the encoder took (the rest did not fit the schema).
        var encoded = 0
        let body: ByteBuffer
        /// Made once: a closure created per request would allocate its context every time.
        var completion: (TransportOutcome) -> Void = { _ in }
        init(outputName: String, encoder: ObservationEncoder, batchMax: Int) {
            self.outputName = outputName
            self.encoder = encoder
            self.body = ByteBuffer(capacity: 16 * 1024)
            batch.reserveCapacity(batchMax)
        }
    }

    /// `encoders[i]` encodes datastream index i of the ring.
    public init(
        ring: ObservationRing, encoders: [ObservationEncoder], transport: PublisherTransport,
        settings: PublisherSettings = PublisherSettings(), now: @escaping () -> Double
    ) {
        self.ring = ring
        self.monotonicNow = now
        self.settings = settings
        self.transport = transport
        self.streams = encoders.map { Stream(outputName: $0.outputName, encoder: $0, batchMax: settings.batchMax) }
        for (i, s) in streams.enumerated() {
            s.completion = { [unowned self] outcome in self.completed(i, outcome) }
        }
        spoolCompletion = { [unowned self] outcome in self.spoolCompleted(outcome) }
        ring.evict = { [unowned self] slot in self.spill(slot, shuttingDown: false) }
        ring.relocate = { [unowned self] from, to in
            for s in self.streams where s.inFlight {
                if let k = s.batch.firstIndex(of: from) { s.batch[k] = to }
            }
        }
    }

    public var datastreamCount: Int { streams.count }
    public func outputName(_ i: Int) -> String { streams[i].outputName }
    public func counters(_ i: Int) -> StreamCounters {
        let s = streams[i]
        var c = s.counters
        c.droppedRingFull = ring.droppedWhenFull(of: i)
        c.pending = ring.count(of: i)
        c.inFlight = (s.inFlight ? s.batch.count : 0) + (spoolInFlight && spoolDatastream == i ? spool?.batchCount ?? 0 : 0)
        if let t = s.lastProducedMonotonic, let offset = clockOffset { c.lastProduced = t + offset }
        return c
    }
    public func datastreamID(_ i: Int) -> String? { streams[i].datastreamID }
    public func encoder(_ i: Int) -> ObservationEncoder { streams[i].encoder }

    /// Sets (or clears, while re-registering) the node's id for datastream `i`.
    public func setDatastreamID(_ i: Int, _ id: String?) {
        streams[i].datastreamID = id
        if id != nil { flush(i); flushSpool() }
    }

    /// The sampling feature id stamped on O&M observations (nil = none).
    public func setFOI(_ id: String?) {
        for s in streams { s.encoder.setFOI(id) }
    }

    // MARK: Input

    /// Stores one observation (CLOCK_MONOTONIC seconds, values in leaf order) and sends at once when a batch is full.
    public func record(datastream i: Int, monotonicTime: Double, values: UnsafeBufferPointer<Double>) {
        streams[i].counters.produced += 1
        streams[i].lastProducedMonotonic = monotonicTime
        if !ring.push(datastream: i, time: monotonicTime, values: values) {
            streams[i].counters.droppedNoSlot += 1
        }
        if ring.count(of: i) >= batchLimit { flush(i) }
    }

    public func record(datastream i: Int, monotonicTime: Double, values: [Double]) {
        values.withUnsafeBufferPointer { record(datastream: i, monotonicTime: monotonicTime, values: $0) }
    }

    private var batchLimit: Int { settings.format == .sweJSON ? 1 : max(1, settings.batchMax) }

    // MARK: Time

    /// Called by the agent's timer (every `flushInterval`): flushes what waits, probes when backing off.
    public func tick(now: Double) {
        switch connectivity {
        case .online:
            for i in streams.indices { flush(i) }
            flushSpool()
        case .backoff(let next, let delay):
            if now >= next { probe(delay: delay) }
        case .probing:
            break
        }
        spool?.tick(now: now)
    }

    /// True when nothing is waiting or in flight (shutdown flush, tests).
    public var isIdle: Bool { ring.occupied == 0 && !streams.contains { $0.inFlight } && !spoolInFlight }
    public var inFlightCount: Int { streams.reduce(0) { $0 + ($1.inFlight ? 1 : 0) } }

    // MARK: Sending

    /// Sends the oldest waiting observations of datastream `i` if it may send now.
    public func flush(_ i: Int) {
        let s = streams[i]
        guard connectivity == .online, !s.inFlight, let id = s.datastreamID, let offset = clockOffset else { return }
        guard ring.reserve(datastream: i, max: batchLimit, into: &s.batch) > 0 else { return }
        s.encoded = encodeBatch(
            s, into: s.body, count: s.batch.count, what: "",
            time: { ring.time(ofSlot: s.batch[$0]) + offset }, values: { ring.values(ofSlot: s.batch[$0]) })
        s.inFlight = true
        s.counters.requests += 1
        transport.postObservations(
            datastreamID: id, contentType: settings.format.mediaType, body: s.body,
            completion: s.completion)
    }

    /// Encodes `count` records into `body` (an om+json array, or one swe+json record). A record whose
    /// values do not fit the schema is counted and left out — never half a record sent. Returns how many went in.
    @discardableResult
    private func encodeBatch(
        _ s: Stream, into body: ByteBuffer, count: Int, what: @autoclosure () -> String,
        time: (Int) -> Double, values: (Int) -> UnsafeBufferPointer<Double>
    ) -> Int {
        body.reset()
        let array = settings.format == .omJSON
        if array { ObservationEncoder.beginBatch(body) }
        var n = 0
        for k in 0..<count {
            if n > 0 { ObservationEncoder.batchSeparator(body) }
            do {
                try s.encoder.encode(time: time(k), values: values(k), into: body)
                n += 1
            } catch {
                s.counters.lastError = what() + "\(error)"
                s.counters.errors += 1
            }
        }
        if array { ObservationEncoder.endBatch(body) }
        return n
    }

    private func completed(_ i: Int, _ outcome: TransportOutcome) {
        let s = streams[i]
        s.inFlight = false
        let verdict = DeliveryVerdict.classify(outcome)
        switch verdict {
        case .delivered, .rejected: ring.complete(s.batch)
        case .keep, .datastreamLost: ring.requeue(s.batch)
        }
        account(i, verdict, outcome, encoded: s.encoded, of: s.batch.count, bytes: s.body.count)
        // A full batch already waiting (a backlog) goes out at once; a partial one waits for the tick.
        let sendMore = verdict == .delivered && ring.count(of: i) >= batchLimit
        // Cleared before any new flush, which refills the same (reused) array.
        s.batch.removeAll(keepingCapacity: true)
        if verdict == .datastreamLost { onDatastreamLost?(i) }
        if sendMore { flush(i) }
    }

    /// What a finished request means for datastream `i`, whichever sender (ring or spool) made it:
    /// counters, the error note, backoff, forgetting a lost id, the once-per-datastream rejection
    /// log. The caller has already freed or kept its own records. `encoded` of the `total` records
    /// went into the body; the others did not fit the schema and go with the body's fate.
    private func account(
        _ i: Int, _ verdict: DeliveryVerdict, _ outcome: TransportOutcome, encoded n: Int, of total: Int,
        bytes: Int
    ) {
        let s = streams[i]
        if verdict == .delivered || verdict == .rejected { s.counters.droppedInvalid += total - n }
        switch verdict {
        case .delivered:
            s.counters.sent += n
            s.counters.bytes += bytes
        case .keep:
            if DeliveryVerdict.outcomeUnknown(outcome) { s.counters.unknownOutcome += n }
            // The runtime is ending and cancelled what was in flight: that says nothing of the node,
            // so neither the last error nor the link state (what a final status shows) changes.
            if stopping { return }
            note(s, outcome)
            if connectivity == .online { backoffCause = Self.backoffCause(outcome) }
            enterBackoff()
        case .datastreamLost:
            note(s, outcome)
            s.datastreamID = nil
        case .rejected:
            s.counters.droppedRejected += n
            note(s, outcome)
            if !s.rejectionLogged {
                s.rejectionLogged = true
                onFirstRejection?(i, s.counters.lastError ?? "status \(outcome.status)")
            }
        }
    }

    private func note(_ s: Stream, _ o: TransportOutcome) {
        s.counters.errors += 1
        s.counters.lastError = o.failureText
    }

    // MARK: Spool

    /// Datastream `d` cannot send now: the node is unreachable, it is not registered (yet), or the
    /// clock is not trusted yet (nothing can be stamped).
    private func inOutage(_ d: Int) -> Bool { connectivity != .online || streams[d].datastreamID == nil || clockOffset == nil }

    /// The ring is full and drops `slot`: during an outage it goes to the spool instead. True when
    /// it is accounted for here (spooled, or counted as a failed spool write).
    private func spill(_ slot: Int, shuttingDown: Bool) -> Bool {
        guard let spool else { return false }
        let d = ring.datastream(ofSlot: slot)
        guard shuttingDown || inOutage(d) else { return false }
        let written =
            clockOffset.map { spool.append(datastream: d, epochTime: ring.time(ofSlot: slot) + $0, values: ring.values(ofSlot: slot)) }
            ?? spool.appendHeld(datastream: d, monotonicTime: ring.time(ofSlot: slot), values: ring.values(ofSlot: slot))
        guard written else {
            // Counted here, so the ring does not count it as a ring-full drop.
            streams[d].counters.droppedSpoolFailed += 1
            return true
        }
        streams[d].counters.spooled += 1
        return true
    }

    /// At shutdown during an outage (before registration, or while the clock is held), the ring's waiting observations go to
    /// the spool rather than being lost with the process. Returns how many were kept.
    @discardableResult
    public func spillRingToSpool() -> Int {
        guard spool != nil, streams.indices.contains(where: inOutage) else { return 0 }
        var kept = 0
        ring.removeWaiting { slot in
            let d = ring.datastream(ofSlot: slot)
            let failed = streams[d].counters.droppedSpoolFailed
            if !spill(slot, shuttingDown: true) {
                streams[d].counters.droppedAtStop += 1
            } else if streams[d].counters.droppedSpoolFailed == failed {
                kept += 1
            }
        }
        return kept
    }

    /// At the end of a runtime, after `spillRingToSpool`: what is still in the ring dies with it,
    /// counted per datastream (`droppedAtStop`). Returns how many.
    @discardableResult
    public func dropRemaining() -> Int {
        ring.removeWaiting { slot in streams[ring.datastream(ofSlot: slot)].counters.droppedAtStop += 1 }
    }

    /// Bytes waiting in the spool (0 without one).
    public var spoolPendingBytes: Int { spool?.pendingBytes ?? 0 }

    /// Sends the spool's oldest batch when the node answers, nothing is in flight from the spool,
    /// and the ring holds no backlog (a full batch waiting): the freshest data goes first.
    private func flushSpool() {
        guard let spool, !spoolInFlight, connectivity == .online, clockOffset != nil, spool.pendingBytes > 0 else { return }
        // A backlog is a full batch *waiting*; one in flight plus a few new ones is ordinary streaming
        // and must not starve the spool on a slow link.
        for (i, s) in streams.enumerated() where ring.count(of: i) - (s.inFlight ? s.batch.count : 0) >= batchLimit { return }
        guard let d = spool.loadBatch(max: batchLimit) else { return }
        let s = streams[d]
        guard let id = s.datastreamID else { return }  // registering: the batch waits in the spool
        // A record that no longer fits (the output's schema changed since it was written) is left out.
        let n = encodeBatch(
            s, into: spoolBody, count: spool.batchCount, what: "spooled \(s.outputName) record: ",
            time: { spool.batchTime($0) }, values: { spool.batchValues($0) })
        if n == 0 {
            s.counters.droppedInvalid += spool.batchCount
            spool.commitBatch()
            return
        }
        spoolInFlight = true
        spoolDatastream = d
        spoolEncoded = n
        s.counters.requests += 1
        transport.postObservations(
            datastreamID: id, contentType: settings.format.mediaType, body: spoolBody,
            completion: spoolCompletion)
    }

    private func spoolCompleted(_ outcome: TransportOutcome) {
        spoolInFlight = false
        guard let spool else { return }
        let d = spoolDatastream
        let n = spool.batchCount
        let verdict = DeliveryVerdict.classify(outcome)
        if verdict == .delivered || verdict == .rejected { spool.commitBatch() }
        account(d, verdict, outcome, encoded: spoolEncoded, of: n, bytes: spoolBody.count)
        switch verdict {
        case .delivered:
            streams[d].counters.sentFromSpool += spoolEncoded
            flushSpool()
        case .datastreamLost:
            onDatastreamLost?(d)
        case .keep, .rejected:
            break
        }
    }

    // MARK: Backoff

    private func enterBackoff() {
        guard connectivity == .online else { return }
        scheduleProbe()
    }

    private func scheduleProbe() {
        let v = outage.failed(key: "node unreachable")
        connectivity = .backoff(nextProbe: monotonicNow() + v.delay, delay: v.step)
        onConnectivity?(connectivity)
    }

    private func probe(delay: Double) {
        connectivity = .probing(delay: delay)
        transport.probe { [unowned self] outcome in
            switch outcome.status {
            case 200..<300:
                _ = self.outage.succeeded()
                self.connectivity = .online
                self.onConnectivity?(.online)
                for i in self.streams.indices { self.flush(i) }
                self.flushSpool()
            default:
                self.scheduleProbe()
            }
        }
    }

    /// Backoff delay of the current step, if backing off (status line).
    public var backoffDelay: Double? {
        switch connectivity {
        case .online: return nil
        case .backoff(_, let d), .probing(let d): return d
        }
    }
}

/// The video publisher shares this link: it posts only while the publisher is online, and its
/// failures start the same backoff the publisher probes its way out of.
extension Publisher: NodeLink {
    public var isOnline: Bool { connectivity == .online }
    public func requestFailed() {
        if connectivity == .online { backoffCause = "node unreachable" }
        enterBackoff()
    }
}
