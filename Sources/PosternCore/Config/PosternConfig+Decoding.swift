/// The keys of each config object, as written in the file (docs/api.md, Configuration).
import PosternHTTP

enum ConfigKeys {
    /// Top level.
    static let root = ["listen", "admin_listen", "admin", "workers", "directus", "sessions", "limits", "rate_limits",
                       "cors", "circuit_breaker", "resources", "cache_max_entries", "composites"]
    /// `admin`.
    static let admin = ["token"]
    /// `directus`.
    static let directus = ["url", "timeout_ms", "max_connections_per_worker", "registration", "keepalive_idle_ms",
                           "max_waiting_per_worker", "pipeline_depth", "max_response_bytes"]
    /// `sessions`.
    static let sessions = ["store", "idle_ttl_s", "max_ttl_s", "max_per_user", "redis_ca_file", "redis_cert_file",
                           "redis_key_file"]
    /// `limits`.
    static let limits = ["max_body_bytes", "inactivity_timeout_s", "request_timeout_s", "shutdown_grace_s"]
    /// `rate_limits`.
    static let rateLimits = ["failed_logins_per_ip_per_min", "failed_logins_per_email_per_min",
                             "failed_logins_per_email_per_day", "registrations_per_ip_per_min", "requests_per_token_per_min",
                             "trusted_proxies", "max_buckets"]
    /// `cors`.
    static let cors = ["allowed_origins", "allow_credentials", "max_age_s"]
    /// `circuit_breaker`.
    static let circuitBreaker = ["failures", "open_s"]
    /// `resources[i]`.
    static let resource = ["name", "collection", "id_type", "fields", "detail_fields", "required", "writable", "owner",
                           "search_fields", "max_limit", "default_limit", "permissions", "cache", "filters"]
    /// `resources[i].cache`.
    static let cache = ["ttl_ms", "scope"]
}

extension PosternConfig {
    /// Decodes a parsed config file over the defaults. Checks types and keys only; ranges, formats and
    /// cross-field rules are checked by `validate`. Returns the config and, for each decoded resource,
    /// its key path (entries that could not be decoded at all are left out).
    static func decode(_ root: JSONValue, reader: inout ConfigReader) -> (PosternConfig, [String]) {
        var config = PosternConfig()
        var resourcePaths = config.resources.indices.map { "resources[\($0)]" }
        guard let top = reader.object(root, at: "", keys: ConfigKeys.root) else { return (config, resourcePaths) }
        if let v = reader.string(top, "listen", at: "") { config.listen = v }
        if let v = reader.string(top, "admin_listen", at: "") { config.adminListen = v }
        if let v = reader.int(top, "workers", at: "", rule: .workers) { config.workers = v }
        if let value = top["admin"], let o = reader.object(value, at: "admin", keys: ConfigKeys.admin) {
            if let v = reader.string(o, "token", at: "admin") { config.admin.token = v }
        }

        if let value = top["directus"], let o = reader.object(value, at: "directus", keys: ConfigKeys.directus) {
            let p = "directus"
            if let v = reader.string(o, "url", at: p) { config.directus.url = v }
            if let v = reader.int(o, "timeout_ms", at: p, rule: .timeoutMs) { config.directus.timeoutMs = v }
            if let v = reader.int(o, "max_connections_per_worker", at: p, rule: .connections) {
                config.directus.maxConnectionsPerWorker = v
            }
            if let v = reader.string(o, "registration", at: p) { config.directus.registration = v }
            if let v = reader.int(o, "keepalive_idle_ms", at: p, rule: .keepaliveIdleMs) { config.directus.keepaliveIdleMs = v }
            if let v = reader.int(o, "max_waiting_per_worker", at: p, rule: .waiting) { config.directus.maxWaitingPerWorker = v }
            if let v = reader.int(o, "pipeline_depth", at: p, rule: .pipelineDepth) { config.directus.pipelineDepth = v }
            if let v = reader.int(o, "max_response_bytes", at: p, rule: .responseBytes) { config.directus.maxResponseBytes = v }
        }
        if let value = top["sessions"], let o = reader.object(value, at: "sessions", keys: ConfigKeys.sessions) {
            let p = "sessions"
            if let v = reader.string(o, "store", at: p) { config.sessions.store = v }
            if let v = reader.int(o, "idle_ttl_s", at: p, rule: .positive) { config.sessions.idleTTLSeconds = v }
            if let v = reader.int(o, "max_ttl_s", at: p, rule: .positive) { config.sessions.maxTTLSeconds = v }
            if let v = reader.int(o, "max_per_user", at: p, rule: .positive) { config.sessions.maxPerUser = v }
            if let v = reader.string(o, "redis_ca_file", at: p) { config.sessions.redisCAFile = v }
            if let v = reader.string(o, "redis_cert_file", at: p) { config.sessions.redisCertFile = v }
            if let v = reader.string(o, "redis_key_file", at: p) { config.sessions.redisKeyFile = v }
        }
        if let value = top["limits"], let o = reader.object(value, at: "limits", keys: ConfigKeys.limits) {
            let p = "limits"
            if let v = reader.int(o, "max_body_bytes", at: p, rule: .bodyBytes) { config.limits.maxBodyBytes = v }
            if let v = reader.int(o, "inactivity_timeout_s", at: p, rule: .positive) {
                config.limits.inactivityTimeoutSeconds = v
            }
            if let v = reader.int(o, "request_timeout_s", at: p, rule: .positive) { config.limits.requestTimeoutSeconds = v }
            if let v = reader.int(o, "shutdown_grace_s", at: p, rule: .positive) { config.limits.shutdownGraceSeconds = v }
        }
        if let value = top["rate_limits"], let o = reader.object(value, at: "rate_limits", keys: ConfigKeys.rateLimits) {
            let p = "rate_limits"
            if let v = reader.int(o, "failed_logins_per_ip_per_min", at: p, rule: .nonNegative) {
                config.rateLimits.failedLoginsPerIPPerMinute = v
            }
            if let v = reader.int(o, "failed_logins_per_email_per_min", at: p, rule: .nonNegative) {
                config.rateLimits.failedLoginsPerEmailPerMinute = v
            }
            if let v = reader.int(o, "failed_logins_per_email_per_day", at: p, rule: .nonNegative) {
                config.rateLimits.failedLoginsPerEmailPerDay = v
            }
            if let v = reader.int(o, "registrations_per_ip_per_min", at: p, rule: .nonNegative) {
                config.rateLimits.registrationsPerIPPerMinute = v
            }
            if let v = reader.int(o, "requests_per_token_per_min", at: p, rule: .nonNegative) {
                config.rateLimits.requestsPerTokenPerMinute = v
            }
            if let v = reader.strings(o, "trusted_proxies", at: p) { config.rateLimits.trustedProxies = v }
            if let v = reader.int(o, "max_buckets", at: p, rule: .buckets) { config.rateLimits.maxBuckets = v }
        }
        if let value = top["cors"], let o = reader.object(value, at: "cors", keys: ConfigKeys.cors) {
            let p = "cors"
            if let v = reader.strings(o, "allowed_origins", at: p) { config.cors.allowedOrigins = v }
            if let v = reader.bool(o, "allow_credentials", at: p) { config.cors.allowCredentials = v }
            if let v = reader.int(o, "max_age_s", at: p, rule: .nonNegative) { config.cors.maxAgeSeconds = v }
        }
        if let value = top["circuit_breaker"],
           let o = reader.object(value, at: "circuit_breaker", keys: ConfigKeys.circuitBreaker) {
            let p = "circuit_breaker"
            if let v = reader.int(o, "failures", at: p, rule: .positive) { config.circuitBreaker.failures = v }
            if let v = reader.int(o, "open_s", at: p, rule: .positive) { config.circuitBreaker.openSeconds = v }
        }
        if let v = reader.int(top, "cache_max_entries", at: "", rule: .positive) { config.cacheMaxEntries = v }
        if let value = top["resources"] {
            if let elements = value.arrayValue {
                config.resources = []
                resourcePaths = []
                for (i, element) in elements.enumerated() {
                    let path = "resources[\(i)]"
                    if let resource = decodeResource(element, at: path, reader: &reader) {
                        config.resources.append(resource)
                        resourcePaths.append(path)
                    }
                }
            } else {
                reader.report("resources", "must be an array of resource objects, not \(value.typeName)")
            }
        }
        return (config, resourcePaths)
    }

    /// Decodes one resource object; missing `name`, `collection` and `fields` stay empty for `validate` to report.
    static func decodeResource(_ value: JSONValue, at path: String, reader: inout ConfigReader) -> ResourceConfig? {
        guard let o = reader.object(value, at: path, keys: ConfigKeys.resource) else { return nil }
        let fields = o["fields"].map { decodeFields($0, at: "\(path).fields", reader: &reader) } ?? []
        var resource = ResourceConfig(name: reader.string(o, "name", at: path) ?? "",
                                      collection: reader.string(o, "collection", at: path) ?? "",
                                      fields: fields)
        if let text = reader.string(o, "id_type", at: path) {
            if let idType = IDType(rawValue: text) {
                resource.idType = idType
            } else {
                let allowed = IDType.allCases.map(\.rawValue).joined(separator: ", ")
                reader.report("\(path).id_type", "unknown id type \"\(text)\" (\(allowed))")
            }
        }
        if let value = o["detail_fields"] {
            resource.detailFields = decodeFields(value, at: "\(path).detail_fields", reader: &reader)
        }
        if let v = reader.strings(o, "required", at: path) { resource.required = v }
        if let v = reader.strings(o, "writable", at: path) { resource.writable = v }
        if let ownerValue = o["owner"], !ownerValue.isNull {
            if let v = reader.string(o, "owner", at: path) { resource.owner = v }
        }
        if let v = reader.strings(o, "search_fields", at: path) { resource.searchFields = v }
        if let value = o["filters"] { resource.filters = decodeFilters(value, at: "\(path).filters", reader: &reader) }
        if let v = reader.int(o, "max_limit", at: path, rule: .positive) { resource.maxLimit = v }
        if let v = reader.int(o, "default_limit", at: path, rule: .positive) { resource.defaultLimit = v }
        if let value = o["cache"], let c = reader.object(value, at: "\(path).cache", keys: ConfigKeys.cache) {
            let cachePath = "\(path).cache"
            if let v = reader.int(c, "ttl_ms", at: cachePath, rule: .nonNegative) { resource.cache.ttlMs = v }
            if let text = reader.string(c, "scope", at: cachePath) {
                if let scope = CacheScope(rawValue: text) {
                    resource.cache.scope = scope
                } else {
                    reader.report("\(cachePath).scope", "unknown scope \"\(text)\" (user, role)")
                }
            }
        }
        let permissionsPath = "\(path).permissions"
        if let value = o["permissions"],
           let p = reader.object(value, at: permissionsPath, keys: ResourceAction.allCases.map(\.rawValue)) {
            for action in ResourceAction.allCases {
                guard let text = reader.string(p, action.rawValue, at: permissionsPath) else { continue }
                if let rule = PermissionRule(text) {
                    resource.permissions[action] = rule
                } else {
                    reader.report("\(permissionsPath).\(action.rawValue)",
                                  "unknown rule \"\(text)\" (public, authenticated, owner, role:<id>, nobody)")
                }
            }
        }
        return resource
    }
}
