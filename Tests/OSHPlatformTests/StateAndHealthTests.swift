import Foundation
import OSHPlatform
import XCTest

final class StateAndHealthTests: XCTestCase {
    private func tempDir() -> String {
        let d = NSTemporaryDirectory() + "osh-state-\(UUID().uuidString)"
        return d
    }

    func testAtomicWriteReplacesAndLeavesNoTempFile() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a/b/ids.json"
        XCTAssertNil(try StateFiles.read(path))
        try StateFiles.write(Array("one".utf8), to: path)
        try StateFiles.write(Array("two".utf8), to: path)
        XCTAssertEqual(try StateFiles.read(path).map { String(decoding: $0, as: UTF8.self) }, "two")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + ".tmp"))
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o600, "state is private to the service user")
    }

    func testWriteIntoAnUnwritablePlaceNamesThePath() {
        XCTAssertThrowsError(try StateFiles.write([1], to: "/proc/osh-edge-test/x")) { e in
            XCTAssertTrue("\(e)".contains("/proc/osh-edge-test"), "\(e)")
        }
    }

    func testClockBeforeTheBuildIsNeverTrusted() {
        let far = Clock.realtimeSeconds() + 86_400 * 365
        XCTAssertFalse(ClockSync.current(notBefore: far).isSynchronized)
        // With the timesyncd flag present, a sane clock counts as synchronised.
        let flag = NSTemporaryDirectory() + "osh-sync-\(UUID().uuidString)"
        FileManager.default.createFile(atPath: flag, contents: Data())
        defer { try? FileManager.default.removeItem(atPath: flag) }
        XCTAssertEqual(ClockSync.current(notBefore: 1_700_000_000, timesyncFlag: flag), .synchronized(source: "systemd-timesyncd"))
    }

    func testHealthFromAFakePi() throws {
        let root = tempDir()
        defer { try? FileManager.default.removeItem(atPath: root) }
        func put(_ rel: String, _ text: String) throws {
            try StateFiles.write(Array(text.utf8), to: root + "/" + rel)
        }
        try put("sys/class/thermal/thermal_zone0/temp", "48312\n")
        try put("sys/devices/platform/soc/soc:firmware/get_throttled", "0x50005\n")
        try put("proc/loadavg", "0.42 0.30 0.25 1/180 1234\n")
        try put("proc/meminfo", "MemTotal:        3884148 kB\nMemFree:  100 kB\nMemAvailable:    2048000 kB\n")
        let r = HealthProbe(root: root, diskPath: root).read()
        XCTAssertEqual(r.cpuTemperature, 48.312, accuracy: 1e-9)
        XCTAssertEqual(r.throttleFlags, 0x50005)
        XCTAssertTrue(r.underVoltage)
        XCTAssertTrue(r.throttled)
        XCTAssertEqual(r.loadAverage, 0.42)
        XCTAssertEqual(r.memoryAvailableMB, 2000)
        XCTAssertGreaterThan(r.diskFreePercent, 0)
        // Nothing there at all: NaN and zero, no error.
        let empty = HealthProbe(root: root + "/nothing", diskPath: root + "/nothing").read()
        XCTAssertTrue(empty.cpuTemperature.isNaN)
        XCTAssertEqual(empty.throttleFlags, 0)
    }
}
