import OSHCore
import XCTest

/// The recording tap's policy: its own rate beside the live one, epoch times only with a trusted
/// clock, the live mark, and write failures counted.
final class RecorderTests: XCTestCase {
    final class Sink: RecordingSink {
        var scalars: [(output: Int, time: Double, values: [Double], live: Bool)] = []
        var video: [(time: Double, bytes: [UInt8], key: Bool, live: Bool)] = []
        var failing = false
        func append(output: Int, epochTime: Double, values: UnsafeBufferPointer<Double>, live: Bool) -> Bool {
            guard !failing else { return false }
            scalars.append((output, epochTime, Array(values), live))
            return true
        }
        func append(output: Int, epochTime: Double, accessUnit: UnsafeRawBufferPointer, keyFrame: Bool, live: Bool) -> Bool {
            guard !failing else { return false }
            video.append((epochTime, Array(accessUnit), keyFrame, live))
            return true
        }
    }

    func testAFasterRecordingRateKeepsMoreThanTheLiveStream() throws {
        let sink = Sink()
        // Output 0 recorded at 100 Hz, output 1 not recorded.
        let r = Recorder(rates: [100, 0], sink: sink)
        r.clockOffset = 1_800_000_000
        var live = RateThinner()
        var liveCount = 0
        for k in 0..<1000 {  // 10 s of a 100 Hz source with jitter
            let t = 10 + Double(k) * 0.01 + (k % 3 == 0 ? 0.0004 : -0.0003)
            let isLive = live.admits(t, rate: 10)
            if isLive { liveCount += 1 }
            [Double(k)].withUnsafeBufferPointer { r.offer(0, monotonicTime: t, values: $0, live: isLive) }
            [Double(k)].withUnsafeBufferPointer { r.offer(1, monotonicTime: t, values: $0, live: isLive) }
        }
        XCTAssertEqual(sink.scalars.count, 1000)
        XCTAssertEqual(liveCount, 100)
        XCTAssertEqual(sink.scalars.filter(\.live).count, 100)
        XCTAssertEqual(sink.scalars.first?.time ?? 0, 1_800_000_010.0004, accuracy: 1e-6)
        XCTAssertTrue(sink.scalars.allSatisfy { $0.output == 0 })
        XCTAssertEqual(r.sinkIndex(0), 0)
        XCTAssertNil(r.sinkIndex(1))
        XCTAssertEqual(r.counters[0].recorded, 1000)
        XCTAssertEqual(r.counters[1], RecordTapCounters())
    }

    func testNothingIsRecordedWithoutATrustedClockAndFailuresAreCounted() {
        let sink = Sink()
        let r = Recorder(rates: [5, 25], sink: sink)
        [1.0].withUnsafeBufferPointer { r.offer(0, monotonicTime: 1, values: $0, live: true) }
        [UInt8](repeating: 1, count: 4).withUnsafeBytes { r.offerVideo(1, monotonicTime: 1, accessUnit: $0, keyFrame: true, live: false) }
        XCTAssertEqual(r.counters[0].droppedNoClock, 1)
        XCTAssertEqual(r.counters[1].droppedNoClock, 1)
        r.clockOffset = 100
        sink.failing = true
        [1.0].withUnsafeBufferPointer { r.offer(0, monotonicTime: 2, values: $0, live: true) }
        XCTAssertEqual(r.counters[0].droppedWriteFailed, 1)
        sink.failing = false
        // Every access unit is kept (a P-frame cannot be thinned), whatever the rate says.
        for k in 0..<10 {
            [UInt8(k)].withUnsafeBytes {
                r.offerVideo(1, monotonicTime: 3 + Double(k) * 0.001, accessUnit: $0, keyFrame: k == 0, live: k == 0)
            }
        }
        XCTAssertEqual(sink.video.count, 10)
        XCTAssertEqual(sink.video.map(\.key), [true] + [Bool](repeating: false, count: 9))
        XCTAssertEqual(r.counters[1].recorded, 10)
        XCTAssertEqual(r.counters[0].offered, r.counters[0].recorded + r.counters[0].droppedNoClock + r.counters[0].droppedWriteFailed)
    }
}
