import FoundationEssentials

/// The session store of the configured kind, with what it shares with the other gateway instances:
/// cache invalidations, session revocations and rate-limit counters. Memory and SQLite stores serve one
/// instance, so all three are in process; a Redis store brings shared ones (`Application.redisBackend`).
struct SessionBackend: Sendable {
    /// Where sessions live.
    var store: any SessionStore
    /// Closes the store at shutdown (after the last flush).
    var close: (@Sendable () -> Void)?
    /// Carries micro-cache invalidations.
    var invalidations: any CacheInvalidationBus
    /// Carries session revocations and changes to the other instances' session caches.
    var revocations: any SessionRevocationBus
    /// Makes the counter of each rate-limit budget.
    var counters: RateLimitCounterFactory

    /// Which store kind this is, for logs and tests.
    var kind: Kind

    /// The store kinds.
    enum Kind: String, Sendable {
        /// Memory or SQLite: one instance.
        case local
        /// Redis: shared between instances.
        case shared
    }

    /// A store used by this instance alone: in-process buses and counters.
    static func local(_ store: any SessionStore, close: (@Sendable () -> Void)? = nil) -> SessionBackend {
        SessionBackend(store: store, close: close, invalidations: LocalInvalidationBus(), revocations: LocalRevocationBus(),
                       counters: TokenBuckets.inProcess, kind: .local)
    }
}
