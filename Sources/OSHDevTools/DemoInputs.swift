import OSHCore
import OSHPlatform
#if canImport(Glibc)
import Glibc
#endif
import OSHAgent
import OSHSimulation

/// The demo's microphone input, generated at start so the demo runs from any directory (and on a
/// board) without the repository's test fixtures.
public enum DemoInputs {
    /// Writes `seconds` of pink noise at −20 dBFS RMS (48 kHz, mono, S16_LE) to `directory` and
    /// returns its path. Deterministic: the same bytes every run.
    public static func pinkNoiseWAV(directory: String, seconds: Int = 2) throws -> String {
        let rate = 48_000
        let n = rate * seconds
        var samples = [Double](repeating: 0, count: n)
        // White noise (xorshift64*) through Paul Kellet's pink filter: −3 dB/octave within ±0.05 dB.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        var b = [Double](repeating: 0, count: 7)
        var sumSquares = 0.0
        for i in 0..<n {
            state ^= state >> 12; state ^= state << 25; state ^= state >> 27
            let white = Double((state &* 0x2545_F491_4F6C_DD1D) >> 11) / Double(1 << 53) * 2 - 1
            b[0] = 0.99886 * b[0] + white * 0.0555179
            b[1] = 0.99332 * b[1] + white * 0.0750759
            b[2] = 0.96900 * b[2] + white * 0.1538520
            b[3] = 0.86650 * b[3] + white * 0.3104856
            b[4] = 0.55000 * b[4] + white * 0.5329522
            b[5] = -0.7616 * b[5] - white * 0.0168980
            let pink = b[0] + b[1] + b[2] + b[3] + b[4] + b[5] + b[6] + white * 0.5362
            b[6] = white * 0.115926
            samples[i] = pink
            sumSquares += pink * pink
        }
        let gain = pow(10, -20.0 / 20) / (sumSquares / Double(n)).squareRoot()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(44 + 2 * n)
        func u32(_ v: Int) { for k in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * k))) } }
        func u16(_ v: Int) { for k in 0..<2 { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * k))) } }
        bytes += Array("RIFF".utf8); u32(36 + 2 * n); bytes += Array("WAVE".utf8)
        bytes += Array("fmt ".utf8); u32(16); u16(1); u16(1); u32(rate); u32(2 * rate); u16(2); u16(16)
        bytes += Array("data".utf8); u32(2 * n)
        for s in samples { u16(Int(min(max((s * gain * 32767).rounded(), -32768), 32767))) }
        let path = (directory.hasSuffix("/") ? directory : directory + "/") + "demo-pinknoise.wav"
        try StateFiles.write(bytes, to: path)
        return path
    }
}
