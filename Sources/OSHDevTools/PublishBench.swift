import OSHCore
import OSHPlatform
import OSHAgent
import OSHSimulation

/// `osh-edge-dev bench publish`: the whole scalar path — ring → encoder → libcurl → node —
/// against a node (the development node on loopback, normally in another process
/// pinned to another core). Reports observations/s, body bytes and requests per
/// observation, and the time to drain a backlog.
public enum PublishBench {
    public struct Result: Sendable {
        public var format: ScalarFormat
        public var observations: Int
        public var seconds: Double
        public var requests: Int
        public var bodyBytes: Int
        public var backlogDrainSeconds: Double
        public var observationsPerSecond: Double { Double(observations) / max(seconds, 1e-9) }
    }

    /// The publisher's own cost: a transport that accepts every batch at once, no network.
    /// Compared with the run against a node, it separates our allocations from libcurl's.
    public static func runWithoutNetwork(format: ScalarFormat, count: Int, output name: String = "barometer") throws -> Result {
        final class Accepting: PublisherTransport {
            func postObservations(
                datastreamID: String, contentType: String, body: ByteBuffer,
                completion: @escaping (TransportOutcome) -> Void
            ) { completion(TransportOutcome(status: 201)) }
            func probe(completion: @escaping (TransportOutcome) -> Void) { completion(TransportOutcome(status: 200)) }
        }
        let spec = try spec(named: name, uid: "urn:osh:rpi:bench0000000000")
        var settings = PublisherSettings()
        settings.format = format
        let publisher = try benchPublisher(
            spec, format: format, ringCapacity: 1100, transport: Accepting(),
            settings: settings, now: { Double(Clock.monotonicNanoseconds()) / 1e9 })
        let t0 = Clock.monotonicNanoseconds()
        record(
            publisher, spec, count: count, start: 1013.25, step: 0.01, time: { Double($0) * 0.1 },
            after: { k in
                if format == .omJSON && k % 50 == 49 { publisher.tick(now: 0) }
            })
        publisher.tick(now: 0)
        let c = publisher.counters(0)
        return Result(
            format: format, observations: c.sent, seconds: Double(Clock.monotonicNanoseconds() - t0) / 1e9,
            requests: c.requests, bodyBytes: c.bytes, backlogDrainSeconds: 0)
    }

    public static func run(
        apiRoot: String, format: ScalarFormat, count: Int, backlog: Int = 1000,
        output name: String = "barometer"
    ) throws -> Result {
        let loop = try EventLoop()
        let server = NodeEndpoint(apiRoot: apiRoot)
        let http = try HTTPClient(loop: loop, server: server)
        let builder = CSRequestBuilder()
        let node = nodeTransport(http: http, builder: builder)
        let uid = "urn:osh:rpi:bench" + String(Int(Clock.realtimeSeconds() * 1000) % 100_000_000)
        let identity = SystemIdentity(uid: uid, label: "bench", serial: "bench")
        let spec = try spec(named: name, uid: uid)
        var settings = PublisherSettings()
        settings.format = format
        let ring = ObservationRing(capacity: max(backlog, 1000) + 100, maxValues: spec.leaves.count, datastreams: 1)
        let publisher = Publisher(
            ring: ring, encoders: [try ObservationEncoder(spec: spec, format: format)], transport: node,
            settings: settings, now: { Double(Clock.monotonicNanoseconds()) / 1e9 })
        publisher.clockOffset = Clock.realtimeSeconds() - Double(Clock.monotonicNanoseconds()) / 1e9
        let registrar = Registrar(
            client: node, builder: builder, server: apiRoot, identity: identity, specs: [spec],
            format: format, cached: nil, now: { Clock.realtimeSeconds() })
        var failure: RegistrationError?
        var done = false
        registrar.register { r in
            if case .failure(let e) = r { failure = e }
            done = true
        }
        while !done { try loop.runOnce(timeoutMs: 100) }
        if let failure { throw failure }
        publisher.setDatastreamID(0, registrar.datastreamIDs[0])

        var values = [Double](repeating: 1013.25, count: spec.leaves.count - 1)
        func produce(_ n: Int) {
            values.withUnsafeMutableBufferPointer { v in
                for k in 0..<n {
                    v[0] += 0.01
                    publisher.record(
                        datastream: 0, monotonicTime: Double(Clock.monotonicNanoseconds()) / 1e9 + Double(k) * 1e-6,
                        values: UnsafeBufferPointer(v))
                }
            }
        }
        func drain() throws {
            while !publisher.isIdle {
                publisher.tick(now: Double(Clock.monotonicNanoseconds()) / 1e9)
                try loop.runOnce(timeoutMs: 5)
            }
        }
        // Steady state: produce a batch's worth, let it go, repeat.
        let batch = format == .sweJSON ? 1 : settings.batchMax
        let t0 = Clock.monotonicNanoseconds()
        var produced = 0
        while produced < count {
            let n = min(batch, count - produced)
            produce(n)
            produced += n
            try drain()
        }
        let seconds = Double(Clock.monotonicNanoseconds() - t0) / 1e9
        let steady = publisher.counters(0)

        // A backlog, as after an outage: queue it all, then time the drain.
        produce(backlog)
        let t1 = Clock.monotonicNanoseconds()
        try drain()
        let drainSeconds = Double(Clock.monotonicNanoseconds() - t1) / 1e9
        return Result(
            format: format, observations: steady.sent, seconds: seconds, requests: steady.requests,
            bodyBytes: steady.bytes, backlogDrainSeconds: drainSeconds)
    }

    /// A publisher of one datastream ("ds") of `spec`, as the benches drive it.
    static func benchPublisher(
        _ spec: OutputSpec, format: ScalarFormat, ringCapacity: Int, transport: PublisherTransport,
        settings: PublisherSettings, now: @escaping () -> Double
    ) throws -> Publisher {
        let ring = ObservationRing(capacity: ringCapacity, maxValues: spec.leaves.count, datastreams: 1)
        let publisher = Publisher(
            ring: ring, encoders: [try ObservationEncoder(spec: spec, format: format)], transport: transport,
            settings: settings, now: now)
        publisher.clockOffset = 1_773_853_000
        publisher.setDatastreamID(0, "ds")
        return publisher
    }

    /// Records `count` observations at `time(k)`, every value `start` but the first, which steps by
    /// `step`; `after(k)` follows each (the bench's tick cadence). The values are written in place:
    /// the loop itself allocates nothing.
    static func record(
        _ publisher: Publisher, _ spec: OutputSpec, count: Int, start: Double, step: Double,
        time: (Int) -> Double, after: (Int) -> Void
    ) {
        var values = [Double](repeating: start, count: spec.leaves.count - 1)
        values.withUnsafeMutableBufferPointer { v in
            for k in 0..<count {
                v[0] += step
                publisher.record(datastream: 0, monotonicTime: time(k), values: UnsafeBufferPointer(v))
                after(k)
            }
        }
    }

    static func spec(named name: String, uid: String) throws -> OutputSpec {
        guard let s = OutputCatalogue.all(OutputOptions(uid: uid)).first(where: { $0.outputName == name && $0.binaryEncoding == nil })
        else {
            throw SchemaCommandError.unknownOutput(name, known: OutputCatalogue.all(OutputOptions(uid: uid)).map(\.outputName))
        }
        return s
    }
}
