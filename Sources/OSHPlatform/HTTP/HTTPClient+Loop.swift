// HTTPClient on the EventLoop: libcurl's CURLMOPT_SOCKETFUNCTION and TIMERFUNCTION become the
// loop's registrations and one timer; what became ready goes back to curl_multi_socket_action.
import CCurl
import CShim
import OSHCore
#if canImport(Glibc)
import Glibc
#endif

extension HTTPClient {
    // MARK: Loop integration

    /// CURLMOPT_SOCKETFUNCTION: watch, re-watch or forget one of libcurl's sockets.
    func watch(fd: Int32, what: Int32) {
        if what == CURL_POLL_REMOVE {
            if let w = sockets.removeValue(forKey: fd) { loop.remove(w.registration) }
            return
        }
        var events: EventLoop.Events = []
        if what & CURL_POLL_IN != 0 { events.insert(.readable) }
        if what & CURL_POLL_OUT != 0 { events.insert(.writable) }
        if let w = sockets[fd] {
            // libcurl reports a socket again when any transfer's interest is recomputed; an
            // unchanged one needs no epoll_ctl.
            if w.events == events { return }
            do {
                try loop.modify(w.registration, events: events)
                sockets[fd]?.events = events
                return
            } catch {
                // The fd was closed and its number reused without a REMOVE: register it afresh.
                loop.remove(w.registration)
                sockets[fd] = nil
            }
        }
        do {
            let r = try loop.add(fd: fd, events: events) { [weak self] e in self?.onSocket(fd: fd, events: e) }
            sockets[fd] = WatchedSocket(registration: r, events: events)
        } catch {
            lastLoopError = "watching libcurl socket \(fd): \(error)"
        }
    }

    func onSocket(fd: Int32, events: EventLoop.Events) {
        var flags: Int32 = 0
        if events.contains(.readable) { flags |= CURL_CSELECT_IN }
        if events.contains(.writable) { flags |= CURL_CSELECT_OUT }
        if events.contains(.error) || events.contains(.hangup) { flags |= CURL_CSELECT_ERR }
        callCurl {
            var running: Int32 = 0
            _ = curl_multi_socket_action(multi, fd, flags, &running)
        }
        drainCompletions()
    }

    /// Calls libcurl (`body`), then serves at once a "timeout 0" libcurl asked for meanwhile —
    /// what the loop timer would do a moment later, without arming the timerfd and a turn for it
    /// (libcurl asks for 0 on every new transfer). A few rounds at most; a deadline still due
    /// after them is left to the loop timer.
    func callCurl(_ body: () -> Void) {
        let outer = servingZeroTimeout
        servingZeroTimeout = true
        body()
        var rounds = 0
        while zeroTimeoutWanted, rounds < 3 {
            zeroTimeoutWanted = false
            rounds += 1
            var running: Int32 = 0
            _ = osh_curl_multi_socket_timeout(multi, &running)
        }
        zeroTimeoutWanted = false
        servingZeroTimeout = outer
        armTimer()
    }

    /// CURLMOPT_TIMERFUNCTION: only records the deadline; `callCurl` or the loop's timer acts on it.
    func curlTimer(ms: Int) {
        // Only the last word counts: "now" followed by a later deadline in the same call is not served.
        if servingZeroTimeout { zeroTimeoutWanted = ms == 0 }
        if ms < 0 {
            curlDeadline = nil
        } else {
            curlDeadline = osh_monotonic_ns() &+ UInt64(ms) &* 1_000_000
            if ms == 0, servingZeroTimeout { return }
        }
        // Inside a call from callCurl the timer is armed once, after it.
        if !servingZeroTimeout { armTimer() }
    }

    func armTimer() {
        guard let timer else { return }
        // Early failures are delivered at once (an absolute time of 1 ns has passed).
        let at: UInt64? = ready.isEmpty ? curlDeadline.map { max($0, 1) } : 1
        guard at != armedAt else { return }
        // libcurl moves a running transfer's deadline a little later on every read (its low-speed
        // check expires 1 s after the last progress): an armed time that is a little early stays —
        // firing early only re-arms (onTimer) — where re-arming each time would cost a heap move.
        if let at, let armed = armedAt, at > armed {
            let now = osh_monotonic_ns()
            if at &- armed <= max(1_000_000, (at > now ? at &- now : 0) / 64) { return }
        }
        guard let at else {
            loop.disarm(timer)
            armedAt = nil
            return
        }
        do {
            try loop.rearm(timer, at: at)
            armedAt = at
            timerArms &+= 1
        } catch {
            armedAt = nil
            lastLoopError = "arming the libcurl timer: \(error)"
        }
    }

    func onTimer() {
        // A one-shot: the loop disarmed it before this call.
        armedAt = nil
        if !ready.isEmpty {
            swap(&ready, &delivering)
            for f in delivering { f.completion(f.result) }
            delivering.removeAll(keepingCapacity: true)
        }
        if let due = curlDeadline, osh_monotonic_ns() >= due {
            callCurl {
                var running: Int32 = 0
                _ = osh_curl_multi_socket_timeout(multi, &running)
            }
            if curlDeadline == due {
                // libcurl did not move its deadline (its clock had not quite reached it): look again
                // in a millisecond rather than spin, or stop if nothing is left to time.
                curlDeadline = active.isEmpty ? nil : osh_monotonic_ns() &+ 1_000_000
            }
            drainCompletions()
        }
        armTimer()
    }

    /// Collects finished transfers; `deliver` false queues their completions for the loop.
    func drainCompletions(deliver: Bool = true) {
        var left: Int32 = 0
        while let msg = curl_multi_info_read(multi, &left) {
            guard msg.pointee.msg == CURLMSG_DONE, let easy = msg.pointee.easy_handle else { continue }
            let code = osh_curl_msg_result(msg)
            guard let t = active.first(where: { $0.easy == easy }) else { continue }
            finish(t, code: code, deliver: deliver)
        }
    }
}
