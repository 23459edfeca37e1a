import CSQLite
import FoundationEssentials

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import PosternIO

/// A session store in an embedded SQLite file: sessions survive a restart.
///
/// The file is created with mode 0600, runs in WAL mode with `synchronous=NORMAL`, and when a
/// `SecretBox` is given the Directus tokens are stored sealed (AES-256-GCM). One connection is
/// shared behind a lock: every call is short, and SQLite serialises writers anyway. Every statement
/// finds its rows through an index (the tests read each statement's query plan), so no call scans the table.
///
/// A revocation (logout, reuse, per-user cap) is one small committed write: the row is marked `revoked`, its
/// Directus tokens blanked (overwritten: `secure_delete`), its used-refresh records deleted, and every read
/// skips it from then on; the background purge deletes it with the expired rows. A `DELETE` would rewrite a
/// page of each of the table's eight B-trees (the table and seven indexes) on every logout; the mark writes two
/// (the row's page and the small partial index of revoked rows).
package final class SQLiteSessionStore: SessionStore, @unchecked Sendable {
    /// The schema version this code writes (`PRAGMA user_version`).
    static let schemaVersion: Int32 = 4

    /// The database file path.
    let path: String
    /// The key the Directus tokens are sealed with at rest, if any.
    let secretBox: SecretBox?
    /// Where a line goes about a row that cannot be decrypted.
    let warn: (@Sendable (String) -> Void)?
    /// Held around every use of the connection and its statements.
    let lock = PlainLock()
    /// The connection; nil once closed.
    var db: OpaquePointer?
    /// The prepared statement of each query.
    var statements: [Query: OpaquePointer] = [:]
    /// BEGIN IMMEDIATE, COMMIT, ROLLBACK, prepared once (sqlite3_exec would compile them on every write).
    var control: [OpaquePointer] = []

    /// Opens (creating if needed) the store at `path`; with `secretBox`, Directus tokens are sealed at rest.
    ///
    /// `warn` receives one line when a stored session cannot be decrypted (e.g. the key changed);
    /// such a session reads as absent. Throws `SessionStoreError.cannotOpen` when the file cannot
    /// be created, opened, or is not a Postern session database.
    package init(path: String, secretBox: SecretBox?, warn: (@Sendable (String) -> Void)? = nil) throws {
        self.path = path
        self.secretBox = secretBox
        self.warn = warn
        try Self.prepareFile(path)
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let reason = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_close_v2(handle)
            throw SessionStoreError.cannotOpen(path, reason)
        }
        db = handle
        do {
            try configure()
        } catch let SessionStoreError.failed(reason) {
            closeLocked()
            throw SessionStoreError.cannotOpen(path, reason)
        } catch {
            closeLocked()
            throw error
        }
    }

    deinit {
        closeLocked()
    }

    /// Closes the database; later calls throw. Safe to call more than once.
    func close() {
        lock.withLock { closeLocked() }
    }

    // MARK: - SessionStore

    /// Stores a new session; throws `duplicate` if its id or a digest is taken.
    package func insert(_ session: Session) throws(SessionStoreError) {
        try locked {
            var rc = try insertRow(session)
            if rc == SQLITE_CONSTRAINT, try clearRevoked(id: session.id, token: session.tokenDigest, refresh: session.refreshDigest) {
                rc = try insertRow(session)
            }
            if rc == SQLITE_CONSTRAINT {
                throw SessionStoreError.duplicate("session id or token digest")
            }
            try check(rc == SQLITE_DONE, "insert")
        }
    }

    /// The session with this access-token digest, or nil (also when its tokens cannot be decrypted).
    package func session(tokenDigest: String) throws(SessionStoreError) -> Session? {
        try locked { try readSession(.byToken, tokenDigest) }
    }

    /// The session with this refresh-token digest, or nil (also when its tokens cannot be decrypted).
    package func session(refreshDigest: String) throws(SessionStoreError) -> Session? {
        try locked { try readSession(.byRefresh, refreshDigest) }
    }

    /// The session with this id, or nil.
    package func session(sessionID: String) throws(SessionStoreError) -> Session? {
        try locked { try readSession(.byID, sessionID) }
    }

    /// The session id that used this refresh digest before rotating it away.
    package func sessionID(usedRefreshDigest: String) throws(SessionStoreError) -> String? {
        try locked {
            let stmt = try statement(.usedRefresh)
            bind(stmt, 1, usedRefreshDigest)
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_ROW { return text(stmt, 0) }
            try check(rc == SQLITE_DONE, "used refresh lookup")
            return nil
        }
    }

    /// Replaces the stored row of `session.id` (no-op if it is gone), remembering a rotated-away refresh digest.
    package func update(_ session: Session) throws(SessionStoreError) {
        try locked {
            try transaction {
                let old = try statement(.oldRefresh)
                bind(old, 1, session.id)
                let rc = sqlite3_step(old)
                guard rc == SQLITE_ROW else {
                    try check(rc == SQLITE_DONE, "update lookup")
                    return
                }
                let oldRefresh = text(old, 0)
                sqlite3_reset(old)
                var stmt = try statement(.update)
                try bindRow(stmt, session)
                var urc = sqlite3_step(stmt)
                if urc == SQLITE_CONSTRAINT,
                   try clearRevoked(id: session.id, token: session.tokenDigest, refresh: session.refreshDigest) {
                    stmt = try statement(.update)
                    try bindRow(stmt, session)
                    urc = sqlite3_step(stmt)
                }
                if urc == SQLITE_CONSTRAINT { throw SessionStoreError.duplicate("token or refresh digest") }
                try check(urc == SQLITE_DONE, "update")
                if oldRefresh != session.refreshDigest {
                    let used = try statement(.rememberUsed)
                    bind(used, 1, oldRefresh)
                    bind(used, 2, session.id)
                    try check(sqlite3_step(used) == SQLITE_DONE, "remember used refresh")
                }
            }
        }
    }

    /// Rotates the digests of a session whose refresh digest is still `refreshDigest`, in one transaction.
    package func rotate(sessionID: String, refreshDigest: String, newTokenDigest: String, newRefreshDigest: String,
                       lastUsed: Date) throws(SessionStoreError) -> Session? {
        try locked {
            var rotated: Session?
            try transaction {
                let step = { [self] () throws -> Int32 in
                    let stmt = try statement(.rotate)
                    bind(stmt, 1, sessionID)
                    bind(stmt, 2, refreshDigest)
                    bind(stmt, 3, newTokenDigest)
                    bind(stmt, 4, newRefreshDigest)
                    sqlite3_bind_double(stmt, 5, lastUsed.timeIntervalSince1970)
                    return sqlite3_step(stmt)
                }
                var rc = try step()
                if rc == SQLITE_CONSTRAINT, try clearRevoked(id: sessionID, token: newTokenDigest, refresh: newRefreshDigest) {
                    rc = try step()
                }
                if rc == SQLITE_CONSTRAINT { throw SessionStoreError.duplicate("token or refresh digest") }
                try check(rc == SQLITE_DONE, "rotate")
                guard sqlite3_changes(db) == 1 else { return }
                let used = try statement(.rememberUsed)
                bind(used, 1, refreshDigest)
                bind(used, 2, sessionID)
                try check(sqlite3_step(used) == SQLITE_DONE, "remember used refresh")
                rotated = try readSession(.byID, sessionID)
            }
            return rotated
        }
    }

    /// Sets the Directus tokens (sealed like at insert) and role of a session.
    package func updateDirectusTokens(sessionID: String, accessToken: String, accessExpiresAt: Date, refreshToken: String,
                                     role: String?) throws(SessionStoreError) -> Session? {
        try locked {
            let stmt = try statement(.directusTokens)
            bind(stmt, 1, sessionID)
            bind(stmt, 2, secretBox?.seal(accessToken) ?? accessToken)
            sqlite3_bind_double(stmt, 3, accessExpiresAt.timeIntervalSince1970)
            bind(stmt, 4, secretBox?.seal(refreshToken) ?? refreshToken)
            sqlite3_bind_int(stmt, 5, secretBox != nil ? 1 : 0)
            bind(stmt, 6, role)
            try check(sqlite3_step(stmt) == SQLITE_DONE, "update Directus tokens")
            guard sqlite3_changes(db) == 1 else { return nil }
            return try readSession(.byID, sessionID)
        }
    }

    /// Id, creation and last use of each session of `userID` (through the `user_id` index).
    package func recency(userID: String) throws(SessionStoreError) -> [SessionRecency] {
        try locked {
            let stmt = try statement(.recency)
            bind(stmt, 1, userID)
            var out: [SessionRecency] = []
            while true {
                let rc = sqlite3_step(stmt)
                if rc == SQLITE_DONE { break }
                try check(rc == SQLITE_ROW, "recency")
                out.append(SessionRecency(id: text(stmt, 0),
                                          createdAt: Date(timeIntervalSince1970: sqlite3_column_double(stmt, 1)),
                                          lastUsedAt: Date(timeIntervalSince1970: sqlite3_column_double(stmt, 2))))
            }
            return out
        }
    }

    /// Sets `last_used` of the listed sessions that still exist, in one transaction.
    package func touch(_ lastUsed: [String: Date]) throws(SessionStoreError) {
        guard !lastUsed.isEmpty else { return }
        try locked {
            try transaction {
                for (id, date) in lastUsed {
                    let stmt = try statement(.touch)
                    sqlite3_bind_double(stmt, 1, date.timeIntervalSince1970)
                    bind(stmt, 2, id)
                    try check(sqlite3_step(stmt) == SQLITE_DONE, "touch")
                    sqlite3_reset(stmt)
                }
            }
        }
    }

    /// Revokes a session: marks its row (every read skips it from now on), blanks its Directus tokens and
    /// (trigger `sessions_forget_used_on_revoke`) deletes its used-refresh records, in one statement; the
    /// next purge deletes the row.
    package func delete(sessionID: String) throws(SessionStoreError) {
        try locked {
            let stmt = try statement(.delete)
            bind(stmt, 1, sessionID)
            try check(sqlite3_step(stmt) == SQLITE_DONE, "delete")
        }
    }

    /// Removes every session whose effective expiry is at or before `now`; returns their ids.
    package func purgeExpired(now: Date, idleTTL: TimeInterval) throws(SessionStoreError) -> [String] {
        try locked {
            var removed: [String] = []
            try transaction {
                let stmt = try statement(.purge)
                sqlite3_bind_double(stmt, 1, now.addingTimeInterval(-idleTTL).timeIntervalSince1970)
                sqlite3_bind_double(stmt, 2, now.timeIntervalSince1970)
                while true {
                    let rc = sqlite3_step(stmt)
                    if rc == SQLITE_DONE { break }
                    try check(rc == SQLITE_ROW, "purge")
                    // A revoked row was already gone for every reader: only expired ones are news.
                    if sqlite3_column_int(stmt, 1) == 0 { removed.append(text(stmt, 0)) }
                }
            }
            return removed
        }
    }

    /// The sessions of `userID` (through the `user_id` index).
    package func summaries(userID: String) throws(SessionStoreError) -> [SessionSummary] {
        try locked {
            let stmt = try statement(.summariesByUser)
            bind(stmt, 1, userID)
            return try summaries(stmt)
        }
    }

    /// The sessions whose e-mail is `email` ignoring ASCII case (through the `sessions_email` index).
    package func summaries(email: String) throws(SessionStoreError) -> [SessionSummary] {
        try locked {
            let stmt = try statement(.summariesByEmail)
            bind(stmt, 1, email)
            return try summaries(stmt)
        }
    }

    /// At most `limit` ids starting with `prefix` (a range on the primary key); a prefix outside the base64url
    /// alphabet names no session.
    package func sessionIDs(prefix: String, limit: Int) throws(SessionStoreError) -> [String] {
        guard SessionSummary.isIDLike(prefix), limit > 0 else { return [] }
        return try locked {
            let stmt = try statement(.idsByPrefix)
            bind(stmt, 1, prefix)
            bind(stmt, 2, prefix + "\u{7F}")
            sqlite3_bind_int(stmt, 3, Int32(clamping: limit))
            var ids: [String] = []
            while true {
                let rc = sqlite3_step(stmt)
                if rc == SQLITE_DONE { return ids }
                try check(rc == SQLITE_ROW, "id prefix lookup")
                ids.append(text(stmt, 0))
            }
        }
    }

    /// The number of stored sessions (including any that cannot be decrypted).
    package func count() throws(SessionStoreError) -> Int {
        try locked {
            let stmt = try statement(.count)
            try check(sqlite3_step(stmt) == SQLITE_ROW, "count")
            return Int(sqlite3_column_int64(stmt, 0))
        }
    }
}
