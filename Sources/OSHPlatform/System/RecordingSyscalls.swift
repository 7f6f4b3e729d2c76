import CI2C
#if canImport(Glibc)
import Glibc
#endif

/// A stand-in for the kernel in tests: every call lands in `trace` ("open /dev/i2c-1",
/// "I2C_RDWR 0x76 write 1 read 14", "read 14", "read → EINTR"), errnos are injected per call
/// name, reads return queued bytes, and ioctls are answered by `onIoctl`. Descriptors are
/// numbers it hands out (`nextDescriptor`), so a test can hand out a real one an event loop
/// can watch. Not thread-safe: one test, one thread.
public final class RecordingSyscalls: SyscallDriver {
    public private(set) var trace: [String] = []
    /// What `read` returns next, in order; nothing queued is EAGAIN.
    public var reads: [[UInt8]] = []
    /// Everything written or sent, one entry per call.
    public private(set) var written: [[UInt8]] = []
    /// The descriptor the next successful open returns (then incremented).
    public var nextDescriptor: Int32 = 100
    /// What the read half of the next I2C_RDWR transactions receives, in order (an ioctl
    /// `onIoctl` does not answer); nothing queued reads zeros.
    public var i2cReplies: [[UInt8]] = []
    /// Answers an ioctl: 0 (or a positive result), or -errno. Default: 0 (and I2C_FUNCS says
    /// the adapter combines transfers).
    public var onIoctl: ((IoctlRequest, UnsafeMutableRawPointer?) -> Int)?
    private var injected: [(call: String, errno: Errno)] = []

    public init() {}

    /// The next `times` calls named `call` ("open", "read", "write", "send", "close", "fsync",
    /// "fdatasync", "ftruncate", "poll", "flock", "termios", or an ioctl's name such as
    /// "I2C_RDWR") fail with `errno` before doing anything.
    public func inject(_ errno: Errno, into call: String, times: Int = 1) {
        for _ in 0..<max(0, times) { injected.append((call, errno)) }
    }

    /// Forgets the trace (after a setup the test does not assert).
    public func clearTrace() { trace.removeAll() }

    private func failure(_ call: String, _ entry: String) -> Int? {
        guard let i = injected.firstIndex(where: { $0.call == call }) else { return nil }
        let e = injected.remove(at: i).errno
        trace.append("\(entry) → \(e.name)")
        return -Int(e.rawValue)
    }

    public func open(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int {
        if let f = failure("open", "open \(path)") { return f }
        trace.append("open \(path)")
        defer { nextDescriptor += 1 }
        return Int(nextDescriptor)
    }

    public func close(_ fd: Int32) -> Int {
        if let f = failure("close", "close") { return f }
        trace.append("close")
        return 0
    }

    public func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int?) -> Int {
        if let f = failure("read", "read") { return f }
        guard !reads.isEmpty else {
            trace.append("read → EAGAIN")
            return -Int(EAGAIN)
        }
        var next = reads.removeFirst()
        let n = min(next.count, buffer.count)
        next.withUnsafeBytes { src in
            if n > 0, let b = buffer.baseAddress, let s = src.baseAddress { b.copyMemory(from: s, byteCount: n) }
        }
        // What did not fit is read next time, as from a real queue.
        if n < next.count { next.removeFirst(n); reads.insert(next, at: 0) }
        trace.append("read \(n)")
        return n
    }

    public func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int?) -> Int {
        record("write", bytes)
    }

    public func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int { record("send", bytes) }

    private func record(_ call: String, _ bytes: UnsafeRawBufferPointer) -> Int {
        if let f = failure(call, call) { return f }
        trace.append("\(call) \(bytes.count)")
        written.append(Array(bytes))
        return bytes.count
    }

    public func ioctl(_ fd: Int32, _ request: IoctlRequest, _ argument: UnsafeMutableRawPointer?) -> Int {
        var entry = request.name
        if request == .i2cReadWrite, let a = argument { entry += Self.describeI2C(a) }
        if let f = failure(request.name, entry) { return f }
        if onIoctl == nil, let a = argument {
            // A plain adapter: combined transfers, reads answered from `i2cReplies`.
            if request == .i2cFunctions { a.storeBytes(of: UInt(I2C_FUNC_I2C), as: UInt.self) }
            if request == .i2cReadWrite { answerI2C(a) }
        }
        let r = onIoctl?(request, argument) ?? 0
        trace.append(r < 0 ? "\(entry) → \(Errno(Int32(truncatingIfNeeded: -r)).name)" : entry)
        return r
    }

    public func fsync(_ fd: Int32, dataOnly: Bool) -> Int {
        let call = dataOnly ? "fdatasync" : "fsync"
        if let f = failure(call, call) { return f }
        trace.append(call)
        return 0
    }

    public func truncate(_ fd: Int32, to length: Int) -> Int {
        if let f = failure("ftruncate", "ftruncate \(length)") { return f }
        trace.append("ftruncate \(length)")
        return 0
    }

    /// Ready for what was asked, at once.
    public func poll(_ fd: Int32, events: Int16, timeoutMs: Int32) -> Int {
        if let f = failure("poll", "poll") { return f }
        trace.append("poll")
        return Int(events)
    }

    public func lock(_ fd: Int32, _ kind: FileLock) -> Int {
        let entry = kind == .exclusive ? "flock" : kind == .shared ? "flock shared" : "flock unlock"
        if let f = failure("flock", entry) { return f }
        trace.append(entry)
        return 0
    }

    public func setSerial(_ fd: Int32, baud: Int, speedOnly: Bool) -> Int {
        let entry = speedOnly ? "termios \(baud) baud" : "termios raw 8N1 \(baud) baud"
        if let f = failure("termios", entry) { return f }
        trace.append(entry)
        return 0
    }

    private func answerI2C(_ argument: UnsafeMutableRawPointer) {
        let data = argument.assumingMemoryBound(to: i2c_rdwr_ioctl_data.self).pointee
        guard let msgs = data.msgs else { return }
        for i in 0..<Int(data.nmsgs) where msgs[i].flags & UInt16(I2C_M_RD) != 0 {
            guard let buf = msgs[i].buf else { continue }
            let reply = i2cReplies.isEmpty ? [] : i2cReplies.removeFirst()
            for j in 0..<Int(msgs[i].len) { buf[j] = j < reply.count ? reply[j] : 0 }
        }
    }

    /// " 0x76 write 1 read 14": the messages of an I2C_RDWR request.
    private static func describeI2C(_ argument: UnsafeMutableRawPointer) -> String {
        let data = argument.assumingMemoryBound(to: i2c_rdwr_ioctl_data.self).pointee
        guard let msgs = data.msgs else { return "" }
        var s = ""
        for i in 0..<Int(data.nmsgs) {
            let m = msgs[i]
            if i == 0 { s += " 0x" + String(m.addr, radix: 16) }
            s += (m.flags & UInt16(I2C_M_RD) != 0 ? " read " : " write ") + String(m.len)
        }
        return s
    }
}
