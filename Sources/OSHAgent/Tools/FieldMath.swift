// Bodies of the two math field tools: `osh-edge declination` (WMM at a place and date,
// laid out like NOAA's calculator) and `osh-edge fuse` (the orientation filter over a
// recorded CSV of raw samples). Parsing lives in OSHEdgeCommands; the math in OSHCore.
import OSHCore
import OSHPlatform
#if canImport(Glibc)
import Glibc
#endif

private func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : String(repeating: " ", count: n - s.count) + s }

public enum DeclinationTool {
    /// The report for one place and date: a table like NOAA's calculator, or one JSON
    /// object. `warning` is set when the date is outside the model's validity window.
    public static func report(
        latitude: Double, longitude: Double, altitudeKm: Double, decimalYear: Double,
        json: Bool, model: WorldMagneticModel = WorldMagneticModel()
    ) -> (text: String, warning: String?) {
        let f = model.field(latitude: latitude, longitude: longitude, heightKm: altitudeKm, decimalYear: decimalYear)
        let warning =
            f.dateIsValid
            ? nil
            : "\(model.name) is valid \(fixed(model.validFrom, 1))–\(fixed(model.validUntil, 1)); \(fixed(decimalYear, 3)) is outside it, so these values are extrapolated"
        if json {
            let text =
                "{\"model\":\"\(model.name)\",\"date\":\(fixed(decimalYear, 4)),\"latitude\":\(fixed(latitude, 6)),"
                + "\"longitude\":\(fixed(longitude, 6)),\"altitude_km\":\(fixed(altitudeKm, 3)),"
                + "\"D_deg\":\(fixed(f.declination, 4)),\"I_deg\":\(fixed(f.inclination, 4)),\"H_nT\":\(fixed(f.h, 1)),"
                + "\"X_nT\":\(fixed(f.x, 1)),\"Y_nT\":\(fixed(f.y, 1)),\"Z_nT\":\(fixed(f.z, 1)),\"F_nT\":\(fixed(f.f, 1)),"
                + "\"dD_deg_yr\":\(fixed(f.declinationDot, 4)),\"dI_deg_yr\":\(fixed(f.inclinationDot, 4)),"
                + "\"dH_nT_yr\":\(fixed(f.hDot, 1)),\"dX_nT_yr\":\(fixed(f.xDot, 1)),\"dY_nT_yr\":\(fixed(f.yDot, 1)),"
                + "\"dZ_nT_yr\":\(fixed(f.zDot, 1)),\"dF_nT_yr\":\(fixed(f.fDot, 1)),\"valid\":\(f.dateIsValid)}"
            return (text, warning)
        }
        func row(_ label: String, _ value: String, _ unit: String, _ rate: String, _ rateUnit: String) -> String {
            label + pad(value, 10) + " " + unit + pad(rate, 10) + " " + rateUnit
        }
        let lines = [
            "\(model.name)  date \(fixed(decimalYear, 3))  latitude \(fixed(latitude, 4))°  longitude \(fixed(longitude, 4))°  "
                + "height \(fixed(altitudeKm, 3)) km (above the WGS84 ellipsoid)",
            "                                  value        change/year",
            row("D  declination  (+E −W)   ", fixed(f.declination, 2), "° ", fixed(f.declinationDot, 2), "°/yr"),
            row("I  inclination  (+D −U)   ", fixed(f.inclination, 2), "° ", fixed(f.inclinationDot, 2), "°/yr"),
            row("H  horizontal intensity   ", fixed(f.h, 1), "nT", fixed(f.hDot, 1), "nT/yr"),
            row("X  north component (+N −S)", fixed(f.x, 1), "nT", fixed(f.xDot, 1), "nT/yr"),
            row("Y  east component  (+E −W)", fixed(f.y, 1), "nT", fixed(f.yDot, 1), "nT/yr"),
            row("Z  vertical comp.  (+D −U)", fixed(f.z, 1), "nT", fixed(f.zDot, 1), "nT/yr"),
            row("F  total field            ", fixed(f.f, 1), "nT", fixed(f.fDot, 1), "nT/yr"),
        ]
        return (lines.joined(separator: "\n"), warning)
    }
}

/// `osh-edge fuse`: the orientation filter over recorded raw samples.
public enum FuseTool {
    public struct Options: Sendable {
        public var settings = FusionSettings()
        /// Multiplies the magnetometer columns into µT (1 for µT, 0.001 for nT).
        public var magScale = 1.0
        public var json = false
        public init() {}
    }

    /// One CSV row: t, gx, gy, gz (rad/s), ax, ay, az (m/s²), mx, my, mz (optional, empty = no sample).
    public struct Row: Equatable, Sendable {
        public var t: Double
        public var gyro, accel: Vector3
        public var mag: Vector3?
    }

    /// Parses one line; nil for a header (only before the first row: `headerAllowed`), a comment
    /// or a blank line; throws for a broken row, naming its line and column.
    public static func parse(_ line: Substring, lineNumber: Int, headerAllowed: Bool = true) throws(FusionConfigError) -> Row? {
        let trimmed = line.drop { $0 == " " || $0 == "\t" }
        guard let first = trimmed.first, first != "#" else { return nil }
        if first.isLetter && headerAllowed { return nil }  // header
        let cols = trimmed.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingSpaces }
        guard cols.count == 7 || cols.count == 10 else {
            throw FusionConfigError("line \(lineNumber): \(cols.count) columns; expected t,gx,gy,gz,ax,ay,az[,mx,my,mz]")
        }
        var v = [Double](repeating: .nan, count: 10)
        for (i, c) in cols.enumerated() {
            if i >= 7 && c.isEmpty { continue }
            guard let d = Double(c), d.isFinite else {
                throw FusionConfigError("line \(lineNumber), column \(i + 1): '\(c)' is not a number")
            }
            v[i] = d
        }
        let mag = v[7].isNaN || v[8].isNaN || v[9].isNaN ? nil : Vector3(v[7], v[8], v[9])
        return Row(t: v[0], gyro: Vector3(v[1], v[2], v[3]), accel: Vector3(v[4], v[5], v[6]), mag: mag)
    }

    /// The header of the terminal table.
    public static let tableHeader = "         t        w         x         y         z   heading    pitch     roll  mag"

    /// Runs the filter over `lines` (a CSV without or with a header), calling `emit` with
    /// one output line per sample. Returns the rows processed; throws on the first bad row.
    public static func run(_ options: Options, lines: some Sequence<Substring>, emit: (String) -> Void) throws(FusionConfigError) -> Int {
        var filter = OrientationFilter(settings: options.settings)
        var previous: Double? = nil
        var count = 0, number = 0
        if !options.json { emit(tableHeader) }
        for line in lines {
            number += 1
            // A word after the first row is a broken row, not a second header: said, never skipped.
            guard let row = try parse(line, lineNumber: number, headerAllowed: count == 0) else { continue }
            let dt = previous.map { row.t - $0 } ?? 1 / options.settings.rateHz
            previous = row.t
            filter.update(gyro: row.gyro, accel: row.accel, mag: row.mag.map { $0 * options.magScale }, dt: dt)
            let a = filter.android
            if options.json {
                emit(
                    "{\"t\":\(fixed(row.t, 4)),\"w\":\(fixed(a.w, 6)),\"x\":\(fixed(a.x, 6)),\"y\":\(fixed(a.y, 6)),"
                        + "\"z\":\(fixed(a.z, 6)),\"heading\":\(fixed(a.heading, 3)),\"pitch\":\(fixed(a.pitch, 3)),"
                        + "\"roll\":\(fixed(a.roll, 3)),\"mag\":\(row.mag != nil)}")
            } else {
                emit(
                    pad(fixed(row.t, 3), 10) + pad(fixed(a.w, 5), 9) + pad(fixed(a.x, 5), 10) + pad(fixed(a.y, 5), 10)
                        + pad(fixed(a.z, 5), 10) + pad(fixed(a.heading, 2), 10) + pad(fixed(a.pitch, 2), 9)
                        + pad(fixed(a.roll, 2), 9) + (row.mag != nil ? "  yes" : "  no"))
            }
            count += 1
        }
        return count
    }
}

/// Lines of a file descriptor (standard input), read in 64 KiB chunks.
public struct FileDescriptorLines: Sequence, IteratorProtocol {
    let fd: Int32
    var pending: [UInt8] = []
    var done = false
    public init(fd: Int32) { self.fd = fd }

    public mutating func next() -> Substring? {
        while true {
            if let nl = pending.firstIndex(of: 0x0A) {
                var end = nl
                if end > 0 && pending[end - 1] == 0x0D { end -= 1 }
                let line = String(decoding: pending[0..<end], as: UTF8.self)
                pending.removeSubrange(0...nl)
                return Substring(line)
            }
            if done {
                guard !pending.isEmpty else { return nil }
                let line = String(decoding: pending, as: UTF8.self)
                pending.removeAll()
                return Substring(line)
            }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let n = chunk.withUnsafeMutableBytes { (try? FileDescriptor(rawValue: fd).read(into: $0)) ?? -1 }
            if n <= 0 { done = true } else { pending.append(contentsOf: chunk[0..<n]) }
        }
    }
}

extension Substring {
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed().drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed())
    }
}
