import FoundationEssentials
import PosternHTTP
import PosternIO

extension PosternConfig {
    /// What stands in for a secret wherever the config is shown.
    static let redacted = "<redacted>"

    /// The effective configuration in the file's shape (docs/api.md, Configuration), with every secret replaced by
    /// `<redacted>`: `admin.token`, `secret_key`, a password in a `redis://` store URL, credentials in
    /// `directus.url`. An unset secret shows as `""` or null, so that an operator sees whether it is set.
    /// For the operator console (`GET /admin/stats`).
    func redactedJSON() -> JSONValue {
        func int(_ value: Int) -> JSONValue { .int(Int64(value)) }
        func strings(_ values: [String]) -> JSONValue { .array(values.map { .string($0) }) }
        return .object([
            ("listen", .string(listen)),
            ("admin_listen", .string(adminListen)),
            ("admin", .object([("token", .string(admin.token.isEmpty ? "" : PosternConfig.redacted))])),
            ("workers", int(workers)),
            ("directus", .object([
                ("url", .string(PosternConfig.redactingCredentials(directus.url))),
                ("timeout_ms", int(directus.timeoutMs)),
                ("max_connections_per_worker", int(directus.maxConnectionsPerWorker)),
                ("registration", .string(directus.registration)),
                ("keepalive_idle_ms", int(directus.keepaliveIdleMs)),
                ("max_waiting_per_worker", int(directus.maxWaitingPerWorker)),
                ("pipeline_depth", int(directus.pipelineDepth)),
                ("max_response_bytes", int(directus.maxResponseBytes)),
            ])),
            ("sessions", .object([
                ("store", .string(PosternConfig.redactingCredentials(sessions.store))),
                ("idle_ttl_s", int(sessions.idleTTLSeconds)),
                ("max_ttl_s", int(sessions.maxTTLSeconds)),
                ("max_per_user", int(sessions.maxPerUser)),
                ("redis_ca_file", sessions.redisCAFile.map { .string($0) } ?? .null),
                ("redis_cert_file", sessions.redisCertFile.map { .string($0) } ?? .null),
                ("redis_key_file", sessions.redisKeyFile.map { .string($0) } ?? .null),
            ])),
            ("limits", .object([
                ("max_body_bytes", int(limits.maxBodyBytes)),
                ("inactivity_timeout_s", int(limits.inactivityTimeoutSeconds)),
                ("request_timeout_s", int(limits.requestTimeoutSeconds)),
                ("shutdown_grace_s", int(limits.shutdownGraceSeconds)),
            ])),
            ("rate_limits", .object([
                ("failed_logins_per_ip_per_min", int(rateLimits.failedLoginsPerIPPerMinute)),
                ("failed_logins_per_email_per_min", int(rateLimits.failedLoginsPerEmailPerMinute)),
                ("failed_logins_per_email_per_day", int(rateLimits.failedLoginsPerEmailPerDay)),
                ("registrations_per_ip_per_min", int(rateLimits.registrationsPerIPPerMinute)),
                ("requests_per_token_per_min", int(rateLimits.requestsPerTokenPerMinute)),
                ("trusted_proxies", strings(rateLimits.trustedProxies)),
                ("max_buckets", int(rateLimits.maxBuckets)),
            ])),
            ("cors", .object([
                ("allowed_origins", strings(cors.allowedOrigins)),
                ("allow_credentials", .bool(cors.allowCredentials)),
                ("max_age_s", int(cors.maxAgeSeconds)),
            ])),
            ("circuit_breaker", .object([("failures", int(circuitBreaker.failures)), ("open_s", int(circuitBreaker.openSeconds))])),
            ("cache_max_entries", int(cacheMaxEntries)),
            ("resources", .array(resources.map { $0.json() })),
            ("composites", .array(composites.map { $0.json(under: directus) })),
            ("log_level", .string(logLevel)),
            ("secret_key", secretKey == nil ? .null : .string(PosternConfig.redacted)),
        ])
    }

    /// `text` with the user information of a URL (`scheme://user:password@host…`) replaced by `<redacted>`;
    /// anything else unchanged. The user information ends at the last `@` of the text, as `RedisURL` (the parse
    /// that connects) reads it: a password may hold `?`, `#`, `/`, `%`, `:` or `@` and is still hidden whole. (A
    /// valid `redis://` URL has nothing but digits after its host, so its last `@` is the one `RedisURL` splits
    /// at; in any other URL cutting at the last `@` can only hide more, never less.)
    static func redactingCredentials(_ text: String) -> String {
        guard let scheme = text.byteRange(of: "://") else { return text }
        let rest = text[scheme.upperBound...]
        guard let at = rest.lastIndex(of: "@") else { return text }
        return String(text[..<scheme.upperBound]) + PosternConfig.redacted + String(text[at...])
    }
}

extension ResourceConfig {
    /// The resource in the file's shape (nothing in it is secret).
    func json() -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("name", .string(name)), ("collection", .string(collection)), ("id_type", .string(idType.rawValue)),
            ("fields", .object(fields.map { ($0.0, $0.1.json) })),
        ]
        if !detailFields.isEmpty { members.append(("detail_fields", .object(detailFields.map { ($0.0, $0.1.json) }))) }
        members += [
            ("required", .array(required.map { .string($0) })), ("writable", .array(writable.map { .string($0) })),
            ("owner", owner.map { .string($0) } ?? .null),
        ]
        if let searchFields { members.append(("search_fields", .array(searchFields.map { .string($0) }))) }
        if !filters.isEmpty { members.append(("filters", filtersJSON())) }
        members += [
            ("max_limit", .int(Int64(maxLimit))), ("default_limit", .int(Int64(defaultLimit))),
            ("cache", .object([("ttl_ms", .int(Int64(cache.ttlMs))), ("scope", .string(cache.scope.rawValue))])),
            ("permissions", .object(ResourceAction.allCases.map { ($0.rawValue, .string((permissions[$0] ?? .nobody).description)) })),
        ]
        return .object(members)
    }
}

extension CompositeConfig {
    /// The composite in the file's shape, its timeout as in effect under `directus`.
    func json(under directus: DirectusConfig) -> JSONValue {
        .object([
            ("name", .string(name)), ("path", .string(path)), ("permission", .string(permission.description)),
            ("timeout_ms", .int(Int64(timeoutMs(under: directus)))),
            ("parts", .array(parts.map { part in
                .object([("key", .string(part.key)), ("route", .string(part.route)), ("required", .bool(part.required)),
                         ("query", .object(part.query.map { ($0.0, .string($0.1)) }))])
            })),
        ])
    }
}
