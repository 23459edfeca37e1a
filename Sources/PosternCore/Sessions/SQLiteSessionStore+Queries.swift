import CSQLite
import FoundationEssentials

/// The statements of the store (each prepared once, at open) and the rows they bind and read.
extension SQLiteSessionStore {
    /// Every statement the store runs; each is prepared once, at open.
    enum Query: CaseIterable {
        case insert, byToken, byRefresh, byID, usedRefresh, oldRefresh, update, rememberUsed, touch
        case delete, deleteUsed, purge, count, rotate, directusTokens, recency, clearRevoked
        case summariesByUser, summariesByEmail, idsByPrefix

        var sql: String {
            switch self {
            case .insert:
                return "INSERT INTO sessions (\(SQLiteSessionStore.columns)) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
            case .byToken: return "SELECT \(SQLiteSessionStore.columns) FROM sessions WHERE token_digest = ? AND revoked = 0"
            case .byRefresh: return "SELECT \(SQLiteSessionStore.columns) FROM sessions WHERE refresh_digest = ? AND revoked = 0"
            case .byID: return "SELECT \(SQLiteSessionStore.columns) FROM sessions WHERE id = ? AND revoked = 0"
            case .usedRefresh: return "SELECT session_id FROM used_refresh WHERE digest = ?"
            case .oldRefresh: return "SELECT refresh_digest FROM sessions WHERE id = ? AND revoked = 0"
            case .update:
                return """
                    UPDATE sessions SET token_digest = ?2, refresh_digest = ?3, user_id = ?4, email = ?5, role = ?6,
                    directus_access = ?7, directus_access_expires = ?8, directus_refresh = ?9, sealed = ?10,
                    created_at = ?11, last_used = ?12, expires_at = ?13, client_ip = ?14, user_agent = ?15
                    WHERE id = ?1 AND revoked = 0
                    """
            case .rememberUsed: return "INSERT OR REPLACE INTO used_refresh (digest, session_id) VALUES (?, ?)"
            case .touch: return "UPDATE sessions SET last_used = ? WHERE id = ? AND revoked = 0"
            // The revocation mark (see the type's comment); trigger sessions_forget_used_on_revoke drops the
            // used-refresh records.
            case .delete:
                return "UPDATE sessions SET revoked = 1, directus_access = '', directus_refresh = '' WHERE id = ? AND revoked = 0"
            // What triggers sessions_forget_used(_on_revoke) run; listed so that the tests see its query plan.
            case .deleteUsed: return "DELETE FROM used_refresh WHERE session_id = ?"
            // min(last_used + idle, expires_at) <= now, written so that each side has its index, and the
            // revoked rows (their partial index); only the expired ones are reported.
            case .purge:
                return "DELETE FROM sessions WHERE last_used <= ?1 OR expires_at <= ?2 OR revoked = 1 RETURNING id, revoked"
            case .count: return "SELECT (SELECT count(*) FROM sessions) - (SELECT count(*) FROM sessions WHERE revoked = 1)"
            case .rotate:
                return """
                    UPDATE sessions SET token_digest = ?3, refresh_digest = ?4, last_used = ?5
                    WHERE id = ?1 AND refresh_digest = ?2 AND revoked = 0
                    """
            case .directusTokens:
                return """
                    UPDATE sessions SET directus_access = ?2, directus_access_expires = ?3, directus_refresh = ?4, sealed = ?5,
                    role = coalesce(?6, role) WHERE id = ?1 AND revoked = 0
                    """
            case .recency: return "SELECT id, created_at, last_used FROM sessions WHERE user_id = ? AND revoked = 0"
            // Revoked rows in the way of a new id or digest (they are gone for every read already).
            case .clearRevoked:
                return "DELETE FROM sessions WHERE revoked = 1 AND (id = ?1 OR token_digest = ?2 OR refresh_digest = ?3)"
            case .summariesByUser:
                return "SELECT \(SQLiteSessionStore.summaryColumns) FROM sessions WHERE user_id = ? AND revoked = 0"
            // The comparison takes the index's collation, so that `sessions_email` serves it.
            case .summariesByEmail:
                return "SELECT \(SQLiteSessionStore.summaryColumns) FROM sessions WHERE email = ?1 COLLATE NOCASE AND revoked = 0"
            // A range on the primary key: ?2 is the prefix followed by DEL (0x7F), above every base64url character.
            case .idsByPrefix:
                return "SELECT id FROM sessions WHERE id >= ?1 AND id < ?2 AND revoked = 0 LIMIT ?3"
            }
        }
    }

    /// The columns of a whole session row, in the order `bindRow` binds and `readSession` reads them.
    static let columns = """
        id, token_digest, refresh_digest, user_id, email, role, directus_access, directus_access_expires, \
        directus_refresh, sealed, created_at, last_used, expires_at, client_ip, user_agent
        """

    /// What `summary(_:)` reads: never a token or a digest.
    static let summaryColumns = "id, user_id, email, created_at, last_used, expires_at, client_ip, user_agent"

    // MARK: - Rows

    /// Binds every column of `s` (`columns`, in order), its Directus tokens sealed when a key is set.
    func bindRow(_ stmt: OpaquePointer, _ s: Session) throws {
        let sealed = secretBox != nil
        bind(stmt, 1, s.id)
        bind(stmt, 2, s.tokenDigest)
        bind(stmt, 3, s.refreshDigest)
        bind(stmt, 4, s.userID)
        bind(stmt, 5, s.email)
        bind(stmt, 6, s.role)
        bind(stmt, 7, secretBox?.seal(s.directusAccessToken) ?? s.directusAccessToken)
        sqlite3_bind_double(stmt, 8, s.directusAccessExpiresAt.timeIntervalSince1970)
        bind(stmt, 9, secretBox?.seal(s.directusRefreshToken) ?? s.directusRefreshToken)
        sqlite3_bind_int(stmt, 10, sealed ? 1 : 0)
        sqlite3_bind_double(stmt, 11, s.createdAt.timeIntervalSince1970)
        sqlite3_bind_double(stmt, 12, s.lastUsedAt.timeIntervalSince1970)
        sqlite3_bind_double(stmt, 13, s.expiresAt.timeIntervalSince1970)
        bind(stmt, 14, s.clientIP)
        bind(stmt, 15, s.userAgent)
    }

    /// Runs the insert statement for `session`; returns SQLite's result code.
    func insertRow(_ session: Session) throws -> Int32 {
        let stmt = try statement(.insert)
        try bindRow(stmt, session)
        return sqlite3_step(stmt)
    }

    /// Deletes the revoked rows that hold `id`, `token` or `refresh` (a unique key a new write wants);
    /// says whether there were any.
    func clearRevoked(id: String, token: String, refresh: String) throws -> Bool {
        let stmt = try statement(.clearRevoked)
        bind(stmt, 1, id)
        bind(stmt, 2, token)
        bind(stmt, 3, refresh)
        try check(sqlite3_step(stmt) == SQLITE_DONE, "clear revoked")
        return sqlite3_changes(db) > 0
    }

    /// The live session `query` finds by `key`; nil when none, or when its row cannot be decrypted.
    func readSession(_ query: Query, _ key: String) throws -> Session? {
        let stmt = try statement(query)
        bind(stmt, 1, key)
        let rc = sqlite3_step(stmt)
        guard rc == SQLITE_ROW else {
            try check(rc == SQLITE_DONE, "lookup")
            return nil
        }
        let id = text(stmt, 0)
        var access = text(stmt, 6)
        var refresh = text(stmt, 8)
        if sqlite3_column_int(stmt, 9) != 0 {
            // Sealed row: unreadable without the key it was sealed with, so it reads as absent.
            guard let box = secretBox, let a = box.open(access), let r = box.open(refresh) else {
                warn?("session \(id) cannot be decrypted (POSTERN_SECRET_KEY missing or changed); treated as absent")
                return nil
            }
            access = a
            refresh = r
        }
        let role = sqlite3_column_type(stmt, 5) == SQLITE_NULL ? nil : text(stmt, 5)
        return Session(
            id: id, tokenDigest: text(stmt, 1), refreshDigest: text(stmt, 2),
            userID: text(stmt, 3), email: text(stmt, 4), role: role,
            directusAccessToken: access,
            directusAccessExpiresAt: Date(timeIntervalSince1970: sqlite3_column_double(stmt, 7)),
            directusRefreshToken: refresh,
            createdAt: Date(timeIntervalSince1970: sqlite3_column_double(stmt, 10)),
            lastUsedAt: Date(timeIntervalSince1970: sqlite3_column_double(stmt, 11)),
            expiresAt: Date(timeIntervalSince1970: sqlite3_column_double(stmt, 12)),
            clientIP: text(stmt, 13), userAgent: text(stmt, 14))
    }

    /// Every row `stmt` (bound, over `summaryColumns`) yields, as summaries.
    func summaries(_ stmt: OpaquePointer) throws -> [SessionSummary] {
        var out: [SessionSummary] = []
        while true {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { return out }
            try check(rc == SQLITE_ROW, "list sessions")
            out.append(SessionSummary(id: text(stmt, 0), userID: text(stmt, 1), email: text(stmt, 2),
                                      createdAt: Date(timeIntervalSince1970: sqlite3_column_double(stmt, 3)),
                                      lastUsedAt: Date(timeIntervalSince1970: sqlite3_column_double(stmt, 4)),
                                      expiresAt: Date(timeIntervalSince1970: sqlite3_column_double(stmt, 5)),
                                      clientIP: text(stmt, 6), userAgent: text(stmt, 7)))
        }
    }
}
