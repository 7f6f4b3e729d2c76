import Foundation
import OSHCore
import XCTest

/// A transport double: records each request, answers when the test says so.
final class RecordingTransport: PublisherTransport {
    struct Post { let datastreamID: String; let contentType: String; let body: String; let complete: (TransportOutcome) -> Void }
    var posts: [Post] = []
    var probes: [(TransportOutcome) -> Void] = []

    func postObservations(
        datastreamID: String, contentType: String, body: ByteBuffer,
        completion: @escaping (TransportOutcome) -> Void
    ) {
        posts.append(Post(datastreamID: datastreamID, contentType: contentType, body: body.string, complete: completion))
    }
    func probe(completion: @escaping (TransportOutcome) -> Void) { probes.append(completion) }

    /// Answers the oldest pending post.
    func answer(_ status: Int, error: String? = nil, body: String = "") {
        let p = posts.removeFirst()
        p.complete(TransportOutcome(status: status, transportError: error, body: Array(body.utf8)))
    }
}

final class RingTests: XCTestCase {
    func testFullRingDropsTheOldestAndCountsIt() {
        let ring = ObservationRing(capacity: 4, maxValues: 2, datastreams: 2)
        for i in 0..<6 { ring.push(datastream: i % 2, time: Double(i), values: [Double(i), 0]) }
        XCTAssertEqual(ring.occupied, 4)
        XCTAssertEqual(ring.droppedWhenFull(of: 0) + ring.droppedWhenFull(of: 1), 2)
        var batch: [Int] = []
        ring.reserve(datastream: 0, max: 10, into: &batch)
        XCTAssertEqual(batch.map { ring.time(ofSlot: $0) }, [2, 4], "oldest of datastream 0 dropped first")
    }

    func testSendingFreesSlotsAnywhereAndCompactionKeepsOrder() {
        let ring = ObservationRing(capacity: 6, maxValues: 1, datastreams: 2)
        for i in 0..<6 { ring.push(datastream: i % 2, time: Double(i), values: [Double(i)]) }
        var batch: [Int] = []
        ring.reserve(datastream: 1, max: 10, into: &batch)
        ring.complete(batch)  // frees slots 1, 3, 5 — holes in the middle
        XCTAssertEqual(ring.occupied, 3)
        for i in 6..<9 { XCTAssertTrue(ring.push(datastream: 0, time: Double(i), values: [Double(i)])) }
        XCTAssertEqual(ring.droppedWhenFull(of: 0), 0, "holes were reclaimed, nothing dropped")
        ring.reserve(datastream: 0, max: 10, into: &batch)
        XCTAssertEqual(batch.map { ring.time(ofSlot: $0) }, [0, 2, 4, 6, 7, 8])
        XCTAssertEqual(batch.map { ring.values(ofSlot: $0)[0] }, [0, 2, 4, 6, 7, 8])
    }

    func testInFlightSlotsAreNeverOverwritten() {
        let ring = ObservationRing(capacity: 3, maxValues: 1, datastreams: 1)
        for i in 0..<3 { ring.push(datastream: 0, time: Double(i), values: [Double(i)]) }
        var batch: [Int] = []
        ring.reserve(datastream: 0, max: 3, into: &batch)
        XCTAssertFalse(ring.push(datastream: 0, time: 9, values: [9]), "every slot is being sent: the new one is dropped")
        ring.requeue(batch)
        XCTAssertTrue(ring.push(datastream: 0, time: 9, values: [9]))
        ring.reserve(datastream: 0, max: 3, into: &batch)
        XCTAssertEqual(batch.map { ring.time(ofSlot: $0) }, [1, 2, 9])
    }
}

final class PublisherTests: XCTestCase {
    private var now = 100.0
    private let options = OutputOptions(uid: "urn:osh:rpi:10000000abcdef12")

    private func make(format: ScalarFormat = .omJSON, capacity: Int = 1000) throws -> (Publisher, RecordingTransport) {
        let t = RecordingTransport()
        var settings = PublisherSettings()
        settings.format = format
        settings.jitter = 0
        let specs = [OutputCatalogue.barometer(options), OutputCatalogue.gps(options)]
        let ring = ObservationRing(capacity: capacity, maxValues: 8, datastreams: specs.count)
        let p = Publisher(
            ring: ring, encoders: try specs.map { try ObservationEncoder(spec: $0, format: format) },
            transport: t, settings: settings, now: { [unowned self] in self.now })
        p.clockOffset = 1_773_853_000
        p.setDatastreamID(0, "baro1")
        p.setDatastreamID(1, "gps1")
        return (p, t)
    }

    private func pressures(_ body: String) throws -> [Double] {
        let arr = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [[String: Any]])
        return arr.compactMap { ($0["result"] as? [String: Any])?["pressure"] as? Double }
    }

    func testBatchesAtFiftyAndOnTheTick() throws {
        let (p, t) = try make()
        for i in 0..<50 { p.record(datastream: 0, monotonicTime: Double(i), values: [1000 + Double(i), 0]) }
        XCTAssertEqual(t.posts.count, 1, "the 50th record sends at once")
        XCTAssertEqual(t.posts[0].contentType, "application/om+json")
        XCTAssertEqual(try pressures(t.posts[0].body), (0..<50).map { 1000 + Double($0) })
        t.answer(201)
        for i in 0..<3 { p.record(datastream: 0, monotonicTime: 60 + Double(i), values: [1, 0]) }
        XCTAssertEqual(t.posts.count, 0)
        p.tick(now: now)
        XCTAssertEqual(t.posts.count, 1)
        XCTAssertEqual(try pressures(t.posts[0].body).count, 3)
        t.answer(201)
        XCTAssertEqual(p.counters(0).sent, 53)
        XCTAssertEqual(p.counters(0).requests, 2)
        XCTAssertTrue(p.isIdle)
    }

    func testSweJSONSendsOneRecordPerPost() throws {
        let (p, t) = try make(format: .sweJSON)
        p.record(datastream: 0, monotonicTime: 1, values: [1013.25, 0.5])
        XCTAssertEqual(t.posts.count, 1)
        XCTAssertEqual(t.posts[0].contentType, "application/swe+json")
        XCTAssertEqual(t.posts[0].body, "{\"time\":\"2026-03-18T16:56:41.000Z\",\"pressure\":1013.25,\"relativeAltitude\":0.5}")
    }

    func testNothingIsSentBeforeTheClockIsTrustworthyThenTimesAreRight() throws {
        let (p, t) = try make()
        p.clockOffset = nil
        p.record(datastream: 0, monotonicTime: 5, values: [1, 2])
        p.tick(now: now)
        XCTAssertTrue(t.posts.isEmpty, "held while the clock is unsynchronised")
        p.clockOffset = 1_700_000_000
        p.tick(now: now)
        let obs = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(t.posts[0].body.utf8)) as? [[String: Any]])
        XCTAssertEqual(obs[0]["phenomenonTime"] as? String, ISOTime.string(epochSeconds: 1_700_000_005))
    }

    func testOutageKeepsEverythingBacksOffAndDrainsInOrder() throws {
        let (p, t) = try make(capacity: 1000)
        var produced = 0
        func produce(_ n: Int) {
            for _ in 0..<n {
                p.record(datastream: 0, monotonicTime: Double(produced), values: [Double(produced), 0])
                produced += 1
            }
        }
        produce(10)
        p.tick(now: now)
        t.answer(0, error: "Connection refused")
        XCTAssertEqual(p.connectivity, .backoff(nextProbe: now + 1, delay: 1))
        // 1 s, 2 s, 4 s … capped at 30 s while the node stays down.
        var delays: [Double] = []
        for _ in 0..<7 {
            guard case .backoff(let next, let d) = p.connectivity else { return XCTFail("not backing off") }
            delays.append(d)
            produce(40)
            now = next
            p.tick(now: now)
            XCTAssertEqual(t.probes.count, 1)
            t.probes.removeFirst()(TransportOutcome(status: 0, transportError: "refused"))
        }
        XCTAssertEqual(delays, [1, 2, 4, 8, 16, 30, 30])
        XCTAssertTrue(t.posts.isEmpty, "nothing is posted while backing off")
        // The node returns: drain in order, full batches back to back.
        guard case .backoff(let next, _) = p.connectivity else { return XCTFail() }
        now = next
        p.tick(now: now)
        t.probes.removeFirst()(TransportOutcome(status: 200))
        XCTAssertEqual(p.connectivity, .online)
        var received: [Double] = []
        while !t.posts.isEmpty {
            received += try pressures(t.posts[0].body)
            t.answer(201)
        }
        p.tick(now: now)
        while !t.posts.isEmpty { received += try pressures(t.posts[0].body); t.answer(201) }
        XCTAssertEqual(received, (0..<produced).map(Double.init), "every observation, in order, once")
        XCTAssertEqual(p.counters(0).sent, produced)
        XCTAssertEqual(p.counters(0).dropped, 0)
    }

    func testBacklogBeyondCapacityDropsOldestAndCountsExactly() throws {
        let (p, t) = try make(capacity: 100)
        for i in 0..<10 { p.record(datastream: 0, monotonicTime: Double(i), values: [Double(i), 0]) }
        p.tick(now: now)
        t.answer(503)
        for i in 10..<250 { p.record(datastream: 0, monotonicTime: Double(i), values: [Double(i), 0]) }
        guard case .backoff(let next, _) = p.connectivity else { return XCTFail() }
        now = next
        p.tick(now: now)
        t.probes.removeFirst()(TransportOutcome(status: 200))
        var received: [Double] = []
        while !t.posts.isEmpty { received += try pressures(t.posts[0].body); t.answer(201) }
        p.tick(now: now)
        while !t.posts.isEmpty { received += try pressures(t.posts[0].body); t.answer(201) }
        let c = p.counters(0)
        XCTAssertEqual(c.produced, 250)
        XCTAssertEqual(c.sent + c.dropped, 250, "produced = received + dropped-and-counted")
        XCTAssertEqual(received.count, c.sent)
        XCTAssertEqual(received, received.sorted())
        XCTAssertEqual(received.last, 249)
        XCTAssertEqual(received.count, 100)
    }

    func testRejectionsDropThatPayloadOnlyAndLogOnce() throws {
        let (p, t) = try make()
        var logged: [String] = []
        p.onFirstRejection = { _, m in logged.append(m) }
        for round in 0..<3 {
            p.record(datastream: 0, monotonicTime: Double(round), values: [1, 2])
            p.record(datastream: 1, monotonicTime: Double(round), values: [1, 2, 3])
            p.tick(now: now)
            XCTAssertEqual(t.posts.count, 2)
            t.answer(400, body: #"{"status":400,"message":"Invalid payload: Expected field 'pressure' but was 'x'"}"#)
            t.answer(201)
        }
        XCTAssertEqual(p.counters(0).droppedRejected, 3)
        XCTAssertEqual(p.counters(1).sent, 3, "the other datastream keeps flowing")
        XCTAssertEqual(p.connectivity, .online)
        XCTAssertEqual(logged, ["HTTP 400: Invalid payload: Expected field 'pressure' but was 'x'"])
    }

    func testStatusClassification() {
        func v(_ s: Int) -> DeliveryVerdict { DeliveryVerdict.classify(TransportOutcome(status: s)) }
        XCTAssertEqual(v(201), .delivered)
        for s in [0, 401, 408, 429, 500, 502, 503] { XCTAssertEqual(v(s), .keep, "\(s)") }
        XCTAssertEqual(v(404), .datastreamLost)
        for s in [301, 302, 400, 403, 405, 409, 413, 415] { XCTAssertEqual(v(s), .rejected, "\(s)") }
    }

    func testLostDatastreamIsReRegisteredAndResent() throws {
        let (p, t) = try make()
        var lost: [Int] = []
        p.onDatastreamLost = { lost.append($0) }
        p.record(datastream: 0, monotonicTime: 1, values: [7, 0])
        p.tick(now: now)
        t.answer(404, body: #"{"status":404,"message":"Resource not found"}"#)
        XCTAssertEqual(lost, [0])
        XCTAssertNil(p.datastreamID(0))
        p.tick(now: now)
        XCTAssertTrue(t.posts.isEmpty, "held until re-registered")
        p.setDatastreamID(0, "baro2")
        XCTAssertEqual(t.posts.first?.datastreamID, "baro2")
        XCTAssertEqual(try pressures(t.posts[0].body), [7])
    }

    func testSteadyStatePathDoesNotGrowMemory() throws {
        // A structural check; allocation counts are measured by the benchmark under valgrind.
        let (p, t) = try make()
        for round in 0..<200 {
            for k in 0..<5 { p.record(datastream: 0, monotonicTime: Double(round * 5 + k), values: [1, 2]) }
            p.tick(now: now)
            t.answer(201)
        }
        XCTAssertEqual(p.counters(0).sent, 1000)
        XCTAssertEqual(p.ring.occupied, 0)
        XCTAssertEqual(p.ring.span, 0)
    }
}
