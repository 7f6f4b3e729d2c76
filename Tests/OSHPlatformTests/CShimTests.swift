import CShim
import Glibc
import OSHPlatform
import XCTest

/// The C shim against the real kernel: the calls the event loop will stand on.
final class CShimTests: XCTestCase {
    func testEventfdCountsWrites() {
        let fd = osh_eventfd_create()
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        XCTAssertEqual(osh_eventfd_read(fd), -1, "empty eventfd is non-blocking")
        XCTAssertEqual(errno, EAGAIN)
        XCTAssertEqual(osh_eventfd_write(fd, 2), 0)
        XCTAssertEqual(osh_eventfd_write(fd, 3), 0)
        XCTAssertEqual(osh_eventfd_read(fd), 5)
    }

    func testAbsoluteTimerReportsMissedTicksThroughEpoll() {
        let ep = osh_epoll_create()
        let tfd = osh_timerfd_create_monotonic()
        XCTAssertGreaterThanOrEqual(ep, 0)
        XCTAssertGreaterThanOrEqual(tfd, 0)
        defer { close(tfd); close(ep) }
        XCTAssertEqual(osh_epoll_ctl(ep, EPOLL_CTL_ADD, tfd, UInt32(EPOLLIN.rawValue), 42), 0)
        // First expiry 5 ms from now, then every 5 ms; sleep 30 ms so several ticks are missed.
        XCTAssertEqual(osh_timerfd_set_abs(tfd, osh_monotonic_ns() + 5_000_000, 5_000_000), 0)
        usleep(30_000)
        var events = [UInt32](repeating: 0, count: 4)
        var data = [UInt64](repeating: 0, count: 4)
        let n = osh_epoll_wait(ep, &events, &data, 4, 1000)
        XCTAssertEqual(n, 1)
        XCTAssertEqual(data[0], 42)
        XCTAssertGreaterThanOrEqual(osh_timerfd_read(tfd), 4, "the expiration count carries the missed ticks")
        XCTAssertEqual(osh_timerfd_disarm(tfd), 0)
    }

    func testSignalfdReceivesABlockedSignal() {
        var signals: [Int32] = [SIGUSR1]
        let fd = osh_signalfd_create(&signals, 1)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        XCTAssertEqual(osh_signalfd_read(fd), -1)
        raise(SIGUSR1)
        XCTAssertEqual(osh_signalfd_read(fd), SIGUSR1)
    }

    func testOpenAndIoctlReportErrno() {
        XCTAssertEqual(osh_open("/nonexistent/osh-edge", O_RDONLY, 0), -1)
        XCTAssertEqual(errno, ENOENT)
        let fd = osh_open("/dev/null", O_RDONLY, 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        var tio = termios()
        XCTAssertEqual(osh_ioctl_ptr(fd, UInt(TCGETS), &tio), -1, "/dev/null is not a terminal")
        XCTAssertEqual(errno, ENOTTY)
        XCTAssertEqual(osh_set_nonblocking(fd), 0)
    }

    func testClocksAdvance() {
        let a = Clock.monotonicNanoseconds()
        let wall = Clock.realtimeSeconds()
        XCTAssertGreaterThan(Clock.monotonicNanoseconds(), a)
        XCTAssertGreaterThan(wall, 1_700_000_000)
        XCTAssertGreaterThan(ProcessStats.maxRSSKiB(), 0)
    }

    func testLinkedLibrariesReportVersions() {
        let names = LinkedLibraries.versions().map(\.name)
        XCTAssertEqual(names, ["libcurl", "libgpiod", "alsa-lib", "x264", "libv4l2", "libi2c"])
    }
}
