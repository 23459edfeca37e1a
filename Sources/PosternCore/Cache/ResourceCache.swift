import FoundationEssentials
import PosternHTTP

/// One resource's view of the process-wide micro-cache (docs/api.md, Micro-cache): its TTL and scope, the
/// collection its answers depend on, and the invalidation bus its writes announce on. Built once per resource.
final class ResourceCache: Sendable {
    /// The shared cache; nil when this resource is not cached (`cache.ttl_ms` 0).
    let cache: MicroCache?
    /// The resource name as its keys carry it: with the config generation after the first (docs/api.md, Reloading
    /// the config), so that an answer stored by an older generation is never served by a newer one.
    let resource: String
    /// The Directus collection behind the resource.
    let collection: String
    /// The collection's write counter in `cache` (looked up once, read without a lock on every request); for a
    /// resource that reads through relations, the counter every write bumps (`MicroCache.relations`).
    let generation: MicroCache.Generation?
    /// How long an answer is served.
    let ttl: Duration
    /// Who shares an answer.
    let scope: CacheScope
    /// Where writes announce that the collection changed.
    let invalidations: any CacheInvalidationBus
    /// The upstream call of a list without parameters, hashed once (the usual list's key is built from it).
    private let plainList: CacheKey.Prefix?

    /// The view of `resource` over `cache`; `plainList` is the upstream path and query of a list without
    /// parameters, when known; `generation` is the config generation of the routes it serves.
    init(_ resource: ResourceConfig, cache: MicroCache, invalidations: any CacheInvalidationBus,
         plainList: (path: String, query: [(String, String)])? = nil, generation configGeneration: Int = 1) {
        let name = configGeneration > 1 ? "\(resource.name)@\(configGeneration)" : resource.name
        self.plainList = plainList.map { CacheKey.Prefix(resource: name, path: $0.path, query: $0.query) }
        self.cache = resource.cache.ttlMs > 0 ? cache : nil
        self.resource = name
        self.collection = resource.collection
        // A resource that reads through relations answers with rows of other collections too: any write drops it.
        let counter = resource.readsRelations ? MicroCache.relations : resource.collection
        generation = resource.cache.ttlMs > 0 ? cache.generation(for: counter) : nil
        ttl = .milliseconds(resource.cache.ttlMs)
        scope = resource.cache.scope
        self.invalidations = invalidations
    }

    /// The key of the answer of a list or read route whose upstream call is `path` with `query`; nil when this
    /// resource is not cached. `perUser` keys the answer per caller whatever the scope (a list narrowed to
    /// the caller's own items).
    func key(path: String, query: [(String, String)], session: Session?, perUser: Bool) -> CacheKey? {
        guard cache != nil else { return nil }
        let audience = CacheKey.Audience(session: session, scope: scope, perUser: perUser)
        if let plainList, plainList.matches(path: path, query: query) { return CacheKey(plainList, sharedBy: audience) }
        return CacheKey(resource: resource, path: path, query: query, sharedBy: audience)
    }

    /// The fresh stored answer of `key` (with `X-Cache: HIT`), if any: checked before `respond`, so that a hit
    /// is answered without an `await`.
    func stored(_ key: CacheKey?) -> HTTPResponse? {
        guard let key, let cache, let generation else { return nil }
        return cache.storedAnswer(key, generation: generation)
    }

    /// The answer under `key`: cached or coalesced when this resource is cached (with `X-Cache`), else (nil
    /// key) `produce()`'s.
    func respond(key: CacheKey?, _ produce: () async throws(GatewayError) -> HTTPResponse) async throws(GatewayError) -> HTTPResponse {
        guard let key, let cache, let generation else { return try await produce() }
        return try await cache.answer(key, generation: generation, ttl: ttl, produce: produce).0
    }

    /// Announces a write to the collection (whether or not this resource is cached: another one over the
    /// same collection may be). Called before the write's response is sent.
    func invalidate() {
        invalidations.publish(collection: collection)
    }
}

extension MicroCache {
    /// Subscribes the cache to `bus` and registers its counters on `metrics` (once, at start).
    func attach(to bus: any CacheInvalidationBus, metrics: Metrics) {
        // Closures over the cache's parts, not the cache (`MicroCache.invalidator`).
        bus.subscribe(invalidator)
        let counts = counter
        metrics.counter("postern_cache_hits_total", help: "Answers served from the micro-cache.") { Double(counts().hits) }
        metrics.counter("postern_cache_misses_total", help: "Cacheable requests that called Directus.") { Double(counts().misses) }
        metrics.counter("postern_cache_coalesced_total",
                        help: "Requests that waited for an identical request's Directus call.") { Double(counts().coalesced) }
        metrics.counter("postern_cache_evictions_total", help: "Answers dropped to stay within cache_max_entries.") {
            Double(counts().evictions)
        }
        metrics.gauge("postern_cache_entries", help: "Answers held by the micro-cache.") { Double(counts().entries) }
    }
}
