import OSHCore

/// `osh-edge schema`: the exact bodies the agent will POST, for people to inspect
/// and for tests to check. Nothing here talks to a node.
public struct SchemaRequest: Sendable {
    public enum What: Sendable, Equatable {
        case output(String)
        case all
        case system
        case feature
        case list
    }

    public var what: What = .all
    public var format: ScalarFormat = .omJSON
    public var options: OutputOptions
    public var identity: SystemIdentity
    /// Start of the system's validTime (epoch seconds); the agent uses its own start.
    public var validFrom: Double
    public var pretty = false

    public init(what: What, identity: SystemIdentity, options: OutputOptions, validFrom: Double) {
        self.what = what
        self.identity = identity
        self.options = options
        self.validFrom = validFrom
    }
}

public enum SchemaCommandError: Error, CustomStringConvertible, Equatable {
    case unknownOutput(String, known: [String])

    public var description: String {
        switch self {
        case .unknownOutput(let n, let known):
            return "no output named '\(n)'; the outputs are: \(known.joined(separator: ", "))"
        }
    }
}

public enum SchemaCommand {
    /// The documents to print, one per line (or pretty-printed when asked).
    public static func documents(_ r: SchemaRequest) throws -> [String] {
        let specs = OutputCatalogue.all(r.options)
        let docs: [String]
        switch r.what {
        case .list:
            return specs.map { "\($0.outputName)\t\(DatastreamBody.obsFormat($0, scalarFormat: r.format))" }
        case .all:
            docs = specs.map { DatastreamBody.string($0, systemLabel: r.identity.label, scalarFormat: r.format) }
        case .output(let name):
            guard let spec = specs.first(where: { $0.outputName == name }) else {
                throw SchemaCommandError.unknownOutput(name, known: specs.map(\.outputName))
            }
            docs = [DatastreamBody.string(spec, systemLabel: r.identity.label, scalarFormat: r.format)]
        case .system:
            docs = [
                SystemBody.string(
                    SystemDescription(
                        uid: r.identity.uid, label: r.identity.label,
                        serial: r.identity.serial, validFrom: r.validFrom,
                        outputs: specs))
            ]
        case .feature:
            docs = [SamplingFeature.string(systemUID: r.identity.uid)]
        }
        return r.pretty ? docs.map { JSONPretty.format($0) } : docs
    }
}
