import CALSA
import CShim
import OSHCore
#if canImport(Glibc)
import Glibc
#endif

/// An ALSA capture device served on the one event loop: opened non-blocking, its
/// poll descriptors registered with the loop, read into one buffer allocated when the device
/// is opened. Nothing is copied or allocated per period.
///
/// Hardware parameters: the first of `request.formats` the device takes (S16_LE, then S32_LE),
/// the fewest channels it allows (1 if it can; the meter reads the first), the rate nearest
/// `request.sampleRate` (48 kHz; 44.1 or 16 kHz devices are accepted as they are), a period
/// near `request.periodSeconds` (20 ms, so a 100 ms window spans 5 wake-ups) and a buffer of
/// `request.periodsPerBuffer` periods. What the device granted is in `format` and the state.
///
/// Faults: an overrun (EPIPE) or a suspend (ESTRPIPE) is recovered in place with
/// `snd_pcm_recover` and counted in `xruns`; the device going away (ENODEV, a disconnected
/// state, a hang-up) closes it, and it is reopened with `backoff` — as is a device that could
/// not be opened at all (not plugged in yet, busy, no permission).
///
/// `configText`, when given, is a private ALSA configuration used instead of the system one
/// (`snd_pcm_open_lconf`): the tests and the demo define a `file`-plugin PCM in it that replays
/// raw samples through the real library.
/// Not thread-safe: use it on the loop's thread only.
public final class ALSACapture: AudioCapture {
    public struct Request: Sendable, Equatable {
        public var sampleRate: Int
        public var periodSeconds: Double
        public var periodsPerBuffer: Int
        public var formats: [PCMSampleFormat]
        /// Channels asked for (the nearest the device allows is taken); the meter reads the first.
        public var channels: Int

        public init(
            sampleRate: Int = 48000, periodSeconds: Double = 0.02, periodsPerBuffer: Int = 4,
            formats: [PCMSampleFormat] = [.s16, .s32], channels: Int = 1
        ) {
            self.channels = channels
            self.sampleRate = sampleRate
            self.periodSeconds = periodSeconds
            self.periodsPerBuffer = periodsPerBuffer
            self.formats = formats
        }
    }

    public let device: String
    public let request: Request
    public let configText: String?
    /// Reopen delays: the retry policy's.
    public var backoff: Backoff {
        get { policy.backoff }
        set { policy.backoff = newValue }
    }
    /// How often a device whose descriptors epoll cannot watch is read (nil = once per period,
    /// which replays a `file`-plugin source in real time; tests set it shorter).
    public var pacing: Double?
    public var onChunk: ((AudioChunk) -> Void)?
    public var onState: ((AudioCaptureState) -> Void)?

    public private(set) var state: AudioCaptureState = .stopped
    /// The granted format while open.
    public private(set) var format: AudioCaptureFormat?
    public private(set) var framesRead: UInt64 = 0
    /// Overruns and suspends recovered.
    public private(set) var xruns = 0
    /// Successful opens after the first.
    public private(set) var reopenCount = 0
    public private(set) var openAttempts = 0

    private let loop: EventLoop
    private var pcm: OpaquePointer?
    private var privateConfig: OpaquePointer?
    private var pollFDs: UnsafeMutablePointer<pollfd>?
    private var pollCount = 0
    private var registrations: [EventLoop.Registration] = []
    private var pacingTimer: EventLoop.Timer?
    private var buffer: UnsafeMutableRawPointer?
    /// True while `onChunk` runs: a close then must not free the buffer the callback is reading.
    private var delivering = false
    private var retiredBuffer: UnsafeMutableRawPointer?
    private var running = false
    private var everOpened = false
    /// Counts the failures of an outage and says how long to wait; the owner logs (from `onState`).
    private var policy = ReconnectPolicy()
    /// Bumped on every close, so a callback that stopped or reopened the device is noticed mid-read.
    private var generation: UInt64 = 0
    private lazy var retry = LoopDeadline(loop: loop) { [weak self] in self?.attemptOpen() }

    public init(loop: EventLoop, device: String, request: Request = Request(), configText: String? = nil) {
        self.loop = loop
        self.device = device
        self.request = request
        self.configText = configText
        osh_alsa_silence_library_errors()
    }

    deinit {
        closeDevice()
        retry.cancel()
    }

    public func start() {
        guard !running else { return }
        running = true
        _ = policy.succeeded()  // a new start: the backoff starts over
        attemptOpen()
    }

    public func stop() {
        guard running else { return }
        running = false
        closeDevice()
        retry.cancel()
        setState(.stopped)
    }

    // MARK: - Opening

    private func attemptOpen() {
        guard running, pcm == nil else { return }
        openAttempts += 1
        do {
            try openDevice()
            if everOpened { reopenCount += 1 }
            everOpened = true
            _ = policy.succeeded()
            if let f = format { setState(.capturing(f)) }
        } catch {
            closeDevice()
            retryLater("\(error)")
        }
    }

    private struct ALSAError: Error, CustomStringConvertible {
        var description: String
    }

    /// `call` failed with the negative errno `code`: a sentence naming the device and what to do.
    private func failure(_ call: String, _ code: Int32) -> ALSAError {
        let reason = String(cString: snd_strerror(code))
        var hint = ""
        switch -code {
        case ENOENT, ENODEV, ENXIO: hint = "; is it plugged in? list capture devices with `arecord -L` or `osh-edge probe`"
        case EBUSY: hint = "; another program is capturing from it (stop it, or use a dsnoop device such as `dsnoop:CARD=…`)"
        case EACCES, EPERM: hint = "; add the agent's user to the `audio` group"
        default: break
        }
        return ALSAError(description: "ALSA \(call) '\(device)': \(reason)\(hint)")
    }

    private func openDevice() throws {
        var handle: OpaquePointer?
        let mode = Int32(SND_PCM_NONBLOCK)
        var rc: Int32
        if let text = configText {
            var top: OpaquePointer?
            rc = snd_config_top(&top)
            guard rc >= 0, let cfg = top else { throw failure("snd_config_top", rc) }
            privateConfig = cfg
            var input: OpaquePointer?
            rc = text.withCString { snd_input_buffer_open(&input, $0, text.utf8.count) }
            guard rc >= 0, let inp = input else { throw failure("snd_input_buffer_open", rc) }
            rc = snd_config_load(cfg, inp)
            snd_input_close(inp)
            guard rc >= 0 else { throw failure("loading the ALSA configuration for", rc) }
            rc = snd_pcm_open_lconf(&handle, device, SND_PCM_STREAM_CAPTURE, mode, cfg)
        } else {
            rc = snd_pcm_open(&handle, device, SND_PCM_STREAM_CAPTURE, mode)
        }
        guard rc >= 0, let p = handle else { throw failure("snd_pcm_open", rc) }
        pcm = p

        let granted = try configure(p)
        format = granted
        let bytes = granted.periodFrames * granted.channels * granted.sampleFormat.bytesPerSample
        buffer = UnsafeMutableRawPointer.allocate(byteCount: max(bytes, 16), alignment: 16)

        rc = snd_pcm_prepare(p)
        guard rc >= 0 else { throw failure("snd_pcm_prepare", rc) }
        rc = snd_pcm_start(p)
        guard rc >= 0 else { throw failure("snd_pcm_start", rc) }

        let n = snd_pcm_poll_descriptors_count(p)
        guard n > 0 else { throw failure("snd_pcm_poll_descriptors_count", n < 0 ? n : -EINVAL) }
        let fds = UnsafeMutablePointer<pollfd>.allocate(capacity: Int(n))
        pollFDs = fds
        let got = snd_pcm_poll_descriptors(p, fds, UInt32(n))
        guard got > 0 else { throw failure("snd_pcm_poll_descriptors", got < 0 ? got : -EINVAL) }
        pollCount = Int(got)
        let gen = generation
        var unpollable = false
        for i in 0..<pollCount {
            // poll(2) and epoll share the IN/OUT/ERR/HUP bit values.
            let events = EventLoop.Events(rawValue: UInt32(UInt16(bitPattern: fds[i].events)))
            do {
                let r = try loop.add(fd: fds[i].fd, events: events) { [weak self] ev in
                    guard let self, self.generation == gen else { return }
                    self.serve(index: i, events: ev)
                }
                registrations.append(r)
            } catch let e as SystemError where e.errno == EPERM {
                // epoll refuses files that cannot block (the null plugin's /dev/null); poll(2)
                // calls them always ready, so they are served by a timer instead.
                unpollable = true
            }
        }
        if unpollable {
            let every = pacing ?? Double(granted.periodFrames) / Double(max(1, granted.sampleRate))
            let ns = UInt64(max(every, 0.0001) * 1e9)
            pacingTimer = try loop.addTimer(firstAt: Clock.monotonicNanoseconds() + ns, interval: ns) { [weak self] expirations in
                guard let self, self.generation == gen else { return }
                // One period per tick (and per missed tick), so a replay runs at the device's rate.
                self.serve(index: nil, events: [], periods: Int(min(expirations, 64)))
            }
        }
    }

    /// Negotiates hw and sw params; returns what the device granted.
    private func configure(_ p: OpaquePointer) throws -> AudioCaptureFormat {
        var hwp: OpaquePointer?
        var rc = snd_pcm_hw_params_malloc(&hwp)
        guard rc >= 0, let hw = hwp else { throw failure("snd_pcm_hw_params_malloc", rc) }
        defer { snd_pcm_hw_params_free(hw) }
        rc = snd_pcm_hw_params_any(p, hw)
        guard rc >= 0 else { throw failure("snd_pcm_hw_params_any", rc) }
        rc = snd_pcm_hw_params_set_access(p, hw, SND_PCM_ACCESS_RW_INTERLEAVED)
        guard rc >= 0 else { throw failure("setting interleaved read access on", rc) }

        var chosen: PCMSampleFormat?
        for f in request.formats where snd_pcm_hw_params_test_format(p, hw, alsaFormat(f)) == 0 {
            chosen = f
            break
        }
        guard let sampleFormat = chosen else {
            throw ALSAError(
                description: "ALSA device '\(device)' offers neither S16_LE nor S32_LE capture; use a `plughw:` device so ALSA converts")
        }
        rc = snd_pcm_hw_params_set_format(p, hw, alsaFormat(sampleFormat))
        guard rc >= 0 else { throw failure("setting \(sampleFormat.rawValue) on", rc) }

        var channels = UInt32(max(1, request.channels))
        rc = snd_pcm_hw_params_set_channels_near(p, hw, &channels)
        guard rc >= 0 else { throw failure("setting the channel count of", rc) }

        var rate = UInt32(max(1, request.sampleRate))
        var dir: Int32 = 0
        rc = snd_pcm_hw_params_set_rate_near(p, hw, &rate, &dir)
        guard rc >= 0 else { throw failure("setting the sample rate of", rc) }

        var period = snd_pcm_uframes_t(max(16, Int((Double(rate) * request.periodSeconds).rounded())))
        dir = 0
        rc = snd_pcm_hw_params_set_period_size_near(p, hw, &period, &dir)
        guard rc >= 0 else { throw failure("setting the period size of", rc) }
        var bufferSize = period * snd_pcm_uframes_t(max(2, request.periodsPerBuffer))
        rc = snd_pcm_hw_params_set_buffer_size_near(p, hw, &bufferSize)
        guard rc >= 0 else { throw failure("setting the buffer size of", rc) }
        rc = snd_pcm_hw_params(p, hw)
        guard rc >= 0 else { throw failure("applying hardware parameters to", rc) }

        // Read back what was granted (the _near calls report it, but the final install may round).
        dir = 0
        _ = snd_pcm_hw_params_get_rate(hw, &rate, &dir)
        dir = 0
        _ = snd_pcm_hw_params_get_period_size(hw, &period, &dir)
        _ = snd_pcm_hw_params_get_buffer_size(hw, &bufferSize)
        _ = snd_pcm_hw_params_get_channels(hw, &channels)

        var swp: OpaquePointer?
        rc = snd_pcm_sw_params_malloc(&swp)
        guard rc >= 0, let sw = swp else { throw failure("snd_pcm_sw_params_malloc", rc) }
        defer { snd_pcm_sw_params_free(sw) }
        rc = snd_pcm_sw_params_current(p, sw)
        guard rc >= 0 else { throw failure("snd_pcm_sw_params_current", rc) }
        // Wake once per period.
        rc = snd_pcm_sw_params_set_avail_min(p, sw, period)
        guard rc >= 0 else { throw failure("setting avail_min on", rc) }
        rc = snd_pcm_sw_params(p, sw)
        guard rc >= 0 else { throw failure("applying software parameters to", rc) }

        return AudioCaptureFormat(
            sampleFormat: sampleFormat, sampleRate: Int(rate), channels: Int(max(1, channels)),
            periodFrames: Int(period), bufferFrames: Int(bufferSize))
    }

    private func alsaFormat(_ f: PCMSampleFormat) -> snd_pcm_format_t {
        f == .s16 ? SND_PCM_FORMAT_S16_LE : SND_PCM_FORMAT_S32_LE
    }

    private func closeDevice() {
        generation &+= 1
        for r in registrations { loop.remove(r) }
        registrations.removeAll(keepingCapacity: true)
        if let t = pacingTimer { loop.cancel(t) }
        pacingTimer = nil
        if let p = pcm { snd_pcm_close(p) }
        pcm = nil
        if let c = privateConfig { snd_config_delete(c) }
        privateConfig = nil
        pollFDs?.deallocate()
        pollFDs = nil
        pollCount = 0
        // Only the buffer of the read being delivered can be in use; one opened since is not.
        if delivering && retiredBuffer == nil { retiredBuffer = buffer } else { buffer?.deallocate() }
        buffer = nil
        format = nil
    }

    /// The device is gone or unusable: close it, say why, and reopen after a backoff.
    private func lose(_ why: String) {
        closeDevice()
        guard running else { return }
        retryLater(why)
    }

    private func retryLater(_ why: String) {
        let verdict = policy.failed(key: why)
        setState(.disconnected(why, retryIn: verdict.step))
        try? retry.arm(after: verdict.delay)
    }

    // MARK: - Reading

    /// `index` nil: a pacing tick, every descriptor reported ready for what it waits for.
    private func serve(index: Int?, events: EventLoop.Events, periods: Int? = nil) {
        guard let p = pcm, let fds = pollFDs else { return }
        // ALSA translates the raw descriptor events (plugins may use timers or several fds).
        for i in 0..<pollCount { fds[i].revents = index == nil ? fds[i].events : 0 }
        if let i = index { fds[i].revents = Int16(truncatingIfNeeded: events.rawValue) }
        var revents: UInt16 = 0
        let rc = snd_pcm_poll_descriptors_revents(p, fds, UInt32(pollCount), &revents)
        if rc < 0 { return lose(failure("snd_pcm_poll_descriptors_revents", rc).description) }
        if revents & UInt16(POLLERR) != 0 || revents & UInt16(POLLHUP) != 0 {
            switch snd_pcm_state(p) {
            case SND_PCM_STATE_DISCONNECTED: return lose("ALSA device '\(device)' was disconnected")
            case SND_PCM_STATE_XRUN: return recover(p, -EPIPE)
            case SND_PCM_STATE_SUSPENDED: return recover(p, -ESTRPIPE)
            case SND_PCM_STATE_RUNNING: break
            case SND_PCM_STATE_PREPARED:
                let rc = snd_pcm_start(p)
                if rc < 0 { return lose(failure("restarting", rc).description) }
                return
            default:
                // An error the state does not explain would keep the descriptor ready forever: start over.
                return lose("ALSA device '\(device)' reported an error in state \(snd_pcm_state(p).rawValue)")
            }
        }
        guard revents & UInt16(POLLIN) != 0 else { return }
        readAvailable(p, periods: periods)
    }

    private func readAvailable(_ p: OpaquePointer, periods: Int?) {
        guard let f = format, let buf = buffer else { return }
        let gen = generation
        // Bounded, so a source that is always ready cannot hold the loop: at most a buffer's worth.
        let maxReads = min(periods ?? Int.max, f.bufferFrames / max(1, f.periodFrames) + 1)
        for _ in 0..<max(1, maxReads) {
            let n = snd_pcm_readi(p, buf, snd_pcm_uframes_t(f.periodFrames))
            if n == -Int(EAGAIN) { return }
            if n < 0 { return recover(p, Int32(truncatingIfNeeded: n)) }
            if n == 0 { return }
            let frames = Int(n)
            framesRead &+= UInt64(frames)
            let samples: AudioSamples
            switch f.sampleFormat {
            case .s16: samples = .s16(UnsafeBufferPointer(start: buf.assumingMemoryBound(to: Int16.self), count: frames * f.channels))
            case .s32: samples = .s32(UnsafeBufferPointer(start: buf.assumingMemoryBound(to: Int32.self), count: frames * f.channels))
            }
            delivering = true
            onChunk?(
                AudioChunk(
                    samples: samples, channels: f.channels, frames: frames, sampleRate: f.sampleRate,
                    readAtNanos: Clock.monotonicNanoseconds()))
            delivering = false
            if let r = retiredBuffer {
                r.deallocate()
                retiredBuffer = nil
            }
            // The callback may have stopped or replaced the device.
            guard generation == gen else { return }
        }
    }

    private func recover(_ p: OpaquePointer, _ code: Int32) {
        if code == -ENODEV || code == -EBADFD || code == -ENXIO {
            return lose(failure("reading from", code).description)
        }
        if code == -EPIPE || code == -ESTRPIPE || code == -EINTR { xruns += 1 }
        // Silent: the agent counts xruns itself.
        var rc = snd_pcm_recover(p, code, 1)
        if rc >= 0, snd_pcm_state(p) == SND_PCM_STATE_PREPARED { rc = snd_pcm_start(p) }
        if rc < 0 { lose(failure("recovering (\(String(cString: snd_strerror(code))))", rc).description) }
    }

    private func setState(_ s: AudioCaptureState) {
        guard s != state else { return }
        state = s
        onState?(s)
    }
}

/// A capture device as the system lists it.
public struct AudioDeviceInfo: Sendable, Equatable {
    /// What to put in the configuration (`hw:CARD=Device,DEV=0`, `default`, `dsnoop:…`).
    public var name: String
    /// Human description (card and device names), possibly several lines joined by " — ".
    public var description: String

    public init(name: String, description: String) {
        self.name = name
        self.description = description
    }
}

public enum ALSADevices {
    /// Capture PCMs: the configured names ALSA hints at (IOID Input or unset, "null" left out),
    /// then every hardware capture device found by walking the cards (`hw:N,D`), which the
    /// hints omit on some systems.
    public static func captureDevices() -> [AudioDeviceInfo] {
        osh_alsa_silence_library_errors()
        var out: [AudioDeviceInfo] = []
        var seen = Set<String>()
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        if snd_device_name_hint(-1, "pcm", &hints) >= 0, let list = hints {
            var i = 0
            while let h = list[i] {
                i += 1
                func get(_ key: String) -> String? {
                    guard let c = snd_device_name_get_hint(h, key) else { return nil }
                    defer { free(c) }
                    return String(cString: c)
                }
                guard let name = get("NAME"), name != "null" else { continue }
                if let io = get("IOID"), io != "Input" { continue }
                let desc = (get("DESC") ?? "").split(separator: "\n").joined(separator: " — ")
                if seen.insert(name).inserted { out.append(AudioDeviceInfo(name: name, description: desc)) }
            }
            snd_device_name_free_hint(list)
        }
        var card: Int32 = -1
        while snd_card_next(&card) >= 0, card >= 0 {
            var ctl: OpaquePointer?
            guard snd_ctl_open(&ctl, "hw:\(card)", 0) >= 0, let c = ctl else { continue }
            defer { snd_ctl_close(c) }
            var cinfo: OpaquePointer?
            guard snd_ctl_card_info_malloc(&cinfo) >= 0, let ci = cinfo else { continue }
            defer { snd_ctl_card_info_free(ci) }
            let cardName = snd_ctl_card_info(c, ci) >= 0 ? String(cString: snd_ctl_card_info_get_name(ci)) : "card \(card)"
            var pinfo: OpaquePointer?
            guard snd_pcm_info_malloc(&pinfo) >= 0, let pi = pinfo else { continue }
            defer { snd_pcm_info_free(pi) }
            var dev: Int32 = -1
            while snd_ctl_pcm_next_device(c, &dev) >= 0, dev >= 0 {
                snd_pcm_info_set_device(pi, UInt32(dev))
                snd_pcm_info_set_subdevice(pi, 0)
                snd_pcm_info_set_stream(pi, SND_PCM_STREAM_CAPTURE)
                guard snd_ctl_pcm_info(c, pi) >= 0 else { continue }  // playback-only device
                let name = "hw:\(card),\(dev)"
                let desc = "\(cardName) — \(String(cString: snd_pcm_info_get_name(pi)))"
                if seen.insert(name).inserted { out.append(AudioDeviceInfo(name: name, description: desc)) }
            }
        }
        return out
    }
}
