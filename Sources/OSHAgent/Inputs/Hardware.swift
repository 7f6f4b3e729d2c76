import OSHCore
import OSHPlatform
#if canImport(Glibc)
import Glibc
#endif

/// Which device stands behind each group of outputs, and whether it is the board's own or a
/// simulated one (the demo's chips on a simulated I²C bus, a WAV through ALSA's file plugin, a
/// generated test pattern) — the same drivers either way.
public struct HardwarePlan: Sendable {
    public enum Source: Sendable, Equatable { case board, simulated }

    /// The camera recorded faster than it streams: it encodes at the recording's rate with a key
    /// frame every live interval, and only the key frames go live (a P-frame cannot be thinned).
    public mutating func recordCamera(liveFPS: Double, recordFPS: Double) {
        guard recordFPS > liveFPS, liveFPS > 0 else { return }
        cameraFPS = recordFPS
        devices.camera.keyframeInterval = max(1, Int((recordFPS / liveFPS).rounded()))
    }

    public var devices = DeviceConfig()
    /// nil: the group is off.
    public var barometer: Source?
    public var imu: Source?
    public var audio: Source?
    /// The WAV a simulated microphone plays (looped, in real time).
    public var audioWAV: String?
    public var camera: Source?
    public var cameraFPS: Double = 10
    /// A pan-tilt unit ([ptz] chip = "PCA9685").
    public var ptz: Source?
    /// The GPS receiver behind gps_data (serial NMEA or gpsd); nil: none (the demo simulates positions).
    public var gps: GPSInputConfig?
    /// Receiver times before this (epoch seconds) are not trusted: the build's date.
    public var notBefore: Double = 1_767_225_600  // 2026-01-01
    public var barometerRate: Double = 1
    /// The enabled outputs the barometer feeds (for the notes when it is absent).
    public var barometerOutputs: [String] = []
    /// The IMU and its filter run at this rate; outputs are thinned to their own rates.
    public var imuRate: Double = 100
    /// The publisher's flush interval: how often the IMU reads its FIFO (capped per chip).
    public var flushInterval: Double = 0.25
    /// The magnetometer output's rate, 0 when it is off: its observations need a burst each.
    public var magnetometerRate: Double = 0
    public var north: NorthReference = .true
    /// Scratch space for ALSA's file-plugin configuration (simulated audio).
    public var scratchDirectory = "/tmp"
    public init() {}

    /// The chips the demo simulates.
    public static let demoBarometer = "BMP280"
    public static let demoIMU = "MPU9250"
    /// The barometer a simulated group runs on (the demo's unless a test chooses another).
    public var simulatedBarometer = HardwarePlan.demoBarometer
    /// The hygrometer behind `temperature` and `humidity` (nil: off; the barometer feeds
    /// temperature). With `[hygrometer] chip = "auto"` nothing found is not a problem.
    public var hygrometer: Source?
    public var hygrometerRate: Double = 1
    public static let demoHygrometer = "SHT4x"
}

/// The board's sources: opens the devices before registration (a chip that does not answer
/// leaves its outputs out of the node), keeps them as one table of `ObservationSource`s, and
/// connects each to its outputs' ports: barometer → `barometer`; IMU → raw inertial outputs and,
/// through the orientation filter (+ WMM declination at the GPS fix), quat and euler; ALSA →
/// `audio_level`; GPS → `gps_data`; camera → encoder → the video path; pan-tilt unit →
/// `ptz_position`. It holds the runtime's ports and paths, never the runtime.
public final class Hardware {
    public let plan: HardwarePlan
    /// The devices that were found, each with the outputs it feeds.
    public private(set) var sources: [ObservationSource] = []
    /// Outputs a live device feeds.
    public var feeds: [OutputKind] { sources.flatMap(\.feeds) }
    /// What was not found or not usable, one line each, for the log and the demo.
    public private(set) var notes: [String] = []
    public private(set) var barometerChip: String?
    public private(set) var hygrometerChip: String?
    public private(set) var imuChip: String?
    public private(set) var magnetometerChip: String?
    public var hasVideo: Bool { video != nil }
    /// A device that was found is failing now (the LED's double blink).
    public var sensorFault: Bool { sources.contains { $0.isFaulted } }

    private let loop: EventLoop
    private var simulatedBus: I2CBus?
    private var boardBus: I2CBus?
    private var barometer: BarometerInput?
    private var hygrometer: HygrometerInput?
    private var imu: IMUInput?
    private var audio: AudioInput?
    private var video: VideoInput?
    /// The agent must start again (a libcamera camera was lost): set by the daemon.
    public var onRestartNeeded: (() -> Void)?
    private var gps: GPSInput?
    private var ptz: PTZInput?
    /// The IMU's samples → the inertial outputs (the orientation filter runs here).
    private let orientation: OrientationStage

    public init(loop: EventLoop, plan: HardwarePlan) {
        self.loop = loop
        self.plan = plan
        orientation = OrientationStage(plan: plan)
    }

    /// Opens every planned device into the table. Absence and failures become notes; nothing here
    /// throws for a missing chip — the board runs with what it has.
    public func open() {
        if plan.barometer != nil || plan.imu != nil || plan.hygrometer != nil { openBus() }
        openHygrometer()
        openBarometer()
        openIMU()
        openAudio()
        if let source = plan.ptz { openPTZ(source) }
        openGPS()
        openCamera()
    }

    /// The barometer: `barometer`, and temperature (humidity for a BME280) when no hygrometer answered.
    private func openBarometer() {
        guard let source = plan.barometer, let bus = bus(for: source) else { return }
        let d = plan.devices
        if source == .simulated, let sim = simulation(bus) {
            note(try sim.attachBarometer(chip: plan.simulatedBarometer, to: bus), "simulated barometer")
        }
        let settings = BarometerSettings(
            bus: d.i2c.bus, chip: source == .simulated ? plan.simulatedBarometer : d.barometer.chip,
            address: source == .simulated ? nil : d.barometer.address, rateHz: plan.barometerRate,
            oversampling: d.barometer.oversampling)
        do {
            let b = try BarometerInput(loop: loop, bus: bus, settings: settings)
            if b.absentAtStart != nil { noteLate("barometer \(b.driver.identity.name)") }
            barometer = b
            barometerChip = b.driver.identity.name
            sources.append(b)
        } catch {
            // Temperature and humidity do not depend on it when a hygrometer answered.
            let lost = plan.barometerOutputs.filter { hygrometer == nil || OutputKind(rawValue: $0)?.declaration?.device != .climate }
            notes.append(
                "barometer: \(error)"
                    + ((error as? I2CError)?.isAbsent == true
                        ? "; " + (lost.isEmpty ? "barometer" : lost.joined(separator: ", ")) + " not published" : ""))
        }
    }

    /// The IMU (with its magnetometer): the inertial outputs, orientation through the filter.
    private func openIMU() {
        guard let source = plan.imu, let bus = bus(for: source) else { return }
        let d = plan.devices
        if source == .simulated, let sim = simulation(bus) {
            note(try sim.attachIMU(chip: HardwarePlan.demoIMU, to: bus), "simulated IMU")
        }
        var settings = IMUSettings(
            bus: d.i2c.bus, chip: source == .simulated ? HardwarePlan.demoIMU : d.imu.chip,
            address: source == .simulated ? nil : d.imu.address,
            magnetometer: source == .simulated ? "auto" : d.imu.magnetometer,
            magnetometerAddress: d.imu.magnetometerAddress, rateHz: plan.imuRate)
        settings.accelRange = d.imu.accelRange
        settings.gyroRange = d.imu.gyroRange
        settings.pacing = d.imu.fifo ? .fifo : .timer
        settings.burstInterval = plan.flushInterval
        if plan.magnetometerRate > 0 { settings.magnetometerInterval = 1 / plan.magnetometerRate }
        if source == .board { settings.mounting = d.imu.mounting }
        do {
            let i = try IMUInput(loop: loop, bus: bus, settings: settings) { [orientation] s in orientation.sample(s) }
            imu = i
            imuChip = i.chipName
            magnetometerChip = i.magnetometerName
            sources.append(i)
            if i.absentAtStart != nil {
                noteLate("IMU \(i.chipName)")
            } else if !i.hasMagnetometer {
                notes.append("IMU \(i.chipName): no magnetometer; orientation runs without one (heading drifts)")
            }
        } catch {
            notes.append("IMU: \(error)" + ((error as? I2CError)?.isAbsent == true ? "; orientation outputs are not published" : ""))
        }
    }

    /// The microphone (ALSA), or a WAV replayed through ALSA's file plugin when simulated.
    private func openAudio() {
        guard let source = plan.audio else { return }
        let d = plan.devices
        let a: AudioInput?
        if source == .simulated {
            if let wav = plan.audioWAV, access(wav, R_OK) == 0 {
                do { a = try AudioInput(loop: loop, replayingWAV: wav, directory: plan.scratchDirectory, window: d.audio.window) } catch {
                    a = nil; notes.append("audio: cannot replay \(wav): \(error)")
                }
            } else {
                a = nil
                notes.append("audio: no WAV to replay (\(plan.audioWAV ?? "none given")); audio_level is not published")
            }
        } else {
            a = AudioInput(loop: loop, device: d.audio.device, window: d.audio.window)
        }
        if let a {
            audio = a
            sources.append(a)
        }
    }

    /// The GPS receiver: serial NMEA or gpsd (a replayed log in the demo).
    private func openGPS() {
        guard let g = plan.gps else { return }
        do {
            let input = try GPSInput(loop: loop, config: g, notBefore: plan.notBefore)
            gps = input
            sources.append(input)
        } catch {
            notes.append("GPS: \(error); gps_data gets no positions")
        }
    }

    /// The camera and its encoder (a test pattern when simulated).
    private func openCamera() {
        guard let source = plan.camera else { return }
        let c = plan.devices.camera
        var device = c.device
        var libcamera = false
        var waitForSensor = false
        if source == .board && device != VideoSettings.testPattern {
            switch CameraStart.decide(device: device) {
            case .v4l2(let path): device = path
            case .libcamera(let path, let cam):
                Log.notice("camera: \(cam.cameraDescription) through libcamera, node \(path)")
                device = path
                libcamera = true
            case .waitForSensor:
                libcamera = true
                waitForSensor = true
            case .restartWithLayer(_, let cam):
                return notes.append(
                    "camera: \(cam.cameraDescription) needs libcamera's V4L2 layer, which did not load; camera0_H264 is not published")
            case .unavailable(let why): return notes.append("camera: \(why); camera0_H264 is not published")
            }
        }
        let settings = VideoSettings(
            device: source == .simulated ? VideoSettings.testPattern : device,
            width: c.width, height: c.height, fps: plan.cameraFPS,
            keyFrameInterval: c.keyframeInterval, bitrateKbps: c.bitrateKbps, threads: c.threads,
            encoder: c.encoder)
        do {
            let v = try VideoInput(loop: loop, settings: settings)
            if libcamera {
                v.onLibcameraCameraLost = { [weak self] in self?.onRestartNeeded?() }
                if waitForSensor { v.sensorNode = { CameraStart.sensorNode(device: c.device) } }
            }
            video = v
            sources.append(v)
        } catch {
            notes.append("camera: \(error); camera0_H264 is not published")
        }
    }

    /// A hygrometer first: when one answers it feeds `temperature` and `humidity`, not the barometer.
    private func openHygrometer() {
        guard let source = plan.hygrometer, let bus = bus(for: source) else { return }
        let d = plan.devices
        if source == .simulated, let sim = simulation(bus) {
            note(try sim.attachHygrometer(chip: HardwarePlan.demoHygrometer, to: bus), "simulated hygrometer")
        }
        let settings = HygrometerSettings(
            bus: d.i2c.bus, chip: source == .simulated ? HardwarePlan.demoHygrometer : d.hygrometer.chip,
            address: source == .simulated ? nil : d.hygrometer.address, rateHz: plan.hygrometerRate)
        do {
            let h = try HygrometerInput(loop: loop, bus: bus, settings: settings)
            if h.absentAtStart != nil { noteLate("hygrometer \(h.driver.identity.name)", outputs: "temperature and humidity are") }
            hygrometer = h
            hygrometerChip = h.driver.identity.name
            sources.append(h)
        } catch let e as I2CError where e.isAbsent && settings.chip == "auto" {
            // Looked for because temperature or humidity is on; the barometer feeds temperature.
            Log.info("hygrometer: none found (\(e.operation)); temperature comes from the barometer")
        } catch {
            notes.append("hygrometer: \(error)")
        }
    }

    /// The pan-tilt unit's output, when one answered.
    public var extraSpecs: [OutputSpec] { ptz.map { [$0.outputSpec] } ?? [] }

    /// The pan-tilt unit's control stream, when one answered.
    public func extraControls(systemLabel: String) -> [AgentRuntime.ExtraControl] {
        ptz.map { [$0.control(systemLabel: systemLabel)] } ?? []
    }

    private func openPTZ(_ source: HardwarePlan.Source) {
        let p = plan.devices.ptz
        let bus: I2CBus?
        if source == .simulated {
            guard let b = simulated(), let sim = simulation(b) else { return }
            do { try sim.attachPTZ(address: p.address, to: b) } catch { notes.append("simulated pan-tilt: \(error)") }
            bus = b
        } else {
            if boardBus == nil { openBus(force: true) }
            bus = boardBus
        }
        guard let bus else { return }
        do {
            let unit = PTZInput(
                loop: loop,
                controller: try PTZController(driver: PCA9685(bus: bus, address: p.address), calibration: PTZInput.calibration(p)))
            ptz = unit
            sources.append(unit)
        } catch {
            notes.append("pan-tilt: \(error); ptz_control and ptz_position are not published")
        }
    }

    /// The pan-tilt controller (tests look at where it points).
    public var ptzController: PTZController? { ptz?.controller }

    /// The output options for what was found (chip names appear in output names and labels).
    public func options(_ base: OutputOptions) -> OutputOptions {
        var o = base
        // The inertial names derive from the chips at init, so a found IMU means new options.
        if let c = imuChip {
            o = OutputOptions(
                uid: o.uid, north: o.north, videoWidth: o.videoWidth, videoHeight: o.videoHeight,
                cameraIndex: o.cameraIndex, imuChip: c,
                magnetometerChip: magnetometerChip ?? ChipTable.known.builtInMagnetometer(c) ?? c,
                barometerChip: o.barometerChip)
        }
        if let b = barometerChip { o.barometerChip = b }
        o.climateChip = hygrometerChip ?? o.barometerChip
        if let v = video {
            o.videoWidth = v.pictureSize?.width ?? plan.devices.camera.width
            o.videoHeight = v.pictureSize?.height ?? plan.devices.camera.height
        }
        return o
    }

    /// The output names a runtime will publish for what was found (inertial ones carry the chip's name).
    public func catalogueNames(_ options: OutputOptions) -> [String] {
        let kinds = feeds
        return (OutputCatalogue.all(options) + extraSpecs).filter { kinds.contains($0.kind) }.map(\.outputName)
    }

    /// Points the sources at `agent`'s ports and paths (checking each sample type against its
    /// record) and starts the devices. Nothing here keeps the runtime itself.
    public func start(feeding agent: AgentRuntime) throws {
        // Each input takes its own outputs, in the table's order (a hygrometer before the
        // barometer); the IMU's go through the orientation stage.
        let outputs = OutputConnections(agent)
        try orientation.connect(outputs)
        for s in sources { try s.connect(outputs) }
        for s in sources { try s.start() }
        if plan.north == .true, imu != nil {
            Log.notice("orientation: true north once a GPS fix gives the declination; magnetic until then")
        }
    }

    public func stop() {
        for s in sources { s.stop() }
    }

    /// The simulated bus (tests reach the chips through it to inject faults).
    public var simulatedI2C: I2CBus? { simulatedBus }
    public var videoInput: VideoInput? { video }
    public var imuInput: IMUInput? { imu }
    public var barometerInput: BarometerInput? { barometer }
    public var hygrometerInput: HygrometerInput? { hygrometer }
    public var audioInput: AudioInput? { audio }
    /// What the GPS input is doing (status displays): "serial /dev/ttyACM0: receiving at 9600 baud".
    public var gpsState: String? { gps?.stateText }

    // MARK: Buses

    private func openBus(force: Bool = false) {
        if force || plan.barometer == .board || plan.imu == .board || plan.hygrometer == .board {
            do {
                boardBus = try LinuxI2CBus(number: plan.devices.i2c.bus, announcingUse: true)
            } catch { notes.append("I²C: \(error)") }
        }
    }

    /// The simulated bus, from the linked simulation; nil (and a note) when none is linked.
    private func simulated() -> I2CBus? {
        if let b = simulatedBus { return b }
        guard let sim = SimulationHooks.provider else {
            let line = "simulated devices: \(SimulationHooks.unavailable)"
            if !notes.contains(line) { notes.append(line) }
            return nil
        }
        let b = sim.makeI2CBus(number: plan.devices.i2c.bus)
        simulatedBus = b
        return b
    }

    /// The provider that made `bus` (only a simulated bus has one).
    private func simulation(_ bus: I2CBus) -> SimulationProvider? {
        bus === simulatedBus ? SimulationHooks.provider : nil
    }

    private func bus(for source: HardwarePlan.Source) -> I2CBus? {
        source == .simulated ? simulated() : boardBus
    }

    /// A chip the configuration names that did not answer at start: its input looks for it.
    private func noteLate(_ device: String, outputs: String = "its outputs are") {
        notes.append("\(device): not answering yet; \(outputs) registered and start when it answers (looked for on the backoff)")
    }

    private func note<T>(_ f: @autoclosure () throws -> T, _ what: String) {
        do { _ = try f() } catch { notes.append("\(what): \(error)") }
    }
}
