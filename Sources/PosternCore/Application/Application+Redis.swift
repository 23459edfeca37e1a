import Foundation

extension Application {
    /// The Redis session store of `sessions.store = redis://…`, with its shared buses and counters, running
    /// on the worker loops `group` (docs/api.md, Several instances (Redis)). This is the one place the Redis
    /// store plugs in: return `SessionBackend(store:close:invalidations:revocations:counters:kind: .shared)`.
    static func redisBackend(_ url: RedisURL, config: PosternConfig, group: EventLoopGroup?,
                             log: AccessLog) throws(StartError) -> SessionBackend {
        throw StartError("sessions.store: the Redis store is not available yet; use memory or sqlite:PATH")
    }
}
