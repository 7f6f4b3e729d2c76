import OSHCore

/// Logging for something that retries (a GPS port, gpsd, the command channel, a camera, an audio
/// device, registration): the first failure of an outage with when it is retried, any different
/// reason during the outage once, and the recovery once — not a line per retry. (The state texts
/// that say "retrying in N s" at every step are for status displays; the journal keeps the story.)
///
/// Reasons are compared by `key` (default: the text), so a reason carrying a changing detail
/// (libcurl's "after 9 ms") can still count as a repeat. Not thread-safe: one owner, one thread.
public struct RetryLog {
    /// Which lines to write: OSHCore's pure policy (the backoff there is unused by callers that
    /// keep their own schedule).
    public private(set) var policy: ReconnectPolicy

    public init(_ policy: ReconnectPolicy = ReconnectPolicy()) { self.policy = policy }

    /// In an outage: a failure was logged and no recovery yet.
    public var isDown: Bool { policy.isDown }

    /// The backoff the policy schedules retries with (a device's `backoff` setting).
    public var backoff: Backoff {
        get { policy.backoff }
        set { policy.backoff = newValue }
    }

    /// The step the next failure will be retried after (before jitter): what a state text says
    /// ("retrying in 4 s") before `failed` returns the verdict whose `delay` is scheduled.
    public var nextStep: Double { policy.backoff.delay(afterFailures: policy.failures + 1) }

    /// A failure that will be retried. The first of an outage is logged with `firstSuffix` (e.g.
    /// "; retrying in 1 s"); later ones only when their key was not logged in this outage yet.
    /// Returns the policy's verdict (its `delay` is the next wait for callers that use its backoff).
    @discardableResult
    public mutating func failed(
        _ level: Log.Level, _ reason: String, key: String? = nil, firstSuffix: String = ""
    ) -> ReconnectPolicy.Verdict {
        let v = policy.failed(key: key ?? reason)
        switch v.log {
        case .firstFailure: Log.write(level, reason + firstSuffix)
        case .newReason: Log.write(level, reason)
        case nil: break
        }
        return v
    }

    /// Any other event: during an outage each key once; otherwise unless it repeats the last line.
    /// True when a line was written.
    @discardableResult
    public mutating func note(_ level: Log.Level, _ message: String, key: String? = nil) -> Bool {
        guard policy.shouldNote(key: key ?? message) else { return false }
        Log.write(level, message)
        return true
    }

    /// The thing works again. True if it was down (the caller then logs that it is back, once).
    public mutating func recovered() -> Bool { policy.succeeded() }

    /// A retry delay as the logs and state texts say it: "1 s", "0.5 s".
    public static func seconds(_ d: Double) -> String { ReconnectPolicy.seconds(d) }

    /// `s` without libcurl's elapsed time ("… after 9 ms: …", "… after 5001 milliseconds"), which
    /// differs at every attempt: a key under which the retries of one failure are the same reason.
    public static func withoutElapsedTime(_ s: String) -> String {
        let u = Array(s.utf8)
        let after = Array(" after ".utf8)
        let units = [Array(" milliseconds".utf8), Array(" ms".utf8)]
        var out: [UInt8] = []
        out.reserveCapacity(u.count)
        var i = 0
        scan: while i < u.count {
            if u[i...].starts(with: after) {
                var j = i + after.count
                let digits = j
                while j < u.count, u[j] >= 0x30, u[j] <= 0x39 { j += 1 }
                if j > digits {
                    for unit in units where u[j...].starts(with: unit) {
                        i = j + unit.count
                        continue scan
                    }
                }
            }
            out.append(u[i])
            i += 1
        }
        return String(decoding: out, as: UTF8.self)
    }
}
