// What RecordReader decodes: values, records and their paths, whatever the wire format.

/// One decoded value.
public enum SWEValue: Sendable, Equatable {
    /// Epoch seconds for ISO-8601 times; for other times the number in the component's unit.
    case time(Double)
    case number(Double)
    case count(Int)
    case bool(Bool)
    /// Text or Category.
    case text(String)
    /// A DataArray or DataChoice encoded as one binary Block (e.g. an H.264 frame).
    case block([UInt8])
    /// A DataArray: elements are scalars, `.record` (record/vector elements), `.array`, `.choice`.
    case array([SWEValue])
    /// A record or vector element of an array, paths relative to the element.
    case record(SWERecordValue)
    /// A DataChoice: the chosen item's name and its value, paths as `SchemaWalker.leaves(of: item)`
    /// gives them (`/` for a scalar item).
    case choice(item: String, value: SWERecordValue)
    /// No value: an omitted optional field, a JSON `null` text, or a result the node did not show.
    case absent

    /// Times, numbers, counts and booleans (1/0) as a Double.
    public var double: Double? {
        switch self {
        case .time(let d), .number(let d): return d
        case .count(let n): return Double(n)
        case .bool(let b): return b ? 1 : 0
        default: return nil
        }
    }
}

/// One decoded record: its leaves in SchemaWalker order, plus what an O&M observation adds.
public struct SWERecordValue: Sendable, Equatable {
    /// `(path, value)` in `SchemaWalker.leaves` order: `/time`, `/location/lat`, …
    public var fields: [(path: String, value: SWEValue)]
    /// O&M `phenomenonTime`, epoch seconds.
    public var phenomenonTime: Double?
    /// O&M `resultTime`, epoch seconds.
    public var resultTime: Double?
    /// O&M `foi@id`.
    public var foiID: String?
    /// The node's observation `id`.
    public var id: String?

    public init(
        fields: [(path: String, value: SWEValue)], phenomenonTime: Double? = nil,
        resultTime: Double? = nil, foiID: String? = nil, id: String? = nil
    ) {
        self.fields = fields
        self.phenomenonTime = phenomenonTime
        self.resultTime = resultTime
        self.foiID = foiID
        self.id = id
    }

    /// The value at a leaf path.
    public subscript(path: String) -> SWEValue? {
        for f in fields where f.path == path { return f.value }
        return nil
    }

    /// The numeric leaves (time, quantity, count, boolean as 1/0) in order: what a sensor emits.
    public var doubles: [Double] { fields.compactMap { $0.value.double } }

    public static func == (a: SWERecordValue, b: SWERecordValue) -> Bool {
        guard a.fields.count == b.fields.count, a.phenomenonTime == b.phenomenonTime, a.resultTime == b.resultTime,
            a.foiID == b.foiID, a.id == b.id
        else { return false }
        for i in a.fields.indices where a.fields[i].path != b.fields[i].path || a.fields[i].value != b.fields[i].value {
            return false
        }
        return true
    }
}

/// The records of a body, and the error that stopped decoding, if any. Records before the
/// error are kept: a truncated binary stream or a bad 7th observation still yields 6.
public struct DecodedRecords: Sendable, Equatable {
    public var records: [SWERecordValue]
    public var error: SWEDecodingError?
    public init(records: [SWERecordValue], error: SWEDecodingError? = nil) {
        self.records = records
        self.error = error
    }
}

/// What a JSON body holds.
public enum JSONObservationForm: Sendable {
    /// Per item: O&M if it has both `phenomenonTime` and `result`, else a swe+json record.
    case auto
    /// swe+json records.
    case record
    /// O&M JSON observations.
    case observation
}
