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
            if escaped { escaped = false } else if b == UInt8(ascii: "\\") { escaped = true } else if b == UInt8(ascii: "\"") { inString = false }
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
    OutputOptions(uid: androidUID, north: north, imuChip: "LSM6DSO")
}

extension ByteBuffer {
    convenience init(filling body: (ByteBuffer) throws -> Void) rethrows {
        self.init()
        try body(self)
    }
}
