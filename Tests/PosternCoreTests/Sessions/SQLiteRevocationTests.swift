import CSQLite
import Foundation
import Testing
@testable import PosternCore
import PosternTesting

/// The SQLite store revokes by marking a row (schema version 3): the row is gone for every read at once,
/// its Directus tokens are blanked in the file, and the purge deletes it later.
@Suite struct SQLiteRevocationTests {
    private static let now = Date(timeIntervalSince1970: 1_800_000_000)

    private static func session(_ n: Int, user: String = "u") -> Session {
        Session(id: "id-\(n)", tokenDigest: Crypto.sha256Hex("t\(n)"), refreshDigest: Crypto.sha256Hex("r\(n)"), userID: user,
                email: "e@x.com", role: "r", directusAccessToken: "DIRECTUS-ACCESS-\(n)", directusAccessExpiresAt: now,
                directusRefreshToken: "DIRECTUS-REFRESH-\(n)", createdAt: now, lastUsedAt: now,
                expiresAt: now.addingTimeInterval(86_400))
    }

    /// Every row of the file's sessions table as (id, revoked, directus_access, directus_refresh), read directly.
    private static func rawRows(_ path: String) -> [[String]] {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else { return [] }
        defer { sqlite3_close(db) }
        var stmt: OpaquePointer?
        let sql = "SELECT id, revoked, directus_access, directus_refresh FROM sessions ORDER BY id"
        guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK else { return [] }
        defer { sqlite3_finalize(stmt) }
        var rows: [[String]] = []
        while sqlite3_step(stmt) == SQLITE_ROW {
            rows.append((0..<4).map { sqlite3_column_text(stmt, $0).map { String(cString: $0) } ?? "" })
        }
        return rows
    }

    @Test func aRevokedRowIsGoneForEveryReadAndItsDirectusTokensAreBlanked() throws {
        let dir = try sessionTestDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("s.db").path
        let store = try SQLiteSessionStore(path: path, secretBox: nil)
        let s = Self.session(1), other = Self.session(2)
        try store.insert(s)
        try store.insert(other)
        var rotated = try #require(try store.rotate(sessionID: s.id, refreshDigest: s.refreshDigest,
                                                    newTokenDigest: Crypto.sha256Hex("t1b"), newRefreshDigest: Crypto.sha256Hex("r1b"),
                                                    lastUsed: Self.now))
        #expect(try store.sessionID(usedRefreshDigest: s.refreshDigest) == s.id)
        try store.delete(sessionID: s.id)

        #expect(try store.session(tokenDigest: rotated.tokenDigest) == nil)
        #expect(try store.session(refreshDigest: rotated.refreshDigest) == nil)
        #expect(try store.session(sessionID: s.id) == nil)
        #expect(try store.sessionID(usedRefreshDigest: s.refreshDigest) == nil)
        #expect(try store.recency(userID: "u").map(\.id) == [other.id])
        #expect(try store.count() == 1)
        // No write brings it back.
        rotated.directusAccessToken = "again"
        try store.update(rotated)
        #expect(try store.rotate(sessionID: s.id, refreshDigest: rotated.refreshDigest, newTokenDigest: Crypto.sha256Hex("x"),
                                 newRefreshDigest: Crypto.sha256Hex("y"), lastUsed: Self.now) == nil)
        #expect(try store.updateDirectusTokens(sessionID: s.id, accessToken: "a", accessExpiresAt: Self.now,
                                               refreshToken: "b", role: nil) == nil)
        try store.touch([s.id: Self.now.addingTimeInterval(10)])
        #expect(try store.session(sessionID: s.id) == nil)
        #expect(Self.rawRows(path) == [[s.id, "1", "", ""], [other.id, "0", "DIRECTUS-ACCESS-2", "DIRECTUS-REFRESH-2"]])

        // The purge deletes the revoked row without reporting it (it was gone already), and the live one stays.
        #expect(try store.purgeExpired(now: Self.now, idleTTL: 3_600).isEmpty)
        #expect(Self.rawRows(path).map { $0[0] } == [other.id])
        #expect(try store.session(tokenDigest: other.tokenDigest) == other)
        #expect(try store.queryPlans()["purge"]?.contains("sessions_revoked") == true)
    }

    @Test func theIdAndDigestsOfARevokedSessionCanBeWrittenAgain() throws {
        let dir = try sessionTestDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try SQLiteSessionStore(path: dir.appendingPathComponent("s.db").path, secretBox: nil)
        let s = Self.session(1), t = Self.session(2), u = Self.session(3)
        for x in [s, t, u] { try store.insert(x) }
        for x in [s, t, u] { try store.delete(sessionID: x.id) }
        // The same session again: a new insert, not a duplicate.
        try store.insert(s)
        #expect(try store.session(tokenDigest: s.tokenDigest) == s)
        #expect(try store.count() == 1)
        // A live session's digests are still taken.
        var clash = Self.session(4)
        clash.tokenDigest = s.tokenDigest
        #expect(throws: SessionStoreError.self) { try store.insert(clash) }
        // An update and a rotation onto revoked sessions' digests.
        var updated = s
        updated.tokenDigest = t.tokenDigest
        try store.update(updated)
        #expect(try store.session(tokenDigest: t.tokenDigest) == updated)
        let rotated = try store.rotate(sessionID: s.id, refreshDigest: s.refreshDigest, newTokenDigest: u.tokenDigest,
                                       newRefreshDigest: u.refreshDigest, lastUsed: Self.now)
        #expect(rotated?.tokenDigest == u.tokenDigest)
        #expect(try store.session(refreshDigest: u.refreshDigest)?.id == s.id)
        #expect(try store.count() == 1)
    }

    @Test func aVersion2FileGetsTheRevocationMarkAndKeepsItsSessions() throws {
        let dir = try sessionTestDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("v2.db").path
        try OldSessionSchema.write(path, version: 2,
                                   rows: OldSessionSchema.oldSession + "INSERT INTO used_refresh VALUES ('old-rd', 'old-id');\n")
        let store = try SQLiteSessionStore(path: path, secretBox: nil)
        let old = try #require(try store.session(tokenDigest: "td"))
        #expect(old.id == "old-id" && old.refreshDigest == "rd" && old.directusRefreshToken == "dr")
        #expect(try store.sessionID(usedRefreshDigest: "old-rd") == "old-id")
        try store.delete(sessionID: "old-id")
        #expect(try store.session(tokenDigest: "td") == nil)
        #expect(try store.sessionID(usedRefreshDigest: "old-rd") == nil)
        #expect(try store.count() == 0)
        store.close()
        var db: OpaquePointer?
        #expect(sqlite3_open(path, &db) == SQLITE_OK)
        var stmt: OpaquePointer?
        #expect(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, nil) == SQLITE_OK)
        #expect(sqlite3_step(stmt) == SQLITE_ROW)
        #expect(sqlite3_column_int(stmt, 0) == SQLiteSessionStore.schemaVersion)
        sqlite3_finalize(stmt)
        sqlite3_close(db)
    }
}
