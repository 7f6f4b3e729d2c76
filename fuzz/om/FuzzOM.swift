// libFuzzer target for what parses the node's JSON answers and the commands it pushes
// (OSHCore/ConSys, OSHCore/PTZ): the read side's resources (systems, datastreams, command
// status reports, collections), the command receiver's message → CommandDecoder → device_control
// and ptz_control commands, and the CLI's command body. Built by fuzz/run.sh om against all of OSHCore.
//
// Each input (a JSON document) is checked for:
//  * no crash, no out-of-bounds access (AddressSanitizer), no trap;
//  * JSON round trip: a parsed value written back (ReadSideJSON) parses to the same value;
//  * command round trip: a device_control command that decoded, written back as parameters
//    (DeviceControl.parametersJSON), decodes to the same command; a PTZ command's plan stays
//    inside the calibration's limits.

@testable import OSHCore

/// Built once: the receiver builds its schemas once too, and per-input setup would dominate.
private let deviceControlSchema = DeviceControl.schema(outputNames: ["imu", "gps_data", "barometer"])
private let anyOutputSchema = DeviceControl.schema(outputNames: [])
private let ptzCalibration = PTZCalibration(presets: [("home", 0, 0), ("gate", 45, -10)])
private let ptzSchema = PTZSchema.controlParameters(ptzCalibration)

/// Builds the schemas before the first input: made inside one, their strings (reachable only through
/// Swift's tagged pointers, which LeakSanitizer does not follow) would be reported as that input's leak.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzOMInitialize(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
) -> CInt {
    _ = (deviceControlSchema, anyOutputSchema, ptzCalibration, ptzSchema)
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOM(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let raw = UnsafeRawBufferPointer(start: data, count: size)
    guard let v = try? JSONValue.parse(raw) else { return 0 }
    let text = ReadSideJSON.string(v)
    precondition((try? JSONValue.parse(text)) == v, "JSON round trip: \(text)")

    // The read side: a resource, or a collection of them.
    let items = NodeCollection.items(v)
    _ = NodeCollection.nextLink(v)
    _ = CommandReport.newest(in: v)
    for x in [v] + items {
        if let s = NodeSystem(x) { precondition(!s.id.isEmpty) }
        if let d = NodeDatastream(x) { precondition(!d.id.isEmpty); _ = d.preferredFormat; _ = d.newest }
        if let r = CommandReport(x) { precondition(!r.commandID.isEmpty); _ = r.isFinal }
    }

    // The command receiver: {"id", "parameters", "issueTime", …}; and the bare parameters.
    _ = v["issueTime"]?.string.flatMap(ISOTime.parse)
    for params in [v["parameters"], v].compactMap({ $0 }) {
        for schema in [deviceControlSchema, anyOutputSchema] {
            guard let value = try? CommandDecoder.decode(params, schema: schema),
                let cmd = try? DeviceControl.command(value)
            else { continue }
            let again = try? DeviceControl.command(
                CommandDecoder.decode(
                    JSONValue.parse(DeviceControl.parametersJSON(cmd)),
                    schema: schema))
            precondition(again == cmd, "device_control round trip: \(cmd) → \(String(describing: again))")
        }
        _ = try? CommandDecoder.decode(params, schema: ptzSchema)
        if let ptz = try? PTZCommand.parse(params), let move = try? ptzCalibration.plan(ptz, fromPan: 0, tilt: 0) {
            precondition(move.pan.isFinite && move.tilt.isFinite, "PTZ plan is not finite: \(move)")
            precondition(
                move.pan >= ptzCalibration.pan.lowerLimit && move.pan <= ptzCalibration.pan.upperLimit
                    && move.tilt >= ptzCalibration.tilt.lowerLimit && move.tilt <= ptzCalibration.tilt.upperLimit,
                "PTZ plan outside the limits: \(move)")
        }
    }
    // The CLI's command body: any object is taken, and what it sends parses, with its parameters.
    if case .object = v {
        let sent = try? CommandBody.bytes(fromUserJSON: String(decoding: raw, as: UTF8.self))
        precondition(
            sent.flatMap { try? JSONValue.parse($0) }?["parameters"] != nil, "the CLI's body for an object: \(String(describing: sent))")
    }
    return 0
}
