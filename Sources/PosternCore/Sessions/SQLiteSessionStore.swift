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
/// finds its rows through an index (`queryPlans` shows it), so no call scans the table.
///
/// A revocation (logout, reuse, per-user cap) is one small committed write: the row is marked `revoked`, its
/// Directus tokens blanked (overwritten: `secure_delete`), its used-refresh records deleted, and every read
/// skips it from then on; the background purge deletes it with the expired rows. A `DELETE` would rewrite a
/// page of each of the table's eight B-trees (the table and seven indexes) on every logout; the mark writes two
/// (the row's page and the small partial index of revoked rows).
package final class SQLiteSessionStore: SessionStore, @unchecked Sendable {
    /// The schema version this code writes (`PRAGMA user_version`).
    package static let schemaVersion: Int32 = 4

    /// The database file path.
    package let path: String
    private let secretBox: SecretBox?
    private let warn: (@Sendable (String) -> Void)?
    private let lock = PlainLock()
    private var db: OpaquePointer?
    private var statements: [Query: OpaquePointer] = [:]
    /// BEGIN IMMEDIATE, COMMIT, ROLLBACK, prepared once (sqlite3_exec would compile them on every write).
    private var control: [OpaquePointer] = []

    private enum Query: CaseIterable {
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
            // What triggers sessions_forget_used(_on_revoke) run; listed so that `queryPlans` shows its index.
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

    private static let columns = """
        id, token_digest, refresh_digest, user_id, email, role, directus_access, directus_access_expires, \
        directus_refresh, sealed, created_at, last_used, expires_at, client_ip, user_agent
        """

    /// What `summary(_:)` reads: never a token or a digest.
    private static let summaryColumns = "id, user_id, email, created_at, last_used, expires_at, client_ip, user_agent"

    private static let schema = """
        CREATE TABLE IF NOT EXISTS sessions (
            id TEXT PRIMARY KEY NOT NULL,
            token_digest TEXT NOT NULL,
            refresh_digest TEXT NOT NULL,
            user_id TEXT NOT NULL,
            email TEXT NOT NULL,
            role TEXT,
            directus_access TEXT NOT NULL,
            directus_access_expires REAL NOT NULL,
            directus_refresh TEXT NOT NULL,
            sealed INTEGER NOT NULL,
            created_at REAL NOT NULL,
            last_used REAL NOT NULL,
            expires_at REAL NOT NULL
        );
        CREATE UNIQUE INDEX IF NOT EXISTS sessions_token_digest ON sessions (token_digest);
        CREATE UNIQUE INDEX IF NOT EXISTS sessions_refresh_digest ON sessions (refresh_digest);
        CREATE TABLE IF NOT EXISTS used_refresh (
            digest TEXT PRIMARY KEY NOT NULL,
            session_id TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS used_refresh_session ON used_refresh (session_id);
        """

    /// Indexes added by schema version 2 (per-user cap, purge without a scan).
    private static let indexesV2 = """
        CREATE INDEX IF NOT EXISTS sessions_user ON sessions (user_id);
        CREATE INDEX IF NOT EXISTS sessions_last_used ON sessions (last_used);
        CREATE INDEX IF NOT EXISTS sessions_expires_at ON sessions (expires_at);
        CREATE TRIGGER IF NOT EXISTS sessions_forget_used AFTER DELETE ON sessions
            BEGIN DELETE FROM used_refresh WHERE session_id = old.id; END;
        PRAGMA user_version = 2;
        """

    /// Schema version 3: revocation by a mark (see the type's comment).
    private static let revocationV3 = """
        ALTER TABLE sessions ADD COLUMN revoked INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX IF NOT EXISTS sessions_revoked ON sessions (revoked) WHERE revoked = 1;
        CREATE TRIGGER IF NOT EXISTS sessions_forget_used_on_revoke AFTER UPDATE OF revoked ON sessions WHEN new.revoked = 1
            BEGIN DELETE FROM used_refresh WHERE session_id = old.id; END;
        PRAGMA user_version = 3;
        """

    /// Schema version 4: the client's IP and user agent at sign-in ('' in the rows written before), and the
    /// e-mail index of the operator's listing.
    private static let clientV4 = """
        ALTER TABLE sessions ADD COLUMN client_ip TEXT NOT NULL DEFAULT '';
        ALTER TABLE sessions ADD COLUMN user_agent TEXT NOT NULL DEFAULT '';
        CREATE INDEX IF NOT EXISTS sessions_email ON sessions (email COLLATE NOCASE);
        PRAGMA user_version = 4;
        """

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
    package func close() {
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

    /// `EXPLAIN QUERY PLAN` of every statement the store runs, by statement (for tests: each must use an index).
    func queryPlans() throws -> [String: String] {
        try locked {
            var plans: [String: String] = [:]
            for query in Query.allCases {
                var stmt: OpaquePointer?
                guard sqlite3_prepare_v2(db, "EXPLAIN QUERY PLAN " + query.sql, -1, &stmt, nil) == SQLITE_OK, let stmt else {
                    throw SessionStoreError.failed("explain: \(errorMessage())")
                }
                defer { sqlite3_finalize(stmt) }
                var lines: [String] = []
                while sqlite3_step(stmt) == SQLITE_ROW { lines.append(text(stmt, 3)) }
                plans["\(query)"] = lines.joined(separator: "; ")
            }
            return plans
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

    // MARK: - Opening

    /// Creates the parent directory (0700) and the file (0600) if missing; tightens an existing file to 0600.
    private static func prepareFile(_ path: String) throws {
        let parent = path.deletingLastPathComponent
        if !parent.isEmpty && !FileManager.default.fileExists(atPath: parent) {
            if let failure = makeDirectories(parent) {
                throw SessionStoreError.cannotOpen(path, "cannot create directory \(parent): \(failure)")
            }
        }
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw SessionStoreError.cannotOpen(path, String(cString: strerror(errno)))
        }
        defer { _ = closeFD(fd) }
        guard fchmod(fd, 0o600) == 0 else {
            throw SessionStoreError.cannotOpen(path, "cannot set mode 0600: \(String(cString: strerror(errno)))")
        }
    }

    /// `mkdir -p` with mode 0700 for the directories it creates: nil, or why it failed (`strerror`).
    private static func makeDirectories(_ path: String) -> String? {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") where component != "." {
            prefix += (prefix.isEmpty || prefix.hasSuffix("/") ? "" : "/") + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST { return String(cString: strerror(errno)) }
        }
        var status = stat()
        guard stat(path, &status) == 0 else { return String(cString: strerror(errno)) }
        return (status.st_mode & S_IFMT) == S_IFDIR ? nil : String(cString: strerror(ENOTDIR))
    }

    /// Pragmas, schema creation or version check, and prepared statements.
    private func configure() throws {
        try exec("PRAGMA busy_timeout = 5000")
        // Fails here with "file is not a database" for a garbage file.
        try exec("PRAGMA journal_mode = WAL")
        try exec("PRAGMA synchronous = NORMAL")
        try exec("PRAGMA secure_delete = ON")
        let version = try userVersion()
        if version == 0 {
            try exec("BEGIN IMMEDIATE; \(Self.schema) \(Self.indexesV2) \(Self.revocationV3) \(Self.clientV4) COMMIT;")
        } else if version == 1 {
            try exec("BEGIN IMMEDIATE; \(Self.indexesV2) \(Self.revocationV3) \(Self.clientV4) COMMIT;")
        } else if version == 2 {
            try exec("BEGIN IMMEDIATE; \(Self.revocationV3) \(Self.clientV4) COMMIT;")
        } else if version == 3 {
            try exec("BEGIN IMMEDIATE; \(Self.clientV4) COMMIT;")
        } else if version > Self.schemaVersion {
            throw SessionStoreError.failed("schema version \(version) is newer than this Postern supports (\(Self.schemaVersion))")
        }
        for query in Query.allCases {
            var stmt: OpaquePointer?
            guard sqlite3_prepare_v2(db, query.sql, -1, &stmt, nil) == SQLITE_OK, let stmt else {
                throw SessionStoreError.failed("prepare: \(errorMessage())")
            }
            statements[query] = stmt
        }
        for sql in ["BEGIN IMMEDIATE", "COMMIT", "ROLLBACK"] {
            var stmt: OpaquePointer?
            guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK, let stmt else {
                throw SessionStoreError.failed("prepare: \(errorMessage())")
            }
            control.append(stmt)
        }
    }

    private func userVersion() throws -> Int32 {
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, nil) == SQLITE_OK, let stmt else {
            throw SessionStoreError.failed(errorMessage())
        }
        defer { sqlite3_finalize(stmt) }
        guard sqlite3_step(stmt) == SQLITE_ROW else { throw SessionStoreError.failed(errorMessage()) }
        return sqlite3_column_int(stmt, 0)
    }

    private func closeLocked() {
        for stmt in statements.values { sqlite3_finalize(stmt) }
        for stmt in control { sqlite3_finalize(stmt) }
        statements = [:]
        control = []
        if let db { sqlite3_close_v2(db) }
        db = nil
    }

    // MARK: - Helpers (call with the lock held)

    /// Runs `body` under the lock, then resets every statement so that none keeps a read
    /// snapshot open and no bound secret lingers in a binding.
    private func locked<T>(_ body: () throws -> T) throws(SessionStoreError) -> T {
        do {
            return try lock.withLock {
                defer {
                    for stmt in statements.values {
                        sqlite3_reset(stmt)
                        sqlite3_clear_bindings(stmt)
                    }
                }
                return try body()
            }
        } catch {
            throw SessionStoreError.wrapping(error)
        }
    }

    private func statement(_ query: Query) throws -> OpaquePointer {
        guard db != nil, let stmt = statements[query] else { throw SessionStoreError.failed("store is closed") }
        sqlite3_reset(stmt)
        sqlite3_clear_bindings(stmt)
        return stmt
    }

    private func exec(_ sql: String) throws {
        var err: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &err)
        if rc != SQLITE_OK {
            let message = err.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_free(err)
            throw SessionStoreError.failed(message)
        }
    }

    private func transaction(_ body: () throws -> Void) throws {
        try control(0, "begin")
        do {
            try body()
            try control(1, "commit")
        } catch {
            try? control(2, "rollback")
            throw error
        }
    }

    /// Runs one of the prepared BEGIN IMMEDIATE (0), COMMIT (1), ROLLBACK (2).
    private func control(_ index: Int, _ what: String) throws {
        guard control.count == 3 else { throw SessionStoreError.failed("store is closed") }
        let stmt = control[index]
        defer { sqlite3_reset(stmt) }
        try check(sqlite3_step(stmt) == SQLITE_DONE, what)
    }

    private func check(_ ok: Bool, _ what: String) throws {
        if !ok { throw SessionStoreError.failed("\(what): \(errorMessage())") }
    }

    private func errorMessage() -> String {
        db.map { String(cString: sqlite3_errmsg($0)) } ?? "store is closed"
    }

    private func bind(_ stmt: OpaquePointer, _ index: Int32, _ value: String?) {
        if let value {
            sqlite3_bind_text(stmt, index, value, -1, postern_sqlite_transient())
        } else {
            sqlite3_bind_null(stmt, index)
        }
    }

    private func text(_ stmt: OpaquePointer, _ column: Int32) -> String {
        sqlite3_column_text(stmt, column).map { String(cString: $0) } ?? ""
    }

    private func bindRow(_ stmt: OpaquePointer, _ s: Session) throws {
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
    private func insertRow(_ session: Session) throws -> Int32 {
        let stmt = try statement(.insert)
        try bindRow(stmt, session)
        return sqlite3_step(stmt)
    }

    /// Deletes the revoked rows that hold `id`, `token` or `refresh` (a unique key a new write wants);
    /// says whether there were any.
    private func clearRevoked(id: String, token: String, refresh: String) throws -> Bool {
        let stmt = try statement(.clearRevoked)
        bind(stmt, 1, id)
        bind(stmt, 2, token)
        bind(stmt, 3, refresh)
        try check(sqlite3_step(stmt) == SQLITE_DONE, "clear revoked")
        return sqlite3_changes(db) > 0
    }

    private func readSession(_ query: Query, _ key: String) throws -> Session? {
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
    private func summaries(_ stmt: OpaquePointer) throws -> [SessionSummary] {
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

/// The libc `close`, named apart from `SQLiteSessionStore.close()`.
private func closeFD(_ fd: Int32) -> Int32 {
    close(fd)
}
