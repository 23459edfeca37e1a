import Foundation
import Testing
@testable import PosternCore
import PosternTesting

/// Where each configuration value came from (docs/api.md, Configuration): the environment's values are named,
/// and one that replaces a value the file sets says so, so that an image's ENV cannot silently win over a file.
struct ConfigOriginTests {
    @Test func valuesFromTheEnvironmentAreNamedWithTheFileTheyOverride() {
        let json = Data(#"{"listen": "nope", "directus": {"url": "http://cms:8055"}, "resources": [{"name": "b", "collection": "posts", "cache": {"ttl_ms": 5}}]}"#.utf8)
        let origins = PosternConfig.environmentOrigins(json: json, environment: [
            "POSTERN_LISTEN": "0.0.0.0:8080", "POSTERN_SESSION_STORE": "memory", "POSTERN_CACHE_TTL_MS": "0",
            "POSTERN_SECRET_KEY": "c2VjcmV0", "POSTERN_WORKERS": " ", "HOME": "/root",
        ])
        #expect(origins == [
            ConfigOrigin(key: "listen", variable: "POSTERN_LISTEN", overridesFile: true),
            ConfigOrigin(key: "sessions.store", variable: "POSTERN_SESSION_STORE", overridesFile: false),
            ConfigOrigin(key: "secret_key", variable: "POSTERN_SECRET_KEY", overridesFile: false),
            ConfigOrigin(key: "resources[*].cache.ttl_ms", variable: "POSTERN_CACHE_TTL_MS", overridesFile: true),
        ])
        #expect(origins.map(\.description).first == "listen: from POSTERN_LISTEN (the file's value is not used)")
        #expect(origins.map(\.description).contains("sessions.store: from POSTERN_SESSION_STORE"))
        #expect(!origins.map(\.description).joined().contains("c2VjcmV0"), "a value is never printed")
    }

    @Test func noFileAndNoEnvironmentNameNothing() {
        #expect(PosternConfig.environmentOrigins(json: nil, environment: ["POSTERN_DIRECTUS_URL": "http://d:1"])
                == [ConfigOrigin(key: "directus.url", variable: "POSTERN_DIRECTUS_URL", overridesFile: false)])
        #expect(PosternConfig.environmentOrigins(json: Data(#"{"listen": "1.2.3.4:5"}"#.utf8), environment: [:]).isEmpty)
    }
}
