#if canImport(Glibc)
import Glibc  // libm only (sin, cos, pow)
#elseif canImport(Musl)
import Musl
#endif
import OSHCore

// Simulated sensors for `osh-edge-dev demo` and tests: physically plausible values in
// each output's leaf order, a pure function of time so runs are reproducible.
// They stand in for the drivers until the sensor issues land.

public struct SimulatedSensors: Sendable {
    /// Where the simulated GPS walks (a 200 m circle around this point).
    public var latitude = 48.8584
    public var longitude = 2.2945
    public var altitude = 35.0
    public var seed: UInt64

    public init(seed: UInt64 = 1) { self.seed = seed }

    /// Values (time leaf excluded) for `spec` at `t` seconds since the demo started.
    public func values(for spec: OutputSpec, at t: Double) -> [Double] {
        var out = [Double](repeating: 0, count: max(0, spec.leaves.count - 1))
        out.withUnsafeMutableBufferPointer { fill(spec.kind, at: t, into: $0) }
        return out
    }

    /// Writes the values of the output of `kind` into `out` without allocating (the demo's steady state).
    public func fill(_ kind: OutputKind, at t: Double, into out: UnsafeMutableBufferPointer<Double>) {
        let yaw = (10 * t).truncatingRemainder(dividingBy: 360)  // turning 10°/s
        let pitch = 5 * sin(t * 0.5)
        let roll = 3 * sin(t * 0.3 + 1)
        for i in out.indices { out[i] = 0 }
        switch kind {
        case .gps where out.count >= 3:
            let angle = t / 120 * 2 * Double.pi  // one lap in 2 minutes
            let r = 200.0
            out[0] = latitude + r * cos(angle) / 111_320
            out[1] = longitude + r * sin(angle) / (111_320 * cos(latitude * .pi / 180))
            out[2] = altitude + 0.5 * sin(t / 7) + noise(t, 1) * 0.2
        case .quatOrientation where out.count >= 4:
            let q = quaternion(headingDeg: yaw, pitchDeg: pitch, rollDeg: roll)
            out[0] = q.x; out[1] = q.y; out[2] = q.z; out[3] = q.w
        case .eulerOrientation where out.count >= 3:
            out[0] = yaw > 180 ? yaw - 360 : yaw
            out[1] = pitch
            out[2] = roll
        case .barometer where out.count >= 2:
            let p = 1013.25 + 0.8 * sin(t / 600) + noise(t, 2) * 0.02
            out[0] = p
            // Barometric formula, relative to the first sample (t = 0), as CMAltimeter reports.
            let p0 = 1013.25 + noise(0, 2) * 0.02
            out[1] = 44_330 * (1 - pow(p / p0, 1 / 5.255))
        case .temperature where out.count >= 1:
            out[0] = 21.5 + 0.5 * sin(t / 600) + noise(t, 8) * 0.05
        case .humidity where out.count >= 1:
            out[0] = 45 + 5 * sin(t / 900) + noise(t, 9) * 0.3
        case .audioLevel where out.count >= 2:
            let burst = sin(t * 0.7) > 0.95 ? 25.0 : 0
            let rms = -45 + 3 * noise(t, 3) + burst
            out[0] = rms
            out[1] = min(0, rms + 9 + 2 * noise(t, 4))
        case .accelerometer where out.count >= 3:
            // Gravity seen by a tilted board, plus a little vibration.
            let pr = pitch * .pi / 180, rr = roll * .pi / 180
            out[0] = -9.80665 * sin(pr) + 0.02 * noise(t, 5)
            out[1] = 9.80665 * sin(rr) * cos(pr) + 0.02 * noise(t, 6)
            out[2] = 9.80665 * cos(rr) * cos(pr) + 0.02 * noise(t, 7)
        case .gyroscope where out.count >= 3:
            out[0] = 2.5 * 0.5 * cos(t * 0.5) * .pi / 180
            out[1] = 0.9 * cos(t * 0.3 + 1) * .pi / 180
            out[2] = 10 * .pi / 180
        case .magnetometer where out.count >= 3:
            // A 48 µT field, 60° inclination, seen from a board turning about Z.
            let h = yaw * .pi / 180
            out[0] = 24 * cos(h)
            out[1] = -24 * sin(h)
            out[2] = -41.6
        default:
            break  // device_health's real values come from the board (HealthProbe); the rest read zero
        }
    }

    /// ENU quaternion (x, y, z, w) for heading (about Z), pitch (about X), roll (about Y).
    public static func quaternionComponents(
        headingDeg h: Double, pitchDeg p: Double, rollDeg r: Double
    ) -> (x: Double, y: Double, z: Double, w: Double) {
        let (hz, px, ry) = (h * .pi / 360, p * .pi / 360, r * .pi / 360)
        let (cz, sz, cx, sx, cy, sy) = (cos(hz), sin(hz), cos(px), sin(px), cos(ry), sin(ry))
        // q = qz(h) · qx(p) · qy(r)
        let w = cz * cx * cy - sz * sx * sy
        let x = cz * sx * cy - sz * cx * sy
        let y = cz * cx * sy + sz * sx * cy
        let z = sz * cx * cy + cz * sx * sy
        return (x, y, z, w)
    }

    func quaternion(headingDeg: Double, pitchDeg: Double, rollDeg: Double) -> (x: Double, y: Double, z: Double, w: Double) {
        Self.quaternionComponents(headingDeg: headingDeg, pitchDeg: pitchDeg, rollDeg: rollDeg)
    }

    /// Deterministic noise in [-1, 1] from time and a channel (a hash, not a generator: no state).
    func noise(_ t: Double, _ channel: UInt64) -> Double {
        var x = (UInt64(bitPattern: Int64(t * 1000)) &+ channel &* 0x9E37_79B9_7F4A_7C15) ^ seed
        x ^= x >> 33; x = x &* 0xff51afd7ed558ccd; x ^= x >> 33; x = x &* 0xc4ceb9fe1a85ec53; x ^= x >> 33
        return Double(x >> 11) / Double(1 << 53) * 2 - 1
    }
}
