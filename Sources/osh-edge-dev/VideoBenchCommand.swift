import OSHAgent
import OSHEdgeCommands
import OSHDevTools
import OSHCore
import OSHPlatform

/// `osh-edge-dev bench video [--frames N] [--size WxH] [--threads N|auto] [--keyint N] [--fps F] [--bitrate KBPS]`
func benchVideo(_ a: inout Arguments) {
    let frames = Int(a.value("--frames") ?? "200") ?? 0
    guard frames > 0 else { fail("--frames must be a positive integer") }
    let fps = Double(a.value("--fps") ?? "25") ?? 0
    let keyint = Int(a.value("--keyint") ?? "1") ?? 0
    let bitrate = Int(a.value("--bitrate") ?? "2000") ?? 0
    guard fps > 0, keyint >= 1, bitrate > 0 else { fail("--fps, --keyint and --bitrate must be positive") }
    var cases = VideoBench.defaultCases
    if let size = a.value("--size") {
        let p = size.split(separator: "x").compactMap { Int($0) }
        guard p.count == 2 else { fail("--size must be WIDTHxHEIGHT, e.g. 1280x720, not '\(size)'") }
        cases = cases.filter { $0.width == p[0] && $0.height == p[1] }
        if cases.isEmpty { cases = [.init(width: p[0], height: p[1], threads: 1), .init(width: p[0], height: p[1], threads: 0)] }
    }
    if let t = a.value("--threads") {
        guard let n = t == "auto" ? 0 : Int(t), n >= 0 else { fail("--threads must be a number or auto") }
        let sizes = cases.map { ($0.width, $0.height) }
        var seen: [String] = []
        cases = []
        for (w, h) in sizes where !seen.contains("\(w)x\(h)") {
            seen.append("\(w)x\(h)")
            cases.append(.init(width: w, height: h, threads: n))
        }
    }
    a.finish()
    Log.muted = true
    print(
        "libx264 ultrafast/zerolatency baseline, keyint \(keyint), \(bitrate) kbit/s at \(format1(fps)) fps; \(frames) frames per case; \(VideoBench.onlineCPUs()) CPUs"
    )
    print("size        threads   frames/s   ms/frame  bytes/frame  max bytes  SPS+PPS+IDR")
    do {
        for c in cases {
            let r = try VideoBench.run(c, frames: frames, fps: fps, keyFrameInterval: keyint, bitrateKbps: bitrate)
            let threads = c.threads == 0 ? "auto" : String(c.threads)
            print(
                "\("\(c.width)x\(c.height)".padding(12))\(threads.padding(7))\(format1(r.framesPerSecond).leftPadding(11))"
                    + "\(String(format2(1000 / max(r.framesPerSecond, 1e-9))).leftPadding(11))\(format1(r.bytesPerFrame).leftPadding(13))"
                    + "\(String(r.maxBytes).leftPadding(11))  \(r.allSelfContained ? "every key frame (\(r.keyFrames))" : "MISSING")")
        }
        for (w, h) in [(640, 480), (1280, 720)] {
            print(
                "YUYV→I420 conversion \(w)x\(h): \(format2(VideoBench.yuyvConversionMilliseconds(width: w, height: h, frames: 50))) ms/frame"
            )
        }
        for (w, h) in [(640, 480), (1280, 720)] {
            if let m = try VideoBench.mjpegDecode(width: w, height: h, frames: min(frames, 100)) {
                print(
                    "MJPEG→I420 decode (libv4lconvert) \(w)x\(h): \(format2(m.milliseconds)) ms/frame of CPU, JPEGs of \(m.jpegBytes) bytes"
                )
            } else {
                print("MJPEG→I420 decode \(w)x\(h): not measured (ffmpeg makes the test JPEGs; apt install ffmpeg)")
            }
        }
        print(
            "user-side copies per frame (by construction): I420 source → libx264 → publisher = 1 (the POST body); YUYV/NV12 camera → libx264 = 2 (conversion pass + body); MJPEG camera = 2 (the decode + body); camera → V4L2 M2M = 1 with DMABUF import, 2 without; H.264 camera = 1"
        )
        print("peak RSS: \(Agent.peakRSSKiB()) KiB")
    } catch {
        fail("\(error)", code: 1)
    }
}

private func format2(_ v: Double) -> String {
    let r = (v * 100).rounded() / 100
    let whole = Int(r)
    let frac = Int(((r - Double(whole)) * 100).rounded())
    return "\(whole).\(frac < 10 ? "0" : "")\(frac)"
}
