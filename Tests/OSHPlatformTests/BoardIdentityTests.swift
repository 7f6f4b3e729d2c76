import Foundation
import OSHCore
@testable import OSHPlatform
import XCTest

/// BoardIdentity against fake device trees, cpuinfo files and machine ids in a temp directory.
final class BoardIdentityTests: XCTestCase {
    private var root = ""

    override func setUpWithError() throws {
        root = NSTemporaryDirectory() + "board-identity-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: root)
    }

    private func write(_ relative: String, _ bytes: [UInt8]) throws {
        let path = root + "/" + relative
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent,
            withIntermediateDirectories: true)
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
    }

    private func write(_ relative: String, _ text: String) throws { try write(relative, Array(text.utf8)) }

    private static let cpuinfoPi4 = """
        processor\t: 0
        BogoMIPS\t: 108.00
        Features\t: fp asimd evtstrm crc32 cpuid
        CPU implementer\t: 0x41

        Hardware\t: BCM2835
        Revision\t: c03114
        Serial\t\t: 100000003A7B1C2D
        Model\t\t: Raspberry Pi 4 Model B Rev 1.4

        """

    func testDeviceTreeSerialModelAndHostname() throws {
        try write("proc/device-tree/serial-number", Array("100000003a7b1c2d".utf8) + [0])
        try write("proc/device-tree/model", Array("Raspberry Pi 4 Model B Rev 1.4".utf8) + [0])
        try write("proc/cpuinfo", Self.cpuinfoPi4.replacingOccurrences(of: "100000003A7B1C2D", with: "ffffffffffffffff"))
        try write("etc/hostname", "pi-lab\n")
        let id = BoardIdentity.read(root: root)
        XCTAssertEqual(
            id,
            BoardIdentity(
                serial: "100000003a7b1c2d", serialSource: .deviceTree,
                model: "Raspberry Pi 4 Model B Rev 1.4", hostname: "pi-lab"))
        XCTAssertEqual(try SystemUID.make(boardID: id.serial), "urn:osh:rpi:100000003a7b1c2d")
    }

    func testSysFirmwareDeviceTreeAndLeadingZerosKept() throws {
        try write("sys/firmware/devicetree/base/serial-number", Array("00000000C0FFEE42\n".utf8) + [0])
        try write("sys/firmware/devicetree/base/model", Array("Raspberry Pi Zero 2 W Rev 1.0".utf8) + [0, 0])
        let id = BoardIdentity.read(root: root + "/")
        XCTAssertEqual(id.serial, "00000000c0ffee42")
        XCTAssertEqual(id.serialSource, .deviceTree)
        XCTAssertEqual(id.model, "Raspberry Pi Zero 2 W Rev 1.0")
        XCTAssertNil(id.hostname, "no uname fallback for a fake root")
    }

    func testCPUInfoWhenNoDeviceTreeSerial() throws {
        try write("proc/device-tree/serial-number", [0])  // present but empty
        try write("proc/cpuinfo", Self.cpuinfoPi4)
        try write("etc/hostname", "\n# comment\n  rpi-roof  \n")
        let id = BoardIdentity.read(root: root)
        XCTAssertEqual(id.serial, "100000003a7b1c2d")
        XCTAssertEqual(id.serialSource, .cpuinfo)
        XCTAssertEqual(id.hostname, "rpi-roof")
        XCTAssertNil(id.model)
    }

    func testAllZeroSerialsAreSkippedForMachineID() throws {
        try write("proc/device-tree/serial-number", Array("0000000000000000".utf8) + [0])
        try write("proc/cpuinfo", Self.cpuinfoPi4.replacingOccurrences(of: "100000003A7B1C2D", with: "0000000000000000"))
        try write("etc/machine-id", "0123456789abcdef0123456789abcdef\n")
        let id = BoardIdentity.read(root: root)
        XCTAssertEqual(id.serialSource, .machineID)
        // HMAC-SHA256(key: machine id bytes, message: application id), first 8 bytes (checked independently).
        XCTAssertEqual(id.serial, "b379f43ad59790ee")
        XCTAssertEqual(id.serial.count, 16)
        XCTAssertFalse(id.serial.contains("0123456789abcdef"), "the machine id itself never leaks")
        // Stable, and specific to the machine id.
        XCTAssertEqual(BoardIdentity.serial(fromMachineID: "0123456789ABCDEF0123456789ABCDEF"), "b379f43ad59790ee")
        XCTAssertNotEqual(BoardIdentity.serial(fromMachineID: "0123456789abcdef0123456789abcdee"), id.serial)
    }

    func testMalformedMachineIDAndNothingAtAll() throws {
        XCTAssertNil(BoardIdentity.serial(fromMachineID: "uninitialized\n"))
        XCTAssertNil(BoardIdentity.serial(fromMachineID: "00000000000000000000000000000000"))
        XCTAssertNil(BoardIdentity.serial(fromMachineID: "0123"))
        try write("etc/machine-id", "uninitialized\n")
        let id = BoardIdentity.read(root: root)
        XCTAssertEqual(id, BoardIdentity(serial: "", serialSource: .none, model: nil, hostname: nil))
        XCTAssertThrowsError(try SystemUID.make(boardID: id.serial))
        XCTAssertEqual(BoardIdentity.read(root: root + "/does-not-exist").serialSource, .none)
    }

    func testCPUInfoParsing() {
        XCTAssertEqual(BoardIdentity.serial(fromCPUInfo: "Serial : ABCDEF0123456789\n"), "abcdef0123456789")
        XCTAssertEqual(BoardIdentity.serial(fromCPUInfo: "Serial\t\t: 00000000a1b2c3d4\r\n"), "00000000a1b2c3d4")
        XCTAssertNil(BoardIdentity.serial(fromCPUInfo: "SerialNumber : 1234\nprocessor : 0\n"))
        XCTAssertNil(BoardIdentity.serial(fromCPUInfo: "Serial : 0000000000000000\n"))
        XCTAssertNil(BoardIdentity.serial(fromCPUInfo: "Serial : \n"))
        XCTAssertNil(BoardIdentity.serial(fromCPUInfo: ""))
    }

    func testRealSystemDoesNotCrash() {
        let id = BoardIdentity.read()
        if id.serialSource != .none { XCTAssertFalse(id.serial.isEmpty) }
        XCTAssertNotNil(id.hostname, "uname gives a hostname on the real root")
    }
}
