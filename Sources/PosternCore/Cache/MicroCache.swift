import FoundationEssentials
import Synchronization
import PosternIO
import PosternHTTP

/// The process-wide micro-cache of rendered list and read answers (docs/api.md, Micro-cache): a bounded
/// LRU with a TTL from a monotonic clock, coalescing of concurrent identical misses, and a generation per
/// collection so that a write drops every answer over its collection in O(1) and a read in flight when a
/// write landed never stores its older answer.
///
/// Shared by every worker loop without one lock for all of them: the keys are spread by hash over shards
/// (each its own LRU, lock and share of `maxEntries`; a small cache is one shard, an exact LRU), and the
/// generations are atomics read without a lock. A shard's lock is held only for dictionary and list
/// updates, never across an `await`; waiting continuations are resumed after it is released.
package final class MicroCache: @unchecked Sendable {
    /// A monotonic clock: the time elapsed since some fixed origin (injected in tests).
    package typealias Clock = @Sendable () -> Duration

    /// How a request was answered.
    package enum Outcome: Sendable, Equatable {
        /// Served from the store.
        case hit
        /// Waited for another request's upstream call for the same key (answered `X-Cache: HIT`).
        case coalesced
        /// Called upstream itself.
        case miss

        /// The `X-Cache` header value.
        var header: String { self == .miss ? "MISS" : "HIT" }
    }

    /// Counters since start, for `/metrics` and tests.
    struct Counts: Sendable, Equatable {
        /// Answers served from the store.
        var hits = 0
        /// Requests that called upstream.
        var misses = 0
        /// Requests that waited for another's upstream call.
        var coalesced = 0
        /// Answers dropped to stay within `maxEntries`.
        var evictions = 0
        /// Answers held now (including ones a write made stale and that are not yet dropped).
        var entries = 0
    }

    /// The write counter of one collection: every write adds one; an answer is served and stored only
    /// under the value it started with. Read without a lock.
    final class Generation: Sendable {
        private let value = Atomic<UInt64>(0)

        /// The number of writes announced so far.
        var current: UInt64 { value.load(ordering: .acquiring) }

        /// Announces one more write.
        func bump() { value.wrappingAdd(1, ordering: .sequentiallyConsistent) }
    }

    /// The most answers kept (over all shards).
    let maxEntries: Int
    private let shards: [Shard]
    private let shardMask: Int
    private let generations = LockedBox<[String: Generation]>([:])

    /// An empty cache holding at most `maxEntries` answers (at least 1), timed by `now`; `preparing` adds to a
    /// stored answer's headers what every hit would otherwise add the same way on its way out (the edge's fields).
    init(maxEntries: Int, now: @escaping Clock = MicroCache.monotonicClock(),
                preparing: @escaping @Sendable (inout HTTPHeaders) -> Void = { _ in }) {
        let maxEntries = max(1, maxEntries)
        let count = MicroCache.shardCount(maxEntries: maxEntries)
        self.maxEntries = maxEntries
        shardMask = count - 1
        shards = (0..<count).map { i in
            Shard(capacity: maxEntries / count + (i < maxEntries % count ? 1 : 0), now: now, preparing: preparing)
        }
    }

    /// How many shards hold `maxEntries` answers: a power of two up to 16, with at least 256 answers each
    /// (so that a small cache is one exact LRU).
    static func shardCount(maxEntries: Int) -> Int {
        var count = 1
        while count < 16 && maxEntries / (count * 2) >= 256 { count *= 2 }
        return count
    }

    /// The real monotonic clock, elapsed since this call: `CLOCK_MONOTONIC_COARSE`, read on every lookup for a
    /// quarter of the cost of the precise clock (no TSC read); its few milliseconds of resolution are well
    /// inside a TTL's precision (an answer may be served up to one tick after its TTL, never taken for expired
    /// early by more than one tick).
    static func monotonicClock() -> Clock {
        let origin = MonotonicInstant.coarse.nanoseconds
        return { .nanoseconds(Int64(bitPattern: MonotonicInstant.coarse.nanoseconds &- origin)) }
    }

    /// The write counter of `collection` (made on first use; resources keep theirs from start).
    func generation(for collection: String) -> Generation {
        generations.withLock { table in
            if let generation = table[collection] { return generation }
            let generation = Generation()
            table[collection] = generation
            return generation
        }
    }

    /// The answer for `key`: the stored one while fresh; else the answer of the upstream call already in
    /// flight for it; else `produce()`'s, which is stored for `ttl` when it is a 200 and no write to
    /// `collection` landed since the call started. Errors reach every waiter and are never stored. The
    /// answer carries its `X-Cache` header.
    func answer(_ key: CacheKey, collection: String, ttl: Duration,
                       produce: () async throws(GatewayError) -> HTTPResponse) async throws(GatewayError) -> (HTTPResponse, Outcome) {
        try await answer(key, generation: generation(for: collection), ttl: ttl, produce: produce)
    }

    /// `answer(_:collection:ttl:produce:)` with the collection's write counter already looked up.
    func answer(_ key: CacheKey, generation: Generation, ttl: Duration,
                       produce: () async throws(GatewayError) -> HTTPResponse) async throws(GatewayError) -> (HTTPResponse, Outcome) {
        let shard = shards[key.digest & shardMask]
        while true {
            switch shard.step(key, generation: generation.current) {
            case .hit(let response):
                return (response, .hit)  // stored with its `X-Cache: HIT`: nothing to rebuild
            case .lead(let flight):
                let result: Result<HTTPResponse, GatewayError>
                do throws(GatewayError) {
                    result = .success(try await produce())
                } catch {
                    result = .failure(error)
                }
                let waiters = shard.finish(key, flight: flight, result: result, ttl: ttl, generation: generation)
                for waiter in waiters { waiter.resume(returning: result) }
                var response = try result.get()
                response.headers.set("X-Cache", Outcome.miss.header)
                return (response, .miss)
            case .join(let flight):
                let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Result<HTTPResponse, GatewayError>?, Never>) in
                    // The call may have finished between the lookup and now: then look again.
                    if !shard.join(key, flight: flight, continuation) { continuation.resume(returning: nil) }
                }
                if let outcome {
                    var response = try outcome.get()
                    response.headers.set("X-Cache", Outcome.coalesced.header)
                    return (response, .coalesced)
                }
            }
        }
    }

    /// The stored answer for `key` while fresh under `generation`'s current value (counted as a hit), else
    /// nil: the first look of `answer`, without an `await` (a hit needs no async frame).
    func storedAnswer(_ key: CacheKey, generation: Generation) -> HTTPResponse? {
        shards[key.digest & shardMask].stored(key, generation: generation.current)
    }

    /// Drops every answer over `collection` (they are never served again) and stops reads already in flight
    /// from storing theirs.
    func invalidate(collection: String) {
        MicroCache.invalidate(collection: collection, in: generations)
    }

    /// Drops every stored answer (a config reload: docs/api.md, Reloading the config) and stops reads in flight
    /// from storing theirs.
    func invalidateAll() {
        for generation in generations.withLock({ Array($0.values) }) { generation.bump() }
    }

    /// The write counter of resources that read through relations (docs/api.md, Relations). Postern does not know
    /// which collection a relation reaches, so every write drops their answers: a write through any resource drops
    /// every answer that may show the written row. No collection has this name (collection names are letters,
    /// digits, `_` and `-`).
    static let relations = "*relations"

    /// `invalidate(collection:)` over the write counters themselves: the collection's and `relations`.
    private static func invalidate(collection: String, in generations: LockedBox<[String: Generation]>) {
        // No counter yet: nothing over the collection is stored or in flight.
        let (own, related) = generations.withLock { ($0[collection], $0[relations]) }
        own?.bump()
        related?.bump()
    }

    /// The counters so far (summed over the shards).
    var snapshot: Counts { MicroCache.counts(of: shards) }

    /// `invalidate(collection:)` as a closure that holds the write counters, not the cache.
    ///
    /// For subscriptions and metrics, which live as long as the cache or longer: they hold no reference to the
    /// cache itself, not even a weak one (a weak reference gives the cache a side table, and every retain of it
    /// on the request path then takes the slow path).
    var invalidator: @Sendable (String) -> Void {
        let generations = generations
        return { collection in MicroCache.invalidate(collection: collection, in: generations) }
    }

    /// `snapshot` as a closure that holds the shards, not the cache (see `invalidator`).
    var counter: @Sendable () -> Counts {
        let shards = shards
        return { MicroCache.counts(of: shards) }
    }

    /// The counters of `shards`, summed.
    private static func counts(of shards: [Shard]) -> Counts {
        var total = Counts()
        for shard in shards {
            let c = shard.snapshot
            total.hits += c.hits
            total.misses += c.misses
            total.coalesced += c.coalesced
            total.evictions += c.evictions
            total.entries += c.entries
        }
        return total
    }
}
