// The compensation formulas run backwards: which raw ADC value would a chip with this calibration
// report for a given pressure and temperature? The simulated chips use it so that the demo's
// made-up weather reaches the agent through the real drivers and the real compensation.
// Every formula is monotone in its raw input over the chip's range, so a binary search over the
// integer ADC domain finds the closest code (≈ 20 steps, no allocation).

public enum BarometerInversion {
    /// The integer in `lo...hi` whose `f` is closest to `target`, for `f` monotone (either way).
    @inlinable public static func closest(_ lo: Int64, _ hi: Int64, target: Double, _ f: (Int64) -> Double) -> Int64 {
        var lo = lo, hi = hi
        let increasing = f(hi) >= f(lo)
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2
            if (f(mid) < target) == increasing { lo = mid } else { hi = mid }
        }
        return abs(f(lo) - target) <= abs(f(hi) - target) ? lo : hi
    }
}

extension BMP280Calibration {
    /// The 20-bit `adc_T`, `adc_P` that compensate (double formulas) to `celsius` and `hPa`.
    public func raw(celsius: Double, hPa: Double) -> (adcT: Int32, adcP: Int32) {
        let adcT = Int32(BarometerInversion.closest(0, 0xFFFFF, target: celsius) { temperature(adcT: Int32($0)).celsius })
        let tFine = temperature(adcT: adcT).tFine
        let adcP = Int32(BarometerInversion.closest(0, 0xFFFFF, target: hPa * 100) { pressurePa(adcP: Int32($0), tFine: tFine) })
        return (adcT, adcP)
    }
}

extension BME280Calibration {
    /// The 16-bit `adc_H` that compensates to `percent` at the temperature `tFine` stands for.
    public func rawHumidity(percent: Double, tFine: Int32) -> Int32 {
        Int32(BarometerInversion.closest(0, 0xFFFF, target: percent) { humidityPercent(adcH: Int32($0), tFine: tFine) })
    }
}

extension BMP3Calibration {
    /// The 24-bit raw temperature and pressure that compensate to `celsius` and `hPa` (inside the
    /// chip's range; outside it, the closest in-range code).
    public func raw(celsius: Double, hPa: Double) -> (temperature: UInt32, pressure: UInt32) {
        let t = UInt32(BarometerInversion.closest(0, 0xFFFFFF, target: celsius) { temperature(uncompensated: UInt32($0)).celsius })
        let tc = temperature(uncompensated: t).celsius
        // Real parts report pressure codes in the upper half of the range; the cubic term makes
        // the formula bend back far outside it, so the search stays inside.
        let p = UInt32(
            BarometerInversion.closest(0x200000, 0xFFFFFF, target: hPa * 100) { pressurePa(uncompensated: UInt32($0), celsius: tc).pa })
        return (t, p)
    }
}
