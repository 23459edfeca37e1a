import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternCoreTesting
import PosternHTTP

/// Runs requests on their own threads and collects the answers.
final class BackgroundRequests: @unchecked Sendable {
    private let group = DispatchGroup()
    private let results = LockedBox<[RawHTTPClient.Response?]>([])

    /// Starts `count` threads, each running `body` once.
    func start(_ count: Int, _ body: @escaping @Sendable () throws -> RawHTTPClient.Response) {
        for _ in 0..<count {
            group.enter()
            Thread.detachNewThread {
                let response = try? body()
                self.results.withLock { $0.append(response) }
                self.group.leave()
            }
        }
    }

    /// Waits for every thread and returns the answers (nil for a transport failure).
    func join() -> [RawHTTPClient.Response?] {
        group.wait()
        return results.withLock { $0 }
    }
}

/// The micro-cache through real sockets against the stand-in (docs/api.md, Micro-cache): what reaches
/// Directus is counted by the stand-in.
@Suite(.serialized) struct LiveCacheTests {
    static let second = ("second@example.com", "password2")

    /// A gateway whose resources are all cached for `ttlMs` under `scope` (a long TTL: expiry never interferes).
    static func gateway(ttlMs: Int = 60_000, scope: CacheScope = .user,
                        configure: (inout PosternConfig) -> Void = { _ in }) throws -> TestGateway {
        try TestGateway { config in
            for i in config.resources.indices {
                config.resources[i].cache.ttlMs = ttlMs
                config.resources[i].cache.scope = scope
            }
            configure(&config)
        }
    }

    /// List calls that reached Directus.
    static func listCalls(_ gw: TestGateway) -> Int {
        gw.upstream("/items/posts").filter { $0.method == .get && $0.path == "/items/posts" }.count
    }

    /// Titles in a list or read answer.
    static func titles(_ r: RawHTTPClient.Response, _ key: String = "books") -> [String] {
        r.json?[key]?.arrayValue?.compactMap { $0["title"]?.stringValue } ?? []
    }

    /// Creates a post straight in the stand-in, behind the gateway's back.
    static func createBehindTheGatewaysBack(_ gw: TestGateway, title: String) throws {
        let directus = RawHTTPClient(port: gw.standInServer.port)
        let login = try directus.json("POST", "/auth/login", #"{"email":"x@y.com","password":"123456"}"#)
        let access = try #require(login.json?["data"]?["access_token"]?.stringValue)
        let created = try directus.json("POST", "/items/posts", #"{"title":"\#(title)"}"#, token: access)
        #expect(created.status == 200)
    }

    @Test func offByDefaultNothingIsCachedAndNoHeader() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let token = try gw.login()
        for _ in 0..<2 {
            let r = try gw.client().json("GET", "/api/v1/books", token: token)
            #expect(r.status == 200 && r.headers["X-Cache"] == nil)
        }
        #expect(Self.listCalls(gw) == 2)
    }

    @Test func secondIdenticalRequestIsAHitWithItsOwnHeaders() throws {
        let gw = try Self.gateway()
        defer { gw.stop() }
        let token = try gw.login()
        let client = gw.client()
        let miss = try client.json("GET", "/api/v1/books", token: token, headers: ["X-Request-Id": "first"])
        let hit = try client.json("GET", "/api/v1/books", token: token, headers: ["X-Request-Id": "second"])
        #expect(miss.status == 200 && hit.status == 200)
        #expect(miss.headers["X-Cache"] == "MISS" && hit.headers["X-Cache"] == "HIT")
        #expect(miss.body == hit.body && !Self.titles(hit).isEmpty)
        #expect(miss.headers["X-Request-Id"] == "first" && hit.headers["X-Request-Id"] == "second")
        // Each answer carries its own id once, and no other's.
        for (answer, id) in [(miss, "first"), (hit, "second")] {
            #expect(answer.headers.filter { $0.name.lowercased() == "x-request-id" }.map(\.value) == [id])
        }
        #expect(hit.headers["Cache-Control"] == "no-store")
        #expect(hit.headers["Content-Type"] == "application/json; charset=utf-8")
        #expect(Self.listCalls(gw) == 1)

        // Reads too; another query is another key.
        #expect(try client.json("GET", "/api/v1/books/1", token: token).headers["X-Cache"] == "MISS")
        #expect(try client.json("GET", "/api/v1/books/1", token: token).headers["X-Cache"] == "HIT")
        #expect(gw.upstream("/items/posts/1").count == 1)
        #expect(try client.json("GET", "/api/v1/books?limit=2", token: token).headers["X-Cache"] == "MISS")
        #expect(Self.listCalls(gw) == 2)
    }

    @Test func userScopeNeverServesOneUsersAnswerToAnother() throws {
        let gw = try Self.gateway(scope: .user)
        defer { gw.stop() }
        let a = try gw.login()
        let b = try gw.login(Self.second.0, Self.second.1)
        #expect(try gw.client().json("GET", "/api/v1/books", token: a).headers["X-Cache"] == "MISS")
        #expect(try gw.client().json("GET", "/api/v1/books", token: b).headers["X-Cache"] == "MISS")
        #expect(Self.listCalls(gw) == 2)
        #expect(try gw.client().json("GET", "/api/v1/books", token: b).headers["X-Cache"] == "HIT")
    }

    @Test func roleScopeSharesWithinARoleOnly() throws {
        let gw = try Self.gateway(scope: .role)
        defer { gw.stop() }
        let a = try gw.login()
        let b = try gw.login(Self.second.0, Self.second.1)
        let admin = try gw.login("admin@example.com", "admin-password")
        #expect(try gw.client().json("GET", "/api/v1/books", token: a).headers["X-Cache"] == "MISS")
        #expect(try gw.client().json("GET", "/api/v1/books", token: b).headers["X-Cache"] == "HIT", "same role")
        #expect(Self.listCalls(gw) == 1)
        #expect(try gw.client().json("GET", "/api/v1/books", token: admin).headers["X-Cache"] == "MISS", "another role")
        #expect(Self.listCalls(gw) == 2)
    }

    @Test func ownerListsArePerUserEvenUnderRoleScope() throws {
        let gw = try Self.gateway(scope: .role) { $0.resources[0].permissions[.list] = .owner }
        defer { gw.stop() }
        let a = try gw.login()
        let b = try gw.login(Self.second.0, Self.second.1)
        let listA = try gw.client().json("GET", "/api/v1/books", token: a)
        let listB = try gw.client().json("GET", "/api/v1/books", token: b)
        #expect(listA.headers["X-Cache"] == "MISS" && listB.headers["X-Cache"] == "MISS")
        #expect(Self.listCalls(gw) == 2)
        let idA = gw.standIn.userID(email: "x@y.com"), idB = gw.standIn.userID(email: Self.second.0)
        #expect(listA.json?["books"]?.arrayValue?.allSatisfy { $0["user"]?.stringValue == idA } == true)
        #expect(listB.json?["books"]?.arrayValue?.allSatisfy { $0["user"]?.stringValue == idB } == true)
        #expect(Set(Self.titles(listA)).isDisjoint(with: Self.titles(listB)))
        let againA = try gw.client().json("GET", "/api/v1/books", token: a)
        #expect(againA.headers["X-Cache"] == "HIT" && againA.body == listA.body)
    }

    @Test func concurrentIdenticalMissesMakeOneUpstreamCall() throws {
        let gw = try Self.gateway()
        defer { gw.stop() }
        let token = try gw.login()
        let n = 8
        gw.upstreamGate.close { $0.method == .get && $0.path == "/items/posts" }
        let requests = BackgroundRequests()
        let port = gw.port
        requests.start(n) { try RawHTTPClient(port: port).json("GET", "/api/v1/books", token: token) }
        // The first call is out and held; every other request is waiting for it in the cache.
        try eventually("one held upstream call") { gw.upstreamGate.heldCount == 1 }
        try eventually("\(n - 1) coalesced waiters") { gw.app.gateway.cache.snapshot.coalesced == n - 1 }
        gw.upstreamGate.open()
        let answers = requests.join()
        #expect(answers.count == n && answers.allSatisfy { $0?.status == 200 })
        #expect(answers.filter { $0?.headers["X-Cache"] == "MISS" }.count == 1)
        #expect(answers.filter { $0?.headers["X-Cache"] == "HIT" }.count == n - 1)
        #expect(Set(answers.map { $0?.body }).count == 1)
        #expect(Self.listCalls(gw) == 1)
    }

    @Test func aWriteThroughOneResourceIsSeenByTheOtherAtOnce() throws {
        let gw = try Self.gateway()
        defer { gw.stop() }
        let token = try gw.login()
        let client = gw.client()
        #expect(try client.json("GET", "/api/v1/books?limit=100", token: token).headers["X-Cache"] == "MISS")
        #expect(try client.json("GET", "/api/v1/books?limit=100", token: token).headers["X-Cache"] == "HIT")
        #expect(try client.json("GET", "/api/v1/books/1", token: token).headers["X-Cache"] == "MISS")

        let created = try client.json("POST", "/api/v1/posts", #"{"title":"Written through posts"}"#, token: token)
        #expect(created.status == 201)
        let list = try client.json("GET", "/api/v1/books?limit=100", token: token)
        #expect(list.headers["X-Cache"] == "MISS")
        #expect(Self.titles(list).contains("Written through posts"))

        let patched = try client.json("PATCH", "/api/v1/posts/1", #"{"title":"Renamed through posts"}"#, token: token)
        #expect(patched.status == 200)
        let read = try client.json("GET", "/api/v1/books/1", token: token)
        #expect(read.headers["X-Cache"] == "MISS" && Self.titles(read) == ["Renamed through posts"])

        let id = try #require(created.json?["posts"]?.arrayValue?.first?["id"]?.stringValue)
        #expect(try client.json("GET", "/api/v1/books/\(id)", token: token).status == 200)
        #expect(try client.json("DELETE", "/api/v1/posts/\(id)", token: token).status == 204)
        #expect(try client.json("GET", "/api/v1/books/\(id)", token: token).status == 404)
        #expect(!Self.titles(try client.json("GET", "/api/v1/books?limit=100", token: token)).contains("Written through posts"))
    }

    @Test func changesBehindTheGatewaysBackShowOnceTheTTLEnds() throws {
        let gw = try Self.gateway(ttlMs: 50)
        defer { gw.stop() }
        let token = try gw.login()
        let first = try gw.client().json("GET", "/api/v1/books?limit=100", token: token)
        #expect(first.headers["X-Cache"] == "MISS")
        try Self.createBehindTheGatewaysBack(gw, title: "Behind the back")
        // No clock here: wait for the event (an answer from Directus again), then check what it shows.
        var fresh: RawHTTPClient.Response?
        try eventually("the cached answer expired") {
            fresh = try? gw.client().json("GET", "/api/v1/books?limit=100", token: token)
            return fresh?.headers["X-Cache"] == "MISS"
        }
        #expect(Self.titles(try #require(fresh)).contains("Behind the back"))
    }

    @Test func errorsAreNotCached() throws {
        let gw = try Self.gateway()
        defer { gw.stop() }
        let token = try gw.login()
        for _ in 0..<2 {
            let r = try gw.client().json("GET", "/api/v1/books/99999", token: token)
            #expect(r.status == 404 && r.headers["X-Cache"] == nil)
        }
        #expect(gw.upstream("/items/posts/99999").count == 2)
        #expect(gw.app.gateway.cache.snapshot.entries == 0)
    }

    @Test func theLRUBoundHoldsAndMetricsCountIt() throws {
        let gw = try Self.gateway { $0.cacheMaxEntries = 2 }
        defer { gw.stop() }
        let token = try gw.login()
        let client = gw.client()
        for limit in [1, 2, 3] {
            #expect(try client.json("GET", "/api/v1/books?limit=\(limit)", token: token).headers["X-Cache"] == "MISS")
        }
        #expect(try client.json("GET", "/api/v1/books?limit=3", token: token).headers["X-Cache"] == "HIT")
        #expect(try client.json("GET", "/api/v1/books?limit=1", token: token).headers["X-Cache"] == "MISS", "evicted")
        #expect(Self.listCalls(gw) == 4)
        let metrics = try RawHTTPClient(port: gw.app.adminPort).request("GET", "/metrics").text
        #expect(metrics.contains("postern_cache_hits_total 1\n"))
        #expect(metrics.contains("postern_cache_misses_total 4\n"))
        #expect(metrics.contains("postern_cache_evictions_total 2\n"))
        #expect(metrics.contains("postern_cache_coalesced_total 0\n"))
        #expect(metrics.contains("postern_cache_entries 2\n"))
    }

    @Test func authenticationRunsOnEveryHit() throws {
        let gw = try Self.gateway(scope: .role)
        defer { gw.stop() }
        let revoked = try gw.login()
        let other = try gw.login()
        #expect(try gw.client().json("GET", "/api/v1/books", token: revoked).headers["X-Cache"] == "MISS")
        #expect(try gw.client().json("POST", "/api/v1/user/logout", token: revoked).status == 204)
        let refused = try gw.client().json("GET", "/api/v1/books", token: revoked)
        #expect(refused.status == 401 && refused.headers["X-Cache"] == nil)
        #expect(try gw.client().json("GET", "/api/v1/books").status == 401, "no token")
        // The answer is still cached for everyone else.
        #expect(try gw.client().json("GET", "/api/v1/books", token: other).headers["X-Cache"] == "HIT")
        #expect(Self.listCalls(gw) == 1)
    }

    @Test func theRuleRunsOnEveryHit() throws {
        // Reads under `role:<app user role>`: the admin (another role) is refused even though the answer is cached.
        let gw = try Self.gateway(scope: .role) { config in
            config.resources[0].permissions[.list] = .role(DirectusStandIn.appUserRoleID)
        }
        defer { gw.stop() }
        let a = try gw.login()
        let admin = try gw.login("admin@example.com", "admin-password")
        #expect(try gw.client().json("GET", "/api/v1/books", token: a).headers["X-Cache"] == "MISS")
        #expect(try gw.client().json("GET", "/api/v1/books", token: admin).status == 403)
    }

    @Test func aReadInFlightWhenAWriteLandsDoesNotStoreItsOlderAnswer() throws {
        let gw = try Self.gateway()
        defer { gw.stop() }
        let token = try gw.login()
        // Hold the answer (computed before the write) of the first list call only.
        gw.upstreamGate.close(holding: 1) { $0.method == .get && $0.path == "/items/posts" }
        let reader = BackgroundRequests()
        let port = gw.port
        reader.start(1) { try RawHTTPClient(port: port).json("GET", "/api/v1/books?limit=100", token: token) }
        try eventually("the read's upstream answer is held") { gw.upstreamGate.heldCount == 1 }

        let created = try gw.client().json("POST", "/api/v1/books", #"{"title":"Landed mid-read"}"#, token: token)
        #expect(created.status == 201)
        // A read after the write does not join the older call: it makes its own and sees the write.
        let later = BackgroundRequests()
        later.start(1) { try RawHTTPClient(port: port).json("GET", "/api/v1/books?limit=100", token: token) }
        try eventually("the second read called Directus or joined") {
            Self.listCalls(gw) == 2 || gw.app.gateway.cache.snapshot.coalesced == 1
        }
        #expect(Self.listCalls(gw) == 2 && gw.app.gateway.cache.snapshot.coalesced == 0)
        if gw.app.gateway.cache.snapshot.coalesced == 0 {
            let after = try #require(later.join().first ?? nil)
            #expect(after.headers["X-Cache"] == "MISS" && Self.titles(after).contains("Landed mid-read"))
        }

        gw.upstreamGate.open()
        let old = try #require(reader.join().first ?? nil)
        #expect(old.status == 200 && old.headers["X-Cache"] == "MISS")
        #expect(!Self.titles(old).contains("Landed mid-read"), "the held answer predates the write")
        // The older answer was not stored over the newer one.
        let next = try gw.client().json("GET", "/api/v1/books?limit=100", token: token)
        #expect(Self.titles(next).contains("Landed mid-read"))
    }

    @Test func ownershipChecksBeforeAWriteNeverUseTheCache() throws {
        let gw = try Self.gateway()
        defer { gw.stop() }
        let a = try gw.login()
        let b = try gw.login(Self.second.0, Self.second.1)
        #expect(try gw.client().json("GET", "/api/v1/books/1", token: b).headers["X-Cache"] == "MISS")
        #expect(try gw.client().json("GET", "/api/v1/books/1", token: b).headers["X-Cache"] == "HIT")
        let reads = { gw.upstream("/items/posts/1").filter { $0.method == .get }.count }
        #expect(reads() == 1)
        // B does not own post 1: the policy reads its owner from Directus, not from B's cached answer.
        let refused = try gw.client().json("PATCH", "/api/v1/books/1", #"{"title":"not yours"}"#, token: b)
        #expect(refused.status == 403)
        #expect(reads() == 2)
        #expect(gw.upstream("/items/posts/1").filter { $0.method == .patch }.isEmpty)
        let allowed = try gw.client().json("PATCH", "/api/v1/books/1", #"{"title":"mine"}"#, token: a)
        #expect(allowed.status == 200)
        #expect(reads() == 3)
    }

    @Test func aReadUnderAnOwnerRuleIsNotCached() throws {
        let gw = try Self.gateway { $0.resources[0].permissions[.read] = .owner }
        defer { gw.stop() }
        let token = try gw.login()
        for _ in 0..<2 {
            let r = try gw.client().json("GET", "/api/v1/books/1", token: token)
            #expect(r.status == 200 && r.headers["X-Cache"] == nil)
        }
        #expect(gw.upstream("/items/posts/1").count == 2, "the ownership check's own read, each time")
        #expect(try gw.client().json("GET", "/api/v1/books/4", token: token).status == 403)
    }

    @Test func headSharesTheGETAnswer() throws {
        let gw = try Self.gateway()
        defer { gw.stop() }
        let token = try gw.login()
        let get = try gw.client().json("GET", "/api/v1/books", token: token)
        let head = try gw.client().request("HEAD", "/api/v1/books", headers: ["Authorization": "Bearer \(token)"])
        #expect(get.headers["X-Cache"] == "MISS")
        #expect(head.status == 200 && head.headers["X-Cache"] == "HIT" && head.body.isEmpty)
        #expect(head.headers["Content-Length"] == String(get.body.count))
        #expect(Self.listCalls(gw) == 1)
    }
}
