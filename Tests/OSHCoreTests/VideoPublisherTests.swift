import OSHCore
import XCTest

final class VideoPublisherTests: XCTestCase {
    final class Transport: VideoTransport {
        var pending: [(ByteBuffer, (TransportOutcome) -> Void)] = []
        var bodies: [[UInt8]] = []
        func postVideo(datastreamID: String, body: ByteBuffer, completion: @escaping (TransportOutcome) -> Void) {
            bodies.append(body.array)
            pending.append((body, completion))
        }
    }

    func testOneFrameInFlightNewerFramesDroppedAndCounted() throws {
        let t = Transport()
        let v = VideoPublisher(transport: t)
        let frame: [UInt8] = [0, 0, 0, 1, 0x65, 0x88]
        frame.withUnsafeBytes { XCTAssertFalse(v.offer(monotonicTime: 1, frame: $0)) }
        XCTAssertEqual(v.counters.droppedNotReady, 1, "not registered yet: dropped, not queued")
        v.datastreamID = "cam"
        v.clockOffset = 1_773_853_534.951
        frame.withUnsafeBytes { XCTAssertTrue(v.offer(monotonicTime: 1, frame: $0)) }
        for _ in 0..<3 { frame.withUnsafeBytes { XCTAssertFalse(v.offer(monotonicTime: 1.04, frame: $0)) } }
        XCTAssertEqual(v.counters.droppedBusy, 3)
        XCTAssertEqual(t.bodies.count, 1)
        XCTAssertEqual(Array(t.bodies[0][0..<12]), [0x41, 0xda, 0x6e, 0xb6, 0xd7, 0xfc, 0xdd, 0x2f, 0, 0, 0, 6])
        XCTAssertEqual(Array(t.bodies[0][12...]), frame)
        t.pending.removeFirst().1(TransportOutcome(status: 201))
        XCTAssertEqual(v.counters.sent, 1)
        XCTAssertEqual(v.counters.bytes, 18)
        frame.withUnsafeBytes { XCTAssertTrue(v.offer(monotonicTime: 2, frame: $0)) }
        t.pending.removeFirst().1(TransportOutcome(status: 0, transportError: "refused"))
        XCTAssertEqual(v.counters.failed, 1, "a failed frame is not resent")
        XCTAssertFalse(v.inFlight)
    }

    /// The scalar publisher (backoff 1 s, no jitter) and a video publisher sharing its link.
    private func linked() throws -> (Publisher, RecordingTransport, VideoPublisher, Transport) {
        let t = RecordingTransport()
        var settings = PublisherSettings()
        settings.jitter = 0
        let spec = OutputCatalogue.barometer(OutputOptions(uid: "urn:osh:rpi:10000000abcdef12"))
        let p = Publisher(
            ring: ObservationRing(capacity: 100, maxValues: 8, datastreams: 1),
            encoders: [try ObservationEncoder(spec: spec, format: .omJSON)], transport: t,
            settings: settings, now: { 100 })
        p.clockOffset = 1_773_853_000
        p.setDatastreamID(0, "baro1")
        let vt = Transport()
        let v = VideoPublisher(transport: vt, link: p)
        v.datastreamID = "cam"
        v.clockOffset = 1_773_853_000
        return (p, t, v, vt)
    }

    private let frame: [UInt8] = [0, 0, 0, 1, 0x65, 0x88]

    /// Answers the oldest probe; a missing one fails the test instead of crashing the run.
    private func answerProbe(_ t: RecordingTransport, _ outcome: TransportOutcome, line: UInt = #line) {
        guard !t.probes.isEmpty else { return XCTFail("no probe was sent", line: line) }
        t.probes.removeFirst()(outcome)
    }

    func testNoFramesArePostedWhileTheNodeLinkBacksOff() throws {
        let (p, t, v, vt) = try linked()
        p.record(datastream: 0, monotonicTime: 1, values: [1013, 20])
        p.tick(now: 100)
        t.answer(0, error: "Connection refused")
        XCTAssertEqual(p.connectivity, .backoff(nextProbe: 101, delay: 1))
        for k in 0..<5 { frame.withUnsafeBytes { XCTAssertFalse(v.offer(monotonicTime: 2 + Double(k), frame: $0)) } }
        XCTAssertTrue(vt.bodies.isEmpty, "nothing posted into a link that is backing off")
        XCTAssertEqual(v.counters.droppedNotReady, 5)
        p.tick(now: 101)
        frame.withUnsafeBytes { XCTAssertFalse(v.offer(monotonicTime: 8, frame: $0)) }
        XCTAssertTrue(vt.bodies.isEmpty, "nor while probing")
        // The probe answers: both resume.
        answerProbe(t, TransportOutcome(status: 200))
        XCTAssertEqual(t.posts.count, 1, "the scalar backlog is resent")
        frame.withUnsafeBytes { XCTAssertTrue(v.offer(monotonicTime: 9, frame: $0)) }
        XCTAssertEqual(vt.bodies.count, 1)
    }

    func testAFailedFramePutsTheSharedLinkIntoBackoffAndTheProbeBringsBothBack() throws {
        let (p, t, v, vt) = try linked()
        frame.withUnsafeBytes { XCTAssertTrue(v.offer(monotonicTime: 1, frame: $0)) }
        vt.pending.removeFirst().1(TransportOutcome(status: 0, transportError: "Connection refused"))
        XCTAssertEqual(p.connectivity, .backoff(nextProbe: 101, delay: 1), "one backoff for the node, not one per sender")
        p.record(datastream: 0, monotonicTime: 2, values: [1013, 20])
        p.tick(now: 100.5)
        XCTAssertTrue(t.posts.isEmpty, "the scalar publisher waits for its probe")
        frame.withUnsafeBytes { XCTAssertFalse(v.offer(monotonicTime: 3, frame: $0)) }
        p.tick(now: 101)
        XCTAssertEqual(t.probes.count, 1, "the scalar publisher probes")
        answerProbe(t, TransportOutcome(status: 0, transportError: "Connection refused"))
        XCTAssertEqual(p.connectivity, .backoff(nextProbe: 102, delay: 2))
        p.tick(now: 102)
        answerProbe(t, TransportOutcome(status: 200))
        XCTAssertEqual(p.connectivity, .online)
        XCTAssertEqual(t.posts.count, 1)
        frame.withUnsafeBytes { XCTAssertTrue(v.offer(monotonicTime: 4, frame: $0)) }
        vt.pending.removeFirst().1(TransportOutcome(status: 201))
        XCTAssertEqual(v.counters.sent, 1)
        XCTAssertEqual(v.counters.failed, 1)
        XCTAssertEqual(v.counters.droppedNotReady, 1)
        XCTAssertEqual(p.connectivity, .online)
    }
}
