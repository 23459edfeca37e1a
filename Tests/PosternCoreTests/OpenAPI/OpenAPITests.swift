import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP
import PosternCoreTesting

/// The OpenAPI document describes the configured API (docs/api.md, OpenAPI): every resource with its
/// routes, fields, required and writable fields, list parameters and rules; and the gateway serves it.
@Suite struct OpenAPITests {
    /// The shipped config file, loaded as `postern openapi` loads it.
    static func shipped() throws -> PosternConfig {
        try PosternConfig.load(json: Data(contentsOf: ConfigTests.shippedFile), environment: [:]).get()
    }

    /// A config with one resource unlike the shipped ones: uuid keys, another collection, a public list,
    /// a role rule, `nobody` for delete, a small page size.
    static func custom() throws -> PosternConfig {
        let json = #"""
            {"resources": [
              {"name": "notes", "collection": "memo", "id_type": "uuid",
               "fields": {"id": "uuid", "heading": "headline", "text": "body", "tag": "label", "author": "user_created"},
               "required": ["heading", "tag"], "writable": ["heading", "text"], "owner": "user_created",
               "max_limit": 7, "default_limit": 3,
               "permissions": {"list": "public", "read": "role:editors", "create": "authenticated",
                               "update": "owner", "delete": "nobody"}}
            ]}
            """#
        return try PosternConfig.load(json: Data(json.utf8), environment: [:]).get()
    }

    /// `#/components/schemas/<name>` of `document`.
    static func schema(_ document: JSONValue, _ name: String) -> JSONValue? {
        document["components"]?["schemas"]?[name]
    }

    /// The keys of an object, in order.
    static func keys(_ value: JSONValue?) -> [String] {
        value?.objectValue?.map(\.0) ?? []
    }

    /// The strings of an array.
    static func strings(_ value: JSONValue?) -> [String] {
        value?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    /// Resolves a `$ref` (or returns the value itself).
    static func resolve(_ document: JSONValue, _ value: JSONValue?) -> JSONValue? {
        guard let ref = value?["$ref"]?.stringValue else { return value }
        return schema(document, String(ref.dropFirst("#/components/schemas/".count)))
    }

    /// The bearer requirement alone, or optional (an empty requirement first), as the operation says.
    enum Security: Equatable { case bearer, optional, other }

    static func security(_ operation: JSONValue?) -> Security {
        guard let list = operation?["security"]?.arrayValue else { return .other }
        let names = list.map { keys($0) }
        if names == [["bearerAuth"]] { return .bearer }
        if names == [[], ["bearerAuth"]] { return .optional }
        return .other
    }

    /// Checks everything the document says about `resource` against its config.
    static func expectDescribes(_ document: JSONValue, _ resource: ResourceConfig) {
        let name = resource.name
        let type = name.prefix(1).uppercased() + name.dropFirst()
        let collectionPath = document["paths"]?["/api/v1/\(name)"]
        let itemPath = document["paths"]?["/api/v1/\(name)/{id}"]
        #expect(keys(collectionPath) == ["get", "post"], "\(name)")
        #expect(keys(itemPath) == ["get", "patch", "put", "delete"], "\(name)")

        // Fields: every mapped field in config order; id and required fields are strings and always present.
        let item = schema(document, type)
        #expect(keys(item?["properties"]) == resource.fields.map(\.0), "\(name)")
        #expect(strings(item?["required"]) == resource.fields.map(\.0).filter { $0 == "id" || resource.required.contains($0) })
        #expect(item?["additionalProperties"] == .bool(false))
        for (field, spec) in resource.fields {
            guard let directus = spec.pathValue, !spec.isRelated else { continue }
            let property = item?["properties"]?[field]
            // A raw many-to-one key whose relation is read below is read as `<field>.id`.
            let read = property?["x-postern-directus-field"]?.stringValue
            #expect(read == directus || read == directus + ".id", "\(name).\(field)")
            let isString = field == "id" || resource.required.contains(field)
            #expect(property?["type"] == (isString ? .string("string") : nil), "\(name).\(field)")
            let writable = resource.writable.contains(field) && field != "id"
            #expect(property?["x-postern-writable"] == (writable ? .bool(true) : nil), "\(name).\(field)")
            #expect(property?["readOnly"] == (writable ? nil : .bool(true)), "\(name).\(field)")
        }

        // Answers: the collection key and `total`; errors carry the empty collection and `total` too.
        let list = schema(document, type + "List")
        #expect(keys(list?["properties"]) == [name, "total"])
        #expect(list?["properties"]?[name]?["items"]?["$ref"]?.stringValue == "#/components/schemas/\(type)")
        let error = schema(document, type + "Error")
        #expect(strings(error?["required"]) == ["error", "code", "request_id", name, "total"])
        #expect(error?["properties"]?[name]?["maxItems"] == .int(0))

        // Writes: only writable fields, nothing else; create requires the required writable ones.
        let writable = resource.fields.map(\.0).filter { resource.writable.contains($0) && $0 != "id" }
        let create = schema(document, type + "Create")
        #expect(keys(create?["properties"]) == writable)
        #expect(strings(create?["required"]) == writable.filter { resource.required.contains($0) })
        #expect(create?["additionalProperties"] == .bool(false))
        let update = schema(document, type + "Update")
        #expect(keys(update?["properties"]) == writable)
        #expect(update?["required"] == nil && update?["minProperties"] == .int(1))
        #expect(update?["additionalProperties"] == .bool(false))
        let withID = schema(document, type + "Post")?["anyOf"]?.arrayValue?.last
        #expect(keys(withID?["properties"]) == ["id"] + writable)
        #expect(strings(withID?["required"]) == ["id"])

        // Operations: bodies, statuses, rules as security requirements.
        let rules = resource.permissions
        let operations: [(JSONValue?, ResourceAction, String, [String])] = [
            (collectionPath?["get"], .list, "200", ["400", "401", "403", "429", "502", "503", "504"]),
            (itemPath?["get"], .read, "200", ["401", "403", "404", "502", "503", "504"]),
            (itemPath?["patch"], .update, "200", ["400", "401", "403", "404", "409", "413", "502", "503", "504"]),
            (itemPath?["put"], .update, "200", ["400", "401", "403", "404", "409", "413", "502", "503", "504"]),
            (itemPath?["delete"], .delete, "204", ["401", "403", "404", "502", "503", "504"]),
        ]
        for (operation, action, success, errors) in operations {
            let rule = rules[action] ?? .nobody
            #expect(operation?["x-postern-rule"]?.stringValue == rule.description, "\(name) \(action)")
            #expect(security(operation) == (rule == .public ? .optional : .bearer), "\(name) \(action)")
            let responses = keys(operation?["responses"])
            #expect(responses.first == success, "\(name) \(action)")
            let documented = Set(responses)
            #expect(Set(errors).isSubset(of: documented), "\(name) \(action): \(responses)")
            for status in responses where status.hasPrefix("4") || status.hasPrefix("5") {
                #expect(operation?["responses"]?[status]?["content"]?["application/json"]?["schema"]?["$ref"]?.stringValue
                            == "#/components/schemas/\(type)Error", "\(name) \(action) \(status)")
            }
        }
        let post = collectionPath?["post"]
        #expect(post?["requestBody"]?["content"]?["application/json"]?["schema"]?["$ref"]?.stringValue
                    == "#/components/schemas/\(type)Post")
        let postStatuses = Set(keys(post?["responses"]))
        #expect(Set(["201", "200", "400", "401", "403", "404", "409", "413"]).isSubset(of: postStatuses))
        #expect(post?["x-postern-rule"]?.stringValue == (rules[.create] ?? .nobody).description)
        for method in ["patch", "put"] {
            #expect(itemPath?[method]?["requestBody"]?["content"]?["application/json"]?["schema"]?["$ref"]?.stringValue
                        == "#/components/schemas/\(type)Update")
        }

        // List parameters: limit bounded by the config, offset, page, sort over the mapped fields, search.
        let parameters = collectionPath?["get"]?["parameters"]?.arrayValue ?? []
        #expect(parameters.compactMap { $0["name"]?.stringValue }
                    == ["limit", "offset", "page", "sort", "search"] + resource.filters.map(\.name))
        let limit = parameters.first?["schema"]
        #expect(limit?["maximum"] == .int(Int64(resource.maxLimit)) && limit?["minimum"] == .int(1))
        #expect(limit?["default"] == .int(Int64(resource.defaultLimit)))
        #expect(parameters.allSatisfy { $0["in"]?.stringValue == "query" && $0["required"] == .bool(false) })
        let sortPattern = parameters[3]["schema"]?["pattern"]?.stringValue ?? ""
        for (field, _) in resource.fields { #expect(sortPattern.contains(field), "sort \(field)") }
        let searchText = parameters[4]["description"]?.stringValue ?? ""
        for field in resource.effectiveSearchFields { #expect(searchText.contains("`\(field)`"), "search \(field)") }

        // The item id parameter follows id_type.
        let idSchema = itemPath?["get"]?["parameters"]?.arrayValue?.first?["schema"]
        switch resource.idType {
        case .integer: #expect(idSchema?["pattern"]?.stringValue == "^(0|[1-9][0-9]{0,17})$")
        case .uuid: #expect(idSchema?["pattern"]?.stringValue?.hasPrefix("^[0-9a-fA-F]{8}-") == true)
        case .string: #expect(idSchema?["maxLength"] == .int(255))
        }
    }

    @Test func describesEveryShippedResource() throws {
        let config = try Self.shipped()
        let document = OpenAPIDocument(config: config).value
        #expect(document["openapi"]?.stringValue == "3.1.0")
        #expect(config.resources.map(\.name) == ["books", "posts", "comments"])
        for resource in config.resources { Self.expectDescribes(document, resource) }
        // books: subtitle and user are optional (any value, left out when empty); user is read-only.
        let book = Self.schema(document, "Books")
        #expect(Self.strings(book?["required"]) == ["id", "title"])
        #expect(book?["properties"]?["user"]?["readOnly"] == .bool(true))
        #expect(Self.security(document["paths"]?["/api/v1/books/{id}"]?["delete"]) == .bearer)
        #expect(document["paths"]?["/api/v1/books/{id}"]?["delete"]?["x-postern-rule"]?.stringValue == "owner")
    }

    @Test func describesACustomResource() throws {
        let config = try Self.custom()
        let document = OpenAPIDocument(config: config).value
        #expect(Self.keys(document["paths"]).filter { $0.hasPrefix("/api/v1/") && !$0.hasPrefix("/api/v1/user") }
                    == ["/api/v1/openapi.json", "/api/v1/notes", "/api/v1/notes/{id}"])
        Self.expectDescribes(document, config.resources[0])
        let paths = document["paths"]
        #expect(Self.security(paths?["/api/v1/notes"]?["get"]) == .optional)
        #expect(paths?["/api/v1/notes/{id}"]?["get"]?["x-postern-rule"]?.stringValue == "role:editors")
        #expect(paths?["/api/v1/notes/{id}"]?["delete"]?["x-postern-rule"]?.stringValue == "nobody")
        #expect(Self.schema(document, "Notes")?["properties"]?["tag"]?["readOnly"] == .bool(true))
        #expect(Self.strings(Self.schema(document, "NotesCreate")?["required"]) == ["heading"])
        #expect(Self.schema(document, "Books") == nil)
    }

    @Test func describesTheUserAndOperationsRoutes() throws {
        let document = OpenAPIDocument(config: try Self.shipped()).value
        let paths = document["paths"]
        for (path, method, success) in [("/api/v1/user/login", "post", "200"), ("/api/v1/user/refresh", "post", "200"),
                                        ("/api/v1/user", "post", "200"), ("/api/v1/user/logout", "post", "204"),
                                        ("/api/v1/user/me", "get", "200"), ("/healthz", "get", "200"),
                                        ("/readyz", "get", "200"), ("/api/v1/openapi.json", "get", "200")] {
            #expect(Self.keys(paths?[path]?[method]?["responses"]).first == success, "\(path)")
        }
        #expect(Self.security(paths?["/api/v1/user/login"]?["post"]) == .optional)
        #expect(Self.security(paths?["/api/v1/user/me"]?["get"]) == .bearer)
        #expect(Self.security(paths?["/api/v1/user/logout"]?["post"]) == .bearer)
        let readyStatuses = Self.keys(paths?["/readyz"]?["get"]?["responses"])
        #expect(readyStatuses.contains("503"))
        let token = Self.schema(document, "TokenAnswer")
        #expect(Self.keys(token?["properties"]?["user"]?["properties"]) == ["id", "email", "token", "expires_at"])
        #expect(Self.keys(token?["properties"]?["data"]?["properties"]) == ["accessToken", "refreshToken"])
        #expect(Self.strings(Self.schema(document, "Error")?["required"]) == ["error", "code", "request_id"])
        #expect(Self.strings(Self.schema(document, "RegisterRequest")?["required"]) == ["email", "password"])
    }

    @Test func gatewayServesTheDocumentWithoutAToken() async throws {
        let gateway = InProcessGateway()
        let answer = await gateway.send(.get, "/api/v1/openapi.json")
        #expect(answer.status == 200)
        #expect(answer.response.headers["Content-Type"] == "application/json; charset=utf-8")
        #expect(answer.json == OpenAPIDocument(config: .testing).value)
        #expect(await gateway.send(.post, "/api/v1/openapi.json").status == 405)
    }

    /// The real answers of the gateway fit the item schema: every key is a documented property, the
    /// required ones are there, and those typed `string` are strings.
    @Test func realAnswersFitTheDocumentedItems() async throws {
        let gateway = InProcessGateway()
        let document = OpenAPIDocument(config: .testing).value
        let token = try await gateway.login()
        for resource in ["books", "posts"] {
            let answer = await gateway.send(.get, "/api/v1/\(resource)?limit=50", token: token)
            #expect(answer.status == 200)
            let type = resource.prefix(1).uppercased() + resource.dropFirst()
            let item = Self.schema(document, type)
            let properties = Set(Self.keys(item?["properties"]))
            let items = answer.json?[resource]?.arrayValue ?? []
            #expect(!items.isEmpty)
            for rendered in items {
                let present = Self.keys(rendered)
                #expect(Set(present).isSubset(of: properties), "\(present)")
                let required = Set(Self.strings(item?["required"]))
                #expect(required.isSubset(of: Set(present)), "\(present)")
                for key in present where item?["properties"]?[key]?["type"] == .string("string") {
                    #expect(rendered[key]?.stringValue != nil, "\(resource).\(key)")
                }
            }
            let error = await gateway.send(.get, "/api/v1/\(resource)?limit=0", token: token)
            #expect(error.status == 400)
            let errorSchema = Self.schema(document, type + "Error")
            let errorRequired = Set(Self.strings(errorSchema?["required"]))
            let errorKeys = Set(Self.keys(error.json))
            #expect(errorRequired.isSubset(of: errorKeys))
        }
    }
}
