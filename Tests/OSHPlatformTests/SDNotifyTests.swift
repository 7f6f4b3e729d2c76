import Foundation
import OSHPlatform
import XCTest

/// The notify socket never holds the loop up: a reader that is not reading (its queue holds ten
/// datagrams) used to block sendto — the loop, the watchdog and the stop with it — forever.
final class SDNotifyTests: XCTestCase {
    func testANotifySocketNobodyReadsNeverBlocks() throws {
        let path = NSTemporaryDirectory() + "osh-notify-\(UUID().uuidString).sock"
        defer { unlink(path) }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { dst in for (i, b) in path.utf8.enumerated() { dst[i] = b } }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(bound, 0)
        let notify = SDNotify(socketPath: path)
        XCTAssertTrue(notify.enabled)
        let start = Date()
        var delivered = 0
        for _ in 0..<200 where notify.send("WATCHDOG=1") { delivered += 1 }
        XCTAssertLessThan(Date().timeIntervalSince(start), 2, "200 sends to a socket nobody reads returned at once")
        XCTAssertGreaterThan(delivered, 0)
        XCTAssertLessThan(delivered, 200, "the queue filled and the rest were dropped, not waited for")
    }
}
