// libFuzzer target for the configuration reader: ConfigParser (the file syntax),
// AgentSettings.parse (keys, ranges, cross-checks) and Secrets.parse.
// Built by fuzz/run.sh config against all of OSHCore (fuzz/targets.sh).
//
// Each input is checked for:
//  * no crash, no out-of-bounds access (AddressSanitizer), no trap;
//  * every error names the file and a line inside the input (or no line: a whole-file problem),
//    and at most maxErrors (+1 "… and N more") are reported;
//  * every value that parsed renders back (`key = rendered`) to the same value;
//  * the secrets parser's errors obey the same rules.

@testable import OSHCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let lines = bytes.reduce(1) { $0 + ($1 == 0x0A ? 1 : 0) }

    func checkErrors(_ errors: [ConfigError]) {
        precondition(errors.count <= ConfigParser.maxErrors + 1, "too many errors: \(errors.count)")
        for e in errors {
            precondition(e.path == "fuzz.conf")
            if let l = e.line { precondition(l >= 1 && l <= lines, "line \(l) of \(lines)") }
        }
    }

    // 1. Syntax, recovering.
    let (doc, syntax) = ConfigParser.parseRecovering(bytes: bytes, path: "fuzz.conf")
    checkErrors(syntax)
    for s in doc.sections {
        precondition(s.line >= 0 && s.line <= lines)
        for e in s.entries {
            precondition(e.line >= 1 && e.line <= lines)
            // Render and re-read: the writer of the example file and the reader agree.
            let again = Array("k = \(e.value.rendered)\n".utf8)
            let (d2, err2) = ConfigParser.parseRecovering(bytes: again, path: "fuzz.conf")
            precondition(err2.isEmpty, "rendered value does not parse: \(e.value.rendered)")
            let v2 = d2.sections.first?.entry("k")?.value
            precondition(v2 == e.value || e.value.hasNaN, "round trip: \(e.value) → \(String(describing: v2))")
        }
    }

    // 2. The whole reader: a settings value or errors, never both missing.
    do {
        let s = try AgentSettings.parse(bytes: bytes, path: "fuzz.conf", chips: fuzzChips)
        precondition(!s.servers.isEmpty)
        precondition(s.ringCapacity > 0)
    } catch {
        precondition(!error.errors.isEmpty)
        checkErrors(error.errors)
    }

    // 3. Secrets.
    do {
        _ = try Secrets.parse(bytes: bytes, path: "fuzz.conf")
    } catch {
        checkErrors(error.errors)
    }
    return 0
}

/// The driver table lives in OSHPlatform (with its C libraries), which this target does not link;
/// one chip of each shape stands in for it: the reader only asks names, classes and what they measure.
let fuzzChips: KnownChips = {
    func chip(
        _ name: String, _ kind: I2CChipIdentity.Kind, _ measures: I2CChipIdentity.Measures, mag: String? = nil, aliases: [String] = []
    )
        -> I2CChipIdentity
    {
        I2CChipIdentity(
            name: name, kind: kind, addresses: [0x76], idRegister: 0xD0, idValues: [0x58], measures: measures, builtInMagnetometer: mag,
            aliases: aliases)
    }
    return KnownChips(
        barometers: [
            chip("BMP280", .barometer, [.pressure, .temperature]), chip("BME280", .barometer, [.pressure, .temperature, .humidity]),
        ],
        imus: [
            chip("MPU9250", .imu, [.acceleration, .rotation, .magneticField], mag: "AK8963"),
            chip("MPU6050", .imu, [.acceleration, .rotation]),
            chip("BNO055", .imu, [.acceleration, .rotation, .magneticField, .orientation]),
        ],
        magnetometers: [chip("LIS3MDL", .magnetometer, [.magneticField]), chip("AK8963", .magnetometer, [.magneticField])],
        hygrometers: [chip("SHT4x", .hygrometer, [.temperature, .humidity], aliases: ["SHT40", "SHT41", "SHT45"])])
}()

extension ConfigValue {
    /// NaN never equals itself; such a value round-trips as NaN, which == cannot show.
    var hasNaN: Bool {
        switch self {
        case .decimal(let d): return d.isNaN
        case .array(let a): return a.contains { $0.hasNaN }
        default: return false
        }
    }
}
