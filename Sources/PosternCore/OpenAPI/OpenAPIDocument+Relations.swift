import PosternHTTP

/// The schemas of relations (docs/api.md, Relations): each nested object and each list row has its own schema,
/// named from its path (`Posts` + `author` → `PostsAuthor`; the rows of `comments` → `PostsComments`), and a
/// resource with `detail_fields` has `<T>Detail` for `GET /{id}`.
extension ResourceDescription {
    /// The schema of `GET /{id}`'s answer: `<T>DetailList` with `detail_fields`, else `<T>List`.
    var readAnswerType: String { resource.detailFields.isEmpty ? typeName + "List" : typeName + "DetailList" }

    /// The outputs `sort` accepts: top-level fields, and the fields of nested objects as dot paths.
    var sortableFields: [String] {
        func names(_ nodes: [FieldNode], prefix: String) -> [String] {
            nodes.flatMap { node -> [String] in
                switch node {
                case .field(let field): return [prefix + field.resourceName]
                case .object(let name, _, let members): return names(members, prefix: prefix + name + ".")
                case .list: return []
                }
            }
        }
        return names(table.nodes, prefix: "")
    }

    /// The properties and required names of `nodes`; nested objects and lists refer to schemas named from `typeName`.
    func memberSchemas(_ nodes: [FieldNode], typeName: String) -> ([(String, JSONValue)], [JSONValue]) {
        var properties: [(String, JSONValue)] = []
        var required: [JSONValue] = []
        for node in nodes {
            switch node {
            case .field(let field):
                if field.isID || field.isRequired { required.append(.string(field.resourceName)) }
                properties.append((field.resourceName, fieldSchema(field)))
            case .object(let name, _, _):
                properties.append((name, .object([
                    ("allOf", .array([OpenAPIDocument.ref(Self.nestedName(typeName, name))])),
                    ("description", .string("Read through a relation (read-only); left out when it has no value.")),
                    ("readOnly", .bool(true)),
                ])))
            case .list(let list):
                properties.append((list.name, .object([
                    ("type", .string("array")),
                    ("items", OpenAPIDocument.ref(Self.nestedName(typeName, list.name))),
                    ("maxItems", .int(Int64(list.limit))),
                    ("description", .string("The first \(list.limit) rows of the one-to-many field `\(list.from)`"
                        + (list.sort.map { " sorted by `\($0)`" } ?? "") + " (read-only); `[]` when there is none.")),
                    ("readOnly", .bool(true)),
                    ("x-postern-directus-field", .string(list.from)),
                ])))
                required.append(.string(list.name))
            }
        }
        return (properties, required)
    }

    /// The schemas of every nested object and list row of `fields` and `detail_fields`, and `<T>Detail`,
    /// `<T>DetailList` when the resource has detail fields.
    func relationSchemas() -> [(String, JSONValue)] {
        var out: [(String, JSONValue)] = []
        var seen = Set<String>()
        func add(_ nodes: [FieldNode], typeName: String) {
            for node in nodes {
                let members: [FieldNode]
                let name: String
                switch node {
                case .field: continue
                case .object(let objectName, _, let inner):
                    members = inner
                    name = Self.nestedName(typeName, objectName)
                case .list(let list):
                    members = list.members
                    name = Self.nestedName(typeName, list.name)
                }
                guard seen.insert(name).inserted else { continue }
                let (properties, required) = memberSchemas(members, typeName: name)
                var schema: [(String, JSONValue)] = [("type", .string("object")), ("properties", .object(properties))]
                if !required.isEmpty { schema.append(("required", .array(required))) }
                schema.append(("additionalProperties", .bool(false)))
                out.append((name, .object(schema)))
                add(members, typeName: name)
            }
        }
        add(detailTable.nodes, typeName: typeName)
        if !resource.detailFields.isEmpty {
            let detail = typeName + "Detail"
            out.append((detail, itemSchema(detailTable, typeName: typeName)))
            out.append((detail + "List", .object([
                ("type", .string("object")),
                ("properties", .object([
                    (resource.name, .object([("type", .string("array")), ("items", OpenAPIDocument.ref(detail)),
                                             ("minItems", .int(1)), ("maxItems", .int(1))])),
                    ("total", .object([("type", .string("integer")), ("const", .int(1))])),
                ])),
                ("required", OpenAPIDocument.strings(resource.name, "total")),
                ("additionalProperties", .bool(false)),
            ])))
        }
        return out
    }

    /// `typeName` followed by `name` with its first letter capitalised.
    static func nestedName(_ typeName: String, _ name: String) -> String {
        typeName + name.prefix(1).uppercased() + name.dropFirst()
    }
}
