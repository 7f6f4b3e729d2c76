import Foundation
import OSHAgent
import OSHCore
import XCTest

/// `osh-edge declination`, `fuse` and `nmea` through the real binary.
final class FieldMathCLITests: XCTestCase {
    private func run(_ args: [String], stdin: String = "") throws -> (status: Int32, out: String, err: String) {
        try runOSHEdge(args, stdin: stdin)
    }

    /// NOAA's official test row: 2027.5, 0 km, 80°N 0°E → X 6500.8, Y 294.5, Z 54869.4, H 6507.5,
    /// F 55253.9 nT, I 83.24°, D 2.59°.
    func testDeclinationPrintsNOAAsValues() throws {
        let r = try run(["declination", "80", "0", "0", "2027.5"])
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertEqual(r.err, "")
        for (label, value) in [
            ("D  declination", "2.59"), ("I  inclination", "83.24"), ("H  horizontal", "6507.5"),
            ("X  north", "6500.8"), ("Y  east", "294.5"), ("Z  vertical", "54869.4"), ("F  total", "55253.9"),
        ] {
            let line = r.out.split(separator: "\n").first { $0.hasPrefix(label) }
            XCTAssertNotNil(line, label)
            XCTAssertTrue(line?.split(separator: " ").contains(Substring(value)) ?? false, "\(label): \(line ?? "")")
        }
        let j = try run(["declination", "-80", "240", "100", "2025-01-01", "--json"])
        XCTAssertEqual(j.status, 0, j.err)
        let obj = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(j.out.utf8)) as? [String: Any])
        XCTAssertEqual(obj["D_deg"] as? Double ?? 0, 68.21, accuracy: 0.01)
        XCTAssertEqual(obj["Z_nT"] as? Double ?? 0, -49540.7, accuracy: 1)
        let old = try run(["declination", "45", "7", "0", "2031.0"])
        XCTAssertEqual(old.status, 0)
        XCTAssertTrue(old.err.contains("outside"), old.err)
        let bad = try run(["declination", "91", "0"])
        XCTAssertNotEqual(bad.status, 0)
        XCTAssertTrue(bad.err.contains("latitude"), bad.err)
    }

    func testFuseTableAndJSON() throws {
        var csv = "t,gx,gy,gz,ax,ay,az,mx,my,mz\n"
        // Flat, facing magnetic east (field along −x in the device frame), 1 s at 100 Hz.
        for i in 0..<100 { csv += "\(Double(i) / 100),0,0,0,0,0,9.81,-20,0,-45\n" }
        let j = try run(["fuse", "--json", "--algorithm", "mahony"], stdin: csv)
        XCTAssertEqual(j.status, 0, j.err)
        let lines = j.out.split(separator: "\n")
        XCTAssertEqual(lines.count, 100)
        let last = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(lines[99].utf8)) as? [String: Any])
        XCTAssertEqual(last["heading"] as? Double ?? 0, 90, accuracy: 0.5)
        XCTAssertEqual(Set(last.keys), ["t", "w", "x", "y", "z", "heading", "pitch", "roll", "mag"])
        let t = try run(["fuse", "--mag-unit", "nT", "--gain", "0.2"], stdin: "0,0,0,0,0,0,9.81,0,20000,-45000\n0.01,0,0,0,0,0,9.81,,,\n")
        XCTAssertEqual(t.status, 0, t.err)
        XCTAssertEqual(t.out.split(separator: "\n").count, 3)
        XCTAssertTrue(t.out.hasPrefix(FuseTool.tableHeader))
        let bad = try run(["fuse"], stdin: "0,1,2,x,4,5,6\n")
        XCTAssertEqual(bad.status, 1)
        XCTAssertTrue(bad.err.contains("column 4"), bad.err)
        // A row whose first field is a word, after the data began, used to be skipped as a header.
        let word = try run(["fuse"], stdin: "t,gx,gy,gz,ax,ay,az\n0,0,0,0,0,0,9.8\nabc,0,0,0,0,0,1\n")
        XCTAssertEqual(word.status, 1)
        XCTAssertTrue(word.err.contains("line 3, column 1: 'abc' is not a number"), word.err)
    }

    func testFixedFormatting() {
        XCTAssertEqual(fixed(2.594, 2), "2.59")
        XCTAssertEqual(fixed(-0.001, 2), "0.00")
        XCTAssertEqual(fixed(-14.65, 1), "-14.7")  // rounds half away from zero (binary -14.65 is -14.6500000000000003553)
        XCTAssertEqual(fixed(54869.4, 1), "54869.4")
        XCTAssertEqual(fixed(7, 0), "7")
        XCTAssertEqual(fixed(0.05, 3), "0.050")
    }

    /// `nmea -` reads standard input and writes through the syscall layer (FileDescriptor).
    func testNMEADecodesStandardInput() throws {
        let r = try run(["nmea", "-"], stdin: "$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W*6A\n")
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertTrue(r.out.contains("\"lat\":48.1173"), r.out)
        XCTAssertTrue(r.out.contains("\"fixes\":1"), r.out)
        let none = try run(["nmea", "-"], stdin: "")
        XCTAssertEqual(none.status, 1, "nothing decoded is a failure")
    }
}
