import Foundation
import Testing
@testable import PosternCore
import PosternTesting

/// `composites` in the config file (docs/api.md, Composite endpoints): decoding, defaults, and every refusal of
/// `postern check` named by its key path.
@Suite struct CompositeConfigTests {
    /// A config with one composite whose members are `composite` (JSON members, no braces).
    static func one(_ composite: String) -> String {
        #"{"composites": [{"name": "screen", "path": "/api/v1/screen", "# + composite + "}]}"
    }

    static func problems(_ json: String) -> [ConfigProblem] {
        if case .failure(let error) = PosternConfig.load(json: Data(json.utf8), environment: [:]) { return error.problems }
        return []
    }

    @Test func decodesAComposite() throws {
        let json = #"""
            {"directus": {"timeout_ms": 2500},
             "composites": [{"name": "post_page", "path": "/api/v1/screens/posts/{id}", "permission": "public",
                             "parts": [{"key": "post", "route": "GET /api/v1/posts/{id}", "required": true},
                                       {"key": "more", "route": "GET /api/v1/books", "query": {"limit": 5, "offset": "{id}"}}]}]}
            """#
        let config = try PosternConfig.load(json: Data(json.utf8), environment: [:]).get()
        let composite = try #require(config.composites.first)
        #expect(composite.name == "post_page" && composite.path == "/api/v1/screens/posts/{id}")
        #expect(composite.permission == .public)
        #expect(composite.placeholders == ["id"])
        #expect(composite.parts.map(\.key) == ["post", "more"])
        #expect(composite.parts[0].required && !composite.parts[1].required)
        #expect(composite.parts[1].query.map { "\($0.0)=\($0.1)" } == ["limit=5", "offset={id}"])
        // No timeout of its own: directus.timeout_ms, the environment's when it sets one.
        #expect(composite.timeoutMs == nil && composite.timeoutMs(under: config.directus) == 2500)
        let overridden = try PosternConfig.load(json: Data(json.utf8), environment: ["POSTERN_UPSTREAM_TIMEOUT_MS": "700"]).get()
        #expect(overridden.composites[0].timeoutMs(under: overridden.directus) == 700)
        #expect(config.composites[0].json(under: config.directus)["timeout_ms"] == .int(2500))
    }

    @Test func theShippedCompositesGoWithTheShippedResources() throws {
        #expect(PosternConfig().composites.map(\.name) == ["home", "post_page"])
        #expect(try PosternConfig.load(json: Data("{}".utf8), environment: [:]).get().composites.map(\.name) == ["home", "post_page"])
        // A file with its own resources has no composite unless it declares one.
        let own = #"{"resources": [{"name": "notes", "collection": "notes", "fields": {"id": "id"}, "permissions": {"update": "nobody", "delete": "nobody"}}]}"#
        #expect(try PosternConfig.load(json: Data(own.utf8), environment: [:]).get().composites.isEmpty)
        #expect(PosternConfig().problems().isEmpty)
    }

    static let refused: [BadConfig] = [
        BadConfig(one(#""parts": [{"key": "a", "route": "POST /api/v1/books"}]"#), "composites[0].parts[0].route", "must be a GET route"),
        BadConfig(one(#""parts": [{"key": "a", "route": "GET /api/v1/nothing"}]"#), "composites[0].parts[0].route", "is not a GET route of this config"),
        BadConfig(one(#""parts": [{"key": "a", "route": "GET /api/v1/openapi.json"}]"#), "composites[0].parts[0].route", "is not a GET route"),
        BadConfig(one(#""parts": [{"key": "a", "route": "GET /api/v1/books/{id}"}]"#), "composites[0].parts[0].route", "{id} is not a placeholder of the composite's path"),
        BadConfig(one(#""parts": [{"key": "a", "route": "GET /api/v1/books", "query": {"fields": "*"}}]"#),
                  "composites[0].parts[0].query.fields", "does not accept \"fields\""),
        BadConfig(one(#""parts": [{"key": "a", "route": "GET /api/v1/user/me", "query": {"limit": "1"}}]"#),
                  "composites[0].parts[0].query.limit", "takes no query parameters"),
        BadConfig(one(#""parts": [{"key": "a", "route": "GET /api/v1/books/7", "query": {"limit": "1"}}]"#),
                  "composites[0].parts[0].query.limit", "takes no query parameters"),
        BadConfig(one(#""parts": [{"key": "a", "route": "GET /api/v1/books", "query": {"offset": "{page}"}}]"#),
                  "composites[0].parts[0].query.page", "{page} is not a placeholder"),
        BadConfig(one(#""parts": [{"key": "a", "route": "GET /api/v1/books", "query": {"limit": [1]}}]"#),
                  "composites[0].parts[0].query.limit", "a string, an integer or a boolean"),
        BadConfig(one(#""parts": ["# + (0..<9).map { #"{"key": "p\#($0)", "route": "GET /api/v1/books"}"# }.joined(separator: ", ") + "]"),
                  "composites[0].parts", "at most 8 parts"),
        BadConfig(one(#""parts": []"#), "composites[0].parts", "at least one part"),
        BadConfig(one(#""parts": [{"key": "a", "route": "GET /api/v1/books"}, {"key": "a", "route": "GET /api/v1/posts"}]"#),
                  "composites[0].parts[1].key", "duplicate key \"a\" (also parts[0])"),
        BadConfig(one(#""parts": [{"key": "errors", "route": "GET /api/v1/books"}]"#), "composites[0].parts[0].key", "\"errors\""),
        BadConfig(one(#""parts": [{"key": "a-b", "route": "GET /api/v1/books"}]"#), "composites[0].parts[0].key", "must match"),
        BadConfig(one(#""parts": [{"key": "a", "route": "GET /api/v1/books", "cache": 1}]"#), "composites[0].parts[0].cache", "unknown key"),
        BadConfig(one(#""permission": "owner", "parts": [{"key": "a", "route": "GET /api/v1/books"}]"#), "composites[0].permission", "\"owner\" needs an item"),
        BadConfig(one(#""permission": "anyone", "parts": [{"key": "a", "route": "GET /api/v1/books"}]"#), "composites[0].permission", "unknown rule"),
        BadConfig(one(#""timeout_ms": 0, "parts": [{"key": "a", "route": "GET /api/v1/books"}]"#), "composites[0].timeout_ms", "between 1 and 600000"),
        BadConfig(#"{"composites": [{"name": "a", "path": "/api/v1/books", "parts": [{"key": "a", "route": "GET /api/v1/posts"}]}]}"#,
                  "composites[0].path", "collides with resource books"),
        BadConfig(#"{"composites": [{"name": "a", "path": "/api/v1/posts/{x}", "parts": [{"key": "a", "route": "GET /api/v1/posts"}]}]}"#,
                  "composites[0].path", "collides with resource posts"),
        BadConfig(#"{"composites": [{"name": "a", "path": "/api/v1/user/{x}", "parts": [{"key": "a", "route": "GET /api/v1/posts"}]}]}"#,
                  "composites[0].path", "collides with the route /api/v1/user/login"),
        BadConfig(#"{"composites": [{"name": "a", "path": "/api/v1/a", "parts": [{"key": "a", "route": "GET /api/v1/posts"}]}, {"name": "b", "path": "/api/v1/{x}", "parts": [{"key": "a", "route": "GET /api/v1/posts"}]}]}"#,
                  "composites[1].path", "collides with the route /api/v1/"),
        BadConfig(#"{"composites": [{"name": "a", "path": "/api/v1/s/a", "parts": [{"key": "a", "route": "GET /api/v1/posts"}]}, {"name": "b", "path": "/api/v1/s/{x}", "parts": [{"key": "a", "route": "GET /api/v1/posts"}]}]}"#,
                  "composites[1].path", "collides with composite a"),
        BadConfig(#"{"composites": [{"name": "a", "path": "/home", "parts": [{"key": "a", "route": "GET /api/v1/posts"}]}]}"#,
                  "composites[0].path", "must start with /api/"),
        BadConfig(#"{"composites": [{"name": "a", "path": "/api/v1/{id}/{id}", "parts": [{"key": "a", "route": "GET /api/v1/posts"}]}]}"#,
                  "composites[0].path", "appears twice"),
        BadConfig(#"{"composites": [{"name": "a", "path": "/api/v1/a", "parts": [{"key": "a", "route": "GET /api/v1/posts"}]}, {"name": "a", "path": "/api/v1/b", "parts": [{"key": "a", "route": "GET /api/v1/posts"}]}]}"#,
                  "composites[1].name", "duplicate composite name"),
        BadConfig(#"{"composites": [{"path": "/api/v1/a", "parts": [{"key": "a", "route": "GET /api/v1/posts"}]}]}"#,
                  "composites[0].name", "is required"),
        BadConfig(#"{"composites": {}}"#, "composites", "must be an array"),
    ]

    @Test(arguments: refused)
    func checkRefusesNamingTheKeyPath(_ bad: BadConfig) {
        let found = Self.problems(bad.json)
        #expect(found.contains { $0.path == bad.path && $0.message.contains(bad.message) }, "\(found)")
    }
}
