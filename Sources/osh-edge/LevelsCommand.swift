#if canImport(Glibc)
import Glibc
#endif
import OSHAgent
import OSHCore
import OSHPlatform

/// `osh-edge levels [--window S] [--json] [--duration S] FILE.wav|DEVICE`: per window, the
/// rmsdB and peakdB `audio_level` would publish. A WAV file is read and metered directly; any
/// other name is an ALSA capture device, metered live until Ctrl-C (or --duration).
func runLevelsCommand(_ argv: [String]) {
    var a = Arguments(rest: argv)
    let json = a.flag("--json")
    var window = LevelMeter.defaultWindow
    if let w = a.value("--window") {
        guard let v = Double(w), LevelMeter.windowRange.contains(v) else { fail("--window must be seconds from 0.1 to 1, not '\(w)'") }
        window = v
    }
    var duration: Double?
    if let d = a.value("--duration") {
        guard let v = Double(d), v > 0 else { fail("--duration must be a positive number of seconds") }
        duration = v
    }
    guard let source = a.positional() else { fail("levels needs a WAV file or an ALSA capture device (e.g. default, hw:1,0)") }
    a.finish()

    let terminal = isatty(1) != 0
    var headed = false
    let printRow = { (r: AudioLevels.Row) in
        if !json, !headed {
            print("  time s    rmsdB   peakdB" + (terminal ? "   RMS −60…0 dBFS" : ""))
            headed = true
        }
        if json {
            print("{\"time\":\(r.time),\"rmsdB\":\(r.rmsdB),\"peakdB\":\(r.peakdB)}")
        } else {
            var line = fixed(r.time, 3).leftPadding(8) + fixed(r.rmsdB, 2).leftPadding(9) + fixed(r.peakdB, 2).leftPadding(9)
            if terminal {
                let filled = max(0, min(30, Int(((r.rmsdB + 60) / 2).rounded())))
                line += "   " + String(repeating: "#", count: filled) + String(repeating: ".", count: 30 - filled)
                    + (r.peakdB >= -0.001 ? " CLIP" : "")
            }
            print(line)
        }
    }
    var isFile = source.lowercased().hasSuffix(".wav")
    var st = stat()
    if stat(source, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG { isFile = true }
    do {
        if isFile {
            var rows = 0
            let h = try AudioLevels.meterFile(source, window: window) { rows += 1; printRow($0) }
            if rows == 0 {
                printError("osh-edge: \(source) holds \(h.frames) frames, less than one \(window) s window at \(h.sampleRate) Hz")
            }
        } else {
            try AudioLevels.meterDevice(source, window: window, duration: duration, onRow: printRow)
        }
    } catch {
        fail("\(error)", code: 1)
    }
}

/// `v` with `digits` decimals (no Foundation formatter).
private func fixed(_ v: Double, _ digits: Int) -> String {
    guard v.isFinite else { return "\(v)" }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let n = Int((abs(v) * scale).rounded())
    let ip = n / Int(scale), fp = n % Int(scale)
    var frac = String(fp)
    while frac.count < digits { frac = "0" + frac }
    return (v < 0 && n != 0 ? "-" : "") + "\(ip)" + (digits > 0 ? "." + frac : "")
}

/// `osh-edge bench audio [--seconds N] [--path meter|alsa] [--format S16_LE|S32_LE] [--channels N] [--quiet]`.
func benchAudio(_ a: inout Arguments) {
    let seconds = a.value("--seconds").map { Double($0) ?? 0 }
    if let s = seconds, !(s > 0) { fail("--seconds must be a positive number") }
    let paths: [AudioBench.Path]
    switch a.value("--path") {
    case nil: paths = [.meter, .alsa]
    case let p?:
        guard let v = AudioBench.Path(rawValue: p) else { fail("--path must be meter or alsa, not '\(p)'") }
        paths = [v]
    }
    var format = PCMSampleFormat.s16
    if let f = a.value("--format") {
        guard let v = PCMSampleFormat(rawValue: f.uppercased()) else { fail("--format must be S16_LE or S32_LE, not '\(f)'") }
        format = v
    }
    let channels = Int(a.value("--channels") ?? "1") ?? 0
    guard (1...8).contains(channels) else { fail("--channels must be 1 to 8") }
    let quiet = a.flag("--quiet")
    a.finish()
    Log.muted = true
    var template = Array("/tmp/osh-edge-bench-XXXXXX".utf8CString)
    guard let dirp = mkdtemp(&template) else { fail("cannot create a temporary directory in /tmp", code: 1) }
    let dir = String(cString: dirp)
    defer { rmdir(dir) }
    do {
        for p in paths {
            let r = p == .meter
                ? AudioBench.runMeter(seconds: seconds ?? 3600, format: format, channels: channels)
                : try AudioBench.runALSA(seconds: seconds ?? 600, format: format, channels: channels, directory: dir)
            if quiet { continue }
            print("audio \(p.rawValue) \(format.rawValue) \(channels) ch, period \(r.periodFrames): "
                  + "\(fixed(r.audioSeconds, 0)) s of 48 kHz audio in \(fixed(r.cpuSeconds * 1000, 1)) ms CPU "
                  + "= \(fixed(r.cpuMicrosPerAudioSecond, 1)) µs CPU per audio second (\(fixed(r.coreShare * 100, 4)) % of a core), "
                  + "\(fixed(r.framesPerCPUSecond / 1e6, 1)) M frames/CPU-s; \(r.windows) windows")
        }
    } catch {
        fail("\(error)", code: 1)
    }
}
