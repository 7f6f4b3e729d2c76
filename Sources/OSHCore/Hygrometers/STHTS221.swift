// The convert half of the ST HTS221 (datasheet DocID026333; technical note TN1218), the
// hygrometer of the Raspberry Pi Sense HAT. Each part carries its own two-point calibration in
// registers 0x30–0x3F: two humidity points (H0_rH_x2, H1_rH_x2: %RH × 2) with the H_OUT counts
// measured at them (H0_T0_OUT, H1_T0_OUT), and two temperature points (T0_degC_x8, T1_degC_x8:
// °C × 8, ten bits, the top two of each in 0x35) with their T_OUT counts (T0_OUT, T1_OUT). A
// reading is the straight line through the two points; humidity is then held to 0–100 %RH, as
// ST's example driver does. Checked against ST's hts221-pid getters and example interpolation
// (Tests/OSHCoreTests/Fixtures/hygro/hts221_vectors.csv).

/// The 16 calibration bytes of one HTS221, parsed.
public struct HTS221Calibration: Sendable, Equatable {
    /// H0_rH_x2; the region is 0x30…0x3F (16 bytes, read once with the auto-increment bit).
    public static let register: UInt8 = 0x30
    public static let byteCount = 16

    /// %RH × 2 at the two humidity points.
    public var h0RHx2: UInt8, h1RHx2: UInt8
    /// °C × 8 at the two temperature points (10 bits).
    public var t0DegCx8: UInt16, t1DegCx8: UInt16
    /// The chip's counts at those points.
    public var h0T0Out: Int16, h1T0Out: Int16, t0Out: Int16, t1Out: Int16

    public init(
        h0RHx2: UInt8, h1RHx2: UInt8, t0DegCx8: UInt16, t1DegCx8: UInt16,
        h0T0Out: Int16, h1T0Out: Int16, t0Out: Int16, t1Out: Int16
    ) throws(HygrometerDataError) {
        (self.h0RHx2, self.h1RHx2, self.t0DegCx8, self.t1DegCx8) = (h0RHx2, h1RHx2, t0DegCx8 & 0x3FF, t1DegCx8 & 0x3FF)
        (self.h0T0Out, self.h1T0Out, self.t0Out, self.t1Out) = (h0T0Out, h1T0Out, t0Out, t1Out)
        // Equal counts at both points leave no line to draw (a region read as all 0x00 or all
        // 0xFF, e.g. before the chip finished loading it, looks like this).
        guard h0T0Out != h1T0Out, t0Out != t1Out else {
            throw HygrometerDataError(
                "HTS221 calibration is not a part's: H0_T0_OUT \(h0T0Out) / H1_T0_OUT \(h1T0Out), "
                    + "T0_OUT \(t0Out) / T1_OUT \(t1Out) (both pairs must differ); reboot the chip (BOOT) or power-cycle it")
        }
    }

    /// Parses registers 0x30…0x3F as read (a buffer or an array).
    public init<Bytes: RandomAccessCollection>(registers b: Bytes) throws(HygrometerDataError) where Bytes.Element == UInt8 {
        guard b.count == Self.byteCount else {
            throw HygrometerDataError("HTS221 calibration needs 16 bytes from 0x30; got \(b.count)")
        }
        func at(_ i: Int) -> UInt8 { b[b.index(b.startIndex, offsetBy: i)] }
        func s16(_ i: Int) -> Int16 { Int16(bitPattern: UInt16(at(i)) | UInt16(at(i + 1)) << 8) }
        // 0x35: T0.9-8 in bits 1:0, T1.9-8 in bits 3:2; bits 7:4 are reserved (parts set them).
        try self.init(
            h0RHx2: at(0), h1RHx2: at(1),
            t0DegCx8: UInt16(at(2)) | UInt16(at(5) & 0x03) << 8, t1DegCx8: UInt16(at(3)) | UInt16(at(5) & 0x0C) << 6,
            h0T0Out: s16(6), h1T0Out: s16(10), t0Out: s16(12), t1Out: s16(14))
    }

    /// y0 + (y1 − y0)(x − x0)/(x1 − x0) with y in 1/`scale` units, as one integer quotient: the
    /// numerator and denominator are exact in a Double, so the one division rounds correctly.
    @inlinable static func line(_ x: Int16, x0: Int16, x1: Int16, y0: Int, y1: Int, scale: Int) -> Double {
        let dx = Int(x1) - Int(x0)
        let num = y0 * dx + (y1 - y0) * (Int(x) - Int(x0))
        return Double(num) / Double(scale * dx)
    }

    /// Degrees Celsius for a T_OUT count.
    @inlinable public func celsius(raw: Int16) -> Double {
        Self.line(raw, x0: t0Out, x1: t1Out, y0: Int(t0DegCx8), y1: Int(t1DegCx8), scale: 8)
    }

    /// %RH for an H_OUT count, before holding it to 0–100.
    @inlinable public func unclampedHumidity(raw: Int16) -> Double {
        Self.line(raw, x0: h0T0Out, x1: h1T0Out, y0: Int(h0RHx2), y1: Int(h1RHx2), scale: 2)
    }

    /// %RH for an H_OUT count, held to 0–100 (the line goes past both ends).
    @inlinable public func humidityPercent(raw: Int16) -> Double { min(max(unclampedHumidity(raw: raw), 0), 100) }

    /// The reading for one pair of counts.
    @inlinable public func reading(humidityRaw: Int16, temperatureRaw: Int16) -> HygrometerReading {
        HygrometerReading(celsius: celsius(raw: temperatureRaw), humidityPercent: humidityPercent(raw: humidityRaw))
    }

    /// The counts the chip gives for `celsius` and `percent`, rounded and held to 16 bits (the
    /// simulated chip's output: the inverse of the two lines).
    public func counts(celsius: Double, percent: Double) -> (humidity: Int16, temperature: Int16) {
        func inverse(_ y: Double, x0: Int16, x1: Int16, y0: Double, y1: Double) -> Int16 {
            guard y1 != y0, y.isFinite else { return x0 }
            let x = Double(x0) + (y - y0) * (Double(x1) - Double(x0)) / (y1 - y0)
            return Int16(min(max(x.rounded(), -32768), 32767))
        }
        return (
            inverse(percent, x0: h0T0Out, x1: h1T0Out, y0: Double(h0RHx2) / 2, y1: Double(h1RHx2) / 2),
            inverse(celsius, x0: t0Out, x1: t1Out, y0: Double(t0DegCx8) / 8, y1: Double(t1DegCx8) / 8)
        )
    }

    /// The 16 bytes as the chip holds them (reserved bytes 0x34, 0x38, 0x39 and 0x35's top bits zero).
    public var registers: [UInt8] {
        var b = [UInt8](repeating: 0, count: Self.byteCount)
        b[0] = h0RHx2
        b[1] = h1RHx2
        b[2] = UInt8(truncatingIfNeeded: t0DegCx8)
        b[3] = UInt8(truncatingIfNeeded: t1DegCx8)
        b[5] = UInt8(truncatingIfNeeded: t0DegCx8 >> 8) | UInt8(truncatingIfNeeded: t1DegCx8 >> 8) << 2
        for (i, v) in [(6, h0T0Out), (10, h1T0Out), (12, t0Out), (14, t1Out)] {
            let u = UInt16(bitPattern: v)
            b[i] = UInt8(truncatingIfNeeded: u)
            b[i + 1] = UInt8(truncatingIfNeeded: u >> 8)
        }
        return b
    }
}

/// The HTS221's output registers: STATUS then H_OUT and T_OUT, read as one burst from 0x27.
public enum HTS221Output {
    public static let register: UInt8 = 0x27
    public static let byteCount = 5
    /// STATUS bits: a new temperature (T_DA), a new humidity (H_DA).
    public static let temperatureAvailable: UInt8 = 0x01, humidityAvailable: UInt8 = 0x02

    /// (status, H_OUT, T_OUT) from the five bytes.
    @inlinable public static func parse(_ b: UnsafeRawBufferPointer) -> (status: UInt8, humidity: Int16, temperature: Int16)? {
        guard b.count == byteCount else { return nil }
        return (b[0], Int16(bitPattern: UInt16(b[1]) | UInt16(b[2]) << 8), Int16(bitPattern: UInt16(b[3]) | UInt16(b[4]) << 8))
    }
}
