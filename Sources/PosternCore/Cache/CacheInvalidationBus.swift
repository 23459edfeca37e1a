/// Carries "this collection changed" to every micro-cache that may hold answers over it
/// (docs/api.md, Micro-cache). The local bus reaches this process only; a shared bus (Redis pub/sub)
/// also reaches the other instances.
protocol CacheInvalidationBus: Sendable {
    /// Announces that `collection` changed. Must deliver to this process's subscribers before it returns,
    /// so that a write's own response is sent only after the local cache dropped the collection.
    func publish(collection: String)
    /// Registers `handler`, called with the collection of every change announced (set up once at start).
    func subscribe(_ handler: @escaping @Sendable (String) -> Void)
}

/// The in-process bus: `publish` calls every subscriber synchronously, on the caller's thread.
final class LocalInvalidationBus: CacheInvalidationBus {
    private let handlers = LockedBox<[@Sendable (String) -> Void]>([])

    /// An empty bus.
    init() {}

    /// Calls every subscriber with `collection` (outside the lock).
    func publish(collection: String) {
        for handler in handlers.withLock({ $0 }) { handler(collection) }
    }

    /// Adds a subscriber.
    func subscribe(_ handler: @escaping @Sendable (String) -> Void) {
        handlers.withLock { $0.append(handler) }
    }
}
