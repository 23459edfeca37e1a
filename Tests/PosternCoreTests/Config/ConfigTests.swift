import Foundation
import Testing
@testable import PosternCore
import PosternTesting

/// One bad config and the problem it must produce.
struct BadConfig: Sendable, CustomTestStringConvertible {
    /// The config file text.
    let json: String
    /// The key path the problem must name.
    let path: String
    /// A fragment the message must contain.
    let message: String

    /// Names the case by the key path it targets.
    var testDescription: String { path }

    /// Builds a case.
    init(_ json: String, _ path: String, _ message: String) {
        self.json = json
        self.path = path
        self.message = message
    }
}

/// A minimal valid resource (mapping an owner) plus `extra` members.
private func resource(_ extra: String = "") -> String {
    let base = #"{"name": "notes", "collection": "notes", "fields": {"id": "id", "text": "body", "by": "user_created"}, "owner": "user_created""#
    return #"{"resources": ["# + base + (extra.isEmpty ? "" : ", " + extra) + "}]}"
}

private func load(_ json: String, _ environment: [String: String] = [:]) -> Result<PosternConfig, ConfigError> {
    PosternConfig.load(json: Data(json.utf8), environment: environment)
}

private func problems(_ json: String, _ environment: [String: String] = [:]) -> [ConfigProblem] {
    if case .failure(let error) = load(json, environment) { return error.problems }
    return []
}

/// Loading, validating and overriding the configuration (docs/api.md, Configuration).
@Suite struct ConfigTests {
    /// The repository's `config/postern.json`.
    static let shippedFile = repositoryRoot.appendingPathComponent("config/postern.json")

    @Test func defaultsMatchTheDesign() throws {
        let config = try PosternConfig.load(json: nil, environment: [:]).get()
        #expect(config == PosternConfig())
        #expect(config.listenAddress == HostPort(host: "0.0.0.0", port: 8080))
        #expect(config.adminListenAddress == HostPort(host: "127.0.0.1", port: 9180))
        #expect(config.directus.timeoutMs == 10_000)
        #expect(config.directus.keepaliveIdleMs == 4000)
        #expect(config.directus.maxWaitingPerWorker == 1024)
        #expect(config.directus.pipelineDepth == 1)
        #expect(config.directus.maxResponseBytes == 16_777_216)
        #expect(config.sessions.storeKind == .sqlite(path: "data/sessions.db"))
        #expect(config.limits.maxBodyBytes == 1_048_576)
        #expect(config.cors.allowedOrigins == ["*"] && !config.cors.allowCredentials)
        #expect(config.resources.map(\.name) == ["books", "posts", "comments"])
        #expect(config.logLevel == "info" && config.secretKey == nil)
        #expect(config.effectiveWorkers >= 1)
    }

    @Test func shippedFileLoadsAndEqualsTheDefaults() throws {
        let data = try Data(contentsOf: Self.shippedFile)
        let config = try PosternConfig.load(json: data, environment: [:]).get()
        #expect(config == PosternConfig())
        #expect(config.resources[0].fields.map(\.0) == ["id", "title", "subtitle", "user"])
    }

    @Test func maxResponseBytesIsRead() throws {
        let config = try load(#"{"directus": {"max_response_bytes": 2048}}"#).get()
        #expect(config.directus.maxResponseBytes == 2048)
    }

    @Test func loadingByPathReadsTheFile() throws {
        let config = try PosternConfig.load(configPath: Self.shippedFile.path, environment: [:]).get()
        #expect(config == PosternConfig())
    }

    @Test func emptyObjectGivesDefaultsAndAbsentResourcesGiveTheShippedOnes() throws {
        let config = try load("{}").get()
        #expect(config == PosternConfig())
        #expect(config.resources == ResourceConfig.shipped)
    }

    @Test func fileValuesAndFieldOrderAreKept() throws {
        let json = """
        {"listen": "127.0.0.1:0", "workers": 2,
         "directus": {"url": "https://cms.example.com/directus", "registration": "register"},
         "sessions": {"store": "memory", "idle_ttl_s": 60, "max_ttl_s": 60},
         "rate_limits": {"failed_logins_per_ip_per_min": 0, "trusted_proxies": ["10.0.0.1", "::1"]},
         "cors": {"allowed_origins": ["https://app.example.com"], "allow_credentials": true},
         "resources": [{"name": "notes", "collection": "notes", "id_type": "uuid",
                        "fields": {"z": "zeta", "id": "id", "a": "alpha"}, "writable": ["z", "a"],
                        "max_limit": 50, "default_limit": 50,
                        "permissions": {"list": "public", "read": "role:abc-123", "create": "nobody",
                                        "update": "authenticated", "delete": "nobody"}}]}
        """
        let config = try load(json).get()
        #expect(config.listenAddress == HostPort(host: "127.0.0.1", port: 0))
        #expect(config.workers == 2 && config.effectiveWorkers == 2)
        #expect(config.directus.url == "https://cms.example.com/directus")
        #expect(config.directus.registration == "register")
        #expect(config.sessions.storeKind == .memory)
        #expect(config.rateLimits.failedLoginsPerIPPerMinute == 0)
        #expect(config.rateLimits.trustedProxies == ["10.0.0.1", "::1"])
        #expect(config.cors.allowCredentials)
        let notes = try #require(config.resources.first)
        #expect(config.resources.count == 1)
        #expect(notes.idType == .uuid)
        #expect(notes.fields.map(\.0) == ["z", "id", "a"])
        #expect(notes.directusField("a") == "alpha")
        #expect(notes.maxLimit == 50 && notes.defaultLimit == 50)
        #expect(notes.permissions[.list] == .public)
        #expect(notes.permissions[.read] == .role("abc-123"))
        #expect(notes.permissions[.update] == .authenticated)
    }

    @Test func environmentOverridesTheFile() throws {
        let key = Data(repeating: 7, count: 32).base64EncodedString()
        let environment = [
            "POSTERN_LISTEN": "127.0.0.1:0", "POSTERN_ADMIN_LISTEN": "[::1]:9999",
            "POSTERN_DIRECTUS_URL": "https://directus.internal:8443", "POSTERN_SESSION_STORE": "redis://cache:6379",
            "POSTERN_WORKERS": "3", "POSTERN_UPSTREAM_TIMEOUT_MS": "2500", "POSTERN_LOG_LEVEL": "debug",
            "POSTERN_SECRET_KEY": key, "POSTERN_UNRELATED": "x",
        ]
        let config = try load(#"{"listen": "0.0.0.0:1", "workers": 1}"#, environment).get()
        #expect(config.listen == "127.0.0.1:0")
        #expect(config.adminListenAddress == HostPort(host: "::1", port: 9999))
        #expect(config.directus.url == "https://directus.internal:8443")
        #expect(config.sessions.storeKind == .redis(HostPort(host: "cache", port: 6379)))
        #expect(config.workers == 3)
        #expect(config.directus.timeoutMs == 2500)
        #expect(config.logLevel == "debug")
        #expect(config.secretKeyBytes == [UInt8](repeating: 7, count: 32))
    }

    @Test func emptyEnvironmentVariablesCountAsUnset() throws {
        let config = try load("{}", ["POSTERN_LISTEN": "", "POSTERN_SECRET_KEY": "", "POSTERN_WORKERS": " "]).get()
        #expect(config == PosternConfig())
    }

    @Test(arguments: [
        ("POSTERN_LISTEN", "8080"),
        ("POSTERN_ADMIN_LISTEN", "localhost:70000"),
        ("POSTERN_DIRECTUS_URL", "ftp://cms"),
        ("POSTERN_SESSION_STORE", "postgres://db"),
        ("POSTERN_WORKERS", "many"),
        ("POSTERN_WORKERS", "-1"),
        ("POSTERN_UPSTREAM_TIMEOUT_MS", "0"),
        ("POSTERN_UPSTREAM_TIMEOUT_MS", "10s"),
        ("POSTERN_LOG_LEVEL", "verbose"),
        ("POSTERN_SECRET_KEY", "c2hvcnQ="),
        ("POSTERN_SECRET_KEY", "not base64 at all!"),
    ])
    func badEnvironmentValuesNameTheVariable(variable: String, value: String) {
        let found = problems("{}", [variable: value])
        #expect(found.map(\.path) == [variable], "\(found)")
    }

    @Test(arguments: [
        BadConfig(#"{"listen": "localhost"}"#, "listen", "host:port"),
        BadConfig(#"{"listen": "host:65536"}"#, "listen", "host:port"),
        BadConfig(#"{"listen": 8080}"#, "listen", "must be a string"),
        BadConfig(#"{"admin_listen": ":9180"}"#, "admin_listen", "host:port"),
        BadConfig(#"{"workers": -1}"#, "workers", "between 0 and 1024"),
        BadConfig(#"{"workers": "4"}"#, "workers", "between 0 and 1024"),
        BadConfig(#"{"directus": {"url": "cms.local:8055"}}"#, "directus.url", "http:// or https://"),
        BadConfig(#"{"directus": {"url": "http://"}}"#, "directus.url", "with a host"),
        BadConfig(#"{"directus": {"timeout_ms": 0}}"#, "directus.timeout_ms", "must be an integer between 1 and 600000"),
        BadConfig(#"{"directus": {"timeout_ms": 1.5}}"#, "directus.timeout_ms", "must be an integer between 1 and 600000"),
        BadConfig(#"{"directus": {"max_connections_per_worker": 0}}"#, "directus.max_connections_per_worker", "between 1"),
        BadConfig(#"{"directus": {"registration": "open"}}"#, "directus.registration", #""users" or "register""#),
        BadConfig(#"{"directus": {"keepalive_idle_ms": 0}}"#, "directus.keepalive_idle_ms", "between 1 and 600000"),
        BadConfig(#"{"directus": {"max_waiting_per_worker": -1}}"#, "directus.max_waiting_per_worker", "between 0 and 1000000"),
        BadConfig(#"{"directus": {"pipeline_depth": 0}}"#, "directus.pipeline_depth", "between 1 and 64"),
        BadConfig(#"{"directus": {"pipeline_depth": 65}}"#, "directus.pipeline_depth", "between 1 and 64"),
        BadConfig(#"{"directus": {"max_response_bytes": 1023}}"#, "directus.max_response_bytes", "between 1024 and 1073741824"),
        BadConfig(#"{"directus": {"max_response_bytes": 1073741825}}"#, "directus.max_response_bytes", "between 1024 and 1073741824"),
        BadConfig(#"{"directus": {"max_response_bytes": "16M"}}"#, "directus.max_response_bytes", "between 1024 and 1073741824"),
        BadConfig(#"{"directus": []}"#, "directus", "must be a JSON object"),
        BadConfig(#"{"sessions": {"store": "file:x.db"}}"#, "sessions.store", "memory, sqlite:<path> or redis[s]://[[user]:password@]host:port[/db]"),
        BadConfig(#"{"sessions": {"store": "sqlite:"}}"#, "sessions.store", "sqlite:<path>"),
        BadConfig(#"{"sessions": {"idle_ttl_s": 0}}"#, "sessions.idle_ttl_s", "positive"),
        BadConfig(#"{"sessions": {"idle_ttl_s": 100, "max_ttl_s": 50}}"#, "sessions.idle_ttl_s", "must not exceed sessions.max_ttl_s"),
        BadConfig(#"{"sessions": {"max_per_user": 0}}"#, "sessions.max_per_user", "positive"),
        BadConfig(#"{"sessions": {"max_per_user": "20"}}"#, "sessions.max_per_user", "positive"),
        BadConfig(#"{"limits": {"max_body_bytes": 8388609}}"#, "limits.max_body_bytes", "between 1 and 8388608"),
        BadConfig(#"{"limits": {"inactivity_timeout_s": 0}}"#, "limits.inactivity_timeout_s", "positive"),
        BadConfig(#"{"limits": {"request_timeout_s": 0}}"#, "limits.request_timeout_s", "positive"),
        BadConfig(#"{"limits": {"shutdown_grace_s": -5}}"#, "limits.shutdown_grace_s", "positive"),
        BadConfig(#"{"rate_limits": {"failed_logins_per_email_per_day": -1}}"#, "rate_limits.failed_logins_per_email_per_day", ">= 0"),
        BadConfig(#"{"rate_limits": {"trusted_proxies": ["10.0.0.0/8"]}}"#, "rate_limits.trusted_proxies[0]", "IPv4 or IPv6"),
        BadConfig(#"{"rate_limits": {"trusted_proxies": ["10.0.0.1", 5]}}"#, "rate_limits.trusted_proxies[1]", "must be a string"),
        BadConfig(#"{"cors": {"allow_credentials": true}}"#, "cors.allow_credentials", "\"*\""),
        BadConfig(#"{"cors": {"allow_credentials": "yes"}}"#, "cors.allow_credentials", "true or false"),
        BadConfig(#"{"cors": {"allowed_origins": ["https://app.example.com/path"]}}"#, "cors.allowed_origins[0]", "origin"),
        BadConfig(#"{"circuit_breaker": {"failures": 0}}"#, "circuit_breaker.failures", "positive"),
        BadConfig(#"{"circuit_breaker": {"open_s": 0}}"#, "circuit_breaker.open_s", "positive"),
        BadConfig(#"{"resources": {}}"#, "resources", "array"),
        BadConfig(#"{"resources": ["books"]}"#, "resources[0]", "must be a JSON object"),
        BadConfig(resource(#""permissions": {"update": "ownr"}"#), "resources[0].permissions.update",
                  #"unknown rule "ownr" (public, authenticated, owner, role:<id>, nobody)"#),
        BadConfig(resource(#""permissions": {"update": "role:"}"#), "resources[0].permissions.update", "unknown rule"),
        BadConfig(resource(#""permissions": {"patch": "owner"}"#), "resources[0].permissions.patch", "unknown key"),
        BadConfig(resource(#""id_type": "int""#), "resources[0].id_type", "integer, uuid, string"),
        BadConfig(resource(#""required": ["title"]"#), "resources[0].required[0]", "not a field of this resource"),
        BadConfig(resource(#""writable": ["txt"]"#), "resources[0].writable[0]", "not a field of this resource"),
        BadConfig(resource(#""writable": ["id"]"#), "resources[0].writable[0]", #""id" cannot be writable"#),
        BadConfig(resource(#""writable": ["text", "by"]"#), "resources[0].writable[1]", "owner field"),
        BadConfig(resource(#""search_fields": ["text", "body"]"#), "resources[0].search_fields[1]", "not a field of this resource"),
        BadConfig(resource(#""search_fields": "text""#), "resources[0].search_fields", "array of strings"),
        BadConfig(resource(#""search_fields": ["text", 1]"#), "resources[0].search_fields[1]", "must be a string"),
        BadConfig(resource(#""search_fields": [\#(Array(repeating: "\"text\"", count: 21).joined(separator: ","))]"#),
                  "resources[0].search_fields", "at most 20"),
        BadConfig(resource(#""max_limit": 0"#), "resources[0].max_limit", "positive"),
        BadConfig(resource(#""default_limit": 0"#), "resources[0].default_limit", "positive"),
        BadConfig(resource(#""max_limit": 10, "default_limit": 20"#), "resources[0].default_limit", "must not exceed max_limit (10)"),
        BadConfig(#"{"resources": [{"name": "Books", "collection": "posts", "fields": {"id": "id"}, "permissions": {"update": "nobody", "delete": "nobody"}}]}"#,
                  "resources[0].name", "[a-z][a-z0-9_-]*"),
        BadConfig(#"{"resources": [{"name": "user", "collection": "posts", "fields": {"id": "id"}, "permissions": {"update": "nobody", "delete": "nobody"}}]}"#,
                  "resources[0].name", "reserved"),
        BadConfig(#"{"resources": [{"collection": "posts", "fields": {"id": "id"}, "permissions": {"update": "nobody", "delete": "nobody"}}]}"#,
                  "resources[0].name", "is required"),
        BadConfig(#"{"resources": [{"name": "a", "collection": "", "fields": {"id": "id"}, "permissions": {"update": "nobody", "delete": "nobody"}}]}"#,
                  "resources[0].collection", "is required"),
        BadConfig(#"{"resources": [{"name": "a", "collection": "../users", "fields": {"id": "id"}, "permissions": {"update": "nobody", "delete": "nobody"}}]}"#,
                  "resources[0].collection", "collection name"),
        BadConfig(#"{"resources": [{"name": "a", "collection": "directus_users", "fields": {"id": "id"}, "permissions": {"update": "nobody", "delete": "nobody"}}]}"#,
                  "resources[0].collection", "system collections"),
        BadConfig(#"{"resources": [{"name": "a", "collection": "posts", "fields": {"key": "id"}, "permissions": {"update": "nobody", "delete": "nobody"}}]}"#,
                  "resources[0].fields", #"must map "id""#),
        BadConfig(#"{"resources": [{"name": "a", "collection": "posts", "fields": {"id": "id", "t": 3}, "permissions": {"update": "nobody", "delete": "nobody"}}]}"#,
                  "resources[0].fields.t", "Directus field"),
        BadConfig(#"{"resources": [{"name": "a", "collection": "posts", "fields": {"id": "id", "-t": "title"}, "permissions": {"update": "nobody", "delete": "nobody"}}]}"#,
                  "resources[0].fields.-t", "[A-Za-z_][A-Za-z0-9_]*"),
        BadConfig(#"{"resources": [{"name": "a", "collection": "posts", "fields": {"id": "id", "a": "title", "b": "title"}, "permissions": {"update": "nobody", "delete": "nobody"}}]}"#,
                  "resources[0].fields.b", "already mapped by a"),
        BadConfig(#"{"resources": [{"name": "a", "collection": "posts", "fields": {"id": "id", "id": "key"}, "permissions": {"update": "nobody", "delete": "nobody"}}]}"#,
                  "resources[0].fields.id", "duplicate key"),
        BadConfig(#"{"resources": [{"name": "a", "collection": "posts", "fields": {"id": "id"}, "owner": "user_created", "permissions": {"update": "nobody", "delete": "nobody"}}]}"#,
                  "resources[0].owner", "not mapped by any field"),
        BadConfig(#"{"resources": [{"name": "a", "collection": "posts", "fields": {"id": "id"}, "permissions": {"update": "owner", "delete": "nobody"}}]}"#,
                  "resources[0].permissions.update", #"rule "owner" needs resources[0].owner"#),
        BadConfig(#"{"resources": [{"name": "a", "collection": "posts", "fields": {"id": "id"}, "permissions": {"update": "nobody"}}]}"#,
                  "resources[0].permissions.delete", #"rule "owner" needs"#),
        BadConfig(#"{"resources": [\#(resource().dropFirst(15).dropLast(2)), \#(resource().dropFirst(15).dropLast(2))]}"#,
                  "resources[1].name", #"duplicate resource name "notes" (also resources[0])"#),
        BadConfig(#"{"limits": {"max_bodybytes": 10}}"#, "limits.max_bodybytes", #"unknown key (did you mean "max_body_bytes"?)"#),
        BadConfig(#"{"lisen": "0.0.0.0:1"}"#, "lisen", #"unknown key (did you mean "listen"?)"#),
        BadConfig(#"{"log_level": "debug"}"#, "log_level", "unknown key"),
        BadConfig(#"{"listen": "0.0.0.0:1", "listen": "0.0.0.0:2"}"#, "listen", "duplicate key"),
        BadConfig(#"[]"#, "config", "must be a JSON object"),
        BadConfig("{\n  \"listen\": \"0.0.0.0:1\",\n  \"workers\": 2,,\n}", "config", "invalid JSON: expected a string key at line 3, column 16"),
    ])
    func eachRuleNamesItsKeyPath(_ bad: BadConfig) {
        let found = problems(bad.json)
        let hit = found.first { $0.path == bad.path }
        #expect(hit != nil, "expected a problem at \(bad.path), got \(found)")
        #expect(hit?.message.contains(bad.message) == true, "\(String(describing: hit))")
        #expect(found.count == 1, "expected exactly one problem, got \(found)")
    }

    @Test func decodesSearchFields() throws {
        let config = try load(resource(#""writable": ["text"], "search_fields": ["by", "text"]"#)).get()
        #expect(config.resources[0].searchFields == ["by", "text"])
        #expect(ResourceMapper(config.resources[0]).searchDirectusFields == ["user_created", "body"])
        let defaulted = try load(resource(#""writable": ["text"]"#)).get()
        #expect(defaulted.resources[0].searchFields == nil)
        #expect(defaulted.resources[0].effectiveSearchFields == ["text"])
        let empty = try load(resource(#""search_fields": []"#)).get()
        #expect(empty.resources[0].searchFields == [])
    }

    @Test func acceptsEdgeValues() throws {
        let json = """
        {"listen": "[::]:0", "admin_listen": "localhost:65535", "workers": 0,
         "directus": {"timeout_ms": 600000}, "limits": {"max_body_bytes": 8388608},
         "sessions": {"store": "sqlite:/var/lib/postern/s.db", "idle_ttl_s": 10, "max_ttl_s": 10},
         "rate_limits": {"failed_logins_per_ip_per_min": 0, "registrations_per_ip_per_min": 0},
         "cors": {"allowed_origins": [], "max_age_s": 0}, "resources": []}
        """
        let config = try load(json).get()
        #expect(config.listenAddress == HostPort(host: "::", port: 0))
        #expect(config.resources.isEmpty)
    }

    @Test func collectsEveryProblemAtOnce() {
        let json = """
        {"listen": "nowhere", "directus": {"timeout_ms": 0, "registraton": "users"},
         "limits": {"max_body_bytes": 99999999},
         "resources": [{"name": "books", "collection": "posts", "fields": {"id": "id"}, "owner": "user_created",
                        "permissions": {"list": "authenticated", "update": "ownr"}}]}
        """
        let found = problems(json, ["POSTERN_LOG_LEVEL": "loud"])
        #expect(Set(found.map(\.path)) == [
            "listen", "directus.timeout_ms", "directus.registraton", "limits.max_body_bytes",
            "resources[0].owner", "resources[0].permissions.update", "POSTERN_LOG_LEVEL",
        ])
        if case .failure(let error) = load(json) {
            #expect(error.description.split(separator: "\n").count == 6)
            #expect(error.description.contains("directus.timeout_ms: must be an integer between 1 and 600000"))
        }
    }

    @Test func missingExplicitFileIsAProblem() {
        let path = "/nonexistent/postern-\(UUID().uuidString).json"
        for (arg, env) in [(path, [String: String]()), (nil, ["POSTERN_CONFIG": path])] {
            guard case .failure(let error) = PosternConfig.load(configPath: arg, environment: env) else {
                Issue.record("a missing file loaded")
                continue
            }
            #expect(error.problems == [ConfigProblem(path: "config", message: "cannot read \(path) (no such file)")])
        }
    }

    @Test func resolvedPathPrefersTheArgumentThenTheEnvironment() {
        #expect(PosternConfig.resolvedPath(configPath: "a.json", environment: ["POSTERN_CONFIG": "b.json"]) == "a.json")
        #expect(PosternConfig.resolvedPath(configPath: nil, environment: ["POSTERN_CONFIG": "b.json"]) == "b.json")
        let fallback = PosternConfig.resolvedPath(configPath: nil, environment: [:])
        let exists = FileManager.default.fileExists(atPath: PosternConfig.defaultPath)
        #expect(fallback == (exists ? PosternConfig.defaultPath : nil))
    }

    @Test(arguments: [
        ("0.0.0.0:8080", HostPort(host: "0.0.0.0", port: 8080)),
        ("localhost:0", HostPort(host: "localhost", port: 0)),
        ("[::1]:9180", HostPort(host: "::1", port: 9180)),
        ("my-host.internal:65535", HostPort(host: "my-host.internal", port: 65535)),
        ("8080", nil), (":8080", nil), ("host:", nil), ("host:65536", nil), ("host:-1", nil),
        ("host:80x", nil), ("::1:80", nil), ("[::1]80", nil), ("ho st:80", nil),
    ] as [(String, HostPort?)])
    func parsesHostPort(text: String, expected: HostPort?) {
        #expect(HostPort(text) == expected)
    }

    @Test func bootstrapCredentialsNeedATokenOrBothEmailAndPassword() throws {
        let token = try PosternConfig.bootstrapCredentials(environment: ["POSTERN_DIRECTUS_ADMIN_TOKEN": "t"]).get()
        #expect(token.token == "t")
        let pair = try PosternConfig.bootstrapCredentials(environment: [
            "POSTERN_DIRECTUS_ADMIN_EMAIL": "admin@example.com", "POSTERN_DIRECTUS_ADMIN_PASSWORD": "secret",
        ]).get()
        #expect(pair.email == "admin@example.com" && pair.password == "secret")
        #expect(!pair.description.contains("secret"))
        guard case .failure(let error) = PosternConfig.bootstrapCredentials(
            environment: ["POSTERN_DIRECTUS_ADMIN_EMAIL": "admin@example.com"]) else {
            Issue.record("credentials without a password were accepted")
            return
        }
        #expect(error.problems.map(\.path) == ["POSTERN_DIRECTUS_ADMIN_PASSWORD"])
    }

    @Test func problemsOfACodeBuiltConfigAreNamedToo() {
        var config = PosternConfig()
        config.resources[1].writable.append("id")
        config.cors.allowCredentials = true
        #expect(config.problems().map(\.path) == ["cors.allow_credentials", "resources[1].writable[2]"])
    }
}
