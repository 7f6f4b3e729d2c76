/// How much the chip averages: more oversampling and a stronger IIR filter mean less noise in
/// `relativeAltitude` (≈ 0.2 m → a few cm) for a longer conversion and a slower response.
/// `[barometer] oversampling` names a case by its raw value; the parsed value reaches the driver
/// as it is.
public enum BarometerOversampling: String, Sendable, CaseIterable {
    /// Bosch "ultra low power": P×1 T×1, no IIR. LPS22HB: low-current mode, no low-pass.
    case lowPower = "low-power"
    /// P×4 T×1, IIR 4 (BMP3: coefficient 3). LPS22HB: low-pass ODR/9. The default.
    case standard
    /// Bosch "ultra high resolution / indoor navigation": P×16 T×2, IIR 16 (BMP3: 15). LPS22HB: low-pass ODR/20.
    case highResolution = "high-resolution"
}
