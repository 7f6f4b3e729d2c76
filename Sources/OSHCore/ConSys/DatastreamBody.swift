// The datastream body of `POST /systems/{id}/datastreams` (osh-core
// DataStreamBindingJson order: name, outputName, schema; `obsFormat` first in
// schema — the node refuses anything else).
//
// A SWE schema carries its encoding twice: `recordEncoding`, the member osh-core reads
// (DataStreamSchemaBindingSweCommon.deserialize), and `encoding`, the member CS API Part 2
// (observationSchemaSwe.json) requires. osh-core skips members it does not know
// (`reader.skipValue()`), so the second is ignored by the node and read by everyone else.

public enum DatastreamBody {
    /// `"<system label> - <outputName>"`: the name osh-core gives an Android datastream (no Android record has a label).
    public static func name(systemLabel: String, outputName: String) -> String {
        systemLabel + " - " + outputName
    }

    /// The obsFormat this output registers with: swe+binary when it has a binary encoding, else the scalar format.
    public static func obsFormat(_ spec: OutputSpec, scalarFormat: ScalarFormat) -> String {
        spec.binaryEncoding != nil ? MediaType.sweBinary : scalarFormat.mediaType
    }

    /// Writes the body for `spec` into `out`.
    public static func write(_ spec: OutputSpec, systemLabel: String, scalarFormat: ScalarFormat, to out: ByteBuffer) {
        var w = JSONWriter(out)
        w.beginObject()
        w.key("name"); w.string(name(systemLabel: systemLabel, outputName: spec.outputName))
        w.key("outputName"); w.string(spec.outputName)
        w.key("schema")
        writeSchema(spec, scalarFormat: scalarFormat, to: &w)
        w.endObject()
    }

    public static func string(_ spec: OutputSpec, systemLabel: String, scalarFormat: ScalarFormat) -> String {
        let b = ByteBuffer()
        write(spec, systemLabel: systemLabel, scalarFormat: scalarFormat, to: b)
        return b.string
    }

    /// The `schema` object alone.
    public static func writeSchema(_ spec: OutputSpec, scalarFormat: ScalarFormat, to w: inout JSONWriter) {
        w.beginObject()
        if let encoding = spec.binaryEncoding {
            w.key("obsFormat"); w.string(MediaType.sweBinary)
            w.key("recordSchema"); SWEJSON.write(spec.record, to: &w)
            w.key("recordEncoding"); SWEJSON.write(encoding, to: &w)
            w.key("encoding"); SWEJSON.write(encoding, to: &w)
        } else {
            switch scalarFormat {
            case .omJSON:
                w.key("obsFormat"); w.string(MediaType.omJSON)
                w.key("resultSchema"); SWEJSON.write(resultSchema(spec.record), to: &w)
            case .sweJSON:
                w.key("obsFormat"); w.string(MediaType.sweJSON)
                w.key("recordSchema"); SWEJSON.write(recordSchema(spec), to: &w)
                // Only `encoding`: a recordEncoding would replace the TextEncoding osh-core stores by
                // default, and a changed encoding makes it open a new datastream once there are
                // observations (SystemTransactionHandler). `encoding` it never reads.
                w.key("encoding"); w.beginObject(); w.key("type"); w.string("JSONEncoding"); w.endObject()
            }
        }
        w.endObject()
    }

    /// The om+json `resultSchema`: the record without its observation-time fields (osh-core OM_COMPONENTS_FILTER).
    public static func resultSchema(_ record: DataComponent) -> DataComponent {
        var r = record
        if case .record(let fields) = record.kind { r.kind = .record(fields.filter { !$0.isObservationTime }) }
        return r
    }

    /// The swe+json `recordSchema`: the record with its time field as `spec.sweJSONTime` says.
    public static func recordSchema(_ spec: OutputSpec) -> DataComponent {
        var r = spec.record
        guard case .record(let fields) = r.kind else { return r }
        let time = spec.sweJSONTime == .phenomenon ? SWE.phenomenonTimeField() : SWE.samplingTimeField()
        r.kind = .record(fields.map { $0.isObservationTime ? time : $0 })
        return r
    }
}
