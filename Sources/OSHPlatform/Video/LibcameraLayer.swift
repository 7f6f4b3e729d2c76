// libcamera's V4L2 compatibility layer: where it is installed, whether this process has it, and
// starting the process again with it preloaded (what `libcamerify` does from a shell).

import OSHCore
#if canImport(Glibc)
import Glibc
#endif

/// libcamera's V4L2 compatibility layer (`v4l2-compat.so`, Debian's and Raspberry Pi OS's
/// `libcamera-v4l2`): preloaded, it answers a libcamera camera's V4L2 nodes with pictures from
/// libcamera's pipeline (the ISP's on a Pi, software debayering on vimc), and passes every
/// other device through untouched. `libcamerify` does the same from a shell.
public enum LibcameraLayer {
    /// Where the distributions put it: Debian trixie and later, Raspberry Pi OS and Debian
    /// bookworm, a build from source with its defaults.
    public static var candidates: [String] {
        #if arch(arm64)
        let t = "aarch64-linux-gnu"
        #elseif arch(arm)
        let t = "arm-linux-gnueabihf"
        #else
        let t = "x86_64-linux-gnu"
        #endif
        return [
            "/usr/libexec/\(t)/libcamera/v4l2-compat.so", "/usr/lib/\(t)/libcamera/v4l2-compat.so",
            "/usr/lib/\(t)/v4l2-compat.so", "/usr/local/libexec/libcamera/v4l2-compat.so",
        ]
    }

    /// The set when the agent started itself again with the layer (so it never loops).
    static let marker = "OSH_EDGE_LIBCAMERA_LAYER"

    /// VIDIOC_QUERYCAP's driver on a node the layer answers for libcamera's camera.
    public static let driverName = "libcamera"

    /// The layer's path on this machine, nil when it is not installed.
    public static func find() -> String? { candidates.first { access($0, R_OK) == 0 } }

    /// The layer is preloaded in this process (by the agent itself, or by `libcamerify`).
    public static var isLoaded: Bool {
        guard let p = getenv("LD_PRELOAD") else { return false }
        return String(cString: p).hasSubstring("v4l2-compat")
    }

    /// This process was started again with the layer by `restart(with:)`.
    public static var wasRestarted: Bool { restartedWith != nil }

    /// The layer this process was started again with.
    public static var restartedWith: String? { getenv(marker).map { String(cString: $0) } }

    /// Replaces this process with itself, the same arguments, and `layer` added to LD_PRELOAD.
    /// The pid stays (systemd's watchdog and notifications keep working). libcamera logs only
    /// warnings and errors, without colours, unless LIBCAMERA_LOG_LEVELS says otherwise.
    /// Returns only on failure, with the reason.
    public static func restart(with layer: String) -> String {
        let old = getenv("LD_PRELOAD").map { String(cString: $0) } ?? ""
        if !old.split(separator: ":").contains(Substring(layer)) {
            setenv("LD_PRELOAD", old.isEmpty ? layer : old + ":" + layer, 1)
        }
        setenv(marker, layer, 1)
        if getenv("LIBCAMERA_LOG_LEVELS") == nil { setenv("LIBCAMERA_LOG_LEVELS", "*:WARN", 1) }
        setenv("LIBCAMERA_LOG_NO_COLOR", "1", 0)
        let args = CommandLine.arguments
        var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) }
        argv.append(nil)
        execv("/proc/self/exe", &argv)
        let why = String(cString: strerror(errno))
        for p in argv { free(p) }
        return "cannot start again with \(layer) preloaded: \(why)"
    }
}
