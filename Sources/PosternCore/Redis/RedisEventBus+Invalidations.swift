/// The micro-cache side of the Redis event bus (the bus carries session and cache messages alike; the cache's
/// half lives here, with the cache).
extension RedisEventBus {
    /// The micro-cache side of the bus.
    var invalidations: any CacheInvalidationBus { Invalidations(bus: self) }

    /// Micro-cache invalidations over the bus.
    struct Invalidations: CacheInvalidationBus {
        /// The bus it speaks for.
        let bus: RedisEventBus

        /// Drops `collection` from this process's caches now, then tells the other instances.
        func publish(collection: String) {
            for handler in bus.cacheHandlers.withLock({ $0 }) { handler(collection) }
            bus.send("c", collection)
        }

        /// Registers a micro-cache (called for local and remote changes).
        func subscribe(_ handler: @escaping @Sendable (String) -> Void) {
            bus.cacheHandlers.withLock { $0.append(handler) }
        }
    }
}
