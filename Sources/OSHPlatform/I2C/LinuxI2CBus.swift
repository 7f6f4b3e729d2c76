import CShim
#if canImport(Glibc)
import Glibc
#endif

/// /dev/i2c-N through the i2c-dev driver: every transaction is one I2C_RDWR ioctl.
public final class LinuxI2CBus: I2CBus {
    public let number: Int
    private let fd: Int32

    public static func path(_ number: Int) -> String { "/dev/i2c-\(number)" }

    public init(number: Int) throws {
        self.number = number
        let fd = osh_open(Self.path(number), O_RDWR, 0)
        if fd < 0 {
            let e = errno
            throw I2CError(I2CError.kind(forErrno: e), bus: number, address: nil, errno: e, operation: "opening \(Self.path(number))")
        }
        var funcs: UInt = 0
        if osh_i2c_funcs(fd, &funcs) == 0, funcs & 0x1 == 0 {
            close(fd)
            throw I2CError(.unsupported, bus: number, address: nil, operation: "checking I2C_FUNCS")
        }
        self.fd = fd
    }

    deinit { close(fd) }

    public func transfer(address: UInt8, write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws {
        let r = osh_i2c_transfer(fd, UInt16(address), write.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt16(write.count),
                                 read.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt16(read.count))
        if r < 0 {
            let e = errno
            throw I2CError(I2CError.kind(forErrno: e), bus: number, address: address, errno: e,
                           operation: Self.describe(write: write, readCount: read.count))
        }
    }

    /// "reading 6 bytes at register 0xF7" — for error messages only (the failure path).
    public static func describe(write: UnsafeRawBufferPointer, readCount: Int) -> String {
        let reg = write.first.map { "0x" + String($0, radix: 16, uppercase: true) } ?? "?"
        if readCount > 0 { return "reading \(readCount) byte\(readCount == 1 ? "" : "s") at register \(reg)" }
        return "writing \(max(0, write.count - 1)) byte\(write.count == 2 ? "" : "s") at register \(reg)"
    }

    /// The adapters present (/dev/i2c-*), sorted by number.
    public static func adapters() -> [Int] {
        guard let dir = opendir("/dev") else { return [] }
        defer { closedir(dir) }
        var found: [Int] = []
        while let e = readdir(dir) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name.hasPrefix("i2c-"), let n = Int(name.dropFirst(4)) { found.append(n) }
        }
        return found.sorted()
    }
}
