import CSQLite
import FoundationEssentials

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import PosternIO

/// The schema of the session database, its migrations (`PRAGMA user_version` 1 to 4), and opening the file.
extension SQLiteSessionStore {
    /// Schema version 1: the sessions and the used refresh tokens.
    static let schema = """
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
    static let indexesV2 = """
        CREATE INDEX IF NOT EXISTS sessions_user ON sessions (user_id);
        CREATE INDEX IF NOT EXISTS sessions_last_used ON sessions (last_used);
        CREATE INDEX IF NOT EXISTS sessions_expires_at ON sessions (expires_at);
        CREATE TRIGGER IF NOT EXISTS sessions_forget_used AFTER DELETE ON sessions
            BEGIN DELETE FROM used_refresh WHERE session_id = old.id; END;
        PRAGMA user_version = 2;
        """

    /// Schema version 3: revocation by a mark (see the type's comment).
    static let revocationV3 = """
        ALTER TABLE sessions ADD COLUMN revoked INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX IF NOT EXISTS sessions_revoked ON sessions (revoked) WHERE revoked = 1;
        CREATE TRIGGER IF NOT EXISTS sessions_forget_used_on_revoke AFTER UPDATE OF revoked ON sessions WHEN new.revoked = 1
            BEGIN DELETE FROM used_refresh WHERE session_id = old.id; END;
        PRAGMA user_version = 3;
        """

    /// Schema version 4: the client's IP and user agent at sign-in ('' in the rows written before), and the
    /// e-mail index of the operator's listing.
    static let clientV4 = """
        ALTER TABLE sessions ADD COLUMN client_ip TEXT NOT NULL DEFAULT '';
        ALTER TABLE sessions ADD COLUMN user_agent TEXT NOT NULL DEFAULT '';
        CREATE INDEX IF NOT EXISTS sessions_email ON sessions (email COLLATE NOCASE);
        PRAGMA user_version = 4;
        """

    // MARK: - Opening

    /// Creates the parent directory (0700) and the file (0600) if missing; tightens an existing file to 0600.
    static func prepareFile(_ path: String) throws {
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
    static func makeDirectories(_ path: String) -> String? {
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
    func configure() throws {
        try exec("PRAGMA busy_timeout = 5000")
        // Fails here with "file is not a database" for a garbage file.
        try execWaitingForLock("PRAGMA journal_mode = WAL")
        try exec("PRAGMA synchronous = NORMAL")
        try exec("PRAGMA secure_delete = ON")
        // The version is read inside the write transaction: two processes opening one file at once would both read
        // the old version outside it, and the second would migrate again (`duplicate column name`). BEGIN IMMEDIATE
        // takes the write lock first (waiting up to the busy timeout), so the second reads what the first wrote.
        try execWaitingForLock("BEGIN IMMEDIATE")
        do {
            let version = try userVersion()
            if version == 0 {
                try exec("\(Self.schema) \(Self.indexesV2) \(Self.revocationV3) \(Self.clientV4)")
            } else if version == 1 {
                try exec("\(Self.indexesV2) \(Self.revocationV3) \(Self.clientV4)")
            } else if version == 2 {
                try exec("\(Self.revocationV3) \(Self.clientV4)")
            } else if version == 3 {
                try exec(Self.clientV4)
            } else if version > Self.schemaVersion {
                throw SessionStoreError.failed("schema version \(version) is newer than this Postern supports (\(Self.schemaVersion))")
            }
            try exec("COMMIT")
        } catch {
            try? exec("ROLLBACK")
            throw error
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

    /// `exec` for the statements of opening that take a lock another process may hold for a moment (the switch to WAL,
    /// the migration's write transaction): SQLite answers some of those with SQLITE_BUSY at once, without calling the
    /// busy handler (a WAL file being checkpointed and removed by the last connection closing, a journal mode change
    /// while another connection reads), so they are tried again every 5 ms for up to the busy timeout (5 s).
    func execWaitingForLock(_ sql: String) throws {
        var waited = 0
        while true {
            let rc = sqlite3_exec(db, sql, nil, nil, nil)
            if rc == SQLITE_OK { return }
            let primary = rc & 0xff
            guard (primary == SQLITE_BUSY || primary == SQLITE_LOCKED), waited < 5000 else {
                throw SessionStoreError.failed(errorMessage())
            }
            usleep(5000)
            waited += 5
        }
    }

    /// The file's schema version (`PRAGMA user_version`; 0 for a new file).
    func userVersion() throws -> Int32 {
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, nil) == SQLITE_OK, let stmt else {
            throw SessionStoreError.failed(errorMessage())
        }
        defer { sqlite3_finalize(stmt) }
        guard sqlite3_step(stmt) == SQLITE_ROW else { throw SessionStoreError.failed(errorMessage()) }
        return sqlite3_column_int(stmt, 0)
    }
}

/// The libc `close`, named apart from `SQLiteSessionStore.close()`.
private func closeFD(_ fd: Int32) -> Int32 {
    close(fd)
}
