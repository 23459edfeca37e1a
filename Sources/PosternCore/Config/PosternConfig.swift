/// The whole gateway configuration (docs/api.md, Configuration). Every key is optional; these are the defaults.
package struct PosternConfig: Sendable, Equatable {
    /// `host:port` of the public listener.
    package var listen = "0.0.0.0:8080"
    /// `host:port` of the admin listener (the dashboard, `/admin/…`, `/metrics`, `/healthz`, `/readyz`).
    package var adminListen = "127.0.0.1:9180"
    /// The admin listener's operator API (`admin`).
    package var admin = AdminConfig()
    /// Event-loop threads; 0 means one per core.
    package var workers = 0
    /// The Directus upstream.
    package var directus = DirectusConfig()
    /// Session storage and lifetimes.
    package var sessions = SessionsConfig()
    /// Request limits and timeouts.
    package var limits = LimitsConfig()
    /// Rate limits.
    var rateLimits = RateLimitsConfig()
    /// CORS.
    var cors = CORSConfig()
    /// Upstream circuit breaker.
    var circuitBreaker = CircuitBreakerConfig()
    /// The resources served at `/api/v1/<name>`.
    package var resources: [ResourceConfig] = ResourceConfig.shipped
    /// The composite endpoints (docs/api.md, Composite endpoints): the shipped ones over the shipped resources.
    package var composites: [CompositeConfig] = CompositeConfig.shipped
    /// The most answers the micro-cache keeps (least recently used evicted first).
    var cacheMaxEntries = 10_000
    /// `debug`, `info`, `notice`, `warning` or `error` (from `POSTERN_LOG_LEVEL`; not a file key).
    package var logLevel = "info"
    /// Base64 32-byte key that encrypts Directus tokens at rest (from `POSTERN_SECRET_KEY` only).
    var secretKey: String?

    /// The defaults.
    package init() {}
}

/// The operator API of the admin listener (`admin`): the bearer token every `/admin/…` call needs.
package struct AdminConfig: Sendable, Equatable {
    /// The admin bearer token (`POSTERN_ADMIN_TOKEN`); empty: `/admin/…` answers 403 `admin_disabled`.
    /// A secret: never logged, redacted wherever the config is shown.
    package var token = ""
    /// The shortest token accepted (bytes).
    static let minTokenBytes = 16
    /// The defaults (no token: the operator API is off).
    init() {}
}

/// The Directus upstream (`directus`).
package struct DirectusConfig: Sendable, Equatable {
    /// Base URL, `http://` or `https://`.
    package var url = "http://127.0.0.1:8055"
    /// Upstream timeout in milliseconds (→ 504).
    package var timeoutMs = 10_000
    /// Keep-alive connections per worker.
    var maxConnectionsPerWorker = 64
    /// `users` (public create on `/users`) or `register` (`/users/register`).
    var registration = "users"
    /// Pooled connections idle longer than this many milliseconds are closed, under Node's 5 s keep-alive.
    var keepaliveIdleMs = 4000
    /// Requests that may wait for a free pooled connection per worker; beyond it → 503.
    var maxWaitingPerWorker = 1024
    /// GETs sent in the same turn of a worker's loop that may share one connection, pipelined (1: none, the
    /// default: an answer is then only ever read on a connection that carries exactly one request).
    var pipelineDepth = 1
    /// The largest answer body read from Directus, in bytes (chunk framing included); beyond it → 502.
    var maxResponseBytes = 16 << 20
    /// The defaults.
    init() {}
}

/// Session storage (`sessions`).
package struct SessionsConfig: Sendable, Equatable {
    /// `memory`, `sqlite:/path`, or `redis[s]://[[user]:password@]host:port[/db]`.
    package var store = "sqlite:data/sessions.db"
    /// PEM file of the CA certificates that verify a `rediss://` server (`POSTERN_REDIS_CA_FILE`); nil: the
    /// system's trust store.
    var redisCAFile: String?
    /// PEM client certificate presented to a `rediss://` server that asks for one (`POSTERN_REDIS_CERT_FILE`).
    var redisCertFile: String?
    /// PEM private key of `redisCertFile` (`POSTERN_REDIS_KEY_FILE`).
    var redisKeyFile: String?
    /// Idle expiry in seconds.
    var idleTTLSeconds = 604_800
    /// Absolute expiry in seconds.
    var maxTTLSeconds = 2_592_000
    /// Live sessions per user; a login beyond it ends that user's least recently used session.
    var maxPerUser = 20
    /// The defaults.
    init() {}
}

/// Request limits (`limits`).
package struct LimitsConfig: Sendable, Equatable {
    /// Largest accepted body (→ 413 JSON).
    var maxBodyBytes = 1_048_576
    /// Connection inactivity timeout in seconds.
    var inactivityTimeoutSeconds = 10
    /// Seconds a request may take to arrive whole (headers and body), from its first byte.
    var requestTimeoutSeconds = 30
    /// Grace period for in-flight requests on shutdown, in seconds.
    package var shutdownGraceSeconds = 10
    /// The defaults.
    init() {}
}

/// Rate limits (`rate_limits`).
struct RateLimitsConfig: Sendable, Equatable {
    /// Failed logins per client IP per minute.
    var failedLoginsPerIPPerMinute = 10
    /// Failed logins per email per minute.
    var failedLoginsPerEmailPerMinute = 5
    /// Failed logins per email per day.
    var failedLoginsPerEmailPerDay = 20
    /// Registrations per client IP per minute.
    var registrationsPerIPPerMinute = 10
    /// API requests per Postern token per minute (0: no limit).
    var requestsPerTokenPerMinute = 0
    /// Peers whose `X-Forwarded-For` is trusted (IPs).
    var trustedProxies: [String] = []
    /// Buckets each limit holds at most (least recently used dropped first), bounding the limiter's memory.
    var maxBuckets = RateLimitsConfig.defaultMaxBuckets
    /// The default of `maxBuckets`.
    static let defaultMaxBuckets = 100_000
    /// The largest allowed `maxBuckets`.
    static let maxBucketsCeiling = 100_000_000
    /// The defaults.
    init() {}
}

/// CORS (`cors`).
struct CORSConfig: Sendable, Equatable {
    /// Allowed origins; `*` for any.
    var allowedOrigins = ["*"]
    /// Whether credentials are allowed (never with `*`).
    var allowCredentials = false
    /// Preflight cache lifetime in seconds.
    var maxAgeSeconds = 600
    /// The defaults.
    init() {}
}

/// Circuit breaker (`circuit_breaker`).
struct CircuitBreakerConfig: Sendable, Equatable {
    /// Consecutive connection failures or timeouts that open the circuit.
    var failures = 5
    /// Seconds the circuit stays open before one probe.
    var openSeconds = 5
    /// The defaults.
    init() {}
}

/// What a resource's answers are cached under besides the resource and the upstream query (`cache.scope`).
enum CacheScope: String, Sendable, Equatable, CaseIterable {
    /// One cached answer per caller (user id).
    case user
    /// One cached answer per Directus role, for resources whose read permissions do not depend on the user.
    case role
}

/// A resource's micro-cache settings (`resources[i].cache`); `ttlMs` 0 is off.
package struct ResourceCacheConfig: Sendable, Equatable {
    /// How long a cached answer is served, in milliseconds (0: not cached).
    var ttlMs = 0
    /// Who shares a cached answer.
    var scope: CacheScope = .user
    /// Off.
    init() {}
}

/// Which `{id}` values are valid keys of a collection.
enum IDType: String, Sendable, Equatable, CaseIterable {
    case integer, uuid, string
}

/// A permission rule (docs/api.md, Resources): a small closed set.
package enum PermissionRule: Sendable, Equatable, CustomStringConvertible {
    case `public`, authenticated, owner, nobody
    /// Allowed when the caller's Directus role id equals this id.
    case role(String)

    /// Parses `public`, `authenticated`, `owner`, `nobody` or `role:<id>`.
    init?(_ text: String) {
        switch text {
        case "public": self = .public
        case "authenticated": self = .authenticated
        case "owner": self = .owner
        case "nobody": self = .nobody
        default:
            guard text.hasPrefix("role:"), text.count > 5 else { return nil }
            self = .role(String(text.dropFirst(5)))
        }
    }

    /// The config text of the rule.
    package var description: String {
        switch self {
        case .public: return "public"
        case .authenticated: return "authenticated"
        case .owner: return "owner"
        case .nobody: return "nobody"
        case .role(let id): return "role:\(id)"
        }
    }
}

/// The actions a resource route performs.
package enum ResourceAction: String, Sendable, CaseIterable {
    case list, read, create, update, delete
}

/// One resource served at `/api/v1/<name>` over a Directus collection.
package struct ResourceConfig: Sendable, Equatable {
    /// The resource name (path segment and body key).
    package var name: String
    /// The Directus collection.
    var collection: String
    /// Which ids are valid keys.
    var idType: IDType = .integer
    /// Resource field name → what it reads (a Directus field, a dot path, a nested object or a list), in output
    /// order. Must map `id`.
    package var fields: [(String, FieldSpec)]
    /// Fields that `GET /{id}` adds to `fields` (same grammar), so that a list never fetches a list per row.
    var detailFields: [(String, FieldSpec)] = []
    /// Resource fields that are never null in output (`""` instead).
    package var required: [String] = []
    /// Resource fields a client may write.
    var writable: [String] = []
    /// The Directus field that holds the creator's user id (for `owner` rules).
    var owner: String?
    /// Resource fields that `search` looks in (`search_fields`); nil means the writable fields.
    var searchFields: [String]?
    /// Declared filters (`filters`): list query parameters that become Directus filters, in file order.
    var filters: [FilterConfig] = []
    /// Largest `limit`.
    var maxLimit = 100
    /// `limit` when none is given.
    var defaultLimit = 20
    /// The micro-cache settings (off by default).
    var cache = ResourceCacheConfig()
    /// The rule per action.
    var permissions: [ResourceAction: PermissionRule] = [
        .list: .authenticated, .read: .authenticated, .create: .authenticated, .update: .owner, .delete: .owner,
    ]

    /// Builds a resource.
    init(name: String, collection: String, fields: [(String, FieldSpec)]) {
        self.name = name
        self.collection = collection
        self.fields = fields
    }

    /// Equal when every setting is equal (fields compared in order).
    package static func == (lhs: ResourceConfig, rhs: ResourceConfig) -> Bool {
        lhs.name == rhs.name && lhs.collection == rhs.collection && lhs.idType == rhs.idType
            && FieldSpec.sameMembers(lhs.fields, rhs.fields) && FieldSpec.sameMembers(lhs.detailFields, rhs.detailFields)
            && lhs.required == rhs.required && lhs.writable == rhs.writable && lhs.owner == rhs.owner
            && lhs.searchFields == rhs.searchFields && lhs.filters == rhs.filters
            && lhs.maxLimit == rhs.maxLimit && lhs.defaultLimit == rhs.defaultLimit && lhs.permissions == rhs.permissions
            && lhs.cache == rhs.cache
    }

    /// The Directus field or path of resource field `name` (nil for a nested object or a list).
    func directusField(_ name: String) -> String? {
        fields.first { $0.0 == name }?.1.pathValue
    }

    /// The resource field that maps Directus field `name` as it is.
    func resourceField(_ directus: String) -> String? {
        fields.first { $0.1 == .path(directus) }?.0
    }

    /// The shipped resources: `books` (the SwiftUI tutorial's shape, with the `mine` flag), `posts` (the Directus
    /// tutorial's) and `comments` (on posts, filtered by `post`).
    static var shipped: [ResourceConfig] {
        var books = ResourceConfig(name: "books", collection: "posts",
                                   fields: [("id", "id"), ("title", "title"), ("subtitle", "content"), ("user", "user_created")])
        books.required = ["title"]
        books.writable = ["title", "subtitle"]
        books.owner = "user_created"
        books.filters = [FilterConfig(name: "mine", field: "user_created", op: .eq, value: .string(FilterConfig.currentUser))]
        var posts = ResourceConfig(name: "posts", collection: "posts",
                                   fields: [("id", "id"), ("title", "title"), ("content", "content"),
                                            ("user_created", "user_created"), ("date_created", "date_created"),
                                            ("author", .object([("id", "user_created.id"), ("name", "user_created.first_name")]))])
        posts.detailFields = [("comments", .list(ListSpec(from: "comments",
                                                          fields: [("id", "id"), ("text", "body"),
                                                                   ("author", "user_created.first_name")],
                                                          sort: "-date_created", limit: 5)))]
        posts.required = ["title"]
        posts.writable = ["title", "content"]
        posts.owner = "user_created"
        return [books, posts, Self.comments]
    }
}
