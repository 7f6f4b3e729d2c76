// The hardware sections of osh-edge.conf: which chips, on which bus and address, how the
// board is mounted, and the audio, camera and LED devices. Validated like the rest of the
// file; the drivers themselves check that the chips are really there at start.

/// `[i2c]`: the adapter the sensors are on (1 on every Pi's 40-pin header).
public struct I2CConfig: Sendable, Equatable {
    public var bus = 1
    public init() {}
}

/// The chips a build drives, by class, as the configuration names them (`auto` finds one, `none`
/// disables). The driver table (OSHPlatform's `ChipTable.known`) makes the value the agent and
/// `config check` use; this target has no list of its own.
public struct KnownChips: Sendable, Equatable {
    public var barometers: [I2CChipIdentity]
    public var imus: [I2CChipIdentity]
    /// Magnetometers on the bus, and those reached only through their IMU (the AK09916).
    public var magnetometers: [I2CChipIdentity]
    /// Humidity and temperature chips.
    public var hygrometers: [I2CChipIdentity]

    public init(
        barometers: [I2CChipIdentity], imus: [I2CChipIdentity], magnetometers: [I2CChipIdentity],
        hygrometers: [I2CChipIdentity] = []
    ) {
        self.barometers = barometers
        self.imus = imus
        self.magnetometers = magnetometers
        self.hygrometers = hygrometers
    }

    /// The names the configuration accepts (aliases included).
    public var barometerNames: [String] { Self.names(barometers) }
    public var imuNames: [String] { Self.names(imus) }
    public var magnetometerNames: [String] { Self.names(magnetometers) }
    public var hygrometerNames: [String] { Self.names(hygrometers) }

    static func names(_ ids: [I2CChipIdentity]) -> [String] { ids.flatMap { [$0.name] + $0.aliases } }

    /// "MPU-9250", "mpu9250" → "MPU9250": users copy names from datasheets and shop pages.
    /// The one normaliser: the config, the driver tables and probe all compare names through it.
    public static func canonical(_ name: String) -> String {
        String(name.uppercased().filter { $0 != "-" && $0 != "_" && $0 != " " })
    }

    /// The magnetometer inside an IMU package (the drivers report the same name when they find it),
    /// nil when the IMU has none of its own. Android names the magnetometer output after the
    /// magnetometer's own sensor, so this name, not the IMU's, is in `<chip>_Magnetometer_data`.
    public func builtInMagnetometer(_ imu: String) -> String? {
        imus.first { Self.canonical($0.name) == Self.canonical(imu) }?.builtInMagnetometer
    }
}

/// `[barometer]`.
public struct BarometerConfig: Sendable, Equatable {
    /// A name from `KnownChips.barometerNames`, "auto" or "none".
    public var chip = "auto"
    /// nil = every address the chip may have.
    public var address: UInt8?
    /// How much the chip averages (noise against response time).
    public var oversampling = BarometerOversampling.standard
    public init() {}
}

/// `[hygrometer]`: a humidity and temperature chip. `temperature` and `humidity` come from it when
/// it answers, else from the barometer.
public struct HygrometerConfig: Sendable, Equatable {
    /// A name from `KnownChips.hygrometerNames`, "auto" (looked for when those outputs are on) or "none".
    public var chip = "auto"
    public var address: UInt8?
    public init() {}
}

/// `[imu]`.
public struct IMUConfig: Sendable, Equatable {
    public var chip = "auto"
    public var address: UInt8?
    /// The magnetometer when it is a separate chip (LIS3MDL beside an LSM6DSOX or ICM-42688-P); "auto" takes the
    /// IMU's own (AK8963 in an MPU-9250, AK09916 in an ICM-20948) or looks for a known one; "none".
    public var magnetometer = "auto"
    public var magnetometerAddress: UInt8?
    /// Full-scale ranges: smaller is finer; a board on a vehicle needs more.
    public var accelRange = AccelRange.g4
    public var gyroRange = GyroRange.dps500
    /// How the board's axes map to the device frame (x right, y forward, z up), parsed once from
    /// three signed axes, e.g. "+x,+y,+z" (as printed on the board) or "-y,+x,+z" (turned 90° left).
    public var mounting = AxisMap.identity
    /// Sample into the chip's hardware FIFO and read it in bursts (MPU-6050/6500/9250, ICM-20948,
    /// ICM-42688-P, LSM6DSOX); false polls the data registers at the IMU rate. The BNO055 always polls.
    public var fifo = true
    public init() {}
}

/// Orientation filter settings (in `[orientation]`, beside `north`).
public struct FusionConfig: Sendable, Equatable {
    public var algorithm = FusionAlgorithm.madgwick
    /// Madgwick β (or Mahony Kp); 0 = the algorithm's default.
    public var gain = 0.0
    /// Hard-iron offset (µT), subtracted from the magnetometer.
    public var magOffset: [Double] = [0, 0, 0]
    /// Soft-iron matrix (row-major 3×3), applied after the offset.
    public var magMatrix: [Double] = [1, 0, 0, 0, 1, 0, 0, 0, 1]
    public init() {}
}

/// `[audio]`.
public struct AudioConfig: Sendable, Equatable {
    /// An ALSA PCM name: "default", "hw:1,0", "plughw:CARD=Device,DEV=0".
    public var device = "default"
    /// Seconds per level (0.1 to 1).
    public var window = 0.1
    public init() {}
}

/// `[camera]`.
public struct CameraConfig: Sendable, Equatable {
    /// The config's words for the encoder choice.
    public static let encoders: [(String, VideoEncoderPreference)] = [("auto", .auto), ("v4l2m2m", .hardware), ("x264", .software)]
    /// A V4L2 device path; "auto" (a camera sensor through libcamera when there is one, else the
    /// first V4L2 camera); "libcamera" (a camera sensor, a Camera Module); or "test-pattern" (a
    /// generated picture: tries the encoder and node).
    public var device = "/dev/video0"
    public var width = 640
    public var height = 480
    /// "auto": the hardware encoder when one is found, else libx264.
    public var encoder = VideoEncoderPreference.auto
    /// Frames between key frames (1 = every frame is an IDR, as the Android driver sends).
    public var keyframeInterval = 1
    public var bitrateKbps = 2000
    /// libx264 threads (0 = one per core).
    public var threads = 0
    public init() {}
}

extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return s
    }
}

extension SettingsReader {
    static let deviceKeys: [String: [String]] = [
        "i2c": ["bus"],
        "barometer": ["chip", "address", "oversampling"],
        "hygrometer": ["chip", "address"],
        "imu": ["chip", "address", "magnetometer", "magnetometer_address", "accel_range", "gyro_range", "mounting", "fifo"],
        "audio": ["device", "window"],
        "camera": ["device", "width", "height", "encoder", "keyframe_interval", "bitrate", "threads"],
        "led": LEDSettings.keys,
        "ptz": ["chip", "address", "pan_channel", "tilt_channel", "pulse", "degrees", "pan_limits", "tilt_limits", "max_speed"],
    ]
    static let orientationKeys = ["north", "algorithm", "gain", "mag_offset", "mag_matrix"]

    /// "0x76" or "auto" → an address (nil = auto); reports anything else.
    mutating func address(_ s: ConfigSection, _ key: String) -> UInt8?? {
        guard let (text, line) = string(s, key) else { return nil }
        if text == "auto" { return .some(nil) }
        let lower = text.lowercased()
        if lower.hasPrefix("0x"), let v = UInt8(lower.dropFirst(2), radix: 16), (0x08...0x77).contains(v) { return .some(v) }
        fail(
            line,
            "\(key) = \(ConfigValue.quote(text)) in \(s.title) must be a 7-bit I²C address in hex from \"0x08\" "
                + "to \"0x77\" (as i2cdetect shows it), or \"auto\"")
        return nil
    }

    mutating func chipName(_ s: ConfigSection, _ key: String, _ known: [String]) -> String? {
        guard let (text, line) = string(s, key) else { return nil }
        if text == "auto" || text == "none" { return text }
        let c = KnownChips.canonical(text)
        if known.contains(where: { KnownChips.canonical($0) == c }) { return c }
        fail(
            line,
            "\(key) = \(ConfigValue.quote(text)) in \(s.title) is not a chip osh-edge drives"
                + "\(Self.hint(c, known, quoted: true)); known: \(known.joined(separator: ", ")), or \"auto\" or \"none\" "
                + "(`osh-edge probe` lists what is on the bus)")
        return nil
    }

    mutating func numbers(_ s: ConfigSection, _ key: String, count: Int) -> [Double]? {
        guard let e = s.entry(key) else { return nil }
        if case .array(let items) = e.value, items.count == count {
            var out: [Double] = []
            for i in items {
                switch i {
                case .integer(let v): out.append(Double(v))
                case .decimal(let v): out.append(v)
                default: break
                }
            }
            if out.count == count, out.allSatisfy({ $0.isFinite }) { return out }
        }
        fail(
            e.line,
            "'\(key)' in \(s.title) must be a list of \(count) numbers, as [\(Array(repeating: "0", count: min(count, 3)).joined(separator: ", "))\(count > 3 ? ", …" : "")]"
        )
        return nil
    }

    /// `[gps]`: the receiver's device and baud, or a gpsd to read instead.
    mutating func readGPS(_ s: ConfigSection, into gps: inout GPSSettings) {
        if let (dev, line) = string(s, "device") {
            if let problem = Self.pathProblem(dev) { fail(line, "device in [gps] \(problem)") } else { gps.device = dev }
        }
        if let b = integer(s, "baud", 0...921_600) {
            if b == 0 || GPSSettings.bauds.contains(b) {
                gps.baud = b
            } else {
                fail(
                    s.entries.first { $0.key == "baud" }?.line,
                    "baud in [gps] must be 0 (automatic) or one of " + GPSSettings.bauds.map(String.init).joined(separator: ", "))
            }
        }
        if let (g, line) = string(s, "gpsd") {
            if g.isEmpty {
                gps.gpsd = nil
            } else if let a = GPSDAddress(g) {
                gps.gpsd = a
            } else {
                fail(
                    line,
                    "gpsd in [gps] must be HOST:PORT with a numeric address, e.g. \"127.0.0.1:2947\", or \"\" to read the device")
            }
        }
    }

    mutating func readDevices(_ s: ConfigSection, kind: String, into d: inout DeviceConfig) {
        switch kind {
        case "i2c":
            if let v = integer(s, "bus", 0...255) { d.i2c.bus = v }
        case "barometer":
            if let c = chipName(s, "chip", chips.barometerNames) { d.barometer.chip = c }
            if let a = address(s, "address") { d.barometer.address = a }
            if let o = choice(s, "oversampling", BarometerOversampling.allCases.map { ($0.rawValue, $0) }) { d.barometer.oversampling = o }
        case "hygrometer":
            if let c = chipName(s, "chip", chips.hygrometerNames) { d.hygrometer.chip = c }
            if let a = address(s, "address") { d.hygrometer.address = a }
        case "imu":
            if let c = chipName(s, "chip", chips.imuNames) { d.imu.chip = c }
            if let a = address(s, "address") { d.imu.address = a }
            if let c = chipName(s, "magnetometer", chips.magnetometerNames) { d.imu.magnetometer = c }
            if let a = address(s, "magnetometer_address") { d.imu.magnetometerAddress = a }
            if let v = integer(s, "accel_range", 2...16) {
                if let r = AccelRange(g: v) {
                    d.imu.accelRange = r
                } else {
                    fail(s.entry("accel_range")?.line, "accel_range in [imu] must be 2, 4, 8 or 16 (g)")
                }
            }
            if let v = integer(s, "gyro_range", 250...2000) {
                if let r = GyroRange(dps: v) {
                    d.imu.gyroRange = r
                } else {
                    fail(s.entry("gyro_range")?.line, "gyro_range in [imu] must be 250, 500, 1000 or 2000 (degrees per second)")
                }
            }
            if let v = bool(s, "fifo") { d.imu.fifo = v }
            if let (m, line) = string(s, "mounting") {
                do { d.imu.mounting = try AxisMap(commaSeparated: m) } catch {
                    fail(
                        line,
                        "mounting = \(ConfigValue.quote(m)) in [imu]: \(error); write three signed axes, "
                            + "as \"+x,+y,+z\" (as printed) or \"-y,+x,+z\" (board turned 90° left)")
                }
            }
        case "orientation":
            if let a = choice(s, "algorithm", FusionAlgorithm.allCases.map { ($0.rawValue, $0) }) { d.fusion.algorithm = a }
            if let g = number(s, "gain", 0...10, unit: "(0 = the algorithm's default)") { d.fusion.gain = g }
            if let o = numbers(s, "mag_offset", count: 3) { d.fusion.magOffset = o }
            if let m = numbers(s, "mag_matrix", count: 9) { d.fusion.magMatrix = m }
        case "audio":
            if let (dev, _) = string(s, "device") { d.audio.device = dev }
            if let w = number(s, "window", 0.1...1, unit: "seconds") { d.audio.window = w }
        case "camera":
            if let (dev, line) = string(s, "device") {
                if [VideoSettings.testPattern, CameraDiscovery.auto, CameraDiscovery.libcamera].contains(dev) {
                    d.camera.device = dev
                } else if let problem = Self.pathProblem(dev) {
                    fail(line, "device in [camera] \(problem), \"auto\", \"libcamera\" or \"test-pattern\"")
                } else {
                    d.camera.device = dev
                }
            }
            if let v = integer(s, "width", 160...1920) {
                if v % 16 == 0 || v % 8 == 0 {
                    d.camera.width = v
                } else {
                    fail(s.entry("width")?.line, "width in [camera] must be a multiple of 8")
                }
            }
            if let v = integer(s, "height", 120...1080) {
                if v % 8 == 0 {
                    d.camera.height = v
                } else {
                    fail(s.entry("height")?.line, "height in [camera] must be a multiple of 8 (1080 is allowed)")
                }
            }
            if let e = choice(s, "encoder", CameraConfig.encoders) { d.camera.encoder = e }
            if let v = integer(s, "keyframe_interval", 1...250) { d.camera.keyframeInterval = v }
            if let v = integer(s, "bitrate", 100...25_000) { d.camera.bitrateKbps = v }
            if let v = integer(s, "threads", 0...16) { d.camera.threads = v }
        case "ptz":
            if let c = chipName(s, "chip", ["PCA9685"]) { d.ptz.chip = c == "auto" ? "PCA9685" : c }
            if let a = address(s, "address") { d.ptz.address = a ?? 0x40 }
            if let v = integer(s, "pan_channel", 0...15) { d.ptz.panChannel = v }
            if let v = integer(s, "tilt_channel", 0...15) { d.ptz.tiltChannel = v }
            if let v = numbers(s, "pulse", count: 2) { d.ptz.pulse = v }
            if let v = numbers(s, "degrees", count: 2) { d.ptz.degrees = v }
            if let v = numbers(s, "pan_limits", count: 2) { d.ptz.panLimits = v }
            if let v = numbers(s, "tilt_limits", count: 2) { d.ptz.tiltLimits = v }
            if let v = number(s, "max_speed", 0...1000, unit: "degrees per second (0 = one step)") { d.ptz.maxSpeed = v }
        case "led":
            if let (c, line) = string(s, "chip") {
                if let p = LEDSettings.chipProblem(c) { fail(line, "chip in [led]: \(p)") } else { d.led.chip = c }
            }
            if let v = integer(s, "line", 0...LEDSettings.maxLine) { d.led.line = v }
            if let v = bool(s, "active_low") { d.led.activeLow = v }
        default: break
        }
    }
}

/// `[ptz]`: a pan-tilt unit on a PCA9685 servo driver (off when chip is "none").
public struct PTZConfig: Sendable, Equatable {
    public var chip = "none"
    public var address: UInt8 = 0x40
    public var panChannel = 0
    public var tiltChannel = 1
    /// Pulse widths (µs) at the calibrated ends, and the degrees they mean.
    public var pulse: [Double] = [500, 2500]
    public var degrees: [Double] = [-90, 90]
    public var panLimits: [Double] = [-90, 90]
    public var tiltLimits: [Double] = [-45, 45]
    /// Degrees per second (0 = move in one step).
    public var maxSpeed = 60.0
    public init() {}
}

/// Every hardware section together.
public struct DeviceConfig: Sendable, Equatable {
    public var i2c = I2CConfig()
    public var barometer = BarometerConfig()
    public var hygrometer = HygrometerConfig()
    public var imu = IMUConfig()
    public var fusion = FusionConfig()
    public var audio = AudioConfig()
    public var camera = CameraConfig()
    /// Off unless configured: a line driven on a board with something else on it could harm it.
    public var led = LEDSettings(chip: "")
    public var ptz = PTZConfig()
    public init() {}
}
