#if canImport(Glibc)
import Glibc
#endif
import OSHCore
import OSHPlatform

// `osh-edge probe`: what is attached to this board — chips on the I²C adapters (by address and
// ID register), ALSA capture devices, V4L2 cameras and encoders — and the config sections that
// would use them. Every source is injectable, so tests run it on a simulated bus and V4L2.

/// Where `Probe.run` looks. `system()` is the board; tests pass simulated ones.
public struct ProbeSources {
    /// N of every /dev/i2c-N present.
    public var adapters: () -> [Int]
    /// Opens /dev/i2c-N (throws `I2CError`).
    public var openBus: (Int) throws -> I2CBus
    public var audioDevices: () -> [AudioDeviceInfo]
    public var video: V4L2Device
    /// The serial ports a GPS may be on, and whether a gpsd answers on 127.0.0.1:2947.
    public var serialPorts: () -> [SerialPortInfo]
    public var gpsd: () -> Bool
    /// The media-controller devices (camera sensors that need libcamera), and libcamera's V4L2
    /// layer's path when installed.
    public var media: () -> [MediaDeviceInfo] = { [] }
    public var libcameraLayer: () -> String? = { nil }
    /// Whether the running agent announced that it reads chips on the bus just opened.
    public var agentUsesBus: (I2CBus) -> Bool = { _ in false }

    public init(
        adapters: @escaping () -> [Int], openBus: @escaping (Int) throws -> I2CBus,
        audioDevices: @escaping () -> [AudioDeviceInfo], video: V4L2Device,
        serialPorts: @escaping () -> [SerialPortInfo] = { [] }, gpsd: @escaping () -> Bool = { false }
    ) {
        self.adapters = adapters
        self.openBus = openBus
        self.audioDevices = audioDevices
        self.video = video
        self.serialPorts = serialPorts
        self.gpsd = gpsd
    }

    public static func system() -> ProbeSources {
        var s = ProbeSources(
            adapters: { LinuxI2CBus.adapters() }, openBus: { try LinuxI2CBus(number: $0) },
            audioDevices: { ALSADevices.captureDevices() }, video: SystemV4L2(),
            serialPorts: { SerialPortList.ports() }, gpsd: { SerialPortList.gpsdAnswers() })
        s.media = { MediaDevices.list() }
        s.libcameraLayer = { LibcameraLayer.find() }
        s.agentUsesBus = { ($0 as? LinuxI2CBus)?.isAnnouncedByAnotherProcess() ?? false }
        return s
    }
}

/// A chip identified on a bus.
public struct ProbeChip: Sendable, Equatable {
    public var name: String
    public var kind: I2CChipIdentity.Kind
    public var address: UInt8
    /// The ID register and what it read; nil for chips known by address only (PCA9685).
    public var idRegister: UInt8?
    public var idValue: UInt8?
    /// False when only the address says what it is (no ID register to check).
    public var identifiedByID: Bool
    public var note: String
}

/// Something answered at a known chip's address but its ID register named none of them.
public struct ProbeUnidentified: Sendable, Equatable {
    public var address: UInt8
    /// What was read and what the chips owning the address would have said,
    /// e.g. "register 0xD0 = 0x55 (BMP280 0x58/0x56/0x57, BME280 0x60)".
    public var reads: [String]
}

public struct ProbeBus: Sendable {
    public var number: Int
    /// Why the adapter could not be opened (nil: it was scanned).
    public var error: String?
    public var chips: [ProbeChip] = []
    public var unidentified: [ProbeUnidentified] = []
    /// Addresses that answered with a bus error (not a NACK), with the message.
    public var faults: [String] = []
    /// `--dump`: each barometer's bytes and decoded values.
    public var barometerDumps: [BarometerProbeResult] = []
    /// The running agent reads chips here: the scan only read ID registers.
    public var agentUsesIt = false
    /// What the scan left undone, and why (sentences for the reader).
    public var notDone: [String] = []
}

public struct ProbeReport: Sendable {
    public var buses: [ProbeBus]
    /// Set when there is no I²C adapter to scan: how to enable one.
    public var i2cHint: String?
    public var audio: [AudioDeviceInfo]
    public var video: [V4L2DeviceInfo]
    public var serialPorts: [SerialPortInfo] = []
    public var gpsdAnswers = false
    /// Camera sensors behind a media controller (a Camera Module, vimc): libcamera's.
    public var cameraSensors: [MediaDeviceInfo] = []
    /// libcamera's V4L2 layer: its path when installed, and whether this process has it loaded
    /// (then the sensors' nodes answer as libcamera's camera, named by its id).
    public var libcameraLayer: String?
    public var libcameraLayerLoaded = false
    /// Ready to paste into /etc/osh-edge/osh-edge.conf (parses with AgentSettings.parse once a
    /// [server.NAME] is there).
    public var configSections: String
    /// Notes about the suggested config (chips on two buses, a second barometer…).
    public var configNotes: [String]
}

public enum Probe {
    public static let enableI2CHint =
        "no I²C adapter (/dev/i2c-*) on this machine; on a Raspberry Pi enable it with "
        + "dtparam=i2c_arm=on in /boot/firmware/config.txt (or raspi-config → Interface Options → I2C) and reboot; "
        + "elsewhere load the i2c-dev module (modprobe i2c-dev)"

    /// PCA9685 servo drivers: no ID register, so only the address (0x40, the default strap) hints at one.
    static let pca9685 = I2CChipIdentity(
        name: "PCA9685", kind: .servoDriver, addresses: [PCA9685.defaultAddress], idRegister: nil,
        idValues: [], note: "known by address only (no ID register): anything at 0x40 looks like one")

    /// With a camera sensor present and libcamera's V4L2 layer installed, starts this process
    /// again with the layer, so the sensor's nodes answer as libcamera's camera (its id, its
    /// formats). Returns when there is nothing to do, or when that failed.
    public static func restartWithLibcameraLayerIfUseful() {
        guard !LibcameraLayer.isLoaded, !LibcameraLayer.wasRestarted, let layer = LibcameraLayer.find(),
            MediaDevices.list().contains(where: \.needsLibcamera)
        else { return }
        _ = LibcameraLayer.restart(with: layer)
    }

    /// Scans `bus` (nil: every adapter) and the audio/video devices. Never throws: what cannot be
    /// read becomes a message in the report. `dump` starts each barometer found to read one burst.
    public static func run(bus only: Int? = nil, dump: Bool = false, sources: ProbeSources = .system()) -> ProbeReport {
        var buses: [ProbeBus] = []
        var hint: String?
        let present = sources.adapters()
        let numbers: [Int]
        if let n = only { numbers = [n] } else { numbers = present }
        if numbers.isEmpty { hint = enableI2CHint }
        for n in numbers {
            do {
                let bus = try sources.openBus(n)
                buses.append(scan(bus, dump: dump, agentUsesIt: sources.agentUsesBus(bus)))
            } catch {
                buses.append(ProbeBus(number: n, error: "\(error)"))
            }
        }
        let audio = sources.audioDevices()
        let video = VideoInput.listDevices(sources.video)
        let sensors = sources.media().filter(\.needsLibcamera)
        let (config, notes) = suggestConfig(buses: buses, audio: audio, video: video, cameraSensors: sensors)
        var report = ProbeReport(buses: buses, i2cHint: hint, audio: audio, video: video, configSections: config, configNotes: notes)
        report.cameraSensors = sensors
        report.libcameraLayer = sources.libcameraLayer()
        report.libcameraLayerLoaded = LibcameraLayer.isLoaded
        report.serialPorts = sources.serialPorts()
        report.gpsdAnswers = sources.gpsd()
        return report
    }

    /// What a scan of a bus the running agent reads does not do.
    static let notDoneBesideAgent =
        "the running agent reads chips on this bus, so only ID registers were read: an SHT4x (found only by sending it "
        + "a command, which would take the agent's measurement from it) and a magnetometer behind an IMU's bypass switch "
        + "were not looked for; to see every chip, stop the agent (sudo systemctl stop osh-edge) and probe again"
    static let dumpNotDoneBesideAgent =
        "--dump was not done: it starts each barometer, which would change the settings of the one the agent reads; "
        + "stop the agent first (sudo systemctl stop osh-edge)"

    /// Every known chip on one bus. Reads ID registers; the writes are the MPU-9250's bypass bit,
    /// set to look for its AK8963 and put back, the SHT4x's read-serial-number command (it has no
    /// ID register) at its three addresses, and (with `dump`) barometer starts — none of them when
    /// `agentUsesIt` (a command or a setting would reach the chip between two of the agent's reads).
    public static func scan(_ bus: I2CBus, dump: Bool, agentUsesIt: Bool = false) -> ProbeBus {
        var result = ProbeBus(number: bus.number)
        result.agentUsesIt = agentUsesIt
        if agentUsesIt { result.notDone.append(notDoneBesideAgent) }
        var done: Set<UInt8> = []
        // IMUs first through the driver table (it knows the ICM-20948's register-bank quirk).
        for hit in IMUDrivers.probe(bus: bus) {
            result.chips.append(
                ProbeChip(
                    name: hit.identity.name, kind: hit.identity.kind, address: hit.address,
                    idRegister: hit.identity.idRegister, idValue: hit.whoAmI, identifiedByID: true,
                    note: hit.identity.note))
            done.insert(hit.address)
        }
        let all = BarometerDrivers.identities + IMUDrivers.identities + IMUDrivers.magnetometers
        var addresses: [UInt8] = []
        for id in all { for a in id.addresses where !addresses.contains(a) { addresses.append(a) } }
        for a in addresses.sorted() where !done.contains(a) {
            var reads: [(register: UInt8, value: UInt8, wanted: [String])] = []
            var seenRegisters: [UInt8: UInt8] = [:]
            address: for id in all where id.addresses.contains(a) {
                guard let reg = id.idRegister else { continue }
                let value: UInt8
                if let v = seenRegisters[reg] {
                    value = v
                } else {
                    do { value = try bus.readRegister(a, reg) } catch let e as I2CError {
                        if !e.isAbsent { result.faults.append("\(e)") }
                        break address
                    } catch { break address }
                    seenRegisters[reg] = value
                }
                if id.matches(id: value) {
                    result.chips.append(
                        ProbeChip(
                            name: id.name, kind: id.kind, address: a, idRegister: reg, idValue: value,
                            identifiedByID: true, note: id.note))
                    done.insert(a)
                    break
                }
                let want = "\(id.name) \(id.idValues.map(hex).joined(separator: "/"))"
                if let i = reads.firstIndex(where: { $0.register == reg }) {
                    reads[i].wanted.append(want)
                } else {
                    reads.append((reg, value, [want]))
                }
            }
            if !done.contains(a), !reads.isEmpty {
                result.unidentified.append(
                    ProbeUnidentified(
                        address: a,
                        reads: reads.map {
                            "register \(hex($0.register)) = \(hex($0.value)) (" + $0.wanted.joined(separator: ", ") + ")"
                        }))
            }
        }
        // Hygrometers without an ID register (the SHT4x): their driver's identify (a serial number
        // whose CRCs hold) at each of their addresses nothing else claimed.
        for chip in HygrometerDrivers.chips where !agentUsesIt {
            for a in chip.identity.addresses where !done.contains(a) {
                guard (try? chip.driver(bus: bus, address: a).identify()) != nil else { continue }
                result.chips.append(
                    ProbeChip(
                        name: chip.identity.name, kind: .hygrometer, address: a, idRegister: chip.identity.idRegister,
                        idValue: nil, identifiedByID: true, note: chip.identity.note))
                done.insert(a)
            }
        }
        // The MPU-9250 hides its AK8963 behind the bypass switch: open it, look, put it back.
        for chip in result.chips where chip.name == IMUDrivers.mpu9250.name && !agentUsesIt {
            if let ak = lookForAK8963(bus, mpu: chip.address), !result.chips.contains(where: { $0.address == ak.address }) {
                result.chips.append(ak)
            }
        }
        // PCA9685: by address only. MODE1 must read back something a PCA9685 could hold.
        if !done.contains(pca9685.addresses[0]), let mode1 = try? bus.readRegister(pca9685.addresses[0], 0x00) {
            result.chips.append(
                ProbeChip(
                    name: pca9685.name, kind: .servoDriver, address: pca9685.addresses[0], idRegister: nil,
                    idValue: nil, identifiedByID: false,
                    note: pca9685.note + " (MODE1 = \(hex(mode1))); used by the pan-tilt unit"))
        }
        result.chips.sort { $0.address < $1.address }
        if dump, agentUsesIt {
            result.notDone.append(dumpNotDoneBesideAgent)
        } else if dump {
            result.barometerDumps = probeBarometers(bus: bus)
        }
        return result
    }

    static func lookForAK8963(_ bus: I2CBus, mpu: UInt8) -> ProbeChip? {
        let ak = IMUDrivers.ak8963
        guard let pin = try? bus.readRegister(mpu, MPUDriver.Reg.intPinCfg),
            let user = try? bus.readRegister(mpu, MPUDriver.Reg.userCtrl)
        else { return nil }
        // Its I²C master running (another program reads the AK8963 through it): leave it alone.
        if user & MPUDriver.Reg.i2cMasterEnable != 0 { return nil }
        if pin & MPUDriver.Reg.bypassEnable == 0 {
            guard (try? bus.writeRegister(mpu, MPUDriver.Reg.intPinCfg, pin | MPUDriver.Reg.bypassEnable)) != nil else { return nil }
        }
        defer { if pin & MPUDriver.Reg.bypassEnable == 0 { try? bus.writeRegister(mpu, MPUDriver.Reg.intPinCfg, pin) } }
        guard let reg = ak.idRegister, let v = try? bus.readRegister(ak.addresses[0], reg), ak.matches(id: v) else { return nil }
        return ProbeChip(
            name: ak.name, kind: .magnetometer, address: ak.addresses[0], idRegister: reg, idValue: v,
            identifiedByID: true, note: "the MPU-9250's magnetometer, seen through its bypass switch")
    }

    static func hex(_ v: UInt8) -> String {
        let s = String(v, radix: 16, uppercase: true)
        return "0x" + (s.count == 1 ? "0" + s : s)
    }

    // MARK: The config it suggests

    /// The [i2c]/[barometer]/[imu]/[audio]/[camera] sections (and the outputs they feed) for
    /// what was found. Chips on several buses: the bus with the most known sensors wins.
    public static func suggestConfig(
        buses: [ProbeBus], audio: [AudioDeviceInfo], video: [V4L2DeviceInfo], cameraSensors: [MediaDeviceInfo] = []
    ) -> (String, [String]) {
        var lines: [String] = ["# osh-edge probe: replace these sections in /etc/osh-edge/osh-edge.conf"]
        var notes: [String] = []
        func sensors(_ b: ProbeBus) -> Int { b.chips.filter { [.barometer, .imu, .hygrometer].contains($0.kind) }.count }
        var outputs: [String] = []
        if let best = buses.filter({ sensors($0) > 0 }).max(by: {
            sensors($0) < sensors($1) || (sensors($0) == sensors($1) && $0.number > $1.number)
        }) {
            for other in buses where other.number != best.number && sensors(other) > 0 {
                notes.append("sensors on /dev/i2c-\(other.number) too; the agent reads one bus, /dev/i2c-\(best.number) here")
            }
            if best.agentUsesIt {
                notes.append(
                    "written while the running agent reads /dev/i2c-\(best.number): a chip only a command finds (an SHT4x) "
                        + "is not in it; stop the agent and probe again for the whole board")
            }
            lines += ["", "[i2c]", "bus = \(best.number)"]
            let baros = best.chips.filter { $0.kind == .barometer }
            if let b = baros.first {
                lines += ["", "[barometer]", "chip = \"\(b.name)\"", "address = \"\(hex(b.address))\""]
                // What the chip measures decides its outputs (the table's identity): every
                // barometer gives the air's temperature, a BME280 its humidity too.
                let measures = BarometerDrivers.identity(named: b.name)?.measures ?? [.pressure]
                outputs.append(OutputKind.barometer.settingsKey)
                if measures.contains(.temperature) { outputs.append(OutputKind.temperature.settingsKey) }
                if measures.contains(.humidity) { outputs.append(OutputKind.humidity.settingsKey) }
                if baros.count > 1 {
                    notes.append("\(baros.count) barometers on /dev/i2c-\(best.number); the first (\(b.name) at \(hex(b.address))) is used")
                }
            }
            if let h = best.chips.first(where: { $0.kind == .hygrometer }) {
                lines += ["", "[hygrometer]", "chip = \"\(h.name)\"", "address = \"\(hex(h.address))\""]
                for k in [OutputKind.temperature, .humidity] where !outputs.contains(k.settingsKey) { outputs.append(k.settingsKey) }
            }
            let imus = best.chips.filter { $0.kind == .imu }
            if let i = imus.first {
                lines += ["", "[imu]", "chip = \"\(i.name)\"", "address = \"\(hex(i.address))\""]
                let mags = best.chips.filter { $0.kind == .magnetometer }
                // What the driver table says of the IMU's magnetometer: inside the package (seen on
                // the bus, as the AK8963 in bypass, or not, as the ICM-20948's AK09916), fused on the
                // chip (BNO055), or a separate chip on the bus.
                let identity = IMUDrivers.identity(named: i.name)
                var hasMag = false
                if let own = identity?.builtInMagnetometer {
                    if own == i.name {
                        hasMag = true
                    } else if IMUDrivers.magnetometers.contains(where: { $0.name == own }) {
                        hasMag = mags.contains { $0.name == own }
                        lines.append("magnetometer = \"\(hasMag ? own : "none")\"")
                        if !hasMag { notes.append("the \(i.name) at \(hex(i.address)) showed no \(own) (a clone without one?)") }
                    } else {
                        hasMag = true
                        lines.append("magnetometer = \"\(own)\"")
                    }
                } else if let m = mags.first {
                    hasMag = true
                    lines += ["magnetometer = \"\(m.name)\"", "magnetometer_address = \"\(hex(m.address))\""]
                } else {
                    lines.append("magnetometer = \"none\"")
                }
                lines += [
                    "accel_range = 4", "gyro_range = 500",
                    "mounting = \"+x,+y,+z\"   # board axes → device axes; turn it to match how the board sits",
                ]
                outputs += OutputKind.inertial.filter { hasMag || $0 != .magnetometer }.map(\.settingsKey)
                if imus.count > 1 {
                    notes.append("\(imus.count) IMUs on /dev/i2c-\(best.number); the first (\(i.name) at \(hex(i.address))) is used")
                }
                if !hasMag {
                    notes.append("no magnetometer: orientation runs without heading (IMU-only fusion)")
                } else if !(identity?.measures.contains(.orientation) ?? false) {
                    notes.append("run `osh-edge calibrate mag` and put its two lines in [orientation]")
                }
            }
        }
        if let a = audio.first(where: { $0.name.hasPrefix("plughw:") }) ?? audio.first(where: { $0.name.hasPrefix("hw:") }) ?? audio.first {
            lines += ["", "[audio]", "device = \"\(a.name)\"", "window = 0.1"]
            outputs.append(OutputKind.audioLevel.settingsKey)
        }
        // A camera sensor first (as device = "auto" does): through libcamera, named by the word.
        let sensorNodes = Set(cameraSensors.flatMap(\.videoNodes))
        let sensorCam = video.first { $0.role == .camera && sensorNodes.contains($0.path) }
        if let cam = sensorCam ?? video.first(where: { $0.role == .camera }) {
            // A sensor's raw node lists the sensor's sizes, not what libcamera's pipeline gives.
            let throughLibcamera = sensorNodes.contains(cam.path)
            let size = throughLibcamera ? V4L2FrameSize(width: 640, height: 480) : cameraSize(cam)
            let hasEncoder = video.contains { $0.role == .h264Encoder }
            let device = throughLibcamera ? CameraDiscovery.libcamera : cam.path
            lines += [
                "", "[camera]", "device = \"\(device)\"", "width = \(size.width)", "height = \(size.height)",
                "encoder = \"\(hasEncoder ? "v4l2m2m" : "x264")\"",
            ]
            outputs.append(OutputKind.video.settingsKey)
            let codecs = video.filter { $0.role == .m2mCodec }
            if !hasEncoder && !codecs.isEmpty {
                notes.append(
                    "no usable H.264 encoder (" + codecs.map { "\($0.path) (\($0.card)) \($0.note)" }.joined(separator: "; ")
                        + "); the camera uses libx264")
            }
        }
        for o in outputs { lines += ["", "[outputs.\(o)]", "enabled = true"] }
        if outputs.isEmpty { lines.append("# nothing found that osh-edge can use") }
        return (lines.joined(separator: "\n") + "\n", notes)
    }

    /// What the agent would make of this camera at the suggested size: the format it takes (by
    /// the same choice as at run time) and the encoder, in a line for `probe`.
    public static func cameraPlan(
        _ cam: V4L2DeviceInfo, encoders: [V4L2DeviceInfo], boardModel: String? = BoardIdentity.readModel()
    )
        -> String
    {
        let size = cameraSize(cam)
        let choice = CaptureFormatChoice.choose(offered: cam.formats.map(\.fourCC)) { fourCC in
            cam.formats.first { $0.fourCC == fourCC }?.offers(size) ?? true
        }
        switch choice {
        case .unsupported(let why): return "nothing: \(why)"
        case .use(let format):
            let m2m = encoders.first { $0.role == .h264Encoder }
            let (kind, reason) = VideoEncoderDecision.decide(
                captureFormat: format, m2mDevice: m2m?.path, m2mCard: m2m?.card ?? "", preference: .auto, boardModel: boardModel)
            let decoded = format == .mjpeg ? " (decoded by libv4lconvert)" : ""
            return "\(format.fourCC) \(size)\(decoded), encoder \(kind?.name ?? "none") — \(reason)"
        }
    }

    /// 640×480 when the camera has it, else the smallest size the config accepts (≥ 160×120,
    /// ≤ 1920×1080, width a multiple of 8, height of 8).
    static func cameraSize(_ cam: V4L2DeviceInfo) -> V4L2FrameSize {
        let sizes = cam.formats.flatMap(\.sizes)
        let ok = sizes.filter {
            (160...1920).contains($0.width) && (120...1080).contains($0.height) && $0.width % 8 == 0 && $0.height % 8 == 0
        }
        if ok.contains(V4L2FrameSize(width: 640, height: 480)) || ok.isEmpty { return V4L2FrameSize(width: 640, height: 480) }
        return ok.min { $0.width * $0.height < $1.width * $1.height } ?? V4L2FrameSize(width: 640, height: 480)
    }
}

extension JSONWriter {
    /// An already-encoded JSON value (the decode result's own object).
    mutating func rawJSON(_ s: String) {
        var copy = s
        copy.withUTF8 { rawValue(UnsafeRawBufferPointer($0)) }
    }
}

extension String {
    func padded(_ n: Int) -> String { count >= n ? self : self + String(repeating: " ", count: n - count) }
}
