import Foundation
import Testing
import CSQLite
@testable import PosternCore
import PosternTesting

/// Two gateways opening one SQLite file at the same moment (issue 34): the schema version is read inside the
/// write transaction, so exactly one of them migrates and the other finds the file migrated; both open, on an old
/// file and on a new one, every time.
@Suite struct SQLiteMigrationRaceTests {
    /// Opens two stores on `path` at once (two connections on two threads, released together); the errors.
    static func openTwoAtOnce(_ path: String) -> [String] {
        let errors = LockedBox<[String]>([])
        let ready = DispatchGroup()
        let go = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        for _ in 0..<2 {
            ready.enter()
            done.enter()
            Thread.detachNewThread {
                ready.leave()
                go.wait()
                do {
                    let store = try SQLiteSessionStore(path: path, secretBox: nil)
                    store.close()
                } catch {
                    errors.withLock { $0.append("\(error)") }
                }
                done.leave()
            }
        }
        ready.wait()
        go.signal()
        go.signal()
        done.wait()
        return errors.withLock { $0 }
    }

    @Test func twoStoresOpeningAnOldFileAtOnceBothOpenAndItIsMigratedOnce() throws {
        let dir = try sessionTestDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        for round in 0..<20 {
            let path = dir.appendingPathComponent("old-\(round).db").path
            try SessionListingStoreTests.writeVersion3File(path, rows: [("old-id", Crypto.sha256Hex("old-token"), "u1", "o@x.com")])
            let errors = Self.openTwoAtOnce(path)
            #expect(errors.isEmpty, "round \(round): \(errors)")
            #expect(SessionListingStoreTests.userVersion(path) == SQLiteSessionStore.schemaVersion)
            let store = try SQLiteSessionStore(path: path, secretBox: nil)
            #expect(try store.session(tokenDigest: Crypto.sha256Hex("old-token"))?.id == "old-id")
            store.close()
        }
    }

    @Test func twoStoresCreatingANewFileAtOnceBothOpen() throws {
        let dir = try sessionTestDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        for round in 0..<20 {
            let path = dir.appendingPathComponent("new-\(round).db").path
            let errors = Self.openTwoAtOnce(path)
            #expect(errors.isEmpty, "round \(round): \(errors)")
            #expect(SessionListingStoreTests.userVersion(path) == SQLiteSessionStore.schemaVersion)
        }
    }
}
