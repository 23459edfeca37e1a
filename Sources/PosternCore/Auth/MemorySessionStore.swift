import Foundation

/// An in-process session store (tests, single instance without persistence).
public final class MemorySessionStore: SessionStore, @unchecked Sendable {
    private let lock = NSLock()
    private var byID: [String: Session] = [:]
    private var idByToken: [String: String] = [:]
    private var idByRefresh: [String: String] = [:]
    private var usedRefresh: [String: String] = [:]

    /// Builds an empty store.
    public init() {}

    /// Stores a new session; throws `duplicate` if its id or a digest is taken.
    public func insert(_ session: Session) throws {
        try lock.withLock {
            guard byID[session.id] == nil else { throw SessionStoreError.duplicate("session id") }
            guard idByToken[session.tokenDigest] == nil else { throw SessionStoreError.duplicate("token digest") }
            guard idByRefresh[session.refreshDigest] == nil else { throw SessionStoreError.duplicate("refresh digest") }
            byID[session.id] = session
            idByToken[session.tokenDigest] = session.id
            idByRefresh[session.refreshDigest] = session.id
        }
    }

    /// The session with this access-token digest.
    public func session(tokenDigest: String) throws -> Session? {
        lock.withLock { idByToken[tokenDigest].flatMap { byID[$0] } }
    }

    /// The session with this refresh-token digest.
    public func session(refreshDigest: String) throws -> Session? {
        lock.withLock { idByRefresh[refreshDigest].flatMap { byID[$0] } }
    }

    /// The session with this id.
    public func session(sessionID: String) throws -> Session? {
        lock.withLock { byID[sessionID] }
    }

    /// The session id that used this refresh digest before rotating it away.
    public func sessionID(usedRefreshDigest: String) throws -> String? {
        lock.withLock { usedRefresh[usedRefreshDigest] }
    }

    /// Replaces the stored session with the same id (no-op if it is gone).
    public func update(_ session: Session) throws {
        try lock.withLock {
            guard let old = byID[session.id] else { return }
            if old.tokenDigest != session.tokenDigest {
                if let other = idByToken[session.tokenDigest], other != session.id {
                    throw SessionStoreError.duplicate("token digest")
                }
            }
            if old.refreshDigest != session.refreshDigest {
                if let other = idByRefresh[session.refreshDigest], other != session.id {
                    throw SessionStoreError.duplicate("refresh digest")
                }
            }
            idByToken[old.tokenDigest] = nil
            idByRefresh[old.refreshDigest] = nil
            if old.refreshDigest != session.refreshDigest {
                usedRefresh[old.refreshDigest] = session.id
            }
            byID[session.id] = session
            idByToken[session.tokenDigest] = session.id
            idByRefresh[session.refreshDigest] = session.id
        }
    }

    /// Sets `lastUsedAt` of the listed sessions that still exist.
    public func touch(_ lastUsed: [String: Date]) throws {
        lock.withLock {
            for (id, date) in lastUsed where byID[id] != nil {
                byID[id]?.lastUsedAt = date
            }
        }
    }

    /// Removes a session and its used-refresh records.
    public func delete(sessionID: String) throws {
        lock.withLock { removeLocked(sessionID) }
    }

    /// Removes every session whose effective expiry is at or before `now`.
    public func purgeExpired(now: Date, idleTTL: TimeInterval) throws -> Int {
        lock.withLock {
            let dead = byID.values.filter { $0.isExpired(now: now, idleTTL: idleTTL) }.map(\.id)
            for id in dead { removeLocked(id) }
            return dead.count
        }
    }

    /// The number of stored sessions.
    public func count() throws -> Int {
        lock.withLock { byID.count }
    }

    private func removeLocked(_ id: String) {
        if let old = byID.removeValue(forKey: id) {
            idByToken[old.tokenDigest] = nil
            idByRefresh[old.refreshDigest] = nil
        }
        usedRefresh = usedRefresh.filter { $0.value != id }
    }
}
