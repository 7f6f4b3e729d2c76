// SWE Common 2/3 data components, with exactly the properties osh-core's JSON
// binding writes (SWEJsonBindings), so a schema built here serialises to the
// bytes an Android phone's osh-core would send.

/// A unit of measure: a UCUM `code` (`deg`, `m/s2`) or an `href` URI (ISO-8601 time).
public enum UnitOfMeasure: Sendable, Equatable {
    case code(String)
    case href(String)
}

/// `AllowedValues` constraint of a Quantity or Count: discrete values and/or closed intervals.
public struct AllowedValues: Sendable, Equatable {
    public var values: [Double]
    public var intervals: [ClosedInterval]
    public init(values: [Double] = [], intervals: [ClosedInterval] = []) {
        self.values = values
        self.intervals = intervals
    }
}

public struct ClosedInterval: Sendable, Equatable {
    public var min: Double
    public var max: Double
    public init(_ min: Double, _ max: Double) {
        self.min = min
        self.max = max
    }
}

/// `AllowedTokens` constraint of a Text or Category.
public struct AllowedTokens: Sendable, Equatable {
    public var values: [String]
    public var pattern: String?
    public init(values: [String] = [], pattern: String? = nil) {
        self.values = values
        self.pattern = pattern
    }
}

/// How a scalar is represented in binary encodings (and how precisely it is printed in JSON:
/// a `float32` Quantity is written with Float's shortest form, as osh-core's FloatWriter does).
public enum ScalarDataType: String, Sendable, Equatable, CaseIterable {
    case double, float32 = "float", signedLong, signedInt, signedShort, signedByte
    case unsignedLong, unsignedInt, unsignedShort, unsignedByte
    case boolean, utf8String = "string-utf-8"

    /// The OGC data type URI osh-core writes in a BinaryEncoding member.
    public var uri: String { "http://www.opengis.net/def/dataType/OGC/0/" + rawValue }

    /// Size in bytes in a raw binary encoding; nil for variable-length strings.
    public var byteSize: Int? {
        switch self {
        case .double, .signedLong, .unsignedLong: return 8
        case .float32, .signedInt, .unsignedInt: return 4
        case .signedShort, .unsignedShort: return 2
        case .signedByte, .unsignedByte, .boolean: return 1
        case .utf8String: return nil
        }
    }

    public init?(uri: String) {
        let prefix = "http://www.opengis.net/def/dataType/OGC/0/"
        guard uri.hasPrefix(prefix) else { return nil }
        let tail = String(uri.dropFirst(prefix.count))
        switch tail {
        case "float32", "float": self = .float32
        case "string", "string-utf-8": self = .utf8String
        default:
            guard let t = ScalarDataType(rawValue: tail) else { return nil }
            self = t
        }
    }
}

/// Properties shared by every simple component (osh-core `writeAbstractSimpleComponentProperties`).
public struct SimpleProperties: Sendable, Equatable {
    public var referenceFrame: String?
    public var axisID: String?
    public init(referenceFrame: String? = nil, axisID: String? = nil) {
        self.referenceFrame = referenceFrame
        self.axisID = axisID
    }
}

public struct Quantity: Sendable, Equatable {
    public var simple: SimpleProperties
    public var uom: UnitOfMeasure
    public var constraint: AllowedValues?
    public var value: Double?
    public var dataType: ScalarDataType
    public init(
        uom: UnitOfMeasure, axisID: String? = nil, referenceFrame: String? = nil,
        constraint: AllowedValues? = nil, value: Double? = nil, dataType: ScalarDataType = .double
    ) {
        self.simple = SimpleProperties(referenceFrame: referenceFrame, axisID: axisID)
        self.uom = uom
        self.constraint = constraint
        self.value = value
        self.dataType = dataType
    }
}

public struct Count: Sendable, Equatable {
    public var simple: SimpleProperties
    public var constraint: AllowedValues?
    public var value: Int?
    public var dataType: ScalarDataType
    public init(
        axisID: String? = nil, referenceFrame: String? = nil, constraint: AllowedValues? = nil,
        value: Int? = nil, dataType: ScalarDataType = .signedInt
    ) {
        self.simple = SimpleProperties(referenceFrame: referenceFrame, axisID: axisID)
        self.constraint = constraint
        self.value = value
        self.dataType = dataType
    }
}

public struct Time: Sendable, Equatable {
    public var simple: SimpleProperties
    public var referenceTime: String?
    public var localFrame: String?
    public var uom: UnitOfMeasure
    public var constraint: AllowedValues?
    public var dataType: ScalarDataType
    public init(
        uom: UnitOfMeasure = .href(SWE.isoTimeUnit), referenceFrame: String? = SWE.utcFrame,
        axisID: String? = nil, referenceTime: String? = nil, localFrame: String? = nil,
        constraint: AllowedValues? = nil, dataType: ScalarDataType = .double
    ) {
        self.simple = SimpleProperties(referenceFrame: referenceFrame, axisID: axisID)
        self.referenceTime = referenceTime
        self.localFrame = localFrame
        self.uom = uom
        self.constraint = constraint
        self.dataType = dataType
    }

    /// True when values are ISO-8601 strings in JSON (the ISO-8601 Gregorian unit).
    public var isISO: Bool { uom == .href(SWE.isoTimeUnit) }
}

public struct Text: Sendable, Equatable {
    public var simple: SimpleProperties
    public var constraint: AllowedTokens?
    public var value: String?
    public init(constraint: AllowedTokens? = nil, value: String? = nil) {
        self.simple = SimpleProperties()
        self.constraint = constraint
        self.value = value
    }
}

public struct Category: Sendable, Equatable {
    public var simple: SimpleProperties
    public var codeSpace: String?
    public var constraint: AllowedTokens?
    public var value: String?
    public init(codeSpace: String? = nil, constraint: AllowedTokens? = nil, value: String? = nil) {
        self.simple = SimpleProperties()
        self.codeSpace = codeSpace
        self.constraint = constraint
        self.value = value
    }
}

public struct BooleanComponent: Sendable, Equatable {
    public var simple: SimpleProperties
    public var value: Bool?
    public init(value: Bool? = nil) {
        self.simple = SimpleProperties()
        self.value = value
    }
}

public struct Vector: Sendable, Equatable {
    public var referenceFrame: String?
    public var localFrame: String?
    public var coordinates: [DataComponent]
    public init(referenceFrame: String?, localFrame: String? = nil, coordinates: [DataComponent]) {
        self.referenceFrame = referenceFrame
        self.localFrame = localFrame
        self.coordinates = coordinates
    }
}

public struct DataArray: Sendable, Equatable {
    /// The element count: an inline Count (fixed size, osh-core names it `elementCount`)
    /// or a link to a Count elsewhere in the record (`#ID`, variable size).
    public enum ElementCount: Sendable, Equatable {
        case inline(DataComponent)
        case href(String)
    }
    public var elementCount: ElementCount
    public var elementType: DataComponent
    public init(elementCount: ElementCount, elementType: DataComponent) {
        self.elementCount = elementCount
        self.elementType = elementType
    }
}

public struct DataChoice: Sendable, Equatable {
    public var items: [DataComponent]
    public init(items: [DataComponent]) { self.items = items }
}

/// A SWE Common data component. Common properties live here; the kind holds the rest.
public struct DataComponent: Sendable, Equatable {
    public indirect enum Kind: Sendable, Equatable {
        case record([DataComponent])
        case vector(Vector)
        case quantity(Quantity)
        case count(Count)
        case time(Time)
        case text(Text)
        case category(Category)
        case boolean(BooleanComponent)
        case array(DataArray)
        case choice(DataChoice)
    }

    public var name: String?
    public var definition: String?
    public var id: String?
    public var identifier: String?
    public var label: String?
    public var description: String?
    public var updatable: Bool?
    public var optional: Bool?
    public var kind: Kind

    public init(
        _ kind: Kind, name: String? = nil, definition: String? = nil, label: String? = nil,
        description: String? = nil, id: String? = nil, identifier: String? = nil,
        updatable: Bool? = nil, optional: Bool? = nil
    ) {
        self.kind = kind
        self.name = name
        self.definition = definition
        self.label = label
        self.description = description
        self.id = id
        self.identifier = identifier
        self.updatable = updatable
        self.optional = optional
    }

    /// The JSON `type` string osh-core writes for this component.
    public var typeName: String {
        switch kind {
        case .record: return "DataRecord"
        case .vector: return "Vector"
        case .quantity: return "Quantity"
        case .count: return "Count"
        case .time: return "Time"
        case .text: return "Text"
        case .category: return "Category"
        case .boolean: return "Boolean"
        case .array: return "DataArray"
        case .choice: return "DataChoice"
        }
    }

    /// Child components in schema order (fields, coordinates, choice items); empty for leaves and arrays.
    public var children: [DataComponent] {
        switch kind {
        case .record(let fields): return fields
        case .vector(let v): return v.coordinates
        case .choice(let c): return c.items
        default: return []
        }
    }

    /// True for a Time component carrying the observation's sampling or phenomenon time.
    /// These are the components osh-core's O&M binding moves out of `result` (OM_COMPONENTS_FILTER).
    public var isObservationTime: Bool {
        guard case .time = kind, let def = definition else { return false }
        return SWE.observationTimeDefinitions.contains(def)
    }

    /// The child with this name, if any.
    public func child(named n: String) -> DataComponent? { children.first { $0.name == n } }
}
