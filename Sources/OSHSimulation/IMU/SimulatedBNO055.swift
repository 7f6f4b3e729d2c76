import OSHCore
import OSHPlatform

/// BNO055: page-0 register map with the chip IDs, OPR_MODE (unit and axis registers
/// writable only in CONFIG mode), UNIT_SEL, AXIS_MAP_CONFIG/SIGN applied to every output, and
/// in NDOF mode the raw vectors, Euler angles and quaternion from the truth.
///
/// The quaternion is modelled as the orientation of the remapped chip frame in ENU — the
/// truth's convention. The real chip's fused reference frame (and its Android/Windows
/// orientation bit) must be checked on hardware; the driver passes it through as read.
public final class SimulatedBNO055: SimulatedIMUChip {
    typealias R = BNO055Driver.Reg
    public var unitsWritesIgnored = 0
    /// The axis registers decoded when written (not per sample: decoding allocates).
    public private(set) var axisMap: AxisMap? = .identity

    public init(truth: @escaping IMUTruthSource, clock: @escaping () -> Double, mounting: AxisMap = .identity) {
        super.init(registers: [:], truth: truth, clock: clock, mounting: mounting)
        powerOnReset()
    }

    public func powerOnReset() {
        for i in registers.indices { registers[i] = 0 }
        load([0xA0, 0xFB, 0x32, 0x0F, 0x11, 0x03, 0x15], at: 0x00)  // chip, acc, mag, gyr IDs, SW rev, BL rev
        registers[Int(R.unitSel)] = 0x80
        registers[Int(R.axisMapConfig)] = 0x24
        registers[Int(R.axisMapSign)] = 0x00
        decodeAxisMap()
        forgetSamples()
    }

    public var mode: UInt8 { registers[Int(R.oprMode)] & 0x0F }
    var fusing: Bool { mode >= 0x08 }

    /// The output frame the axis registers select, nil if they describe no rotation.
    private func decodeAxisMap() {
        let c = registers[Int(R.axisMapConfig)], s = registers[Int(R.axisMapSign)]
        axisMap = AxisMap(
            source: (Int(c & 3), Int(c >> 2 & 3), Int(c >> 4 & 3)),
            sign: (s & 4 != 0 ? -1 : 1, s & 2 != 0 ? -1 : 1, s & 1 != 0 ? -1 : 1))
    }

    public override func writeRegister(_ register: UInt8, _ value: UInt8) {
        switch register {
        case 0x00...0x06, 0x08...0x3A: return  // IDs, data and status are read-only
        case R.unitSel, R.axisMapConfig, R.axisMapSign, 0x55...0x6A:
            guard mode == R.configMode else { unitsWritesIgnored += 1; return }
        case R.oprMode:
            forgetSamples()
        default: break
        }
        super.writeRegister(register, value)
        if register == R.axisMapConfig || register == R.axisMapSign { decodeAxisMap() }
    }

    public override func transfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws {
        if read.count > 0, let start = write.first, (0x08...0x35).contains(start) { latch() }
        try super.transfer(write: write, read: read)
    }

    func latch() {
        registers[Int(R.sysStatus)] = fusing ? R.fusionRunning : 0
        guard fusing, takeNewSample(rate: 100), let map = axisMap else { return }
        let t = chipTruth()
        let units = registers[Int(R.unitSel)]
        let accelPer = units & 1 != 0 ? IMUConvert.standardGravity / 1000 : IMUConvert.bno055AccelScale
        let gyroPer = units & 2 != 0 ? IMUConvert.bno055GyroScale : IMUConvert.radiansPerDegree / 16
        store(map.apply(t.accel), perCount: accelPer, at: 0x08, bigEndian: false)
        store(map.apply(t.mag), perCount: IMUConvert.bno055MagScale, at: 0x0E, bigEndian: false)
        store(map.apply(t.gyro), perCount: gyroPer, at: 0x14, bigEndian: false)
        let eulerPer = units & 4 != 0 ? 1.0 / 900 / IMUConvert.radiansPerDegree : 1.0 / 16
        store(IMUConvert.counts(t.headingDeg, perCount: eulerPer), at: 0x1A, bigEndian: false)
        store(IMUConvert.counts(t.rollDeg, perCount: eulerPer), at: 0x1C, bigEndian: false)
        store(IMUConvert.counts(t.pitchDeg, perCount: eulerPer), at: 0x1E, bigEndian: false)
        // Orientation of the output frame: v_device = M·v_chip, v_out = A·v_chip, so
        // q_world←out = q_world←device · q_M · q_A⁻¹.
        let q = (t.orientation * mounting.quaternion * map.quaternion.conjugate).canonical
        let k = IMUConvert.bno055QuaternionScale
        store(IMUConvert.counts(q.w, perCount: k), at: 0x20, bigEndian: false)
        store(IMUConvert.counts(q.x, perCount: k), at: 0x22, bigEndian: false)
        store(IMUConvert.counts(q.y, perCount: k), at: 0x24, bigEndian: false)
        store(IMUConvert.counts(q.z, perCount: k), at: 0x26, bigEndian: false)
        registers[0x34] = UInt8(bitPattern: Int8(max(-128, min(127, temperature.rounded()))))
    }
}

/// What an IMU driver's chip is, simulated: the chip (and the magnetometer beside or inside it)
/// on `bus`, all but the IMU itself attached. Each simulated chip's file conforms its driver.
public protocol SimulatedIMUModel {
    func simulatedBoard(
        on bus: SimulatedI2CBus, address: UInt8, truth: @escaping IMUTruthSource, mounting: AxisMap,
        clock: @escaping () -> Double
    ) -> SimulatedIMUBoard
}

extension BNO055Driver: SimulatedIMUModel {
    public func simulatedBoard(
        on bus: SimulatedI2CBus, address: UInt8, truth: @escaping IMUTruthSource, mounting: AxisMap,
        clock: @escaping () -> Double
    ) -> SimulatedIMUBoard {
        SimulatedIMUBoard(
            chip: identity.name, address: address,
            imu: SimulatedBNO055(truth: truth, clock: clock, mounting: mounting), magnetometer: nil)
    }
}

/// A board with one IMU (and its magnetometer) on a simulated bus: what `osh-edge-dev demo` and
/// the tests attach. Chip names as `IMUDrivers.identities` spell them.
public final class SimulatedIMUBoard {
    public let chip: String
    public let address: UInt8
    public let imu: SimulatedIMUChip
    /// The separate or embedded magnetometer model, if any.
    public let magnetometer: SimulatedIMUChip?

    init(chip: String, address: UInt8, imu: SimulatedIMUChip, magnetometer: SimulatedIMUChip?) {
        self.chip = chip
        self.address = address
        self.imu = imu
        self.magnetometer = magnetometer
    }

    /// Attaches `chip` at `address` (nil: its default strap) driven by `motion`, on a clock
    /// that starts at 0 now (monotonic) unless one is given. The chip is mounted on the board
    /// per `mounting` (chip→device), so a matching mounting setting undoes it.
    public static func attach(
        to bus: SimulatedI2CBus, chip: String, address: UInt8? = nil,
        motion: SimulatedMotion = SimulatedMotion(), mounting: AxisMap = .identity,
        clock: (() -> Double)? = nil
    ) throws -> SimulatedIMUBoard {
        let start = Clock.monotonicNanoseconds()
        let clk = clock ?? { Double(Clock.monotonicNanoseconds() &- start) / 1e9 }
        return try attach(to: bus, chip: chip, address: address, truth: { motion.truth(at: $0) }, mounting: mounting, clock: clk)
    }

    /// The same with any truth (tests use constant vectors).
    public static func attach(
        to bus: SimulatedI2CBus, chip: String, address: UInt8? = nil,
        truth: @escaping IMUTruthSource, mounting: AxisMap = .identity,
        clock: @escaping () -> Double
    ) throws -> SimulatedIMUBoard {
        guard let entry = IMUDrivers.chip(named: chip) else {
            throw I2CError(
                .unexpectedResponse, bus: bus.number, address: address,
                operation: "simulating \"\(chip)\": not one of " + IMUDrivers.identities.map(\.name).joined(separator: ", "))
        }
        let id = entry.identity
        let a = address ?? id.addresses[0]
        // The driver's type carries its chip's model (SimulatedIMUModel, in its chip's file).
        let driver = entry.driver(bus: bus, address: a, whoAmI: id.idValues[0], settings: IMUDriverSettings(), sleep: { _ in })
        guard let model = driver as? SimulatedIMUModel else {
            throw I2CError(.unsupported, bus: bus.number, address: a, operation: "simulating \(id.name): no register model for its driver")
        }
        let board = model.simulatedBoard(on: bus, address: a, truth: truth, mounting: mounting, clock: clock)
        bus.attach(board.imu, at: a)
        return board
    }
}
