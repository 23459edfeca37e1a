import FoundationEssentials
import PosternHTTP

/// The OpenAPI paths and schemas of one configured resource (docs/api.md, Resources).
struct ResourceDescription {
    let resource: ResourceConfig
    /// The mapped fields as the renderer and the write parser see them.
    let table: FieldTable
    /// The fields of `GET /{id}` (`table` when the resource has no `detail_fields`).
    let detailTable: FieldTable
    /// The schema name prefix: the resource name with its first letter capitalised (`books` → `Books`).
    let typeName: String

    /// Describes `resource`.
    init(_ resource: ResourceConfig) {
        self.resource = resource
        table = FieldTable(resource)
        detailTable = resource.detailFields.isEmpty ? table : FieldTable(resource, detail: true)
        typeName = resource.name.prefix(1).uppercased() + resource.name.dropFirst()
    }

    private var name: String { resource.name }
    private func rule(_ action: ResourceAction) -> PermissionRule { resource.permissions[action] ?? .nobody }
    private var maxLimit: Int { max(1, resource.maxLimit) }
    private var defaultLimit: Int { min(max(1, resource.defaultLimit), maxLimit) }
    private var writableFields: [MappedField] { table.fields.filter(\.isWritable) }

    // MARK: Paths

    /// `/api/v1/<name>` and `/api/v1/<name>/{id}`.
    func paths() -> [(String, JSONValue)] {
        typealias D = OpenAPIDocument
        let one = D.jsonContent(D.ref(typeName + "List"))
        let createRule = rule(.create), updateRule = rule(.update)
        let collection: [(String, JSONValue)] = [
            ("get", D.operation(
                id: "list\(typeName)", tag: name, summary: "List \(name).",
                description: "`total` counts every item matching the query (all pages); `\(name)` is `[]` when nothing matches. "
                    + "Unknown query parameters are ignored and never forwarded. " + ruleText(.list),
                security: access(rule(.list)), body: nil, parameters: listParameters(),
                responses: [("200", D.response("A page of items.", D.jsonContent(D.ref(typeName + "List"))))]
                    + errors([400, 401, 403, 413, 414, 429, 500, 502, 503, 504]),
                extensions: [("x-postern-rule", .string(rule(.list).description))])),
            ("post", D.operation(
                id: "create\(typeName)", tag: name, summary: "Create an item (or, with an `id` in the body, update that item).",
                description: "Without `id`: a create, answered 201. " + ruleText(.create)
                    + " With an `id` (the tutorial server's compatibility form): an update of that item, answered 200. "
                    + ruleText(.update),
                security: createRule == .public || updateRule == .public ? .public : .bearer,
                body: D.ref(typeName + "Post"),
                responses: [("201", D.response("Created.", one)), ("200", D.response("Updated (the body carried an `id`).", one))]
                    + errors([400, 401, 403, 404, 409, 413, 414, 429, 500, 502, 503, 504]),
                extensions: [("x-postern-rule", .string(createRule.description)),
                             ("x-postern-update-rule", .string(updateRule.description))])),
        ]
        let updateOperation = { (id: String, summary: String) in
            D.operation(
                id: id, tag: name, summary: summary,
                description: "A partial update: only the fields given change (`PUT` behaves like `PATCH`). " + ruleText(.update),
                security: access(updateRule), body: D.ref(typeName + "Update"), parameters: [idParameter()],
                responses: [("200", D.response("Updated.", one))]
                    + errors([400, 401, 403, 404, 409, 413, 414, 429, 500, 502, 503, 504]),
                extensions: [("x-postern-rule", .string(updateRule.description))])
        }
        let item: [(String, JSONValue)] = [
            ("get", D.operation(
                id: "read\(typeName)", tag: name, summary: "Read one item.",
                description: "404 for an item that does not exist or that the caller may not read. " + ruleText(.read),
                security: access(rule(.read)), body: nil, parameters: [idParameter()],
                responses: [("200", D.response("The item.", D.jsonContent(D.ref(readAnswerType))))]
                    + errors([400, 401, 403, 404, 413, 414, 429, 500, 502, 503, 504]),
                extensions: [("x-postern-rule", .string(rule(.read).description))])),
            ("patch", updateOperation("update\(typeName)", "Update an item.")),
            ("put", updateOperation("replace\(typeName)", "Update an item (same as PATCH).")),
            ("delete", D.operation(
                id: "delete\(typeName)", tag: name, summary: "Delete an item.", description: ruleText(.delete),
                security: access(rule(.delete)), body: nil, parameters: [idParameter()],
                responses: [("204", D.response("Deleted.", nil))]
                    + errors([400, 401, 403, 404, 413, 414, 429, 500, 502, 503, 504]),
                extensions: [("x-postern-rule", .string(rule(.delete).description))])),
        ]
        return [("/api/v1/\(name)", .object(collection)), ("/api/v1/\(name)/{id}", .object(item))]
    }

    private func errors(_ statuses: [Int]) -> [(String, JSONValue)] {
        OpenAPIDocument.errors(statuses, errorRef: typeName + "Error")
    }

    private func access(_ rule: PermissionRule) -> OpenAPIDocument.Access {
        rule == .public ? .public : .bearer
    }

    /// The rule of `action` in words.
    private func ruleText(_ action: ResourceAction) -> String {
        let what = action.rawValue
        switch rule(action) {
        case .public: return "Rule `public`: anyone may \(what), with or without a token."
        case .authenticated: return "Rule `authenticated`: any signed-in user may \(what)."
        case .owner where action == .list:
            return "Rule `owner`: a signed-in user lists only the items they created."
        case .owner where action == .create:
            return "Rule `owner`: any signed-in user may create (the creator owns the item)."
        case .owner: return "Rule `owner`: only the item's creator may \(what) it (403 for someone else's item)."
        case .role(let id): return "Rule `role:\(id)`: only users whose Directus role is `\(id)` may \(what) (403 otherwise)."
        case .nobody: return "Rule `nobody`: nobody may \(what) (403)."
        }
    }

    // MARK: Parameters

    private func idParameter() -> JSONValue {
        var schema: [(String, JSONValue)] = [("type", .string("string"))]
        switch resource.idType {
        case .integer: schema.append(("pattern", .string("^(0|[1-9][0-9]{0,17})$")))
        case .uuid:
            schema.append(("pattern", .string("^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")))
        case .string:
            schema += [("minLength", .int(1)), ("maxLength", .int(255))]
        }
        return .object([
            ("name", .string("id")), ("in", .string("path")), ("required", .bool(true)),
            ("description", .string("The item's key (`id_type` \(resource.idType.rawValue)); any other value is 404 without an upstream call.")),
            ("schema", .object(schema)),
        ])
    }

    private func listParameters() -> [JSONValue] {
        func query(_ name: String, _ description: String, _ schema: [(String, JSONValue)]) -> JSONValue {
            .object([("name", .string(name)), ("in", .string("query")), ("required", .bool(false)),
                     ("description", .string(description)), ("schema", .object(schema))])
        }
        let fields = sortableFields
        let alternatives = fields.map(\.regexEscaped).joined(separator: "|")
        let one = "-?(\(alternatives))"
        let searchFields = resource.effectiveSearchFields
        let searchDescription = searchFields.isEmpty
            ? "Not supported: this resource has no search fields (a non-empty value is 400)."
            : "Text found case-insensitively in \(searchFields.map { "`\($0)`" }.joined(separator: " or ")); no other field is searched."
        return [
            query("limit", "Items per page, 1 to \(maxLimit) (default \(defaultLimit)).",
                  [("type", .string("integer")), ("minimum", .int(1)), ("maximum", .int(Int64(maxLimit))),
                   ("default", .int(Int64(defaultLimit)))]),
            query("offset", "Items to skip. Not together with `page`.", [("type", .string("integer")), ("minimum", .int(0))]),
            query("page", "The page (from 1), `limit` items each. Not together with `offset`.",
                  [("type", .string("integer")), ("minimum", .int(1))]),
            query("sort", "Comma-separated fields (\(fields.map { "`\($0)`" }.joined(separator: ", "))), `-field` for descending.",
                  [("type", .string("string")), ("pattern", .string("^\(one)(,\(one))*$"))]),
            query("search", searchDescription,
                  [("type", .string("string"))]),
        ] + filterParameters()
    }

    // MARK: Schemas

    /// `<T>` (one item), `<T>List`, `<T>Create`, `<T>Update`, `<T>Post`, `<T>Error`, and the schemas of nested
    /// objects, lists and the detail item (`relationSchemas`).
    func schemas() -> [(String, JSONValue)] {
        [
            (typeName, itemSchema(table, typeName: typeName)),
            (typeName + "List", .object([
                ("type", .string("object")),
                ("properties", .object([
                    (name, .object([("type", .string("array")), ("items", OpenAPIDocument.ref(typeName))])),
                    ("total", .object([("type", .string("integer")), ("minimum", .int(0))])),
                ])),
                ("required", OpenAPIDocument.strings(name, "total")),
                ("additionalProperties", .bool(false)),
            ])),
            (typeName + "Create", writeSchema(create: true, withID: false)),
            (typeName + "Update", writeSchema(create: false, withID: false)),
            (typeName + "Post", .object([
                ("description", .string("A create body, or an update body with the `id` of the item to update.")),
                ("anyOf", .array([OpenAPIDocument.ref(typeName + "Create"), writeSchema(create: false, withID: true)])),
            ])),
            (typeName + "Error", OpenAPIDocument.errorSchema(collection: name)),
        ] + relationSchemas()
    }

    /// One item as answers render it: mapped fields only, `id` always a string, required fields always strings;
    /// nested objects and lists as references to their own schemas (named from `typeName`).
    func itemSchema(_ table: FieldTable, typeName: String) -> JSONValue {
        let (properties, required) = memberSchemas(table.nodes, typeName: typeName)
        return .object([
            ("type", .string("object")),
            ("description", .string("An item of the Directus collection \"\(resource.collection)\".")),
            ("properties", .object(properties)),
            ("required", .array(required)),
            ("additionalProperties", .bool(false)),
        ])
    }

    /// The schema of one field (not nested, not a list).
    func fieldSchema(_ field: MappedField) -> JSONValue {
        var schema: [(String, JSONValue)]
        if field.isID {
            let note = resource.idType == .integer ? " (an integer key, rendered as a string)" : ""
            schema = [("type", .string("string")), ("description", .string("The item's key\(note)."))]
        } else if field.isRequired {
            schema = [("type", .string("string")),
                      ("description", .string("Never null: an empty value is \"\"; a number or boolean is rendered as its text."))]
        } else {
            schema = [("description", .string("As Directus stores it (any JSON value but null); left out when there is no value."))]
        }
        if field.isWritable { schema.append(("x-postern-writable", .bool(true))) } else { schema.append(("readOnly", .bool(true))) }
        schema.append(("x-postern-directus-field", .string(field.directusName)))
        return .object(schema)
    }

    /// A write body: only writable fields, strings (null allowed when not required), nothing else.
    private func writeSchema(create: Bool, withID: Bool) -> JSONValue {
        var properties: [(String, JSONValue)] = []
        var required: [JSONValue] = []
        if withID {
            var id: [(String, JSONValue)] = [("description", .string("The item to update."))]
            switch resource.idType {
            case .integer:
                id += [("type", .array([.string("string"), .string("integer")])), ("pattern", .string("^(0|[1-9][0-9]{0,17})$")),
                       ("minimum", .int(0)), ("maximum", .int(999_999_999_999_999_999))]
            case .uuid:
                id += [("type", .string("string")),
                       ("pattern", .string("^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"))]
            case .string:
                id += [("type", .array([.string("string"), .string("integer")])), ("minLength", .int(1)), ("maxLength", .int(255))]
            }
            properties.append(("id", .object(id)))
            required.append(.string("id"))
        }
        for field in writableFields {
            if field.isRequired {
                properties.append((field.resourceName, .object([("type", .string("string"))])))
                if create { required.append(.string(field.resourceName)) }
            } else {
                properties.append((field.resourceName, .object([("type", .array([.string("string"), .string("null")]))])))
            }
        }
        var members: [(String, JSONValue)] = [("type", .string("object")), ("properties", .object(properties))]
        if !required.isEmpty { members.append(("required", .array(required))) }
        if !create { members.append(("minProperties", .int(withID ? 2 : 1))) }
        members.append(("additionalProperties", .bool(false)))
        return .object(members)
    }
}
