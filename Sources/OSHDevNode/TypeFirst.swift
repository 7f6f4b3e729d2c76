// The node's "type first" rule (osh-core SWEJsonBindings.beginObjectWithType with
// enforceTypeFirst, SMLJsonBindings): which JSON objects must open with `"type"`, which may
// carry it anywhere (links allowed: elementCount, quality, SensorML components), and the exact
// wording of the node's errors, with Gson-style paths.
import OSHCore

/// An error raised while checking or reading a body; the caller adds the node's prefix
/// ("Invalid JSON: ", "Invalid payload: Invalid JSON: ") for the resource at hand.
struct BodyError: Error {
    var message: String
}

enum TypeFirst {
    // MARK: SWE Common

    /// A data component read with beginObjectWithType: `type` must be the first member.
    static func component(_ v: JSONValue, at p: GsonPath) throws(BodyError) {
        let m = try object(v, p)
        try requireTypeFirst(m, p)
        try componentChildren(type: m[0].1.string ?? "", m, p)
    }

    /// An object read with beginObjectWithTypeOrLink: `type` (or `href`) anywhere.
    static func componentOrLink(_ v: JSONValue, at p: GsonPath) throws(BodyError) {
        let m = try object(v, p)
        if let t = m.first(where: { $0.0 == "type" })?.1.string {
            try componentChildren(type: t, m, p)
        } else if !m.contains(where: { $0.0 == "href" }) {
            throw BodyError(message: "Missing 'type' property in JSON object @ " + p.text)
        }
    }

    static func componentChildren(type: String, _ m: [(String, JSONValue)], _ p: GsonPath) throws(BodyError) {
        for (k, v) in m {
            switch (type, k) {
            case ("DataRecord", "fields"), ("Vector", "coordinates"), ("DataChoice", "items"):
                try list(v, p.key(k)) { (x, q) throws(BodyError) in try component(x, at: q) }
            case ("DataArray", "elementType"), ("Matrix", "elementType"):
                try component(v, at: p.key(k))
            case ("DataArray", "elementCount"), ("Matrix", "elementCount"):
                try componentOrLink(v, at: p.key(k))
            case (_, "quality"):
                try list(v, p.key(k)) { (x, q) throws(BodyError) in try componentOrLink(x, at: q) }
            case ("DataArray", "encoding"), ("Matrix", "encoding"):
                try encoding(v, at: p.key(k))
            default:
                continue
            }
        }
    }

    /// A `recordEncoding` (or any encoding): type first; a BinaryEncoding's members too.
    static func encoding(_ v: JSONValue, at p: GsonPath) throws(BodyError) {
        let m = try object(v, p)
        try requireTypeFirst(m, p)
        guard m[0].1.string == "BinaryEncoding" else { return }
        for (k, x) in m where k == "members" {
            try list(x, p.key(k)) { (member, q) throws(BodyError) in
                let mm = try object(member, q)
                try requireTypeFirst(mm, q)
                let t = mm[0].1.string ?? ""
                if t != "Component" && t != "Block" {
                    throw BodyError(message: "Invalid binary component type: \(t) @ " + q.key("type").text)
                }
            }
        }
    }

    // MARK: SensorML

    static let processTypes: Set<String> = ["SimpleProcess", "AggregateProcess", "PhysicalComponent", "PhysicalSystem"]

    /// A SensorML process as POST /systems reads it (readAbstractProcess): strict at the root.
    /// Returns its type.
    @discardableResult
    static func smlProcess(_ v: JSONValue, at p: GsonPath, strict: Bool = true) throws(BodyError) -> String? {
        let m = try object(v, p)
        let type: String
        if strict {
            try requireTypeFirst(m, p)
            type = m[0].1.string ?? ""
        } else {
            guard let t = m.first(where: { $0.0 == "type" })?.1.string else {
                if m.contains(where: { $0.0 == "href" }) { return nil }
                throw BodyError(message: "Missing 'type' property in JSON object @ " + p.text)
            }
            type = t
        }
        guard processTypes.contains(type) else {
            throw BodyError(message: "Unknown object type: \(type) @ " + p.key("type").text)
        }
        for (k, x) in m {
            let q = p.key(k)
            switch k {
            case "components":
                // readComponent: beginObjectWithTypeOrLink, so `type` may come anywhere there.
                try list(x, q) { (c, cq) throws(BodyError) in try smlProcess(c, at: cq, strict: false) }
            case "inputs", "outputs", "parameters":
                try list(x, q) { (io, iq) throws(BodyError) in try ioObject(io, at: iq) }
            case "characteristics", "capabilities":
                try list(x, q) { (group, gq) throws(BodyError) in
                    let g = try object(group, gq)
                    for (gk, gv) in g where gk == "characteristics" || gk == "capabilities" || gk == "conditions" {
                        try list(gv, gq.key(gk)) { (c, cq) throws(BodyError) in try component(c, at: cq) }
                    }
                }
            case "position":
                let pm = try object(x, q)
                try requireTypeFirst(pm, q)
            default:
                continue
            }
        }
        return type
    }

    /// An input/output/parameter (readIOObject): `type` and `name` before every other member.
    static func ioObject(_ v: JSONValue, at p: GsonPath) throws(BodyError) {
        let m = try object(v, p)
        var type: String?, name: String?
        for (k, x) in m {
            if k == "type" {
                type = x.string ?? ""
            } else if k == "name" {
                name = x.string ?? ""
            } else {
                if type == nil {
                    throw BodyError(message: "JSON object must contain a 'type' property before the other members @ " + p.key(k).text)
                }
                if name == nil {
                    throw BodyError(message: "JSON object must contain a 'name' property before the other members @ " + p.key(k).text)
                }
            }
            if type != nil && name != nil { break }
        }
        try componentChildren(type: type ?? "", m, p)
    }

    // MARK: Helpers

    static func requireTypeFirst(_ m: [(String, JSONValue)], _ p: GsonPath) throws(BodyError) {
        guard let first = m.first else {
            throw BodyError(message: "Missing 'type' property in JSON object @ " + p.text)
        }
        if first.0 != "type" {
            throw BodyError(message: "Required 'type' property as first member of JSON object @ " + p.key(first.0).text)
        }
        if first.1.string == nil {
            throw BodyError(message: "Expected a string but was \(gsonToken(first.1)) at path " + p.key("type").text)
        }
    }

    static func object(_ v: JSONValue, _ p: GsonPath) throws(BodyError) -> [(String, JSONValue)] {
        guard case .object(let m) = v else {
            throw BodyError(message: "Expected BEGIN_OBJECT but was \(gsonToken(v)) at path " + p.text)
        }
        return m
    }

    static func list(
        _ v: JSONValue, _ p: GsonPath,
        _ each: (JSONValue, GsonPath) throws(BodyError) -> Void
    ) throws(BodyError) {
        guard case .array(let a) = v else {
            throw BodyError(message: "Expected BEGIN_ARRAY but was \(gsonToken(v)) at path " + p.text)
        }
        for (i, x) in a.enumerated() { try each(x, p.index(i)) }
    }
}
