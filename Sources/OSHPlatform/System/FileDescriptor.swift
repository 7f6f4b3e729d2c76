import CShim
#if canImport(Glibc)
import Glibc
#endif

/// An open file descriptor and the driver its calls go through (the kernel, or a test's
/// `RecordingSyscalls`). A value: copying it does not duplicate the descriptor, and nothing
/// closes it but `close()`. Failures throw `SystemError` naming the call; EINTR is retried here
/// and nowhere else.
public struct FileDescriptor {
    public let rawValue: Int32
    public let system: any SyscallDriver

    public init(rawValue: Int32, system: any SyscallDriver = KernelSyscalls.shared) {
        self.rawValue = rawValue
        self.system = system
    }

    /// open(2), close-on-exec. The error names `path`.
    public static func open(
        _ path: String, _ flags: Int32, mode: mode_t = 0,
        system: any SyscallDriver = KernelSyscalls.shared
    ) throws(SystemError) -> FileDescriptor {
        let fd = try retryingInterrupts("open", subject: path) { system.open(path, flags, mode) }
        return FileDescriptor(rawValue: Int32(truncatingIfNeeded: fd), system: system)
    }

    /// Closes the descriptor; a failure is not reported (the descriptor is released either way,
    /// and there is nothing a caller could do about it).
    public func close() { _ = system.close(rawValue) }

    /// read(2): the count read, 0 at end of file. A non-blocking descriptor with nothing queued
    /// throws EAGAIN (`Errno.wouldBlock`).
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        try Self.retryingInterrupts("read") { system.read(rawValue, into: buffer, at: nil) }
    }

    /// pread(2) at `offset`.
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(SystemError) -> Int {
        try Self.retryingInterrupts("read") { system.read(rawValue, into: buffer, at: offset) }
    }

    /// What a read of a non-blocking descriptor found.
    public enum Available {
        /// This many bytes (> 0).
        case bytes(Int)
        /// Nothing queued now (EAGAIN).
        case empty
        /// End of file: the peer closed (a socket), or nothing queued with VMIN=0 (a tty).
        case end
        case failed(SystemError)
    }

    /// read(2) on a non-blocking descriptor, for a loop that drains it on each readable event.
    public func readAvailable(into buffer: UnsafeMutableRawBufferPointer) -> Available {
        do {
            let n = try read(into: buffer)
            return n > 0 ? .bytes(n) : .end
        } catch {
            return error.code == .wouldBlock ? .empty : .failed(error)
        }
    }

    /// write(2), or pwrite(2) at `offset`: the count written (possibly short).
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int? = nil) throws(SystemError) -> Int {
        try Self.retryingInterrupts("write") { system.write(rawValue, bytes, at: offset) }
    }

    /// Writes every byte (short writes continued); a write that makes no progress is EIO.
    public func writeAll(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        try writeAll(bytes, call: "write") { system.write(rawValue, $0, at: nil) }
    }

    /// send(2) of every byte with MSG_NOSIGNAL: a reset peer is EPIPE, not a SIGPIPE.
    public func sendAll(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        try writeAll(bytes, call: "send") { system.send(rawValue, $0) }
    }

    private func writeAll(
        _ bytes: UnsafeRawBufferPointer, call: String,
        _ write: (UnsafeRawBufferPointer) -> Int
    ) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[done...])
            let n = try Self.retryingInterrupts(call) { write(rest) }
            guard n > 0 else { throw SystemError(call, .ioError) }
            done += n
        }
    }

    /// ioctl(2) with a pointer argument (or none). Returns the request's non-negative result.
    @discardableResult
    public func ioctl(_ request: IoctlRequest, _ argument: UnsafeMutableRawPointer?) throws(SystemError) -> Int {
        try Self.retryingInterrupts(request.name) { system.ioctl(rawValue, request, argument) }
    }

    /// ioctl(2) on a typed struct.
    @discardableResult
    public func ioctl<T>(_ request: IoctlRequest, _ value: inout T) throws(SystemError) -> Int {
        let r = withUnsafeMutableBytes(of: &value) { p in
            Self.retryingInterruptsRaw { system.ioctl(rawValue, request, p.baseAddress) }
        }
        return try Self.checked(request.name, r)
    }

    /// fsync(2), or fdatasync(2) with `dataOnly` (the data and size, not the timestamps).
    public func sync(dataOnly: Bool = false) throws(SystemError) {
        _ = try Self.retryingInterrupts(dataOnly ? "fdatasync" : "fsync") { system.fsync(rawValue, dataOnly: dataOnly) }
    }

    /// Makes a directory's entries durable (a created or renamed file survives a power cut only
    /// once its directory is synced). Best effort: nothing to do about a failure.
    public static func syncDirectory(_ path: String, system: any SyscallDriver = KernelSyscalls.shared) {
        guard let d = try? open(path, O_RDONLY | O_DIRECTORY, system: system) else { return }
        try? d.sync()
        d.close()
    }

    /// ftruncate(2).
    public func truncate(to length: Int) throws(SystemError) {
        _ = try Self.retryingInterrupts("ftruncate") { system.truncate(rawValue, to: length) }
    }

    /// Blocks until the descriptor is ready for `events` (POLLIN, POLLOUT) or CLOCK_MONOTONIC
    /// reaches `deadline` (ns). True when ready (or in error, which the next call reports).
    /// For blocking one-off checks before a loop runs; the agent itself never blocks.
    public func wait(for events: Int16, until deadline: UInt64) throws(SystemError) -> Bool {
        // Recomputed at each attempt, so an interruption does not stretch the wait.
        let r = try Self.retryingInterrupts("poll") {
            let now = osh_monotonic_ns()
            guard now < deadline else { return 0 }
            return system.poll(rawValue, events: events, timeoutMs: Int32(clamping: (deadline - now) / 1_000_000 + 1))
        }
        return r != 0
    }

    /// flock(2) without waiting: EWOULDBLOCK when another description holds a lock that conflicts
    /// (`.unlock` releases what this description holds).
    public func lock(_ kind: FileLock) throws(SystemError) {
        _ = try Self.retryingInterrupts("flock") { system.lock(rawValue, kind) }
    }

    /// A serial port made raw 8N1 without flow control at `baud` (`speedOnly`: only the speed).
    public func setSerial(baud: Int, speedOnly: Bool = false) throws(SystemError) {
        _ = try Self.retryingInterrupts(speedOnly ? "cfsetspeed" : "tcsetattr") {
            system.setSerial(rawValue, baud: baud, speedOnly: speedOnly)
        }
    }

    /// The one EINTR loop: runs `call` (≥ 0, or -errno) until a signal did not interrupt it.
    @inline(__always)
    static func retryingInterruptsRaw(_ call: () -> Int) -> Int {
        while true {
            let r = call()
            if r != -Int(EINTR) { return r }
        }
    }

    @inline(__always)
    static func retryingInterrupts(_ name: String, subject: String? = nil, _ call: () -> Int) throws(SystemError) -> Int {
        try checked(name, retryingInterruptsRaw(call), subject: subject)
    }

    /// A driver's answer (≥ 0, or -errno) as a result or the error naming the call.
    @inline(__always)
    static func checked(_ name: String, _ r: Int, subject: String? = nil) throws(SystemError) -> Int {
        guard r >= 0 else { throw SystemError(name, Errno(Int32(truncatingIfNeeded: -r)), subject: subject) }
        return r
    }
}
