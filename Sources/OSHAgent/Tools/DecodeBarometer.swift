#if canImport(Glibc)
import Glibc
#endif
import OSHCore
import OSHPlatform

/// `osh-edge decode` and the barometer part of `osh-edge probe --dump`: compensated values from
/// register bytes, through each chip's entry in the driver table (`ChipTable.barometers`).
public enum BarometerDecode {
    /// What `decode` expects for each chip: calibration bytes, data burst bytes.
    public static var layouts: [(chip: String, calibration: String, burst: String)] {
        BarometerDrivers.chips.map { ($0.identity.name, $0.layout.calibration, $0.layout.burst) }
    }

    /// Hex bytes as i2cdump or a user writes them: separators (space, `:`, `,`, `-`, `_`) and
    /// `0x` prefixes are ignored; "-" or "" alone is no bytes. nil when it is not hex.
    public static func parseHex(_ s: String) -> [UInt8]? {
        var digits: [UInt8] = []
        for token in s.split(whereSeparator: { " \t\n:,;-_".contains($0) }) {
            var t = Substring(token)
            if t.hasPrefix("0x") || t.hasPrefix("0X") { t = t.dropFirst(2) }
            for c in t.utf8 {
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digits.append(c - 48)
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digits.append(c - 87)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digits.append(c - 55)
                default: return nil
                }
            }
        }
        guard digits.count % 2 == 0 else { return nil }
        return stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
    }

    public static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { b in
            let s = String(b, radix: 16); return s.count == 1 ? "0" + s : s
        }.joined()
    }

    /// Decodes `calibration` and one data burst for `chip` (case-insensitive). Errors say which
    /// bytes the chip needs.
    public static func decode(chip: String, calibrationHex: String, rawHex: String) throws -> BarometerDecodeResult {
        guard let cal = parseHex(calibrationHex) else { throw BarometerDataError("calibration '\(calibrationHex)' is not hex bytes") }
        guard let raw = parseHex(rawHex) else { throw BarometerDataError("data burst '\(rawHex)' is not hex bytes") }
        return try decode(chip: chip, calibration: cal, burst: raw)
    }

    public static func decode(chip name: String, calibration cal: [UInt8], burst: [UInt8]) throws -> BarometerDecodeResult {
        guard let chip = BarometerDrivers.chip(named: name) else {
            throw BarometerDataError("'\(name)' is not a known barometer; use one of \(BarometerDrivers.names.joined(separator: ", "))")
        }
        return try chip.decode(calibration: cal, burst: burst)
    }

}

/// One barometer `probe --dump` found: its bytes and what they decode to.
public struct BarometerProbeResult: Sendable {
    public var identity: I2CChipIdentity
    public var address: UInt8
    /// The calibration region(s) and one data burst as hex, exactly what `decode` takes.
    public var calibrationHex: String
    public var rawHex: String
    public var decoded: BarometerDecodeResult?
    /// Why it could not be read, when it was identified but failed after.
    public var error: String?
}

/// Looks for every known barometer at each of its addresses on `bus` (by ID register), starts
/// each one found with the default configuration, waits (≤ 1 s) for its first conversion and
/// returns its calibration bytes, one data burst and the decoded values. Addresses that do not
/// answer are skipped silently; nothing found gives [].
public func probeBarometers(bus: I2CBus) -> [BarometerProbeResult] {
    var found: [BarometerProbeResult] = []
    var taken: Set<UInt8> = []
    for chip in BarometerDrivers.chips {
        let id = chip.identity
        for a in id.addresses where !taken.contains(a) {
            let d = chip.driver(bus: bus, address: a)
            guard (try? d.identify()) != nil else { continue }
            taken.insert(a)
            var result = BarometerProbeResult(identity: id, address: a, calibrationHex: "", rawHex: "", decoded: nil, error: nil)
            do {
                try d.start(BarometerConfiguration())
                var reading = try d.read()
                var waited = 0
                while reading == nil && waited < 50 {
                    usleep(20_000)
                    waited += 1
                    reading = try d.read()
                }
                result.calibrationHex = BarometerDecode.hex(d.calibrationBytes)
                result.rawHex = BarometerDecode.hex(d.lastBurst)
                if reading == nil {
                    result.error = "no conversion finished within 1 s"
                } else {
                    result.decoded = try chip.decode(calibration: d.calibrationBytes, burst: d.lastBurst)
                }
            } catch {
                result.error = "\(error)"
            }
            found.append(result)
        }
    }
    return found
}
