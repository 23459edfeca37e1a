import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternIO
import PosternHTTP

/// A Directus token pair whose access JWT names `user` (what `SessionManager.open` reads from it).
func fakeDirectusTokens(user: String, role: String = "role-1") -> DirectusTokens {
    let header = Crypto.base64URLEncode(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
    let payload = Crypto.base64URLEncode(Array(#"{"id":"\#(user)","role":"\#(role)","exp":9999999999}"#.utf8))
    return DirectusTokens(accessToken: "\(header).\(payload).c2ln", refreshToken: "drt-\(UUID().uuidString)", expiresMs: 900_000)
}

/// A fresh temporary directory.
func sessionTestDirectory() throws -> URL {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("postern-sessions-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir
}

private let ctx = CallFields(requestID: "t", clientIP: "127.0.0.1")

/// The per-user cap, through the whole pipeline.
@Suite struct SessionCapTests {
    @Test func theTwentyFirstLoginEndsTheFirstSession() async throws {
        let g = InProcessGateway()
        var tokens: [String] = []
        var refreshTokens: [String] = []
        for _ in 0..<21 {
            let a = await g.send(.post, "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#)
            #expect(a.status == 200)
            tokens.append(try #require(a.json?["data"]?["accessToken"]?.stringValue))
            refreshTokens.append(try #require(a.json?["data"]?["refreshToken"]?.stringValue))
        }
        #expect(await g.send(.get, "/api/v1/user/me", token: tokens[0]).status == 401)
        let refresh = await g.send(.post, "/api/v1/user/refresh", #"{"refreshToken":"\#(refreshTokens[0])"}"#)
        #expect(refresh.status == 401)
        for token in tokens.dropFirst() {
            #expect(await g.send(.get, "/api/v1/user/me", token: token).status == 200)
        }
        #expect(try g.store.count() == 20)
        // The ended session's Directus refresh token was logged out upstream.
        #expect(g.standIn.received.filter { $0.path == "/auth/logout" }.count == 1)
    }

    @Test func aRecentlyUsedSessionOutlivesAnOlderUnusedOne() async throws {
        let g = InProcessGateway()
        var tokens: [String] = []
        for _ in 0..<20 { tokens.append(try await g.login()) }
        #expect(await g.send(.get, "/api/v1/user/me", token: tokens[0]).status == 200)
        let newest = try await g.login()
        #expect(await g.send(.get, "/api/v1/user/me", token: tokens[0]).status == 200)
        #expect(await g.send(.get, "/api/v1/user/me", token: tokens[1]).status == 401)
        #expect(await g.send(.get, "/api/v1/user/me", token: newest).status == 200)
    }

    @Test func theCapIsPerUserAndConfigurable() async throws {
        let g = InProcessGateway { $0.sessions.maxPerUser = 2 }
        let other = try await g.login("second@example.com", "password2")
        let first = try await g.login()
        let second = try await g.login()
        let third = try await g.login()
        #expect(await g.send(.get, "/api/v1/user/me", token: first).status == 401)
        for token in [other, second, third] {
            #expect(await g.send(.get, "/api/v1/user/me", token: token).status == 200)
        }
    }

    @Test(arguments: SessionStoreTestKind.allCases)
    func theCapHoldsInEveryStoreAfterARestart(_ kind: SessionStoreTestKind) async throws {
        let dir = try sessionTestDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try kind.make(in: dir)
        let directus = DirectusClient(transport: InProcessTransport { _ in HTTPResponse(status: 204) }, timeout: 3)
        let clock = TestClock(date: Date(timeIntervalSince1970: 1_800_000_000))
        let before = SessionManager(store: store, directus: directus, idleTTL: 1000, maxTTL: 10_000, maxPerUser: 3, clock: { clock.now })
        var issued: [IssuedTokens] = []
        for _ in 0..<3 {
            issued.append(try await before.open(tokens: fakeDirectusTokens(user: "u1"), email: "u1@y.com", context: ctx))
            clock.advance(10)
        }
        _ = try await before.authenticate(token: issued[0].accessToken)
        clock.advance(60)
        _ = try await before.authenticate(token: issued[0].accessToken)  // older than a minute: a touch is queued
        await before.flush()
        // A new manager (a restart) knows last uses only from the store.
        let after = SessionManager(store: store, directus: directus, idleTTL: 1000, maxTTL: 10_000, maxPerUser: 3, clock: { clock.now })
        let fourth = try await after.open(tokens: fakeDirectusTokens(user: "u1"), email: "u1@y.com", context: ctx)
        await #expect(throws: GatewayError.self) { try await after.authenticate(token: issued[1].accessToken) }
        for token in [issued[0].accessToken, issued[2].accessToken, fourth.accessToken] {
            _ = try await after.authenticate(token: token)
        }
        #expect(try await store.count() == 3)
    }
}

/// Drop, rotate and purge among many sessions of many users leave exactly the right ones.
@Suite struct SessionIndexTests {
    @Test(arguments: SessionStoreTestKind.allCases)
    func dropRotateAndPurgeTouchOnlyTheirSessions(_ kind: SessionStoreTestKind) async throws {
        let dir = try sessionTestDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try kind.make(in: dir)
        let directus = DirectusClient(transport: InProcessTransport { _ in HTTPResponse(status: 204) }, timeout: 3)
        let clock = TestClock(date: Date(timeIntervalSince1970: 1_800_000_000))
        let manager = SessionManager(store: store, directus: directus, idleTTL: 1000, maxTTL: 100_000, maxPerUser: 10, clock: { clock.now })
        // 30 users × 6 sessions.
        var all: [[IssuedTokens]] = []
        for u in 0..<30 {
            var mine: [IssuedTokens] = []
            for _ in 0..<6 { mine.append(try await manager.open(tokens: fakeDirectusTokens(user: "user-\(u)"), email: "u\(u)@y.com", context: ctx)) }
            all.append(mine)
        }
        var dead = Set<String>()      // access tokens that must be 401
        var live: [String: String] = [:]  // session id → its current access token
        for mine in all { for s in mine { live[s.session.id] = s.accessToken } }

        // Log out every third session.
        for (u, mine) in all.enumerated() {
            for (i, s) in mine.enumerated() where (u + i) % 3 == 0 {
                try? await manager.revoke(s.session, context: ctx)
                dead.insert(s.accessToken)
                live[s.session.id] = nil
            }
        }
        // Rotate one live session per user.
        var rotatedRefresh: [String] = []
        for mine in all {
            guard let s = mine.first(where: { live[$0.session.id] != nil }) else { continue }
            let next = try await manager.rotate(refreshToken: s.refreshToken, context: ctx)
            dead.insert(s.accessToken)
            live[s.session.id] = next.accessToken
            rotatedRefresh.append(s.refreshToken)
        }
        // Keep sessions of even users in use; purge the idle ones.
        clock.advance(600)
        for (u, mine) in all.enumerated() where u % 2 == 0 {
            for s in mine { if let token = live[s.session.id] { _ = try await manager.authenticate(token: token) } }
        }
        await manager.flush()
        clock.advance(600)
        let idleCount = all.enumerated().filter { $0.offset % 2 == 1 }.flatMap { $0.element }.filter { live[$0.session.id] != nil }.count
        #expect(await manager.purgeExpired() == idleCount)
        for (u, mine) in all.enumerated() where u % 2 == 1 {
            for s in mine { if let token = live[s.session.id] { dead.insert(token); live[s.session.id] = nil } }
        }

        #expect(try await store.count() == live.count)
        for token in dead {
            await #expect(throws: GatewayError.self) { try await manager.authenticate(token: token) }
        }
        for (id, token) in live {
            #expect(try await manager.authenticate(token: token).id == id)
        }
        // Reusing a rotated refresh token of a surviving session revokes that session only.
        let survivor = try #require(all.enumerated().first { $0.offset % 2 == 0 }?.element.first { s in rotatedRefresh.contains(s.refreshToken) })
        await #expect(throws: GatewayError.self) { try await manager.rotate(refreshToken: survivor.refreshToken, context: ctx) }
        #expect(try await store.count() == live.count - 1)
    }

    @Test func aFullCacheEvictsButEverySessionStillWorksAndRevokes() async throws {
        let store = MemorySessionStore()
        let directus = DirectusClient(transport: InProcessTransport { _ in HTTPResponse(status: 204) }, timeout: 3)
        let manager = SessionManager(store: store, directus: directus, idleTTL: 1000, maxTTL: 10_000, cacheCapacity: 128)
        var issued: [IssuedTokens] = []
        for n in 0..<400 { issued.append(try await manager.open(tokens: fakeDirectusTokens(user: "u\(n)"), email: "x@y.com", context: ctx)) }
        #expect(manager.cachedSessions <= 128)
        for s in issued { #expect(try await manager.authenticate(token: s.accessToken).id == s.session.id) }
        #expect(manager.cachedSessions <= 128)
        for s in issued.prefix(200) { try? await manager.revoke(s.session, context: ctx) }
        for s in issued.prefix(200) {
            await #expect(throws: GatewayError.self) { try await manager.authenticate(token: s.accessToken) }
        }
        for s in issued.suffix(200) { #expect(try await manager.authenticate(token: s.accessToken).id == s.session.id) }
        #expect(try await store.count() == 200)
    }

    @Test func everySQLiteStatementUsesAnIndex() throws {
        let dir = try sessionTestDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try SQLiteSessionStore(path: dir.appendingPathComponent("s.db").path, secretBox: nil)
        let plans = try store.queryPlans()
        #expect(plans.count > 10)
        for (query, plan) in plans where !["insert", "rememberUsed", "count"].contains(query) {
            #expect(!plan.contains("SCAN"), "\(query): \(plan)")
            #expect(plan.contains("USING INDEX") || plan.contains("USING PRIMARY KEY") || plan.contains("USING COVERING INDEX"),
                    "\(query): \(plan)")
        }
        #expect(plans["purge"]?.contains("sessions_last_used") == true)
        #expect(plans["purge"]?.contains("sessions_expires_at") == true)
        #expect(plans["recency"]?.contains("sessions_user") == true)
    }

    @Test func aVersion1FileGetsTheNewIndexesAndKeepsItsSessions() throws {
        let dir = try sessionTestDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("v1.db").path
        try OldSessionSchema.write(path, version: 1, rows: OldSessionSchema.oldSession)
        let store = try SQLiteSessionStore(path: path, secretBox: nil)
        #expect(try store.session(tokenDigest: "td")?.id == "old-id")
        #expect(try store.recency(userID: "u1").map(\.id) == ["old-id"])
        let plans = try store.queryPlans()
        #expect(plans["recency"]?.contains("sessions_user") == true)
        #expect(plans["purge"]?.contains("sessions_last_used") == true)
    }

    @Test(arguments: SessionStoreTestKind.allCases)
    func rotateIsACompareAndSet(_ kind: SessionStoreTestKind) async throws {
        let dir = try sessionTestDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try kind.make(in: dir)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let s = Session(id: "s1", tokenDigest: Crypto.sha256Hex("t1"), refreshDigest: Crypto.sha256Hex("r1"), userID: "u", email: "e",
                        directusAccessToken: "a", directusAccessExpiresAt: now, directusRefreshToken: "r",
                        createdAt: now, lastUsedAt: now, expiresAt: now.addingTimeInterval(100))
        try await store.insert(s)
        let later = now.addingTimeInterval(5)
        let first = try await store.rotate(sessionID: "s1", refreshDigest: s.refreshDigest, newTokenDigest: Crypto.sha256Hex("t2"),
                                     newRefreshDigest: Crypto.sha256Hex("r2"), lastUsed: later)
        #expect(first?.tokenDigest == Crypto.sha256Hex("t2") && first?.lastUsedAt == later && first?.directusRefreshToken == "r")
        let second = try await store.rotate(sessionID: "s1", refreshDigest: s.refreshDigest, newTokenDigest: Crypto.sha256Hex("t3"),
                                      newRefreshDigest: Crypto.sha256Hex("r3"), lastUsed: later)
        #expect(second == nil)
        #expect(try await store.sessionID(usedRefreshDigest: s.refreshDigest) == "s1")
        let patched = try await store.updateDirectusTokens(sessionID: "s1", accessToken: "a2", accessExpiresAt: later, refreshToken: "r2",
                                                     role: nil)
        #expect(patched?.tokenDigest == Crypto.sha256Hex("t2") && patched?.directusRefreshToken == "r2")
        #expect(try await store.recency(userID: "u") == [SessionRecency(id: "s1", createdAt: now, lastUsedAt: later)])
        try await store.delete(sessionID: "s1")
        #expect(try await store.updateDirectusTokens(sessionID: "s1", accessToken: "x", accessExpiresAt: later, refreshToken: "y", role: nil) == nil)
        #expect(try await store.recency(userID: "u").isEmpty)
    }
}

/// A store that holds reads of one token digest after they have read, until the test lets them go: the
/// moment between a cache miss's store read and its cache fill.
final class GatedSessionStore: SessionStore, @unchecked Sendable {
    let inner: MemorySessionStore
    private let condition = NSCondition()
    private var gatedDigest: String?
    private var arrived = 0
    private var arrivedTarget = 0
    private var arrivedWaiter: CheckedContinuation<Void, Never>?

    init(_ inner: MemorySessionStore) { self.inner = inner }

    /// From now on, holds every read of `digest` once it has read, until `release`.
    func arm(_ digest: String, readers: Int) {
        condition.withLock {
            gatedDigest = digest
            arrived = 0
            arrivedTarget = readers
        }
    }

    /// Returns once `readers` reads are held.
    func waitUntilHeld() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let done = condition.withLock { () -> Bool in
                if arrived >= arrivedTarget { return true }
                arrivedWaiter = c
                return false
            }
            if done { c.resume() }
        }
    }

    /// Lets every held read go on, and stops holding.
    func release() {
        condition.withLock {
            gatedDigest = nil
            condition.broadcast()
        }
    }

    func session(tokenDigest: String) throws(SessionStoreError) -> Session? {
        let result = try inner.session(tokenDigest: tokenDigest)
        condition.lock()
        defer { condition.unlock() }
        guard gatedDigest == tokenDigest else { return result }
        arrived += 1
        if arrived >= arrivedTarget, let waiter = arrivedWaiter {
            arrivedWaiter = nil
            waiter.resume()
        }
        while gatedDigest == tokenDigest { condition.wait() }
        return result
    }

    func insert(_ session: Session) throws(SessionStoreError) { try inner.insert(session) }
    func session(refreshDigest: String) throws(SessionStoreError) -> Session? { try inner.session(refreshDigest: refreshDigest) }
    func sessionID(usedRefreshDigest: String) throws(SessionStoreError) -> String? { try inner.sessionID(usedRefreshDigest: usedRefreshDigest) }
    func session(sessionID: String) throws(SessionStoreError) -> Session? { try inner.session(sessionID: sessionID) }
    func update(_ session: Session) throws(SessionStoreError) { try inner.update(session) }
    func rotate(sessionID: String, refreshDigest: String, newTokenDigest: String, newRefreshDigest: String, lastUsed: Date) throws(SessionStoreError) -> Session? {
        try inner.rotate(sessionID: sessionID, refreshDigest: refreshDigest, newTokenDigest: newTokenDigest,
                         newRefreshDigest: newRefreshDigest, lastUsed: lastUsed)
    }
    func updateDirectusTokens(sessionID: String, accessToken: String, accessExpiresAt: Date, refreshToken: String, role: String?) throws(SessionStoreError) -> Session? {
        try inner.updateDirectusTokens(sessionID: sessionID, accessToken: accessToken, accessExpiresAt: accessExpiresAt,
                                       refreshToken: refreshToken, role: role)
    }
    func recency(userID: String) throws(SessionStoreError) -> [SessionRecency] { try inner.recency(userID: userID) }
    func touch(_ lastUsed: [String: Date]) throws(SessionStoreError) { try inner.touch(lastUsed) }
    func delete(sessionID: String) throws(SessionStoreError) { try inner.delete(sessionID: sessionID) }
    func purgeExpired(now: Date, idleTTL: TimeInterval) throws(SessionStoreError) -> [String] { try inner.purgeExpired(now: now, idleTTL: idleTTL) }
    func count() throws(SessionStoreError) -> Int { try inner.count() }
}

/// A revocation or rotation that lands while cache misses are reading the store is never undone by them.
@Suite struct SessionRevocationRaceTests {
    enum Write: String, CaseIterable, CustomStringConvertible {
        case logout, rotation
        var description: String { rawValue }
    }

    @Test(arguments: Write.allCases)
    func aRevokedTokenStaysRevokedWhateverReadsWereInFlight(_ write: Write) async throws {
        // The reads run on event-loop threads (as requests do), so a held read blocks a loop, not the
        // test's own executor.
        let readers = 4
        let group = EventLoopGroup(count: readers, name: "race")
        defer { group.shutdown() }
        let directus = DirectusClient(transport: InProcessTransport { _ in HTTPResponse(status: 204) }, timeout: 3)
        for round in 0..<20 {
            let store = GatedSessionStore(MemorySessionStore())
            let opener = SessionManager(store: store, directus: directus, idleTTL: 1000, maxTTL: 10_000)
            let issued = try await opener.open(tokens: fakeDirectusTokens(user: "u\(round)"), email: "x@y.com", context: ctx)
            // A second manager on the same store: its cache is empty, so its reads miss.
            let manager = SessionManager(store: store, directus: directus, idleTTL: 1000, maxTTL: 10_000)
            let session = try await opener.authenticate(token: issued.accessToken)

            store.arm(issued.session.tokenDigest, readers: readers)
            let reads = group.loops.map { loop in
                Task(executorPreference: loop) { () -> Bool in
                    (try? await manager.authenticate(token: issued.accessToken)) != nil
                }
            }
            await store.waitUntilHeld()
            var newToken: String?
            switch write {
            case .logout:
                try? await manager.revoke(session, context: ctx)
            case .rotation:
                newToken = try await manager.rotate(refreshToken: issued.refreshToken, context: ctx).accessToken
            }
            store.release()
            for read in reads { _ = await read.value }

            await #expect(throws: GatewayError.self, "round \(round)") { try await manager.authenticate(token: issued.accessToken) }
            if let newToken {
                #expect(try await manager.authenticate(token: newToken).id == issued.session.id)
            }
        }
    }
}
