// `temperature` and `humidity`: the air around the board, from a barometer (temperature; the
// BME280 also humidity) or a hygrometer. Android has no such outputs; they follow the barometer's
// iOS-style shape (a sampling time and one quantity) with the definitions and units OSH's own
// weather drivers give them: SWEHelper.getPropertyUri("Temperature") in "Cel" and
// getPropertyUri("RelativeHumidity") in "%" (opensensorhub/osh-addons,
// sensors/weather/sensorhub-driver-uahweather/.../UAHweatherOutput.java and
// sensors/simulated/sensorhub-driver-simweatherstation/.../SimWeatherStationOutput.java).

extension OutputCatalogue {
    public static func temperature(_ o: OutputOptions) -> OutputSpec {
        let def = SWE.property("Temperature")
        return OutputSpec(
            kind: .temperature, outputName: "temperature",
            record: record(
                "temperature", def: def,
                [
                    quantity("temperature", def: def, label: "Air Temperature", uom: "Cel", type: .float32)
                ]),
            sweJSONTime: .sampling,
            source: SystemComponentInfo(id: "SENSOR_AMBIENT_TEMPERATURE", label: o.climateChip + " Temperature Sensor"))
    }

    public static func humidity(_ o: OutputOptions) -> OutputSpec {
        let def = SWE.property("RelativeHumidity")
        return OutputSpec(
            kind: .humidity, outputName: "humidity",
            record: record(
                "humidity", def: def,
                [
                    quantity(
                        "relativeHumidity", def: def, label: "Relative Humidity", uom: "%",
                        constraint: ClosedInterval(0, 100), type: .float32)
                ]),
            sweJSONTime: .sampling,
            source: SystemComponentInfo(id: "SENSOR_RELATIVE_HUMIDITY", label: o.climateChip + " Humidity Sensor"))
    }
}

public struct TemperatureSample: OutputSample, Equatable {
    public static let kind = OutputKind.temperature
    /// °C.
    public var celsius = 0.0
    public init() {}
    public init(celsius: Double) { self.celsius = celsius }
    public func write(to s: inout SlotWriter) { s.set("temperature", celsius) }
}

public struct HumiditySample: OutputSample, Equatable {
    public static let kind = OutputKind.humidity
    /// %RH, 0 to 100.
    public var percent = 0.0
    public init() {}
    public init(percent: Double) { self.percent = percent }
    public func write(to s: inout SlotWriter) { s.set("relativeHumidity", percent) }
}
