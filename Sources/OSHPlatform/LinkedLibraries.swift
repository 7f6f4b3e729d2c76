import CALSA
import CCurl
import CGPIOD
import CI2C
import CV4L2
import CX264

/// Versions of the C libraries this binary is linked against, as they report
/// themselves at run time (`osh-edge version`): on a board, the first thing to
/// check when a feature behaves differently from a workstation.
public enum LinkedLibraries {
    public static func versions() -> [(name: String, version: String)] {
        var out: [(String, String)] = []
        if let v = curl_version() { out.append(("libcurl", String(cString: v))) }
        if let v = osh_gpiod_version() { out.append(("libgpiod", "\(String(cString: v)) (API v\(OSH_GPIOD_MAJOR))")) }
        if let v = snd_asoundlib_version() { out.append(("alsa-lib", String(cString: v))) }
        out.append(("x264", "build \(X264_BUILD)"))
        // libv4l2 and libi2c report no version; name the entry points we link so a missing library fails at link time.
        _ = v4l2_fd_open as (Int32, Int32) -> Int32
        _ = i2c_smbus_read_byte_data as (Int32, UInt8) -> Int32
        out.append(("libv4l2", "linked"))
        out.append(("libi2c", "linked"))
        return out
    }
}
