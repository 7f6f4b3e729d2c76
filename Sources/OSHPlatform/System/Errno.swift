#if canImport(Glibc)
import Glibc
#endif

/// An errno value, typed: its symbolic name (what traces and tests say) and the C library's
/// text (what a person reads). The one place errno numbers become words.
public struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's errno (read it right after the failing call).
    public static var current: Errno { Errno(Glibc.errno) }

    public static let interrupted = Errno(EINTR)
    public static let wouldBlock = Errno(EAGAIN)  // == EWOULDBLOCK on Linux
    public static let ioError = Errno(EIO)
    public static let noSuchFile = Errno(ENOENT)
    public static let noDevice = Errno(ENODEV)
    public static let badDescriptor = Errno(EBADF)
    public static let invalidArgument = Errno(EINVAL)
    public static let timedOut = Errno(ETIMEDOUT)

    /// strerror(3): "Input/output error".
    public var text: String {
        strerror(rawValue).map { String(cString: $0) } ?? "errno \(rawValue)"
    }

    /// "EIO" for the errnos the platform meets; "errno N" otherwise.
    public var name: String {
        switch rawValue {
        case EPERM: return "EPERM"
        case ENOENT: return "ENOENT"
        case EINTR: return "EINTR"
        case EIO: return "EIO"
        case ENXIO: return "ENXIO"
        case EBADF: return "EBADF"
        case EAGAIN: return "EAGAIN"
        case ENOMEM: return "ENOMEM"
        case EACCES: return "EACCES"
        case EBUSY: return "EBUSY"
        case EEXIST: return "EEXIST"
        case ENODEV: return "ENODEV"
        case ENOTDIR: return "ENOTDIR"
        case EINVAL: return "EINVAL"
        case ENOTTY: return "ENOTTY"
        case ENOSPC: return "ENOSPC"
        case EPIPE: return "EPIPE"
        case ENOLCK: return "ENOLCK"
        case EOPNOTSUPP: return "EOPNOTSUPP"
        case ECONNREFUSED: return "ECONNREFUSED"
        case ECONNRESET: return "ECONNRESET"
        case ETIMEDOUT: return "ETIMEDOUT"
        case EHOSTUNREACH: return "EHOSTUNREACH"
        case ENETUNREACH: return "ENETUNREACH"
        case EINPROGRESS: return "EINPROGRESS"
        case EREMOTEIO: return "EREMOTEIO"
        default: return "errno \(rawValue)"
        }
    }

    public var description: String { text }
}
