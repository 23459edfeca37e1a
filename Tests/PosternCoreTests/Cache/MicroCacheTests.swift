import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP
import PosternCoreTesting

/// A one-shot gate a task can wait on until the test opens it (an event, never a sleep).
final class AsyncGate: @unchecked Sendable {
    private let state = LockedBox<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// Returns once the gate is open.
    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { s -> Bool in
                if s.open { return true }
                s.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Opens the gate and releases every waiter.
    func open() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.open = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// Counts calls (thread-safe).
final class CallCounter: @unchecked Sendable {
    private let count = LockedBox(0)
    /// Adds one and returns the new count.
    @discardableResult func next() -> Int { count.withLock { $0 += 1; return $0 } }
    /// The count so far.
    var value: Int { count.withLock { $0 } }
}

/// The micro-cache's rules alone, with an injected clock (docs/api.md, Micro-cache).
@Suite struct MicroCacheTests {
    static let ttl = Duration.milliseconds(1000)

    static func key(_ name: String, audience: String = "u:1") -> CacheKey {
        CacheKey(resource: "books", upstream: name, audience: audience)
    }

    static func ok(_ text: String) -> HTTPResponse { .json(200, Data(text.utf8)) }

    /// Asks `cache` for `key`; `produce` answers `text` (and counts the call).
    static func ask(_ cache: MicroCache, _ key: CacheKey, collection: String = "posts", _ text: String,
                    calls: CallCounter, status: Int = 200) async throws -> (String, MicroCache.Outcome) {
        let (response, outcome) = try await cache.answer(key, collection: collection, ttl: ttl) { () throws(GatewayError) -> HTTPResponse in
            calls.next()
            return HTTPResponse(status: status, body: Data(text.utf8))
        }
        return (String(decoding: response.body, as: UTF8.self), outcome)
    }

    @Test func secondRequestIsAHitUntilTheTTLEnds() async throws {
        let time = TestClock()
        let cache = MicroCache(maxEntries: 10, now: time.cacheClock)
        let calls = CallCounter()
        #expect(try await Self.ask(cache, Self.key("a"), "v1", calls: calls) == ("v1", .miss))
        time.advance(by: .milliseconds(999))
        #expect(try await Self.ask(cache, Self.key("a"), "v2", calls: calls) == ("v1", .hit))
        time.advance(by: .milliseconds(1))
        #expect(try await Self.ask(cache, Self.key("a"), "v3", calls: calls) == ("v3", .miss), "expired at exactly the TTL")
        #expect(calls.value == 2)
        #expect(cache.snapshot == MicroCache.Counts(hits: 1, misses: 2, coalesced: 0, evictions: 0, entries: 1))
    }

    @Test func keysDoNotShareAnswers() async throws {
        let cache = MicroCache(maxEntries: 10, now: TestClock().cacheClock)
        let calls = CallCounter()
        _ = try await Self.ask(cache, Self.key("a", audience: "u:1"), "for 1", calls: calls)
        #expect(try await Self.ask(cache, Self.key("a", audience: "u:2"), "for 2", calls: calls) == ("for 2", .miss))
        #expect(try await Self.ask(cache, CacheKey(resource: "posts", upstream: "a", audience: "u:1"), "posts", calls: calls)
            == ("posts", .miss))
        #expect(try await Self.ask(cache, Self.key("a", audience: "u:1"), "x", calls: calls) == ("for 1", .hit))
    }

    @Test func errorsAndNon200AnswersAreNotStored() async throws {
        let cache = MicroCache(maxEntries: 10, now: TestClock().cacheClock)
        let calls = CallCounter()
        await #expect(throws: GatewayError.self) {
            _ = try await cache.answer(Self.key("a"), collection: "posts", ttl: Self.ttl) { () throws(GatewayError) -> HTTPResponse in
                calls.next()
                throw .upstreamUnavailable("down")
            }
        }
        #expect(try await Self.ask(cache, Self.key("a"), "created", calls: calls, status: 201) == ("created", .miss))
        #expect(try await Self.ask(cache, Self.key("a"), "ok", calls: calls) == ("ok", .miss))
        #expect(try await Self.ask(cache, Self.key("a"), "later", calls: calls) == ("ok", .hit))
        #expect(calls.value == 3)
    }

    @Test func zeroTTLStoresNothing() async throws {
        let cache = MicroCache(maxEntries: 10, now: TestClock().cacheClock)
        for _ in 0..<2 {
            let (_, outcome) = try await cache.answer(Self.key("a"), collection: "posts", ttl: .zero) { () throws(GatewayError) in Self.ok("x") }
            #expect(outcome == .miss)
        }
    }

    @Test func leastRecentlyUsedIsEvictedFirst() async throws {
        let cache = MicroCache(maxEntries: 2, now: TestClock().cacheClock)
        let calls = CallCounter()
        _ = try await Self.ask(cache, Self.key("a"), "a", calls: calls)
        _ = try await Self.ask(cache, Self.key("b"), "b", calls: calls)
        #expect(try await Self.ask(cache, Self.key("a"), "a2", calls: calls).1 == .hit)  // a is now the most recent
        _ = try await Self.ask(cache, Self.key("c"), "c", calls: calls)                  // evicts b
        #expect(cache.snapshot.evictions == 1 && cache.snapshot.entries == 2)
        #expect(try await Self.ask(cache, Self.key("a"), "a3", calls: calls) == ("a", .hit))
        #expect(try await Self.ask(cache, Self.key("c"), "c2", calls: calls) == ("c", .hit))
        #expect(try await Self.ask(cache, Self.key("b"), "b2", calls: calls) == ("b2", .miss))
    }

    @Test func theBoundHoldsUnderManyKeys() async throws {
        let cache = MicroCache(maxEntries: 50, now: TestClock().cacheClock)
        let calls = CallCounter()
        for i in 0..<500 { _ = try await Self.ask(cache, Self.key("k\(i)"), "\(i)", calls: calls) }
        #expect(cache.snapshot.entries == 50 && cache.snapshot.evictions == 450)
        #expect(try await Self.ask(cache, Self.key("k499"), "new", calls: calls).1 == .hit)
        #expect(try await Self.ask(cache, Self.key("k0"), "new", calls: calls).1 == .miss)
    }

    @Test func aLargeCacheIsShardedAndStillBoundedAsAWhole() async throws {
        #expect(MicroCache.shardCount(maxEntries: 50) == 1, "a small cache is one exact LRU")
        #expect(MicroCache.shardCount(maxEntries: 10_000) == 16)
        let cache = MicroCache(maxEntries: 1024, now: TestClock().cacheClock)
        let calls = CallCounter()
        for i in 0..<5000 { _ = try await Self.ask(cache, Self.key("k\(i)"), "\(i)", calls: calls) }
        #expect(cache.snapshot.entries == 1024 && cache.snapshot.evictions == 5000 - 1024)
        #expect(try await Self.ask(cache, Self.key("k4999"), "new", calls: calls) == ("4999", .hit))
        #expect(try await Self.ask(cache, Self.key("k0"), "new", calls: calls).1 == .miss)
        // A write drops the answers of every shard.
        cache.invalidate(collection: "posts")
        let misses = cache.snapshot.misses
        for i in 4990..<5000 { #expect(try await Self.ask(cache, Self.key("k\(i)"), "after", calls: calls) == ("after", .miss)) }
        #expect(cache.snapshot.misses == misses + 10)
    }

    @Test func hitsCarryTheirXCacheHeader() async throws {
        let cache = MicroCache(maxEntries: 10, now: TestClock().cacheClock)
        let (first, _) = try await cache.answer(Self.key("a"), collection: "posts", ttl: Self.ttl) { () throws(GatewayError) in Self.ok("x") }
        let (second, outcome) = try await cache.answer(Self.key("a"), collection: "posts", ttl: Self.ttl) { () throws(GatewayError) in Self.ok("y") }
        #expect(first.headers.values("X-Cache") == ["MISS"])
        #expect(outcome == .hit && second.headers.values("X-Cache") == ["HIT"])
        #expect(second.headers["Content-Type"] == "application/json; charset=utf-8")
    }

    @Test func invalidationDropsOnlyItsCollection() async throws {
        let cache = MicroCache(maxEntries: 10, now: TestClock().cacheClock)
        let calls = CallCounter()
        _ = try await Self.ask(cache, Self.key("books"), collection: "posts", "b", calls: calls)
        _ = try await Self.ask(cache, CacheKey(resource: "posts", upstream: "p", audience: "u:1"), collection: "posts", "p", calls: calls)
        _ = try await Self.ask(cache, CacheKey(resource: "notes", upstream: "n", audience: "u:1"), collection: "notes", "n", calls: calls)
        cache.invalidate(collection: "posts")
        #expect(try await Self.ask(cache, Self.key("books"), collection: "posts", "b2", calls: calls) == ("b2", .miss))
        #expect(try await Self.ask(cache, CacheKey(resource: "posts", upstream: "p", audience: "u:1"), collection: "posts", "p2",
                                   calls: calls) == ("p2", .miss))
        #expect(try await Self.ask(cache, CacheKey(resource: "notes", upstream: "n", audience: "u:1"), collection: "notes", "n2",
                                   calls: calls) == ("n", .hit))
    }

    @Test func aReadInFlightWhenAWriteLandsDoesNotStoreItsAnswer() async throws {
        let cache = MicroCache(maxEntries: 10, now: TestClock().cacheClock)
        // The write lands (and invalidates) while the read's upstream call is out.
        let (first, _) = try await cache.answer(Self.key("a"), collection: "posts", ttl: Self.ttl) { () throws(GatewayError) in
            cache.invalidate(collection: "posts")
            return Self.ok("before the write")
        }
        #expect(String(decoding: first.body, as: UTF8.self) == "before the write", "the caller still gets its answer")
        let calls = CallCounter()
        #expect(try await Self.ask(cache, Self.key("a"), "after the write", calls: calls) == ("after the write", .miss))
        #expect(try await Self.ask(cache, Self.key("a"), "x", calls: calls) == ("after the write", .hit))
    }

    @Test func concurrentIdenticalMissesMakeOneCall() async throws {
        let cache = MicroCache(maxEntries: 10, now: TestClock().cacheClock)
        let gate = AsyncGate()
        let calls = CallCounter()
        let n = 8
        let outcomes = await withTaskGroup(of: (String, MicroCache.Outcome)?.self) { group in
            for _ in 0..<n {
                group.addTask {
                    let answer = try? await cache.answer(Self.key("a"), collection: "posts", ttl: Self.ttl) { () throws(GatewayError) in
                        calls.next()
                        await gate.wait()
                        return Self.ok("shared")
                    }
                    return answer.map { (String(decoding: $0.0.body, as: UTF8.self), $0.1) }
                }
            }
            // Recorded, not thrown: the gate must open either way, or the waiting tasks would never end.
            do { try await eventually("\(n - 1) requests waiting") { cache.snapshot.coalesced == n - 1 } } catch { Issue.record(error) }
            gate.open()
            var all: [(String, MicroCache.Outcome)?] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        #expect(calls.value == 1)
        #expect(outcomes.allSatisfy { $0?.0 == "shared" })
        #expect(outcomes.filter { $0?.1 == .miss }.count == 1)
        #expect(outcomes.filter { $0?.1 == .coalesced }.count == n - 1)
        #expect(try await Self.ask(cache, Self.key("a"), "x", calls: calls) == ("shared", .hit))
    }

    @Test func waitersGetTheErrorToo() async throws {
        let cache = MicroCache(maxEntries: 10, now: TestClock().cacheClock)
        let gate = AsyncGate()
        let n = 4
        let statuses = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<n {
                group.addTask {
                    do {
                        _ = try await cache.answer(Self.key("a"), collection: "posts", ttl: Self.ttl) { () throws(GatewayError) -> HTTPResponse in
                            await gate.wait()
                            throw .upstreamTimeout("slow")
                        }
                        return 200
                    } catch let error as GatewayError {
                        return error.status
                    } catch {
                        return -1
                    }
                }
            }
            // Recorded, not thrown: the gate must open either way, or the waiting tasks would never end.
            do { try await eventually("\(n - 1) requests waiting") { cache.snapshot.coalesced == n - 1 } } catch { Issue.record(error) }
            gate.open()
            var all: [Int] = []
            for await status in group { all.append(status) }
            return all
        }
        #expect(statuses == Array(repeating: 504, count: n))
        #expect(cache.snapshot.entries == 0)
    }

    @Test func aRequestAfterAWriteDoesNotJoinACallThatStartedBefore() async throws {
        let cache = MicroCache(maxEntries: 10, now: TestClock().cacheClock)
        let gate = AsyncGate()
        let calls = CallCounter()
        async let old = cache.answer(Self.key("a"), collection: "posts", ttl: Self.ttl) { () throws(GatewayError) in
            calls.next()
            await gate.wait()
            return Self.ok("old")
        }
        do { try await eventually("the first call is out") { calls.value == 1 } } catch { Issue.record(error) }  // the gate opens below either way
        cache.invalidate(collection: "posts")
        // Read-your-writes: a read that starts after the write makes its own call (it must not wait for the
        // older one, which stays held until it is known whether it joined).
        async let new = Self.ask(cache, Self.key("a"), "new", calls: calls)
        do { try await eventually("the second read called or joined") { calls.value == 2 || cache.snapshot.coalesced == 1 } } catch { Issue.record(error) }  // the gate opens below either way
        #expect(calls.value == 2 && cache.snapshot.coalesced == 0)
        gate.open()
        #expect(try await new == ("new", .miss))
        #expect(try await String(decoding: old.0.body, as: UTF8.self) == "old")
        #expect(try await Self.ask(cache, Self.key("a"), "x", calls: calls) == ("new", .hit), "the older answer was not stored")
    }

    @Test func audienceFollowsTheScope() {
        func session(_ user: String, role: String?) -> Session {
            Session(id: "s", tokenDigest: "t", refreshDigest: "r", userID: user, email: "e", role: role, directusAccessToken: "a",
                    directusAccessExpiresAt: Date(), directusRefreshToken: "r", createdAt: Date(), lastUsedAt: Date(), expiresAt: Date())
        }
        let a = session("A", role: "R1"), b = session("B", role: "R1"), c = session("C", role: "R2"), d = session("D", role: nil)
        #expect(CacheKey.audience(session: nil, scope: .user, perUser: false) == "anonymous")
        #expect(CacheKey.audience(session: nil, scope: .role, perUser: true) == "anonymous")
        #expect(CacheKey.audience(session: a, scope: .user, perUser: false) != CacheKey.audience(session: b, scope: .user, perUser: false))
        #expect(CacheKey.audience(session: a, scope: .role, perUser: false) == CacheKey.audience(session: b, scope: .role, perUser: false))
        #expect(CacheKey.audience(session: a, scope: .role, perUser: false) != CacheKey.audience(session: c, scope: .role, perUser: false))
        #expect(CacheKey.audience(session: a, scope: .role, perUser: true) != CacheKey.audience(session: b, scope: .role, perUser: true))
        #expect(CacheKey.audience(session: d, scope: .role, perUser: false) == "u:D", "no known role: per user")
    }

    @Test func queriesThatDifferNeverShareAKey() {
        let one = CacheKey(resource: "books", path: "/items/posts", query: [("a", "b&c=d")], audience: "u:1")
        let two = CacheKey(resource: "books", path: "/items/posts", query: [("a", "b"), ("c", "d")], audience: "u:1")
        #expect(one != two)
        #expect(one.upstream == "/items/posts&1:a5:b&c=d" && two.upstream == "/items/posts&1:a1:b&1:c1:d")
        #expect(one == CacheKey(resource: "books", path: "/items/posts", query: [("a", "b&c=d")], audience: "u:1"))
    }

    @Test func keysBuiltApartFromEqualPartsAreOneDictionaryKey() {
        // Each key's hash is computed once when built: equal parts built separately must hash alike.
        let path = String("/items/" + "posts")
        let one = CacheKey(resource: "books", path: path, query: [("limit", "20"), ("sort", "-id")], audience: "u:1")
        let same = CacheKey(resource: "books", path: "/items/posts", query: [("limit", "2" + "0"), ("sort", "-id")], audience: "u:1")
        #expect(one == same && one.hashValue == same.hashValue)
        var table: [CacheKey: Int] = [one: 1]
        table[same] = 2
        #expect(table.count == 1 && table[one] == 2)
        for other in [CacheKey(resource: "posts", path: path, query: [("limit", "20"), ("sort", "-id")], audience: "u:1"),
                      CacheKey(resource: "books", path: path, query: [("limit", "20"), ("sort", "id")], audience: "u:1"),
                      CacheKey(resource: "books", path: path, query: [("limit", "20")], audience: "u:1"),
                      CacheKey(resource: "books", path: path, query: [("limit", "20"), ("sort", "-id")], audience: "u:2"),
                      CacheKey(resource: "books", path: path, query: [("limit", "20"), ("sort", "-id")], audience: "r:1")] {
            #expect(other != one)
            table[other] = 3
        }
        #expect(table.count == 6)
    }

    @Test func keysFromASharedPrefixEqualKeysBuiltFromTheirParts() {
        let query = [("fields", "id,title"), ("limit", "20"), ("offset", "0"), ("meta", "filter_count")]
        let prefix = CacheKey.Prefix(resource: "books", path: "/items/posts", query: query)
        for audience in [CacheKey.Audience.anonymous, .user("u1"), .role("r1"), .user("r1")] {
            let fromPrefix = CacheKey(prefix, sharedBy: audience)
            let fromParts = CacheKey(resource: "books", path: "/items/posts", query: query.map { ($0.0, String($0.1)) }, sharedBy: audience)
            #expect(fromPrefix == fromParts && fromPrefix.hashValue == fromParts.hashValue)
            #expect(fromPrefix.upstream == fromParts.upstream && fromPrefix.audience == fromParts.audience)
        }
        #expect(CacheKey(prefix, sharedBy: .user("u1")) != CacheKey(prefix, sharedBy: .user("u2")))
    }

    @Test func localBusDeliversBeforePublishReturns() {
        let bus = LocalInvalidationBus()
        let seen = LockedBox<[String]>([])
        bus.subscribe { collection in seen.withLock { $0.append(collection) } }
        bus.publish(collection: "posts")
        #expect(seen.withLock { $0 } == ["posts"])
    }
}

/// The cache's configuration keys.
@Suite struct CacheConfigTests {
    static func load(_ json: String, _ environment: [String: String] = [:]) -> Result<PosternConfig, ConfigError> {
        PosternConfig.load(json: Data(json.utf8), environment: environment)
    }

    static func paths(_ result: Result<PosternConfig, ConfigError>) -> [String] {
        if case .failure(let error) = result { return error.problems.map(\.path) }
        return []
    }

    static let resource = #"{"name": "notes", "collection": "notes", "fields": {"id": "id", "by": "user_created"}, "owner": "user_created""#

    @Test func offByDefault() throws {
        let config = try PosternConfig.load(json: nil, environment: [:]).get()
        #expect(config.cacheMaxEntries == 10_000)
        #expect(config.resources.allSatisfy { $0.cache == ResourceCacheConfig() && $0.cache.ttlMs == 0 })
    }

    @Test func fileValuesAreRead() throws {
        let json = #"{"cache_max_entries": 5, "resources": ["# + Self.resource + #", "cache": {"ttl_ms": 250, "scope": "role"}}]}"#
        let config = try Self.load(json).get()
        #expect(config.cacheMaxEntries == 5)
        #expect(config.resources[0].cache.ttlMs == 250 && config.resources[0].cache.scope == .role)
    }

    @Test func environmentSetsEveryResourcesTTL() throws {
        let config = try PosternConfig.load(json: nil, environment: ["POSTERN_CACHE_TTL_MS": "1000"]).get()
        #expect(config.resources.map(\.cache.ttlMs) == [1000, 1000, 1000])
        #expect(config.resources.allSatisfy { $0.cache.scope == .user })
    }

    @Test(arguments: [
        (#"{"cache_max_entries": 0}"#, [String: String](), "cache_max_entries"),
        (#"{"cache_max_entries": "many"}"#, [:], "cache_max_entries"),
        (#"{"resources": ["# + resource + #", "cache": {"ttl_ms": -1}}]}"#, [:], "resources[0].cache.ttl_ms"),
        (#"{"resources": ["# + resource + #", "cache": {"scope": "team"}}]}"#, [:], "resources[0].cache.scope"),
        (#"{"resources": ["# + resource + #", "cache": {"ttl": 5}}]}"#, [:], "resources[0].cache.ttl"),
        (#"{"resources": ["# + resource + #", "cache": 5}]}"#, [:], "resources[0].cache"),
        ("{}", ["POSTERN_CACHE_TTL_MS": "-5"], "POSTERN_CACHE_TTL_MS"),
        ("{}", ["POSTERN_CACHE_TTL_MS": "soon"], "POSTERN_CACHE_TTL_MS"),
    ])
    func badValuesAreNamedByTheirPath(_ json: String, _ environment: [String: String], _ path: String) {
        #expect(Self.paths(Self.load(json, environment)) == [path])
    }
}
