import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension PosternConfig {
    /// Every problem with these values (ranges, formats, cross-field rules), each named by its key path.
    func problems() -> [ConfigProblem] {
        validate(sources: [:], resourcePaths: resources.indices.map { "resources[\($0)]" })
    }

    /// Validates the values. `sources` maps a key path to the environment variable that set it, so that
    /// the problem names the variable; `resourcePaths` and `compositePaths` name each resource and composite by its
    /// place in the file (nil: by its index).
    func validate(sources: [String: String], resourcePaths: [String], compositePaths: [String]? = nil) -> [ConfigProblem] {
        var problems: [ConfigProblem] = []
        func name(_ key: String) -> String { sources[key] ?? key }
        func report(_ key: String, _ message: String) { problems.append(ConfigProblem(path: name(key), message: message)) }
        func check(_ key: String, _ value: Int, _ rule: IntRule) {
            if !rule.allows(value) { report(key, rule.message) }
        }

        for (key, value) in [("listen", listen), ("admin_listen", adminListen)] where HostPort(value) == nil {
            report(key, "must be host:port with a port between 0 and 65535 (got \"\(value)\")")
        }
        check("workers", workers, .workers)
        if let problem = AdminConfig.problem(with: admin.token) { report("admin.token", problem) }

        if !PosternConfig.isUpstreamURL(directus.url) {
            // A URL with credentials is not echoed: it may hold a password.
            let shown = directus.url.contains("@") ? "a URL with credentials" : "\"\(directus.url)\""
            report("directus.url", "must be an http:// or https:// URL with a host and no credentials (got \(shown))")
        }
        check("directus.timeout_ms", directus.timeoutMs, .timeoutMs)
        check("directus.max_connections_per_worker", directus.maxConnectionsPerWorker, .connections)
        check("directus.keepalive_idle_ms", directus.keepaliveIdleMs, .keepaliveIdleMs)
        check("directus.max_waiting_per_worker", directus.maxWaitingPerWorker, .waiting)
        check("directus.pipeline_depth", directus.pipelineDepth, .pipelineDepth)
        check("directus.max_response_bytes", directus.maxResponseBytes, .responseBytes)
        if !["users", "register"].contains(directus.registration) {
            report("directus.registration", "must be \"users\" or \"register\" (got \"\(directus.registration)\")")
        }

        if sessions.storeKind == nil {
            // A URL with credentials is not echoed: it may hold a password.
            let shown = sessions.store.contains("@") ? "a URL with credentials" : "\"\(sessions.store)\""
            report("sessions.store",
                   "must be memory, sqlite:<path> or redis[s]://[[user]:password@]host:port[/db] (got \(shown))")
        }
        for problem in sessions.redisTLSProblems() { report(problem.path, problem.message) }
        check("sessions.idle_ttl_s", sessions.idleTTLSeconds, .positive)
        check("sessions.max_ttl_s", sessions.maxTTLSeconds, .positive)
        check("sessions.max_per_user", sessions.maxPerUser, .positive)
        if sessions.idleTTLSeconds > sessions.maxTTLSeconds {
            report("sessions.idle_ttl_s", "must not exceed sessions.max_ttl_s (\(sessions.maxTTLSeconds))")
        }

        check("limits.max_body_bytes", limits.maxBodyBytes, .bodyBytes)
        check("limits.inactivity_timeout_s", limits.inactivityTimeoutSeconds, .positive)
        check("limits.request_timeout_s", limits.requestTimeoutSeconds, .positive)
        check("limits.shutdown_grace_s", limits.shutdownGraceSeconds, .positive)

        check("rate_limits.failed_logins_per_ip_per_min", rateLimits.failedLoginsPerIPPerMinute, .nonNegative)
        check("rate_limits.failed_logins_per_email_per_min", rateLimits.failedLoginsPerEmailPerMinute, .nonNegative)
        check("rate_limits.failed_logins_per_email_per_day", rateLimits.failedLoginsPerEmailPerDay, .nonNegative)
        check("rate_limits.registrations_per_ip_per_min", rateLimits.registrationsPerIPPerMinute, .nonNegative)
        check("rate_limits.requests_per_token_per_min", rateLimits.requestsPerTokenPerMinute, .nonNegative)
        check("rate_limits.max_buckets", rateLimits.maxBuckets, .buckets)
        for (i, proxy) in rateLimits.trustedProxies.enumerated() where !PosternConfig.isIPAddress(proxy) {
            report("rate_limits.trusted_proxies[\(i)]", "must be an IPv4 or IPv6 address (got \"\(proxy)\")")
        }

        for (i, origin) in cors.allowedOrigins.enumerated() where origin != "*" && !PosternConfig.isOrigin(origin) {
            report("cors.allowed_origins[\(i)]",
                   "must be \"*\" or an origin like https://app.example.com, with no path (got \"\(origin)\")")
        }
        if cors.allowCredentials && cors.allowedOrigins.contains("*") {
            report("cors.allow_credentials", "cannot be true while cors.allowed_origins contains \"*\"; list the origins")
        }
        check("cors.max_age_s", cors.maxAgeSeconds, .nonNegative)

        check("circuit_breaker.failures", circuitBreaker.failures, .positive)
        check("circuit_breaker.open_s", circuitBreaker.openSeconds, .positive)
        check("cache_max_entries", cacheMaxEntries, .positive)

        if !PosternConfig.logLevels.contains(logLevel) {
            report("log_level", "must be one of \(PosternConfig.logLevels.joined(separator: ", ")) (got \"\(logLevel)\")")
        }
        if secretKey != nil && secretKeyBytes == nil {
            report("secret_key", "must be base64 of exactly 32 bytes (e.g. the output of `openssl rand -base64 32`)")
        }

        var seen: [String: String] = [:]
        for (resource, path) in zip(resources, resourcePaths) {
            problems += resource.problems(at: path)
            guard !resource.name.isEmpty else { continue }
            if let first = seen[resource.name] {
                problems.append(ConfigProblem(path: "\(path).name",
                                              message: "duplicate resource name \"\(resource.name)\" (also \(first))"))
            } else {
                seen[resource.name] = path
            }
        }
        problems += compositeProblems(paths: compositePaths ?? composites.indices.map { "composites[\($0)]" })
        return problems
    }

    /// Whether `text` is an `http://` or `https://` URL with a host and no query or fragment.
    static func isUpstreamURL(_ text: String) -> Bool {
        guard let c = URLComponents(string: text), let scheme = c.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = c.host, !host.isEmpty,
              c.query == nil, c.fragment == nil, c.user == nil, c.password == nil else { return false }
        return true
    }

    /// Whether `text` is a browser origin: `scheme://host[:port]`, nothing after it.
    static func isOrigin(_ text: String) -> Bool {
        guard let c = URLComponents(string: text), let scheme = c.scheme, !scheme.isEmpty,
              let host = c.host, !host.isEmpty, c.path.isEmpty, c.query == nil, c.fragment == nil,
              c.user == nil else { return false }
        return true
    }

    /// Whether `text` is a literal IPv4 or IPv6 address.
    static func isIPAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }
}

extension ResourceConfig {
    /// The problems of this resource, named under `path` (e.g. `resources[1]`).
    func problems(at path: String) -> [ConfigProblem] {
        var problems: [ConfigProblem] = []
        func report(_ key: String, _ message: String) { problems.append(ConfigProblem(path: "\(path).\(key)", message: message)) }

        if name.isEmpty {
            report("name", "is required")
        } else if !ResourceConfig.isName(name) {
            report("name", "must match [a-z][a-z0-9_-]* (got \"\(name)\")")
        } else if name == "user" {
            report("name", "\"user\" is reserved for /api/v1/user")
        }
        if collection.isEmpty {
            report("collection", "is required")
        } else if !ResourceConfig.isFieldName(collection, allowDash: true) {
            report("collection", "must be a Directus collection name: letters, digits, _ and - (got \"\(collection)\")")
        } else if collection.hasPrefix("directus_") {
            report("collection", "Directus system collections cannot be served as resources")
        }

        let names = fields.map(\.0)
        if !names.contains("id") {
            report("fields", "must map \"id\" (e.g. \"id\": \"id\")")
        } else if let id = directusField("id"), id.contains(".") {
            report("fields.id", "must be a field of the collection, not a path through a relation (got \"\(id)\")")
        } else if directusField("id") == nil {
            report("fields.id", "must be a field of the collection (a string)")
        }
        problems += fieldProblems(at: path)
        var mappedBy: [String: String] = [:]
        for (field, spec) in fields {
            guard let target = spec.pathValue, !target.contains(".") else { continue }
            if let other = mappedBy[target] {
                report("fields.\(field)", "Directus field \"\(target)\" is already mapped by \(other)")
            } else {
                mappedBy[target] = field
            }
        }
        let related = Set(fields.filter { $0.1.isRelated }.map(\.0) + detailFields.map(\.0))
        let known = "(\(names.joined(separator: ", ")))"
        for (i, field) in required.enumerated() {
            if related.contains(field) {
                report("required[\(i)]", "\"\(field)\" reads through a relation; related fields cannot be required")
            } else if !names.contains(field) {
                report("required[\(i)]", "\"\(field)\" is not a field of this resource \(known)")
            }
        }
        let ownerField = owner.flatMap { resourceField($0) }
        for (i, field) in writable.enumerated() {
            if related.contains(field) {
                report("writable[\(i)]", "\"\(field)\" reads through a relation; related fields are read-only")
            } else if !names.contains(field) {
                report("writable[\(i)]", "\"\(field)\" is not a field of this resource \(known)")
            } else if field == "id" {
                report("writable[\(i)]", "\"id\" cannot be writable")
            } else if field == ownerField, let owner {
                report("writable[\(i)]", "\"\(field)\" maps the owner field \(owner), which Directus sets; it cannot be writable")
            }
        }
        for (j, field) in (searchFields ?? []).enumerated() {
            if related.contains(field) {
                report("search_fields[\(j)]", "\"\(field)\" reads through a relation; Directus does not search related fields")
            } else if !names.contains(field) {
                report("search_fields[\(j)]", "\"\(field)\" is not a field of this resource \(known)")
            }
        }
        if let searchFields, searchFields.count > ResourceConfig.maxSearchFields {
            report("search_fields", "at most \(ResourceConfig.maxSearchFields) fields (Directus reads longer filter lists as objects)")
        }
        if let owner, owner.contains(".") {
            report("owner", "must be a field of the collection, not a path through a relation (got \"\(owner)\")")
        } else if let owner, ownerField == nil {
            report("owner", "Directus field \"\(owner)\" is not mapped by any field of this resource")
        }

        if maxLimit < 1 { report("max_limit", IntRule.positive.message) }
        if defaultLimit < 1 {
            report("default_limit", IntRule.positive.message)
        } else if defaultLimit > maxLimit && maxLimit >= 1 {
            report("default_limit", "must not exceed max_limit (\(maxLimit))")
        }

        if cache.ttlMs < 0 { report("cache.ttl_ms", IntRule.nonNegative.message) }
        problems += filterProblems(at: path)

        for action in ResourceAction.allCases where permissions[action] == .owner && owner == nil {
            report("permissions.\(action.rawValue)", "rule \"owner\" needs \(path).owner (the Directus field of the creator)")
        }
        return problems
    }

    /// Whether `text` matches `[a-z][a-z0-9_-]*`.
    static func isName(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first, ("a"..."z").contains(first) else { return false }
        return text.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "-" }
    }

    /// Whether `text` matches `[A-Za-z_][A-Za-z0-9_]*` (with `-` too when `allowDash`).
    static func isFieldName(_ text: String, allowDash: Bool) -> Bool {
        guard let first = text.unicodeScalars.first, first.isASCIILetter || first == "_" else { return false }
        return text.unicodeScalars.allSatisfy {
            $0.isASCIILetter || ("0"..."9").contains($0) || $0 == "_" || (allowDash && $0 == "-")
        }
    }
}

private extension Unicode.Scalar {
    /// `A`…`Z` or `a`…`z`.
    var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
}

extension AdminConfig {
    /// What is wrong with `token` as an admin token (never echoing it), or nil: empty (off), or at least
    /// `minTokenBytes` printable ASCII bytes without spaces (it travels in an `Authorization` header).
    static func problem(with token: String) -> String? {
        guard !token.isEmpty else { return nil }
        guard token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return "must be printable ASCII without spaces (it is sent as `Authorization: Bearer <token>`)"
        }
        guard token.utf8.count >= minTokenBytes else {
            return "must be at least \(minTokenBytes) characters (e.g. `openssl rand -hex 24`), or empty to turn /admin/ off"
        }
        return nil
    }
}
