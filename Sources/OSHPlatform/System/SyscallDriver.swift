import CShim
import CI2C
#if canImport(Glibc)
import Glibc
#endif

// The one seam every file-descriptor call goes through. `KernelSyscalls` is the kernel (one
// call per method, nothing else); `RecordingSyscalls` stands in for it in tests, keeping a trace
// and injecting errnos. Methods answer the way the kernel ABI does — a count ≥ 0, or -errno — so
// a stand-in never has to touch the global errno. Retrying EINTR is not a driver's job:
// `FileDescriptor` does it, once, for every call.

/// What flock(2) is asked for (never waiting): the numbers are the C shim's.
public enum FileLock: Int32, Sendable {
    case unlock = 0
    case shared = 1
    case exclusive = 2
}

/// An ioctl request number with the name traces and errors use.
public struct IoctlRequest: Sendable, Equatable {
    public let code: UInt
    public let name: String

    public init(_ code: UInt, _ name: String) {
        self.code = code
        self.name = name
    }

    public static func == (a: IoctlRequest, b: IoctlRequest) -> Bool { a.code == b.code }

    public static let i2cReadWrite = IoctlRequest(UInt(I2C_RDWR), "I2C_RDWR")
    public static let i2cFunctions = IoctlRequest(UInt(I2C_FUNCS), "I2C_FUNCS")
    /// Later open(2)s of the tty fail with EBUSY (except for CAP_SYS_ADMIN).
    public static let ttyExclusive = IoctlRequest(UInt(TIOCEXCL), "TIOCEXCL")
}

public protocol SyscallDriver: AnyObject {
    /// open(2); close-on-exec is always added.
    func open(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int
    /// close(2). Never retried: on Linux the descriptor is gone even when it reports EINTR.
    func close(_ fd: Int32) -> Int
    /// read(2), or pread(2) at `offset`.
    func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int?) -> Int
    /// write(2), or pwrite(2) at `offset`.
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int?) -> Int
    /// send(2) with MSG_NOSIGNAL: a reset peer is EPIPE, not SIGPIPE.
    func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int
    func ioctl(_ fd: Int32, _ request: IoctlRequest, _ argument: UnsafeMutableRawPointer?) -> Int
    /// fsync(2), or fdatasync(2) (`dataOnly`: the data and the size, not the timestamps).
    func fsync(_ fd: Int32, dataOnly: Bool) -> Int
    func truncate(_ fd: Int32, to length: Int) -> Int
    /// poll(2) on one descriptor: its revents (0 = timed out), or -errno.
    func poll(_ fd: Int32, events: Int16, timeoutMs: Int32) -> Int
    /// flock(2) without waiting: EWOULDBLOCK when another open file description holds a lock
    /// that conflicts.
    func lock(_ fd: Int32, _ kind: FileLock) -> Int
    /// termios: raw 8N1 without flow control at `baud` (`speedOnly`: change only the speed);
    /// the input queue is flushed either way.
    func setSerial(_ fd: Int32, baud: Int, speedOnly: Bool) -> Int
}

/// The kernel.
public final class KernelSyscalls: SyscallDriver, Sendable {
    public static let shared = KernelSyscalls()

    public init() {}

    @inline(__always)
    private static func result(_ r: Int) -> Int { r < 0 ? -Int(Glibc.errno) : r }

    public func open(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int {
        Self.result(Int(osh_open(path, flags, mode)))
    }

    public func close(_ fd: Int32) -> Int { Self.result(Int(Glibc.close(fd))) }

    public func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int?) -> Int {
        if let offset { return Self.result(pread(fd, buffer.baseAddress, buffer.count, off_t(offset))) }
        return Self.result(Glibc.read(fd, buffer.baseAddress, buffer.count))
    }

    public func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int?) -> Int {
        if let offset { return Self.result(pwrite(fd, bytes.baseAddress, bytes.count, off_t(offset))) }
        return Self.result(Glibc.write(fd, bytes.baseAddress, bytes.count))
    }

    public func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        Self.result(osh_send_nosignal(fd, bytes.baseAddress, bytes.count))
    }

    public func ioctl(_ fd: Int32, _ request: IoctlRequest, _ argument: UnsafeMutableRawPointer?) -> Int {
        Self.result(Int(osh_ioctl_ptr(fd, request.code, argument)))
    }

    public func fsync(_ fd: Int32, dataOnly: Bool) -> Int {
        Self.result(Int(dataOnly ? fdatasync(fd) : Glibc.fsync(fd)))
    }

    public func truncate(_ fd: Int32, to length: Int) -> Int { Self.result(Int(ftruncate(fd, off_t(length)))) }

    public func poll(_ fd: Int32, events: Int16, timeoutMs: Int32) -> Int {
        var p = pollfd(fd: fd, events: events, revents: 0)
        let r = Self.result(Int(Glibc.poll(&p, 1, timeoutMs)))
        return r > 0 ? Int(p.revents) : r
    }

    public func lock(_ fd: Int32, _ kind: FileLock) -> Int { Self.result(Int(osh_flock_nb(fd, kind.rawValue))) }

    public func setSerial(_ fd: Int32, baud: Int, speedOnly: Bool) -> Int {
        let b = Int32(truncatingIfNeeded: baud)
        return Self.result(Int(speedOnly ? osh_serial_set_baud(fd, b) : osh_serial_configure(fd, b)))
    }
}
