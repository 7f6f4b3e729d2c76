import CShim
import OSHCore
import OSHPlatform
#if canImport(Glibc)
import Glibc
#endif

/// `osh-edge nmea [FILE|-]`: decodes an NMEA stream into one JSON line per fix and a
/// final counts line — a field tool for checking a receiver, and for comparing with gpsd.
public enum NMEACommand {
    /// Returns the exit code. `path` nil or "-" = standard input; a terminal device is set raw at `baud`.
    public static func run(path: String?, baud: Int?, notBefore: Double) -> Int32 {
        var fd: Int32 = 0
        if let p = path, p != "-" {
            fd = osh_open(p, O_RDONLY | O_NOCTTY, 0)
            if fd < 0 {
                let e = SystemError.last("open", subject: p)
                let code = errno
                Log.error(
                    "\(e)"
                        + (code == EACCES
                            ? " (add this user to the dialout group for serial ports)"
                            : code == ENOENT ? "; " + DeviceCheck.missingSerialHint(p) : ""))
                return 1
            }
            if isatty(fd) != 0, osh_serial_configure(fd, Int32(baud ?? 9600)) != 0 {
                Log.error("\(SystemError.last("configuring", subject: p)) — is \(baud ?? 9600) a standard baud rate?")
                close(fd)
                return 1
            }
        }
        defer { if fd != 0 { close(fd) } }
        // EINTR and short writes are the syscall layer's (FileDescriptor), as everywhere else.
        let input = FileDescriptor(rawValue: fd), output = FileDescriptor(rawValue: 1)
        let counters = NMEADecode.run(
            notBefore: notBefore,
            read: { buf in
                (try? input.read(into: buf)) ?? -1
            },
            write: { bytes in
                try? output.writeAll(bytes)
            })
        return counters.fixes > 0 || counters.sentences > 0 ? 0 : 1
    }
}
