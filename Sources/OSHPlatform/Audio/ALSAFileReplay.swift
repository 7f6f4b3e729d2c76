import OSHCore
#if canImport(Glibc)
import Glibc
#endif

/// A WAV file replayed through the real libasound: a private ALSA configuration defines a PCM
/// of the `file` plugin whose `infile` holds the WAV's samples and whose slave is `null`, and
/// `ALSACapture` opens it like any device. The tests and the demo use it where no microphone is.
///
/// The plugin reads `infile` as raw frames (it does not skip a WAV header), so the samples are
/// written to a `.raw` file beside the configuration first. It delivers them as fast as they
/// are read (the null slave is always ready), in the WAV's own format, rate and channel count;
/// past the end of the file it repeats the last buffer it read.
public struct ALSAFileReplay: Sendable {
    /// The PCM name defined in `configText`.
    public let device: String
    public let configText: String
    /// Asks for the WAV's own format, rate and channels (the null slave grants anything).
    public let request: ALSACapture.Request
    public let header: WAVHeader
    public let rawPath: String
    /// The raw copy's inode: a replay being replaced (SIGHUP) must not delete its successor's copy.
    private let rawInode: UInt64

    public enum Failure: Error, CustomStringConvertible {
        case missing(String)
        case invalid(String, String)

        public var description: String {
            switch self {
            case .missing(let p): return "\(p): no such WAV file"
            case .invalid(let p, let why): return "\(p): \(why)"
            }
        }
    }

    /// Reads `wavPath` (up to 64 MiB) and writes its samples to `directory/NAME.raw`.
    public static func prepare(
        wavPath: String, directory: String, device: String = "osh_wav",
        periodSeconds: Double = 0.02
    ) throws -> ALSAFileReplay {
        guard let bytes = try StateFiles.read(wavPath, limit: 64 << 20) else { throw Failure.missing(wavPath) }
        let header: WAVHeader
        do { header = try WAVHeader.parse(bytes) } catch { throw Failure.invalid(wavPath, "\(error)") }
        let base = wavPath.split(separator: "/").last.map(String.init) ?? "audio"
        let rawPath = (directory.hasSuffix("/") ? directory : directory + "/") + base + ".raw"
        try StateFiles.write(Array(bytes[header.dataOffset..<(header.dataOffset + header.dataBytes)]), to: rawPath)
        let text = """
            pcm.\(device) {
                type file
                slave.pcm { type null }
                file "/dev/null"
                infile "\(quoted(rawPath))"
                format "raw"
            }

            """
        let request = ALSACapture.Request(
            sampleRate: header.sampleRate, periodSeconds: periodSeconds,
            formats: [header.format], channels: header.channels)
        return ALSAFileReplay(
            device: device, configText: text, request: request, header: header, rawPath: rawPath,
            rawInode: inode(rawPath) ?? 0)
    }

    /// Deletes the raw copy, unless a newer replay of the same WAV has written its own there since.
    public func remove() {
        if Self.inode(rawPath) == rawInode { StateFiles.remove(rawPath) }
    }

    private static func inode(_ path: String) -> UInt64? {
        var st = stat()
        return stat(path, &st) == 0 ? UInt64(st.st_ino) : nil
    }

    /// Escapes a path for an ALSA configuration string.
    private static func quoted(_ s: String) -> String {
        var out = ""
        for c in s {
            if c == "\\" || c == "\"" { out.append("\\") }
            out.append(c)
        }
        return out
    }
}
