// libFuzzer target for the spool's on-disk record reader (OSHCore/Publishing/SpoolFormat.swift):
// the input is a segment file's bytes, walked the way FileSpool.scan walks a chunk (parse a record,
// else resync to the next magic, a torn tail at the end). Built by fuzz/run.sh spool.
//
// Each input is checked for:
//  * no crash, no out-of-bounds access (AddressSanitizer), no trap, and progress at every step;
//  * records and damaged stretches tile the input exactly, with only the last one incomplete;
//  * every record is whole and its CRC holds: re-encoding its key, time and values gives its bytes;
//  * the cursor slot: a slot that decodes encodes back to the same 32 bytes.

/// Room for the largest record; one buffer for every input.
nonisolated(unsafe) private let again = UnsafeMutableRawPointer.allocate(
    byteCount: SpoolRecord.size(values: SpoolRecord.maxValues, held: true), alignment: 8)
nonisolated(unsafe) private let values = UnsafeMutablePointer<Double>.allocate(capacity: SpoolRecord.maxValues)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSpool(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    var pos = 0
    while pos < bytes.count {
        switch SpoolRecord.parse(bytes, at: pos, maxValues: SpoolRecord.maxValues) {
        case .record(let key, let time, let n, let len):
            // A record held for the clock (version 2) carries its boot tag: re-encoded with it.
            let held = SpoolRecord.heldBoot(bytes, recordAt: pos)
            precondition(len == SpoolRecord.size(values: n, held: held != nil) && pos + len <= bytes.count, "record past the end")
            for i in 0..<n { values[i] = SpoolRecord.value(bytes, recordAt: pos, i) }
            let m = SpoolRecord.encode(
                key: key, time: time, values: UnsafeBufferPointer(start: values, count: n), into: again,
                heldBoot: held)
            precondition(m == len && same(again, data + pos, len), "a record read back does not re-encode to its bytes")
            pos += len
        case .invalid:
            let next = SpoolRecord.resync(bytes, after: pos)
            precondition(next > pos && next <= bytes.count, "resync made no progress")
            precondition(next == bytes.count || bytes[next] == SpoolRecord.magic0, "resync stopped off a magic")
            pos = next
        case .incomplete:
            // The torn tail: a prefix of a record that could still be whole, so it must start with the magic.
            precondition(bytes[pos] == SpoolRecord.magic0, "incomplete, but no record starts here")
            pos = bytes.count
        }
    }
    // A smaller limit (as a reader of an older, narrower output would use) only turns records into damage.
    if case .record(_, _, let n, _) = SpoolRecord.parse(bytes, at: 0, maxValues: 3) { precondition(n <= 3) }

    if let c = SpoolCursor.decode(bytes) {
        c.encode(into: again)
        // The spare word (24..<28) is written as zero; a slot with other bits there is still taken.
        precondition(
            same(again, data, 24) && SpoolCursor.decode(UnsafeRawBufferPointer(start: again, count: 32)) == c,
            "cursor round trip")
    }
    return 0
}

private func same(_ a: UnsafeMutableRawPointer, _ b: UnsafePointer<UInt8>, _ n: Int) -> Bool {
    UnsafeRawBufferPointer(start: a, count: n).elementsEqual(UnsafeRawBufferPointer(start: b, count: n))
}
