import CShim
#if canImport(Glibc)
import Glibc
#endif

/// The one event loop (SPEC §1): every source is a file descriptor on one epoll set,
/// served on one thread. Timers are timerfds on CLOCK_MONOTONIC armed at absolute
/// times, so a late wake-up never drifts the schedule and the kernel's expiration
/// count tells a handler how many ticks it missed. Signals arrive through a signalfd,
/// cross-thread wake-ups through an eventfd.
///
/// Each registration gets a fresh id; epoll carries the id, and an event whose id is no
/// longer registered (its source was removed or replaced while events were queued) is
/// dropped instead of reaching the wrong handler.
public final class EventLoop {
    /// epoll event bits, as the kernel defines them.
    public struct Events: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let readable = Events(rawValue: UInt32(EPOLLIN.rawValue))
        public static let writable = Events(rawValue: UInt32(EPOLLOUT.rawValue))
        public static let error = Events(rawValue: UInt32(EPOLLERR.rawValue))
        public static let hangup = Events(rawValue: UInt32(EPOLLHUP.rawValue))
        public static let priority = Events(rawValue: UInt32(EPOLLPRI.rawValue))
    }

    /// A registered source; pass it back to modify or remove it.
    public struct Registration: Hashable, Sendable {
        public let id: UInt64
        public let fd: Int32
    }

    private struct Source {
        let fd: Int32
        let ownsFD: Bool
        let handler: (Events) -> Void
    }

    private let epfd: Int32
    private var sources: [UInt64: Source] = [:]
    private var nextID: UInt64 = 1
    private var stopping = false
    private var wakeFD: Int32 = -1
    private var wakeRegistration: Registration?
    // Scratch for epoll_wait, allocated once.
    private let eventBits: UnsafeMutablePointer<UInt32>
    private let eventData: UnsafeMutablePointer<UInt64>
    private static let batch = 64

    public init() throws {
        epfd = osh_epoll_create()
        guard epfd >= 0 else { throw SystemError.last("epoll_create1") }
        eventBits = .allocate(capacity: Self.batch)
        eventData = .allocate(capacity: Self.batch)
    }

    deinit {
        for (_, s) in sources where s.ownsFD { close(s.fd) }
        // Signals this loop blocked go back as they were: children spawned later inherit the
        // mask, and a child with SIGTERM blocked cannot be stopped.
        EventLoop.unblockSignals(signalsBlockedHere)
        close(epfd)
        eventBits.deallocate()
        eventData.deallocate()
    }

    /// Number of live registrations (tests, status).
    public var sourceCount: Int { sources.count }

    // MARK: File descriptors

    /// Watches `fd` for `events`. The loop does not close `fd` unless `ownsFD`.
    @discardableResult
    public func add(fd: Int32, events: Events, ownsFD: Bool = false,
                    handler: @escaping (Events) -> Void) throws -> Registration {
        let id = nextID
        nextID += 1
        guard osh_epoll_ctl(epfd, EPOLL_CTL_ADD, fd, events.rawValue, id) == 0 else {
            throw SystemError.last("epoll_ctl(ADD)", subject: "fd \(fd)")
        }
        sources[id] = Source(fd: fd, ownsFD: ownsFD, handler: handler)
        return Registration(id: id, fd: fd)
    }

    /// Changes the events watched for a registration.
    public func modify(_ r: Registration, events: Events) throws {
        guard sources[r.id] != nil else { return }
        guard osh_epoll_ctl(epfd, EPOLL_CTL_MOD, r.fd, events.rawValue, r.id) == 0 else {
            throw SystemError.last("epoll_ctl(MOD)", subject: "fd \(r.fd)")
        }
    }

    /// Stops watching; closes the fd if the loop owns it. Events already queued for it are ignored.
    public func remove(_ r: Registration) {
        guard let s = sources.removeValue(forKey: r.id) else { return }
        // ENOENT/EBADF here only mean the fd is already gone, which is what we want.
        _ = osh_epoll_ctl(epfd, EPOLL_CTL_DEL, s.fd, 0, 0)
        if s.ownsFD { close(s.fd) }
    }

    public func isRegistered(_ r: Registration) -> Bool { sources[r.id] != nil }

    // MARK: Timers

    /// A timer: a timerfd owned by the loop.
    public struct Timer: Hashable, Sendable {
        public let registration: Registration
    }

    /// Calls `handler(expirations)` at `firstAt` (CLOCK_MONOTONIC ns) and then every `interval` ns
    /// (0 = once). `expirations` > 1 means ticks were missed (the loop was late); the handler
    /// decides whether to catch up or skip.
    @discardableResult
    public func addTimer(firstAt: UInt64, interval: UInt64 = 0, handler: @escaping (UInt64) -> Void) throws -> Timer {
        let fd = osh_timerfd_create_monotonic()
        guard fd >= 0 else { throw SystemError.last("timerfd_create") }
        guard osh_timerfd_set_abs(fd, firstAt, interval) == 0 else {
            let e = SystemError.last("timerfd_settime")
            close(fd)
            throw e
        }
        let r = try add(fd: fd, events: .readable, ownsFD: true) { _ in
            let n = osh_timerfd_read(fd)
            // EAGAIN: re-armed between the event and the read; nothing expired after all.
            if n > 0 { handler(UInt64(n)) }
        }
        return Timer(registration: r)
    }

    /// Re-arms a timer at an absolute monotonic time (0 interval = once). Pending expirations are discarded.
    public func rearm(_ t: Timer, at: UInt64, interval: UInt64 = 0) throws {
        guard isRegistered(t.registration) else { return }
        guard osh_timerfd_set_abs(t.registration.fd, at, interval) == 0 else {
            throw SystemError.last("timerfd_settime")
        }
    }

    /// Stops a timer without removing it (re-arm it later).
    public func disarm(_ t: Timer) {
        guard isRegistered(t.registration) else { return }
        _ = osh_timerfd_disarm(t.registration.fd)
    }

    public func cancel(_ t: Timer) { remove(t.registration) }

    /// Convenience: a monotonic time `seconds` from now.
    public static func deadline(after seconds: Double) -> UInt64 {
        osh_monotonic_ns() &+ UInt64(max(0, seconds) * 1e9)
    }

    // MARK: Signals and wake-ups

    /// Signals `onSignals` blocked that were not blocked before (restored at deinit).
    private var signalsBlockedHere: [Int32] = []

    /// Blocks `signals` in this thread before any library starts threads of its own, so that
    /// `onSignals` receives them later wherever they are delivered (call first thing).
    /// Returns the signals this call blocked (those not blocked before), for `unblockSignals`:
    /// children inherit the mask, so a library or test that spawns processes after us must not
    /// find SIGTERM blocked.
    @discardableResult
    public static func blockSignals(_ signals: [Int32]) -> [Int32] {
        var was = [Int32](repeating: 0, count: signals.count)
        let r = signals.withUnsafeBufferPointer { s in
            was.withUnsafeMutableBufferPointer { osh_block_signals(s.baseAddress, Int32(s.count), $0.baseAddress) }
        }
        guard r == 0 else { return [] }
        return zip(signals, was).filter { $0.1 == 0 }.map(\.0)
    }

    public static func unblockSignals(_ signals: [Int32]) {
        guard !signals.isEmpty else { return }
        _ = signals.withUnsafeBufferPointer { osh_unblock_signals($0.baseAddress, Int32($0.count)) }
    }

    /// Blocks `signals` and delivers them to `handler` on the loop (SIGTERM/SIGINT/SIGHUP…).
    @discardableResult
    public func onSignals(_ signals: [Int32], handler: @escaping (Int32) -> Void) throws -> Registration {
        signalsBlockedHere += EventLoop.blockSignals(signals)
        let fd = signals.withUnsafeBufferPointer { osh_signalfd_create($0.baseAddress, Int32($0.count)) }
        guard fd >= 0 else { throw SystemError.last("signalfd") }
        return try add(fd: fd, events: .readable, ownsFD: true) { _ in
            while true {
                let sig = osh_signalfd_read(fd)
                if sig <= 0 { break }
                handler(sig)
            }
        }
    }

    /// Registers `handler` for wake-ups from other threads (libraries' threads, tests). Call once.
    public func onWake(_ handler: @escaping () -> Void) throws {
        let fd = osh_eventfd_create()
        guard fd >= 0 else { throw SystemError.last("eventfd") }
        wakeFD = fd
        wakeRegistration = try add(fd: fd, events: .readable, ownsFD: true) { _ in
            if osh_eventfd_read(fd) > 0 { handler() }
        }
    }

    /// Wakes the loop (after `onWake`).
    public func wake() { waker.wake() }

    /// A handle other threads may keep to wake the loop (the loop itself is not Sendable).
    public struct Waker: Sendable {
        let fd: Int32
        public func wake() { if fd >= 0 { _ = osh_eventfd_write(fd, 1) } }
    }

    public var waker: Waker { Waker(fd: wakeFD) }

    // MARK: Running

    /// Waits up to `timeoutMs` (-1 = forever) and serves what is ready. Returns the number of events served.
    @discardableResult
    public func runOnce(timeoutMs: Int32 = -1) throws -> Int {
        let n = osh_epoll_wait(epfd, eventBits, eventData, Int32(Self.batch), timeoutMs)
        if n < 0 {
            if errno == EINTR { return 0 }
            throw SystemError.last("epoll_wait")
        }
        var served = 0
        for i in 0..<Int(n) {
            // A handler earlier in this batch may have removed this source: the id lookup drops stale events.
            guard let s = sources[eventData[i]] else { continue }
            s.handler(Events(rawValue: eventBits[i]))
            served += 1
        }
        return served
    }

    /// Serves events until `stop()` is called.
    public func run() throws {
        stopping = false
        while !stopping { try runOnce() }
    }

    /// Serves events until `stop()` or until `deadline` (monotonic ns) passes.
    public func run(until deadline: UInt64) throws {
        stopping = false
        while !stopping {
            let now = osh_monotonic_ns()
            if now >= deadline { return }
            try runOnce(timeoutMs: Int32(min((deadline - now) / 1_000_000 + 1, 60_000)))
        }
    }

    /// Turns the loop until `condition` holds (checked after each event, and at least every 10 ms)
    /// or `seconds` pass. Returns whether it held — a bounded wait for tests and tools.
    @discardableResult
    public func run(for seconds: Double, until condition: () -> Bool) throws -> Bool {
        let end = EventLoop.deadline(after: seconds)
        while !condition() {
            if osh_monotonic_ns() > end { return false }
            try runOnce(timeoutMs: 10)
        }
        return true
    }

    /// Makes `run` return after the current event.
    public func stop() { stopping = true }
}

/// A one-shot deadline on the loop that can be moved or cleared (a source's retry, probe or
/// staleness deadline): one timerfd, made on first use and re-armed after that.
public final class LoopDeadline {
    private let loop: EventLoop
    private var timer: EventLoop.Timer?
    private let fired: () -> Void

    public init(loop: EventLoop, fired: @escaping () -> Void) {
        self.loop = loop
        self.fired = fired
    }

    deinit { if let t = timer { loop.cancel(t) } }

    /// Fires once, `seconds` from now; replaces any earlier deadline.
    public func arm(after seconds: Double) throws {
        let at = EventLoop.deadline(after: seconds)
        if let t = timer, loop.isRegistered(t.registration) {
            try loop.rearm(t, at: at)
        } else {
            timer = try loop.addTimer(firstAt: at) { [weak self] _ in self?.fired() }
        }
    }

    /// Clears the deadline, keeping the timerfd for the next `arm`.
    public func disarm() { if let t = timer { loop.disarm(t) } }

    /// Clears the deadline and releases the timerfd.
    public func cancel() {
        if let t = timer { loop.cancel(t) }
        timer = nil
    }
}
