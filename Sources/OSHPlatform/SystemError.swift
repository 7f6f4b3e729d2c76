#if canImport(Glibc)
import Glibc
#endif

/// A failed system call: which call, on what, and the errno it left — captured right
/// after the call, before anything else can overwrite it.
public struct SystemError: Error, Equatable, CustomStringConvertible {
    public let call: String
    public let errno: Int32
    public let subject: String?

    public init(_ call: String, errno: Int32, subject: String? = nil) {
        self.call = call
        self.errno = errno
        self.subject = subject
    }

    /// Builds the error from the current errno (call it immediately after the failing call).
    public static func last(_ call: String, subject: String? = nil) -> SystemError {
        SystemError(call, errno: Glibc.errno, subject: subject)
    }

    public var description: String {
        let reason = strerror(errno).map { String(cString: $0) } ?? "errno \(errno)"
        if let s = subject { return "\(call) \(s): \(reason)" }
        return "\(call): \(reason)"
    }
}
