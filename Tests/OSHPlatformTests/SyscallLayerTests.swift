import XCTest
@testable import OSHPlatform
#if canImport(Glibc)
import Glibc
#endif

/// The thin syscall layer through its recording driver: EINTR is retried once and never seen,
/// errnos surface typed with the call's name, and devices' calls leave the expected trace.
final class SyscallLayerTests: XCTestCase {
    func testInterruptedReadIsRetriedAndInvisible() throws {
        let sys = RecordingSyscalls()
        sys.inject(.interrupted, into: "read")
        sys.reads = [[1, 2, 3]]
        let fd = FileDescriptor(rawValue: 7, system: sys)
        var buf = [UInt8](repeating: 0, count: 8)
        let n = try buf.withUnsafeMutableBytes { try fd.read(into: $0) }
        XCTAssertEqual(n, 3)
        XCTAssertEqual(Array(buf.prefix(3)), [1, 2, 3])
        XCTAssertEqual(sys.trace, ["read → EINTR", "read 3"])
    }

    func testInjectedEIOSurfacesAsTypedErrnoWithTheCallsName() {
        let sys = RecordingSyscalls()
        sys.inject(.ioError, into: "read")
        let fd = FileDescriptor(rawValue: 7, system: sys)
        var buf = [UInt8](repeating: 0, count: 8)
        do {
            _ = try buf.withUnsafeMutableBytes { try fd.read(into: $0) }
            XCTFail("the injected EIO was not reported")
        } catch let e as SystemError {
            XCTAssertEqual(e.call, "read")
            XCTAssertEqual(e.code, .ioError)
            XCTAssertEqual(e.code.name, "EIO")
            XCTAssertEqual(e.on("/dev/ttyAMA0").description, "read /dev/ttyAMA0: Input/output error")
        } catch {
            XCTFail("unexpected \(error)")
        }
        XCTAssertEqual(sys.trace, ["read → EIO"])
    }

    func testOpenFailureNamesThePath() {
        let sys = RecordingSyscalls()
        sys.inject(Errno(ENOENT), into: "open")
        do {
            _ = try FileDescriptor.open("/dev/i2c-9", O_RDWR, system: sys)
            XCTFail("the injected ENOENT was not reported")
        } catch {
            XCTAssertEqual(error.description, "open /dev/i2c-9: No such file or directory")
        }
    }

    func testWriteAllContinuesAfterAnInterruption() throws {
        let sys = RecordingSyscalls()
        sys.inject(.interrupted, into: "write")
        let fd = FileDescriptor(rawValue: 7, system: sys)
        try [UInt8]("hello".utf8).withUnsafeBytes { try fd.writeAll($0) }
        XCTAssertEqual(sys.written, [Array("hello".utf8)])
        XCTAssertEqual(sys.trace, ["write → EINTR", "write 5"])
    }

    func testOneI2CReadIsOneCombinedTransaction() throws {
        let sys = RecordingSyscalls()
        let bus = try LinuxI2CBus(number: 1, system: sys)
        sys.i2cReplies = [[0x60]]
        XCTAssertEqual(try bus.readRegister(0x76, 0xD0), 0x60)
        var burst = [UInt8](repeating: 0, count: 14)
        sys.inject(.interrupted, into: "I2C_RDWR")
        try burst.withUnsafeMutableBytes { try bus.readRegisters(0x68, 0x3B, into: $0) }
        XCTAssertEqual(
            sys.trace,
            [
                "open /dev/i2c-1", "I2C_FUNCS",
                "I2C_RDWR 0x76 write 1 read 1",
                "I2C_RDWR 0x68 write 1 read 14 → EINTR", "I2C_RDWR 0x68 write 1 read 14",
            ])
    }

    func testI2CBusErrorIsClassifiedFromTheErrno() throws {
        let sys = RecordingSyscalls()
        let bus = try LinuxI2CBus(number: 1, system: sys)
        sys.inject(.ioError, into: "I2C_RDWR")
        XCTAssertThrowsError(try bus.writeRegister(0x76, 0xF4, 0x27)) { e in
            let err = e as? I2CError
            XCTAssertEqual(err?.kind, .busFault)
            XCTAssertEqual(err?.errno, EIO)
            XCTAssertEqual(err?.operation, "writing 1 byte at register 0xF4")
        }
        sys.inject(Errno(EREMOTEIO), into: "I2C_RDWR")
        XCTAssertThrowsError(try bus.readRegister(0x77, 0xD0)) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .noAcknowledge)
        }
    }

    /// The agent's bus holds a shared lock on the adapter's node; probe asks for it exclusively
    /// and gives it back: taken elsewhere means the agent is there.
    func testTheAgentsBusAnnouncesItselfAndProbeAsksWithoutKeepingIt() throws {
        let sys = RecordingSyscalls()
        _ = try LinuxI2CBus(number: 1, announcingUse: true, system: sys)
        XCTAssertEqual(sys.trace, ["open /dev/i2c-1", "I2C_FUNCS", "flock shared", "close"])
        sys.clearTrace()
        let probe = try LinuxI2CBus(number: 1, system: sys)
        XCTAssertFalse(probe.isAnnouncedByAnotherProcess())
        sys.inject(.wouldBlock, into: "flock")
        XCTAssertTrue(probe.isAnnouncedByAnotherProcess())
        sys.inject(.ioError, into: "flock")
        XCTAssertFalse(probe.isAnnouncedByAnotherProcess(), "a lock that cannot be asked about is no agent")
        XCTAssertEqual(
            sys.trace,
            ["open /dev/i2c-1", "I2C_FUNCS", "flock", "flock unlock", "flock → EAGAIN", "flock → EIO"])
        // A bus whose lock cannot be had is used all the same.
        sys.inject(.wouldBlock, into: "flock")
        XCTAssertNoThrow(try LinuxI2CBus(number: 2, announcingUse: true, system: sys))
    }

    /// The shim's three kinds on the kernel: two open file descriptions of one file.
    func testFlockKindsOnTheKernel() throws {
        let path = "/tmp/osh-flock-\(getpid())"
        defer { unlink(path) }
        let agent = try FileDescriptor.open(path, O_RDWR | O_CREAT, mode: 0o600)
        let probe = try FileDescriptor.open(path, O_RDWR)
        defer { agent.close(); probe.close() }
        try agent.lock(.shared)
        XCTAssertNoThrow(try probe.lock(.shared), "shared beside shared")
        try probe.lock(.unlock)
        XCTAssertThrowsError(try probe.lock(.exclusive)) { e in
            XCTAssertEqual((e as? SystemError)?.errno, EWOULDBLOCK, "\(e)")
        }
        try agent.lock(.unlock)
        XCTAssertNoThrow(try probe.lock(.exclusive), "free once the agent let go")
        XCTAssertThrowsError(try agent.lock(.shared))
    }

    func testAnAdapterThatCannotCombineIsRefused() {
        let sys = RecordingSyscalls()
        sys.onIoctl = { request, arg in
            if request == .i2cFunctions { arg?.storeBytes(of: UInt(0x8), as: UInt.self) }  // SMBus quick only
            return 0
        }
        XCTAssertThrowsError(try LinuxI2CBus(number: 3, system: sys)) { e in
            XCTAssertEqual((e as? I2CError)?.kind, .unsupported)
        }
        XCTAssertEqual(sys.trace, ["open /dev/i2c-3", "I2C_FUNCS", "close"])
    }

    /// A serial source at 9600 baud on the recording driver, started; the descriptor it is handed
    /// is a real pipe's read end, so the event loop can watch it. `readable()` makes it readable
    /// and runs the loop once.
    final class SerialRig {
        let loop: EventLoop
        let sys = RecordingSyscalls()
        let fds: [Int32]
        let source: SerialSource
        private let bytes = Bytes()
        var received: [UInt8] { bytes.all }
        final class Bytes { var all: [UInt8] = [] }

        init() throws {
            loop = try EventLoop()
            var p: [Int32] = [-1, -1]
            guard pipe(&p) == 0 else { throw SystemError.last("pipe") }
            fds = p
            sys.nextDescriptor = p[0]
            source = SerialSource(
                loop: loop, path: "/dev/ttyMOCK0", baud: 9600, onData: { [bytes] in bytes.all += $0 },
                isConfirmed: { true }, onReset: {}, onState: { _ in }, system: sys)
            source.start()
        }

        func readable() throws {
            XCTAssertEqual(write(fds[1], "x", 1), 1)
            _ = try loop.runOnce(timeoutMs: 1000)
        }

        deinit {
            source.stop()
            close(fds[0])
            close(fds[1])
        }
    }

    func testOneSerialOpenAndReadTrace() throws {
        Log.muted = true
        defer { Log.muted = false }
        let rig = try SerialRig()
        XCTAssertEqual(rig.sys.trace, ["open /dev/ttyMOCK0", "flock", "TIOCEXCL", "termios raw 8N1 9600 baud"])
        XCTAssertEqual(rig.source.state, .streaming(9600))

        rig.sys.clearTrace()
        rig.sys.reads = [Array("$GPGGA".utf8)]
        rig.sys.inject(.interrupted, into: "read")
        try rig.readable()
        XCTAssertEqual(rig.received, Array("$GPGGA".utf8))
        XCTAssertEqual(rig.sys.trace, ["read → EINTR", "read 6", "read → EAGAIN"])
        rig.source.stop()
        XCTAssertEqual(rig.sys.trace.last, "close")
    }

    func testSerialReadErrorClosesThePortAndSaysWhy() throws {
        Log.muted = true
        defer { Log.muted = false }
        let rig = try SerialRig()
        rig.sys.clearTrace()
        rig.sys.inject(.ioError, into: "read")
        try rig.readable()
        XCTAssertEqual(rig.sys.trace, ["read → EIO", "close"])
        XCTAssertEqual(rig.source.state, .disconnected("/dev/ttyMOCK0 went away (Input/output error; unplugged?); retrying in 0.5 s"))
    }

    func testV4L2IoctlsGoThroughTheLayer() throws {
        let sys = RecordingSyscalls()
        let v4l2 = SystemV4L2(system: sys)
        guard case .success(let fd) = v4l2.open("/dev/video0") else { return XCTFail("open failed") }
        var arg = 0
        func call(_ r: V4L2Request) -> Int32? {
            withUnsafeMutableBytes(of: &arg) { p in p.baseAddress.map { v4l2.ioctl(fd, r, $0) } }
        }
        sys.inject(.interrupted, into: "VIDIOC_DQBUF")
        XCTAssertEqual(call(.dqbuf), 0)
        sys.inject(.noDevice, into: "VIDIOC_QBUF")
        XCTAssertEqual(call(.qbuf), ENODEV)
        v4l2.close(fd)
        XCTAssertEqual(sys.trace, ["open /dev/video0", "VIDIOC_DQBUF → EINTR", "VIDIOC_DQBUF", "VIDIOC_QBUF → ENODEV", "close"])
    }

    func testErrnoNamesAndTexts() {
        XCTAssertEqual(Errno(EAGAIN), .wouldBlock)
        XCTAssertEqual(Errno(ENODEV).name, "ENODEV")
        XCTAssertEqual(Errno(ENODEV).text, "No such device")
        XCTAssertEqual(Errno(4242).name, "errno 4242")
        XCTAssertEqual(SystemError("fsync", errno: ENOSPC).description, "fsync: No space left on device")
    }
}
