import Foundation

/// The process-wide micro-cache of rendered list and read answers (docs/api.md, Micro-cache): a bounded
/// LRU with a TTL from a monotonic clock, coalescing of concurrent identical misses, and a generation per
/// collection so that a write drops every answer over its collection in O(1) and a read in flight when a
/// write landed never stores its older answer.
///
/// Shared by every worker loop: one lock, held only for dictionary and list updates, never across an
/// `await`; waiting continuations are resumed after the lock is released.
public final class MicroCache: @unchecked Sendable {
    /// A monotonic clock: the time elapsed since some fixed origin (injected in tests).
    public typealias Clock = @Sendable () -> Duration

    /// How a request was answered.
    public enum Outcome: Sendable, Equatable {
        /// Served from the store.
        case hit
        /// Waited for another request's upstream call for the same key (answered `X-Cache: HIT`).
        case coalesced
        /// Called upstream itself.
        case miss

        /// The `X-Cache` header value.
        public var header: String { self == .miss ? "MISS" : "HIT" }
    }

    /// Counters since start, for `/metrics` and tests.
    public struct Counts: Sendable, Equatable {
        /// Answers served from the store.
        public var hits = 0
        /// Requests that called upstream.
        public var misses = 0
        /// Requests that waited for another's upstream call.
        public var coalesced = 0
        /// Answers dropped to stay within `maxEntries`.
        public var evictions = 0
        /// Answers held now (including ones a write made stale and that are not yet dropped).
        public var entries = 0
    }

    /// One stored answer, also a link of the recency list (most recent at `head`).
    private final class Node {
        let key: CacheKey
        let collection: String
        var response: HTTPResponse
        var expires: Duration
        var generation: UInt64
        var next: Node?
        /// Unowned: every linked node is also held by `entries` (and by its predecessor's `next`), and is
        /// unlinked before it leaves `entries`.
        unowned(unsafe) var prev: Node?

        init(key: CacheKey, collection: String, response: HTTPResponse, expires: Duration, generation: UInt64) {
            self.key = key
            self.collection = collection
            self.response = response
            self.expires = expires
            self.generation = generation
        }
    }

    /// One upstream call in flight for a key, and the requests waiting for it.
    private final class Flight {
        let generation: UInt64
        var waiters: [CheckedContinuation<Result<HTTPResponse, GatewayError>?, Never>] = []

        init(generation: UInt64) { self.generation = generation }
    }

    private enum Step {
        case hit(HTTPResponse)
        case lead(Flight)
        case join(Flight)
    }

    /// The most answers kept.
    public let maxEntries: Int
    private let now: Clock
    private let lock = NSLock()
    private var entries: [CacheKey: Node] = [:]
    private var head: Node?
    private var tail: Node?
    private var flights: [CacheKey: Flight] = [:]
    private var generations: [String: UInt64] = [:]
    private var counts = Counts()

    /// An empty cache holding at most `maxEntries` answers (at least 1), timed by `now`.
    public init(maxEntries: Int, now: @escaping Clock = MicroCache.monotonicClock()) {
        self.maxEntries = max(1, maxEntries)
        self.now = now
    }

    deinit {
        // Release the recency list front to back, so that a long list is not freed by deep recursion.
        var node = head
        head = nil
        tail = nil
        while let current = node {
            node = current.next
            current.next = nil
        }
    }

    /// The real monotonic clock (`ContinuousClock`, elapsed since this call).
    public static func monotonicClock() -> Clock {
        let origin = ContinuousClock.now
        return { ContinuousClock.now - origin }
    }

    /// The answer for `key`: the stored one while fresh; else the answer of the upstream call already in
    /// flight for it; else `produce()`'s, which is stored for `ttl` when it is a 200 and no write to
    /// `collection` landed since the call started. Errors reach every waiter and are never stored.
    public func answer(_ key: CacheKey, collection: String, ttl: Duration,
                       produce: () async throws(GatewayError) -> HTTPResponse) async throws(GatewayError) -> (HTTPResponse, Outcome) {
        while true {
            switch step(key, collection: collection) {
            case .hit(let response):
                return (response, .hit)
            case .lead(let flight):
                let result: Result<HTTPResponse, GatewayError>
                do throws(GatewayError) {
                    result = .success(try await produce())
                } catch {
                    result = .failure(error)
                }
                let waiters = finish(key, collection: collection, flight: flight, result: result, ttl: ttl)
                for waiter in waiters { waiter.resume(returning: result) }
                return (try result.get(), .miss)
            case .join(let flight):
                let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Result<HTTPResponse, GatewayError>?, Never>) in
                    let joined = lock.withLock { () -> Bool in
                        // The call may have finished between the lookup and now: then look again.
                        guard flights[key] === flight else { return false }
                        flight.waiters.append(continuation)
                        counts.coalesced += 1
                        return true
                    }
                    if !joined { continuation.resume(returning: nil) }
                }
                if let outcome { return (try outcome.get(), .coalesced) }
            }
        }
    }

    /// Drops every answer over `collection` (they are never served again) and stops reads already in flight
    /// from storing theirs.
    public func invalidate(collection: String) {
        lock.withLock { generations[collection, default: 0] &+= 1 }
    }

    /// The counters so far.
    public var snapshot: Counts {
        lock.withLock {
            var c = counts
            c.entries = entries.count
            return c
        }
    }

    // MARK: - Under the lock

    private func step(_ key: CacheKey, collection: String) -> Step {
        lock.withLock {
            let generation = generations[collection, default: 0]
            if let node = entries[key] {
                if node.generation == generation && now() < node.expires {
                    moveToFront(node)
                    counts.hits += 1
                    return .hit(node.response)
                }
                remove(node)
            }
            // Join only a call that started after the last write to the collection (read-your-writes).
            if let flight = flights[key], flight.generation == generation {
                return .join(flight)
            }
            let flight = Flight(generation: generation)
            flights[key] = flight
            counts.misses += 1
            return .lead(flight)
        }
    }

    private func finish(_ key: CacheKey, collection: String, flight: Flight, result: Result<HTTPResponse, GatewayError>,
                        ttl: Duration) -> [CheckedContinuation<Result<HTTPResponse, GatewayError>?, Never>] {
        lock.withLock {
            if flights[key] === flight { flights[key] = nil }
            if case .success(let response) = result, response.status == 200, ttl > .zero,
               generations[collection, default: 0] == flight.generation {
                store(key, collection: collection, response: response, expires: now() + ttl, generation: flight.generation)
            }
            let waiters = flight.waiters
            flight.waiters = []
            return waiters
        }
    }

    private func store(_ key: CacheKey, collection: String, response: HTTPResponse, expires: Duration, generation: UInt64) {
        if let node = entries[key] {
            node.response = response
            node.expires = expires
            node.generation = generation
            moveToFront(node)
            return
        }
        let node = Node(key: key, collection: collection, response: response, expires: expires, generation: generation)
        entries[key] = node
        linkAtFront(node)
        while entries.count > maxEntries, let last = tail {
            remove(last)
            counts.evictions += 1
        }
    }

    private func remove(_ node: Node) {
        unlink(node)
        entries[node.key] = nil
    }

    private func linkAtFront(_ node: Node) {
        node.prev = nil
        node.next = head
        head?.prev = node
        head = node
        if tail == nil { tail = node }
    }

    private func unlink(_ node: Node) {
        if let prev = node.prev { prev.next = node.next } else { head = node.next }
        if let next = node.next { next.prev = node.prev } else { tail = node.prev }
        node.next = nil
        node.prev = nil
    }

    private func moveToFront(_ node: Node) {
        guard head !== node else { return }
        unlink(node)
        linkAtFront(node)
    }
}
