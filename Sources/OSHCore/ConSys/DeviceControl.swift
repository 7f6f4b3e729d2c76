// The agent's own control stream, `device_control` (SPEC §4): a DataChoice the node drives the board
// with. Items, each a DataRecord so every command reads `{"<item>": {<fields in order>}}`:
//   setRate(outputName text, rate Hz)  enableOutput(outputName text, enabled boolean)
//   identify(duration s)               reregister(reason text; may be "")
// Output names are listed as AllowedTokens so a client can offer them; the rate interval is the
// agent's. Registered with ControlStreamBody like any control stream (idempotent by inputName).

public enum DeviceControlCommand: Sendable, Equatable {
    case setRate(outputName: String, hz: Double)
    case enableOutput(outputName: String, enabled: Bool)
    case identify(seconds: Double)
    case reregister

    /// The DataChoice item name.
    public var item: String {
        switch self {
        case .setRate: return "setRate"
        case .enableOutput: return "enableOutput"
        case .identify: return "identify"
        case .reregister: return "reregister"
        }
    }
}

public enum DeviceControl {
    public static let inputName = "device_control"
    public static let definitionPrefix = "urn:osh:edge:def:command:"

    /// The parameter schema. `outputNames` empty means any name (no token constraint).
    public static func schema(outputNames: [String], rateRange: ClosedInterval = ClosedInterval(0.001, 100),
                              identifyRange: ClosedInterval = ClosedInterval(0, 600)) -> DataComponent {
        let tokens = outputNames.isEmpty ? nil : AllowedTokens(values: outputNames)
        func outputName() -> DataComponent {
            DataComponent(.text(Text(constraint: tokens)), name: "outputName",
                          definition: definitionPrefix + "outputName", label: "Output Name")
        }
        let setRate = DataComponent(.record([
            outputName(),
            DataComponent(.quantity(Quantity(uom: .code("Hz"), constraint: AllowedValues(intervals: [rateRange]))),
                          name: "rate", definition: definitionPrefix + "samplingRate", label: "Sampling Rate"),
        ]), name: "setRate", definition: definitionPrefix + "setRate", label: "Set Output Rate")
        let enable = DataComponent(.record([
            outputName(),
            DataComponent(.boolean(BooleanComponent()), name: "enabled", definition: definitionPrefix + "enabled",
                          label: "Enabled"),
        ]), name: "enableOutput", definition: definitionPrefix + "enableOutput", label: "Enable or Disable Output")
        let identify = DataComponent(.record([
            DataComponent(.quantity(Quantity(uom: .code("s"), constraint: AllowedValues(intervals: [identifyRange]))),
                          name: "duration", definition: definitionPrefix + "duration", label: "Duration"),
        ]), name: "identify", definition: definitionPrefix + "identify", label: "Identify (blink the LED)")
        let reregister = DataComponent(.record([
            DataComponent(.text(Text()), name: "reason", definition: definitionPrefix + "reason", label: "Reason"),
        ]), name: "reregister", definition: definitionPrefix + "reregister", label: "Register Again with the Node")
        return DataComponent(.choice(DataChoice(items: [setRate, enable, identify, reregister])),
                             name: inputName, definition: definitionPrefix + "deviceControl", label: "Device Control")
    }

    /// The control-stream body for `POST /systems/{id}/controlstreams`.
    public static func body(systemLabel: String, outputNames: [String],
                            rateRange: ClosedInterval = ClosedInterval(0.001, 100)) -> [UInt8] {
        ControlStreamBody.bytes(name: ControlStreamBody.name(systemLabel: systemLabel, inputName: inputName),
                                description: "Rates, outputs on/off, identify and re-registration of this board",
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
        default:
            break
        }
        throw CommandDecodeError(.badChoice, "unknown or incomplete device_control command '\(item)'")
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
        }
        w.endObject()
        w.endObject()
        return b.string
    }
}
