import CShim
import OSHCore
import OSHPlatform
#if canImport(Glibc)
import Glibc
#endif

/// Where `gps_data` comes from.
public enum GPSInputConfig: Sendable, Equatable {
    /// A receiver on a serial port (`/dev/serial0`, `/dev/ttyACM0`, a by-id link); nil baud = automatic.
    case serial(path: String, baud: Int?)
    /// A running gpsd (it owns the port; we read its TPV reports).
    case gpsd(host: String, port: UInt16)
    /// A recorded NMEA log replayed through a pseudo-terminal at one receiver cycle per second —
    /// the demo's GPS: real receiver data through the real serial path. Positions come from the
    /// log; observation times from the host clock (the log's dates are years old).
    case replay(logPath: String)
}

/// A GPS position as the agent records it (gps_data leaf order: lat, lon, alt).
struct GPSPosition {
    var epochTime: Double?  // the receiver's UTC time when its date is known and plausible
    var lat: Double
    var lon: Double
    var altHAE: Double  // NaN when the receiver gave no geoid separation
}

/// Runs one GPS input on the loop and hands positions to `onPosition`.
final class GPSInput {
    private let loop: EventLoop
    private var parser: NMEAParser
    private let notBefore: Double
    /// Decoded-sentence count when the serial source last asked: confirmation means "new valid NMEA since".
    private var decodedAtLastAsk = 0
    private var serial: SerialSource?
    private var gpsd: GPSDSource?
    private var replay: NMEAReplay?
    /// Where each fix goes (the runtime's gps_data path), set before `start`.
    var sink: ((GPSPosition) -> Void)?
    private(set) var stateText = "starting"
    private var lastFixAt = 0.0

    init(loop: EventLoop, config: GPSInputConfig, notBefore: Double) throws {
        self.loop = loop
        parser = NMEAParser(notBefore: notBefore)
        self.notBefore = notBefore
        let path: String
        var baud: Int?
        switch config {
        case .gpsd(let host, let port):
            gpsd = GPSDSource(
                loop: loop, host: host, port: port,
                onFix: { [unowned self] r in
                    self.sink?(GPSPosition(epochTime: r.time, lat: r.lat, lon: r.lon, altHAE: r.altHAE ?? .nan))
                }, onState: { [unowned self] s in self.note("gpsd: \(s)") })
            return
        case .serial(let p, let b):
            path = p
            baud = b
        case .replay(let log):
            let r = try NMEAReplay(loop: loop, logPath: log)
            replay = r
            path = r.devicePath
            baud = 9600
        }
        let isReplay = replay != nil
        serial = SerialSource(
            loop: loop, path: path, baud: baud,
            onData: { [unowned self] bytes in
                self.parser.feed(bytes) { fix in
                    guard fix.mode >= 2, fix.lat.isFinite, fix.lon.isFinite else { return }
                    let t: Double? = isReplay || !fix.time.isFinite ? nil : fix.time
                    self.sink?(GPSPosition(epochTime: t, lat: fix.lat, lon: fix.lon, altHAE: fix.altHAE ?? .nan))
                }
            },
            isConfirmed: { [unowned self] in
                let d = self.parser.counters.decoded
                defer { self.decodedAtLastAsk = d }
                return d > self.decodedAtLastAsk
            },
            onReset: { [unowned self] in
                // A new port or baud: a fresh parser, so no half line from before mixes in.
                self.parser = NMEAParser(notBefore: self.notBefore)
                self.decodedAtLastAsk = 0
            },
            onState: { [unowned self] s in self.note("serial \(path): \(s)") })
    }

    func start() throws {
        try replay?.start()
        serial?.start()
        gpsd?.start()
    }

    func stop() {
        serial?.stop()
        gpsd?.stop()
        replay?.stop()
    }

    /// The source's state for status displays (device_health, `status`, the demo's table). Not
    /// logged: the sources log each event once themselves, and every retry is a new state
    /// ("…; retrying in 4 s", "opening the serial port").
    private func note(_ s: String) {
        stateText = s
    }
}

/// Writes a recorded NMEA log into a pseudo-terminal master, one receiver cycle (the lines
/// sharing a GGA/RMC time of day) per second, looping at the end.
final class NMEAReplay {
    let devicePath: String
    private let master: Int32
    private let loop: EventLoop
    private let cycles: [[UInt8]]
    private var next = 0
    private var timer: EventLoop.Timer?

    init(loop: EventLoop, logPath: String) throws {
        self.loop = loop
        guard let bytes = try StateFiles.read(logPath, limit: 16 << 20) else {
            throw DaemonError.message("\(logPath): no such NMEA log")
        }
        cycles = NMEAReplay.cycles(bytes)
        guard !cycles.isEmpty else { throw DaemonError.message("\(logPath): no NMEA sentences in it") }
        var name = [CChar](repeating: 0, count: 128)
        let fd = osh_pty_open(&name, name.count)
        guard fd >= 0 else { throw SystemError.last("posix_openpt") }
        master = fd
        devicePath = String(cString: name)
        _ = osh_set_nonblocking(fd)
    }

    deinit { close(master) }

    func start() throws {
        timer = try loop.addTimer(firstAt: EventLoop.deadline(after: 0.2), interval: 1_000_000_000) { [unowned self] _ in
            let c = self.cycles[self.next]
            self.next = (self.next + 1) % self.cycles.count
            // Nobody reading yet (or the reader is behind): dropping a cycle is what a receiver does too.
            c.withUnsafeBytes { _ = write(self.master, $0.baseAddress, $0.count) }
        }
    }

    func stop() { timer.map { loop.cancel($0) } }

    /// Splits a log into receiver cycles: a new cycle starts when a GGA or RMC carries a new time of day.
    static func cycles(_ bytes: [UInt8]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var current: [UInt8] = []
        var currentTime: [UInt8]?
        for slice in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            var line = Array(slice)
            if line.last == 0x0D { line.removeLast() }
            guard line.first == UInt8(ascii: "$") || line.first == UInt8(ascii: "!") else { continue }  // comments, binary
            let fields = line.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
            let type = fields.first.map { Array($0.dropFirst(3)) } ?? []
            if type == Array("GGA".utf8) || type == Array("RMC".utf8), fields.count > 1 {
                let t = Array(fields[1])
                if let c = currentTime, c != t, !current.isEmpty {
                    out.append(current)
                    current = []
                }
                currentTime = t
            }
            current.append(contentsOf: line)
            current.append(contentsOf: [0x0D, 0x0A])
        }
        if !current.isEmpty { out.append(current) }
        return out
    }
}

extension GPSInput: ObservationSource {
    public var feeds: [OutputKind] { [.gps] }
    /// A receiver that goes quiet retries on its own and says so in `stateText`.
    public var isFaulted: Bool { false }

    public func connect(_ outputs: OutputConnections) throws {
        sink = outputs.position
    }
}
