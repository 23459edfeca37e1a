import CSQLite
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternRedis

/// What the operator's session control needs of every store: the client's IP and user agent kept with a
/// session (and through a rotation and an update), a user's sessions by user id or e-mail, session ids by
/// prefix; and the data stored before this (SQLite schema 3 files, Redis hashes without `ip`/`ua`) still works.
@Suite struct SessionListingStoreTests {
    private static let now = Date(timeIntervalSince1970: (Date().timeIntervalSince1970).rounded())

    /// A session with id `id` of `user`, signed in from `ip` with `agent`.
    static func session(_ id: String, user: String, email: String, ip: String = "203.0.113.7",
                        agent: String = "curl/8.5.0") -> Session {
        Session(id: id, tokenDigest: Crypto.sha256Hex("t-" + id), refreshDigest: Crypto.sha256Hex("r-" + id), userID: user,
                email: email, role: "role-1", directusAccessToken: "DIRECTUS-ACCESS-\(id)", directusAccessExpiresAt: now,
                directusRefreshToken: "DIRECTUS-REFRESH-\(id)", createdAt: now, lastUsedAt: now,
                expiresAt: now.addingTimeInterval(86_400), clientIP: ip, userAgent: agent)
    }

    /// The listing and prefix contract, on any store.
    static func checkListingContract(_ store: any SessionStore) async throws {
        let a1 = session("prefixAA-1", user: "u1", email: "Ann@Example.com")
        let a2 = session("prefixAA-2", user: "u1", email: "ann@example.com", ip: "2001:db8::1", agent: "")
        let b = session("otherBBB-3", user: "u2", email: "bob@example.com")
        for s in [a1, a2, b] { try await store.insert(s) }

        #expect(try await store.session(sessionID: a1.id)?.clientIP == "203.0.113.7")
        #expect(try await store.session(tokenDigest: a1.tokenDigest)?.userAgent == "curl/8.5.0")
        let byUser = try await store.summaries(userID: "u1").sorted { $0.id < $1.id }
        #expect(byUser == [SessionSummary(a1), SessionSummary(a2)])
        #expect(byUser.first?.clientIP == "203.0.113.7" && byUser.last?.clientIP == "2001:db8::1")
        // By e-mail, ignoring ASCII case, whatever case each session was stored with.
        #expect(Set(try await store.summaries(email: "ANN@example.COM").map(\.id)) == [a1.id, a2.id])
        #expect(try await store.summaries(email: "bob@example.com").map(\.id) == [b.id])
        #expect(try await store.summaries(email: "nobody@example.com").isEmpty)
        #expect(try await store.summaries(userID: "nobody").isEmpty)

        #expect(Set(try await store.sessionIDs(prefix: "prefixAA", limit: 2)) == [a1.id, a2.id])
        #expect(try await store.sessionIDs(prefix: "prefixAA", limit: 1).count == 1)
        #expect(try await store.sessionIDs(prefix: "prefixAA-2", limit: 2) == [a2.id])
        #expect(try await store.sessionIDs(prefix: "otherBBB", limit: 2) == [b.id])
        #expect(try await store.sessionIDs(prefix: "prefixAB", limit: 2).isEmpty)
        #expect(try await store.sessionIDs(prefix: "prefixA%", limit: 2).isEmpty)

        // A rotation and an update keep them.
        let rotated = try #require(try await store.rotate(sessionID: a1.id, refreshDigest: a1.refreshDigest,
                                                          newTokenDigest: Crypto.sha256Hex("t2"),
                                                          newRefreshDigest: Crypto.sha256Hex("r2"), lastUsed: now))
        #expect(rotated.clientIP == "203.0.113.7" && rotated.userAgent == "curl/8.5.0")
        _ = try await store.updateDirectusTokens(sessionID: a1.id, accessToken: "A2", accessExpiresAt: now, refreshToken: "R2",
                                                 role: nil)
        #expect(try await store.session(sessionID: a1.id)?.userAgent == "curl/8.5.0")

        // A deleted session leaves every listing and the prefix lookup.
        try await store.delete(sessionID: a1.id)
        #expect(try await store.summaries(userID: "u1").map(\.id) == [a2.id])
        #expect(try await store.summaries(email: "ann@example.com").map(\.id) == [a2.id])
        #expect(try await store.sessionIDs(prefix: "prefixAA", limit: 2) == [a2.id])
        try await store.delete(sessionID: a2.id)
        #expect(try await store.summaries(email: "ann@example.com").isEmpty)
        #expect(try await store.sessionIDs(prefix: "prefixAA", limit: 2).isEmpty)
    }

    @Test(arguments: SessionStoreTestKind.allCases)
    func everyLocalStoreListsAndFindsByPrefix(_ kind: SessionStoreTestKind) async throws {
        let dir = try sessionTestDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await Self.checkListingContract(try kind.make(in: dir))
    }

    @Test func theRedisStoreListsAndFindsByPrefix() async throws {
        let f = try RedisSessionStoreTests.Fixture()
        defer { f.close() }
        try await Self.checkListingContract(f.store)
    }

    @Test func theNewSQLiteStatementsUseTheirIndexes() throws {
        let dir = try sessionTestDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let plans = try SQLiteSessionStore(path: dir.appendingPathComponent("s.db").path, secretBox: nil).queryPlans()
        #expect(plans["summariesByUser"]?.contains("sessions_user") == true)
        #expect(plans["summariesByEmail"]?.contains("sessions_email") == true)
        #expect(plans["idsByPrefix"]?.contains("id>? AND id<?") == true)
    }

    /// A user agent is kept without control characters and cut to 256 bytes on a character boundary.
    @Test func theUserAgentIsBoundedAndClean() {
        #expect(Session.userAgent("curl/8\r\nX-Evil: 1\u{7F}\u{85}") == "curl/8X-Evil: 1")
        #expect(Session.userAgent(nil) == "")
        let long = Session.userAgent(String(repeating: "a", count: 255) + "é" + "tail")
        #expect(long == String(repeating: "a", count: 255))
        #expect(Session.userAgent(String(repeating: "é", count: 200)).utf8.count == 256)
    }

    /// Where `text`'s bytes live (equal for two strings that share one storage).
    static func storage(_ text: String) -> UnsafeRawPointer? {
        var text = text
        return text.withUTF8 { UnsafeRawPointer($0.baseAddress) }
    }

    /// Many sessions sign in with one app's user agent: the memory store and the session cache keep one copy.
    @Test func aRepeatedUserAgentIsKeptOnce() throws {
        let agent = { "PhoneApp/4.2 (iPhone; iOS 18.1; Scale/3.00) " + String(repeating: "x", count: 80) }
        let store = MemorySessionStore()
        let a = try store.insertReturningStored(Self.session("agentAAA-1", user: "u1", email: "a@x.com", agent: agent()))
        let b = try store.insertReturningStored(Self.session("agentAAA-2", user: "u2", email: "b@x.com", agent: agent()))
        #expect(a.userAgent == b.userAgent && Self.storage(a.userAgent) == Self.storage(b.userAgent))
        #expect(Self.storage(try #require(try store.session(sessionID: "agentAAA-2")).userAgent) == Self.storage(a.userAgent))

        let cache = SessionCache(capacity: 100)
        for (n, id) in ["agentBBB-1", "agentBBB-2"].enumerated() {
            cache.fill(TokenKey(token: "pst_\(n)"), Self.session(id, user: "u\(n)", email: "c@x.com", agent: agent()),
                       ifUnchangedSince: cache.currentGeneration, now: Self.now)
        }
        let c1 = try #require(cache.session(id: "agentBBB-1")), c2 = try #require(cache.session(id: "agentBBB-2"))
        #expect(c1.userAgent == agent() && Self.storage(c1.userAgent) == Self.storage(c2.userAgent))
    }

    /// A schema-3 file (built here from that schema's CREATE statements) is migrated in place:
    /// its sessions read with "" for IP and user agent, are listed, and new sessions keep theirs.
    @Test func aVersion3FileGetsTheClientColumnsAndKeepsItsSessions() throws {
        let dir = try sessionTestDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("v3.db").path
        try Self.writeVersion3File(path, rows: [("old-id", Crypto.sha256Hex("old-token"), "u1", "Old@Example.com")])
        let store = try SQLiteSessionStore(path: path, secretBox: nil)
        let old = try #require(try store.session(tokenDigest: Crypto.sha256Hex("old-token")))
        #expect(old.id == "old-id" && old.clientIP == "" && old.userAgent == "")
        #expect(try store.summaries(userID: "u1").map(\.clientIP) == [""])
        #expect(try store.summaries(email: "old@example.com").map(\.id) == ["old-id"])
        let new = Self.session("new-id-1", user: "u1", email: "old@example.com")
        try store.insert(new)
        #expect(try store.session(sessionID: "new-id-1")?.clientIP == "203.0.113.7")
        #expect(try store.queryPlans()["summariesByEmail"]?.contains("sessions_email") == true)
        store.close()
        #expect(Self.userVersion(path) == SQLiteSessionStore.schemaVersion)
    }

    /// Writes a session database as schema version 3 wrote it, with one live session per row given
    /// (id, access-token digest, user id, e-mail); Directus tokens `da`/`dr`, refresh token `psr_old-<id>`.
    static func writeVersion3File(_ path: String, rows: [(String, String, String, String)]) throws {
        let created = Date().timeIntervalSince1970
        var inserts = ""
        for (id, digest, user, email) in rows {
            inserts += """
                INSERT INTO sessions (id, token_digest, refresh_digest, user_id, email, role, directus_access,
                    directus_access_expires, directus_refresh, sealed, created_at, last_used, expires_at)
                VALUES ('\(id)', '\(digest)', '\(Crypto.sha256Hex("psr_old-" + id))', '\(user)', '\(email)', NULL, 'da',
                    \(created + 3600), 'dr', 0, \(created), \(created), \(created + 86_400));

                """
        }
        try OldSessionSchema.write(path, version: 3, rows: inserts)
    }

    /// `PRAGMA user_version` of the file at `path`.
    static func userVersion(_ path: String) -> Int32 {
        var db: OpaquePointer?
        guard sqlite3_open(path, &db) == SQLITE_OK else { return -1 }
        defer { sqlite3_close(db) }
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, nil) == SQLITE_OK else { return -1 }
        defer { sqlite3_finalize(stmt) }
        return sqlite3_step(stmt) == SQLITE_ROW ? sqlite3_column_int(stmt, 0) : -1
    }

    /// A session written as the Redis store wrote it before `ip`/`ua`, `ids` and `e:` (the hash and its two
    /// index keys, the user's and the expiry index) reads with "" for both, is listed by user id at once, and
    /// by e-mail and id prefix once the batched touch has filed it.
    @Test func aRedisSessionStoredBeforeTheClientFieldsStillWorks() async throws {
        let f = try RedisSessionStoreTests.Fixture()
        defer { f.close() }
        let s = Self.session("legacyAA-1", user: "u-old", email: "Legacy@Example.com")
        let ms = { (d: Date) in String(RedisSessionStore.ms(d)) }
        let exp = ms(s.expiresAt)
        let commands: [[RedisArgument]] = [
            ["HSET", .string("postern:s:" + s.id), "td", .string(s.tokenDigest), "rd", .string(s.refreshDigest), "u",
             .string(s.userID), "e", .string(s.email), "ro", "", "da", "A", "dax", .string(ms(s.directusAccessExpiresAt)),
             "dr", "R", "z", "0", "c", .string(ms(s.createdAt)), "l", .string(ms(s.lastUsedAt)), "x", .string(exp)],
            ["SET", .string("postern:t:" + s.tokenDigest), .string(s.id)],
            ["SET", .string("postern:r:" + s.refreshDigest), .string(s.id)],
            ["ZADD", .string("postern:u:" + s.userID), .string(ms(s.lastUsedAt)), .string(s.id)],
            ["ZADD", "postern:all", .string(exp), .string(s.id)],
        ]
        for command in commands { _ = try await f.clients.command(command) }

        let read = try #require(try await f.store.session(tokenDigest: s.tokenDigest))
        #expect(read.id == s.id && read.clientIP == "" && read.userAgent == "")
        #expect(try await f.store.summaries(userID: "u-old").map(\.clientIP) == [""])
        // Not filed by e-mail or in the prefix index yet: the full id still works (`session(sessionID:)`).
        #expect(try await f.store.summaries(email: "legacy@example.com").isEmpty)
        #expect(try await f.store.session(sessionID: s.id) != nil)
        try await f.store.touch([s.id: Date()])
        #expect(try await f.store.summaries(email: "legacy@example.com").map(\.id) == [s.id])
        #expect(try await f.store.sessionIDs(prefix: "legacyAA", limit: 2) == [s.id])
        // A rotation keeps the (absent) fields absent, and the session usable.
        let rotated = try await f.store.rotate(sessionID: s.id, refreshDigest: s.refreshDigest,
                                               newTokenDigest: Crypto.sha256Hex("t9"), newRefreshDigest: Crypto.sha256Hex("r9"),
                                               lastUsed: Date())
        #expect(rotated?.clientIP == "" && rotated?.userAgent == "")
    }
}
