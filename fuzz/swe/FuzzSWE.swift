// libFuzzer target for the SWE Common JSON schema decoder and the record reader
// (OSHCore/Decoding). Built by fuzz/run.sh swe against all of OSHCore (fuzz/targets.sh).
//
// Input: a schema as JSON text, then optionally a NUL byte and an observation body.
// Each input is checked for:
//  * no crash, no out-of-bounds access (AddressSanitizer), no trap;
//  * schema round trip: a component (or BinaryEncoding) that decoded, written back with
//    SWEJSON, decodes to the same value;
//  * a reader built from a decoded schema reads the body as JSON and, with a BinaryEncoding,
//    as swe+binary; every record it returns has the same leaf paths.

@testable import OSHCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSWE(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: size)
    let cut = input.firstIndex(of: 0) ?? size
    guard let json = try? JSONValue.parse(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: input[0..<cut]))) else { return 0 }
    let body = cut < size ? Array(input[(cut + 1)...]) : []

    // A bare component, or the recordSchema / resultSchema of a datastream schema.
    for c in [json, json["recordSchema"], json["resultSchema"]] {
        guard let c, let component = try? SchemaDecoder.component(c) else { continue }
        checkRoundTrip(component)
        if let reader = try? RecordReader(record: component) { read(body, with: reader) }
    }
    if let e = json["recordEncoding"] ?? json["encoding"], let enc = try? SchemaDecoder.binaryEncoding(e) {
        let again = try? SchemaDecoder.binaryEncoding(JSONValue.parse(written { SWEJSON.write(enc, to: &$0) }))
        precondition(again == enc, "BinaryEncoding round trip: \(enc) → \(String(describing: again))")
    }
    if let schema = try? SchemaDecoder.datastreamSchema(json), let reader = try? schema.reader() {
        read(body, with: reader)
    }
    return 0
}

/// One buffer for every input: the harness should cost little next to the decoder.
nonisolated(unsafe) private let scratch = ByteBuffer(capacity: 1 << 16)

private func written(_ body: (inout JSONWriter) -> Void) -> [UInt8] {
    scratch.reset()
    var w = JSONWriter(scratch)
    body(&w)
    return scratch.array
}

private func checkRoundTrip(_ c: DataComponent) {
    let text = written { SWEJSON.write(c, to: &$0) }
    do {
        // Compared as written text: NaN bounds and values never equal themselves.
        let again = try SchemaDecoder.component(JSONValue.parse(text))
        precondition(
            written { SWEJSON.write(again, to: &$0) } == text, "component round trip changed it: \(String(decoding: text, as: UTF8.self))")
    } catch {
        preconditionFailure("a decoded component, written back, does not decode: \(error): \(String(decoding: text, as: UTF8.self))")
    }
}

private func read(_ body: [UInt8], with reader: RecordReader) {
    for form in [JSONObservationForm.auto, .record, .observation] {
        checkRecords(reader.decodeJSON(body, form: form))
    }
    if reader.encoding != nil {
        checkRecords(reader.decodeBinary(body))
        body.withUnsafeBytes { checkRecords(reader.decodeBinary($0)) }
    }
}

private func checkRecords(_ r: DecodedRecords) {
    guard let first = r.records.first else { return }
    let paths = first.fields.map(\.path)
    for rec in r.records.dropFirst() {
        precondition(rec.fields.map(\.path) == paths, "records of one reader differ in their leaves")
    }
}
