// The video path: frames never enter the scalar ring. One frame is in
// flight at a time; a frame offered while one is pending is dropped and counted —
// on a slow link a late frame is worth less than the next one, so nothing queues.
// The node link is shared with the scalar publisher (`NodeLink`): one backoff per node, so
// frames are not posted into a link the publisher is backing off from.

/// The link to the node as a second sender sees it. The scalar `Publisher` owns the backoff and
/// the probing; another sender asks whether the link is up and reports its own failures into it.
public protocol NodeLink: AnyObject {
    /// False while backing off or probing: nothing should be posted.
    var isOnline: Bool { get }
    /// A request failed the way the scalar publisher backs off for (no response, 5xx, 401, 408, 429).
    func requestFailed()
}

public protocol VideoTransport: AnyObject {
    /// POSTs one swe+binary record (valid until completion) to `/datastreams/{id}/observations`.
    func postVideo(datastreamID: String, body: ByteBuffer, completion: @escaping (TransportOutcome) -> Void)
}

public struct VideoCounters: Sendable, Equatable {
    public var offered = 0
    public var sent = 0
    public var bytes = 0
    /// Dropped because the previous frame was still in flight.
    public var droppedBusy = 0
    /// Dropped before sending: not registered yet, the clock not trusted yet, or the node link down.
    public var droppedNotReady = 0
    public var droppedRejected = 0
    /// Sent and failed (not kept: the next frame replaces it); split by why below.
    public var failed = 0
    /// Failed with no response or a 5xx: the node may have stored it all the same.
    public var failedUnknown = 0
    /// Failed with 404 (the node lost the datastream).
    public var failedLost = 0
    /// Not encodable into a record (never sent).
    public var invalid = 0
    /// CLOCK_MONOTONIC time of the newest frame offered (nil: none yet).
    public var lastOfferedMonotonic: Double?
    public var lastError: String?

    /// The same in the scalar datastreams' terms (the counters file): every frame offered is
    /// sent or dropped for one reason; nothing is kept, so nothing is pending once answered.
    public func streamCounters(clockOffset: Double?, inFlight: Bool) -> StreamCounters {
        var c = StreamCounters()
        c.produced = offered
        c.sent = sent
        c.bytes = bytes
        c.requests = sent + droppedRejected + failed
        c.droppedNoSlot = droppedBusy
        c.droppedNotReady = droppedNotReady
        c.droppedRejected = droppedRejected
        c.droppedInvalid = invalid
        c.droppedUnknown = failedUnknown
        c.droppedLost = failedLost
        c.droppedFailed = failed - failedUnknown - failedLost
        c.unknownOutcome = failedUnknown
        c.pending = inFlight ? 1 : 0
        c.inFlight = c.pending
        c.errors = failed + invalid
        if let t = lastOfferedMonotonic, let clockOffset { c.lastProduced = t + clockOffset }
        c.lastError = lastError
        return c
    }
}

public final class VideoPublisher {
    public var datastreamID: String?
    /// Epoch seconds = monotonic seconds + offset; nil holds nothing back — frames are dropped, not held.
    public var clockOffset: Double?
    public private(set) var counters = VideoCounters()
    public private(set) var inFlight = false
    /// 404: the node lost the datastream (re-register).
    public var onDatastreamLost: (() -> Void)?

    private let transport: VideoTransport
    /// Nil: no shared link (every frame is tried).
    private let link: NodeLink?
    private let body: ByteBuffer

    public init(transport: VideoTransport, link: NodeLink? = nil, expectedFrameBytes: Int = 256 * 1024) {
        self.transport = transport
        self.link = link
        body = ByteBuffer(capacity: expectedFrameBytes + VideoRecord.headerSize)
    }

    /// Offers one encoded access unit. Returns true if it is being sent.
    @discardableResult
    public func offer(monotonicTime: Double, frame: UnsafeRawBufferPointer) -> Bool {
        counters.offered += 1
        counters.lastOfferedMonotonic = monotonicTime
        if inFlight { counters.droppedBusy += 1; return false }
        guard let id = datastreamID, let offset = clockOffset, link?.isOnline ?? true else {
            counters.droppedNotReady += 1
            return false
        }
        body.reset()
        do {
            // The one copy of the frame: into the body the transport sends from.
            try VideoRecord.write(time: monotonicTime + offset, frame: frame, to: body)
        } catch {
            counters.invalid += 1
            counters.lastError = "\(error)"
            return false
        }
        inFlight = true
        transport.postVideo(datastreamID: id, body: body) { [unowned self] outcome in
            self.inFlight = false
            switch DeliveryVerdict.classify(outcome) {
            case .delivered:
                counters.sent += 1
                counters.bytes += body.count
            case .keep:
                // A video frame is not kept: the next one replaces it.
                counters.failed += 1
                if DeliveryVerdict.outcomeUnknown(outcome) { counters.failedUnknown += 1 }
                counters.lastError = outcome.peer == nil ? outcome.transportError ?? "HTTP \(outcome.status)" : outcome.failureText
                link?.requestFailed()
            case .datastreamLost:
                counters.failed += 1
                counters.failedLost += 1
                datastreamID = nil
                onDatastreamLost?()
            case .rejected:
                counters.droppedRejected += 1
                counters.lastError = outcome.failureText
            }
        }
        return true
    }
}
