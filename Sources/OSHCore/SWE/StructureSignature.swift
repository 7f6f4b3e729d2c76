// Whether two schemas describe records the same way, by osh-core's own rule
// (sensorhub-core DataComponentChecks.getStructCompatibilityHashCode): the same component names,
// types and order at every depth, and the same child count for every block. Labels, definitions,
// units and constraints may differ: a record written for one parses against the other.

extension DataComponent {
    /// A text equal for two components exactly when their structures are compatible.
    public var structureSignature: String {
        var out = ""
        appendSignature(to: &out, isRoot: true)
        return out
    }

    private func appendSignature(to out: inout String, isRoot: Bool) {
        if !isRoot { out += (name ?? "") + ":" }
        out += typeName
        let kids = children
        if !kids.isEmpty { out += "[\(kids.count)]" }
        out += "("
        for c in kids { c.appendSignature(to: &out, isRoot: false) }
        if case .array(let a) = kind { a.elementType.appendSignature(to: &out, isRoot: false) }
        out += ")"
    }
}
