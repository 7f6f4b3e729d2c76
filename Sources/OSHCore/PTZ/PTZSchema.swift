// The pan-tilt unit on the wire: the `ptz_position` output (time, pan, tilt) and the
// `ptz_control` control stream's parameters, with the names and definitions OSH's video-camera
// tasking uses (items pan/tilt/rpan/rtilt/preset/ptzPos; definitions Pan, Tilt, RelativePan,
// RelativeTilt, CameraPresetPositionName, PtzPosition under the SWE property vocabulary), so a
// CS API PTZ client recognises the stream by its definitions. Allowed intervals come from the
// calibration's soft limits; there is no zoom on a servo unit, so no zoom items.

public enum PTZSchema {
    public static let outputName = "ptz_position"
    public static let inputName = "ptz_control"

    static func axis(_ name: String, def: String, label: String, description: String, interval: ClosedInterval?) -> DataComponent {
        DataComponent(
            .quantity(Quantity(uom: .code("deg"), constraint: interval.map { AllowedValues(intervals: [$0]) })),
            name: name, definition: SWE.property(def), label: label, description: description)
    }

    static func pan(_ c: PTZCalibration) -> DataComponent {
        axis(
            "pan", def: "Pan", label: "Pan", description: "Rotation about the vertical axis, positive clockwise seen from above",
            interval: ClosedInterval(c.pan.lowerLimit, c.pan.upperLimit))
    }

    static func tilt(_ c: PTZCalibration) -> DataComponent {
        axis(
            "tilt", def: "Tilt", label: "Tilt", description: "Rotation about the horizontal axis, positive up",
            interval: ClosedInterval(c.tilt.lowerLimit, c.tilt.upperLimit))
    }

    /// `ptz_position`: where the unit points, time first (OutputCatalogue conventions), reported
    /// after every move so a client can close the loop.
    public static func positionOutput(_ c: PTZCalibration) -> OutputSpec {
        OutputSpec(
            kind: .ptzPosition, outputName: outputName,
            record: OutputCatalogue.record(outputName, def: SWE.property("PtzPosition"), [pan(c), tilt(c)]),
            sweJSONTime: .sampling,
            source: SystemComponentInfo(id: "PTZ_PCA9685", label: "Pan-Tilt Unit (PCA9685 servo driver)"))
    }

    /// The `ptz_control` parameters: a DataChoice, one item per command.
    public static func controlParameters(_ c: PTZCalibration) -> DataComponent {
        let panSpan = c.pan.upperLimit - c.pan.lowerLimit
        let tiltSpan = c.tilt.upperLimit - c.tilt.lowerLimit
        var items = [
            pan(c), tilt(c),
            axis(
                "rpan", def: "RelativePan", label: "Relative Pan", description: "Degrees to add to the current pan",
                interval: ClosedInterval(-panSpan, panSpan)),
            axis(
                "rtilt", def: "RelativeTilt", label: "Relative Tilt", description: "Degrees to add to the current tilt",
                interval: ClosedInterval(-tiltSpan, tiltSpan)),
        ]
        if !c.presets.isEmpty {
            items.append(
                DataComponent(
                    .text(Text(constraint: AllowedTokens(values: c.presets.map(\.name)))), name: "preset",
                    definition: SWE.property("CameraPresetPositionName"), label: "Preset Camera Position"))
        }
        items.append(
            DataComponent(
                .record([pan(c), tilt(c)]), name: "ptzPos", definition: SWE.property("PtzPosition"),
                label: "Absolute PTZ Position"))
        return DataComponent(.choice(DataChoice(items: items)), name: inputName, label: "Pan-Tilt Control")
    }

    /// The control stream body (`POST /systems/{id}/controlstreams`).
    public static func controlStreamBody(_ c: PTZCalibration, systemLabel: String) -> [UInt8] {
        ControlStreamBody.bytes(
            name: ControlStreamBody.name(systemLabel: systemLabel, inputName: inputName),
            description: "Point the camera: absolute or relative pan and tilt in degrees",
            inputName: inputName, parameters: controlParameters(c))
    }
}
