import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternIO
import PosternRedis

/// The Redis session store against a real redis-server: the store contract on dates around now (Redis
/// expires keys at their real time), expiry in Redis, tombstones, the refresh lock and the outage error.
@Suite(.serialized) struct RedisSessionStoreTests {
    /// A store on a fresh server, with idle 1 h and lifetime 1 day.
    final class Fixture: @unchecked Sendable {
        let server: RedisServer
        let group = EventLoopGroup(count: 1)
        let clients: RedisClientGroup
        let store: RedisSessionStore

        init(secretBox: SecretBox? = nil) throws {
            server = try RedisServer()
            clients = RedisClientGroup(group: group, endpoint: try RedisEndpoint(url: server.url()))
            store = RedisSessionStore(clients: clients, idleTTL: 3600, maxTTL: 86_400, secretBox: secretBox, refreshLockTTL: 0.3)
        }

        func close() {
            clients.close()
            group.shutdown()
            server.stop()
        }

        /// The remaining time to live of `key` in milliseconds (-2 missing, -1 no expiry).
        func pttl(_ key: String) async throws -> Int64 {
            try await clients.command(["PTTL", .string(key)]).integer ?? -3
        }
    }

    /// A session created `age` seconds ago and last used `idle` seconds ago, with fresh tokens.
    static func session(user: String = "user-1", age: TimeInterval = 0, idle: TimeInterval = 0) -> Session {
        let now = Date()
        return Session(id: Session.newID(), tokenDigest: Crypto.sha256Hex(Crypto.newToken(prefix: "pst_")),
                       refreshDigest: Crypto.sha256Hex(Crypto.newToken(prefix: "psr_")), userID: user, email: "x@y.com",
                       role: "role-1", directusAccessToken: "DIRECTUS-ACCESS-\(UUID().uuidString)",
                       directusAccessExpiresAt: Date(timeIntervalSince1970: (now.timeIntervalSince1970 + 900).rounded()),
                       directusRefreshToken: "DIRECTUS-REFRESH-\(UUID().uuidString)",
                       createdAt: Date(timeIntervalSince1970: (now.timeIntervalSince1970 - age).rounded()),
                       lastUsedAt: Date(timeIntervalSince1970: (now.timeIntervalSince1970 - idle).rounded()),
                       expiresAt: Date(timeIntervalSince1970: (now.timeIntervalSince1970 - age + 86_400).rounded()))
    }

    @Test func insertFindDuplicateAndCount() async throws {
        let f = try Fixture()
        defer { f.close() }
        let s = Self.session()
        try await f.store.insert(s)
        #expect(try await f.store.session(tokenDigest: s.tokenDigest) == s)
        #expect(try await f.store.session(refreshDigest: s.refreshDigest) == s)
        #expect(try await f.store.session(sessionID: s.id) == s)
        #expect(try await f.store.session(tokenDigest: s.refreshDigest) == nil)
        var clash = Self.session()
        clash.tokenDigest = s.tokenDigest
        await #expect(throws: SessionStoreError.duplicate("session")) { try await f.store.insert(clash) }
        #expect(try await f.store.count() == 1)
        // Every key expires with the session: idle expiry (1 h) comes first here.
        let ttl = try await f.pttl("postern:t:" + s.tokenDigest)
        #expect(ttl > 3_500_000 && ttl <= 3_601_000)  // dates are whole seconds: up to 0.5 s ahead
    }

    @Test func rotationIsCompareAndSetAndLeavesATombstoneUntilDelete() async throws {
        let f = try Fixture()
        defer { f.close() }
        let s = Self.session()
        try await f.store.insert(s)
        let (td, rd) = (Crypto.sha256Hex("a2"), Crypto.sha256Hex("r2"))
        let rotated = try await f.store.rotate(sessionID: s.id, refreshDigest: s.refreshDigest, newTokenDigest: td,
                                               newRefreshDigest: rd, lastUsed: Date())
        #expect(rotated?.tokenDigest == td && rotated?.refreshDigest == rd)
        // The second use of the same refresh digest loses.
        #expect(try await f.store.rotate(sessionID: s.id, refreshDigest: s.refreshDigest, newTokenDigest: Crypto.sha256Hex("a3"),
                                         newRefreshDigest: Crypto.sha256Hex("r3"), lastUsed: Date()) == nil)
        #expect(try await f.store.session(tokenDigest: s.tokenDigest) == nil)
        #expect(try await f.store.session(refreshDigest: s.refreshDigest) == nil)
        #expect(try await f.store.sessionID(usedRefreshDigest: s.refreshDigest) == s.id)
        #expect(try await f.store.session(tokenDigest: td)?.id == s.id)
        try await f.store.delete(sessionID: s.id)
        #expect(try await f.store.session(tokenDigest: td) == nil)
        #expect(try await f.store.sessionID(usedRefreshDigest: s.refreshDigest) == nil)
        #expect(try await f.store.count() == 0)
    }

    @Test func touchSlidesTheIdleExpiryAndRecencyOrdersByLastUse() async throws {
        let f = try Fixture()
        defer { f.close() }
        let old = Self.session(age: 600, idle: 600)
        let recent = Self.session(age: 300, idle: 300)
        try await f.store.insert(old)
        try await f.store.insert(recent)
        let before = try await f.pttl("postern:s:" + old.id)
        #expect(before <= 3_001_000)
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded())
        try await f.store.touch([old.id: now, "gone": now])
        let after = try await f.pttl("postern:s:" + old.id)
        #expect(after > 3_500_000)
        #expect(try await f.pttl("postern:r:" + old.refreshDigest) > 3_500_000)
        #expect(try await f.store.session(sessionID: old.id)?.lastUsedAt == now)
        let recency = try await f.store.recency(userID: "user-1")
        #expect(Set(recency.map(\.id)) == [old.id, recent.id])
        #expect(recency.first { $0.id == old.id }?.lastUsedAt == now)
        try await f.store.delete(sessionID: recent.id)
        #expect(try await f.store.recency(userID: "user-1").map(\.id) == [old.id])
    }

    @Test func directusTokensAreSealedAndUpdatedAlone() async throws {
        let box = try #require(SecretBox(base64Key: Data((0..<32).map { UInt8($0) }).base64EncodedString()))
        let f = try Fixture(secretBox: box)
        defer { f.close() }
        let s = Self.session()
        try await f.store.insert(s)
        let raw = try await f.clients.command(["HGET", .string("postern:s:" + s.id), "dr"]).string ?? ""
        #expect(!raw.isEmpty && !raw.contains("DIRECTUS"))
        #expect(try await f.store.session(sessionID: s.id) == s)
        let updated = try await f.store.updateDirectusTokens(sessionID: s.id, accessToken: "A2", accessExpiresAt: s.directusAccessExpiresAt,
                                                             refreshToken: "R2", role: nil)
        #expect(updated?.directusRefreshToken == "R2" && updated?.tokenDigest == s.tokenDigest && updated?.role == "role-1")
        // Without the key, a sealed session reads as absent.
        let plain = RedisSessionStore(clients: f.clients, idleTTL: 3600, maxTTL: 86_400, secretBox: nil, refreshLockTTL: 1)
        #expect(try await plain.session(sessionID: s.id) == nil)
        #expect(try await f.store.updateDirectusTokens(sessionID: "gone", accessToken: "A", accessExpiresAt: Date(),
                                                       refreshToken: "R", role: nil) == nil)
    }

    @Test func theRefreshLockIsExclusiveAndExpires() async throws {
        let f = try Fixture()
        defer { f.close() }
        // Exclusivity is checked on a lock that lives 30 s, so a slow machine cannot let it expire between
        // two calls; only the expiry step uses the fixture's 0.3 s lock.
        let held = RedisSessionStore(clients: f.clients, idleTTL: 3600, maxTTL: 86_400, secretBox: nil, refreshLockTTL: 30)
        #expect(try await held.acquireRefreshLock(sessionID: "s1") != nil)
        #expect(try await held.acquireRefreshLock(sessionID: "s1") == nil)
        #expect(try await f.store.acquireRefreshLock(sessionID: "s1") == nil)
        #expect(try await held.acquireRefreshLock(sessionID: "s2") != nil)
        // A holder that never releases: its lock expires (0.3 s here) and another takes it over.
        let first = try #require(try await f.store.acquireRefreshLock(sessionID: "s3"))
        var takenOver: String?
        _ = try? await eventually("the expired lock is taken over") {
            takenOver = try await held.acquireRefreshLock(sessionID: "s3")
            return takenOver != nil
        }
        #expect(takenOver != nil)
        // The old holder's release does not free the new holder's lock.
        await f.store.releaseRefreshLock(sessionID: "s3", token: first)
        #expect(try await held.acquireRefreshLock(sessionID: "s3") == nil)
        await held.releaseRefreshLock(sessionID: "s3", token: try #require(takenOver))
        #expect(try await held.acquireRefreshLock(sessionID: "s3") != nil)
    }

    @Test func aStoppedServerIsUnavailableNotMissing() async throws {
        let f = try Fixture()
        defer { f.close() }
        let s = Self.session()
        try await f.store.insert(s)
        f.server.stop()
        await #expect(throws: SessionStoreError.self) { try await f.store.session(tokenDigest: s.tokenDigest) }
        do {
            _ = try await f.store.session(tokenDigest: s.tokenDigest)
        } catch {
            guard case .unavailable = error else { Issue.record("expected unavailable, got \(error)"); return }
        }
        #expect(await f.store.isAvailable() == false)
    }
}

/// The Redis rate-limit counter against a real redis-server.
@Suite(.serialized) struct RedisRateLimitCounterTests {
    @Test func twoCountersOnOneRedisShareTheBudgetAndCountInProcessWhileItIsDown() async throws {
        let f = try RedisSessionStoreTests.Fixture()
        defer { f.close() }
        let budget = RateLimitBudget(name: "login_email", capacity: 3, window: 60)
        let a = RedisRateLimitCounter(budget: budget, clients: f.clients)
        let b = RedisRateLimitCounter(budget: budget, clients: f.clients)
        #expect(await a.take("x@y.com") == nil)
        #expect(await b.take("x@y.com") == nil)
        #expect(await a.take("x@y.com") == nil)
        let refused = await b.take("x@y.com")
        #expect((1...60).contains(refused ?? 0))
        #expect(await a.take("other@y.com") == nil)
        await a.giveBack("x@y.com")
        #expect(await b.take("x@y.com") == nil)
        // The key is a digest: no email in Redis.
        let keys = try await f.clients.command(["KEYS", "*"]).array?.compactMap(\.string) ?? []
        #expect(keys.count == 2 && !keys.joined().contains("y.com"))
        f.server.stop()
        // Down: this instance's own budget (3) applies instead of refusing or admitting everyone.
        for _ in 0..<3 { #expect(await a.take("x@y.com") == nil) }
        #expect(await a.take("x@y.com") != nil)
    }
}
