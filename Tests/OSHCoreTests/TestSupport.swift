import Foundation
import OSHCore
import XCTest

/// Reads a golden file from `Tests/OSHCoreTests/Fixtures/…`.
func fixture(_ relativePath: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures").appendingPathComponent(relativePath)
    guard let data = FileManager.default.contents(atPath: url.path) else {
        XCTFail("missing fixture \(url.path)", file: file, line: line)
        return ""
    }
    return String(decoding: data, as: UTF8.self)
}

/// Removes JSON whitespace outside strings, so pretty and compact forms compare byte for byte.
func compactJSON(_ s: String) -> String {
    var out = [UInt8]()
    var inString = false
    var escaped = false
    for b in s.utf8 {
        if inString {
            out.append(b)
            if escaped {
                escaped = false
            } else if b == UInt8(ascii: "\\") {
                escaped = true
            } else if b == UInt8(ascii: "\"") {
                inString = false
            }
        } else if b == UInt8(ascii: "\"") {
            inString = true
            out.append(b)
        } else if b != 0x20, b != 0x0A, b != 0x0D, b != 0x09 {
            out.append(b)
        }
    }
    return String(decoding: out, as: UTF8.self)
}

/// The UID and label the report's Android captures use.
let androidUID = "urn:osh:android:7ae57419dd427e4c:droid2"
let androidLabel = "Android Sensors [Android2-0253]"

func androidOptions(north: NorthReference = .magnetic) -> OutputOptions {
    OutputOptions(uid: androidUID, north: north, imuChip: "LSM6DSO", magnetometerChip: "LSM6DSO")
}

extension ByteBuffer {
    convenience init(filling body: (ByteBuffer) throws -> Void) rethrows {
        self.init()
        try body(self)
    }
}

/// Compares `android` with `ours` as an ordered sub-structure: every member of every object of
/// `android` is in the matching object of `ours`, with the same value (numbers as written) and in
/// the same relative order; arrays have the same length, element for element. Returns the JSON
/// paths of the members only `ours` has, and what breaks the containment.
func orderedContainment(_ android: JSONValue, in ours: JSONValue, path: String = "") -> (additions: [String], problems: [String]) {
    var additions: [String] = [], problems: [String] = []
    switch (android, ours) {
    case let (.object(a), .object(o)):
        var j = 0
        for (k, v) in a {
            guard let i = o[j...].firstIndex(where: { $0.0 == k }) else {
                problems.append("\(path)/\(k): " + (o.contains { $0.0 == k } ? "out of Android's order" : "missing"))
                continue
            }
            additions += o[j..<i].map { "\(path)/\($0.0)" }
            let r = orderedContainment(v, in: o[i].1, path: "\(path)/\(k)")
            additions += r.additions
            problems += r.problems
            j = i + 1
        }
        additions += o[j...].map { "\(path)/\($0.0)" }
    case let (.array(a), .array(o)):
        guard a.count == o.count else {
            problems.append("\(path): \(o.count) elements where Android has \(a.count)")
            break
        }
        for i in a.indices {
            let r = orderedContainment(a[i], in: o[i], path: "\(path)/\(i)")
            additions += r.additions
            problems += r.problems
        }
    case let (.number(_, x), .number(_, y)):
        if x != y { problems.append("\(path): \(y) where Android has \(x)") }
    default:
        if android != ours { problems.append("\(path): \(ours) where Android has \(android)") }
    }
    return (additions, problems)
}
