import OSHCore
import OSHPlatform

// Simulated IMU chips for the one I²C mocking seam: register maps laid out as the datasheets
// give them, producing data registers from a physical truth converted to counts with the
// range the driver CONFIGURED — so a driver that converts with another scale reads wrong
// values and its test fails. Faults are injected through SimulatedI2CBus.

/// What ideal sensors read: a function of the simulated time (seconds).
public typealias IMUTruthSource = (Double) -> SimulatedMotion.Truth

/// Common part: the truth, the simulated clock, how the chip sits on the board, and the
/// "new sample since the status was last read" bookkeeping behind data-ready bits.
open class SimulatedIMUChip: RegisterMapDevice {
    public var truth: IMUTruthSource
    /// Simulated time in seconds; tests move it by hand, the demo follows the monotonic clock.
    public var clock: () -> Double
    /// The chip's mounting on the board: chip-frame vectors = mounting⁻¹(device-frame truth).
    public var mounting: AxisMap
    /// Temperature the die reports (°C).
    public var temperature = 25.0
    private var lastSampleIndex: Int64 = .min

    public init(registers: [UInt8: UInt8], truth: @escaping IMUTruthSource, clock: @escaping () -> Double, mounting: AxisMap = .identity) {
        self.truth = truth
        self.clock = clock
        self.mounting = mounting
        super.init(registers: registers)
    }

    /// The truth at the current time in the chip's own axes (the orientation is unchanged).
    public func chipTruth() -> SimulatedMotion.Truth { chipTruth(at: clock()) }

    /// The truth at simulated time `time` in the chip's own axes (FIFO samples made in the past).
    public func chipTruth(at time: Double) -> SimulatedMotion.Truth {
        var t = truth(time)
        t.gyro = mounting.inverse(t.gyro)
        t.accel = mounting.inverse(t.accel)
        t.mag = mounting.inverse(t.mag)
        return t
    }

    /// True once per sample period at `rate` Hz: a new conversion happened since the last call.
    public func takeNewSample(rate: Double) -> Bool {
        guard rate > 0 else { return false }
        let index = Int64((clock() * rate).rounded(.down))
        if index == lastSampleIndex { return false }
        lastSampleIndex = index
        return true
    }

    public func forgetSamples() { lastSampleIndex = .min }

    /// Stores a signed 16-bit value at `reg`, big- or little-endian.
    public func store(_ v: Int16, at reg: Int, bigEndian: Bool) {
        let u = UInt16(bitPattern: v)
        let hi = UInt8(u >> 8), lo = UInt8(u & 0xFF)
        registers[reg] = bigEndian ? hi : lo
        registers[reg + 1] = bigEndian ? lo : hi
    }

    public func store(_ v: IMUVector, perCount: Double, at reg: Int, bigEndian: Bool) {
        store(IMUConvert.counts(v.x, perCount: perCount), at: reg, bigEndian: bigEndian)
        store(IMUConvert.counts(v.y, perCount: perCount), at: reg + 2, bigEndian: bigEndian)
        store(IMUConvert.counts(v.z, perCount: perCount), at: reg + 4, bigEndian: bigEndian)
    }
}

/// A hardware FIFO: whole samples appended at the configured rate as the simulated clock
/// passes each sample instant (index k at k/rate, made from the truth at that time), bytes
/// drained one by one by reads. When a sample finds no room, `overflowed` is set and either
/// the sample is dropped (stop-when-full: MPU-6500/9250 FIFO_MODE = 1, ICM-20948 snapshot) or
/// the oldest bytes give way (MPU-6050 byte-wise, which misaligns frames; LSM6DSOX continuous
/// mode, whole 7-byte words).
public final class SimulatedFIFO {
    public enum WhenFull: Sendable { case stop, overwriteBytes, overwriteWords(Int) }
    public let capacity: Int
    public var whenFull: WhenFull
    public private(set) var overflowed = false
    /// Samples that found no room (dropped or pushed out older ones).
    public private(set) var overflowedSamples = 0
    /// Samples appended since the model was made.
    public private(set) var written = 0
    private var bytes: [UInt8] = []
    private var head = 0
    private var lastIndex: Int64?

    public init(capacity: Int, whenFull: WhenFull) {
        self.capacity = capacity
        self.whenFull = whenFull
    }

    public var count: Int { bytes.count - head }
    public var running: Bool { lastIndex != nil }

    /// Empties it (a FIFO reset); whether it runs is unchanged.
    public func clear() {
        bytes.removeAll(keepingCapacity: true)
        head = 0
        overflowed = false
    }

    /// Starts taking samples from the next sample instant after `now` (FIFO enabled).
    public func start(at now: Double, rate: Double) {
        if lastIndex == nil { lastIndex = Int64((now * rate).rounded(.down)) }
    }

    /// Stops taking samples; what it holds stays readable.
    public func stop() { lastIndex = nil }

    public func clearOverflow() { overflowed = false }

    /// Appends every sample due by `now` at `rate` Hz; `frame(t)` makes the bytes of one.
    public func advance(to now: Double, rate: Double, frame: (Double) -> [UInt8]) {
        guard let last = lastIndex, rate > 0 else { return }
        let index = Int64((now * rate).rounded(.down))
        guard index > last else { return }
        // A long jump (a test moving the clock by minutes) need not make every lost sample.
        let keep: Int64 = Int64(capacity) + 2
        var first = last + 1
        if index - first > keep {
            overflowedSamples += Int(index - first - keep)
            overflowed = true
            first = index - keep
        }
        for k in first...index { append(frame(Double(k) / rate)) }
        lastIndex = index
    }

    private func append(_ f: [UInt8]) {
        written += 1
        if count + f.count > capacity {
            overflowed = true
            overflowedSamples += 1
            switch whenFull {
            case .stop: return
            case .overwriteBytes: head += count + f.count - capacity
            case .overwriteWords(let w):
                let excess = count + f.count - capacity
                head += (excess + w - 1) / w * w
            }
        }
        bytes.append(contentsOf: f)
        if head > 4096 {
            bytes.removeFirst(head)
            head = 0
        }
    }

    /// The next byte; an empty FIFO reads 0 (the count said not to read it).
    public func pop() -> UInt8 {
        guard head < bytes.count else { return 0 }
        head += 1
        return bytes[head - 1]
    }

    /// Stores a signed 16-bit value into `out`, big- or little-endian.
    public static func append(_ v: Int16, to out: inout [UInt8], bigEndian: Bool) {
        let u = UInt16(bitPattern: v)
        let hi = UInt8(u >> 8), lo = UInt8(u & 0xFF)
        out.append(bigEndian ? hi : lo)
        out.append(bigEndian ? lo : hi)
    }

    public static func append(_ v: IMUVector, perCount: Double, to out: inout [UInt8], bigEndian: Bool) {
        append(IMUConvert.counts(v.x, perCount: perCount), to: &out, bigEndian: bigEndian)
        append(IMUConvert.counts(v.y, perCount: perCount), to: &out, bigEndian: bigEndian)
        append(IMUConvert.counts(v.z, perCount: perCount), to: &out, bigEndian: bigEndian)
    }
}

/// AKM magnetometers: the AK8963 (in the MPU-9250) and the AK09916 (in the ICM-20948).
/// Reading ST2 releases the data: DRDY stays clear until the next conversion after that.
public final class SimulatedAKMagnetometer: SimulatedIMUChip {
    public enum Model: Sendable { case ak8963, ak09916 }
    public let model: Model
    /// AK8963 fuse-ROM sensitivity adjustment bytes (ASAX/Y/Z).
    public var asa: (UInt8, UInt8, UInt8) = (176, 177, 165)
    /// When false the chip NACKs (the MPU-9250 not in bypass hides it).
    public var reachable: () -> Bool = { true }
    /// The rotation from the host IMU's frame into this die's axes.
    private let toDie: (IMUVector) -> IMUVector

    private var st1: Int { model == .ak8963 ? 0x02 : 0x10 }
    private var st2: Int { model == .ak8963 ? 0x09 : 0x18 }
    private var mode: UInt8 { model == .ak8963 ? registers[0x0A] & 0x0F : registers[0x31] & 0x1F }

    public init(model: Model, truth: @escaping IMUTruthSource, clock: @escaping () -> Double, mounting: AxisMap = .identity) {
        self.model = model
        if model == .ak8963 {
            toDie = { IMUConvert.mpu9250ToAK8963($0) }
        } else {
            toDie = { IMUConvert.icm20948ToAK09916($0) }
        }
        super.init(registers: [:], truth: truth, clock: clock, mounting: mounting)
        reset()
    }

    public func reset() {
        for i in registers.indices { registers[i] = 0 }
        registers[0] = 0x48
        if model == .ak8963 { registers[1] = 0x9A } else { registers[1] = 0x09 }
        forgetSamples()
    }

    /// Measurement rate of the current mode (0: not measuring continuously).
    var rate: Double {
        switch (model, mode) {
        case (.ak8963, 0x02): return 8
        case (.ak8963, 0x06): return 100
        case (.ak09916, 0x02): return 10
        case (.ak09916, 0x04): return 20
        case (.ak09916, 0x06): return 50
        case (.ak09916, 0x08): return 100
        default: return 0
        }
    }

    public override func readRegister(_ register: UInt8) -> UInt8 {
        let r = Int(register)
        if model == .ak8963, (0x10...0x12).contains(r) {
            // The adjustment ROM reads as zero outside fuse-ROM mode.
            guard mode == 0x0F else { return 0 }
            return r == 0x10 ? asa.0 : (r == 0x11 ? asa.1 : asa.2)
        }
        let v = registers[r]
        if r == st2 { registers[st1] &= ~0x01 }  // ST2 read: data released
        return v
    }

    public override func writeRegister(_ register: UInt8, _ value: UInt8) {
        switch (model, register) {
        case (.ak8963, 0x0B), (.ak09916, 0x32):
            if value & 0x01 != 0 { reset() }
        case (.ak8963, 0x0A), (.ak09916, 0x31):
            registers[Int(register)] = value
            forgetSamples()
        default:
            break  // data and status registers are read-only
        }
    }

    public override func transfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws {
        guard reachable() else { throw SimulatedI2CFault.nack }
        if read.count > 0, let start = write.first, Int(start) >= st1, Int(start) <= st2 { latch() }
        try super.transfer(write: write, read: read)
    }

    /// A new conversion, if one is due: data registers, DRDY, and HOFL on overflow.
    func latch() {
        guard takeNewSample(rate: rate) else { return }
        let die = toDie(chipTruth().mag)
        var perCount = IMUConvert.ak09916MicroteslaPerCount
        if model == .ak8963 {
            let sixteen = registers[0x0A] & 0x10 != 0
            let s = IMUConvert.ak8963Scale(asa: asa, sixteenBit: sixteen)
            // Raw counts are before the sensitivity adjustment the host applies.
            store(IMUConvert.counts(die.x, perCount: s.x), at: 0x03, bigEndian: false)
            store(IMUConvert.counts(die.y, perCount: s.y), at: 0x05, bigEndian: false)
            store(IMUConvert.counts(die.z, perCount: s.z), at: 0x07, bigEndian: false)
            registers[st2] = sixteen ? 0x10 : 0x00
            perCount = s.x
        } else {
            store(die, perCount: perCount, at: 0x11, bigEndian: false)
            registers[st2] = 0
        }
        // 4912 µT is the AKM measurement range: beyond it the chip flags an overflow.
        if abs(die.x) > 4912 || abs(die.y) > 4912 || abs(die.z) > 4912 { registers[st2] |= 0x08 }
        registers[st1] |= 0x01
    }
}
