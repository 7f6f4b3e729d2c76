#if canImport(Glibc)
import Glibc
#endif

/// A failed system call: which call, on what, and the errno it left — captured right
/// after the call, before anything else can overwrite it. What `FileDescriptor` throws, and the
/// one way a failed call is said: "open /dev/i2c-1: No such file or directory".
public struct SystemError: Error, Equatable, CustomStringConvertible {
    public let call: String
    public let errno: Int32
    public let subject: String?

    public init(_ call: String, errno: Int32, subject: String? = nil) {
        self.call = call
        self.errno = errno
        self.subject = subject
    }

    public init(_ call: String, _ code: Errno, subject: String? = nil) {
        self.init(call, errno: code.rawValue, subject: subject)
    }

    /// Builds the error from the current errno (call it immediately after the failing call).
    public static func last(_ call: String, subject: String? = nil) -> SystemError {
        SystemError(call, errno: Glibc.errno, subject: subject)
    }

    /// The errno, typed.
    public var code: Errno { Errno(errno) }

    /// The same failure said about `subject` (a descriptor does not know its path; its owner does).
    public func on(_ subject: String) -> SystemError { SystemError(call, errno: errno, subject: subject) }

    public var description: String {
        if let s = subject { return "\(call) \(s): \(code.text)" }
        return "\(call): \(code.text)"
    }
}
