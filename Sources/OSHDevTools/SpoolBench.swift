import OSHCore
import OSHPlatform
import OSHAgent
import OSHSimulation

/// `osh-edge-dev bench spool`: the store-and-forward path during an outage — ring overflow →
/// spool record → write(2) — and the drain after it (read, parse, CRC, encode, post), on real
/// files in a scratch directory. Reports observations/s each way and bytes per observation.
public enum SpoolBench {
    public struct Result: Sendable {
        public var sync: SpoolSync
        public var observations: Int
        public var spoolSeconds: Double
        public var drainSeconds: Double
        public var fileBytes: Int
        public var spooledPerSecond: Double { Double(observations) / max(spoolSeconds, 1e-9) }
        public var drainedPerSecond: Double { Double(observations) / max(drainSeconds, 1e-9) }
        public var bytesPerObservation: Double { Double(fileBytes) / Double(max(observations, 1)) }
    }

    /// `count` observations of `output` through a Publisher whose node is down (the first POST
    /// fails; it stays in backoff), so all but the ring's last 100 go to the spool; then the node
    /// answers (every POST accepted at once, no network) and the spool drains.
    public static func run(directory: String, count: Int, sync: SpoolSync, output name: String = "quat_orientation_data") throws -> Result {
        final class Switchable: PublisherTransport {
            var up = false
            func postObservations(
                datastreamID: String, contentType: String, body: ByteBuffer,
                completion: @escaping (TransportOutcome) -> Void
            ) {
                completion(TransportOutcome(status: up ? 201 : 503))
            }
            func probe(completion: @escaping (TransportOutcome) -> Void) { completion(TransportOutcome(status: up ? 200 : 503)) }
        }
        let spec = try PublishBench.spec(named: name, uid: "urn:osh:rpi:bench0000000000")
        let transport = Switchable()
        var settings = PublisherSettings()
        settings.jitter = 0
        // One probe in the whole outage: a probe's cost is per backoff step (1–30 s), not per observation.
        settings.backoffInitial = 1e6
        settings.backoffMax = 1e6
        var clock = 0.0
        let publisher = try PublishBench.benchPublisher(
            spec, format: .omJSON, ringCapacity: 100, transport: transport,
            settings: settings, now: { clock })
        let spool = try FileSpool(
            options: FileSpoolOptions(directory: directory, maxBytes: 4 << 30, sync: sync),
            outputNames: [spec.outputName], maxValues: publisher.ring.maxValues)
        publisher.spool = spool
        let t0 = Clock.monotonicNanoseconds()
        PublishBench.record(
            publisher, spec, count: count, start: 0.5, step: 0.001,
            time: { k in
                clock = Double(k) * 0.01
                return clock
            },
            after: { k in
                if k % 25 == 24 { publisher.tick(now: clock) }  // the 250 ms tick at 100 Hz
            })
        spool.sync(force: true)
        let t1 = Clock.monotonicNanoseconds()
        let bytes = spool.pendingBytes
        transport.up = true
        clock += 2e6
        publisher.tick(now: clock)  // probe → online → ring and spool drain (each POST answered at once)
        while publisher.spoolPendingBytes > 0 || publisher.ring.occupied > 0 {
            clock += 0.25
            publisher.tick(now: clock)
        }
        let t2 = Clock.monotonicNanoseconds()
        let spooled = publisher.counters(0).spooled
        return Result(
            sync: sync, observations: spooled, spoolSeconds: Double(t1 - t0) / 1e9,
            drainSeconds: Double(t2 - t1) / 1e9, fileBytes: bytes)
    }
}
