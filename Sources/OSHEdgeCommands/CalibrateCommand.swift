// calibrate mag: guides the user through turning the board and prints the
// magnetometer correction for [orientation] (parsing and printing only; the work is
// OSHAgent's MagCalibrationSession/MagCalibrationRun).
#if canImport(Glibc)
import Glibc
#endif
import OSHAgent
import OSHCore
import OSHPlatform

/// A simulated board to calibrate: its bus and the hard-iron offset it carries (osh-edge-dev links one).
public struct LinkedMagSimulation {
    public var bus: () throws -> I2CBus
    public var offset: Vector3
    public init(bus: @escaping () throws -> I2CBus, offset: Vector3) {
        self.bus = bus
        self.offset = offset
    }
}

public func runCalibrateCommand(_ args: [String], simulatedBoard: LinkedMagSimulation? = nil) {
    var a = Arguments(rest: args)
    guard a.positional() == "mag" else {
        fail(
            "usage: \(programName) calibrate mag [--seconds S] [--json] [--config FILE] [--bus N] [--chip NAME] [--address 0xNN] [--simulated]"
        )
    }
    let json = a.flag("--json")
    let simulated = a.flag("--simulated")
    let secondsText = a.value("--seconds")
    let configPath = a.value("--config")
    let busText = a.value("--bus"), chip = a.value("--chip"), addressText = a.value("--address")
    a.finish()
    let seconds = secondsText.map { Double($0) ?? -1 } ?? 60
    guard seconds > 0, seconds <= 3600 else { fail("--seconds must be a number of seconds, more than 0 and up to 3600") }

    var settings = IMUSettings()
    let bus: I2CBus
    if simulated {
        guard let board = simulatedBoard else {
            fail("--simulated: this binary has no simulation linked; use osh-edge-dev calibrate mag --simulated")
        }
        settings.chip = IMUDrivers.mpu9250.name
        do { bus = try board.bus() } catch { fail("\(error)", code: 1) }
    } else {
        settings = imuSettings(configPath: configPath)
        if let t = busText {
            guard let n = Int(t), n >= 0 else { fail("--bus takes the N of /dev/i2c-N, not '\(t)'") }
            settings.bus = n
        }
        if let c = chip { settings.chip = c }
        if let t = addressText {
            guard let v = IMUSettings.parseAddress(t) else { fail("--address must be a 7-bit I²C address such as 0x68, not '\(t)'") }
            settings.address = v
        }
        if settings.chip.lowercased() == "none" {
            fail("the configuration disables the IMU ([imu] chip = \"none\"); give --chip NAME or auto", code: 1)
        }
        let board: LinuxI2CBus
        do { board = try LinuxI2CBus(number: settings.bus) } catch { fail("\(error)", code: 1) }
        // Calibrating resets and configures the IMU and drains its FIFO: beside the running agent
        // both would read half the samples, and the agent's orientation would jump.
        if board.isAnnouncedByAnotherProcess() {
            fail(
                "the running agent reads the IMU on /dev/i2c-\(settings.bus); stop it first (sudo systemctl stop osh-edge), "
                    + "calibrate, then start it again (sudo systemctl start osh-edge)", code: 1)
        }
        bus = board
    }

    let interactive = isatty(1) != 0 && !json
    let outcome: MagCalibrationOutcome
    do {
        let loop = try EventLoop()
        var sleep: (Double) -> Void = IMUDrivers.systemSleep
        if simulated { sleep = { _ in } }
        let session = MagCalibrationSession()
        let run: MagCalibrationRun = try MagCalibrationRun(loop: loop, bus: bus, settings: settings, session: session, sleep: sleep)
        if !json {
            print(
                "\(run.input.chipName) + \(run.input.magnetometerName ?? "?") on /dev/i2c-\(bus.number)"
                    + (simulatedBoard.map {
                        simulated
                            ? " (simulated, hard-iron offset \($0.offset.x), "
                                + "\($0.offset.y), \($0.offset.z) µT)" : ""
                    } ?? ""))
            print("Turn the board slowly through every orientation: each face up, each face down, and around;")
            print(
                "keep it away from steel and magnets. Up to \(fixed(seconds, seconds < 10 ? 1 : 0)) s, stops at \(Int(run.session.targetCoverage * 100)) % coverage."
            )
        }
        outcome = try run.run(seconds: seconds) { coverage, samples, elapsed in
            guard interactive else { return }
            let line = "\r\u{1B}[Kcoverage \(Int((coverage * 100).rounded())) %  \(samples) readings  \(Int(elapsed)) s"
            var l = line
            l.withUTF8 { _ = write(1, $0.baseAddress, $0.count) }
        }
        if interactive { print("") }
    } catch {
        fail("\(error)", code: 1)
    }
    print(json ? outcome.json : outcome.table)
    if outcome.refusal != nil { exit(3) }
}

/// The IMU as the agent would open it: from the config file (default path; missing = defaults).
private func imuSettings(configPath: String?) -> IMUSettings {
    let path = configPath ?? "/etc/osh-edge/osh-edge.conf"
    var s = IMUSettings()
    let bytes: [UInt8]?
    do { bytes = try StateFiles.read(path) } catch { fail("cannot read \(path): \(error)", code: 1) }
    guard let bytes else {
        if configPath != nil { fail("no configuration at \(path)", code: 1) }
        return s
    }
    let d: DeviceConfig
    do { d = try AgentSettings.parseFile(bytes: bytes, path: path).devices } catch { fail("\(error)", code: 1) }
    s.bus = d.i2c.bus
    s.chip = d.imu.chip
    s.address = d.imu.address
    s.magnetometer = d.imu.magnetometer
    s.magnetometerAddress = d.imu.magnetometerAddress
    s.accelRange = d.imu.accelRange
    s.gyroRange = d.imu.gyroRange
    s.mounting = d.imu.mounting
    return s
}
