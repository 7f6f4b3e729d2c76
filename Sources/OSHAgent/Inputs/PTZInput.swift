import OSHCore
import OSHPlatform

/// A pan-tilt unit as an input: it takes `ptz_control` commands (plan the move, slew at the
/// unit's speed on a 20 ms timer) and reports where it points through `ptz_position`, the final
/// position always (the rate thinning must not drop where it stopped).
public final class PTZInput {
    public let controller: PTZController
    /// Where `ptz_position` goes, set when the runtime starts; nil when it is not published.
    var port: OutputPort<PTZPositionSample>?
    private let loop: EventLoop
    private var timer: EventLoop.Timer?

    init(loop: EventLoop, controller: PTZController) {
        self.loop = loop
        self.controller = controller
    }

    /// The calibration the [ptz] section describes.
    static func calibration(_ p: PTZConfig) -> PTZCalibration {
        let speed = p.maxSpeed > 0 ? p.maxSpeed : nil
        func axis(_ channel: Int, _ limits: [Double]) -> ServoAxisCalibration {
            ServoAxisCalibration(
                channel: channel, minPulseMicros: p.pulse[0], maxPulseMicros: p.pulse[1],
                minDegrees: p.degrees[0], maxDegrees: p.degrees[1],
                lowerLimit: limits[0], upperLimit: limits[1], maxSpeed: speed,
                home: min(max(0, limits[0]), limits[1]))
        }
        return PTZCalibration(pan: axis(p.panChannel, p.panLimits), tilt: axis(p.tiltChannel, p.tiltLimits))
    }

    /// Its output's schema and its control stream, for the runtime to register.
    var outputSpec: OutputSpec { PTZSchema.positionOutput(controller.calibration) }

    func control(systemLabel: String) -> AgentRuntime.ExtraControl {
        AgentRuntime.ExtraControl(
            inputName: PTZSchema.inputName,
            body: PTZSchema.controlStreamBody(controller.calibration, systemLabel: systemLabel),
            schema: PTZSchema.controlParameters(controller.calibration)
        ) { [self] c in
            // The control holds the unit (it lives as long as the runtime's command service); the
            // unit holds nothing above it.
            command(c.value)
        }
    }

    /// A ptz_control command: plan the move, start slewing, report where it goes.
    func command(_ v: CommandValue) -> CommandOutcome {
        let command: PTZCommand
        switch v {
        case .choice("rpan", .number(let d)): command = .relative(pan: d, tilt: 0)
        case .choice("rtilt", .number(let d)): command = .relative(pan: 0, tilt: d)
        case .choice("pan", .number(let d)): command = .absolute(pan: d, tilt: nil)
        case .choice("tilt", .number(let d)): command = .absolute(pan: nil, tilt: d)
        case .choice("preset", .text(let name)): command = .preset(name)
        case .choice("ptzPos", let r): command = .absolute(pan: r["pan"]?.number, tilt: r["tilt"]?.number)
        default: return .rejected("not a ptz_control command: expected one of " + PTZCommand.itemNames.joined(separator: ", "))
        }
        let outcome = controller.apply(command)
        if outcome.status == .completed { startSlewing() }
        return CommandOutcome(outcome.status, outcome.message)
    }

    private func startSlewing() {
        guard timer == nil else { return }
        let step = 0.02
        do {
            timer = try loop.addTimer(firstAt: EventLoop.deadline(after: step), interval: UInt64(step * 1e9)) { [unowned self] _ in
                var moving = false
                do { moving = try controller.tick(dt: step) } catch { Log.warning("pan-tilt: \(error)") }
                report(always: !moving)
                if !moving, let t = timer {
                    loop.cancel(t)
                    timer = nil
                }
            }
        } catch {
            Log.error("pan-tilt: cannot start the slew timer: \(error)")
        }
    }

    private func report(always: Bool = true) {
        port?.send(controller.position, at: Double(Clock.monotonicNanoseconds()) / 1e9, always: always)
    }
}

extension PTZInput: ObservationSource {
    public var feeds: [OutputKind] { [.ptzPosition] }
    public var isFaulted: Bool { false }

    public func connect(_ outputs: OutputConnections) throws {
        port = try outputs.port(PTZPositionSample.self)
    }
    /// Where the unit points at start.
    public func start() throws { report() }
    public func stop() {
        if let t = timer { loop.cancel(t) }
        timer = nil
    }
}
