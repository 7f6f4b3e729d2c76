// Size (~570 lines): epoll, the timer heap, signals, wake-ups and virtual time are one loop's
// state (a turn reads all of them); LoopDeadline is a thin helper kept beside it.
import CShim
#if canImport(Glibc)
import Glibc
#endif

/// The one event loop: every source is a file descriptor on one epoll set,
/// served on one thread. Signals arrive through a signalfd, cross-thread wake-ups through an
/// eventfd.
///
/// Timers are not file descriptors: every deadline sits in one min-heap (by deadline, then by
/// when it was armed; `addAlignedTimer`'s `runsLast` ones after the rest) behind a single timerfd on CLOCK_MONOTONIC armed at the earliest one, so a
/// thousand timers cost one descriptor and one wake-up per due batch. Deadlines are absolute, so
/// a late wake-up never drifts a periodic schedule; a late periodic timer fires once and is told
/// how many ticks were due (missed ticks are not back-filled).
///
/// With `time: .virtual()` the loop's clock stands still until a test moves it (`advance`,
/// `run(until:)`, `run(for:until:)`): timers then fire in order at their own virtual times
/// without sleeping, while descriptors (loopback sockets, pipes) still go through epoll.
///
/// Each registration gets a fresh id; epoll carries the id, and an event whose id is no
/// longer registered (its source was removed or replaced while events were queued) is
/// dropped instead of reaching the wrong handler.
///
/// The loop is not re-entrant: a handler must not turn it (`runOnce`, `run…`, `advance`) — the
/// outer turn's event batch would be served twice. Schedule the rest of the work instead.
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

    /// Where the loop's time comes from.
    public enum TimeSource: Sendable {
        /// CLOCK_MONOTONIC: timers wake the loop through its timerfd.
        case monotonic
        /// A clock that moves only when the loop is told to (tests). It starts above 0 so that
        /// "at 1 ns" (already passed, as HTTPClient uses it) is in the past here too.
        case virtual(startingAt: UInt64 = 1_000_000_000)
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
    /// The epoll data of the timerfd: registration ids start at 1, so 0 is never a source's.
    private static let timerFDData: UInt64 = 0

    /// True while a turn is being served, that is inside any handler.
    public private(set) var isRunning = false

    public init(time: TimeSource = .monotonic) throws {
        epfd = osh_epoll_create()
        guard epfd >= 0 else { throw SystemError.last("epoll_create1") }
        switch time {
        case .monotonic:
            virtualNow = nil
            timerFD = osh_timerfd_create_monotonic()
            guard timerFD >= 0 else {
                let e = SystemError.last("timerfd_create")
                close(epfd)
                throw e
            }
            guard osh_epoll_ctl(epfd, EPOLL_CTL_ADD, timerFD, EPOLLIN.rawValue, Self.timerFDData) == 0 else {
                let e = SystemError.last("epoll_ctl(ADD)", subject: "the loop's timerfd")
                close(timerFD)
                close(epfd)
                throw e
            }
        case .virtual(let start):
            virtualNow = start
            timerFD = -1
        }
        eventBits = .allocate(capacity: Self.batch)
        eventData = .allocate(capacity: Self.batch)
    }

    deinit {
        for (_, s) in sources where s.ownsFD { close(s.fd) }
        // Signals this loop blocked go back as they were: children spawned later inherit the
        // mask, and a child with SIGTERM blocked cannot be stopped.
        EventLoop.unblockSignals(signalsBlockedHere)
        if timerFD >= 0 { close(timerFD) }
        close(epfd)
        eventBits.deallocate()
        eventData.deallocate()
    }

    /// Number of live registrations, descriptors and timers (tests, status).
    public var sourceCount: Int { sources.count + timers.count }

    // MARK: File descriptors

    /// Watches `fd` for `events`. The loop does not close `fd` unless `ownsFD`.
    @discardableResult
    public func add(
        fd: Int32, events: Events, ownsFD: Bool = false,
        handler: @escaping (Events) -> Void
    ) throws -> Registration {
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
    /// A timer's registration cancels the timer.
    public func remove(_ r: Registration) {
        if timers[r.id] != nil { return cancelTimer(id: r.id) }
        guard let s = sources.removeValue(forKey: r.id) else { return }
        // ENOENT/EBADF here only mean the fd is already gone, which is what we want.
        _ = osh_epoll_ctl(epfd, EPOLL_CTL_DEL, s.fd, 0, 0)
        if s.ownsFD { close(s.fd) }
    }

    public func isRegistered(_ r: Registration) -> Bool { sources[r.id] != nil || timers[r.id] != nil }

    // MARK: Time

    private let timerFD: Int32
    /// Nil on the real clock.
    private var virtualNow: UInt64?

    /// The loop's monotonic time in ns: CLOCK_MONOTONIC, or the virtual clock.
    public var now: UInt64 { virtualNow ?? osh_monotonic_ns() }

    public var isVirtual: Bool { virtualNow != nil }

    /// The loop's time `seconds` from now (what `addTimer` and `rearm` take).
    public func deadline(after seconds: Double) -> UInt64 { now &+ Self.nanoseconds(seconds) }

    /// Convenience: a CLOCK_MONOTONIC time `seconds` from now. Code that may run on a virtual
    /// loop asks the loop instead (`loop.deadline(after:)`).
    public static func deadline(after seconds: Double) -> UInt64 {
        osh_monotonic_ns() &+ nanoseconds(seconds)
    }

    /// Seconds as ns, 0 for negative or NaN, capped at about 30 years instead of trapping.
    static func nanoseconds(_ seconds: Double) -> UInt64 {
        guard seconds > 0 else { return 0 }
        return UInt64(min(seconds, 1e9) * 1e9)
    }

    // MARK: Timers

    /// A timer: an entry in the loop's deadline heap.
    public struct Timer: Hashable, Sendable {
        /// `isRegistered(registration)` is true until the timer is cancelled (armed or not);
        /// `fd` is the loop's shared timerfd (-1 on a virtual loop).
        public let registration: Registration
    }

    private final class TimerEntry {
        let id: UInt64
        let handler: (UInt64) -> Void
        var deadline: UInt64 = 0
        var interval: UInt64 = 0
        /// Arming order: breaks deadline ties, and tells entries armed during a firing pass
        /// (they wait for the next pass, so a timer re-armed in the past cannot starve the loop).
        var seq: UInt64 = 0
        /// Runs after the other timers due at the same instant (a consumer of what they produce).
        var last = false
        /// Position in `heap`, -1 while disarmed.
        var heapIndex = -1
        init(id: UInt64, handler: @escaping (UInt64) -> Void) {
            self.id = id
            self.handler = handler
        }
    }

    private var timers: [UInt64: TimerEntry] = [:]
    /// Binary min-heap of the armed timers by (deadline, last, seq).
    private var heap: [TimerEntry] = []
    private var nextSeq: UInt64 = 0
    /// What the timerfd is armed at (0 = disarmed); it is only re-armed when the heap's top moves.
    private var timerFDArmedAt: UInt64 = 0
    /// Set while due timers run: the timerfd is synchronised once, after the pass.
    private var firingTimers = false
    /// A failed timerfd_settime where nobody could be told (disarm, cancel): thrown by the next turn.
    private var pendingError: SystemError?

    /// Calls `handler(expirations)` at `firstAt` (the loop's monotonic ns, see `now`) and then
    /// every `interval` ns (0 = once). `expirations` > 1 means the loop was late and that many
    /// ticks came due since the last call; the handler decides whether to catch up or skip.
    @discardableResult
    public func addTimer(firstAt: UInt64, interval: UInt64 = 0, handler: @escaping (UInt64) -> Void) throws -> Timer {
        let e = TimerEntry(id: nextID, handler: handler)
        nextID += 1
        timers[e.id] = e
        schedule(e, at: firstAt, interval: interval)
        try syncTimerFD()
        return Timer(registration: Registration(id: e.id, fd: timerFD))
    }

    /// A periodic timer on the loop's grid: it ticks at whole multiples of `interval` on the loop's
    /// clock, the first one after now. Periodic timers whose periods divide one another (100 ms,
    /// 250 ms, 1 s…) then come due at the same instants and share one wake-up instead of one each.
    /// `runsLast`: at an instant it shares, it runs after the others (the publisher's flush, so it
    /// carries what the samplers read at that instant). `notBefore`: the first tick is the first
    /// grid instant at or after it (a flush interval's worth of data before the first flush).
    @discardableResult
    public func addAlignedTimer(
        every interval: UInt64, runsLast: Bool = false, notBefore: UInt64 = 0,
        handler: @escaping (UInt64) -> Void
    ) throws -> Timer {
        let e = TimerEntry(id: nextID, handler: handler)
        nextID += 1
        e.last = runsLast
        timers[e.id] = e
        let after = notBefore > now ? notBefore - 1 : now
        schedule(e, at: Self.nextMultiple(of: interval, after: after), interval: interval)
        try syncTimerFD()
        return Timer(registration: Registration(id: e.id, fd: timerFD))
    }

    /// The first whole multiple of `interval` after `t` (`t + 1` for a zero interval; the end of the clock past it).
    public static func nextMultiple(of interval: UInt64, after t: UInt64) -> UInt64 {
        guard interval > 0 else { return t &+ 1 }
        let (m, overflow) = (t / interval + 1).multipliedReportingOverflow(by: interval)
        return overflow ? .max : m
    }

    /// Re-arms a timer at an absolute time (0 interval = once). Ticks that were due are forgotten.
    public func rearm(_ t: Timer, at: UInt64, interval: UInt64 = 0) throws {
        guard let e = timers[t.registration.id] else { return }
        schedule(e, at: at, interval: interval)
        try syncTimerFD()
    }

    /// Stops a timer without removing it (re-arm it later).
    public func disarm(_ t: Timer) {
        guard let e = timers[t.registration.id] else { return }
        if e.heapIndex >= 0 { heapRemove(e) }
        syncTimerFDLater()
    }

    public func cancel(_ t: Timer) { cancelTimer(id: t.registration.id) }

    /// Number of armed timers (tests).
    public var armedTimerCount: Int { heap.count }

    private func cancelTimer(id: UInt64) {
        guard let e = timers.removeValue(forKey: id) else { return }
        if e.heapIndex >= 0 { heapRemove(e) }
        syncTimerFDLater()
    }

    private func schedule(_ e: TimerEntry, at: UInt64, interval: UInt64) {
        e.deadline = at
        e.interval = interval
        e.seq = nextSeq
        nextSeq += 1
        if e.heapIndex >= 0 {
            siftUp(e.heapIndex)
            siftDown(e.heapIndex)
        } else {
            e.heapIndex = heap.count
            heap.append(e)
            siftUp(e.heapIndex)
        }
    }

    /// Runs the timers due at `now` that were armed before this pass, earliest first.
    private func fireDueTimers(now: UInt64) -> Int {
        let armedBefore = nextSeq
        var fired = 0
        firingTimers = true
        while let e = heap.first, e.deadline <= now, e.seq < armedBefore {
            var expirations: UInt64 = 1
            if e.interval > 0 {
                expirations += (now - e.deadline) / e.interval
                let (step, o1) = expirations.multipliedReportingOverflow(by: e.interval)
                let (next, o2) = e.deadline.addingReportingOverflow(step)
                if o1 || o2 { heapRemove(e) } else { schedule(e, at: next, interval: e.interval) }
            } else {
                heapRemove(e)
            }
            // The heap is consistent before the handler runs: it may cancel, re-arm or add timers.
            e.handler(expirations)
            fired += 1
        }
        firingTimers = false
        syncTimerFDLater()
        return fired
    }

    /// Arms the timerfd at the earliest deadline (a past one fires at once), or disarms it.
    private func syncTimerFD() throws {
        guard timerFD >= 0, !firingTimers else { return }
        let want = heap.first.map { max($0.deadline, 1) } ?? 0
        guard want != timerFDArmedAt else { return }
        let r = want == 0 ? osh_timerfd_disarm(timerFD) : osh_timerfd_set_abs(timerFD, want, 0)
        guard r == 0 else {
            timerFDArmedAt = 0
            throw SystemError.last("timerfd_settime", subject: "the loop's timerfd")
        }
        timerFDArmedAt = want
    }

    private func syncTimerFDLater() {
        do { try syncTimerFD() } catch let e as SystemError { pendingError = e } catch {}
    }

    private func less(_ a: TimerEntry, _ b: TimerEntry) -> Bool {
        if a.deadline != b.deadline { return a.deadline < b.deadline }
        if a.last != b.last { return b.last }
        return a.seq < b.seq
    }

    private func swapAt(_ i: Int, _ j: Int) {
        heap.swapAt(i, j)
        heap[i].heapIndex = i
        heap[j].heapIndex = j
    }

    private func siftUp(_ start: Int) {
        var i = start
        while i > 0 {
            let parent = (i - 1) / 2
            guard less(heap[i], heap[parent]) else { return }
            swapAt(i, parent)
            i = parent
        }
    }

    private func siftDown(_ start: Int) {
        var i = start
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < heap.count, less(heap[l], heap[m]) { m = l }
            if r < heap.count, less(heap[r], heap[m]) { m = r }
            if m == i { return }
            swapAt(i, m)
            i = m
        }
    }

    private func heapRemove(_ e: TimerEntry) {
        let i = e.heapIndex
        let last = heap.count - 1
        if i != last { swapAt(i, last) }
        heap.removeLast()
        e.heapIndex = -1
        if i < heap.count {
            siftUp(i)
            siftDown(i)
        }
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

    /// Waits up to `timeoutMs` (-1 = forever) and serves what is ready. Returns the number of
    /// events and timers served. On a virtual loop, time does not move: timers already due run,
    /// and the wait is only for descriptors (none when a timer ran).
    @discardableResult
    public func runOnce(timeoutMs: Int32 = -1) throws -> Int {
        try enterTurn()
        defer { isRunning = false }
        var served = 0
        var timeout = timeoutMs
        if let t = virtualNow {
            served += fireDueTimers(now: t)
            // Something ran, or is due (armed during that pass): poll, do not wait.
            if served > 0 || (heap.first.map { $0.deadline <= t } ?? false) { timeout = 0 }
        }
        let n = osh_epoll_wait(epfd, eventBits, eventData, Int32(Self.batch), timeout)
        if n < 0 {
            if errno == EINTR { return served }
            throw SystemError.last("epoll_wait")
        }
        for i in 0..<Int(n) {
            if eventData[i] == Self.timerFDData {
                // Emptied so it stops polling readable; whatever is due is found in the heap.
                _ = osh_timerfd_read(timerFD)
                timerFDArmedAt = 0
                served += fireDueTimers(now: osh_monotonic_ns())
                continue
            }
            // A handler earlier in this batch may have removed this source: the id lookup drops stale events.
            guard let s = sources[eventData[i]] else { continue }
            s.handler(Events(rawValue: eventBits[i]))
            served += 1
        }
        return served
    }

    /// The one place a turn starts: refuses to nest (a handler turning the loop would serve the
    /// outer turn's events again, from the same arrays) and reports a timerfd failure.
    private func enterTurn() throws {
        precondition(
            !isRunning,
            "EventLoop turned from inside one of its own handlers (runOnce/run/advance while serving "
                + "an event); the loop is not re-entrant: schedule the rest (a timer, a completion) instead of waiting here")
        if let e = pendingError {
            pendingError = nil
            throw e
        }
        isRunning = true
    }

    /// Serves events until `stop()` is called. A virtual loop's time does not move here.
    public func run() throws {
        stopping = false
        while !stopping { try runOnce() }
    }

    /// Serves events until `stop()` or until `deadline` (the loop's monotonic ns) passes. A
    /// virtual loop moves its clock to `deadline` (see `advance(to:)`), stopping early on `stop()`.
    public func run(until deadline: UInt64) throws {
        stopping = false
        if virtualNow != nil {
            try advance(to: deadline, honouringStop: true)
            return
        }
        while !stopping {
            let now = osh_monotonic_ns()
            if now >= deadline { return }
            try runOnce(timeoutMs: Int32(min((deadline - now) / 1_000_000 + 1, 60_000)))
        }
    }

    /// Turns the loop until `condition` holds (checked after each event, and at least every 10 ms)
    /// or `seconds` pass. Returns whether it held — a bounded wait for tests and tools. A virtual
    /// loop moves its clock, 10 ms or to the next deadline at a time, for `seconds` of virtual time.
    @discardableResult
    public func run(for seconds: Double, until condition: () -> Bool) throws -> Bool {
        let end = deadline(after: seconds)
        while !condition() {
            if let t = virtualNow {
                if t >= end { return false }
                let next = min(heap.first?.deadline ?? end, t &+ 10_000_000, end)
                try advance(to: max(next, t), honouringStop: false)
                continue
            }
            if osh_monotonic_ns() > end { return false }
            try runOnce(timeoutMs: 10)
        }
        return true
    }

    /// Makes `run` return after the current event.
    public func stop() { stopping = true }

    // MARK: Virtual time

    /// Moves a virtual loop's clock forward by `seconds`; see `advance(to:)`.
    public func advance(by seconds: Double) throws {
        try advance(to: now &+ Self.nanoseconds(seconds))
    }

    /// Moves a virtual loop's clock to `target` (ns), running each due timer at its own deadline
    /// in order — every tick of a periodic timer, as a punctual loop would — and serving ready
    /// descriptors without waiting between them. Nothing sleeps.
    public func advance(to target: UInt64) throws {
        try advance(to: target, honouringStop: false)
    }

    private func advance(to target: UInt64, honouringStop: Bool) throws {
        precondition(virtualNow != nil, "advance(to:) needs a loop made with EventLoop(time: .virtual()); this one follows CLOCK_MONOTONIC")
        while true {
            try runOnce(timeoutMs: 0)
            if honouringStop && stopping { return }
            guard let t = virtualNow, let next = heap.first?.deadline, next <= target else { break }
            if next > t { virtualNow = next }
        }
        if let t = virtualNow, target > t {
            virtualNow = target
            try runOnce(timeoutMs: 0)
        }
    }
}

/// A one-shot deadline on the loop that can be moved or cleared (a source's retry, probe or
/// staleness deadline): one timer, made on first use and re-armed after that.
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
        let at = loop.deadline(after: seconds)
        if let t = timer, loop.isRegistered(t.registration) {
            try loop.rearm(t, at: at)
        } else {
            timer = try loop.addTimer(firstAt: at) { [weak self] _ in self?.fired() }
        }
    }

    /// Clears the deadline, keeping the timer for the next `arm`.
    public func disarm() { if let t = timer { loop.disarm(t) } }

    /// Clears the deadline and releases the timer.
    public func cancel() {
        if let t = timer { loop.cancel(t) }
        timer = nil
    }
}
