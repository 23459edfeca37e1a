import Foundation
import PosternHTTP
@testable import PosternCore

/// The oracle of `JSONTranscoder`'s tests and fuzz target: renders Directus answers through a `JSONValue` tree
/// (docs/api.md, Resources): mapped fields only, in config order, renamed; ids as strings; required fields never
/// null; optional fields without a value omitted. The transcoder must write the same bytes, or refuse the same
/// answers.
struct JSONValueRenderer: Sendable {
    private let table: FieldTable
    /// `{"<name>":[` as UTF-8.
    private let prefix: [UInt8]

    /// A renderer for `resource`, its tables built once.
    init(_ resource: ResourceConfig) {
        table = FieldTable(resource)
        var prefix: [UInt8] = [UInt8(ascii: "{")]
        JSONValue.writeString(resource.name, into: &prefix)
        prefix.append(contentsOf: ":[".utf8)
        self.prefix = prefix
    }

    /// `{"<name>":[…],"total":N}` from `{"data":[…],"meta":{"filter_count":N}}`.
    func renderList(directusBody: Data) throws(GatewayError) -> Data {
        let document = try JSONValue.parseAnswer(directusBody)
        guard case .array(let items)? = document["data"] else {
            throw .upstreamError("list answer has no \"data\" array")
        }
        let total = Self.total(meta: document["meta"]) ?? Int64(items.count)
        var out = prefix
        out.reserveCapacity(64 + items.count * 96)
        for (i, item) in items.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            try write(item, into: &out)
        }
        out.append(contentsOf: "],\"total\":\(total)}".utf8)
        return Data(out)
    }

    /// `{"<name>":[item],"total":1}` from `{"data":{…}}`.
    func renderItem(directusBody: Data) throws(GatewayError) -> Data {
        let document = try JSONValue.parseAnswer(directusBody)
        guard let item = document["data"], item.objectValue != nil else {
            throw .upstreamError("item answer has no \"data\" object")
        }
        var out = prefix
        try write(item, into: &out)
        out.append(contentsOf: "],\"total\":1}".utf8)
        return Data(out)
    }

    /// Appends one Directus item as a resource object.
    private func write(_ item: JSONValue, into out: inout [UInt8]) throws(GatewayError) {
        guard case .object(let members) = item else {
            throw .upstreamError("item is a \(item.typeName), not an object")
        }
        // One pass over the item: pick each mapped field's value (first occurrence wins).
        var slots = [JSONValue?](repeating: nil, count: table.fields.count)
        for (key, value) in members {
            guard let indices = table.indicesByDirectusName[key] else { continue }
            for index in indices where slots[index] == nil { slots[index] = value }
        }
        out.append(UInt8(ascii: "{"))
        var first = true
        for (index, field) in table.fields.enumerated() {
            let value = slots[index]
            if field.isID {
                guard let id = value?.idString else {
                    throw .upstreamError("item has no usable \"\(field.directusName)\" key: \(value?.text ?? "missing")")
                }
                if !first { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: field.keyBytes)
                JSONValue.writeString(id, into: &out)
            } else if field.isRequired, let value, !value.isNull {
                // Clients decode required fields as strings: a number or boolean is rendered as its text.
                guard let text = value.requiredString else {
                    throw .upstreamError("required field \"\(field.directusName)\" is a \(value.typeName)")
                }
                if !first { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: field.keyBytes)
                JSONValue.writeString(text, into: &out)
            } else if let value, !value.isNull {
                if !first { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: field.keyBytes)
                value.write(into: &out)
            } else if field.isRequired {
                if !first { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: field.keyBytes)
                out.append(contentsOf: "\"\"".utf8)
            } else {
                continue
            }
            first = false
        }
        out.append(UInt8(ascii: "}"))
    }

    /// `meta.filter_count`, else `meta.total_count`, when one is a non-negative integer.
    private static func total(meta: JSONValue?) -> Int64? {
        for key in ["filter_count", "total_count"] {
            if let count = meta?[key]?.intValue ?? meta?[key]?.stringValue.flatMap({ Int64($0) }), count >= 0 {
                return count
            }
        }
        return nil
    }
}

/// The resources the transcoder is checked with against the flat reference: the shipped two without their
/// relations (LiveRelationsTests and MappingTests check those), and one with awkward names (a resource name that needs
/// escaping, non-ASCII and repeated Directus names, no `id` field).
let transcoderTestResources: [ResourceConfig] = {
    var odd = ResourceConfig(name: "odd \"list\"", collection: "odd",
                             fields: [("naïve", "café"), ("first", "title"), ("again", "title"), ("kelvin", "K"),
                                      ("n", "n")])
    odd.required = ["again", "n"]
    let flat = ResourceConfig.shipped.map { resource -> ResourceConfig in
        var flat = resource
        flat.fields = resource.fields.filter { !$0.1.isRelated }
        flat.detailFields = []
        return flat
    }
    return flat + [odd]
}()
