import CSQLite
import PosternIO

/// The SQLite calls of the store: the lock around them, prepared statements, transactions, bindings, errors.
extension SQLiteSessionStore {
    /// Finalises the statements and closes the connection (with the lock held, or from `init`/`deinit`).
    func closeLocked() {
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
    func locked<T>(_ body: () throws -> T) throws(SessionStoreError) -> T {
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

    /// The prepared statement of `query`, reset and unbound; throws once the store is closed.
    func statement(_ query: Query) throws -> OpaquePointer {
        guard db != nil, let stmt = statements[query] else { throw SessionStoreError.failed("store is closed") }
        sqlite3_reset(stmt)
        sqlite3_clear_bindings(stmt)
        return stmt
    }

    /// Runs `sql` (one or more statements) unprepared: pragmas and the schema.
    func exec(_ sql: String) throws {
        var err: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &err)
        if rc != SQLITE_OK {
            let message = err.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_free(err)
            throw SessionStoreError.failed(message)
        }
    }

    /// Runs `body` between BEGIN IMMEDIATE and COMMIT, rolling back when it throws.
    func transaction(_ body: () throws -> Void) throws {
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
    func control(_ index: Int, _ what: String) throws {
        guard control.count == 3 else { throw SessionStoreError.failed("store is closed") }
        let stmt = control[index]
        defer { sqlite3_reset(stmt) }
        try check(sqlite3_step(stmt) == SQLITE_DONE, what)
    }

    /// Throws `what` with SQLite's message unless `ok`.
    func check(_ ok: Bool, _ what: String) throws {
        if !ok { throw SessionStoreError.failed("\(what): \(errorMessage())") }
    }

    /// SQLite's message for the last failed call.
    func errorMessage() -> String {
        db.map { String(cString: sqlite3_errmsg($0)) } ?? "store is closed"
    }

    /// Binds `value` (copied) or NULL to parameter `index`.
    func bind(_ stmt: OpaquePointer, _ index: Int32, _ value: String?) {
        if let value {
            sqlite3_bind_text(stmt, index, value, -1, postern_sqlite_transient())
        } else {
            sqlite3_bind_null(stmt, index)
        }
    }

    /// The text of `column` in the current row ("" for NULL).
    func text(_ stmt: OpaquePointer, _ column: Int32) -> String {
        sqlite3_column_text(stmt, column).map { String(cString: $0) } ?? ""
    }
}
