#if canImport(Glibc)
import Glibc
#endif
import OSHAgent
import OSHCore
import OSHPlatform
import OSHSimulation

// `calibrate mag --simulated` (osh-edge-dev): the calibration run against a tumbling simulated IMU.
extension MagCalibrationRun {
    /// The hard-iron offset (µT, device frame) the simulated board's magnetometer carries.
    public static let simulatedOffset = Vector3(23.5, -11.25, 37.75)

    /// A simulated MPU-9250 (+AK8963) on a simulated bus, tumbling through every orientation
    /// (`speed` × real time) in a 48 µT field, its magnetometer reading `simulatedOffset` more
    /// than the field — what a nearby steel screw does. `clock` overrides the time (tests).
    public static func simulatedBus(speed: Double = 20, clock: (() -> Double)? = nil) throws -> SimulatedI2CBus {
        let bus = SimulatedI2CBus(number: 1, recordsTrace: false)
        let start = Clock.monotonicNanoseconds()
        let clk = clock ?? { Double(Clock.monotonicNanoseconds() &- start) / 1e9 * speed }
        _ = try SimulatedIMUBoard.attach(to: bus, chip: IMUDrivers.mpu9250.name, truth: tumblingTruth, clock: clk)
        return bus
    }

    /// Three incommensurate rotations: over a minute of simulated time the board faces every way.
    public static func tumblingTruth(_ t: Double) -> SimulatedMotion.Truth {
        func q(_ angle: Double, _ x: Double, _ y: Double, _ z: Double) -> IMUQuaternion {
            IMUQuaternion(w: cos(angle / 2), x: x * sin(angle / 2), y: y * sin(angle / 2), z: z * sin(angle / 2))
        }
        let o = q(0.70 * t, 0, 0, 1) * q(0.45 * t + 0.3, 1, 0, 0) * q(0.29 * t, 0, 1, 0)
        let c = o.conjugate
        let incl = 60 * Double.pi / 180
        let field = IMUVector(0, 48 * cos(incl), -48 * sin(incl))
        let m = c.rotate(field)
        let off = simulatedOffset
        return SimulatedMotion.Truth(
            gyro: .zero, accel: c.rotate(IMUVector(0, 0, IMUConvert.standardGravity)),
            mag: IMUVector(m.x + off.x, m.y + off.y, m.z + off.z), orientation: o)
    }
}
