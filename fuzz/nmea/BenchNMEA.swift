// A stand-in for `osh-edge nmea [FILE|-]` for scripts/bench-nmea.sh while the CLI command does
// not exist: the same core (NMEADecode.run) between read(2) and write(2). Built with swiftc
// together with the OSHCore sources it needs (one module, no import).
//
// Usage: bench-nmea [FILE|-]   JSON lines on stdout, the counts line last.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@main
struct BenchNMEA {
    static func main() {
        let args = CommandLine.arguments
        var fd: Int32 = 0
        if args.count > 1, args[1] != "-" {
            fd = open(args[1], O_RDONLY)
            guard fd >= 0 else {
                fputs("bench-nmea: cannot open \(args[1])\n", stderr)
                exit(1)
            }
        }
        let counters = NMEADecode.run(
            notBefore: 1_767_225_600,
            read: { buf in
                while true {
                    let n = read(fd, buf.baseAddress, buf.count)
                    if n < 0, errno == EINTR { continue }
                    return n
                }
            },
            write: { bytes in
                var off = 0
                while off < bytes.count {
                    let n = write(1, bytes.baseAddress! + off, bytes.count - off)
                    if n < 0 {
                        if errno == EINTR { continue }
                        exit(1)
                    }
                    off += n
                }
            })
        _ = counters
    }
}
