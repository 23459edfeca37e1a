import Foundation
import Testing
@testable import PosternCore
import PosternHTTP

/// `resources[i].filters` (docs/api.md, Declared filters): decoded in file order; `postern check` names every
/// problem by its key path.
@Suite struct FilterConfigTests {
    /// A config with one resource over `posts` declaring `filters`.
    static func config(filters: String) -> String {
        """
        {"resources": [{"name": "notes", "collection": "posts", "owner": "user_created",
          "fields": {"id": "id", "title": "title", "user": "user_created"}, "writable": ["title"],
          "filters": \(filters)}]}
        """
    }

    static func problems(_ filters: String) -> [ConfigProblem] {
        if case .failure(let error) = PosternConfig.load(json: Data(config(filters: filters).utf8), environment: [:]) {
            return error.problems
        }
        return []
    }

    @Test func filtersAreDecodedInFileOrder() throws {
        let json = #"{"mine": {"field": "user_created", "op": "eq", "value": "$CURRENT_USER"},"#
            + #" "after": {"field": "date_created", "op": "gt", "type": "datetime"},"#
            + #" "gone": {"field": "date_deleted", "op": "null"},"#
            + #" "some": {"field": "id", "op": "in", "type": "integer", "value": [1, 2]}}"#
        let config = try PosternConfig.load(json: Data(Self.config(filters: json).utf8), environment: [:]).get()
        let filters = config.resources[0].filters
        #expect(filters.map(\.name) == ["mine", "after", "gone", "some"])
        #expect(filters[0] == FilterConfig(name: "mine", field: "user_created", op: .eq, value: .string("$CURRENT_USER")))
        #expect(filters[1] == FilterConfig(name: "after", field: "date_created", op: .gt, type: .datetime))
        #expect(filters[2].type == .boolean, "op null compares with true or false")
        #expect(filters[3].value == .list([.integer(1), .integer(2)]))
    }

    @Test(arguments: [
        (#"{"x": {"field": "title", "op": "like"}}"#, "resources[0].filters.x.op", "unknown op"),
        (#"{"x": {"field": "title", "op": "eq", "type": "float"}}"#, "resources[0].filters.x.type", "unknown type"),
        (#"{"x": {"op": "eq"}}"#, "resources[0].filters.x.field", "is required"),
        (#"{"x": {"field": "title"}}"#, "resources[0].filters.x.op", "is required"),
        (#"{"x": {"field": "title", "op": "eq", "colour": 1}}"#, "resources[0].filters.x.colour", "unknown key"),
        (#"{"x": {"field": "title", "op": "eq", "value": 1.5}}"#, "resources[0].filters.x.value", "must be"),
        (#"{"x": {"field": "id", "op": "eq", "type": "integer", "value": "one"}}"#, "resources[0].filters.x.value", "an integer"),
        (#"{"x": {"field": "title", "op": "eq", "value": 3}}"#, "resources[0].filters.x.value", "non-empty text"),
        (#"{"x": {"field": "title", "op": "eq", "value": "null"}}"#, "resources[0].filters.x.value", "as a null"),
        (#"{"x": {"field": "user_created", "op": "eq", "type": "uuid", "value": "nope"}}"#, "resources[0].filters.x.value", "uuid"),
        (#"{"x": {"field": "date_created", "op": "gt", "type": "datetime", "value": "2026-01-01"}}"#,
         "resources[0].filters.x.value", "RFC 3339"),
        (#"{"x": {"field": "id", "op": "eq", "type": "integer", "value": "$CURRENT_USER"}}"#,
         "resources[0].filters.x.value", "string or uuid"),
        (#"{"x": {"field": "user_created", "op": "gt", "value": "$CURRENT_USER"}}"#, "resources[0].filters.x.value", "eq or neq"),
        (#"{"x": {"field": "id", "op": "in", "type": "integer", "value": 1}}"#, "resources[0].filters.x.value", "an array"),
        (#"{"x": {"field": "id", "op": "in", "type": "integer", "value": []}}"#, "resources[0].filters.x.value", "1 to 100"),
        (#"{"x": {"field": "title", "op": "in", "value": ["a,b"]}}"#, "resources[0].filters.x.value", "comma"),
        (#"{"x": {"field": "id", "op": "eq", "type": "integer", "value": [1]}}"#, "resources[0].filters.x.value", "only op in"),
        (#"{"x": {"field": "title", "op": "null", "value": "yes"}}"#, "resources[0].filters.x.value", "true (is null)"),
        (#"{"x": {"field": "title", "op": "null", "type": "string"}}"#, "resources[0].filters.x.type", "boolean"),
        (#"{"x": {"field": "id", "op": "contains", "type": "integer"}}"#, "resources[0].filters.x.type", "string"),
        (#"{"x": {"field": "user_created", "op": "gt", "type": "uuid"}}"#, "resources[0].filters.x.type", "cannot order"),
        (#"{"x": {"field": "title", "op": "lt", "type": "boolean"}}"#, "resources[0].filters.x.type", "cannot order"),
        (#"{"limit": {"field": "title", "op": "eq"}}"#, "resources[0].filters.limit", "reserved"),
        (#"{"search": {"field": "title", "op": "eq"}}"#, "resources[0].filters.search", "reserved"),
        (#"{"fields": {"field": "title", "op": "eq"}}"#, "resources[0].filters.fields", "reserved"),
        (#"{"a-b": {"field": "title", "op": "eq"}}"#, "resources[0].filters.a-b", "must match"),
        (#"{"x": {"field": "password", "op": "eq"}}"#, "resources[0].filters.x.field", "concealed"),
        (#"{"x": {"field": "tfa_secret", "op": "null"}}"#, "resources[0].filters.x.field", "concealed"),
        (#"{"x": {"field": "user_created.email", "op": "eq"}}"#, "resources[0].filters.x.field", "relation path"),
        (#"{"x": {"field": "title", "op": "eq"}, "x": {"field": "id", "op": "eq"}}"#, "resources[0].filters.x", "duplicate"),
        (#"["title"]"#, "resources[0].filters", "must be an object"),
    ])
    func checkNamesTheKeyPath(filters: String, path: String, fragment: String) {
        let found = Self.problems(filters)
        #expect(found.contains { $0.path == path && $0.message.contains(fragment) }, "\(found)")
    }

    @Test func atMostTwentyFilters() {
        let many = (0...20).map { #""f\#($0)": {"field": "title", "op": "eq"}"# }.joined(separator: ", ")
        #expect(Self.problems("{\(many)}").contains { $0.path == "resources[0].filters" && $0.message.contains("at most 20") })
        let twenty = (0..<20).map { #""f\#($0)": {"field": "title", "op": "eq"}"# }.joined(separator: ", ")
        #expect(Self.problems("{\(twenty)}") == [])
    }

    @Test func dateTimesAreReadAsRFC3339AndSentInUTC() {
        let cases: [(String, String?)] = [
            ("2026-01-01T00:00:00Z", "2026-01-01T00:00:00.000Z"),
            ("2026-01-01t00:00:00.5z", "2026-01-01T00:00:00.500Z"),
            ("2026-01-01T01:30:00.123456+02:00", "2025-12-31T23:30:00.123Z"),
            ("2024-02-29T23:00:00-01:00", "2024-03-01T00:00:00.000Z"),
            ("2025-02-29T00:00:00Z", nil), ("2026-01-01T00:00:00", nil), ("2026-01-01 00:00:00Z", nil),
            ("2026-01-01T00:00:60Z", nil), ("2026-1-01T00:00:00Z", nil), ("2026-01-01T00:00:00.Z", nil),
            ("2026-01-01T00:00:00+2:00", nil), ("0001-01-01T00:00:00+00:01", nil), ("", nil),
        ]
        for (text, expected) in cases {
            #expect(RFC3339.utcText(text) == expected, "\(text)")
        }
    }
}

/// Declared filters in the OpenAPI document: one optional query parameter each, typed.
@Suite struct FilterOpenAPITests {
    @Test func theShippedFiltersAreQueryParameters() throws {
        let document = OpenAPIDocument(config: PosternConfig()).value
        func parameter(_ path: String, _ name: String) -> JSONValue? {
            document["paths"]?[path]?["get"]?["parameters"]?.arrayValue?.first { $0["name"]?.stringValue == name }
        }
        let mine = try #require(parameter("/api/v1/books", "mine"))
        #expect(mine["in"]?.stringValue == "query" && mine["required"] == .bool(false))
        #expect(mine["schema"]?["type"]?.stringValue == "boolean")
        #expect(mine["description"]?.stringValue?.contains("caller's own items") == true)
        let post = try #require(parameter("/api/v1/comments", "post"))
        #expect(post["schema"]?["type"]?.stringValue == "integer")
        #expect(parameter("/api/v1/posts", "mine") == nil)
    }
}
