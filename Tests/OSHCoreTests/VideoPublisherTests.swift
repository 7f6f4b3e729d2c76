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
}
