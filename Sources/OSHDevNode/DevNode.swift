import CMicroHTTPD
import OSHCore

/// The development node: an HTTP server on loopback (libmicrohttpd) that follows the
/// OSH node's rules strictly (SPEC §9). The agent-loop issue fills it in; for now it
/// reports the library it is built on, so the layout and the link are visible.
public enum DevNode {
    public static var libraryVersion: String {
        guard let v = MHD_get_version() else { return "unknown" }
        return String(cString: v)
    }
}
