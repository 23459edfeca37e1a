import PosternHTTP

extension PosternConfig {
    /// The keys of a one-to-many list in `fields`.
    static let listKeys = ["from", "fields", "sort", "limit"]

    /// Decodes a resource's `fields` or `detail_fields` (docs/api.md, Relations): a string is a Directus field or
    /// a dot path, an object with `from` a one-to-many list, any other object a nested object. Problems are reported
    /// at their key path; what cannot be read is left out.
    static func decodeFields(_ value: JSONValue, at path: String, reader: inout ConfigReader) -> [(String, FieldSpec)] {
        guard let members = value.objectValue else {
            reader.report(path, "must be an object of resource field → Directus field, not \(value.typeName)")
            return []
        }
        var fields: [(String, FieldSpec)] = []
        for (key, target) in members {
            let keyPath = "\(path).\(key)"
            if fields.contains(where: { $0.0 == key }) {
                reader.report(keyPath, "duplicate key")
            } else if let spec = decodeField(target, at: keyPath, reader: &reader) {
                fields.append((key, spec))
            }
        }
        return fields
    }

    /// One output field: a path, a list (an object with `from`) or a nested object.
    private static func decodeField(_ value: JSONValue, at path: String, reader: inout ConfigReader) -> FieldSpec? {
        if let text = value.stringValue { return .path(text) }
        guard let members = value.objectValue else {
            reader.report(path, "must be a Directus field (a string), a nested object or a list, not \(value.typeName)")
            return nil
        }
        guard members.contains(where: { $0.0 == "from" }) else {
            return .object(decodeFields(value, at: path, reader: &reader))
        }
        guard let o = reader.object(value, at: path, keys: listKeys) else { return nil }
        let from = reader.string(o, "from", at: path) ?? ""
        var list = ListSpec(from: from, fields: [])
        if let inner = o["fields"] {
            list.fields = decodeFields(inner, at: "\(path).fields", reader: &reader)
        } else {
            reader.report("\(path).fields", "is required")
        }
        list.sort = reader.string(o, "sort", at: path)
        if let limit = reader.int(o, "limit", at: path, rule: .positive) { list.limit = limit }
        return .list(list)
    }
}
