import OSHCore
import OSHPlatform

/// The pan-tilt unit: applies `ptz_control` commands (rpan/rtilt/pan/tilt/ptzPos/preset) to a
/// PCA9685 through the calibration, slews at the configured speed when `tick` is driven from
/// a loop timer, and reports the position for `ptz_position`.
public final class PTZController {
    public let calibration: PTZCalibration
    public let driver: PCA9685
    /// Where the servos are commanded to now (degrees).
    public private(set) var pan: Double
    public private(set) var tilt: Double
    /// Where they are going.
    public private(set) var targetPan: Double
    public private(set) var targetTilt: Double
    /// Called after the position changed (a step or a move): the agent publishes `ptz_position`.
    public var onPosition: ((_ pan: Double, _ tilt: Double) -> Void)?

    /// What the command receiver reports back: COMPLETED with a message (clamped moves say so),
    /// or REJECTED with why.
    public struct Outcome: Sendable, Equatable {
        public var status: CommandStatusCode
        public var message: String
        public var move: PTZMove?
    }

    /// Configures the chip and takes the position the servos already hold when their channels
    /// carry a pulse inside the calibration (an agent restart does not jerk the camera);
    /// otherwise drives both axes to home.
    public init(driver: PCA9685, calibration: PTZCalibration) throws {
        let problems = calibration.problems()
        guard problems.isEmpty else { throw PTZConfigurationError(problems: problems) }
        self.driver = driver
        self.calibration = calibration
        try driver.configure(frequency: calibration.frequency)
        func held(_ a: ServoAxisCalibration) throws -> Double? {
            guard let c = try driver.readCounts(channel: a.channel) else { return nil }
            let d = a.degrees(pulseMicros: PCA9685Math.pulseMicros(counts: c, prescale: driver.prescale, oscillator: driver.oscillator))
            return a.clamp(d).clamped ? nil : d
        }
        let p = try held(calibration.pan), t = try held(calibration.tilt)
        pan = p ?? calibration.pan.home
        tilt = t ?? calibration.tilt.home
        targetPan = pan
        targetTilt = tilt
        if p == nil || t == nil { try write() }
    }

    public var isMoving: Bool { pan != targetPan || tilt != targetTilt }

    /// Parses and applies one command's parameters.
    public func apply(parameters: JSONValue) -> Outcome {
        do throws(PTZCommandError) {
            return apply(try PTZCommand.parse(parameters))
        } catch {
            return Outcome(status: .rejected, message: error.message, move: nil)
        }
    }

    /// Relative commands add to where the unit is heading, so two quick `rpan 3` give 6°.
    public func apply(_ command: PTZCommand) -> Outcome {
        let move: PTZMove
        do throws(PTZCommandError) {
            move = try calibration.plan(command, fromPan: targetPan, tilt: targetTilt)
        } catch {
            return Outcome(status: .rejected, message: error.message, move: nil)
        }
        targetPan = move.pan
        targetTilt = move.tilt
        do {
            if calibration.pan.maxSpeed == nil { pan = targetPan }
            if calibration.tilt.maxSpeed == nil { tilt = targetTilt }
            try write()
        } catch {
            return Outcome(status: .failed, message: "the servo driver did not take the move: \(error)", move: move)
        }
        var msg = "pan \(PTZMove.text(move.pan))°, tilt \(PTZMove.text(move.tilt))°"
        if isMoving { msg += " (slewing)" }
        if let c = move.clampMessage { msg = c + "; " + msg }
        return Outcome(status: .completed, message: msg, move: move)
    }

    /// Advances a slew by `dt` seconds; returns whether the unit is still moving.
    @discardableResult
    public func tick(dt: Double) throws -> Bool {
        guard isMoving else { return false }
        pan = PTZMotion.step(from: pan, to: targetPan, maxSpeed: calibration.pan.maxSpeed, dt: dt)
        tilt = PTZMotion.step(from: tilt, to: targetTilt, maxSpeed: calibration.tilt.maxSpeed, dt: dt)
        try write()
        return isMoving
    }

    /// Where the unit points, as the `ptz_position` output's sample.
    public var position: PTZPositionSample { PTZPositionSample(pan: pan, tilt: tilt) }

    /// Servos limp (outputs fully off), e.g. at shutdown on battery.
    public func release() throws { try driver.allOff() }

    private func write() throws {
        try driver.setPulse(channel: calibration.pan.channel, micros: calibration.pan.pulseMicros(degrees: pan))
        try driver.setPulse(channel: calibration.tilt.channel, micros: calibration.tilt.pulseMicros(degrees: tilt))
        onPosition?(pan, tilt)
    }
}

public struct PTZConfigurationError: Error, Equatable, CustomStringConvertible {
    public var problems: [String]
    public var description: String { "the pan-tilt calibration is not usable: " + problems.joined(separator: "; ") }
}
