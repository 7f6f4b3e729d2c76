import OSHCore
import XCTest

/// Issue 17: every observation is sent, dropped for one counted reason, spooled or pending, and
/// what may have reached the node unacknowledged is counted (the chaos soak's invariants).
final class PublisherAccountingTests: XCTestCase {
    private var now = 100.0
    private let offset = 1_773_853_000.0
    private func make(capacity: Int = 10, spool: MemorySpool? = nil) throws -> (Publisher, RecordingTransport) {
        try smallPublisher(capacity: capacity, spool: spool, offset: offset, now: { [unowned self] in self.now })
    }

    private func record(_ p: Publisher, _ range: Range<Int>) {
        for i in range { p.record(datastream: 0, monotonicTime: Double(i), values: [Double(i), 0]) }
    }

    /// Back online after a backoff: the probe answers 200.
    private func recover(_ p: Publisher, _ t: RecordingTransport) {
        now += 60
        p.tick(now: now)
        t.probes.removeFirst()(TransportOutcome(status: 200))
        XCTAssertEqual(p.connectivity, .online)
    }

    /// Ring path: produced = (sent − from spool) + the ring's drops + spooled + pending.
    private func assertRingBalance(_ c: StreamCounters, file: StaticString = #filePath, line: UInt = #line) {
        let ringDrops = c.droppedRingFull + c.droppedNoSlot + c.droppedSpoolFailed + c.droppedAtStop
        XCTAssertEqual(
            c.produced, c.sent - c.sentFromSpool + ringDrops + c.droppedRejected + c.droppedInvalid + c.spooled + c.pending,
            "\(c)", file: file, line: line)
    }

    func testNoResponseAndFiveHundredsAreUnknownOutcomesPerObservationOthersAreNot() throws {
        let (p, t) = try make()
        record(p, 0..<5)
        t.answer(0, error: "connection reset")
        XCTAssertEqual(p.counters(0).unknownOutcome, 5, "the node may have stored the batch: counted per observation")
        recover(p, t)
        t.answer(502)
        XCTAssertEqual(p.counters(0).unknownOutcome, 10)
        for status in [429, 401, 408] {
            recover(p, t)
            t.answer(status)
        }
        recover(p, t)
        t.answer(404)
        XCTAssertEqual(p.counters(0).unknownOutcome, 10, "429, 401, 408 and 404: the node stored nothing")
        p.setDatastreamID(0, "baro2")
        t.answer(201)
        let c = p.counters(0)
        XCTAssertEqual(c.sent, 5)
        XCTAssertEqual(c.dropped, 0)
        XCTAssertEqual(c.pending, 0)
        assertRingBalance(c)
    }

    func testSpoolPathUnknownOutcomeAndBoundDropsAreCountedPerDatastream() throws {
        let spool = MemorySpool()
        let (p, t) = try make(spool: spool)
        record(p, 0..<5)
        t.answer(503)
        record(p, 5..<25)  // 15 overflow into the spool
        XCTAssertEqual(p.counters(0).spooled, 15)
        recover(p, t)
        t.answer(201); t.answer(201)
        p.tick(now: now)
        XCTAssertEqual(t.posts.count, 1, "the spool's first batch")
        XCTAssertEqual(p.counters(0).inFlight, 5, "a spool batch in flight counts too")
        let before = p.counters(0).unknownOutcome
        t.answer(0, error: "timeout")
        XCTAssertEqual(p.counters(0).unknownOutcome, before + 5, "a spool batch with no answer is sent again: counted")
        spool.onBoundDrop?(0, 3)
        spool.onBoundDrop?(1, 2)
        XCTAssertEqual(p.counters(0).droppedSpoolBound, 3)
        XCTAssertEqual(p.counters(1).droppedSpoolBound, 2)
        XCTAssertEqual(p.counters(0).dropped, 3)
        assertRingBalance(p.counters(0))
    }

    func testAnObservationWithNoSlotIsCountedOnceNotAlsoAsRingFull() throws {
        let (p, t) = try make(capacity: 5)
        record(p, 0..<5)  // one batch, every slot in flight
        XCTAssertEqual(t.posts.count, 1)
        record(p, 5..<7)
        let c = p.counters(0)
        XCTAssertEqual(c.droppedNoSlot, 2)
        XCTAssertEqual(c.inFlight, 5)
        XCTAssertEqual(c.droppedRingFull, 0)
        XCTAssertEqual(c.dropped, 2)
        XCTAssertEqual(c.pending, 5)
        assertRingBalance(c)
    }

    func testRecordsThatDoNotFitTheSchemaAreDroppedAsInvalidNotCountedSent() throws {
        let (p, t) = try make()
        p.record(datastream: 0, monotonicTime: 1, values: [1])  // the barometer has two values
        record(p, 2..<6)
        t.answer(201)
        let c = p.counters(0)
        XCTAssertEqual(c.sent, 4)
        XCTAssertEqual(c.droppedInvalid, 1)
        assertRingBalance(c)
    }

    func testRejectionsDropPerObservation() throws {
        let (p, t) = try make()
        record(p, 0..<5)
        t.answer(400, body: "{\"errors\":[{\"message\":\"bad\"}]}")
        XCTAssertEqual(p.counters(0).droppedRejected, 5)
        assertRingBalance(p.counters(0))
    }

    func testWhatTheRingHoldsAtStopIsSpilledOrCountedDroppedAtStop() throws {
        let (p, t) = try make()
        record(p, 0..<5)
        t.answer(503)
        record(p, 5..<8)
        XCTAssertEqual(p.spillRingToSpool(), 0, "no spool")
        XCTAssertEqual(p.dropRemaining(), 8)
        let c = p.counters(0)
        XCTAssertEqual(c.droppedAtStop, 8)
        XCTAssertEqual(c.pending, 0)
        assertRingBalance(c)
    }

    func testLastProducedIsTheNewestPhenomenonTimeOnceTheClockIsTrusted() throws {
        let (p, _) = try make()
        XCTAssertEqual(p.counters(0).lastProduced, 0)
        p.clockOffset = nil
        record(p, 3..<4)
        XCTAssertEqual(p.counters(0).lastProduced, 0, "no trusted clock: no epoch to give")
        p.clockOffset = offset
        XCTAssertEqual(p.counters(0).lastProduced, offset + 3)
    }

    /// Random outcomes, overflow into a spool whose writes sometimes fail, rejections: the two
    /// balances hold after every step.
    func testBalancesHoldUnderRandomOutcomes() throws {
        let spool = MemorySpool()
        let (p, t) = try make(capacity: 20, spool: spool)
        var rng = SplitMix64(seed: 17)
        var produced = 0
        for _ in 0..<2000 {
            switch rng.next() % 8 {
            case 0, 1, 2:
                p.record(datastream: 0, monotonicTime: Double(produced), values: [Double(produced), 0])
                produced += 1
            case 3:
                if !t.posts.isEmpty { t.answer([201, 201, 0, 503, 400, 429, 404][Int(rng.next() % 7)]) }
            case 4:
                if case .online = p.connectivity {
                } else if !t.probes.isEmpty {
                    t.probes.removeFirst()(TransportOutcome(status: rng.next() % 2 == 0 ? 200 : 0))
                }
            case 5:
                if p.datastreamID(0) == nil { p.setDatastreamID(0, "baro1") }
            case 6:
                spool.refuseWrites = rng.next() % 4 == 0
            default:
                now += 5
                p.tick(now: now)
            }
            let c = p.counters(0)
            assertRingBalance(c)
            // The whole: what is in neither the node's hands, a drop nor RAM is in the spool.
            XCTAssertEqual(c.produced, produced)
            XCTAssertEqual(c.produced, c.sent + c.dropped + (spool.records.count - spool.committed) + c.pending, "\(c)")
        }
        XCTAssertGreaterThan(p.counters(0).unknownOutcome, 0)
        XCTAssertGreaterThan(p.counters(0).spooled, 0)
        XCTAssertGreaterThan(p.counters(0).droppedSpoolFailed, 0)
    }
}

final class VideoAccountingTests: XCTestCase {
    func testEveryFrameIsSentOrDroppedForOneReasonAndUnknownOutcomesAreCounted() throws {
        let t = VideoPublisherTests.Transport()
        let v = VideoPublisher(transport: t)
        let frame: [UInt8] = [0, 0, 0, 1, 0x65, 0x88]
        func offer(_ time: Double) { frame.withUnsafeBytes { _ = v.offer(monotonicTime: time, frame: $0) } }
        offer(1)  // not ready
        v.datastreamID = "cam"
        v.clockOffset = 1_773_853_000
        for (k, status) in [201, 0, 503, 429, 404, 400].enumerated() {
            v.datastreamID = "cam"
            offer(Double(2 + k))
            offer(Double(2 + k) + 0.5)  // busy
            t.pending.removeFirst().1(TransportOutcome(status: status))
        }
        let c = v.counters.streamCounters(clockOffset: 1_773_853_000, inFlight: v.inFlight)
        XCTAssertEqual(c.produced, 13)
        XCTAssertEqual(c.sent, 1)
        XCTAssertEqual(c.droppedNotReady, 1)
        XCTAssertEqual(c.droppedNoSlot, 6)
        XCTAssertEqual(c.droppedUnknown, 2, "status 0 and 503: not resent, and may be at the node")
        XCTAssertEqual(c.unknownOutcome, 2)
        XCTAssertEqual(c.droppedFailed, 1)
        XCTAssertEqual(c.droppedLost, 1)
        XCTAssertEqual(c.droppedRejected, 1)
        XCTAssertEqual(c.produced, c.sent + c.dropped + c.pending)
        XCTAssertEqual(c.lastProduced, 1_773_853_007.5)
    }
}
