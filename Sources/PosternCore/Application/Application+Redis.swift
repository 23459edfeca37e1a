import FoundationEssentials
import PosternIO
import PosternRedis
import PosternHTTP

extension Application {
    /// The Redis session store of `sessions.store = redis[s]://…`, with its shared buses and counters, running
    /// on the worker loops `group` (docs/api.md, Several instances (Redis)). It connects in the background:
    /// until Redis answers, requests that need it get 503 `session_store_unavailable` and `/readyz` is 503.
    /// A Redis that refuses this client (TLS: a certificate that fails the check, a client certificate
    /// refused; a refused AUTH or SELECT) fails the start with that reason, unless it is out of reach then.
    static func redisBackend(_ url: RedisURL, config: PosternConfig, group: EventLoopGroup?,
                             log: AccessLog) throws(StartError) -> SessionBackend {
        guard let group else {
            throw StartError("sessions.store: the Redis store runs on the gateway's own event loops (no injected transport)")
        }
        var box: SecretBox?
        if let key = config.secretKey {
            guard let opened = SecretBox(base64Key: key) else { throw StartError("POSTERN_SECRET_KEY is not 32 bytes of base64") }
            box = opened
        }
        let endpoint = try Application.redisEndpoint(url, config: config)
        let clients = RedisClientGroup(group: group, endpoint: endpoint)
        if case .refused(let why) = Application.firstAttempt(of: clients.clients[0], within: 3) {
            clients.close()
            throw StartError("sessions.store: Redis at \(endpoint) refused this client: \(why)")
        }
        let bus = RedisEventBus(clients: clients, endpoint: endpoint, loop: group.loops[0],
                                collections: Array(Set(config.resources.map(\.collection))).sorted())
        let store = RedisSessionStore(clients: clients, idleTTL: TimeInterval(config.sessions.idleTTLSeconds),
                                      maxTTL: TimeInterval(config.sessions.maxTTLSeconds), secretBox: box,
                                      // Outlives the holder's Directus call and its wait for the store.
                                      refreshLockTTL: Double(config.directus.timeoutMs) / 1000
                                          + SessionManager.directusTokenWritePatience + 5,
                                      listening: { bus.isSubscribed })
        log.event(.info, "session store: redis", [("redis", .string(endpoint.description))])
        return SessionBackend(store: store, close: { bus.close(); clients.close() }, invalidations: bus.invalidations,
                              revocations: bus.revocations,
                              counters: { budget in RedisRateLimitCounter(budget: budget, clients: clients) }, kind: .shared)
    }
}
