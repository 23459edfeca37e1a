/// What a reload compares (docs/api.md, Reloading the config).
extension PosternConfig {
    /// The keys a reload cannot change: the listeners, the worker threads and the session store (with the TLS
    /// files of its Redis connections) are made once.
    static let restartOnlyKeys = ["listen", "admin_listen", "workers", "sessions.store", "sessions.redis_ca_file",
                                          "sessions.redis_cert_file", "sessions.redis_key_file"]

    /// The restart-only keys whose values differ in `next` (a reload that changes one is refused whole).
    func restartOnlyChanges(to next: PosternConfig) -> [String] {
        var keys: [String] = []
        if listen != next.listen { keys.append("listen") }
        if adminListen != next.adminListen { keys.append("admin_listen") }
        if workers != next.workers { keys.append("workers") }
        if sessions.store != next.sessions.store { keys.append("sessions.store") }
        if sessions.redisCAFile != next.sessions.redisCAFile { keys.append("sessions.redis_ca_file") }
        if sessions.redisCertFile != next.sessions.redisCertFile { keys.append("sessions.redis_cert_file") }
        if sessions.redisKeyFile != next.sessions.redisKeyFile { keys.append("sessions.redis_key_file") }
        return keys
    }

    /// The keys that a reload takes but that apply only from the next start: the session lifetimes belong to the
    /// session manager, which a reload keeps, and the connection timeouts to the listeners.
    func appliedAtRestart(to next: PosternConfig) -> [String] {
        var keys: [String] = []
        if sessions.idleTTLSeconds != next.sessions.idleTTLSeconds { keys.append("sessions.idle_ttl_s") }
        if sessions.maxTTLSeconds != next.sessions.maxTTLSeconds { keys.append("sessions.max_ttl_s") }
        if sessions.maxPerUser != next.sessions.maxPerUser { keys.append("sessions.max_per_user") }
        if limits.inactivityTimeoutSeconds != next.limits.inactivityTimeoutSeconds { keys.append("limits.inactivity_timeout_s") }
        if limits.requestTimeoutSeconds != next.limits.requestTimeoutSeconds { keys.append("limits.request_timeout_s") }
        return keys
    }

    /// The top-level sections that differ in `next` (for the reload's log line).
    func changedSections(to next: PosternConfig) -> [String] {
        var keys: [String] = []
        if admin != next.admin { keys.append("admin") }
        if directus != next.directus { keys.append("directus") }
        if sessions != next.sessions { keys.append("sessions") }
        if limits != next.limits { keys.append("limits") }
        if rateLimits != next.rateLimits { keys.append("rate_limits") }
        if cors != next.cors { keys.append("cors") }
        if circuitBreaker != next.circuitBreaker { keys.append("circuit_breaker") }
        if resources != next.resources { keys.append("resources") }
        if composites != next.composites { keys.append("composites") }
        if cacheMaxEntries != next.cacheMaxEntries { keys.append("cache_max_entries") }
        return keys
    }

    /// True when `next` needs a new Directus connection pool (a changed URL or pool setting); the old pool then
    /// drains: its connections close as their calls finish.
    func needsNewPool(_ next: PosternConfig) -> Bool {
        directus.url != next.directus.url || directus.maxConnectionsPerWorker != next.directus.maxConnectionsPerWorker
            || directus.maxWaitingPerWorker != next.directus.maxWaitingPerWorker
            || directus.keepaliveIdleMs != next.directus.keepaliveIdleMs || directus.pipelineDepth != next.directus.pipelineDepth
            || directus.maxResponseBytes != next.directus.maxResponseBytes
    }
}
