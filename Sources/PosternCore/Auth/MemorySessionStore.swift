import Foundation

/// An in-process session store (tests, single instance without persistence).
///
/// Indexed like the SQLite store: by id, token digest, refresh digest, used refresh digest (both ways),
/// user, and the two expiry times, so that no call scans every session.
///
/// Memory (sessions are many): each session lives once, in a heap box that `byID` and the two digest
/// indexes point to (dictionaries of 8-byte references grow without copying whole sessions), and the strings many sessions repeat (the
/// user id and email of one user, role ids) are stored once and shared.
public final class MemorySessionStore: SessionStore, @unchecked Sendable {
    /// One stored session (a reference: `byID`'s buckets stay small).
    private final class Box {
        var session: Session
        init(_ session: Session) { self.session = session }
    }

    /// The sessions of one user, and the one copy of the user id's and email's bytes they share.
    private struct UserSessions {
        var ids: Set<String> = []
        var email: String
    }

    private static let maxInternedRoles = 1024
    private let lock = NSLock()
    private var byID: [String: Box] = [:]
    private var byToken: [String: Box] = [:]             // token digest → the session's box in `byID`
    private var byRefresh: [String: Box] = [:]           // refresh digest → the session's box in `byID`
    private var usedRefresh: [String: String] = [:]        // used refresh digest → session id
    private var usedByID: [String: [String]] = [:]         // session id → its used refresh digests
    private var idsByUser: [String: UserSessions] = [:]
    /// Role ids are shared by many sessions: one copy of each.
    private var roles: [String: String] = [:]
    private var byLastUsed = ExpiryIndex()
    private var byExpiresAt = ExpiryIndex()

    /// Builds an empty store.
    public init() {}

    /// Stores a new session; throws `duplicate` if its id or a digest is taken.
    public func insert(_ session: Session) throws(SessionStoreError) {
        try locked {
            guard byID[session.id] == nil else { throw SessionStoreError.duplicate("session id") }
            guard byToken[session.tokenDigest] == nil else { throw SessionStoreError.duplicate("token digest") }
            guard byRefresh[session.refreshDigest] == nil else { throw SessionStoreError.duplicate("refresh digest") }
            let session = sharingStrings(session)
            let box = Box(session)
            byID[session.id] = box
            byToken[session.tokenDigest] = box
            byRefresh[session.refreshDigest] = box
            idsByUser[session.userID, default: UserSessions(email: session.email)].ids.insert(session.id)
            byLastUsed.insert(session.id, at: session.lastUsedAt)
            byExpiresAt.insert(session.id, at: session.expiresAt)
        }
    }

    /// The session with this access-token digest.
    public func session(tokenDigest: String) throws(SessionStoreError) -> Session? {
        lock.withLock { byToken[tokenDigest]?.session }
    }

    /// The session with this refresh-token digest.
    public func session(refreshDigest: String) throws(SessionStoreError) -> Session? {
        lock.withLock { byRefresh[refreshDigest]?.session }
    }

    /// The session with this id.
    public func session(sessionID: String) throws(SessionStoreError) -> Session? {
        lock.withLock { byID[sessionID]?.session }
    }

    /// The session id that used this refresh digest before rotating it away.
    public func sessionID(usedRefreshDigest: String) throws(SessionStoreError) -> String? {
        lock.withLock { usedRefresh[usedRefreshDigest] }
    }

    /// Replaces the stored session with the same id (no-op if it is gone).
    public func update(_ session: Session) throws(SessionStoreError) {
        try locked {
            guard let old = byID[session.id]?.session else { return }
            try replaceLocked(old, with: session)
        }
    }

    /// Rotates the digests of a session whose refresh digest is still `refreshDigest`.
    public func rotate(sessionID: String, refreshDigest: String, newTokenDigest: String, newRefreshDigest: String,
                       lastUsed: Date) throws(SessionStoreError) -> Session? {
        try locked {
            guard let old = byID[sessionID]?.session, old.refreshDigest == refreshDigest else { return nil }
            var new = old
            new.tokenDigest = newTokenDigest
            new.refreshDigest = newRefreshDigest
            new.lastUsedAt = lastUsed
            try replaceLocked(old, with: new)
            return new
        }
    }

    /// Sets the Directus tokens of a session.
    public func updateDirectusTokens(sessionID: String, accessToken: String, accessExpiresAt: Date, refreshToken: String,
                                     role: String?) throws(SessionStoreError) -> Session? {
        lock.withLock {
            guard let box = byID[sessionID] else { return nil }
            box.session.directusAccessToken = accessToken
            box.session.directusAccessExpiresAt = accessExpiresAt
            box.session.directusRefreshToken = refreshToken
            if let role { box.session.role = sharedRole(role) }
            return box.session
        }
    }

    /// Id, creation and last use of each session of `userID`.
    public func recency(userID: String) throws(SessionStoreError) -> [SessionRecency] {
        lock.withLock {
            (idsByUser[userID]?.ids ?? []).compactMap { id in
                byID[id].map { SessionRecency(id: $0.session.id, createdAt: $0.session.createdAt, lastUsedAt: $0.session.lastUsedAt) }
            }
        }
    }

    /// Sets `lastUsedAt` of the listed sessions that still exist.
    public func touch(_ lastUsed: [String: Date]) throws(SessionStoreError) {
        lock.withLock {
            for (id, date) in lastUsed {
                guard let box = byID[id] else { continue }
                let old = box.session.lastUsedAt
                box.session.lastUsedAt = date
                byLastUsed.move(id, from: old, to: date)
            }
        }
    }

    /// Removes a session and its used-refresh records.
    public func delete(sessionID: String) throws(SessionStoreError) {
        lock.withLock { removeLocked(sessionID) }
    }

    /// Removes every session whose effective expiry is at or before `now`: only the sessions whose last use
    /// or absolute expiry falls in a due time bucket are looked at.
    public func purgeExpired(now: Date, idleTTL: TimeInterval) throws(SessionStoreError) -> [String] {
        lock.withLock {
            var dead: [String] = []
            let idleCutoff = now.addingTimeInterval(-idleTTL)
            for id in byLastUsed.candidates(upTo: idleCutoff) {
                if let s = byID[id]?.session, s.lastUsedAt <= idleCutoff { dead.append(id); removeLocked(id) }
            }
            for id in byExpiresAt.candidates(upTo: now) {
                if let s = byID[id]?.session, s.expiresAt <= now { dead.append(id); removeLocked(id) }
            }
            byLastUsed.advance(to: idleCutoff)
            byExpiresAt.advance(to: now)
            return dead
        }
    }

    /// The number of stored sessions.
    public func count() throws(SessionStoreError) -> Int {
        lock.withLock { byID.count }
    }

    /// Runs `body` under the lock; its errors are store errors.
    private func locked<T>(_ body: () throws -> T) throws(SessionStoreError) -> T {
        do {
            return try lock.withLock(body)
        } catch {
            throw SessionStoreError.wrapping(error)
        }
    }

    /// `session` with its user id, email and role pointing at the copies already stored, when equal.
    private func sharingStrings(_ session: Session) -> Session {
        var session = session
        if let index = idsByUser.index(forKey: session.userID) {
            session.userID = idsByUser.keys[index]
            let email = idsByUser.values[index].email
            if email == session.email { session.email = email }
        }
        if let role = session.role { session.role = sharedRole(role) }
        return session
    }

    /// The stored copy of `role`, if there is one (at most `maxInternedRoles` are kept).
    private func sharedRole(_ role: String) -> String {
        if let shared = roles[role] { return shared }
        if roles.count < MemorySessionStore.maxInternedRoles { roles[role] = role }
        return role
    }

    private func replaceLocked(_ old: Session, with session: Session) throws {
        let session = sharingStrings(session)
        if old.tokenDigest != session.tokenDigest, let other = byToken[session.tokenDigest], other.session.id != session.id {
            throw SessionStoreError.duplicate("token digest")
        }
        if old.refreshDigest != session.refreshDigest, let other = byRefresh[session.refreshDigest], other.session.id != session.id {
            throw SessionStoreError.duplicate("refresh digest")
        }
        byToken[old.tokenDigest] = nil
        byRefresh[old.refreshDigest] = nil
        if old.refreshDigest != session.refreshDigest {
            usedRefresh[old.refreshDigest] = session.id
            usedByID[session.id, default: []].append(old.refreshDigest)
        }
        if old.userID != session.userID {
            idsByUser[old.userID]?.ids.remove(session.id)
            if idsByUser[old.userID]?.ids.isEmpty == true { idsByUser[old.userID] = nil }
            idsByUser[session.userID, default: UserSessions(email: session.email)].ids.insert(session.id)
        }
        byLastUsed.move(session.id, from: old.lastUsedAt, to: session.lastUsedAt)
        byExpiresAt.move(session.id, from: old.expiresAt, to: session.expiresAt)
        let box = byID[session.id] ?? Box(session)
        box.session = session
        byID[session.id] = box
        byToken[session.tokenDigest] = box
        byRefresh[session.refreshDigest] = box
    }

    private func removeLocked(_ id: String) {
        if let old = byID.removeValue(forKey: id)?.session {
            byToken[old.tokenDigest] = nil
            byRefresh[old.refreshDigest] = nil
            idsByUser[old.userID]?.ids.remove(id)
            if idsByUser[old.userID]?.ids.isEmpty == true { idsByUser[old.userID] = nil }
            byLastUsed.remove(id, at: old.lastUsedAt)
            byExpiresAt.remove(id, at: old.expiresAt)
        }
        for digest in usedByID.removeValue(forKey: id) ?? [] { usedRefresh[digest] = nil }
    }
}

/// Session ids filed by a time in one-minute buckets: the ids due by a date are found in O(due), not by
/// a scan of every session.
struct ExpiryIndex {
    private static let width: TimeInterval = 60
    private var buckets: [Int64: Set<String>] = [:]
    /// No bucket below this one holds an id.
    private var floor = Int64.max

    private static func bucket(_ date: Date) -> Int64 {
        let minutes = (date.timeIntervalSince1970 / width).rounded(.down)
        return Int64(Swift.max(Swift.min(minutes, Double(Int64.max / 2)), Double(Int64.min / 2)))
    }

    /// Files `id` under `date`.
    mutating func insert(_ id: String, at date: Date) {
        let b = ExpiryIndex.bucket(date)
        buckets[b, default: []].insert(id)
        floor = Swift.min(floor, b)
    }

    /// Removes `id` filed under `date`.
    mutating func remove(_ id: String, at date: Date) {
        let b = ExpiryIndex.bucket(date)
        buckets[b]?.remove(id)
        if buckets[b]?.isEmpty == true { buckets[b] = nil }
    }

    /// Refiles `id` from `old` to `new`.
    mutating func move(_ id: String, from old: Date, to new: Date) {
        guard ExpiryIndex.bucket(old) != ExpiryIndex.bucket(new) else { return }
        remove(id, at: old)
        insert(id, at: new)
    }

    /// Every id filed in a bucket at or before `cutoff`'s (a superset of those filed at or before `cutoff`).
    func candidates(upTo cutoff: Date) -> [String] {
        let top = ExpiryIndex.bucket(cutoff)
        guard floor <= top else { return [] }
        if top - floor < Int64(buckets.count) {
            return (floor...top).flatMap { buckets[$0].map(Array.init) ?? [] }
        }
        return buckets.filter { $0.key <= top }.flatMap { Array($0.value) }
    }

    /// Records that every id filed before `cutoff`'s bucket has been removed.
    mutating func advance(to cutoff: Date) {
        let top = ExpiryIndex.bucket(cutoff)
        if floor < top { floor = top }
        if buckets.isEmpty { floor = .max }
    }
}
