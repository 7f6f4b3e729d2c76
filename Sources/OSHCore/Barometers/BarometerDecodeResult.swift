// What a barometer's register bytes decode to — the calibration region and one data burst, as
// `i2cdump` shows them — through the same pure compensation as the drivers: `osh-edge decode`,
// `probe --dump`, and each chip's entry in the driver table.

/// Compensated values from a barometer's register bytes, so a user can check a board's numbers
/// (or ours) by hand.
public struct BarometerDecodeResult: Sendable, Equatable {
    public var chip: String
    /// The raw ADC values, named as the datasheet names them, in burst order.
    public var raw: [RawValue]
    public var celsius: Double
    public var pressurePa: Double
    public var pressureHPa: Double
    public var humidityPercent: Double?
    /// BMP280/BME280: the datasheet's integer results too (t_fine, 0.01 °C, Pa × 256).
    public var integer: (tFine: Int32, centiCelsius: Int32, pressureQ24_8: UInt32)?
    /// BMP3: which range clamp applied, if any.
    public var clamp: String?

    public struct RawValue: Sendable, Equatable {
        public var name: String
        public var value: Int
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.chip == b.chip && a.raw == b.raw && a.celsius == b.celsius && a.pressurePa == b.pressurePa
            && a.pressureHPa == b.pressureHPa && a.humidityPercent == b.humidityPercent && a.clamp == b.clamp
            && a.integer?.tFine == b.integer?.tFine && a.integer?.centiCelsius == b.integer?.centiCelsius
            && a.integer?.pressureQ24_8 == b.integer?.pressureQ24_8
    }

    /// A readable table for a terminal.
    public var table: String {
        var lines = [
            "chip         \(chip)",
            "raw          " + raw.map { "\($0.name) \($0.value)" }.joined(separator: "  "),
            "temperature  \(fixed(celsius, 4)) °C",
            "pressure     \(fixed(pressureHPa, 4)) hPa  (\(fixed(pressurePa, 4)) Pa)",
        ]
        if let h = humidityPercent { lines.append("humidity     \(fixed(h, 4)) %RH") }
        if let i = integer {
            lines.append(
                "integer      t_fine \(i.tFine)  T \(i.centiCelsius) (0.01 °C)  P \(i.pressureQ24_8) (Pa×256 = "
                    + "\(fixed(Double(i.pressureQ24_8) / 256, 2)) Pa)")
        }
        if let c = clamp { lines.append("clamped      \(c)") }
        return lines.joined(separator: "\n")
    }

    /// One JSON object on one line.
    public var json: String {
        let out = ByteBuffer(capacity: 512)
        var w = JSONWriter(out)
        w.beginObject()
        w.key("chip"); w.string(chip)
        w.key("raw"); w.beginObject()
        for r in raw { w.key(r.name); w.int(r.value) }
        w.endObject()
        w.key("temperatureC"); w.number(celsius)
        w.key("pressureHPa"); w.number(pressureHPa)
        w.key("pressurePa"); w.number(pressurePa)
        if let h = humidityPercent { w.key("humidityPercent"); w.number(h) }
        if let i = integer {
            w.key("integer"); w.beginObject()
            w.key("tFine"); w.int(Int(i.tFine))
            w.key("centiCelsius"); w.int(Int(i.centiCelsius))
            w.key("pressureQ24_8"); w.int(Int(i.pressureQ24_8))
            w.endObject()
        }
        if let c = clamp { w.key("clamp"); w.string(c) }
        w.endObject()
        return out.string
    }
}

/// What `osh-edge decode` takes for one barometer, as i2cdump shows the registers.
public struct BarometerByteLayout: Sendable, Equatable {
    /// For people: "24 bytes from 0x88 (0x88–0x9F)".
    public var calibration: String
    public var burst: String
    public var calibrationBytes: Int
    public var burstBytes: Int

    public init(calibration: String, burst: String, calibrationBytes: Int, burstBytes: Int) {
        self.calibration = calibration
        self.burst = burst
        self.calibrationBytes = calibrationBytes
        self.burstBytes = burstBytes
    }

    /// Throws, saying what `chip` needs, when the byte counts are not the layout's.
    public func check(_ chip: String, calibration cal: [UInt8], burst raw: [UInt8]) throws {
        if cal.count != calibrationBytes {
            throw BarometerDataError("\(chip) calibration needs \(calibration); got \(cal.count) bytes")
        }
        if raw.count != burstBytes {
            throw BarometerDataError("\(chip) data burst needs \(burst); got \(raw.count) bytes")
        }
    }
}
