import OSHCore
import OSHPlatform

/// The IMU's samples → the inertial outputs: acceleration, angular rate and magnetic field as
/// they come, and quat and euler through the orientation filter (or the BNO055's own fusion),
/// turned to true north once a GPS fix gives the declination. The IMU input holds this stage;
/// the stage holds the runtime's ports, not the runtime.
final class OrientationStage {
    private struct Ports {
        var quaternion: OutputPort<QuaternionSample>?
        var euler: OutputPort<EulerSample>?
        var acceleration: OutputPort<AccelerationSample>?
        var angularRate: OutputPort<AngularRateSample>?
        var magneticField: OutputPort<MagneticFieldSample>?
    }

    private var ports = Ports()
    private var filter: OrientationFilter
    private let rateHz: Double
    private let north: NorthReference
    /// The runtime's declination at the GPS fix, once connected.
    private var trueNorth: TrueNorth?
    private var lastTime: Double?

    init(plan: HardwarePlan) {
        var s = FusionSettings()
        s.rateHz = plan.imuRate
        s.algorithm = plan.devices.fusion.algorithm
        if plan.devices.fusion.gain > 0 {
            if s.algorithm == .madgwick { s.beta = plan.devices.fusion.gain } else { s.kp = plan.devices.fusion.gain }
        }
        if let cal = try? MagCalibration(offset: plan.devices.fusion.magOffset, matrix: plan.devices.fusion.magMatrix) {
            s.magCalibration = cal
        }
        // The IMU input applies the mounting map to every vector, so the filter sees device axes.
        filter = OrientationFilter(settings: s)
        rateHz = plan.imuRate
        north = plan.north
    }

    /// Takes the inertial outputs' ports (checking each sample type against its record).
    func connect(_ outputs: OutputConnections) throws {
        trueNorth = outputs.trueNorth
        ports = Ports(
            quaternion: try outputs.port(QuaternionSample.self), euler: try outputs.port(EulerSample.self),
            acceleration: try outputs.port(AccelerationSample.self), angularRate: try outputs.port(AngularRateSample.self),
            magneticField: try outputs.port(MagneticFieldSample.self))
    }

    func sample(_ s: IMUSample) {
        let dt = lastTime.map { s.t - $0 } ?? 1 / rateHz
        lastTime = s.t
        let o: AndroidOrientation
        if let q = s.quaternion {
            // The BNO055 fused on the chip.
            o = AndroidOrientation(Quaternion(w: q.w, x: q.x, y: q.y, z: q.z))
        } else {
            filter.update(
                gyro: Vector3(s.gyro.x, s.gyro.y, s.gyro.z), accel: Vector3(s.accel.x, s.accel.y, s.accel.z),
                mag: s.magIsNew ? s.mag.map { Vector3($0.x, $0.y, $0.z) } : nil, dt: dt)
            o = filter.android
        }
        var oriented = o
        if north == .true, let n = trueNorth, n.status != .noFixYet {
            oriented = AndroidOrientation(TrueNorth.rotate(o.quaternion, declinationDegrees: n.declination))
        }
        ports.quaternion?.send(QuaternionSample(x: oriented.x, y: oriented.y, z: oriented.z, w: oriented.w), at: s.t)
        ports.euler?.send(EulerSample(heading: oriented.heading, pitch: oriented.pitch, roll: oriented.roll), at: s.t)
        ports.acceleration?.send(AccelerationSample(x: s.accel.x, y: s.accel.y, z: s.accel.z), at: s.t)
        ports.angularRate?.send(AngularRateSample(x: s.gyro.x, y: s.gyro.y, z: s.gyro.z), at: s.t)
        if let m = s.mag, s.magIsNew {
            ports.magneticField?.send(MagneticFieldSample(x: m.x, y: m.y, z: m.z), at: s.t)
        }
    }
}
