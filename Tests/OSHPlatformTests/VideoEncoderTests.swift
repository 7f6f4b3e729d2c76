import Foundation
import OSHCore
@testable import OSHPlatform
import XCTest

/// libx264 for real: the reference clip in, Annex-B out, decoded again by ffmpeg.
final class VideoEncoderTests: XCTestCase {
    static let width = 320, height = 240, frames = 10
    static var fixture: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/video/testsrc_320x240_10f_yuv420p.yuv")
    }

    private func encodeClip(keyint: Int = 1, threads: Int = 1) throws -> [[UInt8]] {
        let clip = try [UInt8](Data(contentsOf: Self.fixture))
        let frameBytes = PixelFormat.i420.frameBytes(width: Self.width, height: Self.height)
        XCTAssertEqual(clip.count, frameBytes * Self.frames)
        let enc = try X264Encoder(
            X264Settings(
                width: Self.width, height: Self.height, fps: 10, keyFrameInterval: keyint,
                bitrateKbps: 1500, threads: threads))
        var aus: [[UInt8]] = []
        try clip.withUnsafeBytes { all in
            for i in 0..<Self.frames {
                let f = VideoFrame(
                    format: .i420, width: Self.width, height: Self.height, bytesPerLine: Self.width,
                    monotonicTime: Double(i) / 10,
                    bytes: UnsafeRawBufferPointer(rebasing: all[(i * frameBytes)..<((i + 1) * frameBytes)]))
                try enc.encode(f) { aus.append(Array($0.bytes)) }
            }
        }
        XCTAssertEqual(enc.keyFramesWithoutHeaders, 0)
        return aus
    }

    func testEveryAccessUnitIsSPSPPSIDR() throws {
        let aus = try encodeClip()
        XCTAssertEqual(aus.count, 10, "zerolatency: one access unit out per frame in")
        for (i, au) in aus.enumerated() {
            let types = AnnexB.units(in: au).map(\.type)
            XCTAssertEqual(Array(types.prefix(3)), [7, 8, 5], "frame \(i): \(types)")
            XCTAssertTrue(types.dropFirst(2).allSatisfy { $0 == 5 }, "frame \(i): only IDR slices after the headers: \(types)")
            XCTAssertEqual(Array(au.prefix(4)), [0, 0, 0, 1])
            au.withUnsafeBytes { XCTAssertTrue(AnnexB.summarize($0).startsWithSPSPPSIDR) }
        }
    }

    func testAutoThreadsKeepTheShape() throws {
        // x264's auto threads with zerolatency slice each picture: SPS, PPS, then IDR slices only.
        for (i, au) in try encodeClip(threads: 0).enumerated() {
            let types = AnnexB.units(in: au).map(\.type)
            XCTAssertEqual(Array(types.prefix(3)), [7, 8, 5], "frame \(i): \(types)")
            XCTAssertTrue(types.dropFirst(2).allSatisfy { $0 == 5 }, "frame \(i): \(types)")
        }
    }

    func testKeyFrameIntervalIsConfigurable() throws {
        let aus = try encodeClip(keyint: 5)
        let firstSlice = aus.map { AnnexB.units(in: $0).first { $0.type == 1 || $0.type == 5 }?.type }
        XCTAssertEqual(firstSlice, [5, 1, 1, 1, 1, 5, 1, 1, 1, 1])
        XCTAssertEqual(AnnexB.units(in: aus[5]).map(\.type).prefix(3), [7, 8, 5], "SPS+PPS repeated in front of each IDR")
    }

    func testStreamDecodesWithFFmpegAtPSNRAbove35dB() throws {
        guard let ffmpeg = Self.tool("ffmpeg"), let ffprobe = Self.tool("ffprobe") else {
            throw XCTSkip("ffmpeg/ffprobe not installed (scripts/bootstrap.sh installs them)")
        }
        let aus = try encodeClip()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("osh-video-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let h264 = dir.appendingPathComponent("clip.h264")
        try Data(aus.flatMap { $0 }).write(to: h264)

        let probe = try Self.run(
            ffprobe,
            [
                "-v", "error", "-count_frames", "-select_streams", "v",
                "-show_entries", "stream=codec_name,width,height,nb_read_frames",
                "-of", "default=nw=1", h264.path,
            ])
        XCTAssertEqual(probe.status, 0, probe.err)
        for line in ["codec_name=h264", "width=320", "height=240", "nb_read_frames=10"] {
            XCTAssertTrue(probe.out.contains(line), probe.out)
        }
        let psnr = try Self.run(
            ffmpeg,
            [
                "-hide_banner", "-nostats", "-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", "320x240",
                "-r", "10", "-i", Self.fixture.path, "-i", h264.path, "-lavfi",
                "[1:v]settb=1/10,setpts=N[d];[0:v]settb=1/10,setpts=N[s];[d][s]psnr",
                "-f", "null", "-",
            ])
        XCTAssertEqual(psnr.status, 0, psnr.err)
        // "PSNR y:… u:… v:… average:46.85 min:… max:…" on stderr.
        guard let line = psnr.err.split(separator: "\n").first(where: { $0.contains("PSNR") && $0.contains("average:") }),
            let avgPart = line.split(separator: " ").first(where: { $0.hasPrefix("average:") }),
            let avg = Double(avgPart.dropFirst("average:".count)),
            let minPart = line.split(separator: " ").first(where: { $0.hasPrefix("min:") }),
            let minimum = Double(minPart.dropFirst("min:".count))
        else {
            return XCTFail("no PSNR line in ffmpeg's output:\n\(psnr.err)")
        }
        print("x264 ultrafast, IDR every frame, 1500 kbit/s at 10 fps, decoded by ffmpeg vs source: \(line)")
        XCTAssertGreaterThanOrEqual(avg, 35, String(line))
        XCTAssertGreaterThanOrEqual(minimum, 35, String(line))
        XCTAssertTrue(psnr.err.contains("frame=   10") || psnr.err.contains("frame=10"), psnr.err)
    }

    func testSWEBinaryBodyOfARealAccessUnit() throws {
        let au = try encodeClip()[0]
        let out = ByteBuffer(capacity: 16)
        try au.withUnsafeBytes { try VideoRecord.write(time: 1_773_853_535.951, frame: $0, to: out) }
        let body = out.array
        XCTAssertEqual(body.count, 12 + au.count)
        XCTAssertEqual(Array(body[0..<8]), [0x41, 0xda, 0x6e, 0xb6, 0xd7, 0xfc, 0xdd, 0x2f], "big-endian double epoch seconds")
        let n = UInt32(au.count)
        XCTAssertEqual(Array(body[8..<12]), [UInt8(n >> 24), UInt8((n >> 16) & 0xff), UInt8((n >> 8) & 0xff), UInt8(n & 0xff)])
        XCTAssertEqual(Array(body[12...]), au)
        XCTAssertEqual(Array(body[12..<17]), [0, 0, 0, 1, 0x67], "the payload opens with the SPS")
    }

    func testConvertedInputsEncodeAndWrongSizesAreRefused() throws {
        let w = 64, h = 48
        let enc = try X264Encoder(X264Settings(width: w, height: h, threads: 1))
        var yuyv = [UInt8](repeating: 0, count: w * h * 2)
        for i in stride(from: 0, to: yuyv.count, by: 4) { yuyv[i] = 100; yuyv[i + 1] = 90; yuyv[i + 2] = 110; yuyv[i + 3] = 160 }
        var count = 0
        try yuyv.withUnsafeBytes {
            try enc.encode(VideoFrame(format: .yuyv, width: w, height: h, bytesPerLine: w * 2, monotonicTime: 0, bytes: $0)) { _ in
                count += 1
            }
        }
        let nv12 = [UInt8](repeating: 128, count: w * h * 3 / 2)
        try nv12.withUnsafeBytes {
            try enc.encode(VideoFrame(format: .nv12, width: w, height: h, bytesPerLine: w, monotonicTime: 0, bytes: $0)) { _ in count += 1 }
        }
        XCTAssertEqual(count, 2)
        let short = [UInt8](repeating: 0, count: 10)
        XCTAssertThrowsError(
            try short.withUnsafeBytes {
                try enc.encode(VideoFrame(format: .i420, width: w, height: h, bytesPerLine: w, monotonicTime: 0, bytes: $0)) { _ in }
            })
        XCTAssertThrowsError(try X264Encoder(X264Settings(width: 15, height: 48)))
    }

    func testPixelConversions() {
        // 4×2 YUYV: Y values 1…8, U/V per pair; chroma taken from the even line.
        let yuyv: [UInt8] = [
            1, 50, 2, 60, 3, 51, 4, 61,
            5, 52, 6, 62, 7, 53, 8, 63,
        ]
        var out = [UInt8](repeating: 0, count: 12)
        yuyv.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { d in
                PixelConversion.yuyvToI420(s.baseAddress!, bytesPerLine: 8, width: 4, height: 2, into: d.baseAddress!)
            }
        }
        XCTAssertEqual(out, [1, 2, 3, 4, 5, 6, 7, 8, 50, 51, 60, 61])
        let nv12: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8, 50, 60, 51, 61]
        nv12.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { d in
                PixelConversion.nv12ToI420(s.baseAddress!, bytesPerLine: 4, width: 4, height: 2, into: d.baseAddress!)
            }
        }
        XCTAssertEqual(out, [1, 2, 3, 4, 5, 6, 7, 8, 50, 51, 60, 61])
    }

    // MARK: Subprocesses

    static func tool(_ name: String) -> String? {
        ["/usr/bin/", "/usr/local/bin/"].map { $0 + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs a tool; stderr goes to a file so a chatty ffmpeg can never fill a pipe and stall.
    static func run(_ exe: String, _ args: [String]) throws -> (status: Int32, out: String, err: String) {
        let errFile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "osh-video-stderr-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        FileManager.default.createFile(atPath: errFile.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errFile) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        p.arguments = args
        let out = Pipe()
        p.standardOutput = out
        p.standardError = try FileHandle(forWritingTo: errFile)
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let e = (try? Data(contentsOf: errFile)) ?? Data()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }
}
