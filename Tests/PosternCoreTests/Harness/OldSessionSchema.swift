import CSQLite
import Foundation
import PosternTesting

/// The session database as the earlier schema versions of `SQLiteSessionStore` wrote it: one definition that the
/// migration tests build their old files from (each version is the one before it plus what it added).
enum OldSessionSchema {
    /// Version 1: the sessions, their token and refresh digests, the used refresh digests.
    static let version1 = """
        CREATE TABLE sessions (id TEXT PRIMARY KEY NOT NULL, token_digest TEXT NOT NULL, refresh_digest TEXT NOT NULL,
            user_id TEXT NOT NULL, email TEXT NOT NULL, role TEXT, directus_access TEXT NOT NULL,
            directus_access_expires REAL NOT NULL, directus_refresh TEXT NOT NULL, sealed INTEGER NOT NULL,
            created_at REAL NOT NULL, last_used REAL NOT NULL, expires_at REAL NOT NULL);
        CREATE UNIQUE INDEX sessions_token_digest ON sessions (token_digest);
        CREATE UNIQUE INDEX sessions_refresh_digest ON sessions (refresh_digest);
        CREATE TABLE used_refresh (digest TEXT PRIMARY KEY NOT NULL, session_id TEXT NOT NULL);
        CREATE INDEX used_refresh_session ON used_refresh (session_id);

        """

    /// What version 2 added: the indexes of the per-user listing and of the purge, and the trigger that forgets a
    /// deleted session's used refresh digests.
    static let version2Additions = """
        CREATE INDEX sessions_user ON sessions (user_id);
        CREATE INDEX sessions_last_used ON sessions (last_used);
        CREATE INDEX sessions_expires_at ON sessions (expires_at);
        CREATE TRIGGER sessions_forget_used AFTER DELETE ON sessions
            BEGIN DELETE FROM used_refresh WHERE session_id = old.id; END;

        """

    /// What version 3 added: the revocation mark.
    static let version3Additions = """
        ALTER TABLE sessions ADD COLUMN revoked INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX sessions_revoked ON sessions (revoked) WHERE revoked = 1;
        CREATE TRIGGER sessions_forget_used_on_revoke AFTER UPDATE OF revoked ON sessions WHEN new.revoked = 1
            BEGIN DELETE FROM used_refresh WHERE session_id = old.id; END;

        """

    /// The tables, indexes and triggers of schema `version` (1 to 3).
    static func schema(version: Int) -> String {
        [version1, version2Additions, version3Additions].prefix(version).joined()
    }

    /// One session of the version 1 and 2 columns: id `old-id`, token digest `td`, refresh digest `rd`, user `u1`.
    static let oldSession = """
        INSERT INTO sessions VALUES ('old-id', 'td', 'rd', 'u1', 'e@x.com', NULL, 'da', 1900000000, 'dr', 0,
            1800000000, 1800000000, 1900000000);

        """

    /// Writes a session database at `path` as schema `version` wrote it, with `rows` (SQL statements) in it.
    static func write(_ path: String, version: Int, rows: String) throws {
        var db: OpaquePointer?
        guard sqlite3_open(path, &db) == SQLITE_OK else { throw TestFailure("cannot create \(path)") }
        defer { sqlite3_close(db) }
        let sql = schema(version: version) + rows + "PRAGMA user_version = \(version);"
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            throw TestFailure("schema version \(version): \(String(cString: sqlite3_errmsg(db)))")
        }
    }
}
