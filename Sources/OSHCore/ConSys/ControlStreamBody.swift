// The control-stream body of `POST /systems/{id}/controlstreams` (application/json),
// as osh-core's CommandStreamBindingJson reads it:
//   {"name", "description"?, "inputName", "schema": {"commandFormat", "parametersSchema"}}
// The control stream is keyed by (system, inputName), so re-posting is idempotent.
// `parametersSchema` is a SWE component written with `type` first everywhere; the
// SWE command-schema form (recordSchema/encoding) is not read by the node on POST.

public enum ControlStreamBody {
    /// The name osh-core would give it: `"<system label> - <inputName>"` unless the caller has a better one.
    public static func name(systemLabel: String, inputName: String) -> String {
        systemLabel + " - " + inputName
    }

    /// Writes the body. `parameters` is the command's SWE component (a DataRecord or DataChoice,
    /// usually); its own `name` is left as is — `inputName` is what the node keys the stream by.
    public static func write(
        name: String, description: String? = nil, inputName: String,
        parameters: DataComponent, to out: ByteBuffer
    ) {
        var w = JSONWriter(out)
        w.beginObject()
        w.key("name"); w.string(name)
        if let d = description, !d.isEmpty { w.key("description"); w.string(d) }
        w.key("inputName"); w.string(inputName)
        w.key("schema"); w.beginObject()
        // Ignored by the node on POST but written first, like obsFormat in a datastream schema.
        w.key("commandFormat"); w.string(MediaType.json)
        w.key("parametersSchema"); SWEJSON.write(parameters, to: &w)
        w.endObject()
        w.endObject()
    }

    public static func bytes(
        name: String, description: String? = nil, inputName: String,
        parameters: DataComponent
    ) -> [UInt8] {
        let b = ByteBuffer()
        write(name: name, description: description, inputName: inputName, parameters: parameters, to: b)
        return b.array
    }

    public static func string(
        name: String, description: String? = nil, inputName: String,
        parameters: DataComponent
    ) -> String {
        String(
            decoding: bytes(name: name, description: description, inputName: inputName, parameters: parameters),
            as: UTF8.self)
    }
}
