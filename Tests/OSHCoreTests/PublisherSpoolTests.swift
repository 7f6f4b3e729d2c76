import Foundation
import OSHCore
import XCTest

/// The spool seam's in-memory side: records in order, a batch loaded until committed.
/// (The file side, FileSpool, is tested on real files in OSHPlatformTests.)
final class MemorySpool: ObservationSpool {
    /// `held`: stored with its monotonic time, for a clock not trusted yet (one boot here).
    var records: [(ds: Int, time: Double, values: [Double], held: Bool)] = []
    var committed = 0
    private var loaded = 0
    var refuseWrites = false
    var heldTimeOffset: Double?

    func append(datastream: Int, epochTime: Double, values: UnsafeBufferPointer<Double>) -> Bool {
        guard !refuseWrites else { return false }
        records.append((datastream, epochTime, Array(values), false))
        return true
    }
    func appendHeld(datastream: Int, monotonicTime: Double, values: UnsafeBufferPointer<Double>) -> Bool {
        guard !refuseWrites else { return false }
        records.append((datastream, monotonicTime, Array(values), true))
        return true
    }
    var pendingBytes: Int { (records.count - committed) * 40 }
    func loadBatch(max: Int) -> Int? {
        guard committed < records.count else { loaded = 0; return nil }
        let ds = records[committed].ds
        loaded = records[committed...].prefix(max).prefix { $0.ds == ds && (!$0.held || heldTimeOffset != nil) }.count
        return loaded > 0 ? ds : nil
    }
    var batchCount: Int { loaded }
    func batchTime(_ k: Int) -> Double {
        let r = records[committed + k]
        return r.held ? r.time + (heldTimeOffset ?? .nan) : r.time
    }
    func batchValues(_ k: Int) -> UnsafeBufferPointer<Double> {
        records[committed + k].values.withUnsafeBufferPointer { p in
            // Valid while `records` is not mutated: the publisher encodes before anything else runs.
            UnsafeBufferPointer(start: p.baseAddress, count: p.count)
        }
    }
    func commitBatch() { committed += loaded; loaded = 0 }
    func tick(now: Double) {}
    var onBoundDrop: ((Int, Int) -> Void)?
    var onUntimedDrop: ((Int, Int) -> Void)?
}

/// Barometer (datastream 0) and gps_data (1) in batches of 5, registered, the clock trusted
/// (epoch = monotonic + `offset`), no jitter: the spool and accounting tests' publisher.
func smallPublisher(
    capacity: Int, spool: ObservationSpool?, offset: Double,
    now: @escaping () -> Double
) throws -> (Publisher, RecordingTransport) {
    let t = RecordingTransport()
    var settings = PublisherSettings()
    settings.jitter = 0
    settings.batchMax = 5
    let options = OutputOptions(uid: "urn:osh:rpi:10000000abcdef12")
    let specs = [OutputCatalogue.barometer(options), OutputCatalogue.gps(options)]
    let ring = ObservationRing(capacity: capacity, maxValues: 8, datastreams: specs.count)
    let p = Publisher(
        ring: ring, encoders: try specs.map { try ObservationEncoder(spec: $0, format: .omJSON) },
        transport: t, settings: settings, now: now)
    p.spool = spool
    p.clockOffset = offset
    p.setDatastreamID(0, "baro1")
    p.setDatastreamID(1, "gps1")
    return (p, t)
}

/// Store-and-forward policy: what goes to the spool, when, and in what order it comes back.
final class PublisherSpoolTests: XCTestCase {
    private var now = 100.0
    private let offset = 1_773_853_000.0
    private func make(capacity: Int = 10) throws -> (Publisher, RecordingTransport, MemorySpool) {
        let spool = MemorySpool()
        let (p, t) = try smallPublisher(capacity: capacity, spool: spool, offset: offset, now: { [unowned self] in self.now })
        return (p, t, spool)
    }

    /// Pressures (the first value) of one om+json body.
    private func pressures(_ body: String) throws -> [Double] {
        let arr = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [[String: Any]])
        return arr.compactMap { ($0["result"] as? [String: Any])?["pressure"] as? Double }
    }

    /// Takes the node down: one batch fails with 503, the publisher backs off.
    private func outage(_ p: Publisher, _ t: RecordingTransport) {
        for i in 0..<5 { p.record(datastream: 0, monotonicTime: Double(i), values: [Double(i), 0]) }
        XCTAssertEqual(t.posts.count, 1)
        t.answer(503)
        guard case .backoff = p.connectivity else { return XCTFail("not backing off") }
    }

    func testNothingGoesToTheSpoolWhileTheNodeAnswers() throws {
        let (p, t, spool) = try make()
        // A slow node: a batch in flight, the ring overflows, but the node is reachable.
        for i in 0..<40 { p.record(datastream: 0, monotonicTime: Double(i), values: [Double(i), 0]) }
        XCTAssertEqual(t.posts.count, 1)
        XCTAssertTrue(spool.records.isEmpty, "no SD-card writes while the node answers")
        XCTAssertGreaterThan(p.counters(0).droppedRingFull, 0, "overflow is dropped and counted as before")
        XCTAssertEqual(p.spillRingToSpool(), 0, "a stop while online keeps nothing on disk")
    }

    func testOverflowDuringAnOutageIsSpooledThenSentAfterTheRingInOrder() throws {
        let (p, t, spool) = try make()
        outage(p, t)
        // 5 waiting + 30 more in a 10-slot ring: the 25 oldest overflow into the spool.
        for i in 5..<35 { p.record(datastream: 0, monotonicTime: Double(i), values: [Double(i), 0]) }
        XCTAssertEqual(spool.records.map(\.time), (0..<25).map { Double($0) + offset })
        XCTAssertEqual(p.counters(0).spooled, 25)
        XCTAssertEqual(p.counters(0).droppedRingFull, 0, "nothing lost")
        // The node answers again: the ring's backlog goes first, then the spool, oldest first.
        now += 2
        p.tick(now: now)
        t.probes.removeFirst()(TransportOutcome(status: 200))
        XCTAssertEqual(p.connectivity, .online)
        var sent: [Double] = []
        while !t.posts.isEmpty {
            sent += try pressures(t.posts[0].body)
            t.answer(201)
            p.tick(now: now)
        }
        XCTAssertEqual(sent, (25..<35).map(Double.init) + (0..<25).map(Double.init))
        XCTAssertEqual(spool.committed, 25)
        XCTAssertEqual(p.counters(0).sent, 35)
        XCTAssertEqual(p.counters(0).sentFromSpool, 25)
        XCTAssertEqual(p.spoolPendingBytes, 0)
    }

    func testASpoolBatchTheNodeFailsIsKeptAndOneItRefusesIsDropped() throws {
        let (p, t, spool) = try make()
        outage(p, t)
        for i in 5..<25 { p.record(datastream: 0, monotonicTime: Double(i), values: [Double(i), 0]) }
        now += 2
        p.tick(now: now)
        t.probes.removeFirst()(TransportOutcome(status: 200))
        // Deliver the ring (two batches), then fail the first spool batch.
        t.answer(201); t.answer(201)
        p.tick(now: now)
        XCTAssertEqual(try pressures(t.posts[0].body), [0, 1, 2, 3, 4])
        t.answer(503)
        XCTAssertEqual(spool.committed, 0, "not acknowledged: stays in the spool")
        now += 2
        p.tick(now: now)
        t.probes.removeFirst()(TransportOutcome(status: 200))
        XCTAssertEqual(try pressures(t.posts[0].body), [0, 1, 2, 3, 4], "the same batch again, in order")
        t.answer(400, body: "{\"errors\":[{\"message\":\"bad\"}]}")
        XCTAssertEqual(spool.committed, 5, "refused for good: dropped and counted, never resent")
        XCTAssertEqual(p.counters(0).droppedRejected, 5)
    }

    func testBeforeRegistrationTheOverflowIsSpooledEvenIfNoRequestFailed() throws {
        let (p, _, spool) = try make()
        p.setDatastreamID(1, nil)  // gps_data not registered yet
        for i in 0..<15 { p.record(datastream: 1, monotonicTime: Double(i), values: [1, 2, 3]) }
        XCTAssertEqual(spool.records.count, 5)
        XCTAssertTrue(spool.records.allSatisfy { $0.ds == 1 })
    }

    func testWhileTheClockIsHeldTheBacklogIsSpooledAndSentWithTrueTimesOnceTrusted() throws {
        // The node answers, but no wall clock can be trusted: nothing can be stamped, so what the
        // ring cannot hold, and what it holds at a stop, goes to the spool with its monotonic time.
        let (p, t, spool) = try make()
        p.clockOffset = nil
        for i in 0..<25 { p.record(datastream: 0, monotonicTime: Double(i), values: [Double(i), 0]) }
        XCTAssertTrue(t.posts.isEmpty, "nothing is sent without a trusted time")
        XCTAssertEqual(spool.records.count, 15)
        XCTAssertTrue(spool.records.allSatisfy(\.held), "held records carry monotonic times, not made-up epoch ones")
        XCTAssertEqual(p.counters(0).droppedRingFull, 0)
        XCTAssertEqual(p.spillRingToSpool(), 10, "a stop while the clock is held keeps the ring too")
        XCTAssertEqual(p.counters(0).droppedAtStop, 0)
        XCTAssertEqual(p.counters(0).spooled, 25)
        // Held records wait while the clock is held.
        p.tick(now: now)
        XCTAssertTrue(t.posts.isEmpty)
        // The clock is trusted: held records go out with epoch = monotonic + offset, oldest first.
        p.clockOffset = offset
        p.tick(now: now)
        var times: [Double] = []
        while !t.posts.isEmpty {
            let arr = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(t.posts[0].body.utf8)) as? [[String: Any]])
            times += arr.compactMap { ($0["phenomenonTime"] as? String).flatMap { ISOTime.parse($0) } }
            t.answer(201)
            p.tick(now: now)
        }
        XCTAssertEqual(times.count, 25)
        for (i, e) in times.enumerated() { XCTAssertEqual(e, Double(i) + offset, accuracy: 0.001) }
        XCTAssertEqual(p.counters(0).sentFromSpool, 25)
    }

    func testRequestsCancelledAtTheEndSayNothingOfTheNode() throws {
        // The demo's and status's last word used to be "request cancelled" and "node unreachable":
        // the runtime's own cancel at stop, taken for the node's answer.
        let (p, t, spool) = try make()
        for i in 0..<5 { p.record(datastream: 0, monotonicTime: Double(i), values: [Double(i), 0]) }
        XCTAssertEqual(t.posts.count, 1)
        p.stopping = true
        t.answer(0, error: "request to http://127.0.0.1:8181/sensorhub/api/datastreams/baro1/observations cancelled")
        XCTAssertNil(p.counters(0).lastError)
        XCTAssertEqual(p.connectivity, .online, "the node was never found unreachable")
        XCTAssertEqual(p.counters(0).unknownOutcome, 5, "it may have reached the node all the same")
        XCTAssertEqual(p.ring.count(of: 0), 5, "kept in the ring, for the spool or the next start")
        XCTAssertTrue(spool.records.isEmpty)
    }

    func testAStopDuringAnOutageSpillsTheRingAndAFailedWriteIsCounted() throws {
        let (p, t, spool) = try make()
        outage(p, t)
        for i in 5..<8 { p.record(datastream: 0, monotonicTime: Double(i), values: [Double(i), 0]) }
        XCTAssertEqual(p.spillRingToSpool(), 8)
        XCTAssertEqual(spool.records.map(\.values[0]), (0..<8).map(Double.init), "oldest first")
        XCTAssertEqual(p.ring.occupied, 0)
        spool.refuseWrites = true
        for i in 8..<25 { p.record(datastream: 0, monotonicTime: Double(i), values: [Double(i), 0]) }
        XCTAssertEqual(p.spoolWriteFailures, 7)
        XCTAssertEqual(p.counters(0).droppedSpoolFailed, 7, "counted per datastream, as a failed spool write")
        XCTAssertEqual(p.counters(0).droppedRingFull, 0, "not also as a ring-full drop")
    }
}
