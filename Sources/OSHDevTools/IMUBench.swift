import OSHCore
import OSHPlatform
import OSHAgent
import OSHSimulation

/// `osh-edge-dev bench imu`: the cost of one IMU sample through the real driver on the simulated
/// bus (driver + convert + simulator on this host; on a Pi the ioctl and the wire add to it),
/// and the bytes and wire time one sample takes on a real bus at 100 and 400 kHz.
/// Allocations: run the command under valgrind at N and 2N reads (scripts/bench-allocs.sh style);
/// the driver's read path is written to allocate nothing.
public enum IMUBench {
    public struct Result: Sendable {
        public var chip: String
        public var reads: Int
        public var nanosPerRead: Double
        /// Bytes on the wire per sample (addresses, register pointers, data).
        public var wireBytesPerRead: Int
        public var transactionsPerRead: Int
        /// Wire time per sample: 9 bits per byte plus start/repeated-start/stop.
        public func wireMicroseconds(atHz hz: Double) -> Double {
            let bits = Double(wireBytesPerRead * 9 + transactionsPerRead * 3)
            return bits / hz * 1e6
        }
    }

    public static func run(chip: String, count: Int) throws -> Result {
        let bus = SimulatedI2CBus(recordsTrace: true)
        var t = 0.0
        let motion = SimulatedMotion()
        _ = try SimulatedIMUBoard.attach(to: bus, chip: chip, motion: motion, clock: { t })
        let driver = try IMUDrivers.open(bus: bus, chip: chip, sleep: { _ in })
        var sample = IMUSample()
        // One traced read for the wire budget, then the timed loop without tracing.
        bus.clearTrace()
        t += 0.01
        _ = try driver.read(into: &sample)
        let trace = bus.trace
        let bytes = trace.reduce(0) { $0 + 1 + $1.written.count + ($1.readCount > 0 ? 1 + $1.readCount : 0) }
        bus.recordsTrace = false
        bus.clearTrace()
        var sink = 0.0
        let start = Clock.monotonicNanoseconds()
        for _ in 0..<count {
            t += 0.01
            _ = try driver.read(into: &sample)
            sink += sample.gyro.z
        }
        let ns = Double(Clock.monotonicNanoseconds() - start) / Double(max(1, count))
        if sink.isNaN { Log.info("impossible") }  // keeps the loop from being optimised away
        return Result(
            chip: driver.identity.name, reads: count, nanosPerRead: ns, wireBytesPerRead: bytes,
            transactionsPerRead: trace.count)
    }
}
