import FoundationEssentials
import Synchronization
import PosternIO

/// One built pipeline (docs/api.md, Reloading the config): the route tables of both listeners with their
/// endpoints, mappers, policies and OpenAPI document, the edge stages, and the upstream client they call,
/// all built from one config and never changed. A reload builds the next one off the loops and publishes
/// it; a request keeps the generation it was routed with until it is answered.
final class GatewayGeneration: Sendable {
    /// 1 for the config the gateway started with, one more for each reload that changed something.
    let number: Int
    /// The config this generation was built from.
    let config: PosternConfig
    /// The routes of both listeners and the edge stages.
    let routes: RouteTable
    /// Who the client is (trusted proxies).
    let clientAddress: ClientAddress
    /// `limits.max_body_bytes` (named in the 413 the server gives for a body above its ceiling).
    let maxBodyBytes: Int
    /// The Directus client the routes call (its pool is kept by the next generation unless the pool's keys change).
    let directus: DirectusClient
    /// The rate limits (kept, with their buckets, by the next generation unless `rate_limits` changes).
    let rateLimits: RateLimits
    /// The circuit breaker (kept unless `circuit_breaker` changes).
    let breaker: CircuitBreaker?

    /// Builds generation `number` of `config` over the kept parts.
    init(number: Int, config: PosternConfig, directus: DirectusClient, rateLimits: RateLimits, breaker: CircuitBreaker?,
         shared: RouteTable.Shared) {
        self.number = number
        self.config = config
        self.directus = directus
        self.rateLimits = rateLimits
        self.breaker = breaker
        maxBodyBytes = config.limits.maxBodyBytes
        clientAddress = ClientAddress(trustedProxies: Set(config.rateLimits.trustedProxies))
        routes = RouteTable(config: config, generation: number, directus: directus, shared: shared, rateLimits: rateLimits,
                            breaker: breaker)
    }
}

/// Each worker loop's reference to the current generation, read on every request without a shared lock.
///
/// The newest generation is published under a lock with its number in an atomic; a loop compares the number
/// with that of the generation it holds (one load of a word that changes only on a reload) and takes the new
/// one when they differ. A loop's slot is touched by its own thread only.
final class GenerationSlots: Sendable {
    /// One loop's reference (loop thread only).
    private final class Slot: @unchecked Sendable {
        var generation: GatewayGeneration?
        init(_ generation: GatewayGeneration) { self.generation = generation }
    }

    private let latest: LockedBox<GatewayGeneration>
    private let latestNumber: Atomic<Int>
    private let key = EventLoop.LocalKey()
    /// Every slot made, so that `release` can break the loop → slot → generation → pool → loop cycle.
    private let made = LockedBox<[Slot]>([])

    /// Slots over `first`.
    init(_ first: GatewayGeneration) {
        latest = LockedBox(first)
        latestNumber = Atomic(first.number)
    }

    /// The newest generation (any thread).
    var newest: GatewayGeneration { latest.withLock { $0 } }

    /// The generation a request routed now uses: the calling loop's, brought up to date; off the loops, the newest.
    @inline(__always)
    var current: GatewayGeneration {
        let found = EventLoop.currentLocal(key) { () -> Slot in
            let slot = Slot(newest)
            made.withLock { $0.append(slot) }
            return slot
        }
        guard let slot = found else { return newest }
        if let held = slot.generation, held.number == latestNumber.load(ordering: .acquiring) { return held }
        let fresh = newest
        slot.generation = fresh
        return fresh
    }

    /// Makes `next` the generation of every request routed from now on (its number is above every earlier one).
    func publish(_ next: GatewayGeneration) {
        latest.withLock { $0 = next }
        latestNumber.store(next.number, ordering: .releasing)
    }

    /// Drops the loops' references (once the loops have stopped: no thread reads a slot any more).
    func release() {
        for slot in made.withLock({ $0 }) { slot.generation = nil }
    }
}
