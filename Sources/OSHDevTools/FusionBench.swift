// `osh-edge-dev bench fusion`: orientation-filter updates per second, and (measured from
// outside with valgrind at two counts, scripts/bench-fusion-allocs.sh) heap allocations
// per update. The samples are generated once up front, so the timed loop is the filter.
import OSHCore
import OSHPlatform
#if canImport(Glibc)
import Glibc
#endif
import OSHAgent
import OSHSimulation

public enum FusionBench {
    public struct Result: Sendable {
        public var algorithm: FusionAlgorithm
        public var magnetometer: Bool
        public var updates: Int
        public var seconds: Double
        public var updatesPerSecond: Double { Double(updates) / max(seconds, 1e-12) }
        public var nanosPerUpdate: Double { seconds * 1e9 / Double(max(updates, 1)) }
    }

    /// Runs `count` updates of each algorithm, with and without magnetometer, over a
    /// 10-s loop of a tumbling board at 100 Hz (1000 distinct samples, cycled).
    public static func run(count: Int, algorithms: [FusionAlgorithm] = FusionAlgorithm.allCases) -> [Result] {
        let n = 1000
        let samples = UnsafeMutableBufferPointer<Vector3>.allocate(capacity: 3 * n)
        defer { samples.deallocate() }
        var truth = Quaternion.identity
        for i in 0..<n {
            let t = Double(i) / 100
            let w = Vector3(0.6 * sin(0.7 * t), 0.5 * sin(0.45 * t), 0.8 * sin(0.3 * t))
            truth = (truth * Quaternion(axis: w, angle: w.norm * 0.01)).normalized
            let toDevice = truth.matrix.transposed
            samples.initializeElement(at: 3 * i, to: w + Vector3(0.01, -0.01, 0.005))
            samples.initializeElement(at: 3 * i + 1, to: toDevice * Vector3(0, 0, 9.81))
            samples.initializeElement(at: 3 * i + 2, to: toDevice * Vector3(0, 20, -45))
        }
        var results: [Result] = []
        results.reserveCapacity(algorithms.count * 2)
        for algorithm in algorithms {
            for withMag in [true, false] {
                var settings = FusionSettings()
                settings.algorithm = algorithm
                var filter = OrientationFilter(settings: settings)
                var checksum = 0.0
                let start = Clock.monotonicNanoseconds()
                var k = 0
                for _ in 0..<count {
                    filter.update(gyro: samples[3 * k], accel: samples[3 * k + 1], mag: withMag ? samples[3 * k + 2] : nil, dt: 0.01)
                    checksum += filter.android.heading
                    k = k == n - 1 ? 0 : k + 1
                }
                let seconds = Double(Clock.monotonicNanoseconds() - start) / 1e9
                if !checksum.isFinite { Log.warning("fusion bench: the filter diverged") }
                results.append(Result(algorithm: algorithm, magnetometer: withMag, updates: count, seconds: seconds))
            }
        }
        return results
    }

    /// WMM evaluations per second (what a fix that moved > 1 km costs).
    public static func runWMM(count: Int) -> Double {
        let model = WorldMagneticModel()
        var sum = 0.0
        let start = Clock.monotonicNanoseconds()
        for i in 0..<count {
            sum +=
                model.field(latitude: Double(i % 170) - 85, longitude: Double(i % 360) - 180, heightKm: 0, decimalYear: 2026.5).declination
        }
        let seconds = Double(Clock.monotonicNanoseconds() - start) / 1e9
        if !sum.isFinite { Log.warning("wmm bench: non-finite result") }
        return Double(count) / max(seconds, 1e-12)
    }
}
