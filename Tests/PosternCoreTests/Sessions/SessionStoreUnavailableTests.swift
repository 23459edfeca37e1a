import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP
import PosternCoreTesting

/// A memory store that a test takes down and brings back, as a networked store (Redis) goes away: while
/// down, every call throws `unavailable` and `isAvailable` is false; nothing stored is lost.
final class SwitchableSessionStore: SessionStore, @unchecked Sendable {
    let inner = MemorySessionStore()
    private let down = LockedBox(false)

    /// Takes the store down (`true`) or brings it back (`false`).
    func setDown(_ value: Bool) { down.withLock { $0 = value } }

    private func check() throws(SessionStoreError) {
        if down.withLock({ $0 }) { throw .unavailable("test store is down") }
    }

    func isAvailable() async -> Bool { !down.withLock { $0 } }
    func insert(_ session: Session) async throws(SessionStoreError) { try check(); try inner.insert(session) }
    func session(tokenDigest: String) async throws(SessionStoreError) -> Session? {
        try check(); return try inner.session(tokenDigest: tokenDigest)
    }
    func session(refreshDigest: String) async throws(SessionStoreError) -> Session? {
        try check(); return try inner.session(refreshDigest: refreshDigest)
    }
    func sessionID(usedRefreshDigest: String) async throws(SessionStoreError) -> String? {
        try check(); return try inner.sessionID(usedRefreshDigest: usedRefreshDigest)
    }
    func session(sessionID: String) async throws(SessionStoreError) -> Session? {
        try check(); return try inner.session(sessionID: sessionID)
    }
    func update(_ session: Session) async throws(SessionStoreError) { try check(); try inner.update(session) }
    func rotate(sessionID: String, refreshDigest: String, newTokenDigest: String, newRefreshDigest: String,
                lastUsed: Date) async throws(SessionStoreError) -> Session? {
        try check()
        return try inner.rotate(sessionID: sessionID, refreshDigest: refreshDigest, newTokenDigest: newTokenDigest,
                                newRefreshDigest: newRefreshDigest, lastUsed: lastUsed)
    }
    func updateDirectusTokens(sessionID: String, accessToken: String, accessExpiresAt: Date, refreshToken: String,
                              role: String?) async throws(SessionStoreError) -> Session? {
        try check()
        return try inner.updateDirectusTokens(sessionID: sessionID, accessToken: accessToken, accessExpiresAt: accessExpiresAt,
                                              refreshToken: refreshToken, role: role)
    }
    func recency(userID: String) async throws(SessionStoreError) -> [SessionRecency] { try check(); return try inner.recency(userID: userID) }
    func touch(_ lastUsed: [String: Date]) async throws(SessionStoreError) { try check(); try inner.touch(lastUsed) }
    func delete(sessionID: String) async throws(SessionStoreError) { try check(); try inner.delete(sessionID: sessionID) }
    func purgeExpired(now: Date, idleTTL: TimeInterval) async throws(SessionStoreError) -> [String] {
        try check(); return try inner.purgeExpired(now: now, idleTTL: idleTTL)
    }
    func count() async throws(SessionStoreError) -> Int { try check(); return try inner.count() }
}

/// A session store that cannot answer: 503 `session_store_unavailable`, never a false 401 and never a 500
/// (docs/api.md, Several instances (Redis)).
@Suite(.serialized) struct SessionStoreUnavailableTests {
    /// Puts a live session straight into the store, behind the gateway's back (so that no cache holds it),
    /// for the stand-in's default user; returns its Postern token.
    static func storedBehindTheCache(_ store: SwitchableSessionStore, _ gw: TestGateway) throws -> String {
        let token = Crypto.newToken(prefix: Crypto.accessTokenPrefix)
        let now = Date()
        let session = Session(id: Session.newID(), tokenDigest: TokenKey(token: token).hex,
                              refreshDigest: Crypto.sha256Hex(Crypto.newToken(prefix: Crypto.refreshTokenPrefix)),
                              userID: try #require(gw.standIn.userID(email: "x@y.com")), email: "x@y.com",
                              directusAccessToken: "unused", directusAccessExpiresAt: now.addingTimeInterval(900),
                              directusRefreshToken: "unused", createdAt: now, lastUsedAt: now, expiresAt: now.addingTimeInterval(3600))
        try store.inner.insert(session)
        return token
    }

    static func expectUnavailable(_ r: RawHTTPClient.Response, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(r.status == 503, "\(r.text)", sourceLocation: sourceLocation)
        #expect(r.json?["code"]?.stringValue == "session_store_unavailable", "\(r.text)", sourceLocation: sourceLocation)
    }

    @Test func aTokenTheStoreCannotJudgeIs503AndWorksAgainWhenItIsBack() throws {
        let store = SwitchableSessionStore()
        let gw = try TestGateway(store: store)
        defer { gw.stop() }
        let cached = try gw.login()
        let uncached = try Self.storedBehindTheCache(store, gw)
        let client = gw.client()

        store.setDown(true)
        // Not in the local cache: the store must say, and it cannot. Unknown tokens alike: not a 401.
        Self.expectUnavailable(try client.json("GET", "/api/v1/user/me", token: uncached))
        Self.expectUnavailable(try client.json("GET", "/api/v1/user/me", token: Crypto.newToken(prefix: Crypto.accessTokenPrefix)))
        Self.expectUnavailable(try client.json("GET", "/api/v1/books?limit=1", token: uncached))
        // A session this instance holds keeps working.
        #expect(try client.json("GET", "/api/v1/user/me", token: cached).status == 200)
        // Refresh and login need the store too.
        Self.expectUnavailable(try client.json("POST", "/api/v1/user/refresh",
                                               #"{"refreshToken":"\#(Crypto.newToken(prefix: Crypto.refreshTokenPrefix))"}"#))
        Self.expectUnavailable(try client.json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#))
        // A logout the store could not record is not reported as done.
        Self.expectUnavailable(try client.json("POST", "/api/v1/user/logout", token: cached))

        store.setDown(false)
        #expect(try client.json("GET", "/api/v1/user/me", token: uncached).status == 200)
        #expect(try client.json("GET", "/api/v1/user/me", token: cached).status == 200)
        #expect(try client.json("GET", "/api/v1/user/me", token: Crypto.newToken(prefix: Crypto.accessTokenPrefix)).status == 401)
        #expect(try client.json("POST", "/api/v1/user/logout", token: cached).status == 204)
        #expect(try client.json("GET", "/api/v1/user/me", token: cached).status == 401)
    }

    @Test func readyzIs503WhileTheStoreIsUnavailable() throws {
        let store = SwitchableSessionStore()
        let gw = try TestGateway(store: store)
        defer { gw.stop() }
        let client = gw.client()
        #expect(try client.json("GET", "/readyz").status == 200)
        store.setDown(true)
        Self.expectUnavailable(try client.json("GET", "/readyz"))
        Self.expectUnavailable(try RawHTTPClient(port: gw.app.adminPort).json("GET", "/readyz"))
        #expect(try client.json("GET", "/healthz").status == 200)
        store.setDown(false)
        #expect(try client.json("GET", "/readyz").status == 200)
    }

    @Test func theOpenAPIDocumentListsTheCode() throws {
        let text = String(decoding: OpenAPIDocument(config: .testing).data(), as: UTF8.self)
        #expect(text.contains("session_store_unavailable"))
        #expect(PosternErrorCode(rawValue: "session_store_unavailable") == .sessionStoreUnavailable)
    }
}

/// A revocation bus a test drives: records what the manager publishes, and delivers "another instance's"
/// announcements to the subscribers.
final class RecordingRevocationBus: SessionRevocationBus, @unchecked Sendable {
    private let state = LockedBox<(published: [String], handlers: [@Sendable (String) -> Void])>(([], []))

    var published: [String] { state.withLock { $0.published } }
    func publish(sessionID: String) { state.withLock { $0.published.append(sessionID) } }
    func subscribe(_ handler: @escaping @Sendable (String) -> Void) { state.withLock { $0.handlers.append(handler) } }
    /// Delivers an announcement from another instance.
    func deliver(_ sessionID: String) { for handler in state.withLock({ $0.handlers }) { handler(sessionID) } }
}

/// The buses and counters `Application.build` chooses from the store kind, and what travels on them.
@Suite(.serialized) struct SharedStatePlumbingTests {
    let ctx = CallFields(requestID: "t", clientIP: "127.0.0.1")

    @Test func localStoresGetInProcessBusesAndRedisIsAHook() throws {
        var config = PosternConfig.testing
        let memory = try Application.build(config: config, transport: InProcessTransport { _ in HTTPResponse(status: 500) })
        #expect(memory.backend?.kind == .local)
        #expect(memory.backend?.invalidations is LocalInvalidationBus)
        #expect(memory.backend?.revocations is LocalRevocationBus)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("postern-plumbing-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        config.sessions.store = "sqlite:\(dir.appendingPathComponent("s.db").path)"
        let sqlite = try Application.build(config: config, transport: InProcessTransport { _ in HTTPResponse(status: 500) })
        #expect(sqlite.backend?.kind == .local)
        sqlite.shutdown()
        config.sessions.store = "redis://127.0.0.1:6379"
        #expect(throws: StartError.self) {
            try Application.build(config: config, transport: InProcessTransport { _ in HTTPResponse(status: 500) })
        }
    }

    @Test func redisURLsParseWithPasswordAndDatabase() throws {
        let full = try #require(RedisURL("redis://:s3cret@redis:6380/2"))
        #expect(full.address == HostPort(host: "redis", port: 6380) && full.password == "s3cret" && full.db == 2)
        let plain = try #require(RedisURL("redis://redis:6379/0"))
        #expect(plain.password == nil && plain.db == 0)
        #expect(SessionStoreKind("redis://redis:6379/0") == .redis(HostPort(host: "redis", port: 6379)))
        for bad in ["redis://redis", "redis://user:@redis:6379", "redis://redis:6379/x", "redis://redis:6379/16", "rediss://redis"] {
            #expect(RedisURL(bad) == nil, "\(bad)")
        }
        var config = PosternConfig.testing
        config.sessions.store = "rediss://:pw@redis:6379"
        #expect(config.problems().isEmpty)
        config.sessions.store = "redis://:hunter2@redis"
        #expect(!config.problems().map(\.description).joined().contains("hunter2"))
    }

    @Test func theMicroCacheListensOnTheBusTheApplicationChose() throws {
        let gw = try LiveCacheTests.gateway()
        defer { gw.stop() }
        let bus = try #require(gw.app.backend?.invalidations)
        let heard = LockedBox<[String]>([])
        bus.subscribe { collection in heard.withLock { $0.append(collection) } }
        let token = try gw.login()
        let client = gw.client()
        #expect(try client.json("GET", "/api/v1/books?limit=100", token: token).headers["X-Cache"] == "MISS")
        #expect(try client.json("GET", "/api/v1/books?limit=100", token: token).headers["X-Cache"] == "HIT")
        // A write through this gateway is announced on the bus...
        #expect(try client.json("POST", "/api/v1/posts", #"{"title":"Announced"}"#, token: token).status == 201)
        #expect(heard.withLock { $0 }.contains("posts"))
        #expect(try client.json("GET", "/api/v1/books?limit=100", token: token).headers["X-Cache"] == "MISS")
        #expect(try client.json("GET", "/api/v1/books?limit=100", token: token).headers["X-Cache"] == "HIT")
        // ...and an announcement from elsewhere (another instance) drops this gateway's cached answers.
        bus.publish(collection: "posts")
        #expect(try client.json("GET", "/api/v1/books?limit=100", token: token).headers["X-Cache"] == "MISS")
    }

    @Test func revocationsArePublishedAndAnnouncementsDropTheCachedCopy() async throws {
        let standIn = DirectusStandIn()
        let directus = DirectusClient(transport: InProcessTransport { standIn.handle($0) }, timeout: 3)
        let store = MemorySessionStore()
        let bus = RecordingRevocationBus()
        let manager = SessionManager(store: store, directus: directus, idleTTL: 600, maxTTL: 3600, revocations: bus)
        func open() async throws -> IssuedTokens {
            let tokens = try await directus.login(email: "x@y.com", password: "123456", context: ctx)
            return try await manager.open(tokens: tokens, email: "x@y.com", context: ctx)
        }
        let first = try await open()
        let second = try await open()
        #expect(bus.published.isEmpty)

        // Another instance deletes `first` from the shared store: this one still holds it in cache...
        try store.delete(sessionID: first.session.id)
        #expect(try await manager.authenticate(token: first.accessToken).id == first.session.id)
        // ...until the announcement arrives.
        bus.deliver(first.session.id)
        await #expect(throws: GatewayError.self) { try await manager.authenticate(token: first.accessToken) }

        // This instance's rotation and revocation are announced to the others.
        let rotated = try await manager.rotate(refreshToken: second.refreshToken, context: ctx)
        #expect(bus.published == [second.session.id])
        try await manager.revoke(rotated.session, context: ctx)
        #expect(bus.published == [second.session.id, second.session.id])
    }

    @Test func rateLimitsCountThroughTheCountersTheyAreGiven() async throws {
        final class Ledger: @unchecked Sendable {
            let log = LockedBox<[String]>([])
        }
        struct Counter: RateLimitCounter {
            let name: String
            let capacity: Int
            let ledger: Ledger
            func take(_ key: String) async -> Int? {
                ledger.log.withLock { log in
                    let taken = log.filter { $0 == "take \(name) \(key)" }.count - log.filter { $0 == "give \(name) \(key)" }.count
                    guard taken < capacity else { return 7 }
                    log.append("take \(name) \(key)")
                    return nil
                }
            }
            func giveBack(_ key: String) async { ledger.log.withLock { $0.append("give \(name) \(key)") } }
            func prune() {}
        }
        let ledger = Ledger()
        var config = RateLimitsConfig()
        config.failedLoginsPerIPPerMinute = 5
        config.failedLoginsPerEmailPerMinute = 1
        config.failedLoginsPerEmailPerDay = 5
        let limits = RateLimits(config, metrics: Metrics()) { budget in Counter(name: budget.name, capacity: budget.capacity, ledger: ledger) }

        let claim = try await limits.claimLogin(ip: "1.2.3.4", email: "A@x.com")
        #expect(ledger.log.withLock { $0 } == ["take login_ip 1.2.3.4", "take login_email a@x.com", "take login_email_day a@x.com"])
        // The per-minute email budget is spent: 429 with its Retry-After, and nothing stays taken.
        do {
            _ = try await limits.claimLogin(ip: "1.2.3.4", email: "a@x.com")
            Issue.record("expected 429")
        } catch {
            #expect(error.status == 429 && error.headers["Retry-After"] == "7")
        }
        #expect(ledger.log.withLock { $0 }.suffix(2) == ["take login_ip 1.2.3.4", "give login_ip 1.2.3.4"])
        await limits.release(claim)
        #expect(ledger.log.withLock { $0 }.suffix(3) == ["give login_ip 1.2.3.4", "give login_email a@x.com", "give login_email_day a@x.com"])
    }
}
