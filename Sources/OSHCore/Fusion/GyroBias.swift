// Gyro bias at rest. MEMS gyros read a few tenths to a few °/s when still, and the
// offset wanders with temperature; integrated, it turns into heading drift. While the
// board is still (the gyro and the accelerometer barely move over a block of samples),
// the gyro mean *is* the bias, so we average still blocks and subtract.

/// When a block of samples counts as "still".
public struct StillnessSettings: Sendable, Equatable {
    /// Length of one block (s).
    public var blockSeconds = 1.0
    /// Largest per-axis standard deviation of the gyro within a still block (rad/s).
    public var gyroStdMax = 0.02
    /// Largest per-axis standard deviation of the accelerometer within a still block (m/s²).
    public var accelStdMax = 0.15
    /// A block whose mean rate exceeds this (rad/s) is motion, not bias (MEMS bias is < ~5°/s).
    public var biasMax = 0.1
    /// Still blocks averaged (older ones fade): more = steadier, fewer = follows temperature faster.
    public var blocksAveraged = 10
    public init() {}
}

/// Running per-axis mean and variance over one block (no buffer: sums only).
struct BlockStats {
    var n = 0.0
    var sum = Vector3.zero
    var sumSq = Vector3.zero
    mutating func add(_ v: Vector3) {
        n += 1
        sum = sum + v
        sumSq = sumSq + Vector3(v.x * v.x, v.y * v.y, v.z * v.z)
    }
    var mean: Vector3 { sum * (1 / max(n, 1)) }
    /// Largest per-axis standard deviation.
    var maxStd: Double {
        let m = mean
        let vx = sumSq.x / max(n, 1) - m.x * m.x, vy = sumSq.y / max(n, 1) - m.y * m.y, vz = sumSq.z / max(n, 1) - m.z * m.z
        return max(vx, vy, vz, 0).squareRoot()
    }
}

/// Learns the gyro bias from still periods.
public struct GyroBiasEstimator: Sendable {
    public var settings: StillnessSettings
    /// Current estimate (rad/s), subtracted from every gyro sample.
    public private(set) var bias = Vector3.zero
    /// Still blocks seen so far (0 = no estimate yet).
    public private(set) var stillBlocks = 0
    /// Whether the last completed block was still.
    public private(set) var isStill = false

    private var elapsed = 0.0
    private var gyro = BlockStats()
    private var accel = BlockStats()

    public init(settings: StillnessSettings = StillnessSettings()) { self.settings = settings }

    /// Feeds one raw gyro (rad/s) and accelerometer (m/s²) sample; returns the bias-corrected rate.
    public mutating func update(gyro g: Vector3, accel a: Vector3, dt: Double) -> Vector3 {
        gyro.add(g)
        accel.add(a)
        elapsed += dt
        if elapsed >= settings.blockSeconds {
            let mean = gyro.mean
            isStill =
                gyro.n >= 5 && gyro.maxStd <= settings.gyroStdMax && accel.maxStd <= settings.accelStdMax
                && mean.norm <= settings.biasMax
            if isStill {
                stillBlocks += 1
                let weight = 1 / Double(min(stillBlocks, max(settings.blocksAveraged, 1)))
                bias = bias + (mean - bias) * weight
            }
            gyro = BlockStats()
            accel = BlockStats()
            elapsed = 0
        }
        return g - bias
    }

    /// Sets a known bias (e.g. from a previous run) as if it had been averaged over `blocks`.
    public mutating func seed(_ b: Vector3, blocks: Int = 1) {
        bias = b
        stillBlocks = blocks
    }
}
