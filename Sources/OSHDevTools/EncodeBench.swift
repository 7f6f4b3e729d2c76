import OSHCore
import OSHPlatform
import OSHAgent
import OSHSimulation

/// `osh-edge-dev bench encode`: how fast, and how compactly, each scalar output encodes.
/// Heap allocations are not counted here (that needs an outside observer): run
/// `scripts/bench-allocs.sh`, which compares valgrind's totals at two counts.
public enum EncodeBench {
    public struct Case: Sendable, Equatable {
        public var output: String
        public var format: ScalarFormat
        /// Records per body: 1 = one POST per observation; 50 = the publisher's full O&M batch.
        public var batch: Int
    }

    public struct Result: Sendable {
        public var `case`: Case
        public var observations: Int
        public var nanosPerObservation: Double
        public var bytesPerObservation: Double
    }

    /// Every scalar output × {O&M single, O&M batch of 50, swe+json single}, optionally filtered.
    public static func cases(output: String? = nil, format: ScalarFormat? = nil, batch: Int? = nil) -> [Case] {
        let specs = OutputCatalogue.all(OutputOptions(uid: "urn:osh:rpi:bench0000000000")).filter { $0.binaryEncoding == nil }
        var out: [Case] = []
        for s in specs where output == nil || s.outputName == output {
            for (f, b) in [(ScalarFormat.omJSON, 1), (.omJSON, 50), (.sweJSON, 1)]
            where (format == nil || f == format) && (batch == nil || b == batch) {
                out.append(Case(output: s.outputName, format: f, batch: b))
            }
        }
        return out
    }

    /// Encodes `count` observations of each case into one reused buffer.
    public static func run(_ cases: [Case], count: Int) throws -> [Result] {
        let specs = OutputCatalogue.all(OutputOptions(uid: "urn:osh:rpi:bench0000000000"))
        let body = ByteBuffer(capacity: 64 * 1024)
        var results: [Result] = []
        for c in cases {
            guard let spec = specs.first(where: { $0.outputName == c.output }) else { continue }
            let encoder = try ObservationEncoder(spec: spec, format: c.format, foiID: c.format == .omJSON ? "0k0g" : nil)
            // Plausible, varying values: realistic digit counts matter for a text format.
            var values = [Double](repeating: 0, count: encoder.layout.valueCount)
            for i in values.indices { values[i] = 12.345678 + Double(i) * 3.21 }
            var time = 1_773_853_535.951
            var bytes = 0
            var inBatch = 0
            let start = Clock.monotonicNanoseconds()
            try values.withUnsafeMutableBufferPointer { v in
                for n in 0..<count {
                    if inBatch == 0 {
                        body.reset()
                        if c.batch > 1 { ObservationEncoder.beginBatch(body) }
                    } else {
                        ObservationEncoder.batchSeparator(body)
                    }
                    v[n % v.count] += 0.000123
                    try encoder.encode(time: time, values: UnsafeBufferPointer(v), into: body)
                    time += 0.1
                    inBatch += 1
                    if inBatch == c.batch || n == count - 1 {
                        if c.batch > 1 { ObservationEncoder.endBatch(body) }
                        bytes += body.count
                        inBatch = 0
                    }
                }
            }
            let elapsed = Clock.monotonicNanoseconds() - start
            results.append(
                Result(
                    case: c, observations: count,
                    nanosPerObservation: Double(elapsed) / Double(max(count, 1)),
                    bytesPerObservation: Double(bytes) / Double(max(count, 1))))
        }
        return results
    }
}
