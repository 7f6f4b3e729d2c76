// URIs osh-core uses, each as its SWEConstants, GeoPosHelper or VectorHelper spells it.
public enum SWE {
    public static let propertyPrefix = "http://sensorml.com/ont/swe/property/"
    public static let qudtPrefix = "http://qudt.org/vocab/quantitykind/"
    public static let samplingTime = "http://www.opengis.net/def/property/OGC/0/SamplingTime"
    public static let phenomenonTime = "http://www.opengis.net/def/property/OGC/0/PhenomenonTime"
    public static let forecastTime = "http://www.opengis.net/def/property/OGC/0/ForecastTime"
    public static let runTime = "http://www.opengis.net/def/property/OGC/0/RunTime"
    public static let utcFrame = "http://www.opengis.net/def/trs/BIPM/0/UTC"
    public static let isoTimeUnit = "http://www.opengis.net/def/uom/ISO-8601/0/Gregorian"
    public static let epsg4979 = "http://www.opengis.net/def/crs/EPSG/0/4979"
    /// `cs`, not `crs`: osh-core changed it in 2020 and Android sends this one.
    public static let enuFrame = "http://www.opengis.net/def/cs/OGC/0/ENU"
    public static let sensorDefinition = "http://www.w3.org/ns/sosa/Sensor"

    /// Time definitions that osh-core's O&M binding takes out of `result` (SWECommonUtils.OM_COMPONENTS_FILTER).
    public static let observationTimeDefinitions: Set<String> = [samplingTime, phenomenonTime, forecastTime, runTime]

    /// `http://sensorml.com/ont/swe/property/<name>`.
    public static func property(_ name: String) -> String { propertyPrefix + name }
    /// `http://qudt.org/vocab/quantitykind/<name>`.
    public static func qudt(_ name: String) -> String { qudtPrefix + name }

    /// The time field every Android output carries on the phone (GeoPosHelper.newTimeStampIsoUTC).
    public static func samplingTimeField() -> DataComponent {
        DataComponent(.time(Time()), name: "time", definition: samplingTime, label: "Sampling Time")
    }

    /// The time field the node inserts when it registers an om+json resultSchema (asPhenomenonTimeIsoUTC).
    public static func phenomenonTimeField() -> DataComponent {
        DataComponent(.time(Time()), name: "time", definition: phenomenonTime, label: "Phenomenon Time")
    }
}
