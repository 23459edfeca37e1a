import FoundationEssentials
import PosternHTTP

extension MicroCache {
    /// One upstream call in flight for a key, and the requests waiting for it.
    final class Flight {
        /// The collection's write counter when the call started.
        let generation: UInt64
        /// The requests waiting for the call's result (nil: look again).
        var waiters: [CheckedContinuation<Result<HTTPResponse, GatewayError>?, Never>] = []

        init(generation: UInt64) { self.generation = generation }
    }

    /// What a lookup found.
    enum Step {
        /// A fresh stored answer.
        case hit(HTTPResponse)
        /// Nothing: the caller calls upstream.
        case lead(Flight)
        /// A call in flight to wait for.
        case join(Flight)
    }

    /// One stored answer, also a link of a shard's recency list (most recent at `head`).
    private final class Node {
        let key: CacheKey
        /// The answer as served on a hit (with its `X-Cache: HIT`).
        var response: HTTPResponse
        var expires: Duration
        var generation: UInt64
        var next: Node?
        /// Unowned: every linked node is also held by `entries` (and by its predecessor's `next`), and is
        /// unlinked before it leaves `entries`.
        unowned(unsafe) var prev: Node?

        init(key: CacheKey, response: HTTPResponse, expires: Duration, generation: UInt64) {
            self.key = key
            self.response = response
            self.expires = expires
            self.generation = generation
        }
    }

    /// One part of the cache: the keys whose hash falls on it, with its own LRU bound, lock and counters.
    final class Shard: @unchecked Sendable {
        private let capacity: Int
        private let now: Clock
        /// Adds the edge's fields to a stored answer (`MicroCache.init`).
        private let preparing: @Sendable (inout HTTPHeaders) -> Void
        private let lock = FastLock()
        private var entries: [CacheKey: Node] = [:]
        private var head: Node?
        private var tail: Node?
        private var flights: [CacheKey: Flight] = [:]
        private var counts = Counts()

        /// An empty shard of at most `capacity` answers (at least 1).
        init(capacity: Int, now: @escaping Clock, preparing: @escaping @Sendable (inout HTTPHeaders) -> Void) {
            self.capacity = max(1, capacity)
            self.now = now
            self.preparing = preparing
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

        /// The stored answer of `key` when fresh under `generation`; else the call in flight to join; else a
        /// new call for the caller to make.
        func step(_ key: CacheKey, generation: UInt64) -> Step {
            lock.withLock {
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

        /// The stored answer of `key` when fresh under `generation` (a hit), else nil (nothing changes).
        func stored(_ key: CacheKey, generation: UInt64) -> HTTPResponse? {
            lock.withLock {
                guard let node = entries[key], node.generation == generation, now() < node.expires else { return nil }
                moveToFront(node)
                counts.hits += 1
                return node.response
            }
        }

        /// Adds `continuation` to `flight`'s waiters; false when the call already finished.
        func join(_ key: CacheKey, flight: Flight,
                  _ continuation: CheckedContinuation<Result<HTTPResponse, GatewayError>?, Never>) -> Bool {
            lock.withLock {
                guard flights[key] === flight else { return false }
                flight.waiters.append(continuation)
                counts.coalesced += 1
                return true
            }
        }

        /// Ends `flight`: stores a 200 for `ttl` when no write landed since it started; returns its waiters.
        func finish(_ key: CacheKey, flight: Flight, result: Result<HTTPResponse, GatewayError>, ttl: Duration,
                    generation: Generation) -> [CheckedContinuation<Result<HTTPResponse, GatewayError>?, Never>] {
            var stored: HTTPResponse?
            if case .success(let response) = result, response.status == 200, ttl > .zero {
                // Built outside the lock: the answer as a hit serves it, shared by every hit.
                var hit = response
                hit.headers.set("X-Cache", Outcome.hit.header)
                preparing(&hit.headers)
                hit.headers.render()  // its fields written as one block by every hit
                stored = hit
            }
            return lock.withLock {
                if flights[key] === flight { flights[key] = nil }
                // A write that bumps the counter after this check makes the stored answer stale at once.
                if let stored, generation.current == flight.generation {
                    store(key, response: stored, expires: now() + ttl, generation: flight.generation)
                }
                let waiters = flight.waiters
                flight.waiters = []
                return waiters
            }
        }

        /// This shard's counters.
        var snapshot: Counts {
            lock.withLock {
                var c = counts
                c.entries = entries.count
                return c
            }
        }

        // MARK: - Under the lock

        private func store(_ key: CacheKey, response: HTTPResponse, expires: Duration, generation: UInt64) {
            if let node = entries[key] {
                node.response = response
                node.expires = expires
                node.generation = generation
                moveToFront(node)
                return
            }
            let node = Node(key: key, response: response, expires: expires, generation: generation)
            entries[key] = node
            linkAtFront(node)
            while entries.count > capacity, let last = tail {
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
}
