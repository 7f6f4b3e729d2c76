import CI2C
#if canImport(Glibc)
import Glibc
#endif

/// /dev/i2c-N through the i2c-dev driver: every transaction is one I2C_RDWR ioctl, whose errno
/// is what the adapter driver left (ENXIO or EREMOTEIO: no ACK; EIO, ETIMEDOUT, EAGAIN: bus trouble).
public final class LinuxI2CBus: I2CBus {
    public let number: Int
    private let fd: FileDescriptor

    public static func path(_ number: Int) -> String { "/dev/i2c-\(number)" }

    /// `system`: the kernel, or a test's `RecordingSyscalls`. `announcingUse`: the agent's own
    /// buses hold a shared flock on the adapter's node for as long as they are open. Nothing waits
    /// on it; it tells `osh-edge probe` not to send a command that would take an answer meant for
    /// the agent (an SHT4x answers whoever reads next, not whoever asked).
    public init(number: Int, announcingUse: Bool = false, system: any SyscallDriver = KernelSyscalls.shared) throws {
        self.number = number
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(Self.path(number), O_RDWR, system: system)
        } catch {
            throw I2CError(
                I2CError.kind(forErrno: error.errno), bus: number, address: nil, errno: error.errno,
                operation: "opening \(Self.path(number))")
        }
        var funcs: UInt = 0
        // An adapter that cannot say what it does is tried anyway; one that says it cannot combine is not.
        if (try? fd.ioctl(.i2cFunctions, &funcs)) != nil, funcs & UInt(I2C_FUNC_I2C) == 0 {
            fd.close()
            throw I2CError(.unsupported, bus: number, address: nil, operation: "checking I2C_FUNCS")
        }
        // Advisory only: a bus whose lock cannot be had is used all the same.
        if announcingUse { try? fd.lock(.shared) }
        self.fd = fd
    }

    deinit { fd.close() }

    /// Whether another process announced that it uses this bus (the running agent): asks for the
    /// lock exclusively without waiting, and gives it back at once when it was free.
    public func isAnnouncedByAnotherProcess() -> Bool {
        do throws(SystemError) {
            try fd.lock(.exclusive)
        } catch {
            return error.errno == EWOULDBLOCK
        }
        try? fd.lock(.unlock)
        return false
    }

    public func transfer(address: UInt8, write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws {
        let operation = { Self.describe(write: write, readCount: read.count) }
        guard write.count > 0 || read.count > 0 else {
            throw I2CError(.busFault, bus: number, address: address, errno: EINVAL, operation: operation())
        }
        // One combined transaction: the write, then a repeated start (no stop) and the read.
        let none = i2c_msg(addr: 0, flags: 0, len: 0, buf: nil)
        var msgs = (none, none)
        var failure: SystemError?
        withUnsafeMutableBytes(of: &msgs) { raw in
            let m = raw.bindMemory(to: i2c_msg.self)
            var n = 0
            if write.count > 0 {
                m[n] = i2c_msg(
                    addr: UInt16(address), flags: 0, len: UInt16(write.count),
                    buf: UnsafeMutablePointer(mutating: write.baseAddress?.assumingMemoryBound(to: UInt8.self)))
                n += 1
            }
            if read.count > 0 {
                m[n] = i2c_msg(
                    addr: UInt16(address), flags: UInt16(I2C_M_RD), len: UInt16(read.count),
                    buf: read.baseAddress?.assumingMemoryBound(to: UInt8.self))
                n += 1
            }
            var data = i2c_rdwr_ioctl_data(msgs: m.baseAddress, nmsgs: UInt32(n))
            do throws(SystemError) { try fd.ioctl(.i2cReadWrite, &data) } catch { failure = error }
        }
        if let e = failure {
            throw I2CError(I2CError.kind(forErrno: e.errno), bus: number, address: address, errno: e.errno, operation: operation())
        }
    }

    /// "reading 6 bytes at register 0xF7" — for error messages only (the failure path).
    public static func describe(write: UnsafeRawBufferPointer, readCount: Int) -> String {
        let reg = write.first.map { "0x" + String($0, radix: 16, uppercase: true) } ?? "?"
        if readCount > 0 { return "reading \(readCount) byte\(readCount == 1 ? "" : "s") at register \(reg)" }
        return "writing \(max(0, write.count - 1)) byte\(write.count == 2 ? "" : "s") at register \(reg)"
    }

    /// The adapters present (/dev/i2c-*), sorted by number.
    public static func adapters() -> [Int] { StateFiles.numberedEntries("/dev", prefix: "i2c-").map(\.number) }
}
