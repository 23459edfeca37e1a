import Foundation
import Testing
@testable import PosternCore
import PosternTesting

/// Which store a contract test runs against.
enum SessionStoreTestKind: String, CaseIterable, Sendable, CustomStringConvertible {
    case memory, sqlite, sqliteSealed

    var description: String { rawValue }

    static let key = Data((0..<32).map { UInt8($0) }).base64EncodedString()

    func make(in dir: URL) throws -> any SessionStore {
        switch self {
        case .memory: return MemorySessionStore()
        case .sqlite: return try SQLiteSessionStore(path: dir.appendingPathComponent("s.db").path, secretBox: nil)
        case .sqliteSealed:
            return try SQLiteSessionStore(path: dir.appendingPathComponent("s.db").path,
                                          secretBox: SecretBox(base64Key: Self.key))
        }
    }
}

/// A fresh temporary directory, removed by `cleanup`.
fileprivate func temporaryDirectory() throws -> URL {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("postern-test-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir
}

private let t0 = Date(timeIntervalSince1970: 1_700_000_000)
private let day: TimeInterval = 86_400
private let idle: TimeInterval = 7 * day

/// A session with fresh random tokens; returns the session and its two plaintext Postern tokens.
fileprivate func makeSession(created: Date = t0, lastUsed: Date? = nil, maxAge: TimeInterval = 30 * day,
                 role: String? = "role-1") -> (Session, access: String, refresh: String) {
    let access = Crypto.newToken(prefix: Crypto.accessTokenPrefix)
    let refresh = Crypto.newToken(prefix: Crypto.refreshTokenPrefix)
    let s = Session(id: Session.newID(), tokenDigest: Crypto.sha256Hex(access), refreshDigest: Crypto.sha256Hex(refresh),
                    userID: "user-\(UUID().uuidString)", email: "x@y.com", role: role,
                    directusAccessToken: "DIRECTUS-ACCESS-\(UUID().uuidString)",
                    directusAccessExpiresAt: created.addingTimeInterval(900),
                    directusRefreshToken: "DIRECTUS-REFRESH-\(UUID().uuidString)",
                    createdAt: created, lastUsedAt: lastUsed ?? created, expiresAt: created.addingTimeInterval(maxAge))
    return (s, access, refresh)
}

@Suite struct SessionTests {
    @Test func effectiveExpiryIsTheEarlierOfIdleAndAbsolute() {
        var (s, _, _) = makeSession()
        #expect(s.effectiveExpiry(idleTTL: idle) == t0.addingTimeInterval(idle))
        s.lastUsedAt = t0.addingTimeInterval(28 * day)
        #expect(s.effectiveExpiry(idleTTL: idle) == s.expiresAt)
        #expect(!s.isExpired(now: s.expiresAt.addingTimeInterval(-1), idleTTL: idle))
        #expect(s.isExpired(now: s.expiresAt, idleTTL: idle))
    }
}

@Suite struct SessionStoreContractTests {
    @Test(arguments: SessionStoreTestKind.allCases)
    func insertedSessionIsFoundByBothDigests(_ kind: SessionStoreTestKind) async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try kind.make(in: dir)
        let (s, access, refresh) = makeSession()
        let (noRole, _, _) = makeSession(role: nil)
        try await store.insert(s)
        try await store.insert(noRole)
        #expect(try await store.session(tokenDigest: Crypto.sha256Hex(access)) == s)
        #expect(try await store.session(refreshDigest: Crypto.sha256Hex(refresh)) == s)
        #expect(try await store.session(tokenDigest: noRole.tokenDigest) == noRole)
        #expect(try await store.session(tokenDigest: Crypto.sha256Hex(refresh)) == nil)
        #expect(try await store.session(refreshDigest: Crypto.sha256Hex(access)) == nil)
        #expect(try await store.count() == 2)
    }

    @Test(arguments: SessionStoreTestKind.allCases)
    func insertRejectsADuplicateDigest(_ kind: SessionStoreTestKind) async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try kind.make(in: dir)
        let (s, _, _) = makeSession()
        try await store.insert(s)
        var clash = makeSession().0
        clash.tokenDigest = s.tokenDigest
        await #expect(throws: SessionStoreError.self) { try await store.insert(clash) }
        #expect(try await store.count() == 1)
    }

    @Test(arguments: SessionStoreTestKind.allCases)
    func updateRotatesTokensAndRemembersTheUsedRefreshDigest(_ kind: SessionStoreTestKind) async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try kind.make(in: dir)
        let (s, _, _) = makeSession()
        try await store.insert(s)
        var rotated = s
        rotated.tokenDigest = Crypto.sha256Hex(Crypto.newToken(prefix: Crypto.accessTokenPrefix))
        rotated.refreshDigest = Crypto.sha256Hex(Crypto.newToken(prefix: Crypto.refreshTokenPrefix))
        rotated.directusAccessToken = "new-access"
        rotated.directusRefreshToken = "new-refresh"
        rotated.directusAccessExpiresAt = t0.addingTimeInterval(1800)
        try await store.update(rotated)

        #expect(try await store.session(tokenDigest: s.tokenDigest) == nil)
        #expect(try await store.session(refreshDigest: s.refreshDigest) == nil)
        #expect(try await store.session(tokenDigest: rotated.tokenDigest) == rotated)
        #expect(try await store.session(refreshDigest: rotated.refreshDigest) == rotated)
        #expect(try await store.sessionID(usedRefreshDigest: s.refreshDigest) == s.id)
        #expect(try await store.sessionID(usedRefreshDigest: rotated.refreshDigest) == nil)
        #expect(try await store.count() == 1)

        // Updating without changing the refresh digest records nothing new.
        var sameRefresh = rotated
        sameRefresh.directusAccessToken = "newer-access"
        try await store.update(sameRefresh)
        #expect(try await store.session(refreshDigest: rotated.refreshDigest)?.directusAccessToken == "newer-access")
        #expect(try await store.sessionID(usedRefreshDigest: rotated.refreshDigest) == nil)
    }

    @Test(arguments: SessionStoreTestKind.allCases)
    func updateOfADeletedSessionDoesNotResurrectIt(_ kind: SessionStoreTestKind) async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try kind.make(in: dir)
        let (s, _, _) = makeSession()
        try await store.insert(s)
        try await store.delete(sessionID: s.id)
        try await store.update(s)
        #expect(try await store.count() == 0)
        #expect(try await store.session(tokenDigest: s.tokenDigest) == nil)
    }

    @Test(arguments: SessionStoreTestKind.allCases)
    func touchWritesLastUsedForManySessions(_ kind: SessionStoreTestKind) async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try kind.make(in: dir)
        let a = makeSession().0, b = makeSession().0, c = makeSession().0
        for s in [a, b, c] { try await store.insert(s) }
        let later = t0.addingTimeInterval(3 * day)
        try await store.touch([a.id: later, b.id: later.addingTimeInterval(60), "gone": later])
        #expect(try await store.session(tokenDigest: a.tokenDigest)?.lastUsedAt == later)
        #expect(try await store.session(tokenDigest: b.tokenDigest)?.lastUsedAt == later.addingTimeInterval(60))
        #expect(try await store.session(tokenDigest: c.tokenDigest)?.lastUsedAt == t0)
        #expect(try await store.count() == 3)
    }

    @Test(arguments: SessionStoreTestKind.allCases)
    func deleteRevokesAtOnceAndForgetsUsedDigests(_ kind: SessionStoreTestKind) async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try kind.make(in: dir)
        let (s, _, _) = makeSession()
        let (other, _, _) = makeSession()
        try await store.insert(s)
        try await store.insert(other)
        var rotated = s
        rotated.refreshDigest = Crypto.sha256Hex("next")
        try await store.update(rotated)
        try await store.delete(sessionID: s.id)
        #expect(try await store.session(tokenDigest: s.tokenDigest) == nil)
        #expect(try await store.session(refreshDigest: rotated.refreshDigest) == nil)
        #expect(try await store.sessionID(usedRefreshDigest: s.refreshDigest) == nil)
        #expect(try await store.session(tokenDigest: other.tokenDigest) == other)
        #expect(try await store.count() == 1)
        try await store.delete(sessionID: "never-existed")
        #expect(try await store.count() == 1)
    }

    @Test(arguments: SessionStoreTestKind.allCases)
    func purgeRemovesIdleAndAbsolutelyExpiredSessions(_ kind: SessionStoreTestKind) async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try kind.make(in: dir)
        let now = t0.addingTimeInterval(31 * day)
        // Idle too long: last used 8 days ago, absolute expiry far away.
        let idleOne = makeSession(created: now.addingTimeInterval(-8 * day), maxAge: 30 * day).0
        // Active (used an hour ago) but past its absolute lifetime.
        let oldOne = makeSession(created: t0, lastUsed: now.addingTimeInterval(-3600)).0
        // Exactly at its idle expiry: dead (expiry <= now).
        let edge = makeSession(created: now.addingTimeInterval(-idle)).0
        // Alive: used a day ago, created 10 days ago.
        let alive = makeSession(created: now.addingTimeInterval(-10 * day), lastUsed: now.addingTimeInterval(-day)).0
        for s in [idleOne, oldOne, edge, alive] { try await store.insert(s) }
        var rotated = idleOne
        rotated.refreshDigest = Crypto.sha256Hex("rotated")
        try await store.update(rotated)

        #expect(try await Set(store.purgeExpired(now: now, idleTTL: idle)) == [idleOne.id, oldOne.id, edge.id])
        #expect(try await store.count() == 1)
        #expect(try await store.session(tokenDigest: alive.tokenDigest) == alive)
        #expect(try await store.session(tokenDigest: oldOne.tokenDigest) == nil)
        #expect(try await store.sessionID(usedRefreshDigest: idleOne.refreshDigest) == nil)
        #expect(try await store.purgeExpired(now: now, idleTTL: idle).isEmpty)
    }

    @Test(arguments: SessionStoreTestKind.allCases)
    func concurrentWritersAndReadersStayConsistent(_ kind: SessionStoreTestKind) async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try kind.make(in: dir)
        let sessions = (0..<64).map { _ in makeSession().0 }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for s in sessions {
                group.addTask {
                    try await store.insert(s)
                    #expect(try await store.session(tokenDigest: s.tokenDigest) == s)
                    try await store.touch([s.id: t0.addingTimeInterval(60)])
                }
            }
            try await group.waitForAll()
        }
        #expect(try await store.count() == 64)
    }

    @Test(arguments: SessionStoreTestKind.allCases)
    func sessionsOfOneUserKeepTheirOwnEmailAndRole(_ kind: SessionStoreTestKind) async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try kind.make(in: dir)
        var first = makeSession(role: "role-a").0
        var second = makeSession(role: "role-b").0
        first.userID = "user-shared"
        second.userID = "user-shared"
        second.email = "other@y.com"
        try await store.insert(first)
        try await store.insert(second)
        #expect(try await store.session(sessionID: first.id) == first)
        #expect(try await store.session(sessionID: second.id) == second)

        var moved = second
        moved.userID = "user-moved"
        moved.email = "moved@y.com"
        moved.role = "role-a"
        try await store.update(moved)
        #expect(try await store.session(sessionID: second.id) == moved)
        #expect(try await store.recency(userID: "user-shared").map(\.id) == [first.id])
        #expect(try await store.recency(userID: "user-moved").map(\.id) == [second.id])
        let renamed = try await store.updateDirectusTokens(sessionID: first.id, accessToken: "A2",
                                                           accessExpiresAt: t0.addingTimeInterval(1800),
                                                           refreshToken: "R2", role: "role-c")
        #expect(renamed?.role == "role-c")
        #expect(try await store.session(sessionID: first.id)?.role == "role-c")
        #expect(try await store.session(sessionID: second.id)?.role == "role-a")
    }
}

@Suite struct SQLiteSessionStoreTests {
    @Test(arguments: [false, true])
    func sessionsSurviveARestart(_ sealed: Bool) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("nested/dir/sessions.db").path
        let box = sealed ? SecretBox(base64Key: SessionStoreTestKind.key) : nil
        let (s, _, _) = makeSession()
        var rotated = s
        do {
            let store = try SQLiteSessionStore(path: path, secretBox: box)
            try store.insert(s)
            rotated.refreshDigest = Crypto.sha256Hex("rotated")
            try store.update(rotated)
            store.close()
            #expect(throws: SessionStoreError.self) { try store.count() }
        }
        let reopened = try SQLiteSessionStore(path: path, secretBox: box)
        #expect(try reopened.session(tokenDigest: s.tokenDigest) == rotated)
        #expect(try reopened.sessionID(usedRefreshDigest: s.refreshDigest) == s.id)
        #expect(try reopened.count() == 1)
    }

    @Test func fileIsCreatedAndKeptAtMode0600() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("sessions.db").path
        _ = try SQLiteSessionStore(path: path, secretBox: nil)
        let mode = { (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1 }
        #expect(try mode() == 0o600)
        // A file an operator left world-readable is tightened on open.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        let store = try SQLiteSessionStore(path: path, secretBox: nil)
        try store.insert(makeSession().0)
        #expect(try mode() == 0o600)
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            let walMode = try FileManager.default.attributesOfItem(atPath: path + suffix)[.posixPermissions] as? Int
            #expect(walMode == 0o600)
        }
    }

    @Test func directusTokensAreEncryptedAtRest() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("sessions.db").path
        let (s, _, _) = makeSession()
        let store = try SQLiteSessionStore(path: path, secretBox: SecretBox(base64Key: SessionStoreTestKind.key))
        try store.insert(s)
        #expect(try store.session(tokenDigest: s.tokenDigest) == s)
        store.close()
        var raw = Data()
        for suffix in ["", "-wal"] {
            raw += (try? Data(contentsOf: URL(fileURLWithPath: path + suffix))) ?? Data()
        }
        #expect(raw.count > 0)
        #expect(raw.range(of: Data(s.directusAccessToken.utf8)) == nil)
        #expect(raw.range(of: Data(s.directusRefreshToken.utf8)) == nil)
        #expect(raw.range(of: Data(s.email.utf8)) != nil)  // the scan itself does see plaintext columns

        // Without encryption the same scan finds the token: the check above is meaningful.
        let plainPath = dir.appendingPathComponent("plain.db").path
        let plain = try SQLiteSessionStore(path: plainPath, secretBox: nil)
        try plain.insert(s)
        plain.close()
        var plainRaw = Data()
        for suffix in ["", "-wal"] {
            plainRaw += (try? Data(contentsOf: URL(fileURLWithPath: plainPath + suffix))) ?? Data()
        }
        #expect(plainRaw.range(of: Data(s.directusRefreshToken.utf8)) != nil)
    }

    @Test func aChangedKeyMakesSealedSessionsAbsentWithAWarning() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("sessions.db").path
        let (s, _, _) = makeSession()
        do {
            let store = try SQLiteSessionStore(path: path, secretBox: SecretBox(base64Key: SessionStoreTestKind.key))
            try store.insert(s)
        }
        let warnings = WarningLog()
        let otherKey = Data(repeating: 0xaa, count: 32).base64EncodedString()
        let store = try SQLiteSessionStore(path: path, secretBox: SecretBox(base64Key: otherKey),
                                           warn: { warnings.append($0) })
        #expect(try store.session(tokenDigest: s.tokenDigest) == nil)
        #expect(try store.session(refreshDigest: s.refreshDigest) == nil)
        #expect(warnings.lines.count == 2)
        let keyless = try SQLiteSessionStore(path: path, secretBox: nil)
        #expect(try keyless.session(tokenDigest: s.tokenDigest) == nil)
    }

    @Test func garbageFileIsACannotOpenError() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("garbage.db").path
        try Data(repeating: 0x42, count: 8192).write(to: URL(fileURLWithPath: path))
        #expect {
            try SQLiteSessionStore(path: path, secretBox: nil)
        } throws: { error in
            guard case let SessionStoreError.cannotOpen(p, reason)? = error as? SessionStoreError else { return false }
            return p == path && reason.contains("not a database")
        }
    }

    @Test func directoryPathIsACannotOpenError() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect {
            try SQLiteSessionStore(path: dir.path, secretBox: nil)
        } throws: { error in
            if case SessionStoreError.cannotOpen(dir.path, _)? = error as? SessionStoreError { return true }
            return false
        }
    }
}

/// Collects warning lines from any thread.
fileprivate final class WarningLog: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    /// Records one line.
    func append(_ line: String) { lock.withLock { stored.append(line) } }
    /// The lines so far.
    var lines: [String] { lock.withLock { stored } }
}
