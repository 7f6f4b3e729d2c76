import OSHCore
import OSHPlatform

/// Why an output could not be changed at run time, in words for the node's command status.
public struct ControlError: Error, Equatable, CustomStringConvertible {
    public let description: String
}

/// What may change while the agent runs — each output's rate and whether it is sent — and
/// nothing more: the command service holds this, not the runtime.
final class OutputControls {
    let specs: [OutputSpec]
    let video: VideoPath?
    private let gate: OutputGate
    /// Outputs a receiver paces at its own rate (a GPS's fixes): not ours to change.
    private let receiverPaced: Set<Int>
    /// The timer behind outputs no device paces, once the runtime has started it.
    var sampler: TimedSampler?

    init(specs: [OutputSpec], gate: OutputGate, video: VideoPath?, receiverPaced: Set<Int>) {
        self.specs = specs
        self.gate = gate
        self.video = video
        self.receiverPaced = receiverPaced
    }

    /// Every datastream's output name, the camera's last (the names `device_control` offers).
    var outputNames: [String] { specs.map(\.outputName) + (video.map { [$0.spec.outputName] } ?? []) }

    func index(of outputName: String) -> Int? { specs.firstIndex { $0.outputName == outputName } }
    func rate(_ i: Int) -> Double { gate.rates[i] }
    func isEnabled(_ i: Int) -> Bool { gate.enabled[i] }

    private func controlIndex(_ outputName: String) throws(ControlError) -> Int {
        guard let i = index(of: outputName) else {
            throw ControlError(
                description: "no output named '\(outputName)' is published by this board; outputs: "
                    + outputNames.joined(separator: ", "))
        }
        return i
    }

    /// Changes an output's rate (Hz, more than 0 and up to 100, as the config allows).
    func setRate(_ outputName: String, _ hz: Double) throws(ControlError) {
        if let v = video, outputName == v.spec.outputName {
            throw ControlError(
                description: "the camera's frame rate is set in [outputs.\(outputName)] rate (1 to 25); not changed at run time")
        }
        let i = try controlIndex(outputName)
        guard hz.isFinite, hz > 0, hz <= 100 else {
            throw ControlError(description: "rate \(hz) Hz for \(outputName) is out of range: more than 0, up to 100 Hz")
        }
        if receiverPaced.contains(i) {
            throw ControlError(description: "\(outputName) follows the receiver's own rate; change it on the receiver")
        }
        gate.setRate(i, hz)
        if let sampler, sampler.isSampling(i) {
            do { try sampler.arm(i, rate: hz) } catch { throw ControlError(description: "cannot re-arm \(outputName)'s timer: \(error)") }
        }
        Log.notice("\(outputName): rate set to \(hz) Hz")
    }

    /// Turns an output on or off (its datastream stays registered; off sends nothing).
    func setEnabled(_ outputName: String, _ on: Bool) throws(ControlError) {
        if let v = video, outputName == v.spec.outputName {
            v.enabled = on
        } else {
            gate.setEnabled(try controlIndex(outputName), on)
        }
        Log.notice("\(outputName): \(on ? "enabled" : "disabled")")
    }
}
