import OSHCore
import OSHPlatform

/// The outputs no device paces, sampled at their rates: the board's health (`device_health`) and,
/// for a simulated source, the linked simulation's values (`SimulationHooks`). Outputs that share a
/// rate share one timer on the loop's grid, so they are read in one wake-up. Missed ticks are not
/// back-filled: a reading is taken now, once.
final class TimedSampler {
    /// Each simulated GPS position (lat, lon, height, epoch seconds): true north needs it.
    var onPosition: ((Double, Double, Double, Double) -> Void)?

    private let loop: EventLoop
    private let specs: [OutputSpec]
    private let gate: OutputGate
    private let publisher: Publisher
    private let clock: ClockGate
    private let healthPort: OutputPort<DeviceHealthSample>?
    private let health: HealthProbe
    /// One timer per period (ns), and the outputs it samples, in datastream order.
    private var groups: [UInt64: (timer: EventLoop.Timer, outputs: [Int])] = [:]
    /// The pending first reading of each slow output, by output: dropped once it fires, cancelled
    /// when the output is re-armed or stopped (rate commands would otherwise pile them up).
    private var firstReadings: [Int: EventLoop.Timer] = [:]
    /// Simulated values, sized once from the widest record.
    private let scratch: UnsafeMutableBufferPointer<Double>
    private let startTime = Double(Clock.monotonicNanoseconds()) / 1e9

    init(
        loop: EventLoop, specs: [OutputSpec], gate: OutputGate, publisher: Publisher, clock: ClockGate,
        healthPort: OutputPort<DeviceHealthSample>?, diskPath: String
    ) {
        self.loop = loop
        self.specs = specs
        self.gate = gate
        self.publisher = publisher
        self.clock = clock
        self.healthPort = healthPort
        health = HealthProbe(diskPath: diskPath)
        scratch = .allocate(capacity: specs.map { $0.leaves.count }.max() ?? 1)
    }

    deinit { scratch.deallocate() }

    func isSampling(_ i: Int) -> Bool { groups.values.contains { $0.outputs.contains(i) } }

    /// Samples output `i` at `rate` Hz from now on (again, after a rate change).
    func arm(_ i: Int, rate live: Double) throws {
        remove(i)
        // Recorded faster than it streams: sampled at the recording's rate, the gate thins the live stream.
        let rate = max(live, gate.recorder?.rates[i] ?? 0)
        let period = UInt64((1e9 / max(rate, 0.001)).rounded())
        if var g = groups[period] {
            g.outputs.append(i)
            g.outputs.sort()
            groups[period] = g
            return
        }
        let t = try loop.addAlignedTimer(every: period) { [unowned self] _ in self.tick(period) }
        groups[period] = (t, [i])
        // A slow output (device_health: once a minute) would otherwise wait up to a whole period
        // for its grid: its first reading is taken now, as before the grid.
        if period > 1_000_000_000 {
            firstReadings[i] = try loop.addTimer(firstAt: loop.deadline(after: 0.05)) { [unowned self] _ in
                if let t = self.firstReadings.removeValue(forKey: i) { self.loop.cancel(t) }
                self.sample(i)
            }
        }
    }

    func stop() {
        for g in groups.values { loop.cancel(g.timer) }
        groups.removeAll()
        for t in firstReadings.values { loop.cancel(t) }
        firstReadings.removeAll()
    }

    private func remove(_ i: Int) {
        if let t = firstReadings.removeValue(forKey: i) { loop.cancel(t) }
        for (period, var g) in groups {
            guard let k = g.outputs.firstIndex(of: i) else { continue }
            g.outputs.remove(at: k)
            if g.outputs.isEmpty {
                loop.cancel(g.timer)
                groups[period] = nil
            } else {
                groups[period] = g
            }
        }
    }

    private func tick(_ period: UInt64) {
        guard let outputs = groups[period]?.outputs else { return }
        for i in outputs { sample(i) }
    }

    private func sample(_ i: Int) {
        // A disabled output is still recorded: the recording does not depend on the link.
        let recording = gate.recorder?.isRecording(i) ?? false
        guard gate.enabled[i] || recording else { return }
        // This timer is the output's rate, unless it runs faster for the recording: then the gate thins.
        let always = !recording || (gate.recorder?.rates[i] ?? 0) <= gate.rates[i]
        let now = Double(Clock.monotonicNanoseconds()) / 1e9
        if let p = healthPort, p.datastream == i {
            p.send(healthSample(), at: now, always: always)
            return
        }
        let out = UnsafeMutableBufferPointer(rebasing: scratch[0..<(specs[i].leaves.count - 1)])
        guard SimulationHooks.provider?.fill(specs[i].kind, at: now - startTime, into: out) == true else { return }
        if specs[i].kind == .gps, out.count >= 3 { onPosition?(out[0], out[1], out[2], Clock.realtimeSeconds()) }
        gate.record(i, monotonicTime: now, values: UnsafeBufferPointer(out), always: always)
    }

    private func healthSample() -> DeviceHealthSample {
        let r = health.read()
        var h = DeviceHealthSample()
        h.cpuTemperature = r.cpuTemperature
        h.underVoltage = r.underVoltage
        h.throttled = r.throttled
        h.throttleFlags = Double(r.throttleFlags)
        h.loadAverage = r.loadAverage
        h.memoryAvailable = r.memoryAvailableMB
        h.diskFree = r.diskFreePercent
        h.queueDepth = Double(publisher.ring.occupied)
        var dropped = 0
        for i in specs.indices { dropped += publisher.counters(i).dropped }
        h.droppedCount = Double(dropped)
        h.uptime = r.uptimeSeconds
        h.clockSynchronized = clock.state.isSynchronized
        return h
    }
}
