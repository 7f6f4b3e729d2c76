// The agent's own control stream, `device_control`: a DataChoice the node drives the board
// with. Items, each a DataRecord so every command reads `{"<item>": {<fields in order>}}`:
//   setRate(outputName text, rate Hz)  enableOutput(outputName text, enabled boolean)
//   identify(duration s)               reregister(reason text; may be "")
//   uploadTimeRange(start time, stop time, outputs text: names separated by commas, "" = all recorded)
// Output names are listed as AllowedTokens so a client can offer them; the rate interval is the
// agent's. Registered with ControlStreamBody like any control stream (idempotent by inputName).

public enum DeviceControlCommand: Sendable, Equatable {
    case setRate(outputName: String, hz: Double)
    case enableOutput(outputName: String, enabled: Bool)
    case identify(seconds: Double)
    case reregister
    /// Send what the board recorded between `start` and `stop` (epoch seconds) for these outputs
    /// (empty = every recorded output).
    case uploadTimeRange(start: Double, stop: Double, outputs: [String])

    /// The DataChoice item name.
    public var item: String {
        switch self {
        case .setRate: return "setRate"
        case .enableOutput: return "enableOutput"
        case .identify: return "identify"
        case .reregister: return "reregister"
        case .uploadTimeRange: return "uploadTimeRange"
        }
    }
}

public enum DeviceControl {
    public static let inputName = "device_control"
    public static let definitionPrefix = "urn:osh:edge:def:command:"

    /// The parameter schema. `outputNames` empty means any name (no token constraint).
    public static func schema(
        outputNames: [String], rateRange: ClosedInterval = ClosedInterval(0.001, 100),
        identifyRange: ClosedInterval = ClosedInterval(0, 600)
    ) -> DataComponent {
        let tokens = outputNames.isEmpty ? nil : AllowedTokens(values: outputNames)
        func outputName() -> DataComponent {
            DataComponent(
                .text(Text(constraint: tokens)), name: "outputName",
                definition: definitionPrefix + "outputName", label: "Output Name")
        }
        let setRate = DataComponent(
            .record([
                outputName(),
                DataComponent(
                    .quantity(Quantity(uom: .code("Hz"), constraint: AllowedValues(intervals: [rateRange]))),
                    name: "rate", definition: definitionPrefix + "samplingRate", label: "Sampling Rate"),
            ]), name: "setRate", definition: definitionPrefix + "setRate", label: "Set Output Rate")
        let enable = DataComponent(
            .record([
                outputName(),
                DataComponent(
                    .boolean(BooleanComponent()), name: "enabled", definition: definitionPrefix + "enabled",
                    label: "Enabled"),
            ]), name: "enableOutput", definition: definitionPrefix + "enableOutput", label: "Enable or Disable Output")
        let identify = DataComponent(
            .record([
                DataComponent(
                    .quantity(Quantity(uom: .code("s"), constraint: AllowedValues(intervals: [identifyRange]))),
                    name: "duration", definition: definitionPrefix + "duration", label: "Duration")
            ]), name: "identify", definition: definitionPrefix + "identify", label: "Identify (blink the LED)")
        let reregister = DataComponent(
            .record([
                DataComponent(.text(Text()), name: "reason", definition: definitionPrefix + "reason", label: "Reason")
            ]), name: "reregister", definition: definitionPrefix + "reregister", label: "Register Again with the Node")
        // Times as ISO-8601 strings (Time's default unit), as OSH writes every Time value.
        let upload = DataComponent(
            .record([
                DataComponent(.time(Time()), name: "start", definition: definitionPrefix + "startTime", label: "Start Time"),
                DataComponent(.time(Time()), name: "stop", definition: definitionPrefix + "stopTime", label: "Stop Time"),
                DataComponent(
                    .text(Text()), name: "outputs", definition: definitionPrefix + "outputNames",
                    label: "Output Names (comma-separated; empty = all recorded)"),
            ]), name: "uploadTimeRange", definition: definitionPrefix + "uploadTimeRange", label: "Upload a Recorded Time Range")
        return DataComponent(
            .choice(DataChoice(items: [setRate, enable, identify, reregister, upload])),
            name: inputName, definition: definitionPrefix + "deviceControl", label: "Device Control")
    }

    /// The control-stream body for `POST /systems/{id}/controlstreams`.
    public static func body(
        systemLabel: String, outputNames: [String],
        rateRange: ClosedInterval = ClosedInterval(0.001, 100)
    ) -> [UInt8] {
        ControlStreamBody.bytes(
            name: ControlStreamBody.name(systemLabel: systemLabel, inputName: inputName),
            description: "Rates, outputs on/off, identify, re-registration and recorded uploads of this board",
            inputName: inputName, parameters: schema(outputNames: outputNames, rateRange: rateRange))
    }

    /// A decoded command value (CommandDecoder against `schema`) as a typed command.
    public static func command(_ v: CommandValue) throws(CommandDecodeError) -> DeviceControlCommand {
        guard case .choice(let item, let x) = v else { throw CommandDecodeError(.badChoice, "not a device_control command") }
        switch item {
        case "setRate":
            guard let n = x["outputName"]?.text, let r = x["rate"]?.number else { break }
            guard r > 0 else { throw CommandDecodeError(.outOfRange, "setRate.rate must be above 0 Hz") }
            return .setRate(outputName: n, hz: r)
        case "enableOutput":
            guard let n = x["outputName"]?.text, let e = x["enabled"]?.bool else { break }
            return .enableOutput(outputName: n, enabled: e)
        case "identify":
            guard let d = x["duration"]?.number else { break }
            return .identify(seconds: d)
        case "reregister":
            return .reregister
        case "uploadTimeRange":
            guard let start = x["start"]?.number, let stop = x["stop"]?.number, let list = x["outputs"]?.text else { break }
            guard stop > start else {
                throw CommandDecodeError(
                    .outOfRange,
                    "uploadTimeRange.stop \(ISOTime.string(epochSeconds: stop)) is not after "
                        + "start \(ISOTime.string(epochSeconds: start)): give a window with stop later than start")
            }
            return .uploadTimeRange(start: start, stop: stop, outputs: outputList(list))
        default:
            break
        }
        throw CommandDecodeError(.badChoice, "unknown or incomplete device_control command '\(item)'")
    }

    /// `"a, b,,c"` → `["a", "b", "c"]`: names trimmed, empty ones dropped.
    static func outputList(_ text: String) -> [String] {
        text.split(separator: ",").map { SystemUID.trim(String($0)) }.filter { !$0.isEmpty }
    }

    /// Writes the `parameters` JSON of a command (the operator's side: CLI, tests, demo).
    public static func parametersJSON(_ c: DeviceControlCommand) -> String {
        let b = ByteBuffer(capacity: 128)
        var w = JSONWriter(b)
        w.beginObject()
        w.key(c.item)
        w.beginObject()
        switch c {
        case .setRate(let n, let hz): w.key("outputName"); w.string(n); w.key("rate"); w.number(hz)
        case .enableOutput(let n, let e): w.key("outputName"); w.string(n); w.key("enabled"); w.bool(e)
        case .identify(let s): w.key("duration"); w.number(s)
        case .reregister: w.key("reason"); w.string("")
        case .uploadTimeRange(let start, let stop, let outputs):
            w.key("start"); w.string(ISOTime.string(epochSeconds: start))
            w.key("stop"); w.string(ISOTime.string(epochSeconds: stop))
            w.key("outputs"); w.string(outputs.joined(separator: ","))
        }
        w.endObject()
        w.endObject()
        return b.string
    }
}
