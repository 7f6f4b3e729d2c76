import OSHCore
import CShim
#if canImport(Glibc)
import Glibc
#endif

/// A GPS receiver on a serial port (Pi UART, USB CDC-ACM, USB-serial bridge), served on the
/// one event loop. It delivers raw bytes; the caller parses NMEA and tells the source, through
/// `isConfirmed`, whether what it parsed was valid, which drives automatic baud detection.
///
/// Lifecycle: open (`O_RDWR|O_NOCTTY|O_NONBLOCK`, close-on-exec) → lock (`flock` + `TIOCEXCL`)
/// → raw 8N1 without flow control, VMIN=0/VTIME=0 → stream. A hang-up, EIO, ENODEV or ENXIO
/// (USB unplugged, pty master closed) closes the port and reopens it with backoff; a missing
/// path is retried the same way. Refusals a person must fix (permissions, another process
/// holding the port, a login console on it) are `.blocked` with the fix and retried every
/// `backoff.maximum` seconds, so fixing them needs no restart.
///
/// Automatic baud (`baud == nil`): each of `probeBauds` is tried for `probeDwell` seconds until
/// `isConfirmed()` returns true; then the source stays. While streaming it asks `isConfirmed()`
/// once per `staleAfter` seconds: if bytes arrived in that window and it returns false, it scans
/// again. (So a caller that wants this check answers "valid NMEA since the last time I said
/// yes"; a caller whose flag stays true until `onReset` simply never triggers a rescan.)
///
/// Logging (`RetryLog`): an outage is one warning with the first retry's delay, then only what
/// changes (a different reason) until the receiver is back, which is one line too; the state
/// texts ("…; retrying in 4 s", "opening the serial port") are for status displays, not the log.
///
/// Steady state allocates nothing: one read buffer, reads until EAGAIN on each readable event.
/// Not thread-safe: use it on the loop's thread only. Callbacks may call `stop()`.
public final class SerialSource {
    public enum State: Sendable, Equatable, CustomStringConvertible {
        case opening
        /// Trying this baud; waiting for the caller to confirm valid NMEA.
        case probingBaud(Int)
        /// Data flows at this baud (confirmed, or configured).
        case streaming(Int)
        /// The port went away or is not there; a sentence saying why and when it is retried.
        case disconnected(String)
        /// A person must act; the sentence says what to do.
        case blocked(String)

        public var description: String {
            switch self {
            case .opening: return "opening the serial port"
            case .probingBaud(let b): return "trying \(b) baud"
            case .streaming(let b): return "receiving at \(b) baud"
            case .disconnected(let s): return s
            case .blocked(let s): return s
            }
        }
    }

    /// Rates tried in order when no baud is configured: the common NMEA default first, then
    /// u-blox/MTK favourites, then the rest.
    public static let automaticBauds = [9600, 38400, 115200, 4800, 57600, 230400]

    public let path: String
    /// nil = automatic.
    public let configuredBaud: Int?

    /// Tunables; set them before `start()`.
    public var probeBauds: [Int] = SerialSource.automaticBauds
    public var probeDwell: Double = 2.5
    public var staleAfter: Double = 10
    /// Reconnect delays: the retry policy's.
    public var backoff: Backoff {
        get { log.backoff }
        set { log.backoff = newValue }
    }

    public private(set) var state: State = .disconnected("not started")
    /// The baud the port is set to while open, nil while closed.
    public private(set) var currentBaud: Int?
    /// The device behind the path's symlinks, once opened or refused (`/dev/ttyS0`).
    public private(set) var device: String?
    public private(set) var bytesReceived: UInt64 = 0
    /// Successful opens after the first one.
    public private(set) var reopenCount = 0
    /// Every open(2) attempt, successful or not.
    public private(set) var openAttempts = 0
    /// CLOCK_MONOTONIC ns of the last byte, 0 before any.
    public private(set) var lastDataNanos: UInt64 = 0
    /// Non-fatal findings of the last open (kernel console on the port, Bluetooth UART).
    public private(set) var warnings: [String] = []

    private let loop: EventLoop
    private let onData: (UnsafeRawBufferPointer) -> Void
    private let isConfirmed: () -> Bool
    private let onReset: () -> Void
    private let onState: (State) -> Void

    private enum Phase { case idle, retry, probe, stale }
    private var phase: Phase = .idle
    private lazy var deadline = LoopDeadline(loop: loop) { [weak self] in self?.timerFired() }
    private let system: any SyscallDriver
    private var fd: Int32 = -1
    /// The open port (valid while `fd >= 0`).
    private var port: FileDescriptor { FileDescriptor(rawValue: fd, system: system) }
    private var registration: EventLoop.Registration?
    /// Bumped whenever the port is closed, so a callback that closed it is noticed mid-loop.
    private var generation: UInt64 = 0
    private var running = false
    private var everOpened = false
    private var probeIndex = 0
    private var windowBytes: UInt64 = 0
    private var emptyWakeups = 0
    private var warnedUnconfirmed = false
    /// Data flowed at some point (configured baud opened, or a baud confirmed): an outage pauses
    /// positions and the recovery resumes them.
    private var everStreamed = false
    private var log = RetryLog()
    private let buffer: UnsafeMutableRawBufferPointer

    public init(
        loop: EventLoop, path: String, baud: Int?,
        onData: @escaping (UnsafeRawBufferPointer) -> Void,
        isConfirmed: @escaping () -> Bool,
        onReset: @escaping () -> Void,
        onState: @escaping (SerialSource.State) -> Void,
        system: any SyscallDriver = KernelSyscalls.shared
    ) {
        self.loop = loop
        self.system = system
        self.path = path
        self.configuredBaud = baud
        self.onData = onData
        self.isConfirmed = isConfirmed
        self.onReset = onReset
        self.onState = onState
        // 4 KiB is ~0.35 s at 115200 baud: one read drains what a 10 Hz receiver sends between wake-ups.
        buffer = .allocate(byteCount: 4096, alignment: 16)
    }

    deinit {
        if let r = registration { loop.remove(r) }
        if fd >= 0 { port.close() }
        deadline.cancel()
        buffer.deallocate()
    }

    /// Opens the port (now) and keeps it open until `stop()`.
    public func start() {
        guard !running else { return }
        running = true
        _ = log.recovered()  // a new start is a new story: the backoff starts over
        if let b = configuredBaud, osh_serial_baud_supported(Int32(truncatingIfNeeded: b)) == 0 || b <= 0 {
            block(
                "\(b) baud is not a standard serial rate; use one of 4800, 9600, 19200, 38400, 57600, 115200, 230400, or omit the baud for automatic detection",
                retry: false)
            return
        }
        attemptOpen()
    }

    /// Closes the port and stops retrying.
    public func stop() {
        guard running else { return }
        running = false
        closePort()
        deadline.cancel()
        phase = .idle
        setState(.disconnected("stopped"))
    }

    // MARK: - Opening

    private func attemptOpen() {
        guard running else { return }
        openAttempts += 1
        setState(.opening)
        let newFD: FileDescriptor
        do {
            newFD = try FileDescriptor.open(path, O_RDWR | O_NOCTTY | O_NONBLOCK, system: system)
        } catch {
            openFailed(error.errno)
            return
        }
        let dev = SerialPortDiagnostics.resolve(path) ?? path
        device = dev
        let shown = SerialPortDiagnostics.display(path: path, device: dev)

        // Two agents (or gpsd and us) must not share one receiver. flock also holds for root,
        // whom TIOCEXCL does not stop.
        do {
            try newFD.lock(.exclusive)
        } catch let e where e.code == .wouldBlock {
            newFD.close()
            refuseBusy(shown: shown, device: dev)
            return
        } catch {
            // ENOLCK and the like: no lock available; TIOCEXCL below still guards non-root openers.
        }
        _ = try? newFD.ioctl(.ttyExclusive, nil)

        let baud = configuredBaud ?? probeBauds.first ?? 9600
        do {
            try newFD.setSerial(baud: baud)
        } catch {
            newFD.close()
            if error.errno == ENOTTY || error.errno == EINVAL {
                block("\(shown) is not a serial port (\(error.code.text))", retry: true)
            } else {
                retryLater("cannot configure \(shown): \(error.code.text)")
            }
            return
        }

        // Another reader on the port would take bytes from us: a login prompt (which also answers
        // the receiver), or gpsd/minicom when we run as root and neither TIOCEXCL nor flock stopped us.
        let me = getpid()
        let others = SerialPortDiagnostics.holders(of: dev).filter { $0.confirmed && $0.pid != me }
        if others.contains(where: \.isGetty) {
            newFD.close()
            let gettys = others.filter(\.isGetty)
            let entry = SerialPortDiagnostics.readSmallFile("/proc/cmdline").flatMap {
                SerialPortDiagnostics.kernelConsole(on: dev, configuredPath: path, cmdline: $0)
            }
            block(
                "a login console (\(gettys.map(\.description).joined(separator: ", "))) is on \(shown): "
                    + SerialPortDiagnostics.consoleFix(device: dev, consoleEntry: entry), retry: true)
            return
        }
        if !others.isEmpty {
            newFD.close()
            block(SerialPortDiagnostics.busyMessage(display: shown, device: dev, holders: others), retry: true)
            return
        }
        var found: [String] = []
        if let cmdline = SerialPortDiagnostics.readSmallFile("/proc/cmdline"),
            let entry = SerialPortDiagnostics.kernelConsole(on: dev, configuredPath: path, cmdline: cmdline)
        {
            found.append(
                "the kernel console is on \(shown) (\(entry)), so boot messages go to the receiver; "
                    + SerialPortDiagnostics.consoleFix(device: dev, consoleEntry: entry))
        }
        if let w = SerialPortDiagnostics.bluetoothUARTWarning(device: dev) { found.append(w) }
        warnings = found
        for w in found { log.note(.warning, "gps: " + w) }

        let reg: EventLoop.Registration
        do {
            reg = try loop.add(fd: newFD.rawValue, events: .readable) { [weak self] events in self?.readable(events) }
        } catch {
            newFD.close()
            retryLater("cannot watch \(shown): \(error)")
            return
        }
        fd = newFD.rawValue
        registration = reg
        if everOpened { reopenCount += 1 }
        everOpened = true
        emptyWakeups = 0
        warnedUnconfirmed = false
        currentBaud = baud

        if configuredBaud != nil {
            if log.recovered() && everStreamed {
                log.note(.notice, "gps: \(shown) back at \(baud) baud; positions resume")
            } else {
                log.note(.notice, "gps: opened \(shown) at \(baud) baud")
            }
            everStreamed = true
            onReset()
            guard isCurrent(generationAtOpen: generation) else { return }
            setState(.streaming(baud))
            windowBytes = 0
            schedule(.stale, after: staleAfter)
        } else {
            // Still an outage until a baud is confirmed: said once per outage, not per reopen.
            log.note(.notice, "gps: opened \(shown), detecting the baud")
            probeIndex = 0
            beginProbe(alreadySet: true)
        }
    }

    private func openFailed(_ e: Int32) {
        let hint: String
        switch e {
        case ENOENT, ENOTDIR:
            if path.hasSubstring("/serial0") || path.hasSubstring("/serial1") {
                hint =
                    "\(path) does not exist: enable the UART (enable_uart=1 in /boot/firmware/config.txt, or raspi-config → Interface Options → Serial Port)"
            } else if path.hasSubstring("/by-id/") || path.hasSubstring("ttyUSB") || path.hasSubstring("ttyACM") {
                hint = "\(path) does not exist (receiver not plugged in?)"
            } else {
                hint = "\(path) does not exist"
            }
            retryLater(hint)
        case EACCES, EPERM:
            let dev = SerialPortDiagnostics.resolve(path) ?? path
            device = dev
            block(
                "permission denied on \(SerialPortDiagnostics.display(path: path, device: dev)): add the user to the dialout group "
                    + "(`sudo usermod -aG dialout $USER`, then log in again or restart the service)", retry: true)
        case EBUSY:
            let dev = SerialPortDiagnostics.resolve(path) ?? path
            device = dev
            refuseBusy(shown: SerialPortDiagnostics.display(path: path, device: dev), device: dev)
        default:
            retryLater("cannot open \(path): \(Errno(e).text)")
        }
    }

    private func refuseBusy(shown: String, device dev: String) {
        let holders = SerialPortDiagnostics.holders(of: dev)
        block(SerialPortDiagnostics.busyMessage(display: shown, device: dev, holders: holders), retry: true)
    }

    // MARK: - Reading

    private func readable(_ events: EventLoop.Events) {
        guard fd >= 0 else { return }
        let gen = generation
        let port = self.port
        var got = 0
        // Bounded so one chatty port cannot starve the rest of the loop; epoll is level-triggered.
        drain: for _ in 0..<64 {
            switch port.readAvailable(into: buffer) {
            case .bytes(let n):
                got += n
                bytesReceived &+= UInt64(n)
                windowBytes &+= UInt64(n)
                lastDataNanos = osh_monotonic_ns()
                onData(UnsafeRawBufferPointer(start: buffer.baseAddress, count: n))
                guard isCurrent(generationAtOpen: gen) else { return }
                if case .probingBaud = state, isConfirmed() {
                    guard isCurrent(generationAtOpen: gen) else { return }
                    confirmed()
                }
                guard isCurrent(generationAtOpen: gen) else { return }
            case .empty, .end:
                break drain  // VMIN=0/VTIME=0 reads 0 when nothing is queued (a hang-up shows in `events`)
            case .failed(let e):
                lost(e.code.text)
                return
            }
        }
        if got > 0 { emptyWakeups = 0 }
        if events.contains(.hangup) || events.contains(.error) {
            lost("the device hung up")
            return
        }
        if got == 0 {
            // Readable but empty, without a hang-up flag: should not happen; don't spin on it.
            emptyWakeups += 1
            if emptyWakeups >= 100 { lost("the port keeps reporting data it does not deliver") }
        }
    }

    private func lost(_ why: String) {
        let shown = SerialPortDiagnostics.display(path: path, device: device)
        closePort()
        retryLater("\(shown) went away (\(why); unplugged?)")
    }

    // MARK: - Baud detection

    private func beginProbe(alreadySet: Bool = false) {
        guard fd >= 0, !probeBauds.isEmpty else { return }
        let gen = generation
        let baud = probeBauds[probeIndex % probeBauds.count]
        if !alreadySet || currentBaud != baud {
            do {
                try port.setSerial(baud: baud, speedOnly: true)
            } catch {
                lost("cannot set \(baud) baud: \(error.code.text)")
                return
            }
        }
        currentBaud = baud
        windowBytes = 0
        onReset()
        guard isCurrent(generationAtOpen: gen) else { return }
        setState(.probingBaud(baud))
        guard isCurrent(generationAtOpen: gen) else { return }
        schedule(.probe, after: probeDwell)
    }

    private func confirmed() {
        guard let b = currentBaud else { return }
        windowBytes = 0
        setState(.streaming(b))
        let shown = SerialPortDiagnostics.display(path: path, device: device)
        if log.recovered() && everStreamed {
            log.note(.notice, "gps: \(shown) back, speaking NMEA at \(b) baud; positions resume")
        } else {
            log.note(.notice, "gps: \(shown) speaks NMEA at \(b) baud")
        }
        everStreamed = true
        schedule(.stale, after: staleAfter)
    }

    // MARK: - Timer

    private func timerFired() {
        switch phase {
        case .idle:
            break
        case .retry:
            phase = .idle
            attemptOpen()
        case .probe:
            guard fd >= 0 else { return }
            let gen = generation
            if isConfirmed() {
                guard isCurrent(generationAtOpen: gen) else { return }
                confirmed()
            } else {
                guard isCurrent(generationAtOpen: gen) else { return }
                probeIndex += 1
                beginProbe()
            }
        case .stale:
            guard fd >= 0 else { return }
            let gen = generation
            let hadBytes = windowBytes > 0
            windowBytes = 0
            if hadBytes && !isConfirmed() {
                guard isCurrent(generationAtOpen: gen) else { return }
                let b = currentBaud ?? 0
                if configuredBaud == nil {
                    log.note(.warning, "gps: \(path): bytes but no valid NMEA for \(staleAfter) s at \(b) baud; detecting the baud again")
                    probeIndex = 0
                    beginProbe()
                    return
                } else if !warnedUnconfirmed {
                    warnedUnconfirmed = true
                    log.note(
                        .warning,
                        "gps: \(path): bytes but no valid NMEA for \(staleAfter) s at the configured \(b) baud; "
                            + "is the baud right? (omit it for automatic detection)")
                }
            }
            guard isCurrent(generationAtOpen: gen) else { return }
            schedule(.stale, after: staleAfter)
        }
    }

    private func schedule(_ p: Phase, after seconds: Double) {
        guard running else { return }
        phase = p
        do {
            try deadline.arm(after: seconds)
        } catch {
            // timerfd exhaustion: nothing sensible to do but say so; the next event retries.
            Log.error("gps: cannot arm a timer: \(error)")
        }
    }

    // MARK: - State

    private func retryLater(_ why: String) {
        let step = log.nextStep
        // The state says when the next attempt is, every time; the log says it once per outage.
        let pause = everStreamed && !log.isDown ? "positions pause, " : ""
        setState(.disconnected("\(why); retrying in \(Self.seconds(step))"))
        let verdict = log.failed(.warning, "gps: " + why, firstSuffix: "; \(pause)retrying in \(Self.seconds(step))")
        schedule(.retry, after: verdict.delay)
    }

    private func block(_ why: String, retry: Bool) {
        setState(.blocked(why))
        log.failed(.error, "gps: " + why)
        if retry { schedule(.retry, after: backoff.maximum) }
    }

    private func closePort() {
        if let r = registration { loop.remove(r) }
        registration = nil
        if fd >= 0 { port.close() }
        fd = -1
        currentBaud = nil
        generation &+= 1
    }

    private func isCurrent(generationAtOpen gen: UInt64) -> Bool { running && gen == generation && fd >= 0 }

    private func setState(_ s: State) {
        guard s != state else { return }
        state = s
        onState(s)
    }

    static func seconds(_ d: Double) -> String { RetryLog.seconds(d) }
}
