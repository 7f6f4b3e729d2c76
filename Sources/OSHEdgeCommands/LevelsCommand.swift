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
                line +=
                    "   " + String(repeating: "#", count: filled) + String(repeating: ".", count: 30 - filled)
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
            let h = try AudioLevels.meterFile(source, window: window) {
                rows += 1; printRow($0)
            }
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
