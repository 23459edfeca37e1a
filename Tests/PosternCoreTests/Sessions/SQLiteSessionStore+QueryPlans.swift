import CSQLite
@testable import PosternCore

extension SQLiteSessionStore {
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
}
